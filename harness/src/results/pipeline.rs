//! `pipelines[]`: one end-to-end pipeline cell per (scenario, param, strategy), and its parts.
//! The pipeline scenarios produce them; `compare`, the gate and the reports read them.
//!
//! The commit policy, the retry policy and the mitigation are here too: a cell records
//! which it ran with, and readers group cells by them.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use strategies::ForcedClose;

use super::cell::CellSettings;

/// One pipeline cell: what a strategy did end to end under one scenario's parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PipelineRun {
    /// The scenario id (`pipeline-crash`, ...).
    pub scenario: String,
    /// The cell's parameter (`policy=contiguous`, `retry=retry-topic`, ...).
    pub param: String,
    /// The strategy id.
    pub strategy: String,
    /// The commit policy.
    pub policy: CommitPolicy,
    /// Partitions of the log (at the end, for an expanded one).
    pub partitions: u32,
    /// Records produced.
    pub records: u64,
    /// Aggregates the records belong to.
    pub keys: u64,
    /// Completions after which the first consumer died (pipeline-crash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash_after: Option<u64>,
    /// Records produced that no handler ever applied, nor sent to the dead-letter topic.
    pub lost: u64,
    /// Records delivered to a handler more than once.
    pub redelivered: u64,
    /// The committed-offset lag over every incarnation.
    pub commit_lag: LagSummary,
    /// The longest time a partition's committed offset stood still while its records
    /// completed, in seconds.
    pub longest_freeze_s: f64,
    /// The most metadata bytes one commit carried.
    pub max_metadata_bytes: usize,
    /// From the first poll to the last commit, in seconds.
    pub elapsed_s: f64,
    /// Records produced / elapsed, per second.
    pub throughput_per_s: f64,
    /// The business state, version-aware and naive.
    pub projection: ProjectionReport,
    /// Every consumer incarnation, in the order they started.
    pub incarnations: Vec<IncarnationReport>,
    /// pipeline-retry's failures, retries and latencies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryReport>,
    /// pipeline-expand's expansion, stall and timeline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expansion: Option<ExpansionReport>,
    /// pipeline-reorder's producers and what they reordered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<ReorderReport>,
    /// pipeline-rebalance's group and its rebalances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebalance: Option<RebalanceReport>,
    /// The strategy settings the consumer's executor ran with, and its point's label
    /// within a sweep; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<CellSettings>,
    /// What the rest of the machine did while the cell ran, judged; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<super::Interference>,
    /// The transport the cell consumed through; absent for the embedded log (and in older
    /// files, all of which used it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportKind>,
    /// What the consumer's calls into the transport took, over every incarnation: each
    /// commit call's wall time and each non-empty poll's batch; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport_calls: Option<TransportCalls>,
    /// What the cell's Kafka clients saw of the cluster (leader changes, retried requests,
    /// lost connections): what a broker that failed mid-cell cost them; absent for the
    /// embedded log and in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_events: Option<ClientEvents>,
}

impl PipelineRun {
    /// Whether the cell retried its poison records for ever (`pipeline-retry
    /// --max-attempts 0`).
    pub fn retried_for_ever(&self) -> bool {
        self.retry.as_ref().is_some_and(|retry| retry.forever.is_some())
    }

    /// Whether its final state is a result: not in a retry-forever cell, whose poison
    /// records never settle (its stall figure is the result there).
    pub fn state_judged(&self) -> bool {
        !self.retried_for_ever()
    }

    /// Commit calls that failed over every incarnation (refused by the broker, or not
    /// answered within the timeout), and the first one's words.
    pub fn failed_commits(&self) -> FailedCommits {
        let mut all = FailedCommits::default();
        for report in &self.incarnations {
            all.merge(report.failed.clone());
        }
        all
    }

    /// The committed-offset lag over time: every incarnation's ticks, by time (members of a
    /// group each tick for their own partitions).
    pub fn lag_timeline(&self) -> Vec<LagPoint> {
        let mut points: Vec<LagPoint> =
            self.incarnations.iter().flat_map(|report| report.lag_timeline.clone()).collect();
        points.sort_by(|a, b| a.at_s.total_cmp(&b.at_s));
        points
    }
}

/// The committed-offset lag over a run, in records, from every commit tick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LagSummary {
    /// The median tick.
    pub p50: u64,
    /// The 99th percentile tick.
    pub p99: u64,
    /// The largest.
    pub max: u64,
}

impl LagSummary {
    /// The summary of every commit tick's lag (`samples`, sorted in place).
    pub fn of(samples: &mut [u64]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_unstable();
        let at = |quantile: f64| samples[nearest_rank(samples.len(), quantile)];
        Self { p50: at(0.5), p99: at(0.99), max: samples[samples.len() - 1] }
    }
}

/// The index of `quantile` in `len` sorted samples (rounded to the nearest rank).
fn nearest_rank(len: usize, quantile: f64) -> usize {
    ((len - 1) as f64 * quantile).round() as usize
}

/// What a cell's consumers' calls into the transport took, summed over its incarnations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TransportCalls {
    /// The wall time of each `commit` call: a round trip to the broker on Kafka, an
    /// in-process call on the embedded log.
    pub commit_call: CallSummary,
    /// The records of each poll that returned any.
    pub poll_batch: BatchSummary,
}

/// What a cell's Kafka clients saw of the cluster, from librdkafka's statistics (each
/// client reports them every 100 ms; counted from each client's reports, so a client that
/// went within 100 ms of an event may not have counted it) and the members' polls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientEvents {
    /// Partitions whose leader changed from one broker to another between two reports of
    /// a client, summed over the cell's clients (each saw the change for itself).
    pub leader_changes: u64,
    /// Produce requests the producers (the log's, the retry and dead-letter topics') sent
    /// again (librdkafka's `txretries`).
    pub produce_retries: u64,
    /// Requests the members' clients sent again: fetches, commits, offset reads, group
    /// requests (`txretries`).
    pub request_retries: u64,
    /// Connections to a broker that a client lost (`disconnects`, every client).
    pub disconnects: u64,
    /// Errors the members' clients reported in their polls (a broker down, a request
    /// timed out).
    pub client_errors: u64,
}

/// The wall time of a set of calls, in microseconds (to 3 significant digits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallSummary {
    /// Calls timed (failed ones included).
    pub calls: u64,
    /// The median.
    pub p50_us: f64,
    /// The 99th percentile.
    pub p99_us: f64,
    /// The longest.
    pub max_us: f64,
}

/// The records per poll of the polls that returned any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchSummary {
    /// Polls that returned records.
    pub polls: u64,
    /// Records per such poll, on average.
    pub mean: f64,
    /// The median batch.
    pub p50: u64,
    /// The 99th percentile batch.
    pub p99: u64,
    /// The largest batch.
    pub max: u64,
}

/// What an incarnation's calls into the transport took, as it runs: histograms that merge
/// over a cell's incarnations into its [`TransportCalls`]. Never written to a file.
#[derive(Clone, Debug, PartialEq)]
pub struct CallSamples {
    /// Each commit call's wall time, in nanoseconds.
    commit_ns: Histogram<u64>,
    /// Each non-empty poll's records.
    batch: Histogram<u64>,
    /// Records over every non-empty poll (for an exact mean).
    batch_records: u64,
}

impl Default for CallSamples {
    fn default() -> Self {
        let histogram = || Histogram::new(3).expect("3 significant digits are valid");
        Self { commit_ns: histogram(), batch: histogram(), batch_records: 0 }
    }
}

/// Records `value` in `histogram`, which grows to hold it (clamped only past what it can
/// ever hold).
fn record(histogram: &mut Histogram<u64>, value: u64) {
    if histogram.record(value).is_err() {
        histogram.saturating_record(value);
    }
}

impl CallSamples {
    /// One commit call that took `nanos`.
    pub fn commit(&mut self, nanos: u64) {
        record(&mut self.commit_ns, nanos);
    }

    /// One poll that returned `records` (none: not a batch, not counted).
    pub fn poll(&mut self, records: usize) {
        if records > 0 {
            record(&mut self.batch, records as u64);
            self.batch_records += records as u64;
        }
    }

    /// Adds `other`'s calls to these.
    pub fn merge(&mut self, other: &Self) {
        // Both histograms resize as they grow: adding never runs out of range.
        let _ = self.commit_ns.add(&other.commit_ns);
        let _ = self.batch.add(&other.batch);
        self.batch_records += other.batch_records;
    }

    /// The summary of every call.
    pub fn summary(&self) -> TransportCalls {
        let (commit, batch) = (&self.commit_ns, &self.batch);
        let us = |nanos: u64| nanos as f64 / 1e3;
        let commit_call = if commit.is_empty() {
            CallSummary::default()
        } else {
            CallSummary {
                calls: commit.len(),
                p50_us: us(commit.value_at_quantile(0.5)),
                p99_us: us(commit.value_at_quantile(0.99)),
                max_us: us(commit.max()),
            }
        };
        let poll_batch = if batch.is_empty() {
            BatchSummary::default()
        } else {
            BatchSummary {
                polls: batch.len(),
                mean: self.batch_records as f64 / batch.len() as f64,
                p50: batch.value_at_quantile(0.5),
                p99: batch.value_at_quantile(0.99),
                max: batch.max(),
            }
        };
        TransportCalls { commit_call, poll_batch }
    }

    /// The summary of the calls of every one of `incarnations`.
    pub fn merged<'a>(
        incarnations: impl IntoIterator<Item = &'a IncarnationReport>,
    ) -> TransportCalls {
        let mut all = Self::default();
        for report in incarnations {
            all.merge(&report.calls);
        }
        all.summary()
    }
}

/// Produce-to-apply latency of a set of records, in microseconds: from each record's
/// intended produce time to its first application.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Records measured (applied ones; a dead letter is never applied).
    pub records: u64,
    /// The median.
    pub p50_us: f64,
    /// The 99th percentile.
    pub p99_us: f64,
    /// The largest.
    pub max_us: f64,
}

impl LatencySummary {
    /// The summary of `nanos` (one value per record).
    pub fn of(mut nanos: Vec<u64>) -> Self {
        if nanos.is_empty() {
            return Self::default();
        }
        nanos.sort_unstable();
        let at = |quantile: f64| nanos[nearest_rank(nanos.len(), quantile)] as f64 / 1e3;
        Self {
            records: nanos.len() as u64,
            p50_us: at(0.5),
            p99_us: at(0.99),
            max_us: nanos[nanos.len() - 1] as f64 / 1e3,
        }
    }
}

/// The committed-offset lag at one commit tick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LagPoint {
    /// Seconds since the pipeline's epoch.
    pub at_s: f64,
    /// Records completed above the committed offsets, summed over the member's partitions.
    pub lag: u64,
}

/// What one incarnation of a consumer did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IncarnationReport {
    /// The member it was.
    pub member: u32,
    /// Records polled from the log.
    pub polled: u64,
    /// Records skipped because the commit metadata says they completed before.
    pub skipped_done: u64,
    /// Records submitted to the executor (retry-topic records excluded).
    pub submitted: u64,
    /// Records polled from the retry topic and submitted again.
    pub retry_polls: u64,
    /// Offsets completed (applied, dead-lettered or handed to the retry topic).
    pub completed: u64,
    /// Attempts after a record's first one.
    pub retries: u64,
    /// Records sent to the dead-letter topic.
    pub dead_lettered: u64,
    /// Periodic and final commits (one per partition each) the group took.
    pub commits: u64,
    /// Its commit calls that failed.
    #[serde(flatten)]
    pub failed: FailedCommits,
    /// The committed-offset lag at each commit tick.
    pub lag_timeline: Vec<LagPoint>,
    /// The longest time one partition's committed offset stood still while records of it
    /// completed, in seconds.
    pub longest_freeze_s: f64,
    /// The most metadata bytes one commit carried.
    pub max_metadata_bytes: usize,
    /// Ticks at which some partition was paused by the metadata back-pressure.
    pub paused_ticks: u64,
    /// Time partitions stood paused by failing records (pause-partition), summed over
    /// partitions, in seconds.
    pub failure_pause_s: f64,
    /// Time its held partitions waited for the hold to lift, in seconds.
    pub held_s: f64,
    /// Records polled but not covered by the last commit when it died or gave its
    /// partitions up: at most what the next owner runs again.
    pub uncommitted_at_end: u64,
    /// Records polled and not completed when it died or gave its partitions up: in flight.
    pub in_flight_at_end: u64,
    /// What the forced close of a crash or revocation discarded and abandoned (zero when
    /// it ran to the end).
    pub forced: ForcedCloseCounts,
    /// When it started, in seconds since the pipeline's epoch.
    pub started_at_s: f64,
    /// From the first poll to the end (the drain and the last commit, or the crash).
    pub elapsed_s: f64,
    /// Its calls into the transport, timed and counted; summarized per cell
    /// ([`PipelineRun::transport_calls`]), not written per incarnation.
    #[serde(skip)]
    pub calls: CallSamples,
}

/// Commit calls that failed: refused by the group (a revoked partition, metadata longer
/// than the broker stores) or not answered within the timeout. A periodic commit that
/// failed is tried again at the next tick; a final one ends the incarnation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedCommits {
    /// How many.
    #[serde(default, rename = "failed_commits", skip_serializing_if = "is_zero")]
    pub count: u64,
    /// The first one's words (the broker's, where it answered).
    #[serde(default, rename = "first_failed_commit", skip_serializing_if = "Option::is_none")]
    pub first: Option<String>,
}

impl FailedCommits {
    /// Counts a commit call that failed with `error`.
    pub fn add(&mut self, error: &impl std::fmt::Display) {
        self.count += 1;
        self.first.get_or_insert_with(|| error.to_string());
    }

    /// Adds `other`'s failures to these (the first kept first).
    pub fn merge(&mut self, other: Self) {
        self.count += other.count;
        if let Some(first) = other.first {
            self.first.get_or_insert(first);
        }
    }
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// [`ForcedClose`], serializable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForcedCloseCounts {
    /// Queued messages discarded.
    pub discarded: u64,
    /// Pending steps abandoned.
    pub abandoned: u64,
}

impl From<ForcedClose> for ForcedCloseCounts {
    fn from(forced: ForcedClose) -> Self {
        Self { discarded: forced.discarded, abandoned: forced.abandoned }
    }
}

/// What both projections ended with, against what the producer wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectionReport {
    /// Keys either the projection saw or the producer wrote.
    pub keys: u64,
    /// Records the version-aware projection applied.
    pub applied: u64,
    /// Records it ignored (duplicates and stale versions).
    pub ignored: u64,
    /// Ignored records whose version had been applied or stashed before.
    pub duplicates: u64,
    /// Records that arrived before a predecessor and were stashed.
    pub gaps: u64,
    /// The deepest any key's stash got.
    pub max_stash: u64,
    /// Records still stashed at the end (a gap that never closed).
    pub stashed_at_end: u64,
    /// Naive applies whose version was not the previous one + 1.
    pub naive_out_of_order: u64,
    /// Naive applies of a version applied before.
    pub naive_double_applies: u64,
    /// Every key of the version-aware projection ended at its last version, with nothing
    /// stashed and the sequential replay's digest.
    pub final_state_correct: bool,
    /// Every key of the naive projection ended at its last version with the replay's digest.
    pub naive_final_state_correct: bool,
    /// Keys whose version-aware state is wrong.
    pub keys_wrong: u64,
    /// Keys with a record that arrived before a predecessor (stashed at least once).
    #[serde(default)]
    pub keys_reordered: u64,
    /// Keys whose naive state is wrong.
    pub naive_keys_wrong: u64,
}

/// What a consumer commits for a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CommitPolicy {
    /// The offset after the highest one below which everything completed (safe).
    #[serde(rename = "contiguous")]
    Contiguous,
    /// As `contiguous`, with the completed offsets above it in the metadata (safe, fewer
    /// redeliveries).
    #[serde(rename = "contiguous+metadata")]
    ContiguousMetadata,
    /// The offset after the highest completed one (unsafe: skips incomplete records below
    /// it after a crash).
    #[serde(rename = "highest-completed")]
    HighestCompleted,
}

strategies::names!(CommitPolicy, UnknownCommitPolicy, "commit policy", "policies" {
    Contiguous = "contiguous",
    ContiguousMetadata = "contiguous+metadata",
    HighestCompleted = "highest-completed",
});

impl CommitPolicy {
    /// Whether a consumer that commits by it loses nothing when it dies or gives its
    /// partitions up: its commit never covers a record that has not completed, so the next
    /// owner runs every record the commit leaves out. `highest-completed` covers the
    /// incomplete records below its highest completed one, and loses them.
    pub fn is_safe(self) -> bool {
        match self {
            Self::Contiguous | Self::ContiguousMetadata => true,
            Self::HighestCompleted => false,
        }
    }
}

/// What the consumer does with a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RetryPolicy {
    /// Wait out the backoff on the key, and try again.
    #[serde(rename = "retry-in-place")]
    RetryInPlace,
    /// As in place, with the partition paused until the record is settled.
    #[serde(rename = "pause-partition")]
    PausePartition,
    /// Send it to a retry topic and go on.
    #[serde(rename = "retry-topic")]
    RetryTopic,
}

strategies::names!(RetryPolicy, UnknownRetryPolicy, "retry policy", "policies" {
    RetryInPlace = "retry-in-place",
    PausePartition = "pause-partition",
    RetryTopic = "retry-topic",
});

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

/// What the consumer does about an expansion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mitigation {
    /// Nothing: every partition is consumed at once.
    #[serde(rename = "none")]
    None,
    /// The new partitions wait until the old ones are committed up to the expansion.
    #[serde(rename = "drain-then-expand")]
    DrainThenExpand,
}

strategies::names!(Mitigation, UnknownMitigation, "mitigation", "mitigations" {
    None = "none",
    DrainThenExpand = "drain-then-expand",
});

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_quantiles_come_from_the_samples() {
        let summary = LatencySummary::of((1..=100).map(|us| us * 1_000).collect());
        assert_eq!(summary.records, 100);
        assert_eq!((summary.p50_us, summary.p99_us, summary.max_us), (51.0, 99.0, 100.0));
        assert_eq!(LatencySummary::of(Vec::new()), LatencySummary::default());
    }

    /// An incarnation whose commits took `commit_us` and whose polls returned `batches`.
    fn incarnation(commit_us: &[u64], batches: &[usize]) -> IncarnationReport {
        let mut report = IncarnationReport::default();
        commit_us.iter().for_each(|&us| report.calls.commit(us * 1_000));
        batches.iter().for_each(|&records| report.calls.poll(records));
        report
    }

    #[test]
    fn transport_calls_merge_over_incarnations() {
        let first = incarnation(&[10, 20, 30], &[500, 0, 100]);
        let second = incarnation(&[1_000, 40], &[0, 4]);
        let calls = CallSamples::merged([&first, &second]);
        let commit = calls.commit_call;
        assert_eq!(commit.calls, 5);
        // To 3 significant digits.
        let near = |value: f64, expected: f64| (value - expected).abs() <= expected * 1e-3;
        let quantiles = [(commit.p50_us, 30.0), (commit.p99_us, 1_000.0), (commit.max_us, 1_000.0)];
        assert!(quantiles.iter().all(|&(value, expected)| near(value, expected)), "{commit:?}");
        // Empty polls are no batch.
        let batch = calls.poll_batch;
        assert_eq!((batch.polls, batch.p50, batch.p99, batch.max), (3, 100, 500, 500));
        assert!((batch.mean - 604.0 / 3.0).abs() < 1e-9, "{batch:?}");
        assert_eq!(CallSamples::merged([]), TransportCalls::default());
        assert_eq!(CallSamples::merged([&first]).commit_call.calls, 3);
    }

    #[test]
    fn a_cell_without_transport_calls_still_reads_and_writes_none() {
        let mut run: PipelineRun = serde_json::from_value(old_cell()).expect("an older cell reads");
        assert_eq!(run.transport_calls, None);
        let written = serde_json::to_value(&run).unwrap();
        assert!(written.get("transport_calls").is_none(), "{written}");
        run.transport_calls = Some(CallSamples::merged([&incarnation(&[7], &[3])]));
        let written = serde_json::to_value(&run).unwrap();
        assert_eq!(written["transport_calls"]["commit_call"]["calls"], 1);
        assert_eq!(written["transport_calls"]["poll_batch"]["max"], 3);
        assert!(written["incarnations"][0].get("calls").is_none(), "{written}");
        let back: PipelineRun = serde_json::from_value(written).unwrap();
        assert_eq!(back.transport_calls, run.transport_calls);
    }

    #[test]
    fn failed_commits_and_client_events_are_written_only_when_there_are_some() {
        let mut run: PipelineRun = serde_json::from_value(old_cell()).expect("an older cell reads");
        assert_eq!(run.failed_commits(), FailedCommits::default());
        let written = serde_json::to_value(&run).unwrap();
        assert!(written["incarnations"][0].get("failed_commits").is_none(), "{written}");
        assert!(written.get("client_events").is_none(), "{written}");

        run.incarnations[0].failed.add(&"refused: OFFSET_METADATA_TOO_LARGE");
        run.incarnations.push(IncarnationReport::default());
        run.incarnations[1].failed.add(&"no answer");
        run.incarnations[1].failed.add(&"no answer again");
        run.client_events = Some(ClientEvents { leader_changes: 2, ..ClientEvents::default() });
        let failed = run.failed_commits();
        assert_eq!(failed.count, 3);
        assert_eq!(failed.first.as_deref(), Some("refused: OFFSET_METADATA_TOO_LARGE"));
        let written = serde_json::to_value(&run).unwrap();
        assert_eq!(written["incarnations"][1]["failed_commits"], 2);
        assert_eq!(written["incarnations"][1]["first_failed_commit"], "no answer");
        assert_eq!(written["client_events"]["leader_changes"], 2);
        let back: PipelineRun = serde_json::from_value(written).unwrap();
        assert_eq!(back, run);
    }

    /// A pipeline-crash cell as files written before `transport_calls` hold it.
    fn old_cell() -> serde_json::Value {
        let incarnation = serde_json::to_value(IncarnationReport::default()).unwrap();
        serde_json::json!({
            "scenario": "pipeline-crash",
            "param": "policy=contiguous",
            "strategy": "keyed-mailbox",
            "policy": "contiguous",
            "partitions": 2,
            "records": 10,
            "keys": 5,
            "lost": 0,
            "redelivered": 1,
            "commit_lag": { "p50": 1, "p99": 2, "max": 3 },
            "longest_freeze_s": 0.001,
            "max_metadata_bytes": 0,
            "elapsed_s": 0.01,
            "throughput_per_s": 1000.0,
            "projection": serde_json::to_value(ProjectionReport::default()).unwrap(),
            "incarnations": [incarnation],
        })
    }
}

/// Which transport a run's pipeline scenarios consume through (`--transport`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// The embedded, in-process log (`pipeline::EmbeddedTransport`).
    #[default]
    Embedded,
    /// Kafka's protocol, through librdkafka, on an in-process mock cluster per cell or on
    /// the user's cluster (the `kafka` feature).
    Kafka,
}

impl TransportKind {
    /// Its name on the command line and in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Embedded => "embedded",
            Self::Kafka => "kafka",
        }
    }

    /// Whether this build can run it.
    pub fn is_built(self) -> bool {
        match self {
            Self::Embedded => true,
            Self::Kafka => cfg!(feature = "kafka"),
        }
    }
}

impl std::fmt::Display for TransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
