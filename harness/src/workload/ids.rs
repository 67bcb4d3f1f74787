//! The scenario ids: defined once, used by the command line, results, benches and plots.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

macro_rules! scenario_ids {
    ($($variant:ident = $id:literal, $description:literal;)*) => {
        /// Every scenario, by the id used on the command line, in JSON and in plots.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        pub enum ScenarioId {
            $(#[doc = $description] #[serde(rename = $id)] $variant,)*
        }

        impl ScenarioId {
            /// Every scenario, in presentation order.
            pub const ALL: &'static [ScenarioId] = &[$(ScenarioId::$variant,)*];

            /// The id (`uniform`, ...).
            pub const fn as_str(self) -> &'static str {
                match self { $(ScenarioId::$variant => $id,)* }
            }

            /// One line on what it shows.
            pub const fn description(self) -> &'static str {
                match self { $(ScenarioId::$variant => $description,)* }
            }
        }
    };
}

scenario_ids! {
    Uniform = "uniform", "uniform keys, ~1 us CPU handlers: raw throughput and dispatch cost";
    Zipf = "zipf", "Zipf-distributed keys (hot keys), ~1 us handlers: fairness under skew";
    ManyTypes = "many-types", "many aggregate types, ~1 us handlers: thread count";
    ConflictBackoff = "conflict-backoff",
        "1% of keys fail a version check twice and back off (pending 10 ms, 20 ms): head-of-line blocking";
    LongSync = "long-sync", "0.2% of messages spin 2 ms synchronously: the cost of no stealing";
    HotBacklog = "hot-backlog",
        "one key gets a burst of 1 ms pending messages while bystanders arrive: the shared-window stall";
    AsyncIo = "async-io",
        "random 0-5 ms pending (non-blocking) handlers, window 100, by key count: what waits cost per key";
    AsyncIoZipf = "async-io-zipf",
        "async-io with Zipf keys (s = 1.1 over 200 keys): what per-key order costs under skewed keys";
    ParallelConsumer = "parallel-consumer",
        "handlers block their thread 0-4 ms, 16 threads, window 100, random keys: the Parallel Consumer's published experiment";
    ColdCommand = "cold-command",
        "commands to new aggregates beside slow ones waiting 5 ms and a hot one: Wow's mixed-workload benchmark";
    OpenLoop = "open-loop", "constant-rate arrivals at fractions of saturation: latency vs offered load";
    Stateful = "stateful",
        "every aggregate owns a block of state its handler reads and updates, by key count: where affinity should pay";
    PipelineCrash = "pipeline-crash",
        "a partitioned log consumed into a version-aware projection, the consumer crashing mid-run, per commit policy: records lost and redelivered";
    PipelineRetry = "pipeline-retry",
        "a paced log with transient failures and poison records, per retry policy: bystander latency, overtaken versions, dead letters";
    PipelineExpand = "pipeline-expand",
        "the log's partitions grow mid-stream, so a key's new records land beside its old backlog, per mitigation: reorderings and stalls";
    PipelineReorder = "pipeline-reorder",
        "two producers race, so a key's versions reach its partition out of order: what the version-aware projection absorbs";
    PipelineRebalance = "pipeline-rebalance",
        "a consumer group loses a member and gains one mid-run, its partitions revoked and reassigned, per commit policy: losses, duplicates, pauses";
}

impl fmt::Display for ScenarioId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A scenario id that names no scenario.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown scenario `{given}`; valid ids: {}", ScenarioId::ALL.iter().map(|id| id.as_str()).collect::<Vec<_>>().join(", "))]
pub struct UnknownScenario {
    /// What was given.
    pub given: String,
}

impl FromStr for ScenarioId {
    type Err = UnknownScenario;

    fn from_str(given: &str) -> Result<Self, Self::Err> {
        ScenarioId::ALL
            .iter()
            .copied()
            .find(|id| id.as_str() == given)
            .ok_or_else(|| UnknownScenario { given: given.to_owned() })
    }
}
