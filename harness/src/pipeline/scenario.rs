//! The pipeline scenarios as `keyed-bench run` measures them: a log produced from the run's
//! seed, consumed by one strategy per cell, and what it cost end to end.
//!
//! `pipeline-crash`, one cell per (commit policy, strategy):
//! 1. `--pipeline-records` records, each the next version of an aggregate drawn uniformly
//!    from `--pipeline-keys`, go to a log of `--partitions` partitions (Kafka's default
//!    partitioner); the same log for every cell.
//! 2. A consumer (one member, every partition) runs them on the strategy, each record
//!    spinning `--spin-ns` before it is applied to a version-aware projection, and
//!    commits every `--commit-interval-ms` by the cell's policy.
//! 3. After `--crash-after` completions it dies right after its next commit, without a
//!    final one; the executor is force-closed.
//! 4. A new consumer, on a new executor, resumes from the committed offsets (and metadata)
//!    and consumes to the end.
//! 5. Measured: records lost (never applied) and redelivered (delivered twice), the
//!    committed-offset lag at every commit (p50, p99, max), the longest commit freeze, the
//!    most metadata bytes in one commit, and whether the projection's final state equals a
//!    sequential replay (and whether a projection without the version check would).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use strategies::{StrategyConfig, StrategyId};

use super::commit::{CommitPolicy, MetadataLimit};
use super::consumer::{
    run_incarnation, ConsumerConfig, ConsumerError, IncarnationReport, Pipeline, Stop, Treat,
    Treatment, DEFAULT_MAX_POLL_RECORDS,
};
use super::log::Topic;
use super::projection::ProjectionReport;
use super::transport::{EmbeddedTransport, MemberId, Transport};
use crate::measure::timer::Timer;
use crate::workload::{ScenarioId, Sizes};

/// Bytes of every record's payload (only folded into the projection's digest).
const PAYLOAD_BYTES: u32 = 64;

/// How long a crashing consumer waits for its crash point once the log is consumed before
/// it dies anyway (records that never complete can keep the count from being reached).
const CRASH_IDLE: Duration = Duration::from_millis(200);

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
    fn of(samples: &mut [u64]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_unstable();
        let at = |quantile: f64| samples[((samples.len() - 1) as f64 * quantile).round() as usize];
        Self { p50: at(0.5), p99: at(0.99), max: samples[samples.len() - 1] }
    }
}

/// One pipeline cell: what a strategy and a commit policy did end to end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PipelineRun {
    /// The scenario id (`pipeline-crash`).
    pub scenario: String,
    /// The cell's parameter (`policy=contiguous`, ...).
    pub param: String,
    /// The strategy id.
    pub strategy: String,
    /// The commit policy.
    pub policy: CommitPolicy,
    /// Partitions of the log.
    pub partitions: u32,
    /// Records produced.
    pub records: u64,
    /// Aggregates the records belong to.
    pub keys: u64,
    /// Completions after which the first consumer died.
    pub crash_after: u64,
    /// Records produced that no handler ever applied.
    pub lost: u64,
    /// Records delivered to a handler more than once.
    pub redelivered: u64,
    /// The committed-offset lag over both consumers.
    pub commit_lag: LagSummary,
    /// The longest time a partition's committed offset stood still while its records
    /// completed, in seconds.
    pub longest_freeze_s: f64,
    /// The most metadata bytes one commit carried.
    pub max_metadata_bytes: usize,
    /// Both consumers' elapsed time, in seconds.
    pub elapsed_s: f64,
    /// Records produced / elapsed, per second.
    pub throughput_per_s: f64,
    /// The business state, version-aware and naive.
    pub projection: ProjectionReport,
    /// The consumer before the crash, then the one after.
    pub incarnations: Vec<IncarnationReport>,
}

/// Why a pipeline cell could not run.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The consumer failed.
    #[error("{scenario} {policy} {strategy}: {source}")]
    Consumer {
        /// The scenario.
        scenario: ScenarioId,
        /// The policy.
        policy: CommitPolicy,
        /// The strategy.
        strategy: StrategyId,
        /// What went wrong.
        source: ConsumerError,
    },
    /// The log could not be made (no partitions).
    #[error("cannot make the pipeline's log: {0}")]
    Log(#[from] super::log::LogError),
}

/// The log of a pipeline scenario and each key's last version.
fn produce(sizes: &Sizes, seed: u64) -> Result<(Topic, BTreeMap<u64, u64>), PipelineError> {
    let mut topic = Topic::new("events", sizes.partitions)?;
    let stream = ScenarioId::PipelineCrash.stream();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ stream.wrapping_mul(0x9e37_79b9));
    let mut versions = BTreeMap::new();
    for _ in 0..sizes.pipeline_records {
        let key = rng.gen_range(0..sizes.pipeline_keys as u64);
        let version = versions.entry(key).and_modify(|v| *v += 1).or_insert(1);
        topic.append(key, *version, PAYLOAD_BYTES, 0);
    }
    Ok((topic, versions))
}

/// Runs the cells of `pipeline-crash` for `policies` x `strategies`, calling `each` after
/// every cell with its result.
pub fn run_crash(
    sizes: &Sizes,
    seed: u64,
    timer: &Timer,
    strategy_config: StrategyConfig,
    policies: &[CommitPolicy],
    strategies: &[StrategyId],
    mut each: impl FnMut(&PipelineRun),
) -> Result<Vec<PipelineRun>, PipelineError> {
    let (topic, expected) = produce(sizes, seed)?;
    let mut runs = Vec::new();
    for &policy in policies {
        for &strategy in strategies {
            let run =
                crash_cell(&topic, &expected, sizes, strategy_config, strategy, policy, timer)
                    .map_err(|source| PipelineError::Consumer {
                        scenario: ScenarioId::PipelineCrash,
                        policy,
                        strategy,
                        source,
                    })?;
            each(&run);
            runs.push(run);
        }
    }
    Ok(runs)
}

fn crash_cell(
    topic: &Topic,
    expected: &BTreeMap<u64, u64>,
    sizes: &Sizes,
    strategy_config: StrategyConfig,
    strategy: StrategyId,
    policy: CommitPolicy,
    timer: &Timer,
) -> Result<PipelineRun, ConsumerError> {
    let transport = Arc::new(EmbeddedTransport::new(topic.clone()));
    let member = MemberId(0);
    let all: Vec<u32> = (0..topic.partitions()).collect();
    transport.assign(member, &all)?;
    let pipeline = Pipeline::new(transport, timer.clone());
    let metadata_limit = MetadataLimit::new(sizes.metadata_limit)
        .map_err(|source| ConsumerError::Resume { partition: 0, source })?;
    let config = ConsumerConfig {
        policy,
        commit_interval: Duration::from_millis(sizes.commit_interval_ms),
        metadata_limit,
        max_poll_records: DEFAULT_MAX_POLL_RECORDS,
        spin_ns: sizes.spin_ns.into(),
    };
    // Slow records: a fixed share, chosen by a hash of their place in the log (the same
    // records for every cell), wait on a slow dependency without holding a thread.
    let slow_per_million = (sizes.pipeline_slow_pct * 10_000.0).round() as u64;
    let slow = Duration::from_millis(sizes.pipeline_slow_ms);
    let treat: Treat = Arc::new(move |record: &super::log::Record| {
        let place = u64::from(record.partition) << 40 | record.offset;
        if (place.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20) % 1_000_000 < slow_per_million {
            Treatment::Wait(slow)
        } else {
            Treatment::Run
        }
    });
    let crash = Stop::CrashAfter { completions: sizes.crash_after as u64, idle: CRASH_IDLE };
    let mut incarnations = Vec::new();
    for stop in [crash, Stop::AtEnd] {
        incarnations.push(run_incarnation(
            &pipeline,
            member,
            strategy,
            strategy_config,
            config,
            Arc::clone(&treat),
            stop,
        )?);
    }
    let (lost, redelivered) = pipeline.ledger.lost_and_redelivered();
    let mut lags: Vec<u64> =
        incarnations.iter().flat_map(|report| report.lag_samples.iter().copied()).collect();
    let elapsed_s: f64 = incarnations.iter().map(|report| report.elapsed_s).sum();
    let records = topic.len();
    Ok(PipelineRun {
        scenario: ScenarioId::PipelineCrash.as_str().into(),
        param: format!("policy={policy}"),
        strategy: strategy.as_str().into(),
        policy,
        partitions: topic.partitions(),
        records,
        keys: sizes.pipeline_keys as u64,
        crash_after: sizes.crash_after as u64,
        lost,
        redelivered,
        commit_lag: LagSummary::of(&mut lags),
        longest_freeze_s: incarnations
            .iter()
            .map(|report| report.longest_freeze_s)
            .fold(0.0, f64::max),
        max_metadata_bytes: incarnations
            .iter()
            .map(|report| report.max_metadata_bytes)
            .max()
            .unwrap_or(0),
        elapsed_s,
        throughput_per_s: if elapsed_s > 0.0 { records as f64 / elapsed_s } else { 0.0 },
        projection: pipeline.projection.report(expected),
        incarnations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes() -> Sizes {
        Sizes {
            pipeline_records: 3_000,
            pipeline_keys: 200,
            partitions: 3,
            crash_after: 1_000,
            commit_interval_ms: 1,
            ..Sizes::quick()
        }
    }

    #[test]
    fn the_scenario_has_one_cell_per_commit_policy() {
        assert_eq!(ScenarioId::PipelineCrash.params(&sizes()), CommitPolicy::ALL.len());
    }

    #[test]
    fn the_log_is_the_same_for_a_seed_and_holds_every_version_once() {
        let (first, versions) = produce(&sizes(), 7).unwrap();
        let (second, _) = produce(&sizes(), 7).unwrap();
        assert_eq!(first, second);
        assert_eq!(first.len(), 3_000);
        assert_eq!(versions.values().sum::<u64>(), 3_000);
    }

    #[test]
    fn safe_policies_lose_nothing_and_end_correct_for_every_ordered_strategy() {
        let ordered: Vec<StrategyId> =
            StrategyId::ALL.iter().copied().filter(|id| id.descriptor().ordered).collect();
        let runs = run_crash(
            &sizes(),
            7,
            &Timer::start(),
            StrategyConfig::with_workers(2),
            &CommitPolicy::ALL,
            &ordered,
            |_| {},
        )
        .unwrap();
        assert_eq!(runs.len(), 3 * ordered.len());
        for run in &runs {
            let what = format!("{} {}", run.strategy, run.param);
            assert!(run.incarnations[0].completed >= 1_000, "{what}: crashed too early");
            if run.policy == CommitPolicy::HighestCompleted {
                continue;
            }
            assert_eq!(run.lost, 0, "{what}");
            assert!(run.projection.final_state_correct, "{what}");
            // An ordered strategy applies each key's versions in order within a consumer:
            // what reaches the naive projection out of order is the first redelivered
            // version of a key, itself a double apply.
            assert!(
                run.projection.naive_out_of_order <= run.projection.naive_double_applies,
                "{what}: only redeliveries reach the naive projection out of order"
            );
            assert!(run.redelivered > 0, "{what}: the crash redelivered nothing");
        }
    }
}
