//! Step 2, the run: the plan's cells in order, each saved as it finishes.
//!
//! The run walks [`Plan::cells`] once. A measured cell's workload is generated when the
//! first of its cells runs and dropped once the next workload is needed (a workload's
//! cells are adjacent in the plan); the open-loop saturation of a sweep point is measured
//! the first time one of its cells needs it. A pipeline scenario runs all its cells at one
//! point together (they share one log): the first of them that is still to do starts them.
//!
//! Every cell runs on the cell thread under the watchdog (`watchdog.rs`); this thread
//! generates the workloads, turns the raw measurements into results and saves them. A cell
//! the watchdog stops, or a completion-driven one whose senders got no answer for its
//! timeout, is recorded as failed; the pipeline cells of its point that are left run again
//! on a fresh log.

use std::sync::Arc;
use std::time::Duration;

use strategies::Design;

use super::ledger::Ledger;
use super::plan::{pipeline_plan, saturation_workers, Cell, Plan, ScenarioPoint};
use super::stop::StopSignal;
use super::watchdog::{Cells, Ending, Report, Reporter, Supervisor};
use super::{Observer, SuiteError};
use crate::config::RunConfig;
use crate::measure::interference::Probe;
use crate::measure::metrics::run_result;
use crate::measure::runner::{measure_watched, saturation_per_s, Instruments, Measurement};
use crate::measure::system;
use crate::results::fs::hgrm;
use crate::results::{CellKey, PipelineRun, RunResult, Skipped, Validity};
use crate::workload::{generate, ScenarioId, Sizes, Workload};

/// Messages of the `inline` run that measures saturation for `open-loop`.
const SATURATION_MESSAGES: usize = 50_000;

/// What the run keeps between cells: the workload in use, the saturation rates measured
/// so far, and the watchdog.
pub(super) struct Runner<'r> {
    config: &'r RunConfig,
    plan: &'r Plan,
    instruments: &'r Arc<Instruments>,
    /// The workload of the cells in progress, by its index in the plan.
    workload: Option<(usize, Arc<Workload>)>,
    /// Saturation per counted worker count: each measured once.
    saturations: Vec<(usize, f64)>,
    /// The (scenario, point) whose pipeline cells have run in this session.
    pipelines_run: Vec<usize>,
    /// Runs every cell on the cell thread, and stops those that make no progress.
    supervisor: Supervisor<'r>,
}

impl<'r> Runner<'r> {
    pub(super) fn new(
        config: &'r RunConfig,
        plan: &'r Plan,
        instruments: &'r Arc<Instruments>,
        saturation_per_s: Option<f64>,
        stop: Option<&'r StopSignal>,
    ) -> Self {
        let saturations =
            saturation_per_s.map(|s| (saturation_workers(config), s)).into_iter().collect();
        Self {
            config,
            plan,
            instruments,
            workload: None,
            saturations,
            pipelines_run: Vec::new(),
            supervisor: Supervisor::new(config.watchdog, stop),
        }
    }

    /// The no-progress timeout of each cell of the plan, by index.
    fn timeouts(&self) -> impl Fn(usize) -> Duration + 'r {
        let (config, plan) = (self.config, self.plan);
        move |index| config.watchdog.timeout_of(plan.cells[index].estimate_s, &config.sizes)
    }

    /// Runs every cell of the plan that `ledger` does not hold yet, in order, recording
    /// each as it finishes; returns early, with what it did recorded, once `stopped` says so.
    pub(super) fn run(
        &mut self,
        progress: &mut dyn Observer,
        ledger: &mut Ledger<'_>,
        stopped: &dyn Fn() -> bool,
    ) -> Result<(), SuiteError> {
        let plan = self.plan;
        for (index, cell) in plan.cells.iter().enumerate() {
            if ledger.is_done(index) {
                continue;
            }
            if stopped() {
                return Ok(());
            }
            if let Some(reason) = cell.skipped {
                let entry = Skipped {
                    scenario: cell.scenario.as_str().into(),
                    strategy: cell.strategy.as_str().into(),
                    reason: reason.into(),
                };
                ledger.skipped(index, entry)?;
                progress.finished(cell, "skipped");
                continue;
            }
            match cell.workload {
                Some(workload) => self.measure_cell(index, cell, workload, progress, ledger)?,
                None if !self.pipelines_run.contains(&cell.point) => {
                    self.pipelines_run.push(cell.point);
                    self.run_pipeline_point(cell.point, progress, ledger, stopped)?;
                }
                // Its scenario's other cells ran, and this one was not wanted (a stop).
                None => {}
            }
        }
        Ok(())
    }

    /// Measures cell `index`, generating its workload if it is the first of its cells.
    fn measure_cell(
        &mut self,
        index: usize,
        cell: &Cell,
        workload: usize,
        progress: &mut dyn Observer,
        ledger: &mut Ledger<'_>,
    ) -> Result<(), SuiteError> {
        let workload = self.workload_of(cell, workload, progress)?;
        progress.starting(cell);
        let memory = MemoryWatch::start();
        let mut remeasured = 0;
        let (mut result, histograms) = loop {
            let measurement = match self.measure_supervised(index, cell, &workload, progress) {
                Ok(measurement) => measurement,
                Err(ending) => return self.after_cancel(*ending, progress, ledger),
            };
            let (mut result, histograms) = run_result(
                &workload,
                cell.strategy.as_str(),
                &measurement,
                cell.settings.workers,
                cell.settings.window,
                system::cores(),
            );
            let revalidate = self.plan.points[cell.point].config.revalidate;
            let receipt = result.interference.as_mut();
            let void = receipt.as_ref().is_some_and(|r| r.validity == Validity::Void);
            if !void || remeasured == revalidate {
                receipt.into_iter().for_each(|receipt| receipt.remeasured = remeasured);
                break (result, histograms);
            }
            remeasured += 1;
            let reasons = receipt.map(|r| r.reasons.join("; ")).unwrap_or_default();
            progress.note(&format!(
                "{}: void ({reasons}); measuring again ({remeasured} of {revalidate})",
                cell.key
            ));
        };
        result.memory = memory.finish();
        result.settings = Some(cell.settings.clone());
        let outcome = outcome_line(&result);
        let stem = cell.key.file_stem();
        let mut files = vec![(format!("{stem}.latency.hgrm"), hgrm(&histograms.latency))];
        if let Some(bystander) = &histograms.bystander {
            files.push((format!("{stem}.bystander.hgrm"), hgrm(bystander)));
        }
        // Saved first: whatever telling the observer does, the cell is kept.
        ledger.measured(index, result, &files)?;
        progress.finished(cell, &outcome);
        Ok(())
    }

    /// Measures cell `index` once on the cell thread, under the watchdog: its measurement,
    /// or how the cell thread ended without one.
    fn measure_supervised(
        &mut self,
        index: usize,
        cell: &Cell,
        workload: &Arc<Workload>,
        progress: &mut dyn Observer,
    ) -> Result<Measurement, Box<Ending>> {
        let at = &self.plan.points[cell.point];
        let (strategy, settings, plan) =
            (cell.strategy, at.config.strategy, at.config.repetitions());
        let instruments = Arc::clone(self.instruments);
        let measured_workload = Arc::clone(workload);
        let job = move |reporter: &Reporter<Measurement>| {
            reporter.starting(index);
            let watch = &reporter.watch;
            let measurement =
                measure_watched(&measured_workload, strategy, settings, plan, &instruments, watch)?;
            reporter.finished(index, measurement);
            Ok(())
        };
        let mut measured = None;
        let timeout = self.timeouts();
        let cells = Cells { cells: &self.plan.cells, timeout: &timeout, unit: "messages" };
        let ending = self.supervisor.run(&cells, index, job, &mut |report| {
            match report {
                Report::Finished(_, measurement) => measured = Some(measurement),
                Report::Note(line) => progress.note(&line),
                Report::Starting(_) => {}
            }
            Ok(())
        });
        match (ending, measured) {
            (Ending::Returned(Ok(())), Some(measurement)) => Ok(measurement),
            (ending, _) => Err(Box::new(ending)),
        }
    }

    /// The workload of `cell`, the plan's `workload`: the one held, or generated now (the
    /// one held is dropped first: a run holds one workload at a time).
    fn workload_of(
        &mut self,
        cell: &Cell,
        workload: usize,
        progress: &mut dyn Observer,
    ) -> Result<Arc<Workload>, SuiteError> {
        if let Some((held, generated)) = &self.workload {
            if *held == workload {
                return Ok(Arc::clone(generated));
            }
        }
        self.workload = None;
        let at = &self.plan.points[cell.point];
        let saturation = if cell.scenario.loads_of_saturation() {
            self.saturation_at(&at.config, progress)?
        } else {
            1.0
        };
        let spec = &self.plan.workloads[workload];
        let mut generated = spec.generate(&at.config.sizes, at.config.seed, saturation);
        generated.param = cell.key.full_param();
        let generated = Arc::new(generated);
        self.workload = Some((workload, Arc::clone(&generated)));
        Ok(generated)
    }

    /// Runs the cells of the pipeline scenario at `point` that `ledger` does not hold yet
    /// (they share one log), recording each as it finishes; after a cell the watchdog
    /// stopped, those left run on a fresh log.
    fn run_pipeline_point(
        &mut self,
        point: usize,
        progress: &mut dyn Observer,
        ledger: &mut Ledger<'_>,
        stopped: &dyn Fn() -> bool,
    ) -> Result<(), SuiteError> {
        loop {
            let to_do: Vec<usize> = (self.plan.cells.iter().enumerate())
                .filter(|(index, cell)| {
                    cell.point == point && cell.skipped.is_none() && !ledger.is_done(*index)
                })
                .map(|(index, _)| index)
                .collect();
            if to_do.is_empty() || stopped() {
                return Ok(());
            }
            match self.pipeline_job(point, &to_do, progress, ledger) {
                Ending::Returned(result) => return result,
                Ending::Cancelled(None) => {} // a stop: heard above; or it finished after all
                other => self.after_cancel(other, progress, ledger)?,
            }
        }
    }

    /// Runs the cells `to_do` of the pipeline scenario at `point` as one job, on one log,
    /// recording each as it finishes.
    fn pipeline_job(
        &mut self,
        point: usize,
        to_do: &[usize],
        progress: &mut dyn Observer,
        ledger: &mut Ledger<'_>,
    ) -> Ending {
        let plan = self.plan;
        let at: &ScenarioPoint = &plan.points[point];
        let config = &at.config;
        let mut contenders: Vec<Design> = Vec::new();
        for cell in plan.cells.iter().filter(|cell| cell.point == point && cell.skipped.is_none()) {
            if !contenders.contains(&cell.strategy) {
                contenders.push(cell.strategy);
            }
        }
        let job = PipelineJob {
            scenario: at.scenario,
            label: at.label.clone(),
            cells: to_do.iter().map(|&index| (index, plan.cells[index].key.clone())).collect(),
            sizes: config.sizes.clone(),
            seed: config.seed,
            strategy_config: config.strategy,
            timer: self.instruments.timer.clone(),
            policies: pipeline_plan(config),
            contenders,
        };
        let timeout = self.timeouts();
        let cells = Cells { cells: &plan.cells, timeout: &timeout, unit: "records" };
        let job = move |reporter: &Reporter<PipelineRun>| job.run(reporter);
        // Each cell's receipt covers it from its start to its end.
        let mut probe = None;
        self.supervisor.run(&cells, to_do[0], job, &mut |report| match report {
            Report::Starting(index) => {
                probe = Some(Probe::start());
                progress.starting(&plan.cells[index]);
                Ok(())
            }
            Report::Finished(index, run) => {
                let cell = &plan.cells[index];
                let run = PipelineRun {
                    param: cell.key.full_param(),
                    settings: Some(cell.settings.clone()),
                    interference: probe.take().map(|probe| probe.receipt()),
                    ..run
                };
                let outcome = pipeline_outcome_line(&run);
                ledger.pipeline(index, run)?;
                progress.finished(cell, &outcome);
                Ok(())
            }
            Report::Note(line) => {
                progress.note(&line);
                Ok(())
            }
        })
    }

    /// What a job the watchdog cancelled, or whose cell gave up, leaves to do: records the
    /// cell that made no progress as failed; a job that would not return ends the run (its
    /// cell recorded first), unless a stop request cancelled it, which stops the run anyway.
    fn after_cancel(
        &self,
        ending: Ending,
        progress: &mut dyn Observer,
        ledger: &mut Ledger<'_>,
    ) -> Result<(), SuiteError> {
        let grace_s = self.config.watchdog.cancel_grace.as_secs();
        let (failure, abandoned) = match ending {
            Ending::Returned(result) => return result,
            Ending::Failed(index, failed, error) => {
                let cell = &self.plan.cells[index];
                progress.finished(cell, &format!("FAILED: {}", failed.reason));
                ledger.failed(index, failed)?;
                return Err(error);
            }
            Ending::Cancelled(failure) => (failure, false),
            Ending::Stalled(index, failed) => (Some((index, failed)), false),
            Ending::Abandoned(failure) => (failure, true),
        };
        let Some((index, failed)) = failure else {
            if abandoned && !self.supervisor.stop_requested() {
                // Cancelled, then finished after all, then did not return: absurd, but
                // the thread is gone all the same.
                let reason = "it finished as it was cancelled, yet did not return".into();
                return Err(SuiteError::Abandoned {
                    cell: "the cell in progress".into(),
                    reason,
                    grace_s,
                });
            }
            return Ok(()); // a stop request's cancel: the cell is not done; the run stops
        };
        let cell = &self.plan.cells[index];
        let reason = failed.reason.clone();
        ledger.failed(index, failed)?;
        progress.finished(cell, &format!("FAILED: {reason}"));
        if abandoned {
            return Err(SuiteError::Abandoned { cell: cell.key.to_string(), reason, grace_s });
        }
        Ok(())
    }

    /// The saturation rate at a point of the sweep: measured once per counted worker count.
    fn saturation_at(
        &mut self,
        config: &RunConfig,
        progress: &mut dyn Observer,
    ) -> Result<f64, SuiteError> {
        let workers = saturation_workers(config);
        if let Some((_, saturation)) = self.saturations.iter().find(|(n, _)| *n == workers) {
            return Ok(*saturation);
        }
        progress
            .note(&format!("measuring saturation with {workers} counted worker(s) for open-loop"));
        let saturation = measure_saturation(config, self.instruments)?;
        self.saturations.push((workers, saturation));
        Ok(saturation)
    }
}

/// The cells of a pipeline scenario at one point that one job runs, on the cell thread,
/// over one log, with what they need.
struct PipelineJob {
    scenario: ScenarioId,
    /// The point's label.
    label: String,
    /// The cells to run, each with its index in the plan.
    cells: Vec<(usize, CellKey)>,
    sizes: Sizes,
    seed: u64,
    strategy_config: strategies::StrategyConfig,
    timer: crate::measure::timer::Timer,
    policies: crate::pipeline::PipelinePlan,
    /// Every strategy the point runs (the log's cells are asked for in their order).
    contenders: Vec<Design>,
}

impl PipelineJob {
    /// The index in the plan of the job's cell of `param` on `strategy`.
    fn find(&self, param: &str, strategy: &str) -> Option<usize> {
        let key = CellKey::new(self.scenario, param, &self.label, strategy);
        self.cells.iter().find(|(_, cell)| *cell == key).map(|(index, _)| *index)
    }

    /// Runs the job's cells, reporting each as it starts and finishes, until the last or
    /// until `reporter` halts it.
    fn run(self, reporter: &Reporter<PipelineRun>) -> Result<(), SuiteError> {
        let bench = crate::pipeline::Bench {
            sizes: &self.sizes,
            seed: self.seed,
            timer: &self.timer,
            strategy_config: self.strategy_config,
            watch: reporter.watch.clone(),
        };
        let mut wanted = |param: &str, strategy: Design| {
            let index = self.find(param, strategy.as_str()).filter(|_| !reporter.halted());
            index.inspect(|&index| reporter.starting(index)).is_some()
        };
        let finished = |run: &PipelineRun| {
            let found = self.find(&run.param, &run.strategy);
            found.inspect(|&index| reporter.finished(index, run.clone()));
        };
        let (scenario, policies) = (self.scenario, &self.policies);
        crate::pipeline::run_scenario_where(
            scenario,
            &bench,
            policies,
            &self.contenders,
            &mut wanted,
            finished,
        )?;
        Ok(())
    }
}

/// `inline`'s saturation rate on uniform with `config`'s counted workers, for open-loop.
pub(super) fn measure_saturation(
    config: &RunConfig,
    instruments: &Instruments,
) -> Result<f64, SuiteError> {
    let sizes =
        Sizes { messages: config.sizes.messages.min(SATURATION_MESSAGES), ..config.sizes.clone() };
    let workload = generate(ScenarioId::Uniform, &sizes, config.seed, 1.0).remove(0);
    let workers = saturation_workers(config);
    Ok(saturation_per_s(&workload, config.strategy, workers, instruments)?)
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

fn pipeline_outcome_line(run: &crate::results::PipelineRun) -> String {
    format!(
        "{:.0} records/s, lost {}, redelivered {}, commit lag p99 {}, final state {}",
        run.throughput_per_s,
        run.lost,
        run.redelivered,
        run.commit_lag.p99,
        match (run.state_judged(), run.projection.final_state_correct) {
            (false, _) => "not judged (retried for ever)",
            (true, true) => "correct",
            (true, false) => "WRONG",
        }
    )
}

/// What went wrong in a cell, by name: `17 order violations, 2 overlaps`; `ok` if nothing.
fn faults(result: &RunResult) -> String {
    let c = &result.correctness;
    let counts = [
        (c.order_violations, "order violations"),
        (c.overlaps, "overlaps"),
        (c.lost, "lost"),
        (c.duplicates, "duplicates"),
        (c.failed, "failed"),
    ];
    let named: Vec<String> =
        counts.iter().filter(|(n, _)| *n > 0).map(|(n, what)| format!("{n} {what}")).collect();
    if named.is_empty() {
        "ok".to_owned()
    } else {
        named.join(", ")
    }
}

fn outcome_line(result: &RunResult) -> String {
    let correctness = faults(result);
    format!(
        "{:.0} msg/s, p99 {:.1} us, threads {}/{}, efficiency {:.2}, {correctness}",
        result.throughput_per_s.median,
        result.latency_ns.p99 as f64 / 1e3,
        result.threads.reported,
        result.threads.observed,
        result.efficiency,
    )
}
