//! A pipeline scenario's cells: their parameters ([`Param`], from the spec's [`Cells`]),
//! what one cell runs with ([`CellContext`]) and the loop over a scenario's cells
//! ([`ScenarioRun`]), and what every cell does alike: open the log on the backend, build
//! its consumers, and summarize what they left.

use std::collections::BTreeMap;

use strategies::Design;

use super::produce::Log;
use super::waits::Waits;
use super::{Bench, PipelineError, PipelinePlan, Wanted};
use crate::pipeline::commit::MetadataLimit;
use crate::pipeline::consumer::{
    run_incarnation, ConsumerConfig, ConsumerError, Hold, Incarnation, Pipeline, Stop, Treat,
    DEFAULT_MAX_POLL_RECORDS,
};
use crate::pipeline::retry::RetryConfig;
use crate::pipeline::transport::{Backend, MemberId, Transport};
use crate::results::{
    CallSamples, CommitPolicy, IncarnationReport, LagSummary, Mitigation, PipelineRun, RetryPolicy,
};
use crate::workload::scenario::pipeline::{Cells, PipelineSpec};
use crate::workload::{ScenarioId, Sizes};

/// One cell's parameter: the policy or mitigation it runs with, or the one cell's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Param {
    /// A commit policy ([`Cells::PerCommitPolicy`]).
    Commit(CommitPolicy),
    /// A retry policy ([`Cells::PerRetryPolicy`]).
    Retry(RetryPolicy),
    /// A mitigation of an expansion ([`Cells::PerMitigation`]).
    Mitigation(Mitigation),
    /// The scenario's one cell ([`Cells::One`]).
    One(&'static str),
}

impl Param {
    /// Every cell's parameter of `cells` under `plan`, in the order they run.
    pub(super) fn all(cells: Cells, plan: &PipelinePlan) -> Vec<Self> {
        match cells {
            Cells::PerCommitPolicy => {
                plan.commit_policies.iter().map(|&p| Self::Commit(p)).collect()
            }
            Cells::PerRetryPolicy => plan.retry_policies.iter().map(|&p| Self::Retry(p)).collect(),
            Cells::PerMitigation => Mitigation::ALL.into_iter().map(Self::Mitigation).collect(),
            Cells::One(name) => vec![Self::One(name)],
        }
    }

    /// Its `param` in results (`policy=contiguous`, `retry=retry-topic`, ...).
    pub(super) fn name(self) -> String {
        match self {
            Self::Commit(policy) => super::policy_param(policy),
            Self::Retry(policy) => format!("retry={policy}"),
            Self::Mitigation(mitigation) => format!("mitigation={mitigation}"),
            Self::One(name) => name.to_owned(),
        }
    }

    /// The commit policy the cell's consumers commit by: its own, or `contiguous`.
    pub(super) fn commit_policy(self) -> CommitPolicy {
        match self {
            Self::Commit(policy) => policy,
            Self::Retry(_) | Self::Mitigation(_) | Self::One(_) => CommitPolicy::Contiguous,
        }
    }

    /// The retry policy the cell's consumers retry by: its own, or `retry-in-place`.
    pub(super) fn retry_policy(self) -> RetryPolicy {
        match self {
            Self::Retry(policy) => policy,
            Self::Commit(_) | Self::Mitigation(_) | Self::One(_) => RetryPolicy::RetryInPlace,
        }
    }

    /// The cell's mitigation of an expansion: its own, or none.
    pub(super) fn mitigation(self) -> Mitigation {
        match self {
            Self::Mitigation(mitigation) => mitigation,
            Self::Commit(_) | Self::Retry(_) | Self::One(_) => Mitigation::None,
        }
    }
}

/// What one cell runs with: what it shares with every cell of its scenario (the run's
/// bench, the backend, the log), and its own parameter and strategy.
pub(super) struct CellContext<'a, B: Backend> {
    /// What every cell of the run shares.
    pub(super) bench: &'a Bench<'a>,
    /// The transport's backend the log is opened on.
    pub(super) backend: &'a B,
    /// The scenario.
    pub(super) scenario: ScenarioId,
    /// The scenario's log, as produced.
    pub(super) log: &'a Log,
    /// The cell's parameter.
    pub(super) param: Param,
    /// The strategy its consumers run the records on.
    pub(super) strategy: Design,
}

impl<B: Backend> CellContext<'_, B> {
    /// The run's sizes.
    pub(super) fn sizes(&self) -> &Sizes {
        self.bench.sizes
    }

    /// The cell's pipeline over the log, under the cell's watch, and the transport the
    /// backend opens over it, paced from the pipeline's epoch.
    pub(super) fn open(&self) -> Result<(Pipeline, B::Transport), ConsumerError> {
        let bench = self.bench;
        let pipeline =
            Pipeline::new(&self.log.topic, bench.timer.clone()).watched(bench.watch.clone());
        let transport = self.backend.open(&self.log.topic, pipeline.epoch)?;
        let pipeline = pipeline.over(&transport)?;
        Ok((pipeline, transport))
    }

    /// How the cell's consumers commit (by the param's commit policy) and retry by `retry`.
    pub(super) fn consumer_config(
        &self,
        retry: RetryConfig,
    ) -> Result<ConsumerConfig, ConsumerError> {
        consumer_config(self.sizes(), self.param.commit_policy(), retry)
    }

    /// The treatment of every scenario without failures ([`Waits::slow_treat`]).
    pub(super) fn slow_treat(&self) -> Treat {
        Waits::of(self.sizes()).slow_treat()
    }

    /// One consumer, alone in the group and so given every partition, runs the log to the
    /// end by `config` and `treat`, holding what `hold` says: the pipeline it leaves, and
    /// its report.
    pub(super) fn consume_to_end(
        &self,
        config: ConsumerConfig,
        treat: Treat,
        hold: Option<Hold>,
    ) -> Result<(Pipeline, IncarnationReport), ConsumerError> {
        let (pipeline, transport) = self.open()?;
        let member = transport.join(MemberId(0))?;
        let strategy_config = self.bench.strategy_config;
        let mut incarnation =
            Incarnation::new(self.strategy, strategy_config, config, treat, Stop::AtEnd);
        incarnation.hold = hold;
        let report = run_incarnation(&pipeline, &member, incarnation)?;
        Ok((pipeline, report))
    }

    /// The cell's result from what its consumers left in `pipeline`, judged against
    /// `expected` (each key's last version), with no scenario section.
    pub(super) fn summarize(
        &self,
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
            scenario: self.scenario.as_str().into(),
            param: self.param.name(),
            strategy: self.strategy.as_str().into(),
            policy: self.param.commit_policy(),
            partitions,
            records,
            keys: self.sizes().pipeline_keys as u64,
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

    /// The cell's result from its one consumer's run to the end.
    pub(super) fn summarize_single(
        &self,
        pipeline: &Pipeline,
        expected: &BTreeMap<u64, u64>,
        report: IncarnationReport,
    ) -> PipelineRun {
        let elapsed_s = report.elapsed_s;
        self.summarize(pipeline, expected, vec![report], elapsed_s)
    }
}

/// How a cell's consumers commit, under `policy`, retrying by `retry`.
pub(super) fn consumer_config(
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

/// One scenario's cells in a run: its log on a backend, each of its parameters crossed with
/// the strategies.
pub(super) struct ScenarioRun<'a, B: Backend> {
    /// What every cell of the run shares.
    pub(super) bench: &'a Bench<'a>,
    /// The transport's backend.
    pub(super) backend: &'a B,
    /// The scenario.
    pub(super) scenario: ScenarioId,
    /// Its log, as produced.
    pub(super) log: Log,
    /// Its cells' parameters, in the order they run.
    pub(super) params: Vec<Param>,
    /// The strategies each parameter is crossed with.
    pub(super) strategies: &'a [Design],
}

impl<'a, B: Backend> ScenarioRun<'a, B> {
    /// The cells of `scenario` (whose spec is `spec`) for `plan` x `strategies` on
    /// `backend`, their log produced as the spec says.
    pub(super) fn new(
        (scenario, spec): (ScenarioId, &PipelineSpec),
        bench: &'a Bench<'a>,
        backend: &'a B,
        plan: &PipelinePlan,
        strategies: &'a [Design],
    ) -> Result<Self, PipelineError> {
        Ok(Self {
            bench,
            backend,
            scenario,
            log: Log::of(scenario, spec.produce, bench.sizes, bench.seed)?,
            params: Param::all(spec.cells, plan),
            strategies,
        })
    }

    /// Runs `cell` for every parameter x strategy that `wanted` accepts, in that order,
    /// calling `each` after every cell.
    pub(super) fn cells(
        &self,
        wanted: &mut Wanted<'_>,
        each: &mut dyn FnMut(&PipelineRun),
        cell: impl Fn(&CellContext<'_, B>) -> Result<PipelineRun, ConsumerError>,
    ) -> Result<Vec<PipelineRun>, PipelineError> {
        let mut runs = Vec::new();
        let strategies = self.strategies;
        let cells =
            self.params.iter().flat_map(|&param| strategies.iter().map(move |&s| (param, s)));
        for (param, strategy) in cells {
            let name = param.name();
            if !wanted(&name, strategy) {
                continue;
            }
            let run =
                cell(&self.context(param, strategy)).map_err(self.cell_error(&name, strategy))?;
            each(&run);
            runs.push(run);
        }
        Ok(runs)
    }

    /// What the cell of `param` x `strategy` runs with.
    fn context(&self, param: Param, strategy: Design) -> CellContext<'_, B> {
        CellContext {
            bench: self.bench,
            backend: self.backend,
            scenario: self.scenario,
            log: &self.log,
            param,
            strategy,
        }
    }

    /// Wraps a consumer's failure with the cell it happened in.
    fn cell_error<'n>(
        &self,
        param: &'n str,
        strategy: Design,
    ) -> impl FnOnce(ConsumerError) -> PipelineError + 'n {
        let scenario = self.scenario;
        move |source| PipelineError::Consumer {
            scenario,
            param: param.to_owned(),
            strategy,
            source,
        }
    }
}
