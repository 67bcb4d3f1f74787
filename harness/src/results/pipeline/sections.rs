//! The figures each pipeline scenario records beside those of every pipeline cell: one
//! section of [`super::PipelineRun`] per scenario that has one (pipeline-crash's is its
//! `crash_after` alone).

use serde::{Deserialize, Serialize};

use super::policy::{Mitigation, RetryPolicy};
use super::summary::LatencySummary;

/// What failed, what was retried and who waited, in one pipeline-retry cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetryReport {
    /// The retry policy.
    pub policy: RetryPolicy,
    /// Records per second the producer wrote.
    pub rate_per_s: u64,
    /// Failed attempts after which a record was dead-lettered.
    pub max_attempts: u32,
    /// The first backoff, in milliseconds.
    pub backoff_ms: u64,
    /// Records that failed transiently (1 or 2 attempts).
    pub failing_records: u64,
    /// Records that failed every attempt.
    pub poison_records: u64,
    /// Keys with a failing or poison record.
    pub troubled_keys: u64,
    /// Attempts after a record's first.
    pub retries: u64,
    /// Records sent to the dead-letter topic.
    pub dead_lettered: u64,
    /// Records that reached the projection before a predecessor (stashed).
    pub overtaken: u64,
    /// The deepest stash one key needed.
    pub max_stash: u64,
    /// Produce-to-apply latency of the keys without failures.
    pub bystander_latency: LatencySummary,
    /// Produce-to-apply latency of the troubled keys' records.
    pub troubled_latency: LatencySummary,
    /// Time partitions stood paused by failing records, summed over partitions, seconds.
    pub failure_pause_s: f64,
    /// How a retry-forever cell (`--max-attempts 0`) ended and how long its intake stalled;
    /// absent in every other cell (and in files from before retry for ever).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forever: Option<RetryForever>,
}

/// A retry-forever cell of pipeline-retry: its poison records are never dead-lettered, so
/// the cell stops once every record of the keys without a poison record is applied, or
/// once none has been applied for the stall limit while one waits; then its poison records
/// are still retrying.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetryForever {
    /// The stall detector: the longest interval in which some bystander record waited
    /// (produced, not yet applied) and no bystander record was applied, in seconds. Near
    /// the stall limit where intake stopped behind a poison record.
    pub stall_s: f64,
    /// When that interval began, in seconds since the pipeline's epoch.
    pub stall_from_s: f64,
    /// The cell stops once no bystander record has been applied for this long while one
    /// waits, in seconds.
    pub stall_limit_s: f64,
    /// Whether the stall limit ended the cell (intake stalled behind a poison record), not
    /// the application of every record it waited for.
    pub cut_off: bool,
    /// Bystander records not applied when the cell stopped.
    pub stranded: u64,
    /// Poison records still retrying when the cell stopped.
    pub still_retrying: u64,
    /// The troubled keys' other records left unsettled when it stopped (waiting behind a
    /// poison record, or not yet polled).
    pub unsettled: u64,
}

/// Records first applied in one slice of a pipeline-expand cell's time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelineBin {
    /// The slice's start, in seconds since the cell's start.
    pub at_s: f64,
    /// Records of the partitions the log had before the expansion.
    pub old_partitions: u64,
    /// Records of the partitions the expansion added.
    pub new_partitions: u64,
}

/// What an expansion did in one pipeline-expand cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ExpansionReport {
    /// The mitigation.
    pub mitigation: Mitigation,
    /// Partitions before.
    pub from_partitions: u32,
    /// Partitions after.
    pub to_partitions: u32,
    /// Keys with records in an old and a new partition.
    pub keys_moved: u64,
    /// Keys with a record that reached the version-aware projection before a predecessor.
    pub keys_reordered: u64,
    /// Records that did (stashed).
    pub records_reordered: u64,
    /// How long the new partitions were held, in seconds (0 without a mitigation).
    pub held_s: f64,
    /// When each slice's records were first applied, old and new partitions apart.
    pub timeline: Vec<TimelineBin>,
}

/// What the producers did to the log's order, and what the projection made of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReorderReport {
    /// Producers writing.
    pub producers: u32,
    /// The most records late the second producer sent one.
    pub jitter: u64,
    /// Records appended after a higher version of their key.
    pub appended_out_of_order: u64,
    /// Records that reached the version-aware projection before a predecessor.
    pub reached_out_of_order: u64,
    /// Keys with such a record.
    pub keys_reordered: u64,
    /// The deepest stash one key needed.
    pub max_stash: u64,
}

/// One rebalance of a pipeline-rebalance cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RebalanceEvent {
    /// `leave` or `join`.
    pub kind: String,
    /// Members before it.
    pub members_before: u32,
    /// Members after it.
    pub members_after: u32,
    /// When the partitions were revoked, in seconds since the cell's start.
    pub revoked_at_s: f64,
    /// From the revocation to the first record the new assignment applied, in seconds.
    pub pause_s: f64,
    /// Records polled but not covered by the revoking members' last commits: what the new
    /// owners may run again (completed records above a gap included).
    pub uncommitted: u64,
    /// Records the revoking members had polled and not completed: in flight.
    pub in_flight: u64,
}

/// What a consumer group's rebalances cost in one pipeline-rebalance cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RebalanceReport {
    /// Members at the start.
    pub consumers: u32,
    /// The rebalances, in order.
    pub events: Vec<RebalanceEvent>,
    /// Every rebalance's uncommitted records, summed: the most duplicates a policy that
    /// commits only below a gap can make.
    pub duplicates_bound: u64,
    /// Whether the duplicates (the run's redelivered records) stayed within it.
    pub duplicates_within_bound: bool,
    /// Every rebalance's records in flight, summed: the most duplicates a policy that
    /// commits the completed offsets above a gap (`contiguous+metadata`) can make.
    pub in_flight: u64,
    /// Duplicates per record produced, in percent (the reference test's bar is 20%).
    pub duplicate_pct: f64,
}
