//! `pipelines[]`: one end-to-end pipeline cell per (scenario, param, strategy), and its parts.
//! The pipeline scenarios produce them; `compare`, the gate and the reports read them.
//!
//! By job: the cell and its incarnations here; what it ran with (`policy`: the commit
//! policy, the retry policy, the mitigation, the transport); the lag and latency summaries
//! (`summary`); its calls into the transport (`calls`); and each scenario's own figures
//! (`sections`).

mod calls;
mod policy;
mod sections;
mod summary;

use serde::{Deserialize, Serialize};
use strategies::ForcedClose;

use super::cell::CellSettings;

pub use calls::{BatchSummary, CallSamples, CallSummary, ClientEvents, TransportCalls};
pub use policy::{
    CommitPolicy, Mitigation, RetryPolicy, TransportKind, UnknownCommitPolicy, UnknownMitigation,
    UnknownRetryPolicy,
};
pub use sections::{
    ExpansionReport, RebalanceEvent, RebalanceReport, ReorderReport, RetryForever, RetryReport,
    TimelineBin,
};
pub use summary::{LagPoint, LagSummary, LatencySummary};

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

impl CallSamples {
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
