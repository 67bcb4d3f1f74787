//! Sweeps: the strategy settings that decide between designs (`--workers`,
//! `--throughput`, `--window`, `--idle-spin-us`) each take a list, and the suite runs every
//! scenario at each point of their cross product. (`--keys` is a workload size: a list of
//! key counts gives uniform, zipf and open-loop one cell per count, param `keys=N`.)
//!
//! A scenario runs only the points that change it: parallel-consumer has its own threads,
//! so a workers sweep leaves it alone; async-io, async-io-zipf and parallel-consumer keep
//! their own window unless `--window` is given. A cell of a sweep carries its point in
//! its param (`workers=4 throughput=16`, after the scenario's own param), so tables, charts,
//! gates, baselines and `compare` tell the points apart, and records it in `settings`.
//!
//! The swept settings are the `swept` rows of the run settings table
//! ([`run_settings!`](crate::limits::settings::run_settings)), which generates the types
//! below, their points and their labels.

use serde::{Deserialize, Serialize};
use strategies::StrategyConfig;

use crate::limits::settings::{run_settings, sweep_types};

/// The cells a run may have unless `--max-cells` raises the limit: about five default
/// suites, so that a sweep that multiplies past it is a choice, not a typo.
pub const DEFAULT_MAX_CELLS: usize = 2_000;

// `Sweep`, `Point` and `Uses`, each a field per swept setting of the table.
run_settings!(swept => sweep_types);

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep() -> Sweep {
        Sweep {
            workers: vec![1, 2],
            throughput: vec![1, 16, 64],
            window: vec![64],
            idle_spin_us: vec![50],
            window_given: false,
            max_cells: DEFAULT_MAX_CELLS,
        }
    }

    #[test]
    fn points_are_the_cross_product_of_what_a_scenario_takes() {
        let sweep = sweep();
        assert!(sweep.is_sweep());
        assert_eq!(sweep.swept().collect::<Vec<_>>(), ["workers", "throughput"]);
        let points = sweep.points(Uses::ALL);
        assert_eq!(points.len(), 6);
        assert_eq!(points[1], Point { workers: 1, throughput: 16, window: 64, idle_spin_us: 50 });
        assert_eq!(sweep.label(&points[1], Uses::ALL), "workers=1 throughput=16");
        let own_threads = Uses { workers: false, window: true };
        assert_eq!(sweep.points(own_threads).len(), 3, "a scenario's own workers are not swept");
        assert_eq!(sweep.label(&points[1], own_threads), "throughput=16");
        let single = Sweep::single(&StrategyConfig::with_workers(2));
        assert!(!single.is_sweep());
        assert_eq!(single.points(Uses::ALL).len(), 1);
        assert_eq!(single.label(&single.points(Uses::ALL)[0], Uses::ALL), "");
    }
}
