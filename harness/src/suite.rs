//! The suite: every selected (scenario, param) x strategy cell, measured in turn, then
//! `results.json`, `summary.md` and the histograms written to the output folder.

pub(crate) mod ledger;
mod stop;

use std::time::Instant;

use strategies::{Design, StrategyId, WindowScope};

use crate::config::RunConfig;
use crate::measure::runner::{
    breakdown_messages, measure, recorder_overhead_ns, saturation_per_s, Instruments, RunError,
};
use crate::measure::system;
use crate::results::fs::hgrm;
use crate::results::metrics::{ideal_seconds, run_result, Capacity};
use crate::results::{Meta, Results, RunResult, Skipped, WindowScopeSetting};
use crate::sweep::{labelled, CellSettings};
use crate::workload::reference::is_parallel_consumer_experiment;
use crate::workload::{generate, ScenarioId, Sizes, Workload};
use ledger::Ledger;
pub use stop::StopSignal;

/// Messages of the `inline` run that measures saturation for `open-loop`.
const SATURATION_MESSAGES: usize = 50_000;

/// Hears how a suite run goes, to show it (a progress bar, log lines); the suite itself
/// prints nothing.
pub trait Observer {
    /// The run will measure `cells`, in this order (skipped ones included), each with
    /// its expected cost.
    fn planned(&mut self, _cells: &[PlannedCell]) {}
    /// Something worth a line that is not a cell (a calibration starting).
    fn note(&mut self, line: &str);
    /// A cell starts.
    fn starting(&mut self, _cell: &str) {}
    /// A cell finished (or was skipped), with a one-line outcome.
    fn finished(&mut self, cell: &str, outcome: &str);
    /// Every cell is done.
    fn done(&mut self) {}
}

/// An observer that shows nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {
    fn note(&mut self, _line: &str) {}
    fn finished(&mut self, _cell: &str, _outcome: &str) {}
}

/// Why the suite stopped.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// A cell could not be measured.
    #[error(transparent)]
    Run(#[from] RunError),
    /// A pipeline cell could not be run.
    #[error(transparent)]
    Pipeline(#[from] crate::pipeline::PipelineError),
    /// The output could not be written.
    #[error("cannot write {path}")]
    Write {
        /// The file or folder.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The earlier results a run was to complete hold cells it does not plan (another
    /// run's).
    #[error("the earlier results hold cells this run does not plan: {}", cells.join(", "))]
    NotPlanned {
        /// The cells, `scenario [param] strategy`.
        cells: Vec<String>,
    },
}

/// The `skipped[]` entry of a strategy that does not run a scenario ([`skip_reason`]).
fn skipped_cell(scenario: ScenarioId, strategy: Design) -> Option<Skipped> {
    skip_reason(scenario, strategy).map(|reason| Skipped {
        scenario: scenario.as_str().into(),
        strategy: strategy.as_str().into(),
        reason: reason.into(),
    })
}

/// Why a strategy does not run a scenario, if it does not: a strategy that runs handlers on
/// the submitting thread would run every wait one after another, and a blocking handler
/// would block the producer itself.
fn skip_reason(scenario: ScenarioId, strategy: Design) -> Option<&'static str> {
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

/// Seconds every cell that runs costs beyond its base time (below), calibrated on the
/// reference run `results/2026-12-01-vm-5` (the default suite, 2 cores, 2 workers):
/// `meta.suite_elapsed_s` = 270.3 s for 378 cells, 347 of them run (251 measured, 96
/// pipeline). Its measured cells' base times (ideal bound x 3 repetitions, plus the breakdown
/// repetition's share of the workload) sum to 194.5 s, its pipeline cells' (20,000 records
/// each: records / --pipeline-rate where paced, else [`PIPELINE_RECORD_S`] per record) to
/// 16.6 s; (270.3 - 211.1) / 347 = 0.17 s. It covers what the bound leaves out: each
/// strategy's distance from the ideal, the warm-up, threads started and joined, workload
/// and log generation, and the suite's own calibrations.
pub const CELL_OVERHEAD_S: f64 = 0.17;

/// Seconds an unpaced pipeline cell takes per record: the reference run's unpaced pipeline
/// cells (pipeline-crash, -expand, -reorder, -rebalance: 72 cells of 20,000 records) took
/// 8.33 s in all, 5.8 us per record.
pub const PIPELINE_RECORD_S: f64 = 5.8e-6;

/// `inline`'s saturation rate per counted worker in the reference run (763,526 msg/s with
/// one worker counted on 2 cores): the open-loop rates a plan assumes before saturation is
/// measured (`--dry-run`).
pub const REFERENCE_SATURATION_PER_WORKER: f64 = 763_526.0;

/// One cell of a run, as `--dry-run` lists it and the progress display weighs it.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedCell {
    /// The scenario.
    pub scenario: ScenarioId,
    /// Its parameter (`burst=240`, `policy=contiguous`), or empty.
    pub param: String,
    /// The strategy.
    pub strategy: Design,
    /// The name the observer hears for it in [`Observer::finished`].
    pub name: String,
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
    /// Its expected time: the base (the bound, or [`PIPELINE_RECORD_S`] per record of an
    /// unpaced pipeline cell) plus [`CELL_OVERHEAD_S`]; 0 for a skipped cell.
    pub estimate_s: f64,
}

/// Every cell `config` runs, in the order the suite runs them, with their costs.
/// `saturation_per_s` sets the open-loop rates; without it they assume the reference run's
/// saturation per worker ([`REFERENCE_SATURATION_PER_WORKER`]).
pub fn plan(config: &RunConfig, saturation_per_s: Option<f64>) -> Vec<PlannedCell> {
    let saturation = saturation_per_s
        .unwrap_or_else(|| REFERENCE_SATURATION_PER_WORKER * saturation_workers(config) as f64);
    let repetitions = config.repeat;
    let mut cells = Vec::new();
    for &scenario in &config.scenarios {
        for at in scenario_points(config, scenario) {
            plan_point(&at, scenario, saturation, repetitions, &mut cells);
        }
    }
    cells
}

/// One point of a scenario's sweep: the run's settings there and the label its cells
/// carry after their param.
pub(crate) struct ScenarioPoint {
    /// The run at this point ([`RunConfig::at`]).
    pub(crate) config: RunConfig,
    /// The point's label (`workers=4`), empty outside a sweep.
    pub(crate) label: String,
}

/// The points of `config`'s sweep that `scenario` runs.
pub(crate) fn scenario_points(config: &RunConfig, scenario: ScenarioId) -> Vec<ScenarioPoint> {
    let uses = scenario.uses(&config.sizes, config.sweep.window_given);
    config
        .sweep
        .points(uses)
        .iter()
        .map(|point| ScenarioPoint {
            config: config.at(point),
            label: config.sweep.label(point, uses),
        })
        .collect()
}

/// The workloads of `scenario` at one point: a scenario's own window gives way to a given
/// `--window`, and the point's label follows each param.
fn point_workloads(at: &ScenarioPoint, scenario: ScenarioId, saturation: f64) -> Vec<Workload> {
    let config = &at.config;
    let mut workloads = generate(scenario, &config.sizes, config.seed, saturation);
    for workload in &mut workloads {
        if config.sweep.window_given {
            workload.window = None;
        }
        workload.param = labelled(&workload.param, &at.label);
    }
    workloads
}

/// The settings a cell of `workload` runs with at `at`.
fn cell_settings(at: &ScenarioPoint, workload: Option<&Workload>) -> CellSettings {
    let strategy = &at.config.strategy;
    CellSettings {
        workers: workload.and_then(|w| w.workers).unwrap_or(strategy.workers),
        throughput: strategy.throughput,
        window: workload.and_then(|w| w.window).unwrap_or(strategy.max_in_flight),
        idle_spin_us: strategy.idle_spin_us,
        sweep: at.label.clone(),
    }
}

/// The cells of `scenario` at one point of the sweep, appended to `cells`.
fn plan_point(
    at: &ScenarioPoint,
    scenario: ScenarioId,
    saturation: f64,
    repetitions: usize,
    cells: &mut Vec<PlannedCell>,
) {
    let config = &at.config;
    {
        if scenario.is_pipeline() {
            let records = config.sizes.pipeline_records;
            let paced_s = (scenario == ScenarioId::PipelineRetry)
                .then(|| records as f64 / config.sizes.pipeline_rate as f64);
            let base_s = paced_s.unwrap_or(records as f64 * PIPELINE_RECORD_S);
            let params: Vec<String> = pipeline_plan(config)
                .param_names(scenario)
                .iter()
                .map(|param| labelled(param, &at.label))
                .collect();
            let (skipped, contenders): (Vec<Design>, Vec<Design>) = config
                .strategies
                .iter()
                .partition(|&&strategy| skip_reason(scenario, strategy).is_some());
            for strategy in skipped {
                for param in &params {
                    cells.push(PlannedCell {
                        scenario,
                        param: param.clone(),
                        strategy,
                        name: format!("{scenario} {strategy}"),
                        skipped: skip_reason(scenario, strategy),
                        repetitions: 0,
                        breakdown: false,
                        bound_s: 0.0,
                        estimate_s: 0.0,
                    });
                }
            }
            for param in &params {
                for &strategy in &contenders {
                    cells.push(PlannedCell {
                        scenario,
                        param: param.clone(),
                        strategy,
                        name: format!("{scenario} {param} {strategy}"),
                        skipped: None,
                        repetitions: 1,
                        breakdown: false,
                        bound_s: paced_s.unwrap_or(0.0),
                        estimate_s: base_s + CELL_OVERHEAD_S,
                    });
                }
            }
            return;
        }
        for workload in point_workloads(at, scenario, saturation) {
            let messages = workload.messages.len().max(1);
            let breakdown = config.breakdown && workload.driven.is_none();
            let share =
                if breakdown { breakdown_messages(messages) as f64 / messages as f64 } else { 0.0 };
            let workers = workload.workers.unwrap_or(config.strategy.workers);
            let window = workload.window.unwrap_or(config.strategy.max_in_flight);
            for &strategy in &config.strategies {
                let skipped = skip_reason(scenario, strategy);
                let (bound_s, estimate_s) = if skipped.is_some() {
                    (0.0, 0.0)
                } else {
                    let scope = config.strategy.window_scope.unwrap_or(
                        if strategy == StrategyId::PerTypePool {
                            WindowScope::Type
                        } else {
                            WindowScope::Strategy
                        },
                    );
                    let ideal_s = ideal_seconds(&workload, Capacity::new(workers, window, scope));
                    let bound_s = ideal_s * (repetitions as f64 + share);
                    (bound_s, bound_s + CELL_OVERHEAD_S)
                };
                cells.push(PlannedCell {
                    scenario,
                    param: workload.param.clone(),
                    strategy,
                    name: cell_name(&workload, strategy),
                    skipped,
                    repetitions: if skipped.is_some() { 0 } else { repetitions },
                    breakdown: skipped.is_none() && breakdown,
                    bound_s,
                    estimate_s,
                });
            }
        }
    }
}

/// Fails as the run would on an output folder it could not create: one under a file.
/// Creates nothing (`--dry-run`).
pub fn check_output(out: &std::path::Path) -> Result<(), SuiteError> {
    let existing = out.ancestors().find(|path| !path.as_os_str().is_empty() && path.exists());
    match existing {
        Some(path) if !path.is_dir() => Err(SuiteError::Write {
            path: out.display().to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a folder", path.display()),
            ),
        }),
        _ => Ok(()),
    }
}

/// Creates the output folders, failing early (before any measurement) if it cannot, and
/// removes what an earlier run wrote there (`results.json`, `summary.md`,
/// `histograms/*.hgrm`; nothing else), so a run that fails leaves no complete-looking
/// results behind and a run never mixes its files with an earlier one's.
pub fn prepare_output(out: &std::path::Path) -> Result<(), SuiteError> {
    let histograms = out.join("histograms");
    let earlier_histograms = std::fs::read_dir(&histograms)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "hgrm"));
    let earlier = [out.join("results.json"), out.join("summary.md")];
    for previous in earlier.into_iter().chain(earlier_histograms) {
        match std::fs::remove_file(&previous) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                let path = previous.display().to_string();
                return Err(SuiteError::Write { path, source: error });
            }
            _ => {}
        }
    }
    writable_output(out)
}

/// Creates the output folders if missing and checks that the folder can be written,
/// keeping everything in it (a resumed run adds to what its earlier sessions wrote).
pub fn writable_output(out: &std::path::Path) -> Result<(), SuiteError> {
    let histograms = out.join("histograms");
    std::fs::create_dir_all(&histograms)
        .map_err(|source| SuiteError::Write { path: histograms.display().to_string(), source })?;
    let probe = out.join(".write-probe");
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|source| SuiteError::Write { path: out.display().to_string(), source })
}

/// Runs the suite and writes its outputs, telling `progress` how it goes. Returns the
/// results and the summary text.
pub fn run_suite(
    config: &RunConfig,
    progress: &mut dyn Observer,
) -> Result<(Results, String), SuiteError> {
    let outcome = run_suite_with(config, progress, Control::default())?;
    Ok((outcome.results, outcome.summary))
}

/// What may steer a suite run besides its settings ([`run_suite_with`]).
#[derive(Debug, Default)]
pub struct Control<'a> {
    /// Once raised, the run stops after the cell in progress, saves what it has (marked
    /// incomplete) and returns.
    pub stop: Option<&'a StopSignal>,
    /// The incomplete results of an earlier session of this run (same settings and build),
    /// read from its output folder: its cells are kept, and only the missing ones run.
    pub earlier: Option<Results>,
}

/// How a suite run ended.
#[derive(Debug)]
pub struct Outcome {
    /// What `results.json` holds.
    pub results: Results,
    /// What `summary.md` holds.
    pub summary: String,
    /// Why the run stopped before its last cell, if it did (`meta.incomplete.stopped_by`).
    pub stopped_by: Option<String>,
    /// Saves of `results.json` while the run went (one per cell finished, and one before
    /// the first), and the seconds they took in all.
    pub saves: (usize, f64),
}

/// Runs the suite as `control` says and writes its outputs, telling `progress` how it goes:
/// `results.json` after every cell (marked incomplete until the last), the histograms of
/// each cell as it finishes, `summary.md` at the end. A run stopped by `control.stop`
/// returns what it saved; one where a cell fails saves what it has before the error.
pub fn run_suite_with(
    config: &RunConfig,
    progress: &mut dyn Observer,
    control: Control<'_>,
) -> Result<Outcome, SuiteError> {
    let Control { stop, earlier } = control;
    match earlier {
        Some(_) => writable_output(&config.out)?,
        None => prepare_output(&config.out)?,
    }
    let suite_started = Instant::now();
    let created = now_rfc3339();
    let instruments = Instruments::with_timer_threads(config.timer_threads);
    let mut notes = Vec::new();
    if config.scenarios.contains(&ScenarioId::OpenLoop) {
        notes.push(format!(
            "open-loop saturation counts {} worker(s): min(workers, cores - 1), since the \
             producer thread needs a core of its own",
            saturation_workers(config)
        ));
    }

    // A resumed run keeps the earlier session's calibrations: its cells were measured, and
    // its open-loop loads generated, with them.
    let recorded = earlier.as_ref().map(|earlier| &earlier.meta);
    let recorder_overhead_ns = match recorded.and_then(|meta| meta.recorder_overhead_ns) {
        Some(overhead) => overhead,
        None => {
            progress.note("measuring the recorder's own cost (inline, no-op handler)");
            recorder_overhead_ns(&instruments)
        }
    };
    let saturation_per_s = match recorded.and_then(|meta| meta.saturation_per_s) {
        Some(saturation) => Some(saturation),
        None if config.scenarios.contains(&ScenarioId::OpenLoop) => {
            progress.note("measuring saturation (inline on uniform) for open-loop loads");
            Some(measure_saturation(config, &instruments)?)
        }
        None => None,
    };
    if config.scenarios.contains(&ScenarioId::ParallelConsumer)
        && !is_parallel_consumer_experiment(&config.sizes)
    {
        notes.push(format!(
            "parallel-consumer ran a scaled-down sweep ({} messages, keys {:?}), so no \
             published figure is shown beside it; the published experiment is `keyed-bench \
             run --scenario parallel-consumer --published-parallel-consumer`",
            config.sizes.pc_messages, config.sizes.pc_keys
        ));
    }
    let meta = suite_meta(config, created, Some(recorder_overhead_ns), saturation_per_s, notes);
    let cells = plan(config, saturation_per_s);
    let mut ledger = Ledger::new(&config.out, cells, meta, earlier, stop, suite_started)?;
    progress.planned(&ledger.to_run());
    ledger.save()?;

    let stopped = || stop.and_then(StopSignal::requested).is_some();
    let ran = run_cells(config, progress, &mut ledger, &instruments, saturation_per_s, &stopped);
    progress.done();
    let saves = ledger.saves();
    if let Err(error) = ran {
        // Keep what was done, saying why the rest is missing; the error is what counts.
        let _ = ledger.finish(Some(format!("error: {error}")));
        return Err(error);
    }
    let (results, summary) = ledger.finish(stop.and_then(StopSignal::requested).map(Into::into))?;
    let stopped_by = results.meta.incomplete.as_ref().and_then(|left| left.stopped_by.clone());
    Ok(Outcome { results, summary, stopped_by, saves })
}

/// Runs every cell of the plan that `ledger` does not hold yet, in order, recording each as
/// it finishes; returns early, with what it did recorded, once `stopped` says so.
fn run_cells(
    config: &RunConfig,
    progress: &mut dyn Observer,
    ledger: &mut Ledger<'_>,
    instruments: &Instruments,
    saturation_per_s: Option<f64>,
    stopped: &dyn Fn() -> bool,
) -> Result<(), SuiteError> {
    // A workers sweep counts other workers at other points: each count measured once.
    let mut saturations = vec![(saturation_workers(config), saturation_per_s)];
    for &scenario in &config.scenarios {
        if !ledger.has_work(scenario) {
            continue;
        }
        for at in scenario_points(config, scenario) {
            if scenario.is_pipeline() {
                run_pipeline_point(&at, scenario, progress, ledger, instruments, stopped)?;
            } else {
                let config = &at.config;
                let saturation = if scenario == ScenarioId::OpenLoop {
                    saturation_at(&mut saturations, config, instruments, progress)?
                } else {
                    saturation_per_s
                };
                let workloads = point_workloads(&at, scenario, saturation.unwrap_or(1.0));
                for workload in &workloads {
                    for &strategy in &config.strategies {
                        let index =
                            ledger.position(scenario.as_str(), &workload.param, strategy.as_str());
                        if ledger.is_done(index) {
                            continue;
                        }
                        if stopped() {
                            return Ok(());
                        }
                        let what = cell_name(workload, strategy);
                        if let Some(entry) = skipped_cell(scenario, strategy) {
                            ledger.skipped(index, entry)?;
                            progress.finished(&what, "skipped");
                            continue;
                        }
                        progress.starting(&what);
                        let memory = MemoryWatch::start();
                        let measurement = measure(
                            workload,
                            strategy,
                            config.strategy,
                            config.repetitions(),
                            instruments,
                        )?;
                        let settings = cell_settings(&at, Some(workload));
                        let (mut result, histograms) = run_result(
                            workload,
                            strategy.as_str(),
                            &measurement,
                            settings.workers,
                            settings.window,
                            system::cores(),
                        );
                        result.memory = memory.finish();
                        result.settings = Some(settings);
                        let outcome = outcome_line(&result);
                        let stem = file_stem(workload, strategy);
                        let mut files =
                            vec![(format!("{stem}.latency.hgrm"), hgrm(&histograms.latency))];
                        if let Some(bystander) = &histograms.bystander {
                            files.push((format!("{stem}.bystander.hgrm"), hgrm(bystander)));
                        }
                        // Saved first: whatever telling the observer does, the cell is kept.
                        ledger.measured(index, result, &files)?;
                        progress.finished(&what, &outcome);
                    }
                }
            }
            if stopped() {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// Runs the cells of pipeline `scenario` at one point of the sweep that `ledger` does not
/// hold yet, recording each as it finishes.
fn run_pipeline_point(
    at: &ScenarioPoint,
    scenario: ScenarioId,
    progress: &mut dyn Observer,
    ledger: &mut Ledger<'_>,
    instruments: &Instruments,
    stopped: &dyn Fn() -> bool,
) -> Result<(), SuiteError> {
    let config = &at.config;
    let params = pipeline_plan(config).param_names(scenario);
    let mut contenders = Vec::new();
    for &strategy in &config.strategies {
        let Some(entry) = skipped_cell(scenario, strategy) else {
            contenders.push(strategy);
            continue;
        };
        for param in &params {
            let param = labelled(param, &at.label);
            let index = ledger.position(scenario.as_str(), &param, strategy.as_str());
            if ledger.is_done(index) {
                continue;
            }
            if stopped() {
                return Ok(());
            }
            ledger.skipped(index, entry.clone())?;
            progress.finished(&format!("{scenario} {strategy}"), "skipped");
        }
    }
    let to_do: Vec<(String, Design)> = params
        .iter()
        .flat_map(|param| contenders.iter().map(move |&strategy| (param.clone(), strategy)))
        .filter(|(param, strategy)| {
            let param = labelled(param, &at.label);
            !ledger.is_done(ledger.position(scenario.as_str(), &param, strategy.as_str()))
        })
        .collect();
    if to_do.is_empty() || stopped() {
        return Ok(());
    }
    let bench = crate::pipeline::Bench {
        sizes: &config.sizes,
        seed: config.seed,
        timer: &instruments.timer,
        strategy_config: config.strategy,
    };
    // A failed save stops the scenario's other cells; its error is returned after.
    let failed = std::cell::Cell::new(false);
    let mut save_error = None;
    let mut wanted = |param: &str, strategy: Design| {
        !failed.get()
            && !stopped()
            && to_do.iter().any(|(p, s)| p.as_str() == param && *s == strategy)
    };
    crate::pipeline::run_scenario_where(
        scenario,
        &bench,
        &pipeline_plan(config),
        &contenders,
        &mut wanted,
        |run| {
            let mut run = run.clone();
            run.param = labelled(&run.param, &at.label);
            run.settings = Some(cell_settings(at, None));
            let index = ledger.position(&run.scenario, &run.param, &run.strategy);
            let (name, outcome) = (pipeline_cell_name(&run), pipeline_outcome_line(&run));
            if let Err(error) = ledger.pipeline(index, run) {
                failed.set(true);
                save_error.get_or_insert(error);
            }
            progress.finished(&name, &outcome);
        },
    )?;
    match save_error {
        Some(error) => Err(error),
        None => Ok(()),
    }
}

/// The meta of a run of `config`, before its first cell.
fn suite_meta(
    config: &RunConfig,
    created: String,
    recorder_overhead_ns: Option<f64>,
    saturation_per_s: Option<f64>,
    notes: Vec<String>,
) -> Meta {
    Meta {
        created,
        git_commit: system::git_commit(),
        rustc: system::rustc_version(),
        cpu_model: system::cpu_model(),
        cores: system::cores(),
        workers: config.strategy.workers,
        window: config.strategy.max_in_flight,
        throughput: config.strategy.throughput,
        command: config.command.clone(),
        seed: config.seed,
        repeat: config.repeat,
        quick: config.quick,
        recorder_overhead_ns,
        saturation_per_s,
        suite_elapsed_s: 0.0,
        notes,
        groups_per_worker: Some(config.strategy.groups_per_worker),
        idle_spin_us: Some(config.strategy.idle_spin_us),
        window_scope: Some(WindowScopeSetting::from(config.strategy.window_scope)),
        binding: Some(config.strategy.binding),
        commit_policies: Some(config.commit_policies.clone()),
        retry_policies: Some(config.retry_policies.clone()),
        producers: Some(config.producers),
        timer_threads: Some(config.timer_threads),
        sizes: Some(config.sizes.clone()),
        designs: crate::results::designs::records(&config.strategies),
        sweep: Some(config.sweep.clone()),
        scenarios: Some(config.scenarios.iter().map(|id| id.as_str().to_owned()).collect()),
        strategies: Some(config.strategies.iter().map(|id| id.as_str().to_owned()).collect()),
        breakdown: Some(config.breakdown),
        incomplete: None,
        resumed: Vec::new(),
    }
}

fn cell_name(workload: &Workload, strategy: Design) -> String {
    if workload.param.is_empty() {
        format!("{} {strategy}", workload.scenario)
    } else {
        format!("{} {} {strategy}", workload.scenario, workload.param)
    }
}

/// The process's resident memory over one cell: the high-water mark is reset when it
/// starts, and read when it finishes.
struct MemoryWatch {
    /// Resident bytes at the start, where the high-water mark could be reset.
    before: Option<u64>,
}

impl MemoryWatch {
    fn start() -> Self {
        let before = system::resident_bytes().filter(|_| system::reset_peak_resident());
        Self { before }
    }

    fn finish(self) -> Option<crate::results::CellMemory> {
        let before_bytes = self.before?;
        let peak_bytes = system::peak_resident_bytes()?.max(before_bytes);
        Some(crate::results::CellMemory { before_bytes, peak_bytes })
    }
}

/// The policies the pipeline scenarios' cells run.
fn pipeline_plan(config: &RunConfig) -> crate::pipeline::PipelinePlan {
    crate::pipeline::PipelinePlan {
        commit_policies: config.commit_policies.clone(),
        retry_policies: config.retry_policies.clone(),
    }
}

fn pipeline_cell_name(run: &crate::pipeline::PipelineRun) -> String {
    format!("{} {} {}", run.scenario, run.param, run.strategy)
}

fn pipeline_outcome_line(run: &crate::pipeline::PipelineRun) -> String {
    format!(
        "{:.0} records/s, lost {}, redelivered {}, commit lag p99 {}, final state {}",
        run.throughput_per_s,
        run.lost,
        run.redelivered,
        run.commit_lag.p99,
        if run.projection.final_state_correct { "correct" } else { "WRONG" }
    )
}

fn file_stem(workload: &Workload, strategy: Design) -> String {
    let param: String =
        workload.param.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
    if param.is_empty() {
        format!("{}-{strategy}", workload.scenario)
    } else {
        format!("{}-{param}-{strategy}", workload.scenario)
    }
}

fn outcome_line(result: &RunResult) -> String {
    let correctness = if result.correctness.is_clean() {
        "ok".to_owned()
    } else {
        format!("{:?}", result.correctness)
    };
    format!(
        "{:.0} msg/s, p99 {:.1} us, threads {}/{}, efficiency {:.2}, {correctness}",
        result.throughput_per_s.median,
        result.latency_ns.p99 as f64 / 1e3,
        result.threads.reported,
        result.threads.observed,
        result.efficiency,
    )
}

/// Workers that count towards saturation: `min(workers, cores - 1)`, at least one.
/// `inline`'s saturation rate on uniform with `config`'s counted workers, for open-loop.
fn measure_saturation(config: &RunConfig, instruments: &Instruments) -> Result<f64, SuiteError> {
    let sizes =
        Sizes { messages: config.sizes.messages.min(SATURATION_MESSAGES), ..config.sizes.clone() };
    let workload = generate(ScenarioId::Uniform, &sizes, config.seed, 1.0).remove(0);
    let workers = saturation_workers(config);
    Ok(saturation_per_s(&workload, config.strategy, workers, instruments)?)
}

/// The saturation rate at a point of the sweep: measured once per counted worker count.
fn saturation_at(
    saturations: &mut Vec<(usize, Option<f64>)>,
    config: &RunConfig,
    instruments: &Instruments,
    progress: &mut dyn Observer,
) -> Result<Option<f64>, SuiteError> {
    let workers = saturation_workers(config);
    if let Some((_, saturation)) = saturations.iter().find(|(counted, _)| *counted == workers) {
        return Ok(*saturation);
    }
    progress.note(&format!("measuring saturation with {workers} counted worker(s) for open-loop"));
    let saturation = Some(measure_saturation(config, instruments)?);
    saturations.push((workers, saturation));
    Ok(saturation)
}

fn saturation_workers(config: &RunConfig) -> usize {
    config.strategy.workers.min(system::cores().saturating_sub(1)).max(1)
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_rfc3339() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

/// Why a cell could not be measured again.
#[derive(Debug, thiserror::Error)]
pub enum RemeasureError {
    /// The results name a scenario or a parameter this build does not generate.
    #[error("{0}")]
    Unavailable(&'static str),
    /// Measuring failed.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Measures one (scenario, param) cell again for `strategies`, with the settings and sizes of
/// `recorded` and the saturation rate `meta` records (the gate's confirmation of a failing
/// wall-clock rule).
pub fn remeasure(
    recorded: &RunConfig,
    results: &Results,
    scenario: &str,
    param: &str,
    strategies: &[Design],
) -> Result<Vec<RunResult>, RemeasureError> {
    let unavailable = RemeasureError::Unavailable;
    let meta = &results.meta;
    // A cell of a sweep ran at its own point: its settings say which.
    let settings = results
        .runs
        .iter()
        .find(|run| run.scenario == scenario && run.param == param)
        .and_then(|run| run.settings.clone());
    let scenario: ScenarioId = scenario.parse().map_err(|_| unavailable("unknown scenario"))?;
    let mut strategy_config = recorded.strategy;
    let mut base = param;
    if let Some(settings) = &settings {
        strategy_config = crate::sweep::Point {
            workers: settings.workers,
            throughput: settings.throughput,
            window: settings.window,
            idle_spin_us: settings.idle_spin_us,
        }
        .apply(strategy_config);
        base = settings.base_param(param);
    }
    let mut workload =
        generate(scenario, &recorded.sizes, recorded.seed, meta.saturation_per_s.unwrap_or(1.0))
            .into_iter()
            .find(|workload| workload.param == base)
            .ok_or_else(|| unavailable("no such parameter"))?;
    if let Some(settings) = &settings {
        // A window other than the scenario's own was given on the command line.
        if workload.window.is_some_and(|own| own != settings.window) {
            workload.window = None;
        }
        workload.param = param.to_owned();
    }
    let instruments = Instruments::with_timer_threads(recorded.timer_threads);
    strategies
        .iter()
        .map(|&strategy| {
            let measurement = measure(
                &workload,
                strategy,
                strategy_config,
                recorded.confirmation(),
                &instruments,
            )?;
            let (workers, window) = (strategy_config.workers, strategy_config.max_in_flight);
            let cores = system::cores();
            let (mut result, _) =
                run_result(&workload, strategy.as_str(), &measurement, workers, window, cores);
            result.settings = settings.clone();
            Ok(result)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_run_removes_only_what_an_earlier_run_wrote() {
        let out = std::env::temp_dir().join(format!("keyed-bench-prepare-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(out.join("histograms")).unwrap();
        let theirs = ["results.json", "summary.md", "histograms/uniform-inline.hgrm"];
        let others = ["notes.txt", "histograms/README", "plots.png"];
        for name in theirs.iter().chain(&others) {
            std::fs::write(out.join(name), b"earlier").unwrap();
        }
        prepare_output(&out).unwrap();
        for name in theirs {
            assert!(!out.join(name).exists(), "{name} from an earlier run was kept");
        }
        for name in others {
            assert!(out.join(name).exists(), "{name} is not ours to remove");
        }
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn the_plan_holds_every_cell_the_run_reports() {
        let args = crate::cli::run::RunArgs { quick: true, ..Default::default() };
        let config = RunConfig::try_from((args, "test".to_owned())).unwrap();
        let cells = plan(&config, Some(1e6));
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
        assert_eq!(cells.len(), expected);
        for cell in &cells {
            assert_eq!(cell.skipped, skip_reason(cell.scenario, cell.strategy), "{}", cell.name);
            assert!(cell.name.starts_with(cell.scenario.as_str()), "{}", cell.name);
            assert!(cell.name.ends_with(cell.strategy.as_str()), "{}", cell.name);
            if cell.skipped.is_none() {
                assert!(cell.estimate_s > cell.bound_s && cell.bound_s >= 0.0, "{}", cell.name);
            }
        }
        // A cell with waits costs more than one of 1 us spins: the weights differ.
        let cost = |scenario| cells.iter().find(|cell| cell.scenario == scenario).unwrap();
        assert!(cost(ScenarioId::ConflictBackoff).bound_s > cost(ScenarioId::Uniform).bound_s);
    }

    #[test]
    fn an_output_under_a_file_is_refused_without_creating_anything() {
        let file = std::env::temp_dir().join(format!("keyed-bench-check-{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        assert!(check_output(&file.join("sub")).is_err());
        std::fs::remove_file(&file).unwrap();
        let absent = file.join("a").join("b");
        check_output(&absent).unwrap();
        assert!(!file.exists());
    }

    #[test]
    fn rfc3339_has_the_right_shape_and_year() {
        let now = now_rfc3339();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
        assert!(now.as_str() >= "2024-01-01", "{now}");
    }

    #[test]
    fn inline_is_skipped_only_where_handlers_wait_or_block() {
        assert!(skip_reason(ScenarioId::AsyncIo, StrategyId::Inline.into()).is_some());
        assert!(skip_reason(ScenarioId::Uniform, StrategyId::Inline.into()).is_none());
        assert!(skip_reason(ScenarioId::AsyncIo, StrategyId::KeyedMailbox.into()).is_none());
        assert!(skip_reason(ScenarioId::ParallelConsumer, StrategyId::Inline.into()).is_some());
        assert!(skip_reason(ScenarioId::ParallelConsumer, StrategyId::GroupBy.into()).is_none());
    }
}
