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

use serde::{Deserialize, Serialize};
use strategies::StrategyConfig;

/// The cells a run may have unless `--max-cells` raises the limit: about five default
/// suites, so that a sweep that multiplies past it is a choice, not a typo.
pub const DEFAULT_MAX_CELLS: usize = 2_000;

/// The list-valued strategy settings of a run (`meta.sweep`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sweep {
    /// `--workers`.
    pub workers: Vec<usize>,
    /// `--throughput`.
    pub throughput: Vec<usize>,
    /// `--window`.
    pub window: Vec<usize>,
    /// `--idle-spin-us`.
    pub idle_spin_us: Vec<u32>,
    /// Whether `--window` was given: a scenario's own window then gives way to it.
    pub window_given: bool,
    /// The most cells the run may have (`--max-cells`).
    pub max_cells: usize,
}

/// One point of a sweep: the settings a cell ran with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Point {
    /// Worker threads per pool.
    pub workers: usize,
    /// Messages a mailbox runs per turn.
    pub throughput: usize,
    /// The admission window.
    pub window: usize,
    /// Microseconds an idle mailbox worker spins before it parks.
    pub idle_spin_us: u32,
}

/// What a scenario takes from the strategy settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Uses {
    /// Whether `--workers` sets its worker count (not when it fixes its own).
    pub workers: bool,
    /// Whether `--window` sets its window (not when it has its own and `--window` was not
    /// given).
    pub window: bool,
}

impl Uses {
    /// A scenario that takes every setting: the whole cross product.
    pub const ALL: Self = Self { workers: true, window: true };
}

impl Sweep {
    /// The sweep of one point: `strategy`'s settings.
    pub fn single(strategy: &StrategyConfig) -> Self {
        Self {
            workers: vec![strategy.workers],
            throughput: vec![strategy.throughput],
            window: vec![strategy.max_in_flight],
            idle_spin_us: vec![strategy.idle_spin_us],
            window_given: false,
            max_cells: DEFAULT_MAX_CELLS,
        }
    }

    /// Whether any setting has more than one value.
    pub fn is_sweep(&self) -> bool {
        self.swept().next().is_some()
    }

    /// The settings with more than one value, by flag.
    pub fn swept(&self) -> impl Iterator<Item = &'static str> + '_ {
        [
            ("workers", self.workers.len()),
            ("throughput", self.throughput.len()),
            ("window", self.window.len()),
            ("idle-spin-us", self.idle_spin_us.len()),
        ]
        .into_iter()
        .filter(|(_, values)| *values > 1)
        .map(|(flag, _)| flag)
    }

    /// The points a scenario that `uses` the settings so runs, in order (workers slowest,
    /// then throughput, window, idle spin): a setting it does not take keeps its first
    /// value, so that it is not run twice alike.
    pub fn points(&self, uses: Uses) -> Vec<Point> {
        let workers = if uses.workers { &self.workers[..] } else { &self.workers[..1] };
        let window = if uses.window { &self.window[..] } else { &self.window[..1] };
        let mut points = Vec::new();
        for (&workers, &throughput) in product(workers, &self.throughput) {
            for (&window, &idle_spin_us) in product(window, &self.idle_spin_us) {
                points.push(Point { workers, throughput, window, idle_spin_us });
            }
        }
        points
    }

    /// The label of `point` in a scenario that `uses` the settings so: `name=value` of
    /// each swept setting it takes, space-separated; empty outside a sweep.
    pub fn label(&self, point: &Point, uses: Uses) -> String {
        let mut parts = Vec::new();
        if uses.workers && self.workers.len() > 1 {
            parts.push(format!("workers={}", point.workers));
        }
        if self.throughput.len() > 1 {
            parts.push(format!("throughput={}", point.throughput));
        }
        if uses.window && self.window.len() > 1 {
            parts.push(format!("window={}", point.window));
        }
        if self.idle_spin_us.len() > 1 {
            parts.push(format!("idle-spin-us={}", point.idle_spin_us));
        }
        parts.join(" ")
    }
}

/// Every pair of a value of `slow` and one of `fast`, `slow` varying slowest.
fn product<'a, A, B>(slow: &'a [A], fast: &'a [B]) -> impl Iterator<Item = (&'a A, &'a B)> {
    slow.iter().flat_map(move |a| fast.iter().map(move |b| (a, b)))
}

impl Point {
    /// `strategy` with this point's settings.
    pub fn apply(&self, strategy: StrategyConfig) -> StrategyConfig {
        StrategyConfig {
            workers: self.workers,
            throughput: self.throughput,
            max_in_flight: self.window,
            idle_spin_us: self.idle_spin_us,
            ..strategy
        }
    }
}

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
