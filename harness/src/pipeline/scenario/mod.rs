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
//! # One declaration per scenario
//!
//! A scenario says what it is once, in its spec (`workload::scenario::pipeline`): its
//! `PipelineSpec` names its cells (`Cells`: one per commit policy, retry policy or
//! mitigation, or one), how its log is produced (`Produce`) and which pipeline it is
//! (`PipelineKind`), as data, since `workload` comes before this module and names none of
//! its code. Here that data becomes cells: `produce` makes the log once per run as the spec
//! says, `cell` gives each parameter x strategy a `CellContext` (the run's bench, the
//! backend, the log, the cell's parameter and strategy) and does what every cell does alike
//! (open the log, build the consumers, summarize), and each pipeline's module runs one cell
//! (`crash::cell`, `retry::run`, ...). The two `match`es on `PipelineKind` in this file,
//! [`PipelinePlan::cells`]'s stages and the runner of a scenario's cells, are the one table
//! from a pipeline to its code: they have no default arm, so a new pipeline does not build
//! until it has its code. The summary's table follows the same spec (`report::pipeline`).
//!
//! Measured in every cell: records lost (neither applied nor dead-lettered) and
//! redelivered (delivered twice), the committed-offset lag at every commit (p50, p99,
//! max) and its timeline, the longest commit freeze, the most metadata bytes in one
//! commit, and whether the projection's final state equals a sequential replay (and
//! whether a projection without the version check would).

mod cell;
pub mod crash;
pub mod expand;
pub mod forever;
mod outside;
mod produce;
pub mod rebalance;
pub mod reorder;
pub mod retry;
pub mod waits;

use strategies::{Design, StrategyConfig};

use super::consumer::ConsumerError;
use super::transport::{
    Backend, BrokerFault, Embedded, KafkaOptions, TransportError, TransportKind,
};
use crate::measure::timer::Timer;
use crate::results::{CommitPolicy, PipelineRun, RetryPolicy};
use crate::watch::Watch;
use crate::workload::scenario::pipeline::{PipelineKind, Produce};
use crate::workload::{ScenarioId, Sizes};
use cell::{Param, ScenarioRun};

pub use crash::run_crash;
pub use waits::{Executor, Stage, Waits};

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
        let params = scenario.pipeline().map(|spec| Param::all(spec.cells, self));
        params.unwrap_or_default().into_iter().map(Param::name).collect()
    }

    /// Each cell of `scenario` per strategy, in the order they run: its `param` and the
    /// stages it runs at `sizes` (stated by each scenario next to its code, for the
    /// estimate of [`Waits::cell_s`]); none for a scenario that is not a pipeline.
    pub fn cells(&self, scenario: ScenarioId, sizes: &Sizes) -> Vec<(String, Vec<Stage>)> {
        let Some(spec) = scenario.pipeline() else { return Vec::new() };
        Param::all(spec.cells, self)
            .into_iter()
            .map(|param| (param.name(), stages(spec.kind, sizes, param)))
            .collect()
    }
}

/// The stages a cell of a `kind` pipeline at `param` runs at `sizes`.
fn stages(kind: PipelineKind, sizes: &Sizes, param: Param) -> Vec<Stage> {
    match kind {
        PipelineKind::Crash => crash::stages(sizes),
        PipelineKind::Retry => retry::stages(sizes, param.retry_policy()),
        PipelineKind::Expand => expand::stages(sizes, param.mitigation()),
        PipelineKind::Reorder => reorder::stages(sizes),
        PipelineKind::Rebalance => rebalance::stages(sizes),
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
        let spec = scenario.pipeline();
        let expanded = spec.is_some_and(|spec| spec.produce == Produce::Expanding);
        let crashes = spec.is_some_and(|spec| spec.kind == PipelineKind::Crash);
        Self {
            partitions: if expanded { sizes.expand_to } else { sizes.partitions },
            policy,
            crash_after: crashes.then_some(sizes.crash_after as u64),
        }
    }
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

/// The cells of `scenario` on `backend`: none for a scenario that is not a pipeline.
fn run_on<B: Backend>(
    scenario: ScenarioId,
    bench: &Bench<'_>,
    backend: &B,
    plan: &PipelinePlan,
    strategies: &[Design],
    wanted: &mut Wanted<'_>,
    mut each: impl FnMut(&PipelineRun),
) -> Result<Vec<PipelineRun>, PipelineError> {
    let Some(spec) = scenario.pipeline() else { return Ok(Vec::new()) };
    let run = ScenarioRun::new((scenario, spec), bench, backend, plan, strategies)?;
    let each = &mut each;
    match spec.kind {
        PipelineKind::Crash => run.cells(wanted, each, crash::cell),
        PipelineKind::Retry => retry::run(&run, wanted, each),
        PipelineKind::Expand => run.cells(wanted, each, expand::cell),
        PipelineKind::Reorder => run.cells(wanted, each, reorder::cell),
        PipelineKind::Rebalance => run.cells(wanted, each, rebalance::cell),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::produce::{events, last_versions};
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

    /// Every cell of `scenario` under `plan` x `strategies` on the embedded log.
    pub(crate) fn run_embedded(
        scenario: ScenarioId,
        bench: &Bench<'_>,
        plan: &PipelinePlan,
        strategies: &[Design],
    ) -> Vec<PipelineRun> {
        let backend = Embedded::default();
        run_on(scenario, bench, &backend, plan, strategies, &mut |_, _| true, |_| {}).unwrap()
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
