//! The progress of a suite run on standard error: a bar on a terminal, plain lines
//! otherwise, each with the time elapsed and an estimate of the time left. The suite itself
//! prints nothing; this is the [`Observer`] the command line gives it.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

use crate::results::CellKey;
use crate::suite::{Cell, Observer};

/// Reports a run's progress on standard error: a bar on a terminal, plain lines otherwise,
/// each with the time elapsed and an estimate of the time left.
///
/// The estimate weighs every cell by its expected cost ([`Cell::estimate_s`]: the
/// workload's ideal bound x its repetitions plus a calibrated per-cell overhead; 0 for a
/// skipped cell), so a long cell left counts for more than a short one: time left = (time
/// the finished cells took / their expected cost) x the expected cost left ([`eta_s`]).
/// Until a cell with a cost has finished it says `estimating`.
#[derive(Debug, Default)]
pub struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
    /// When the run began (its first line), for the time elapsed.
    began: Option<Instant>,
    /// When the cells began, for the rate of the estimate.
    cells_began: Option<Instant>,
    /// The expected cost of each cell still to finish.
    costs: HashMap<CellKey, f64>,
    /// Expected cost of the finished cells, and of those left.
    done_cost_s: f64,
    left_cost_s: f64,
    /// Off a terminal, the line that says a long cell is still running.
    heartbeat: Option<Heartbeat>,
}

/// How often, at most, a run off a terminal stays silent: a cell running longer says so
/// this often.
pub const HEARTBEAT: Duration = Duration::from_secs(10);

/// Off a terminal, where no bar ticks, a thread that prints a line whenever the cell in
/// progress has run for another [`HEARTBEAT`] without one, so that a log read later (or a
/// CI job's watchdog) sees a long cell working, not a silent process.
#[derive(Debug)]
struct Heartbeat {
    state: Arc<(Mutex<Beat>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What the heartbeat thread knows: the cell in progress and since when, and when the last
/// line of the run was printed.
#[derive(Debug)]
struct Beat {
    cell: Option<(String, Instant)>,
    last_line: Instant,
    stop: bool,
}

impl Heartbeat {
    /// Starts the thread: a line through `say` after every `interval` with no other line.
    fn start(interval: Duration, say: impl Fn(&str) + Send + 'static) -> Self {
        let beat = Beat { cell: None, last_line: Instant::now(), stop: false };
        let state = Arc::new((Mutex::new(beat), Condvar::new()));
        let shared = Arc::clone(&state);
        let thread = std::thread::Builder::new()
            .name("keyed-bench-heartbeat".into())
            .spawn(move || Self::beat(&shared, interval, say))
            .ok();
        Self { state, thread }
    }

    /// The thread: a line through `say` whenever `interval` passes with no other line and a
    /// cell in progress, until told to stop.
    fn beat(shared: &(Mutex<Beat>, Condvar), interval: Duration, say: impl Fn(&str)) {
        let (beat, wake) = shared;
        let mut beat = beat.lock();
        while !beat.stop {
            let due = beat.last_line + interval;
            wake.wait_until(&mut beat, due);
            // Woken early (a line printed, a new cell, the end), or silent too long.
            if beat.stop || Instant::now() < beat.last_line + interval {
                continue;
            }
            if let Some((cell, since)) = &beat.cell {
                let running = clock(since.elapsed().as_secs_f64());
                say(&format!("{cell}: still running, {running} so far"));
            }
            beat.last_line = Instant::now();
        }
    }

    /// A line was printed (the clock restarts); `cell` is the cell now in progress.
    fn said(&self, cell: Option<String>) {
        let mut beat = self.state.0.lock();
        beat.last_line = Instant::now();
        beat.cell = cell.map(|cell| (cell, Instant::now()));
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.state.0.lock().stop = true;
        self.state.1.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A progress line on standard error; a failure to print (a reader of the pipe that a
/// Ctrl-C ended too) must not end the run before it saves.
fn say(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Seconds left of a run: `spent_s` (the time the finished cells took) per second of their
/// expected cost `done_cost_s`, times the expected cost left, `left_cost_s`. `None` until a
/// cell with a cost has finished.
pub fn eta_s(spent_s: f64, done_cost_s: f64, left_cost_s: f64) -> Option<f64> {
    (done_cost_s > 0.0).then(|| spent_s / done_cost_s * left_cost_s.max(0.0))
}

/// A duration as `45s`, `3m05s` or `1h02m`, rounded to the second.
pub fn clock(seconds: f64) -> String {
    let whole = seconds.max(0.0).round() as u64;
    match whole {
        0..=59 => format!("{whole}s"),
        60..=3_599 => format!("{}m{:02}s", whole / 60, whole % 60),
        _ => format!("{}h{:02}m", whole / 3_600, whole % 3_600 / 60),
    }
}

impl Progress {
    fn began(&mut self) -> Instant {
        *self.began.get_or_insert_with(Instant::now)
    }

    /// `~3m05s left`, or `estimating` before a cell with a cost has finished.
    fn left(&self) -> String {
        let spent_s = self.cells_began.map_or(0.0, |began| began.elapsed().as_secs_f64());
        match eta_s(spent_s, self.done_cost_s, self.left_cost_s) {
            Some(left_s) => format!("~{} left", clock(left_s)),
            None => "estimating".to_owned(),
        }
    }
}

impl Observer for Progress {
    fn planned(&mut self, cells: &[Cell]) {
        let began = self.began();
        self.cells_began = Some(Instant::now());
        self.total = cells.len();
        self.costs.clear();
        for cell in cells {
            self.costs.insert(cell.key.clone(), cell.estimate_s);
        }
        self.left_cost_s = cells.iter().map(|cell| cell.estimate_s).sum();
        self.done_cost_s = 0.0;
        self.bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(cells.len() as u64).with_elapsed(began.elapsed());
            bar.set_style(
                ProgressStyle::with_template(
                    "{clock} elapsed, {prefix} [{bar:30}] {pos}/{len} {msg}",
                )
                .expect("valid progress template")
                .with_key("clock", |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                    let _ = out.write_str(&clock(state.elapsed().as_secs_f64()));
                })
                .progress_chars("=> "),
            );
            bar.set_prefix(self.left());
            bar.enable_steady_tick(Duration::from_secs(1));
            bar
        });
        if self.bar.is_none() && self.heartbeat.is_none() {
            self.heartbeat = Some(Heartbeat::start(HEARTBEAT, say));
        }
    }

    fn note(&mut self, line: &str) {
        self.began();
        match &self.bar {
            Some(bar) => bar.println(line),
            None => say(line),
        }
    }

    fn starting(&mut self, cell: &Cell) {
        if let Some(bar) = &self.bar {
            bar.set_message(cell.key.to_string());
        }
        if let Some(heartbeat) = &self.heartbeat {
            heartbeat.said(Some(cell.key.to_string()));
        }
    }

    fn finished(&mut self, cell: &Cell, outcome: &str) {
        let began = self.began();
        self.done += 1;
        let cost = self.costs.remove(&cell.key).unwrap_or(0.0);
        let cell = &cell.key;
        self.done_cost_s += cost;
        self.left_cost_s -= cost;
        let left = self.left();
        match &self.bar {
            Some(bar) => {
                bar.inc(1);
                bar.set_prefix(left);
                bar.println(format!("{cell}: {outcome}"));
            }
            None => say(&format!(
                "[{:>3}/{}] {} elapsed, {left}: {cell}: {outcome}",
                self.done,
                self.total,
                clock(began.elapsed().as_secs_f64())
            )),
        }
        if let Some(heartbeat) = &self.heartbeat {
            heartbeat.said(None);
        }
    }

    fn done(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
        self.heartbeat = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::run::RunArgs;
    use crate::config::RunConfig;
    use crate::suite::plan;
    use crate::workload::ScenarioId;

    fn config(args: RunArgs) -> Result<RunConfig, crate::config::SettingError> {
        RunConfig::try_from((args, "test".into()))
    }

    fn args() -> RunArgs {
        RunArgs::defaults()
    }

    #[test]
    fn off_a_terminal_a_long_cell_says_it_is_still_running() {
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&lines);
        let heartbeat = Heartbeat::start(Duration::from_millis(20), move |line: &str| {
            sink.lock().push(line.to_owned());
        });
        heartbeat.said(Some("uniform inline".into()));
        std::thread::sleep(Duration::from_millis(300));
        heartbeat.said(None);
        let between_cells = lines.lock().len();
        assert!(between_cells >= 2, "{:?}", lines.lock());
        assert!(lines.lock().iter().all(|line| line.starts_with("uniform inline: still running")));
        // Between cells there is nothing to say.
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(lines.lock().len(), between_cells);
        drop(heartbeat);
    }

    #[test]
    fn the_time_left_weighs_each_cell_by_its_expected_cost() {
        // Nothing with a cost has finished (only skipped cells, cost 0): no estimate yet.
        assert_eq!(eta_s(0.0, 0.0, 50.0), None);
        assert_eq!(eta_s(3.0, 0.0, 50.0), None);
        // Two cells expected at 1 s each took 4 s: the run goes at 2 s per expected second,
        // so 3 s of expected cost left is 6 s, whatever the number of cells behind it.
        assert_eq!(eta_s(4.0, 2.0, 3.0), Some(6.0));
        // One long cell left (10 s expected) weighs as much as ten short ones.
        assert_eq!(eta_s(4.0, 2.0, 10.0), Some(20.0));
        assert_eq!(eta_s(4.0, 2.0, 0.0), Some(0.0));
        // A run faster than expected shortens the estimate.
        assert_eq!(eta_s(1.0, 4.0, 8.0), Some(2.0));
    }

    #[test]
    fn the_progress_follows_the_plan_cell_by_cell() {
        let config = config(RunArgs { quick: true, ..args() }).unwrap();
        let template = plan(&config, None).cells.remove(0);
        let cell = |param: &str, estimate_s: f64| Cell {
            key: CellKey::new(ScenarioId::Uniform, param, "", "inline"),
            skipped: (estimate_s == 0.0).then_some("skipped"),
            bound_s: estimate_s,
            estimate_s,
            ..template.clone()
        };
        let cells = [cell("a", 0.0), cell("b", 1.0), cell("c", 3.0), cell("d", 6.0)];
        let mut progress = Progress::default();
        progress.planned(&cells);
        assert_eq!(progress.left(), "estimating");
        progress.finished(&cells[0], "skipped");
        assert_eq!(progress.left(), "estimating");
        assert_eq!((progress.done_cost_s, progress.left_cost_s), (0.0, 10.0));
        progress.finished(&cells[1], "ok");
        assert_eq!((progress.done_cost_s, progress.left_cost_s), (1.0, 9.0));
        assert!(progress.left().ends_with(" left"), "{}", progress.left());
        progress.finished(&cells[2], "ok");
        progress.finished(&cells[3], "ok");
        assert_eq!((progress.done_cost_s, progress.left_cost_s), (10.0, 0.0));
        assert_eq!(progress.left(), "~0s left");
    }

    #[test]
    fn durations_read_as_a_clock() {
        assert_eq!(clock(0.2), "0s");
        assert_eq!(clock(45.4), "45s");
        assert_eq!(clock(72.0), "1m12s");
        assert_eq!(clock(185.0), "3m05s");
        assert_eq!(clock(3_725.0), "1h02m");
        assert_eq!(clock(-1.0), "0s");
    }
}
