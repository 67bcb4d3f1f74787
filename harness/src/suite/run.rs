//! Step 2, the run: the plan's cells in order, each saved as it finishes.
//!
//! The run walks [`Plan::cells`] once. A measured cell's workload is generated when the
//! first of its cells runs and dropped once the next workload is needed (a workload's
//! cells are adjacent in the plan); the open-loop saturation of a sweep point is measured
//! the first time one of its cells needs it. A pipeline scenario runs all its cells at one
//! point together (they share one log): the first of them that is still to do starts them.

use strategies::Design;

use super::ledger::Ledger;
use super::plan::{pipeline_plan, saturation_workers, Cell, Plan, ScenarioPoint};
use super::{Observer, SuiteError};
use crate::config::RunConfig;
use crate::measure::metrics::run_result;
use crate::measure::runner::{measure, saturation_per_s, Instruments};
use crate::measure::system;
use crate::results::fs::hgrm;
use crate::results::{CellKey, RunResult, Skipped};
use crate::workload::{generate, ScenarioId, Sizes, Workload};

/// Messages of the `inline` run that measures saturation for `open-loop`.
const SATURATION_MESSAGES: usize = 50_000;

/// What the run keeps between cells: the workload in use and the saturation rates
/// measured so far.
pub(super) struct Runner<'r> {
    plan: &'r Plan,
    instruments: &'r Instruments,
    /// The workload of the cells in progress, by its index in the plan.
    workload: Option<(usize, Workload)>,
    /// Saturation per counted worker count: each measured once.
    saturations: Vec<(usize, f64)>,
    /// The (scenario, point) whose pipeline cells have run in this session.
    pipelines_run: Vec<usize>,
}

impl<'r> Runner<'r> {
    pub(super) fn new(
        config: &'r RunConfig,
        plan: &'r Plan,
        instruments: &'r Instruments,
        saturation_per_s: Option<f64>,
    ) -> Self {
        let saturations =
            saturation_per_s.map(|s| (saturation_workers(config), s)).into_iter().collect();
        Self { plan, instruments, workload: None, saturations, pipelines_run: Vec::new() }
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
        let at = &self.plan.points[cell.point];
        if self.workload.as_ref().map(|(held, _)| *held) != Some(workload) {
            // The last one is dropped first: a run holds one workload at a time.
            self.workload = None;
            let saturation = if cell.scenario.loads_of_saturation() {
                self.saturation_at(&at.config, progress)?
            } else {
                1.0
            };
            let spec = &self.plan.workloads[workload];
            let mut generated = spec.generate(&at.config.sizes, at.config.seed, saturation);
            generated.param = cell.key.full_param();
            self.workload = Some((workload, generated));
        }
        let (_, workload) = self.workload.as_ref().expect("generated above");
        progress.starting(cell);
        let memory = MemoryWatch::start();
        let config = &at.config;
        let measurement = measure(
            workload,
            cell.strategy,
            config.strategy,
            config.repetitions(),
            self.instruments,
        )?;
        let (mut result, histograms) = run_result(
            workload,
            cell.strategy.as_str(),
            &measurement,
            cell.settings.workers,
            cell.settings.window,
            system::cores(),
        );
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

    /// Runs the cells of the pipeline scenario at `point` that `ledger` does not hold yet
    /// (they share one log), recording each as it finishes.
    fn run_pipeline_point(
        &mut self,
        point: usize,
        progress: &mut dyn Observer,
        ledger: &mut Ledger<'_>,
        stopped: &dyn Fn() -> bool,
    ) -> Result<(), SuiteError> {
        let plan = self.plan;
        let at: &ScenarioPoint = &plan.points[point];
        let config = &at.config;
        let cells: Vec<(usize, &Cell)> = plan
            .cells
            .iter()
            .enumerate()
            .filter(|(_, cell)| cell.point == point && cell.skipped.is_none())
            .collect();
        let mut contenders: Vec<Design> = Vec::new();
        for (_, cell) in &cells {
            if !contenders.contains(&cell.strategy) {
                contenders.push(cell.strategy);
            }
        }
        let bench = crate::pipeline::Bench {
            sizes: &config.sizes,
            seed: config.seed,
            timer: &self.instruments.timer,
            strategy_config: config.strategy,
            watch: Default::default(),
        };
        let key =
            |param: &str, strategy: &str| CellKey::new(at.scenario, param, &at.label, strategy);
        let find = |param: &str, strategy: &str| {
            let key = key(param, strategy);
            cells.iter().find(|(_, cell)| cell.key == key).copied()
        };
        let to_do: Vec<usize> =
            cells.iter().map(|(index, _)| *index).filter(|&index| !ledger.is_done(index)).collect();
        // A failed save stops the scenario's other cells; its error is returned after.
        let failed = std::cell::Cell::new(false);
        let mut save_error = None;
        let mut wanted = |param: &str, strategy: Design| {
            !failed.get()
                && !stopped()
                && find(param, strategy.as_str()).is_some_and(|(index, _)| to_do.contains(&index))
        };
        crate::pipeline::run_scenario_where(
            at.scenario,
            &bench,
            &pipeline_plan(config),
            &contenders,
            &mut wanted,
            |run| {
                let Some((index, cell)) = find(&run.param, &run.strategy) else { return };
                let mut run = run.clone();
                run.param = cell.key.full_param();
                run.settings = Some(cell.settings.clone());
                let outcome = pipeline_outcome_line(&run);
                if let Err(error) = ledger.pipeline(index, run) {
                    failed.set(true);
                    save_error.get_or_insert(error);
                }
                progress.finished(cell, &outcome);
            },
        )?;
        match save_error {
            Some(error) => Err(error),
            None => Ok(()),
        }
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
        if run.projection.final_state_correct { "correct" } else { "WRONG" }
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
