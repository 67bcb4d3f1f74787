//! The suite: every selected cell measured (or run, for a pipeline) in turn, each saved as
//! it finishes, into `results.json`, `summary.md` and the histograms of the output folder.
//!
//! # Protocol
//!
//! 1. **Plan** ([`plan()`]): the settings alone give every cell, in order, with its
//!    [`CellKey`](crate::results::CellKey), its point of the sweep, its workload (a
//!    [`WorkloadSpec`](crate::workload::WorkloadSpec), no message yet), its settings, why it
//!    is skipped and its expected cost. Counting cells (`--max-cells`), `--dry-run` and the
//!    progress estimate stop here: nothing is generated.
//! 2. **Prepare** ([`output`]): the run takes the output folder's lock (one run per
//!    folder), then creates it and checks it writable before anything is measured; a fresh
//!    run removes what an earlier run wrote there (refusing to destroy an incomplete run or
//!    to write among others' files unless told to overwrite), a resumed one keeps it. The run's calibrations follow (the recorder's cost, open-loop's
//!    saturation), unless a resumed file records them. They run on the suite's own thread,
//!    not under the watchdog, because they cannot wait on anything that may never come:
//!    both run the built-in `inline` (each message runs inside `submit`, on the calling
//!    thread) with the harness's own handler, on jobs that never wait (no-ops for the
//!    recorder's cost, `uniform`'s spins for the saturation); no registered design and no
//!    timer step takes part, so every message ends within its spin and the only other wait
//!    is a strategy's threads leaving, bounded at 2 s. Each is announced before it starts.
//! 3. **Run** (`run.rs`): the plan's cells in order. A workload is generated when the first
//!    of its cells runs, and dropped when the next one is needed; a pipeline scenario's
//!    cells at one point run together over one log.
//!    Each cell runs on the run's cell thread under a watchdog (`watchdog.rs`): a cell
//!    that makes no progress for its timeout is cancelled and recorded as failed, and the
//!    run goes on.
//! 4. **Save** (`ledger.rs`): after every cell, `results.json` is replaced whole (written
//!    aside, then renamed), holding every cell done in plan order and marked incomplete
//!    (`meta.incomplete` lists the missing cells) until the last. A stop request
//!    ([`StopSignal`]) is heard between cells, and by the watchdog, which cancels the cell in
//!    progress once it has had its grace; the run then saves, writes `summary.md` and
//!    returns.
//! 5. **Resume** ([`Control::earlier`]): an incomplete file of the same settings is matched
//!    to the plan cell by cell ([`ledger::match_earlier`]); its cells are kept and only the
//!    missing ones run, merged in plan order. A cell the plan has no place for, or one that
//!    records other settings than its planned cell ([`agree`]), refuses the resume.

pub mod agree;
pub(crate) mod ledger;
pub(crate) mod meta;
pub mod output;
mod plan;
mod remeasure;
mod run;
mod stop;
mod watchdog;

use std::time::Instant;

use crate::config::RunConfig;
use crate::measure::interference::Probe;
use crate::measure::runner::{recorder_overhead_ns, Instruments, RunError};
use crate::results::{Calibration, Results};
use ledger::Ledger;
pub use meta::now_rfc3339;
pub use output::{check_output, command_line, prepare_output, resume_hint, OutputLock, Start};
pub use plan::{
    measured_bytes, pipeline_bytes, plan, skip_reason, Cell, Plan, ScenarioPoint, CELL_OVERHEAD_S,
    PIPELINE_BYTES_PER_KEY, PIPELINE_BYTES_PER_RECORD, PIPELINE_RECORD_S,
    REFERENCE_SATURATION_PER_WORKER,
};
pub use remeasure::{remeasure, RemeasureError};
use run::{measure_saturation, Runner};
pub use stop::StopSignal;

/// Hears how a suite run goes, to show it (a progress bar, log lines); the suite itself
/// prints nothing.
pub trait Observer {
    /// The run will measure `cells`, in this order (skipped ones included), each with
    /// its expected cost.
    fn planned(&mut self, _cells: &[Cell]) {}
    /// Something worth a line that is not a cell (a calibration starting).
    fn note(&mut self, line: &str);
    /// A cell starts.
    fn starting(&mut self, _cell: &Cell) {}
    /// A cell finished (or was skipped), with a one-line outcome.
    fn finished(&mut self, cell: &Cell, outcome: &str);
    /// Every cell is done.
    fn done(&mut self) {}
}

/// An observer that shows nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl Observer for Quiet {
    fn note(&mut self, _line: &str) {}
    fn finished(&mut self, _cell: &Cell, _outcome: &str) {}
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
    /// A cell's results could not be saved (a full disk, a folder removed under the run):
    /// a failure of the run, not of its input. The cell is not in the file, and its
    /// histograms were removed.
    #[error("cannot save {path}")]
    Save {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A cell made no progress, and its code did not return after it was cancelled: its
    /// thread was left behind, the cell is recorded as failed, and the run ended there.
    #[error(
        "{cell}: {reason}, and it did not stop within {grace_s} s of being cancelled (a \
         strategy that ignores a forced close, or a handler that never returns); the run \
         ended there"
    )]
    Abandoned {
        /// The cell.
        cell: String,
        /// Why it was cancelled.
        reason: String,
        /// The seconds it had to return.
        grace_s: u64,
    },
    /// Another run holds the output folder's lock.
    #[error(
        "{out} is in use by another run ({holder}); wait for it to end, or give another --out"
    )]
    Locked {
        /// The output folder.
        out: String,
        /// Who holds it, as its lock file says.
        holder: String,
    },
    /// A fresh run would destroy work in its output folder ([`output::check_output`]).
    #[error("{why}")]
    Occupied {
        /// What the folder holds, and what to do.
        why: String,
    },
    /// The earlier results a run was to complete hold cells it does not plan (another
    /// run's).
    #[error("the earlier results hold cells this run does not plan: {}", cells.join(", "))]
    NotPlanned {
        /// The cells, `scenario [param] strategy`.
        cells: Vec<String>,
    },
}

impl SuiteError {
    /// Whether the error is the user's to fix before running again (the output folder,
    /// the earlier results), not a failure of a measurement: exit 2, not 1.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Self::Write { .. }
                | Self::Locked { .. }
                | Self::Occupied { .. }
                | Self::NotPlanned { .. }
        )
    }
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
    /// Once raised, the run stops after the cell in progress (cancelled if it runs past
    /// the watchdog's stop grace), saves what it has (marked incomplete) and returns.
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
/// returns what it saved; one where a cell fails saves what it has before the error. A
/// cell the watchdog stopped is in `failed[]`; one it could not stop ends the run with
/// [`SuiteError::Abandoned`], its thread left behind (module `watchdog`).
pub fn run_suite_with(
    config: &RunConfig,
    progress: &mut dyn Observer,
    control: Control<'_>,
) -> Result<Outcome, SuiteError> {
    let Control { stop, earlier } = control;
    let (lock, taken_over) = OutputLock::take(&config.out, &config.command)?;
    if let Some(note) = taken_over {
        progress.note(&note);
    }
    // Exiting at once (a second signal) removes the lock file, as dropping the lock does.
    let _released = Released::on_drop(stop, &lock);
    prepare_output(&config.out, Start::of(config.overwrite, earlier.is_some()))?;
    let suite_started = Instant::now();
    let created = now_rfc3339();
    let instruments = std::sync::Arc::new(Instruments::with_timer_threads(config.timer_threads));
    let mut notes = Vec::new();
    let loads_of_saturation = config.scenarios.iter().any(|s| s.loads_of_saturation());
    if loads_of_saturation {
        notes.push(format!(
            "open-loop saturation counts {} worker(s): min(workers, cores - 1), since the \
             producer thread needs a core of its own",
            plan::saturation_workers(config)
        ));
    }

    // A resumed run keeps the earlier session's calibrations: its cells were measured, and
    // its open-loop loads generated, with them.
    let recorded = earlier.as_ref().map(|earlier| &earlier.meta);
    let mut calibrations = recorded.map(|meta| meta.calibrations.clone()).unwrap_or_default();
    let mut calibrate = |what: &str, measure: &mut dyn FnMut() -> Result<f64, SuiteError>| {
        let probe = Probe::start();
        let value = measure()?;
        calibrations.push(Calibration { what: what.into(), interference: probe.receipt() });
        Ok::<f64, SuiteError>(value)
    };
    let recorder_overhead_ns = match recorded.and_then(|meta| meta.recorder_overhead_ns) {
        Some(overhead) => overhead,
        None => {
            progress.note("measuring the recorder's own cost (inline, no-op handler)");
            calibrate("recorder overhead", &mut || Ok(recorder_overhead_ns(&instruments)))?
        }
    };
    let saturation_per_s = match recorded.and_then(|meta| meta.saturation_per_s) {
        Some(saturation) => Some(saturation),
        None if loads_of_saturation => {
            progress.note("measuring saturation (inline on uniform) for open-loop loads");
            Some(calibrate("saturation", &mut || measure_saturation(config, &instruments))?)
        }
        None => None,
    };
    notes.extend(
        config.scenarios.iter().filter_map(|scenario| scenario.spec().note?(&config.sizes)),
    );
    let mut meta =
        meta::suite_meta(config, created, Some(recorder_overhead_ns), saturation_per_s, notes);
    meta.calibrations = calibrations;
    let plan = plan(config, saturation_per_s);
    let mut ledger = Ledger::new(&config.out, &plan.cells, meta, earlier, stop, suite_started)?;
    progress.planned(&ledger.to_run());
    ledger.save()?;

    let stopped = || stop.and_then(StopSignal::requested).is_some();
    let mut runner = Runner::new(config, &plan, &instruments, saturation_per_s, stop);
    let ran = runner.run(progress, &mut ledger, &stopped);
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

/// Tells a stop signal that its run holds the output lock until this is dropped (the lock
/// itself is dropped just after, with the run's other locals).
struct Released<'a> {
    stop: Option<&'a StopSignal>,
}

impl<'a> Released<'a> {
    fn on_drop(stop: Option<&'a StopSignal>, lock: &OutputLock) -> Self {
        if let Some(stop) = stop {
            stop.holding(Some(lock.path().to_path_buf()));
        }
        Self { stop }
    }
}

impl Drop for Released<'_> {
    fn drop(&mut self) {
        if let Some(stop) = self.stop {
            stop.holding(None);
        }
    }
}
