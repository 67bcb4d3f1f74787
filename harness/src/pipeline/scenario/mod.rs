//! The pipeline scenarios as `keyed-bench run` measures them: a log produced from the run's
//! seed, consumed by one strategy per cell, and what it cost end to end.
//!
//! Every scenario's log holds `--pipeline-records` records, each the next version (from 1)
//! of an aggregate drawn uniformly from `--pipeline-keys`, in `--partitions` partitions
//! placed by Kafka's default partitioner; each cell consumes the same log. Each record's
//! handler spins `--spin-ns` and applies it to a version-aware projection;
//! `--pipeline-slow-pct` of the records first wait `--pipeline-slow-ms` on a slow
//! dependency (pending, no thread held), chosen by a hash of their place in the log. The
//! consumer commits every `--commit-interval-ms`. What differs per scenario:
//!
//! - `pipeline-crash` ([`crash`]), one cell per commit policy: the consumer dies after
//!   `--crash-after` completions and a new one resumes from the commits.
//! - `pipeline-retry` ([`retry`]), one cell per retry policy: a paced producer, transient
//!   failures and poison records.
//! - `pipeline-expand` ([`expand`]), one cell per mitigation: the log grows from
//!   `--partitions` to `--expand-to` partitions halfway through.
//! - `pipeline-reorder` ([`reorder`]), one cell: two racing producers write some of a key's
//!   versions out of order.
//! - `pipeline-rebalance` ([`rebalance`]), one cell per commit policy: a group of
//!   `--consumers` members loses one and gains one mid-run.
//!
//! Every wait above comes from one place, [`waits`], which the scenarios build their
//! consumers and handlers from and the plan's estimate counts; each scenario states there
//! the stages its cells run.
//!
//! Measured in every cell: records lost (neither applied nor dead-lettered) and
//! redelivered (delivered twice), the committed-offset lag at every commit (p50, p99,
//! max) and its timeline, the longest commit freeze, the most metadata bytes in one
//! commit, and whether the projection's final state equals a sequential replay (and
//! whether a projection without the version check would).

pub mod crash;
pub mod expand;
pub mod forever;
mod outside;
pub mod rebalance;
pub mod reorder;
pub mod retry;
pub mod waits;

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strategies::{Design, StrategyConfig};

use super::commit::MetadataLimit;
use super::consumer::{
    run_incarnation, ConsumerConfig, ConsumerError, Hold, Incarnation, Pipeline, Stop, Treat,
    DEFAULT_MAX_POLL_RECORDS,
};
use super::log::{Record, Topic};
use super::retry::RetryConfig;
use super::transport::{
    Backend, BrokerFault, Embedded, KafkaOptions, MemberId, Transport, TransportError,
    TransportKind,
};
use crate::measure::timer::Timer;
use crate::results::{
    CallSamples, CommitPolicy, IncarnationReport, LagSummary, Mitigation, PipelineRun, RetryPolicy,
};
use crate::watch::Watch;
use crate::workload::{ScenarioId, Sizes};

pub use crash::run_crash;
pub use waits::{Executor, Stage, Waits};

/// Bytes of every record's payload (only folded into the projection's digest).
const PAYLOAD_BYTES: u32 = 64;

/// Why a pipeline cell could not run.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The consumer failed.
    #[error("{scenario} {param} {strategy}: {source}")]
    Consumer {
        /// The scenario.
        scenario: ScenarioId,
        /// The cell's parameter.
        param: String,
        /// The strategy.
        strategy: Design,
        /// What went wrong.
        source: ConsumerError,
    },
    /// The log could not be made (no partitions, or an expansion that does not grow).
    #[error("cannot make the pipeline's log: {0}")]
    Log(#[from] super::log::LogError),
    /// The Kafka cluster's admin could not be reached.
    #[error("{scenario}: {source}")]
    Cluster {
        /// The scenario.
        scenario: ScenarioId,
        /// The broker's words.
        source: TransportError,
    },
    /// The transport asked for is not in this build.
    #[error(
        "this keyed-bench was built without the Kafka transport: build it with \
         `cargo build --release --features kafka`"
    )]
    NotBuilt,
}

impl PipelineError {
    /// A consumer driver's failure, in its words: it fails its own cell, and the run goes
    /// on with a fresh driver.
    pub fn external_failure(&self) -> Option<&str> {
        match self {
            Self::Consumer { source: ConsumerError::External(words), .. } => Some(words),
            _ => None,
        }
    }

    /// The broker's failure, in its words, where the broker failed or stopped answering (a
    /// failure that ends the run: the cells after it would meet the same broker).
    pub fn broker_failure(&self) -> Option<&str> {
        match self {
            Self::Consumer {
                source: ConsumerError::Transport(TransportError::Broker(words)),
                ..
            } => Some(words),
            Self::Cluster { source: TransportError::Broker(words), .. } => Some(words),
            _ => None,
        }
    }
}

/// The policies the cells of the pipeline scenarios cross with the strategies, and the
/// transport they consume through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelinePlan {
    /// pipeline-crash's and pipeline-rebalance's cells, one per commit policy.
    pub commit_policies: Vec<CommitPolicy>,
    /// pipeline-retry's cells, one per retry policy.
    pub retry_policies: Vec<RetryPolicy>,
    /// The transport every cell consumes through (`--transport`).
    pub transport: TransportKind,
    /// How long one request to a broker may take (`--kafka-timeout-ms`).
    pub kafka_timeout: std::time::Duration,
    /// The brokers of one cell taken down on purpose (a test of how a run fails).
    pub broker_fault: Option<BrokerFault>,
    /// The Kafka broker and its clients' settings (`--bootstrap-servers`, ...).
    pub kafka: KafkaOptions,
}

/// `--kafka-timeout-ms`'s default.
pub const DEFAULT_KAFKA_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl Default for PipelinePlan {
    fn default() -> Self {
        Self {
            commit_policies: CommitPolicy::ALL.to_vec(),
            retry_policies: RetryPolicy::ALL.to_vec(),
            transport: TransportKind::Embedded,
            kafka_timeout: DEFAULT_KAFKA_TIMEOUT,
            broker_fault: None,
            kafka: KafkaOptions::default(),
        }
    }
}

impl PipelinePlan {
    /// The cells of `scenario` per strategy.
    pub fn params(&self, scenario: ScenarioId) -> usize {
        self.param_names(scenario).len()
    }

    /// The `param` of each cell of `scenario` per strategy, in the order they run.
    pub fn param_names(&self, scenario: ScenarioId) -> Vec<String> {
        self.cells(scenario, &Sizes::quick()).into_iter().map(|(param, _)| param).collect()
    }

    /// Each cell of `scenario` per strategy, in the order they run: its `param` and the
    /// stages it runs at `sizes` (stated by each scenario next to its code, for the
    /// estimate of [`Waits::cell_s`]).
    pub fn cells(&self, scenario: ScenarioId, sizes: &Sizes) -> Vec<(String, Vec<Stage>)> {
        match scenario {
            ScenarioId::PipelineCrash => {
                let stages = crash::stages(sizes);
                self.commit_policies.iter().map(|&p| (policy_param(p), stages.clone())).collect()
            }
            ScenarioId::PipelineRebalance => {
                let stages = rebalance::stages(sizes);
                self.commit_policies.iter().map(|&p| (policy_param(p), stages.clone())).collect()
            }
            ScenarioId::PipelineRetry => self
                .retry_policies
                .iter()
                .map(|&p| (retry_param(p), retry::stages(sizes, p)))
                .collect(),
            ScenarioId::PipelineExpand => Mitigation::ALL
                .into_iter()
                .map(|m| (mitigation_param(m), expand::stages(sizes, m)))
                .collect(),
            ScenarioId::PipelineReorder => vec![(reorder::param(), reorder::stages(sizes))],
            _ => Vec::new(),
        }
    }
}

/// The `param` of a cell per commit policy (`pipeline-crash`, `pipeline-rebalance`).
pub fn policy_param(policy: CommitPolicy) -> String {
    format!("policy={policy}")
}

/// What a cell of `scenario` at `param` records of the sizes it ran with, as
/// `pipelines[]` holds it: what a cell that records otherwise did not run with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recorded {
    /// Its log's partitions at the end (`--expand-to` for an expanded log).
    pub partitions: u32,
    /// Its consumers' commit policy: its param's, or `contiguous` where it has none.
    pub policy: CommitPolicy,
    /// Completions after which its first consumer dies (pipeline-crash alone).
    pub crash_after: Option<u64>,
}

impl Recorded {
    /// What a cell of `scenario` at `param` records of `sizes`.
    pub fn of(scenario: ScenarioId, param: &str, sizes: &Sizes) -> Self {
        let policy = param
            .strip_prefix("policy=")
            .and_then(|policy| policy.parse().ok())
            .unwrap_or(CommitPolicy::Contiguous);
        let expanded = scenario == ScenarioId::PipelineExpand;
        Self {
            partitions: if expanded { sizes.expand_to } else { sizes.partitions },
            policy,
            crash_after: (scenario == ScenarioId::PipelineCrash)
                .then_some(sizes.crash_after as u64),
        }
    }
}

/// The `param` of a `pipeline-retry` cell.
fn retry_param(policy: RetryPolicy) -> String {
    format!("retry={policy}")
}

/// The `param` of a `pipeline-expand` cell.
fn mitigation_param(mitigation: Mitigation) -> String {
    format!("mitigation={mitigation}")
}

/// What every cell of a run shares.
#[derive(Clone, Debug)]
pub struct Bench<'a> {
    /// The run's sizes.
    pub sizes: &'a Sizes,
    /// The run's seed.
    pub seed: u64,
    /// The harness timer that ends the handlers' waits.
    pub timer: &'a Timer,
    /// The executors' settings.
    pub strategy_config: StrategyConfig,
    /// The watch of the cell that runs: every cell's pipeline counts its settled records in
    /// it and stops once it is cancelled ([`Watch::default`] where nothing supervises the
    /// cells).
    pub watch: Watch,
}

/// Runs the cells of pipeline scenario `scenario` for `plan` x `strategies`, calling
/// `each` after every cell with its result.
pub fn run_scenario(
    scenario: ScenarioId,
    bench: &Bench<'_>,
    plan: &PipelinePlan,
    strategies: &[Design],
    each: impl FnMut(&PipelineRun),
) -> Result<Vec<PipelineRun>, PipelineError> {
    run_scenario_where(scenario, bench, plan, strategies, &mut |_, _| true, each)
}

/// Which cells of a pipeline scenario to run, asked just before each with its `param` and
/// strategy: a cell it refuses is neither run nor reported (a run that stops, or resumes).
pub type Wanted<'a> = dyn FnMut(&str, Design) -> bool + 'a;

/// [`run_scenario`] for the cells `wanted` accepts, over `plan`'s transport.
pub fn run_scenario_where(
    scenario: ScenarioId,
    bench: &Bench<'_>,
    plan: &PipelinePlan,
    strategies: &[Design],
    wanted: &mut Wanted<'_>,
    each: impl FnMut(&PipelineRun),
) -> Result<Vec<PipelineRun>, PipelineError> {
    let metadata_limit = bench.sizes.metadata_limit;
    match plan.transport {
        TransportKind::Embedded => {
            let backend = &Embedded { metadata_limit };
            run_on(scenario, bench, backend, plan, strategies, wanted, each)
        }
        TransportKind::Kafka => run_on_kafka(scenario, bench, plan, strategies, wanted, each),
    }
}

/// [`run_scenario_where`] over a Kafka mock cluster per cell; `pipeline-expand` has no
/// cells there (the mock cannot add partitions to a topic).
#[cfg(feature = "kafka")]
fn run_on_kafka(
    scenario: ScenarioId,
    bench: &Bench<'_>,
    plan: &PipelinePlan,
    strategies: &[Design],
    wanted: &mut Wanted<'_>,
    mut each: impl FnMut(&PipelineRun),
) -> Result<Vec<PipelineRun>, PipelineError> {
    if scenario.grows_partitions() && plan.kafka.is_mock() {
        return Ok(Vec::new());
    }
    let backend = &super::transport::Kafka::new(
        bench.sizes.metadata_limit,
        plan.kafka_timeout,
        plan.broker_fault.clone(),
        plan.kafka.clone(),
    )
    .map_err(|source| PipelineError::Cluster { scenario, source })?;
    let transport = Some(TransportKind::Kafka);
    let each = |run: &PipelineRun| each(&PipelineRun { transport, ..run.clone() });
    let runs = run_on(scenario, bench, backend, plan, strategies, wanted, each)?;
    Ok(runs.into_iter().map(|run| PipelineRun { transport, ..run }).collect())
}

/// Without the `kafka` feature there is no Kafka transport.
#[cfg(not(feature = "kafka"))]
fn run_on_kafka(
    _: ScenarioId,
    _: &Bench<'_>,
    _: &PipelinePlan,
    _: &[Design],
    _: &mut Wanted<'_>,
    _: impl FnMut(&PipelineRun),
) -> Result<Vec<PipelineRun>, PipelineError> {
    Err(PipelineError::NotBuilt)
}

/// The cells of `scenario` on `backend`.
fn run_on<B: Backend>(
    scenario: ScenarioId,
    bench: &Bench<'_>,
    backend: &B,
    plan: &PipelinePlan,
    strategies: &[Design],
    wanted: &mut Wanted<'_>,
    each: impl FnMut(&PipelineRun),
) -> Result<Vec<PipelineRun>, PipelineError> {
    let policies = (&plan.commit_policies, &plan.retry_policies);
    match scenario {
        ScenarioId::PipelineCrash => {
            crash::run(bench, backend, policies.0, strategies, wanted, each)
        }
        ScenarioId::PipelineRetry => {
            retry::run(bench, backend, policies.1, strategies, wanted, each)
        }
        ScenarioId::PipelineExpand => expand::run(bench, backend, strategies, wanted, each),
        ScenarioId::PipelineReorder => reorder::run(bench, backend, strategies, wanted, each),
        ScenarioId::PipelineRebalance => {
            rebalance::run(bench, backend, policies.0, strategies, wanted, each)
        }
        _ => Ok(Vec::new()),
    }
}

/// The events of a scenario's log in the order they happen: `(key, version)`, each the
/// next version of a uniformly drawn key, from the scenario's own random stream.
fn events(sizes: &Sizes, seed: u64, scenario: ScenarioId) -> Vec<(u64, u64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ scenario.stream().wrapping_mul(0x9e37_79b9));
    let mut versions: BTreeMap<u64, u64> = BTreeMap::new();
    (0..sizes.pipeline_records)
        .map(|_| {
            let key = rng.gen_range(0..sizes.pipeline_keys as u64);
            let version = versions.entry(key).and_modify(|v| *v += 1).or_insert(1);
            (key, *version)
        })
        .collect()
}

/// Each key's last version among `events`.
fn last_versions(events: &[(u64, u64)]) -> BTreeMap<u64, u64> {
    let mut last = BTreeMap::new();
    for &(key, version) in events {
        let entry = last.entry(key).or_insert(0);
        *entry = version.max(*entry);
    }
    last
}

/// The log of `events`, appended in order by the key's hash, each produced at 0 (a
/// backlog there from the start).
fn backlog(events: &[(u64, u64)], partitions: u32) -> Result<Topic, PipelineError> {
    let mut topic = Topic::new("events", partitions)?;
    for &(key, version) in events {
        topic.append(key, version, PAYLOAD_BYTES, 0);
    }
    Ok(topic)
}

/// How every cell's consumer commits, under `policy`, retrying by `retry`.
fn consumer_config(
    sizes: &Sizes,
    policy: CommitPolicy,
    retry: RetryConfig,
) -> Result<ConsumerConfig, ConsumerError> {
    let metadata_limit = MetadataLimit::new(sizes.metadata_limit)
        .map_err(|source| ConsumerError::Resume { partition: 0, source })?;
    Ok(ConsumerConfig {
        policy,
        commit_interval: Waits::of(sizes).commit_interval,
        metadata_limit,
        max_poll_records: DEFAULT_MAX_POLL_RECORDS,
        spin_ns: sizes.spin_ns.into(),
        retry,
    })
}

/// A well-mixed hash of a record's place in the log.
fn place_hash(record: &Record) -> u64 {
    let place = u64::from(record.partition) << 40 | record.offset;
    place.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20
}

/// The treatment of every scenario without failures ([`Waits::slow_treat`]).
fn slow_treat(sizes: &Sizes) -> Treat {
    Waits::of(sizes).slow_treat()
}

/// A cell's result from what its consumers left in `pipeline`, with no scenario section.
#[allow(clippy::too_many_arguments)]
fn summarize(
    scenario: ScenarioId,
    param: String,
    strategy: Design,
    policy: CommitPolicy,
    sizes: &Sizes,
    pipeline: &Pipeline,
    expected: &BTreeMap<u64, u64>,
    incarnations: Vec<IncarnationReport>,
    elapsed_s: f64,
) -> PipelineRun {
    let (lost, redelivered) = pipeline.tally.lost_and_redelivered();
    let mut lags: Vec<u64> = incarnations
        .iter()
        .flat_map(|report| report.lag_timeline.iter().map(|point| point.lag))
        .collect();
    let (partitions, records) = (pipeline.partitions(), pipeline.records());
    let transport_calls = CallSamples::merged(&incarnations);
    PipelineRun {
        scenario: scenario.as_str().into(),
        param,
        strategy: strategy.as_str().into(),
        policy,
        partitions,
        records,
        keys: sizes.pipeline_keys as u64,
        crash_after: None,
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
        retry: None,
        expansion: None,
        reorder: None,
        rebalance: None,
        settings: None,
        interference: None,
        transport: None,
        transport_calls: Some(transport_calls),
        client_events: pipeline.clients.as_ref().map(|clients| clients.read()),
    }
}

/// A cell's result from its one consumer's run to the end (committing `contiguous`).
fn summarize_single(
    scenario: ScenarioId,
    param: String,
    strategy: Design,
    sizes: &Sizes,
    pipeline: &Pipeline,
    expected: &BTreeMap<u64, u64>,
    report: IncarnationReport,
) -> PipelineRun {
    let elapsed_s = report.elapsed_s;
    let policy = CommitPolicy::Contiguous;
    summarize(scenario, param, strategy, policy, sizes, pipeline, expected, vec![report], elapsed_s)
}

/// Runs `cell` for every parameter x strategy that `wanted` accepts, in that order, calling
/// `each` after every cell; `name` gives a parameter's `param` (`policy=contiguous`, ...).
fn run_cells<P: Copy>(
    scenario: ScenarioId,
    params: &[P],
    strategies: &[Design],
    wanted: &mut Wanted<'_>,
    mut each: impl FnMut(&PipelineRun),
    name: impl Fn(P) -> String,
    mut cell: impl FnMut(P, String, Design) -> Result<PipelineRun, ConsumerError>,
) -> Result<Vec<PipelineRun>, PipelineError> {
    let mut runs = Vec::new();
    for &value in params {
        let param = name(value);
        for &strategy in strategies {
            if !wanted(&param, strategy) {
                continue;
            }
            let run = cell(value, param.clone(), strategy)
                .map_err(cell_error(scenario, &param, strategy))?;
            each(&run);
            runs.push(run);
        }
    }
    Ok(runs)
}

/// A cell's pipeline over `topic`, under the cell's watch, and the transport `backend`
/// opens over the log, paced from the pipeline's epoch.
fn open<B: Backend>(
    bench: &Bench<'_>,
    backend: &B,
    topic: &Topic,
) -> Result<(Pipeline, B::Transport), ConsumerError> {
    let pipeline = Pipeline::new(topic, bench.timer.clone()).watched(bench.watch.clone());
    let transport = backend.open(topic, pipeline.epoch)?;
    let pipeline = pipeline.over(&transport)?;
    Ok((pipeline, transport))
}

/// One consumer, alone in the group and so given every partition, runs `topic` to the end
/// on `strategy`: the pipeline it leaves, and its report.
#[allow(clippy::too_many_arguments)]
fn consume_to_end<B: Backend>(
    bench: &Bench<'_>,
    backend: &B,
    topic: &Topic,
    config: ConsumerConfig,
    treat: Treat,
    strategy: Design,
    hold: Option<Hold>,
) -> Result<(Pipeline, IncarnationReport), ConsumerError> {
    let (pipeline, transport) = open(bench, backend, topic)?;
    let member = transport.join(MemberId(0))?;
    let mut incarnation =
        Incarnation::new(strategy, bench.strategy_config, config, treat, Stop::AtEnd);
    incarnation.hold = hold;
    let report = run_incarnation(&pipeline, &member, incarnation)?;
    Ok((pipeline, report))
}

/// Wraps a consumer's failure with the cell it happened in.
fn cell_error(
    scenario: ScenarioId,
    param: &str,
    strategy: Design,
) -> impl FnOnce(ConsumerError) -> PipelineError + '_ {
    move |source| PipelineError::Consumer { scenario, param: param.to_owned(), strategy, source }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Small sizes every scenario's tests share.
    pub(crate) fn sizes() -> Sizes {
        Sizes {
            pipeline_records: 3_000,
            pipeline_keys: 200,
            partitions: 3,
            crash_after: 1_000,
            commit_interval_ms: 1,
            ..Sizes::quick()
        }
    }

    /// The ordered strategies: every one but the unordered control.
    pub(crate) fn ordered() -> Vec<Design> {
        Design::built_ins().filter(|id| id.descriptor().ordered).collect()
    }

    #[test]
    fn every_pipeline_scenario_has_cells_and_no_other_does() {
        let plan = PipelinePlan::default();
        for &scenario in ScenarioId::ALL {
            assert_eq!(plan.params(scenario) > 0, scenario.is_pipeline(), "{scenario}");
        }
    }

    #[test]
    fn the_events_are_the_same_for_a_seed_and_number_each_key_from_one() {
        let first = events(&sizes(), 7, ScenarioId::PipelineRetry);
        assert_eq!(first, events(&sizes(), 7, ScenarioId::PipelineRetry));
        assert_ne!(first, events(&sizes(), 7, ScenarioId::PipelineExpand), "own streams");
        assert_eq!(first.len(), 3_000);
        let last = last_versions(&first);
        assert_eq!(last.values().sum::<u64>(), 3_000);
    }
}
