//! One cell measured again, with the settings its file records: the gate's confirmation of
//! a failing wall-clock rule.

use std::time::Duration;

use strategies::{Design, StrategyConfig};

use super::plan::CELL_OVERHEAD_S;
use crate::config::RunConfig;
use crate::measure::metrics::{ideal_seconds, run_result, Capacity};
use crate::measure::runner::{measure_watched, Instruments, RunError};
use crate::measure::system;
use crate::results::{CellKey, Results, RunResult};
use crate::watch::Watch;
use crate::workload::{ScenarioId, Workload, WorkloadSpec};

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
            let stall = confirmation_stall(recorded, &workload, strategy, strategy_config);
            let measurement = measure_watched(
                &workload,
                strategy,
                strategy_config,
                recorded.confirmation(),
                &instruments,
                &Watch::with_stall(stall),
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

/// How long a completion-driven cell measured again waits for an answer to a measured
/// sender's command before it gives up: the no-progress timeout the run's watchdog gives
/// the cell ([`crate::watch::Watchdog::timeout_of`]), from the cell's estimate (the
/// workload's ideal time for each repetition, plus a cell's overhead) and the longest wait
/// its sizes allow, and at least [`crate::watch::MIN_CELL_TIMEOUT_S`]. A cell that runs
/// long by its sizes is not given up on early, and a stuck one is not waited on for ever.
fn confirmation_stall(
    recorded: &RunConfig,
    workload: &Workload,
    strategy: Design,
    config: StrategyConfig,
) -> Duration {
    let scope = config.window_scope.unwrap_or(strategy.descriptor().window_scope);
    let workers = workload.workers.unwrap_or(config.workers);
    let window = workload.window.unwrap_or(config.max_in_flight);
    let repetitions = recorded.confirmation().repeat as f64;
    let estimate_s = ideal_seconds(workload, Capacity::new(workers, window, scope)) * repetitions
        + CELL_OVERHEAD_S;
    recorded.watchdog.timeout_of(estimate_s, &recorded.sizes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::watch::{CELL_TIMEOUT_FACTOR, MIN_CELL_TIMEOUT_S};
    use strategies::StrategyId;

    /// The quick run, with cold-command senders sending for `cold_duration_ms`, `repeat`
    /// times.
    fn recorded(cold_duration_ms: u64, repeat: usize) -> RunConfig {
        let args = crate::cli::run::RunArgs { quick: true, ..Default::default() };
        let mut config = RunConfig::try_from((args, "test".to_owned())).unwrap();
        config.sizes.cold_duration_ms = cold_duration_ms;
        config.repeat = repeat;
        config
    }

    /// The confirmation stall of the first cold-command cell of `config`, for keyed-mailbox.
    fn stall_of(config: &RunConfig) -> Duration {
        let spec = WorkloadSpec::all(ScenarioId::ColdCommand, &config.sizes).remove(0);
        let workload = spec.generate(&config.sizes, config.seed, 1.0);
        assert!(workload.driven.is_some(), "cold-command is completion-driven");
        confirmation_stall(config, &workload, StrategyId::KeyedMailbox.into(), config.strategy)
    }

    #[test]
    fn a_long_completion_driven_cell_is_waited_on_as_long_as_its_watchdog_would() {
        // Senders that send for 30 s, three times: the cell's estimate is 90 s and more.
        let config = recorded(30_000, 3);
        let estimate_s = 3.0 * 30.0 + CELL_OVERHEAD_S;
        let stall = stall_of(&config).as_secs_f64();
        assert!((stall - CELL_TIMEOUT_FACTOR * estimate_s).abs() < 1e-6, "{stall}");
        assert!(stall > 10.0 * MIN_CELL_TIMEOUT_S, "{stall}");
        // Longer senders, a longer wait: it follows the cell, not a fixed figure.
        let longer = stall_of(&recorded(60_000, 3)).as_secs_f64();
        assert!((longer - CELL_TIMEOUT_FACTOR * (180.0 + CELL_OVERHEAD_S)).abs() < 1e-6);
    }

    #[test]
    fn a_short_completion_driven_cell_gets_the_floor() {
        // The quick sizes: 200 ms of sending, far below the floor once multiplied.
        let stall = stall_of(&recorded(200, 1));
        assert_eq!(stall, Duration::from_secs_f64(MIN_CELL_TIMEOUT_S));
    }

    #[test]
    fn a_given_cell_timeout_is_the_confirmations_too() {
        let mut config = recorded(30_000, 3);
        config.watchdog.cell_timeout = Some(Duration::from_secs(7));
        assert_eq!(stall_of(&config), Duration::from_secs(7));
    }
}
