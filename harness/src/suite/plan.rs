//! Step 1, the plan: every cell of a run, in the order it runs, from the settings alone.
//!
//! The plan walks scenario -> sweep point -> workload (or pipeline param) -> strategy once.
//! Each [`Cell`] carries its [`CellKey`], the point and workload it runs, its settings,
//! why it is skipped (if it is) and its expected cost. Nothing here generates a message:
//! a measured cell names a [`WorkloadSpec`], and its cost comes from the work the sizes
//! say it asks for ([`WorkloadSpec::expected_work`]), so counting cells, `--dry-run` and
//! the progress estimate cost microseconds whatever the sizes.

use strategies::{Design, Family};

use crate::config::RunConfig;
use crate::measure::metrics::{ideal_seconds_of, Capacity};
use crate::measure::recorder;
use crate::measure::runner::breakdown_messages;
use crate::measure::system;
use crate::pipeline::scenario::{Executor, Waits};
use crate::pipeline::TransportKind;
use crate::results::CellKey;
use crate::results::CellSettings;
use crate::workload::{Arrivals, ScenarioId, WorkloadSpec};

/// Seconds every cell that runs costs beyond its base time (below), calibrated on the
/// reference run `results/2026-12-01-vm-5` (the default suite, 2 cores, 2 workers):
/// `meta.suite_elapsed_s` = 270.3 s for 378 cells, 347 of them run (251 measured, 96
/// pipeline). Its measured cells' base times (ideal bound x 3 repetitions, plus the breakdown
/// repetition's share of the workload) sum to 194.5 s, its pipeline cells' (20,000 records
/// each: their stages' work and waits, `pipeline::scenario::waits`, at
/// [`PIPELINE_RECORD_S`] per record) to 14.4 s; (270.3 - 208.9) / 347 = 0.18 s. It covers
/// what the bound leaves out: each strategy's distance from the ideal, the warm-up, threads
/// started and joined, workload and log generation, and the suite's own calibrations.
pub const CELL_OVERHEAD_S: f64 = 0.18;

/// Seconds a pipeline cell spends per record it runs, beyond the waits its stages state
/// (`pipeline::scenario::waits`): the reference run's unpaced pipeline cells
/// (pipeline-crash, -expand, -reorder, -rebalance: 72 cells of 20,000 records) took 8.33 s
/// in all, of which their stages' slow waits and commit intervals (20 ms and 2 ms) make
/// 1.7 s; 4.5 us per record makes up the rest.
pub const PIPELINE_RECORD_S: f64 = 4.5e-6;

/// `inline`'s saturation rate per counted worker in the reference run (763,526 msg/s with
/// one worker counted on 2 cores): the open-loop rates a plan assumes before saturation is
/// measured (`--dry-run`).
pub const REFERENCE_SATURATION_PER_WORKER: f64 = 763_526.0;

/// One cell of a run: what it runs, with what, and what it is expected to cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    /// Its identity: scenario, param, sweep point, strategy.
    pub key: CellKey,
    /// The scenario (the key's, known to this build).
    pub scenario: ScenarioId,
    /// The strategy.
    pub strategy: Design,
    /// The sweep point it runs at: an index into [`Plan::points`].
    pub point: usize,
    /// The workload it measures, an index into [`Plan::workloads`]; none for a pipeline
    /// cell (the pipeline produces its own log).
    pub workload: Option<usize>,
    /// The settings it runs with, as `settings` records them.
    pub settings: CellSettings,
    /// Why it is not run, if it is not.
    pub skipped: Option<&'static str>,
    /// Timed repetitions (a pipeline cell runs once).
    pub repetitions: usize,
    /// Whether an untimed breakdown repetition follows.
    pub breakdown: bool,
    /// A lower bound on its time: the workload's ideal bound x the repetitions, plus the
    /// breakdown repetition's share; for a paced pipeline cell records / --pipeline-rate;
    /// 0 for a skipped or an unpaced pipeline cell.
    pub bound_s: f64,
    /// Its expected time: the base plus [`CELL_OVERHEAD_S`]; 0 for a skipped cell. The base
    /// of a measured cell is its bound; of a pipeline cell, its stages' work and waits
    /// ([`Waits::cell_s`]: records at [`PIPELINE_RECORD_S`] or the paced span, slow
    /// records, backoffs, holds and commit intervals).
    pub estimate_s: f64,
}

/// One point of a scenario's sweep: the run's settings there and the label its cells
/// carry after their param.
#[derive(Clone, Debug)]
pub struct ScenarioPoint {
    /// The scenario.
    pub scenario: ScenarioId,
    /// The run at this point ([`RunConfig::at`]).
    pub config: RunConfig,
    /// The point's label (`workers=4`), empty outside a sweep.
    pub label: String,
}

/// Every cell of a run, in order, with the points and workloads they name.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The cells, in the order the run runs them.
    pub cells: Vec<Cell>,
    /// The sweep points of every scenario, in order.
    pub points: Vec<ScenarioPoint>,
    /// The workloads of the measured cells, in order; each one's window is the one it
    /// runs with (a given `--window` replaces a scenario's own).
    pub workloads: Vec<WorkloadSpec>,
}

/// Bytes a pipeline cell holds per record of its log, at most: the log's copy and the
/// consumer's copy of each record, its tallies (deliveries, applications, dead letters, the
/// first application) and the projection's expected versions; four records' size covers
/// them.
pub const PIPELINE_BYTES_PER_RECORD: u64 =
    4 * std::mem::size_of::<crate::pipeline::Record>() as u64;

/// Bytes a pipeline cell holds per key of its log, at most: the projection's state of the
/// key ([`crate::pipeline::projection::BYTES_PER_KEY`]), and the two ordered maps of its
/// versions the scenario builds with the log (the producer's next version, and each key's
/// last for the final check), a B-tree entry of 16 bytes taking up to three times that.
pub const PIPELINE_BYTES_PER_KEY: u64 = crate::pipeline::projection::BYTES_PER_KEY + 2 * 3 * 16;

/// Bytes a measured workload of `messages` messages over `keys` keys, each holding
/// `state_per_key` bytes of state ([`WorkloadSpec::state_bytes_per_key`]), takes while one
/// of its cells runs: the messages, the recorder's slot per message and its state per key,
/// the workload's per-key flags, and the keys' state.
pub fn measured_bytes(messages: usize, keys: usize, state_per_key: usize) -> u64 {
    let per_message = std::mem::size_of::<strategies::Message>() + recorder::BYTES_PER_MESSAGE;
    let per_key = recorder::BYTES_PER_KEY + std::mem::size_of::<bool>() + state_per_key;
    (messages as u64)
        .saturating_mul(per_message as u64)
        .saturating_add((keys as u64).saturating_mul(per_key as u64))
}

/// Bytes a pipeline cell of `records` records over `keys` keys holds while it runs (see
/// [`PIPELINE_BYTES_PER_RECORD`] and [`PIPELINE_BYTES_PER_KEY`]): state is held for the
/// keys its records name, at most one per record.
pub fn pipeline_bytes(records: usize, keys: usize) -> u64 {
    let keys_named = keys.min(records) as u64;
    (records as u64)
        .saturating_mul(PIPELINE_BYTES_PER_RECORD)
        .saturating_add(keys_named.saturating_mul(PIPELINE_BYTES_PER_KEY))
}

impl Plan {
    /// The cell that needs the most memory while it runs, and about how many bytes (what
    /// its workload and its keys' state hold, or its pipeline's log and projection; the
    /// process's own few MiB aside). Skipped cells need none. `None` for a plan that runs
    /// no cell.
    pub fn largest_memory(&self) -> Option<(&Cell, u64)> {
        let bytes = |cell: &Cell| {
            let sizes = &self.points[cell.point].config.sizes;
            match cell.workload {
                Some(workload) => {
                    let spec = &self.workloads[workload];
                    let state = spec.state_bytes_per_key(sizes);
                    measured_bytes(spec.messages(sizes), spec.keys, state)
                }
                None => pipeline_bytes(sizes.pipeline_records, sizes.pipeline_keys),
            }
        };
        self.cells
            .iter()
            .filter(|cell| cell.skipped.is_none())
            .map(|cell| (cell, bytes(cell)))
            .max_by_key(|(_, bytes)| *bytes)
    }

    /// The number of cells.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether it has no cell.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }
}

/// Why a strategy does not run a scenario, if it does not: a strategy that runs handlers on
/// the submitting thread would run every wait one after another, and a blocking handler
/// would block the producer itself.
pub fn skip_reason(scenario: ScenarioId, strategy: Design) -> Option<&'static str> {
    if strategy.is_external() {
        return crate::measure::external::skip_reason(scenario, strategy);
    }
    if !strategy.descriptor().runs_on_caller() {
        return None;
    }
    if scenario.handlers_wait() {
        return Some(
            "inline runs every wait on the submitting thread, one after another: \
             not a contender where handlers wait",
        );
    }
    scenario.handlers_block().then_some(
        "inline would block the producer in every handler: not a contender where handlers \
         block their thread",
    )
}

/// Why every cell of `scenario` is skipped over `transport` (on the mock cluster when
/// `mock`), if it is.
pub fn transport_skip_reason(
    scenario: ScenarioId,
    transport: TransportKind,
    mock: bool,
) -> Option<&'static str> {
    (transport == TransportKind::Kafka && mock && scenario.grows_partitions()).then_some(
        "the Kafka mock cluster cannot add partitions to a topic (it has no \
         CreatePartitions): a scenario that grows the log's partitions needs a cluster \
         (--bootstrap-servers)",
    )
}

/// Why consumer driver `strategy` has no cell of a pipeline scenario at `param` under
/// `config`, if it is one and has none: it reads a Kafka cluster, and it commits by its own
/// code, whose policy (its hello's `consumes`) is the one row its cell sits in.
fn consumer_skip_reason(param: &str, strategy: Design, config: &RunConfig) -> Option<&'static str> {
    let policy = crate::measure::external::consumer_policy(strategy)?;
    if config.transport != TransportKind::Kafka || config.kafka.is_mock() {
        return Some(
            "a consumer driver reads a topic on a Kafka cluster: --transport kafka \
             --bootstrap-servers",
        );
    }
    if config.kafka.group_protocol != crate::pipeline::GroupProtocol::Classic {
        return Some(
            "a consumer driver joins its group with the classic protocol, and the suite's \
             consumers beside it must too: --group-protocol classic",
        );
    }
    (param != crate::pipeline::policy_param(policy)).then_some(
        "a consumer driver commits by its own code, by the one policy its hello names: its \
         cell is in that policy's row",
    )
}

/// Every cell `config` runs, in the order the suite runs them, with their costs.
/// `saturation_per_s` sets the open-loop rates of the estimate; without it they assume the
/// reference run's saturation per worker ([`REFERENCE_SATURATION_PER_WORKER`]).
pub fn plan(config: &RunConfig, saturation_per_s: Option<f64>) -> Plan {
    let saturation = saturation_per_s
        .unwrap_or_else(|| REFERENCE_SATURATION_PER_WORKER * saturation_workers(config) as f64);
    let mut plan = Plan { cells: Vec::new(), points: Vec::new(), workloads: Vec::new() };
    for &scenario in &config.scenarios {
        let uses = scenario.uses(&config.sizes, config.sweep.window_given);
        for point in config.sweep.points(uses) {
            plan.points.push(ScenarioPoint {
                scenario,
                config: config.at(&point),
                label: config.sweep.label(&point, uses),
            });
            if scenario.is_pipeline() {
                plan_pipeline_point(&mut plan);
            } else {
                plan_measured_point(&mut plan, saturation);
            }
        }
    }
    plan
}

/// The settings a cell runs with at `at`, of `workload` where it is a measured one.
fn cell_settings(at: &ScenarioPoint, workload: Option<&WorkloadSpec>) -> CellSettings {
    let strategy = &at.config.strategy;
    CellSettings {
        workers: workload.and_then(|w| w.workers).unwrap_or(strategy.workers),
        throughput: strategy.throughput,
        window: workload.and_then(|w| w.window).unwrap_or(strategy.max_in_flight),
        idle_spin_us: strategy.idle_spin_us,
        sweep: at.label.clone(),
    }
}

/// The cells of the last point of `plan` for a measured scenario.
fn plan_measured_point(plan: &mut Plan, saturation: f64) {
    let point = plan.points.len() - 1;
    let at = &plan.points[point];
    let (scenario, config) = (at.scenario, &at.config);
    for mut spec in WorkloadSpec::all(scenario, &config.sizes) {
        if config.sweep.window_given {
            spec.window = None;
        }
        let messages = spec.messages(&config.sizes).max(1);
        // A completion-driven cell counts one more whole repetition; the others a prefix.
        let share = match (config.breakdown, spec.arrivals) {
            (false, _) => 0.0,
            (true, Arrivals::Driven) => 1.0,
            (true, _) => breakdown_messages(messages) as f64 / messages as f64,
        };
        let breakdown = config.breakdown;
        let settings = cell_settings(at, Some(&spec));
        let work = spec.expected_work(&config.sizes, saturation);
        let workload = plan.workloads.len();
        for &strategy in &config.strategies {
            let skipped = skip_reason(scenario, strategy);
            let (bound_s, estimate_s) = if skipped.is_some() {
                (0.0, 0.0)
            } else {
                let scope =
                    config.strategy.window_scope.unwrap_or(strategy.descriptor().window_scope);
                let capacity = Capacity::new(settings.workers, settings.window, scope);
                let bound_s = ideal_seconds_of(&work, capacity) * (config.repeat as f64 + share);
                (bound_s, bound_s + CELL_OVERHEAD_S)
            };
            plan.cells.push(Cell {
                key: CellKey::new(scenario, &spec.param, &at.label, strategy.as_str()),
                scenario,
                strategy,
                point,
                workload: Some(workload),
                settings: settings.clone(),
                skipped,
                repetitions: if skipped.is_some() { 0 } else { config.repeat },
                breakdown: skipped.is_none() && breakdown,
                bound_s,
                estimate_s,
            });
        }
        plan.workloads.push(spec);
    }
}

/// The cells of the last point of `plan` for a pipeline scenario: those of the strategies
/// it skips first (every param of each), then each param's contenders, as the pipeline
/// runs them.
fn plan_pipeline_point(plan: &mut Plan) {
    let point = plan.points.len() - 1;
    let at = &plan.points[point];
    let (scenario, config) = (at.scenario, &at.config);
    let records = config.sizes.pipeline_records;
    let paced = scenario.pipeline().is_some_and(|spec| spec.paced());
    let paced_s = paced.then(|| records as f64 / config.sizes.pipeline_rate as f64);
    let cells = pipeline_plan(config).cells(scenario, &config.sizes);
    let waits = Waits::of(&config.sizes);
    let settings = cell_settings(at, None);
    let transport_skip = transport_skip_reason(scenario, config.transport, config.kafka.is_mock());
    let skip_reason = |scenario, strategy| skip_reason(scenario, strategy).or(transport_skip);
    let (skipped, contenders): (Vec<Design>, Vec<Design>) =
        config.strategies.iter().partition(|&&strategy| skip_reason(scenario, strategy).is_some());
    let order =
        skipped.iter().flat_map(|&strategy| cells.iter().map(move |cell| (cell, strategy))).chain(
            cells.iter().flat_map(|cell| contenders.iter().map(move |&strategy| (cell, strategy))),
        );
    for ((param, stages), strategy) in order {
        let skipped = skip_reason(scenario, strategy)
            .or_else(|| consumer_skip_reason(param, strategy, config));
        let runs = skipped.is_none();
        let base_s = waits.cell_s(stages, pipeline_executor(config, strategy), PIPELINE_RECORD_S);
        plan.cells.push(Cell {
            key: CellKey::new(scenario, param, &at.label, strategy.as_str()),
            scenario,
            strategy,
            point,
            workload: None,
            settings: settings.clone(),
            skipped,
            repetitions: usize::from(runs),
            breakdown: false,
            bound_s: if runs { paced_s.unwrap_or(0.0) } else { 0.0 },
            estimate_s: if runs { base_s + CELL_OVERHEAD_S } else { 0.0 },
        });
    }
}

/// What a pipeline cell's estimate knows of `strategy` ([`Executor`]): its window, and the
/// records that can wait at once apart, one per key, or one per group of a hash-serial
/// design.
fn pipeline_executor(config: &RunConfig, strategy: Design) -> Executor {
    let keys = config.sizes.pipeline_keys;
    let lanes = if strategy.descriptor().family == Family::HashGroups {
        let groups = config.strategy.workers.saturating_mul(config.strategy.groups_per_worker);
        keys.min(groups)
    } else {
        keys
    };
    Executor { window: config.strategy.max_in_flight, lanes }
}

/// The policies the pipeline scenarios' cells run.
pub(crate) fn pipeline_plan(config: &RunConfig) -> crate::pipeline::PipelinePlan {
    crate::pipeline::PipelinePlan {
        commit_policies: config.commit_policies.clone(),
        retry_policies: config.retry_policies.clone(),
        transport: config.transport,
        kafka_timeout: config.kafka_timeout,
        broker_fault: config.broker_fault.clone(),
        kafka: config.kafka.clone(),
    }
}

/// Workers that count towards saturation: `min(workers, cores - 1)`, at least one.
pub(crate) fn saturation_workers(config: &RunConfig) -> usize {
    config.strategy.workers.min(system::cores().saturating_sub(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::metrics::ideal_seconds;
    use strategies::StrategyId;

    fn quick() -> RunConfig {
        let args = crate::cli::run::RunArgs { quick: true, ..Default::default() };
        RunConfig::try_from((args, "test".to_owned())).unwrap()
    }

    #[test]
    fn the_plan_holds_every_cell_the_run_reports() {
        let config = quick();
        let plan = plan(&config, Some(1e6));
        let expected: usize = config
            .scenarios
            .iter()
            .map(|&scenario| {
                let params = if scenario.is_pipeline() {
                    pipeline_plan(&config).params(scenario)
                } else {
                    scenario.params(&config.sizes)
                };
                params * config.strategies.len()
            })
            .sum();
        assert_eq!(plan.len(), expected);
        for cell in &plan.cells {
            let name = cell.key.to_string();
            assert_eq!(cell.skipped, skip_reason(cell.scenario, cell.strategy), "{name}");
            assert!(name.starts_with(cell.scenario.as_str()), "{name}");
            assert!(name.ends_with(cell.strategy.as_str()), "{name}");
            assert_eq!(cell.workload.is_none(), cell.scenario.is_pipeline(), "{name}");
            if cell.skipped.is_none() {
                assert!(cell.estimate_s > cell.bound_s && cell.bound_s >= 0.0, "{name}");
            }
        }
        // A cell with waits costs more than one of 1 us spins: the weights differ.
        let cost = |scenario| plan.cells.iter().find(|cell| cell.scenario == scenario).unwrap();
        assert!(cost(ScenarioId::ConflictBackoff).bound_s > cost(ScenarioId::Uniform).bound_s);
    }

    #[test]
    fn inline_is_skipped_only_where_handlers_wait_or_block() {
        assert!(skip_reason(ScenarioId::AsyncIo, StrategyId::Inline.into()).is_some());
        assert!(skip_reason(ScenarioId::Uniform, StrategyId::Inline.into()).is_none());
        assert!(skip_reason(ScenarioId::AsyncIo, StrategyId::KeyedMailbox.into()).is_none());
        assert!(skip_reason(ScenarioId::ParallelConsumer, StrategyId::Inline.into()).is_some());
        assert!(skip_reason(ScenarioId::ParallelConsumer, StrategyId::GroupBy.into()).is_none());
    }

    /// The expected bound of each default workload against the bound of its generated
    /// messages: within 10% in all, and for every workload but those whose busiest key is
    /// left to chance (the bound is then set by that one key's draws).
    #[test]
    fn the_expected_bound_is_that_of_the_generated_messages() {
        let args = crate::cli::run::RunArgs::defaults();
        let config = RunConfig::try_from((args, "test".to_owned())).unwrap();
        let plan = plan(&config, Some(1e6));
        let (mut expected_s, mut exact_s) = (0.0, 0.0);
        let mut moved = Vec::new();
        for (index, spec) in plan.workloads.iter().enumerate() {
            let cell = plan.cells.iter().find(|c| c.workload == Some(index)).unwrap();
            let capacity = Capacity::new(
                cell.settings.workers,
                cell.settings.window,
                cell.strategy.descriptor().window_scope,
            );
            let sizes = &plan.points[cell.point].config.sizes;
            let expected = ideal_seconds_of(&spec.expected_work(sizes, 1e6), capacity);
            let workload = spec.generate(sizes, config.seed, 1e6);
            assert_eq!(workload.messages.len(), spec.messages(sizes), "{}", cell.key);
            let exact = ideal_seconds(&workload, capacity);
            expected_s += expected;
            exact_s += exact;
            if (expected / exact - 1.0).abs() > 0.10 {
                moved.push(format!(
                    "{} {}: {expected:.4} s, exactly {exact:.4} s",
                    spec.scenario, spec.param
                ));
            }
        }
        assert!((expected_s / exact_s - 1.0).abs() < 0.10, "{expected_s} against {exact_s}");
        assert!(moved.len() <= 2, "{moved:#?}");
    }

    /// The largest cell of `args` and its estimated bytes.
    fn largest(args: &[&str]) -> (String, u64) {
        #[derive(clap::Parser)]
        struct Run {
            #[command(flatten)]
            run: crate::cli::RunArgs,
        }
        let argv = ["keyed-bench", "--max-memory-mib", "1000000000"].iter().chain(args);
        let args = <Run as clap::Parser>::try_parse_from(argv).unwrap().run;
        let config = RunConfig::try_from((args, "test".to_owned())).unwrap();
        let plan = plan(&config, Some(1e6));
        let (cell, bytes) = plan.largest_memory().unwrap();
        (cell.key.to_string(), bytes)
    }

    #[test]
    fn the_memory_estimate_counts_each_keys_state() {
        // stateful: 32,768 keys of 64 KiB hold 2 GiB, whatever the messages.
        let (cell, bytes) = largest(&[
            "--scenario=stateful",
            "--strategy=keyed-mailbox",
            "--stateful-keys=32768",
            "--state-kib=64",
            "--stateful-messages=1000",
        ]);
        assert!(cell.starts_with("stateful keys=32768"), "{cell}");
        assert!(bytes >= 32_768 * 64 * 1024, "{bytes} B");
        assert!(bytes < 32_768 * 65 * 1024, "{bytes} B: the messages are few");
        // A pipeline whose every record names a key of its own: the projection's state of
        // each key beside the records; keys no record names hold nothing.
        let pipeline = |records: &str, keys: &str| {
            largest(&[
                "--scenario=pipeline-reorder",
                "--strategy=keyed-mailbox",
                &format!("--pipeline-records={records}"),
                "--crash-after=10",
                &format!("--pipeline-keys={keys}"),
            ])
        };
        let (cell, bytes) = pipeline("1000000", "100000000");
        assert!(cell.starts_with("pipeline-reorder"), "{cell}");
        let per_key = crate::pipeline::projection::BYTES_PER_KEY;
        assert!(bytes >= 1_000_000 * (PIPELINE_BYTES_PER_RECORD + per_key), "{bytes}");
        assert_eq!(bytes, pipeline("1000000", "1000000").1);
        assert!(pipeline("1000000", "10").1 < bytes);
    }
}
