//! The end-to-end pipeline scenarios: a partitioned log consumed through offset commits into
//! a version-aware projection. Their log, consumers and cells are `pipeline::scenario`'s;
//! what they say of themselves is here.

use super::{one_type, Handlers, Kind, ScenarioSpec};

/// A consumer crash, per commit policy.
pub(super) const CRASH: ScenarioSpec = ScenarioSpec {
    id: "pipeline-crash",
    description: "a partitioned log consumed into a version-aware projection, the consumer \
                  crashing mid-run, per commit policy: records lost and redelivered",
    kind: Kind::Pipeline { paced: false },
    // Every pipeline's handlers wait on a slow dependency.
    handlers: Handlers::Wait,
    // The pipelines: did records get lost, and is the projection right, per policy.
    headline: None,
    stream: 12,
    workers: None,
    window: None,
    aggregate_types: one_type,
    note: None,
    isolation: None,
    grows_partitions: false,
    resubmits: false,
    // One consumer killed and restarted: what a consumer driver in another process can be.
    consumer_driver: true,
    charts: super::Charts::NONE,
};

/// Transient failures and poison records, per retry policy.
pub(super) const RETRY: ScenarioSpec = ScenarioSpec {
    id: "pipeline-retry",
    description: "a paced log with transient failures and poison records, per retry policy: \
                  bystander latency, overtaken versions, dead letters",
    kind: Kind::Pipeline { paced: true },
    stream: 13,
    consumer_driver: false,
    ..CRASH
};

/// A partition expansion, per mitigation.
pub(super) const EXPAND: ScenarioSpec = ScenarioSpec {
    id: "pipeline-expand",
    description: "the log's partitions grow mid-stream, so a key's new records land beside its \
                  old backlog, per mitigation: reorderings and stalls",
    stream: 14,
    grows_partitions: true,
    resubmits: false,
    consumer_driver: false,
    ..CRASH
};

/// Racing producers.
pub(super) const REORDER: ScenarioSpec = ScenarioSpec {
    id: "pipeline-reorder",
    description: "two producers race, so a key's versions reach its partition out of order: \
                  what the version-aware projection absorbs",
    stream: 15,
    consumer_driver: false,
    ..CRASH
};

/// A consumer group's rebalances, per commit policy.
pub(super) const REBALANCE: ScenarioSpec = ScenarioSpec {
    id: "pipeline-rebalance",
    description: "a consumer group loses a member and gains one mid-run, its partitions revoked \
                  and reassigned, per commit policy: losses, duplicates, pauses",
    stream: 16,
    consumer_driver: false,
    ..CRASH
};
