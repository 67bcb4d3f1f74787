//! The watchdog: every cell runs on the cell thread, one thread the run starts for its
//! cells, while the suite's own thread supervises it.
//!
//! # Protocol
//!
//! 1. **Hand over.** The suite gives the cell thread a job (one measured cell, or the cells
//!    of a pipeline scenario at one point of the sweep, which share one log) with a fresh
//!    [`Watch`], and waits for its reports: a cell starting, a cell finished (which the
//!    suite saves, on its own thread), the job's end. It wakes every [`TICK`] to read the
//!    watch's count of finished units of work (module `watch`).
//! 2. **No progress.** Once the count has not moved for the cell's timeout, the watchdog
//!    cancels the watch: the cell's loops return and its executors are force-closed. When
//!    the job has returned, the cell is recorded as failed with the reason, and the run goes
//!    on (the other cells of a pipeline scenario's point run on a fresh log).
//! 3. **Stop request.** After the first SIGINT or SIGTERM no job starts another cell, and
//!    the cell in progress gets [`Watchdog::stop_grace`] to finish; then it is cancelled
//!    too. It is then not done, neither measured nor failed: the run saves and stops, and a
//!    resumed run runs it.
//! 4. **Stall.** A completion-driven cell whose measured senders get no answer for its
//!    timeout gives up by itself (the watch's stall wait, module `watch`: its hot
//!    aggregate may keep the count moving): its job returns
//!    [`RunError::Stalled`], and the cell is recorded as failed with the reason, as in step
//!    2, and the run goes on.
//! 5. **Abandon.** A cancelled job that has not returned [`Watchdog::cancel_grace`] after
//!    the cancel (a strategy that ignores a forced close, a handler that never returns), or
//!    whose forced close has not, cannot be joined, and a cell run beside it would measure a
//!    machine it loads: the cell thread is left behind, and a cell that made no progress is
//!    recorded as failed (`abandoned`); the run then saves and ends
//!    ([`SuiteError::Abandoned`]). A process that ends there (`keyed-bench run` exits 1)
//!    takes the thread with it; a program that goes on keeps it, blocked where the cell's
//!    code is.
//!
//! A thread of its own, rather than the suite's, keeps the suite's thread free to save and
//! return whatever the cell's code does. One for the whole run, rather than one per cell,
//! keeps the process's thread count steady between cells: a cell's threads are counted
//! against those running before it starts, and a thread just joined may still be counted
//! for a moment.

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::plan::Cell;
use super::stop::StopSignal;
use super::SuiteError;
use crate::measure::runner::RunError;
use crate::results::failed::{no_progress_reason, unanswered_reason};
use crate::results::FailedCell;
use crate::watch::{Watch, Watchdog};

/// How often the suite's thread reads the watch of the cell in progress.
const TICK: Duration = Duration::from_millis(100);

/// How often a cancelled job's forced close is looked at while it may still finish.
const CLOSING_POLL: Duration = Duration::from_millis(10);

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The thread every cell of a run runs on (see the module docs).
#[derive(Debug)]
pub(super) struct CellThread {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl CellThread {
    /// Starts the thread, waiting for jobs.
    pub(super) fn start() -> Self {
        let (jobs, receive) = mpsc::channel::<Job>();
        let thread = thread::Builder::new()
            .name("keyed-bench-cell".into())
            .spawn(move || receive.into_iter().for_each(|job| job()))
            .unwrap_or_else(|error| panic!("cannot start the cell thread: {error}"));
        Self { jobs: Some(jobs), thread: Some(thread) }
    }

    /// Runs `job` on the thread.
    fn give(&self, job: Job) {
        let given = self.jobs.as_ref().is_some_and(|jobs| jobs.send(job).is_ok());
        assert!(given, "the cell thread takes no job after it was abandoned");
    }

    /// Leaves the thread behind, blocked in a job that does not return.
    fn abandon(&mut self) {
        self.jobs = None;
        self.thread = None; // a dropped handle detaches the thread
    }
}

impl Drop for CellThread {
    fn drop(&mut self) {
        self.jobs = None; // the thread's loop ends once its last job is done
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// What a job on the cell thread, or the watchdog, tells the suite's thread.
pub(super) enum Report<T> {
    /// Cell `index` of the plan starts.
    Starting(usize),
    /// Cell `index` finished with this.
    Finished(usize, T),
    /// A line for the run's progress (the watchdog stops a cell).
    Note(String),
}

/// What the job sends: its reports, each with the watch's count of units done when it was
/// sent, then how it ended.
enum Sent<T> {
    Report(Report<T>, u64),
    /// The job returned: after its last cell, or with an error.
    Ended(Result<(), SuiteError>),
    /// The job panicked, with this payload: the suite's thread panics with it.
    Panicked(Box<dyn Any + Send>),
}

/// What a job is given: the watch its cells count in, where it reports, and whether it may
/// start another cell.
pub(super) struct Reporter<T> {
    sender: mpsc::Sender<Sent<T>>,
    /// The suite's thread answers each finished cell here once it has saved it.
    saved: mpsc::Receiver<()>,
    /// The watch of the job's cells: counts their progress, and stops them.
    pub(super) watch: Watch,
    halt: Arc<AtomicBool>,
}

impl<T> Reporter<T> {
    /// Cell `index` starts.
    pub(super) fn starting(&self, index: usize) {
        let _ = self.sender.send(Sent::Report(Report::Starting(index), self.watch.done()));
    }

    /// Cell `index` finished with `value`; returns once the suite's thread has saved it
    /// (and heard whether to halt), as a run on one thread would.
    pub(super) fn finished(&self, index: usize, value: T) {
        let report = Report::Finished(index, value);
        if self.sender.send(Sent::Report(report, self.watch.done())).is_ok() {
            let _ = self.saved.recv();
        }
    }

    /// Whether the job must start no other cell: a stop was requested, or a save failed.
    pub(super) fn halted(&self) -> bool {
        // Acquire: pairs with the supervisor's Release stores (`check`, `Supervised::hear`).
        self.halt.load(Ordering::Acquire)
    }
}

/// How a supervised job ended.
#[derive(Debug)]
pub(super) enum Ending {
    /// It returned by itself: after its last cell, or with a cell's error (or a save of
    /// a finished cell failed).
    Returned(Result<(), SuiteError>),
    /// The watchdog cancelled it, and it returned. The cell that made no progress, with
    /// its failure; none where a stop request cancelled it, or the cell finished as it was
    /// cancelled.
    Cancelled(Option<(usize, FailedCell)>),
    /// Its cell gave up by itself, no measured command answered for its timeout
    /// ([`RunError::Stalled`]), and it returned: the cell, with its failure.
    Stalled(usize, FailedCell),
    /// Its cell failed with an error that ends the run, and it returned: the cell, with its
    /// failure, and the error (a broker that stopped answering would fail the cells after
    /// it too).
    Failed(usize, FailedCell, SuiteError),
    /// The watchdog cancelled it, and it did not return: the cell thread is left behind.
    /// The cell that made no progress, with its failure (`abandoned`); none where a stop
    /// request cancelled it.
    Abandoned(Option<(usize, FailedCell)>),
}

/// A cancel under way: when, why, and the thread that force-closes the executors.
struct Cancel {
    at: Instant,
    failure: Option<(usize, FailedCell)>,
    closing: Option<JoinHandle<()>>,
}

/// The cell in progress as the watchdog sees it.
struct Watching {
    index: usize,
    started: Instant,
    /// The watch's count of units done when the cell started.
    base: u64,
    /// The watch's moves last seen (`None`: none yet), and since when.
    seen: Option<u64>,
    since: Instant,
}

impl Watching {
    /// Cell `index`, started when the watch counted `done` units.
    fn new(index: usize, done: u64) -> Self {
        let now = Instant::now();
        Self { index, started: now, base: done, seen: None, since: now }
    }

    /// Reads the watch: restarts the clock where it moved.
    fn look(&mut self, watch: &Watch) {
        let moves = watch.moves();
        if self.seen != Some(moves) {
            (self.seen, self.since) = (Some(moves), Instant::now());
        }
    }
}

/// Supervises the jobs of a run on its cell thread (see the module docs).
pub(super) struct Supervisor<'s> {
    thread: CellThread,
    settings: Watchdog,
    stop: Option<&'s StopSignal>,
    /// When this run first saw a stop request.
    stop_seen: Option<Instant>,
}

/// What the watchdog needs of the cells a job runs: the plan's cells, each one's timeout,
/// and what its progress counts.
pub(super) struct Cells<'c> {
    /// The plan's cells.
    pub(super) cells: &'c [Cell],
    /// The no-progress timeout of a cell of the plan, by index.
    pub(super) timeout: &'c dyn Fn(usize) -> Duration,
    /// What a unit of the job's progress is: `messages`, `records`.
    pub(super) unit: &'static str,
}

impl<'s> Supervisor<'s> {
    /// A supervisor with `settings`, hearing stop requests from `stop`; starts the cell
    /// thread.
    pub(super) fn new(settings: Watchdog, stop: Option<&'s StopSignal>) -> Self {
        Self { thread: CellThread::start(), settings, stop, stop_seen: None }
    }

    /// Whether a stop was requested.
    pub(super) fn stop_requested(&self) -> bool {
        self.stop.and_then(StopSignal::requested).is_some()
    }

    /// Runs `job` on the cell thread, starting with cell `first`, and supervises it until
    /// it ends; every report goes to `heard` on this thread, in order. A report that
    /// `heard` fails on (a save) halts the job, and the error is its ending's.
    pub(super) fn run<T: Send + 'static>(
        &mut self,
        cells: &Cells<'_>,
        first: usize,
        job: impl FnOnce(&Reporter<T>) -> Result<(), SuiteError> + Send + 'static,
        heard: &mut dyn FnMut(Report<T>) -> Result<(), SuiteError>,
    ) -> Ending {
        let (sender, receiver) = mpsc::channel();
        let (answer, saved) = mpsc::channel();
        // A measured job runs one cell: its driver's stall wait is that cell's timeout.
        let watch = Watch::with_stall((cells.timeout)(first));
        let halt = Arc::new(AtomicBool::new(false));
        let reporter = Reporter { sender, saved, watch: watch.clone(), halt: Arc::clone(&halt) };
        self.thread.give(Box::new(move || {
            let ended = match catch_unwind(AssertUnwindSafe(|| job(&reporter))) {
                Ok(result) => Sent::Ended(result),
                Err(payload) => Sent::Panicked(payload),
            };
            let _ = reporter.sender.send(ended);
        }));
        // A fresh watch: the first cell starts at 0.
        let watching = Watching::new(first, 0);
        let mut job = Supervised { watch, halt, answer, watching, cancel: None, failed_save: None };
        loop {
            match receiver.recv_timeout(TICK) {
                Ok(Sent::Report(report, done)) => job.hear(report, done, self.stop, heard),
                Ok(Sent::Ended(result)) => return self.ended(cells, result, job),
                Ok(Sent::Panicked(payload)) => resume_unwind(payload),
                Err(RecvTimeoutError::Timeout) => {}
                // The job reports its end before its sender goes: not reached.
                Err(RecvTimeoutError::Disconnected) => return self.ended(cells, Ok(()), job),
            }
            job.watching.look(&job.watch);
            if let Some(ending) = self.check(cells, &mut job, heard) {
                return ending;
            }
        }
    }

    /// The ending of `job`, which returned `result`.
    fn ended(
        &mut self,
        cells: &Cells<'_>,
        result: Result<(), SuiteError>,
        job: Supervised,
    ) -> Ending {
        if let Some(error) = job.failed_save {
            return Ending::Returned(Err(error));
        }
        let Some(mut cancel) = job.cancel else {
            return match result {
                Err(SuiteError::Run(RunError::Stalled { waited, .. })) => {
                    let index = job.watching.index;
                    let failed = failure(&cells.cells[index], cells.unit, &job, waited);
                    let done = failed.done;
                    let reason = unanswered_reason(waited.as_secs_f64(), done, cells.unit);
                    Ending::Stalled(index, FailedCell { reason, ..failed })
                }
                Err(SuiteError::Run(RunError::External { reason, .. })) => {
                    // The driver failed this cell; the next cell starts a driver afresh.
                    let index = job.watching.index;
                    let timeout = (cells.timeout)(index);
                    let failed = failure(&cells.cells[index], cells.unit, &job, timeout);
                    Ending::Stalled(index, FailedCell { reason, ..failed })
                }
                Err(SuiteError::Pipeline(error)) if error.external_failure().is_some() => {
                    // As a driver's failed cell above: the next cell starts its own driver.
                    let index = job.watching.index;
                    let timeout = (cells.timeout)(index);
                    let failed = failure(&cells.cells[index], cells.unit, &job, timeout);
                    Ending::Stalled(index, FailedCell { reason: error.to_string(), ..failed })
                }
                Err(SuiteError::Pipeline(error)) if error.broker_failure().is_some() => {
                    let index = job.watching.index;
                    let timeout = (cells.timeout)(index);
                    let failed = failure(&cells.cells[index], cells.unit, &job, timeout);
                    let reason = error.to_string();
                    Ending::Failed(index, FailedCell { reason, ..failed }, error.into())
                }
                result => Ending::Returned(result),
            };
        };
        // Its forced close may still run: it gets what is left of the grace.
        if let Some(closing) = cancel.closing.take() {
            while !closing.is_finished() && cancel.at.elapsed() < self.settings.cancel_grace {
                thread::sleep(CLOSING_POLL);
            }
            if !closing.is_finished() {
                return self.abandon(cancel.failure);
            }
        }
        Ending::Cancelled(cancel.failure)
    }

    /// Leaves the cell thread behind: the ending of a job that would not return.
    fn abandon(&mut self, failure: Option<(usize, FailedCell)>) -> Ending {
        self.thread.abandon();
        Ending::Abandoned(
            failure.map(|(index, failed)| (index, FailedCell { abandoned: true, ..failed })),
        )
    }

    /// What the watchdog does at a tick: abandons a cancelled job past its grace; halts the
    /// job on a stop request, and cancels the cell in progress once the request is older
    /// than the stop grace, or once it made no progress for its timeout.
    fn check<T>(
        &mut self,
        cells: &Cells<'_>,
        job: &mut Supervised,
        heard: &mut dyn FnMut(Report<T>) -> Result<(), SuiteError>,
    ) -> Option<Ending> {
        if let Some(cancel) = &mut job.cancel {
            let overdue = cancel.at.elapsed() >= self.settings.cancel_grace;
            return overdue.then(|| self.abandon(cancel.failure.take()));
        }
        let cell = &cells.cells[job.watching.index];
        if let Some(by) = self.stop.and_then(StopSignal::requested) {
            // Release: pairs with the Acquire load of `Reporter::halted`.
            job.halt.store(true, Ordering::Release);
            let asked = *self.stop_seen.get_or_insert_with(Instant::now);
            if asked.elapsed() >= self.settings.stop_grace {
                let grace = self.settings.stop_grace.as_secs_f64();
                let _ = heard(Report::Note(format!(
                    "{}: still running {grace:.0} s after {by}: stopping it; it is not done",
                    cell.key
                )));
                job.cancel_for(None);
            }
            return None;
        }
        let timeout = (cells.timeout)(job.watching.index);
        if job.watching.since.elapsed() >= timeout {
            let failed = failure(cell, cells.unit, job, timeout);
            let _ = heard(Report::Note(format!("{}: {}: stopping it", cell.key, failed.reason)));
            job.cancel_for(Some((job.watching.index, failed)));
        }
        None
    }
}

/// A job under supervision: its watch, the cell in progress, a cancel under way, and the
/// first save that failed.
struct Supervised {
    watch: Watch,
    halt: Arc<AtomicBool>,
    /// Tells the job that a finished cell was saved.
    answer: mpsc::Sender<()>,
    watching: Watching,
    cancel: Option<Cancel>,
    failed_save: Option<SuiteError>,
}

impl Supervised {
    /// Hands `report`, sent when the watch counted `done`, to `heard`; a cell starting
    /// restarts the watch's clock, a cell that finishes after it was cancelled for making
    /// no progress did not fail after all, and a report `heard` fails on halts the job, as
    /// does a stop request of `stop` (heard before a finished cell's job goes on: `heard`
    /// may be what asks for it).
    fn hear<T>(
        &mut self,
        report: Report<T>,
        done: u64,
        stop: Option<&StopSignal>,
        heard: &mut dyn FnMut(Report<T>) -> Result<(), SuiteError>,
    ) {
        let finished = matches!(report, Report::Finished(..));
        match (&report, &mut self.cancel) {
            (Report::Starting(index), _) => self.watching = Watching::new(*index, done),
            (Report::Finished(index, _), Some(cancel)) => cancel.forgive(*index),
            _ => {}
        }
        let heard = heard(report);
        let stopping = stop.and_then(StopSignal::requested).is_some();
        if heard.is_err() || stopping {
            // Release: pairs with the Acquire load of `Reporter::halted`.
            self.halt.store(true, Ordering::Release);
        }
        if let Err(error) = heard {
            self.failed_save.get_or_insert(error);
        }
        if finished {
            let _ = self.answer.send(());
        }
    }

    /// Cancels the job, for `failure` (none: a stop request).
    fn cancel_for(&mut self, failure: Option<(usize, FailedCell)>) {
        let closing = self.watch.cancel();
        self.cancel = Some(Cancel { at: Instant::now(), failure, closing });
    }
}

impl Cancel {
    /// Cell `index` finished after all: if it was the one cancelled, it did not fail.
    fn forgive(&mut self, index: usize) {
        if self.failure.as_ref().is_some_and(|(stalled, _)| *stalled == index) {
            self.failure = None;
        }
    }
}

/// The failure of `cell`, the cell in progress of `job`, which made no progress for
/// `timeout`.
fn failure(cell: &Cell, unit: &str, job: &Supervised, timeout: Duration) -> FailedCell {
    let (watch, watching) = (&job.watch, &job.watching);
    let done = watch.done().saturating_sub(watching.base);
    let expected = watch.expected();
    let timeout_s = timeout.as_secs_f64();
    FailedCell {
        scenario: cell.key.scenario.as_str().into(),
        param: cell.key.full_param(),
        strategy: cell.key.strategy.clone(),
        reason: no_progress_reason(timeout_s, done, expected, unit),
        unit: unit.into(),
        done,
        expected,
        timeout_s,
        elapsed_s: watching.started.elapsed().as_secs_f64(),
        abandoned: false,
    }
}
