//! The end-to-end pipeline scenarios: a partitioned log consumed through offset commits into
//! a version-aware projection. Their log, consumers and cells are `pipeline::scenario`'s;
//! what they say of themselves is here.
//!
//! A pipeline scenario's kind is [`Kind::Pipeline`] with its [`PipelineSpec`], data that the
//! code after `workload` reads (`workload` comes first in the crate and names none of it):
//! its cells (the parameter crossed with the strategies), how its log is produced, and which
//! pipeline it is ([`PipelineKind`]), and the columns of its summary table
//! ([`PipelineColumn`]). `pipeline::scenario` produces the log and enumerates the cells from
//! the spec, and plans and runs each cell by the exhaustive `match`es on [`PipelineKind`]
//! there (no arm for "any other"); the pipeline names the figures a cell records beside every
//! pipeline cell's, and the spec's columns show them (`report::pipeline` heads each column
//! and reads its cells). Adding a pipeline scenario is one spec here, one variant of
//! [`PipelineKind`] and its arms in those matches; a figure no column shows yet is one
//! variant of [`PipelineColumn`] and its arm in `report::pipeline`.

use super::{one_type, Handlers, Kind, ScenarioId, ScenarioSpec};

/// What a pipeline scenario is, as the code that runs it and the report read it.
#[derive(Debug)]
pub struct PipelineSpec {
    /// Which pipeline it is: how one cell consumes the log, and so the figures it records
    /// beside every pipeline cell's and the summary table that shows them.
    pub kind: PipelineKind,
    /// The columns of its summary table, left to right: a row per cell.
    pub columns: &'static [PipelineColumn],
    /// Its cells per strategy: one per value of its parameter.
    pub cells: Cells,
    /// How its log is produced, once for every cell.
    pub produce: Produce,
    /// The charts of its own (`report::plot::pipeline`), each reading what its kind records.
    pub charts: &'static [PipelineChart],
}

/// A chart of a pipeline scenario's own, drawn for every scenario whose spec lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipelineChart {
    /// `<id>`: records redelivered and lost after a consumer crash, per commit policy.
    Crash,
    /// `pipeline-commit-lag`: the committed-offset lag over time (one scenario's).
    CommitLag,
    /// `<id>`: bystander latency and out-of-order records per retry policy.
    Retry,
    /// `<id>`: first applications in the old and the new partitions over an expansion.
    Expand,
    /// `<id>`: duplicates against their bounds, and each rebalance's pause.
    Rebalance,
}

/// A column of a pipeline scenario's summary table: which figure of a cell it shows.
/// `report::pipeline` heads each and reads its cell (a figure of a pipeline's own section
/// from that section).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipelineColumn {
    /// The cell's commit policy.
    Policy,
    /// The strategy.
    Strategy,
    /// Records applied per second.
    RecordsPerSecond,
    /// Records never applied.
    Lost,
    /// Records delivered twice.
    Redelivered,
    /// Keys with a record that reached the projection before a predecessor.
    KeysReordered,
    /// Records completed above the committed offsets at each commit: p50 / p99 / max.
    CommitLag,
    /// The longest time a partition's committed offset stood still.
    Freeze,
    /// The largest commit metadata.
    MetadataMax,
    /// The version-aware projection's final state.
    State,
    /// The naive projection's final state, with its double applies.
    NaiveState,
    /// Both projections' final states (or not judged).
    States,
    /// The retry policy (`retry` section).
    RetryPolicy,
    /// The bystanders' latency, p50 / p99 (`retry` section).
    BystanderLatency,
    /// The troubled keys' p99 latency (`retry` section).
    TroubledP99,
    /// Attempts retried (`retry` section).
    Retries,
    /// Records dead-lettered (`retry` section).
    DeadLetters,
    /// Records that overtook a predecessor, with the deepest stash (`retry` section).
    Overtaken,
    /// Time partitions stood paused by failing records (`retry` section).
    Paused,
    /// The mitigation (`expansion` section).
    Mitigation,
    /// Keys reordered by the expansion (`expansion` section).
    ExpansionKeysReordered,
    /// Records reordered by the expansion (`expansion` section).
    ExpansionRecordsReordered,
    /// The drain's stall (`expansion` section).
    Held,
    /// Records the projection stashed (`reorder` section).
    ReachedOutOfOrder,
    /// Keys with a stashed record (`reorder` section).
    ReorderKeys,
    /// The deepest stash (`reorder` section).
    DeepestStash,
    /// Records the naive projection applied out of order.
    NaiveOutOfOrder,
    /// Records delivered twice, and their share (`rebalance` section).
    Duplicates,
    /// Records polled but not committed at the revocations (`rebalance` section).
    Uncommitted,
    /// Records in flight at the revocations (`rebalance` section).
    InFlight,
    /// Each rebalance's pause (`rebalance` section).
    Pauses,
    /// Records that reached the projection before a predecessor.
    OutOfOrder,
}

/// How one cell of a pipeline scenario consumes the log, and what it records beside what
/// every pipeline cell records (module `pipeline::scenario`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PipelineKind {
    /// A consumer that crashes and one that resumes from its commits; records when the
    /// first died (`crash_after`).
    Crash,
    /// One consumer through transient failures and poison records, retrying by the cell's
    /// retry policy; records the `retry` section.
    Retry,
    /// One consumer over a log whose partitions grew, with the cell's mitigation; records
    /// the `expansion` section.
    Expand,
    /// One consumer over a log that racing producers reordered; records the `reorder`
    /// section.
    Reorder,
    /// A consumer group that loses a member and gains one; records the `rebalance` section.
    Rebalance,
}

/// The cells of a pipeline scenario per strategy, each named by its `param`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cells {
    /// One per commit policy the run was given (`--commit-policy`): `policy=P`.
    PerCommitPolicy,
    /// One per retry policy the run was given (`--retry-policy`): `retry=P`.
    PerRetryPolicy,
    /// One per mitigation of an expansion: `mitigation=M`.
    PerMitigation,
    /// One cell, of this `param`.
    One(&'static str),
}

/// How a pipeline scenario's log is produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Produce {
    /// Every record at 0: a backlog from the start.
    Backlog,
    /// At `--pipeline-rate` records per second: a record is visible from its produce time.
    Paced,
    /// A backlog whose partitions grow from `--partitions` to `--expand-to` halfway.
    Expanding,
    /// Two producers racing, so that some of a key's versions land out of order; a backlog.
    Racing,
}

impl PipelineSpec {
    /// Whether its records are produced at `--pipeline-rate` (else all at once, a backlog).
    pub fn paced(&self) -> bool {
        self.produce == Produce::Paced
    }
}

impl ScenarioId {
    /// What it is as a pipeline, if it is a pipeline scenario.
    pub const fn pipeline(self) -> Option<&'static PipelineSpec> {
        match &self.spec().kind {
            Kind::Pipeline(pipeline) => Some(pipeline),
            Kind::Measured(_) => None,
        }
    }
}

/// A consumer crash, per commit policy.
pub(super) const CRASH: ScenarioSpec = ScenarioSpec {
    id: "pipeline-crash",
    description: "a partitioned log consumed into a version-aware projection, the consumer \
                  crashing mid-run, per commit policy: records lost and redelivered",
    kind: Kind::Pipeline(PipelineSpec {
        kind: PipelineKind::Crash,
        columns: &[
            PipelineColumn::Policy,
            PipelineColumn::Strategy,
            PipelineColumn::RecordsPerSecond,
            PipelineColumn::Lost,
            PipelineColumn::Redelivered,
            PipelineColumn::KeysReordered,
            PipelineColumn::CommitLag,
            PipelineColumn::Freeze,
            PipelineColumn::MetadataMax,
            PipelineColumn::State,
            PipelineColumn::NaiveState,
        ],
        cells: Cells::PerCommitPolicy,
        produce: Produce::Backlog,
        charts: &[PipelineChart::Crash, PipelineChart::CommitLag],
    }),
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
    summary: super::SummaryExtra::None,
};

/// Transient failures and poison records, per retry policy.
pub(super) const RETRY: ScenarioSpec = ScenarioSpec {
    id: "pipeline-retry",
    description: "a paced log with transient failures and poison records, per retry policy: \
                  bystander latency, overtaken versions, dead letters",
    kind: Kind::Pipeline(PipelineSpec {
        kind: PipelineKind::Retry,
        columns: &[
            PipelineColumn::RetryPolicy,
            PipelineColumn::Strategy,
            PipelineColumn::RecordsPerSecond,
            PipelineColumn::BystanderLatency,
            PipelineColumn::TroubledP99,
            PipelineColumn::Retries,
            PipelineColumn::DeadLetters,
            PipelineColumn::Overtaken,
            PipelineColumn::Paused,
            PipelineColumn::Lost,
            PipelineColumn::States,
        ],
        cells: Cells::PerRetryPolicy,
        produce: Produce::Paced,
        charts: &[PipelineChart::Retry],
    }),
    stream: 13,
    consumer_driver: false,
    summary: super::SummaryExtra::None,
    ..CRASH
};

/// A partition expansion, per mitigation.
pub(super) const EXPAND: ScenarioSpec = ScenarioSpec {
    id: "pipeline-expand",
    description: "the log's partitions grow mid-stream, so a key's new records land beside its \
                  old backlog, per mitigation: reorderings and stalls",
    stream: 14,
    kind: Kind::Pipeline(PipelineSpec {
        kind: PipelineKind::Expand,
        columns: &[
            PipelineColumn::Mitigation,
            PipelineColumn::Strategy,
            PipelineColumn::RecordsPerSecond,
            PipelineColumn::ExpansionKeysReordered,
            PipelineColumn::ExpansionRecordsReordered,
            PipelineColumn::Held,
            PipelineColumn::Freeze,
            PipelineColumn::Lost,
            PipelineColumn::States,
        ],
        cells: Cells::PerMitigation,
        produce: Produce::Expanding,
        charts: &[PipelineChart::Expand],
    }),
    grows_partitions: true,
    resubmits: false,
    consumer_driver: false,
    summary: super::SummaryExtra::None,
    ..CRASH
};

/// Racing producers.
pub(super) const REORDER: ScenarioSpec = ScenarioSpec {
    id: "pipeline-reorder",
    description: "two producers race, so a key's versions reach its partition out of order: \
                  what the version-aware projection absorbs",
    stream: 15,
    kind: Kind::Pipeline(PipelineSpec {
        kind: PipelineKind::Reorder,
        columns: &[
            PipelineColumn::Strategy,
            PipelineColumn::RecordsPerSecond,
            PipelineColumn::ReachedOutOfOrder,
            PipelineColumn::ReorderKeys,
            PipelineColumn::DeepestStash,
            PipelineColumn::NaiveOutOfOrder,
            PipelineColumn::Lost,
            PipelineColumn::States,
        ],
        cells: Cells::One("producers=2"),
        produce: Produce::Racing,
        charts: &[],
    }),
    consumer_driver: false,
    summary: super::SummaryExtra::None,
    ..CRASH
};

/// A consumer group's rebalances, per commit policy.
pub(super) const REBALANCE: ScenarioSpec = ScenarioSpec {
    id: "pipeline-rebalance",
    description: "a consumer group loses a member and gains one mid-run, its partitions revoked \
                  and reassigned, per commit policy: losses, duplicates, pauses",
    stream: 16,
    kind: Kind::Pipeline(PipelineSpec {
        kind: PipelineKind::Rebalance,
        columns: &[
            PipelineColumn::Policy,
            PipelineColumn::Strategy,
            PipelineColumn::RecordsPerSecond,
            PipelineColumn::Lost,
            PipelineColumn::Duplicates,
            PipelineColumn::Uncommitted,
            PipelineColumn::InFlight,
            PipelineColumn::Pauses,
            PipelineColumn::OutOfOrder,
            PipelineColumn::States,
        ],
        cells: Cells::PerCommitPolicy,
        produce: Produce::Backlog,
        charts: &[PipelineChart::Rebalance],
    }),
    consumer_driver: false,
    summary: super::SummaryExtra::None,
    ..CRASH
};
