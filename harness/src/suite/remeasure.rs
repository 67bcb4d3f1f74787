//! One cell measured again, with the settings its file records: the gate's confirmation of
//! a failing wall-clock rule.

use strategies::Design;

use crate::config::RunConfig;
use crate::measure::metrics::run_result;
use crate::measure::runner::{measure, Instruments, RunError};
use crate::measure::system;
use crate::results::{CellKey, Results, RunResult};
use crate::workload::{ScenarioId, WorkloadSpec};

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

/// Measures `cell`'s scenario parameter and sweep point again for `strategies` (its own
/// strategy is not implied), with the settings and sizes of `recorded` and the saturation
/// rate `meta` records (the gate's confirmation of a failing wall-clock rule).
pub fn remeasure(
    recorded: &RunConfig,
    results: &Results,
    cell: &CellKey,
    strategies: &[Design],
) -> Result<Vec<RunResult>, RemeasureError> {
    let unavailable = RemeasureError::Unavailable;
    let meta = &results.meta;
    let param = cell.full_param();
    let param = param.as_str();
    // A cell of a sweep ran at its own point: its settings say which.
    let settings = results
        .runs
        .iter()
        .find(|run| CellKey::of_run(run).on(&cell.strategy) == *cell)
        .and_then(|run| run.settings.clone());
    let scenario: ScenarioId = cell.scenario.known().ok_or(unavailable("unknown scenario"))?;
    let mut strategy_config = recorded.strategy;
    let mut base = param.to_owned();
    if let Some(settings) = &settings {
        strategy_config = crate::sweep::Point {
            workers: settings.workers,
            throughput: settings.throughput,
            window: settings.window,
            idle_spin_us: settings.idle_spin_us,
        }
        .apply(strategy_config);
        base = settings.base_param(param).to_owned();
    }
    let spec = WorkloadSpec::all(scenario, &recorded.sizes)
        .into_iter()
        .find(|spec| spec.param == base)
        .ok_or_else(|| unavailable("no such parameter"))?;
    let saturation = meta.saturation_per_s.unwrap_or(1.0);
    let mut workload = spec.generate(&recorded.sizes, recorded.seed, saturation);
    if let Some(settings) = &settings {
        // A window other than the scenario's own was given on the command line.
        if workload.window.is_some_and(|own| own != settings.window) {
            workload.window = None;
        }
        param.clone_into(&mut workload.param);
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
