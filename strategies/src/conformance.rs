//! The conformance check as a library function: [`check`] runs a [`Design`] through the
//! contract (crate docs, "The contract") and says, check by check, whether it kept it, so a
//! user who wrote an executor learns that it is correct before measuring it.
//!
//! ```no_run
//! use strategies::{conformance, Descriptor, Design, Family, StrategyId, Threads};
//!
//! // In a test of your own crate: register your design once, then check it.
//! let descriptor = Descriptor::custom(
//!     "my-executor",
//!     "per-key mailboxes on my own scheduler",
//!     Family::Mailboxes,
//!     true,
//!     Threads::SharedPool,
//! );
//! let design = Design::register(descriptor, |config, handler| {
//!     StrategyId::KeyedMailbox.build(config, handler) // yours goes here
//! })
//! .unwrap();
//! match conformance::check(design) {
//!     Ok(passed) => println!("{passed}"),
//!     Err(failed) => panic!("{failed}"), // one line per check, the failed ones say why
//! }
//! ```
//!
//! # What it checks
//!
//! Every check builds its own strategy through [`Design::build`], with [`WORKERS`] workers
//! and the window it names, and a handler of its own that records, for every message,
//! when it started (the handler call) and ended (the call returned done, or its pending
//! step completed, or it panicked). Each runs on a thread of its own under a deadline
//! ([`Options::deadline`]): an executor that deadlocks fails that check, "did not finish
//! within N s", and the check goes on with the next one, leaving the stuck thread (and the
//! strategy it holds) behind. Pending steps wait on the check's own timer thread or on a
//! gate the check opens, so waits complete from another thread than the one that runs the
//! handler, as real I/O does. What the descriptor says decides what applies: `ordered`
//! the order checks, `threads` the thread budget.
//!
//! 1. [`Check::ExactlyOnce`]: 3,000 messages over 300 keys of 3 aggregate types, 6 of them
//!    hot (a quarter of the messages), from 2 submitting threads that each own their keys,
//!    synchronous handlers. After `drain` and `close`, every accepted message started
//!    exactly once and ended: none lost, none duplicated, nothing ran that was not
//!    submitted, and an open strategy handed nothing back.
//! 2. [`Check::Order`]: 20,000 messages over 200 keys (4 hot: 30%), synchronous handlers.
//!    No message of a key started while another of the key had started and not ended (an
//!    *overlap*), and none started after a later one of its key (*out of order*: its first
//!    start below the highest `seq` its key had started; a lost message counts only as
//!    lost, in check 1).
//! 3. [`Check::OrderWithWaits`]: check 2 with 2,000 messages, a third of which return
//!    [`Outcome::Pending`] and complete up to 300 us later from the timer thread: a wait
//!    must not let the key's next message start. Both order checks are skipped for a
//!    design whose descriptor does not promise order.
//! 4. [`Check::Window`]: with a window of 8, 12 messages that stay pending until the
//!    check releases them are submitted from 12 threads: exactly 8 are admitted (their
//!    `submit` returned, or their handler started) and the other 4 `submit`s block until
//!    the release. Then 600 messages, most of them waiting, never have more than 8 started
//!    and unfinished at once, counted from the handler's side (per aggregate type when the
//!    descriptor's window scope is [`WindowScope::Type`]).
//! 5. [`Check::Reentrant`]: 16 chains of 30 messages through a window of 8, each message's
//!    handler submitting its chain's next one into its own strategy (half from the call,
//!    half from the pending step's poll). Once 8 chains are admitted every such submission
//!    meets a full window, and the credits come back only when messages that are about to
//!    submit have finished, so an executor that blocks a re-entrant `submit` on the window
//!    deadlocks. All 480 run once, in chain order for an ordered design, and no
//!    re-entrant submission is refused.
//! 6. [`Check::DrainAndClose`]: `drain` returns only when every accepted message has
//!    ended (a third of them waiting), and the strategy stays open after it; `close`
//!    finishes what it accepted (`stats()` count nothing failed, discarded or abandoned),
//!    then hands every later message back in [`SubmitError::Closed`], the very message
//!    submitted, without running it; a second `close` returns, and a `force_close` after
//!    it reports zeros.
//! 7. [`Check::ForceClose`]: `force_close` while 2 synchronous steps block their threads,
//!    4 steps are pending and never complete, and more messages are queued: it returns;
//!    what it reports discarded is what never started, what it reports abandoned is what
//!    started and never ended, and with what ran they add up to what was admitted;
//!    `stats()` agrees; no handler is called and no step is polled after it returned; a
//!    second `force_close` reports zeros and `submit` hands the message back.
//! 8. [`Check::Panics`]: 30 planned panics among 240 messages over 12 keys (20 in the
//!    handler call, 10 in a pending step's poll): every other message runs once, the later
//!    messages of the panicking keys included, `stats().failed` counts exactly the 30,
//!    and 60 messages after them still run. (Order around the panics is reported, not
//!    judged: the order checks judge it.) A planned panic is raised with
//!    [`std::panic::resume_unwind`], which skips the panic hook: it prints nothing.
//! 9. [`Check::Threads`]: 400 messages over 4 aggregate types from 2 submitters, 8 of
//!    them panicking: a shared pool starts at most `workers` threads, a pool per type at
//!    most `workers x 4`, a design that runs on the caller none (a worker lost to a panic
//!    and replaced counts against the budget); handlers run on at most that many threads
//!    and never on a submitter, or only on the submitters for a design that runs on the
//!    caller.
//! 10. [`Check::Mailboxes`]: after `drain`, [`Stats::live_mailboxes`](crate::Stats) is 0
//!     where the strategy reports it (skipped where it is `None`).
//!
//! On 2 cores a built-in design goes through all ten in about a second in a debug build.
//!
//! # What it cannot prove
//!
//! The checks sample: a race that never struck during them is not excluded, and a check
//! that passed once can fail on another run (the order checks are the likeliest to vary,
//! for an executor that orders most of the time). A failure is a counterexample; a pass is
//! evidence. Timing-dependent promises (fairness, head-of-line blocking, latency) are the
//! harness's to measure, not this module's.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::ops::Deref;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::task::{Context, Poll, Waker};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use crate::testkit::{self, lock, run_within, Missed, OrderLog, Rng, Sequencer, Timer};
use crate::{
    Descriptor, Design, Handler, Job, Key, Message, Outcome, Strategy, StrategyConfig, SubmitError,
    Threads, WindowScope,
};

/// The workers every check builds its strategy with.
pub const WORKERS: usize = 2;

/// The window of the checks that fill it (window, re-entrant submissions).
const SMALL_WINDOW: usize = 8;

/// The window of the other checks (the reference design's).
const WINDOW: usize = StrategyConfig::DEFAULT_MAX_IN_FLIGHT;

/// How long a check gives a wrong executor to do what it must not (admit a ninth message,
/// call a handler after a forced close).
const GRACE: Duration = Duration::from_millis(100);

/// How long a check waits for something that must happen before it looks further (a
/// window to fill, a pending step to start).
const PATIENCE: Duration = Duration::from_secs(5);

/// How a check is run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// The longest one check may take; past it the check fails as a deadlock and its
    /// thread is left behind.
    pub deadline: Duration,
}

impl Options {
    /// The default deadline of a check: ample for a debug build on a loaded 2-core machine.
    pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(15);
}

impl Default for Options {
    fn default() -> Self {
        Self { deadline: Self::DEFAULT_DEADLINE }
    }
}

/// Runs every check on `design` with the default [`Options`]: `Ok` when none failed
/// (skipped checks are fine), `Err` with the same report otherwise.
pub fn check(design: Design) -> Result<Passed, Failed> {
    check_with(design, Options::default())
}

/// [`check`] with `options`.
pub fn check_with(design: Design, options: Options) -> Result<Passed, Failed> {
    let began = Instant::now();
    let findings = Check::ALL.iter().map(|&check| run_one(check, design, options)).collect();
    let report = Report { design, workers: WORKERS, findings, elapsed: began.elapsed() };
    if report.is_passed() {
        Ok(Passed(report))
    } else {
        Err(Failed(report))
    }
}

/// One check of the contract (module docs, "What it checks").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Check {
    /// Every accepted message runs exactly once.
    ExactlyOnce,
    /// Per-key order and no overlap, synchronous handlers.
    Order,
    /// Per-key order and no overlap with pending steps.
    OrderWithWaits,
    /// At most `max_in_flight` admitted and unfinished; outside submitters block.
    Window,
    /// A handler's submissions into its own strategy never block and all run.
    Reentrant,
    /// `drain` waits; `close` finishes, then hands messages back; closing is idempotent.
    DrainAndClose,
    /// `force_close` accounts for every admitted message and stops calling the handler.
    ForceClose,
    /// A panicking handler is contained and counted.
    Panics,
    /// The thread budget of the descriptor.
    Threads,
    /// No per-key mailbox outlives its key's last message.
    Mailboxes,
}

impl Check {
    /// Every check, in the order they run.
    pub const ALL: [Check; 10] = [
        Check::ExactlyOnce,
        Check::Order,
        Check::OrderWithWaits,
        Check::Window,
        Check::Reentrant,
        Check::DrainAndClose,
        Check::ForceClose,
        Check::Panics,
        Check::Threads,
        Check::Mailboxes,
    ];

    /// Its name in a report.
    pub const fn name(self) -> &'static str {
        match self {
            Check::ExactlyOnce => "exactly once",
            Check::Order => "order",
            Check::OrderWithWaits => "order with waits",
            Check::Window => "window",
            Check::Reentrant => "re-entrant submit",
            Check::DrainAndClose => "drain and close",
            Check::ForceClose => "force close",
            Check::Panics => "panics",
            Check::Threads => "threads",
            Check::Mailboxes => "mailboxes",
        }
    }

    fn body(self) -> fn(&Env) -> Checked {
        match self {
            Check::ExactlyOnce => exactly_once,
            Check::Order => order,
            Check::OrderWithWaits => order_with_waits,
            Check::Window => window,
            Check::Reentrant => reentrant,
            Check::DrainAndClose => drain_and_close,
            Check::ForceClose => force_close,
            Check::Panics => panics,
            Check::Threads => threads,
            Check::Mailboxes => mailboxes,
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What became of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// The design kept this part of the contract.
    Pass,
    /// It broke it (or did not finish in time).
    Fail,
    /// It does not apply to the design (its descriptor promises nothing here).
    Skip,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "skip",
        })
    }
}

/// One check's verdict and the figures that decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The check.
    pub check: Check,
    /// Its verdict.
    pub verdict: Verdict,
    /// What it ran and what it saw (on a failure, what went wrong first).
    pub figures: String,
    /// How long it took.
    pub elapsed: Duration,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let seconds = self.elapsed.as_secs_f64();
        write!(f, "{:<17} {}  {} [{seconds:.2} s]", self.check.name(), self.verdict, self.figures)
    }
}

/// Every check's finding for one design.
#[derive(Clone, Debug)]
pub struct Report {
    /// The design checked.
    pub design: Design,
    /// The workers its strategies were built with.
    pub workers: usize,
    /// One finding per check, in [`Check::ALL`] order.
    pub findings: Vec<Finding>,
    /// How long the whole check took.
    pub elapsed: Duration,
}

impl Report {
    /// The finding of `check`.
    pub fn finding(&self, check: Check) -> Option<&Finding> {
        self.findings.iter().find(|finding| finding.check == check)
    }

    /// The verdict of `check`.
    pub fn verdict(&self, check: Check) -> Option<Verdict> {
        self.finding(check).map(|finding| finding.verdict)
    }

    /// The checks that failed, in order.
    pub fn failed(&self) -> Vec<Check> {
        self.with_verdict(Verdict::Fail)
    }

    /// The checks that were skipped, in order.
    pub fn skipped(&self) -> Vec<Check> {
        self.with_verdict(Verdict::Skip)
    }

    fn with_verdict(&self, verdict: Verdict) -> Vec<Check> {
        self.findings.iter().filter(|f| f.verdict == verdict).map(|f| f.check).collect()
    }

    /// Whether no check failed.
    pub fn is_passed(&self) -> bool {
        self.findings.iter().all(|finding| finding.verdict != Verdict::Fail)
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let failed = self.failed().len();
        let skipped = self.skipped().len();
        let total = self.findings.len();
        let seconds = self.elapsed.as_secs_f64();
        if failed == 0 {
            write!(
                f,
                "`{}` keeps the contract: {} of {total} checks passed",
                self.design,
                total - skipped
            )?;
        } else {
            write!(f, "`{}` breaks the contract: {failed} of {total} checks failed", self.design)?;
        }
        if skipped > 0 {
            write!(f, ", {skipped} skipped")?;
        }
        write!(f, " ({} workers, {seconds:.1} s)", self.workers)?;
        for finding in &self.findings {
            write!(f, "\n  {finding}")?;
        }
        Ok(())
    }
}

/// A design that kept every part of the contract that applies to it.
#[derive(Clone)]
pub struct Passed(Report);

/// A design that broke some part of the contract; an [`Error`](std::error::Error), so a
/// test may return it.
#[derive(Clone)]
pub struct Failed(Report);

macro_rules! outcome_impls {
    ($($outcome:ident),*) => {$(
        impl $outcome {
            /// The full report.
            pub fn report(&self) -> &Report {
                &self.0
            }

            /// The full report, owned.
            pub fn into_report(self) -> Report {
                self.0
            }
        }

        impl Deref for $outcome {
            type Target = Report;

            fn deref(&self) -> &Report {
                &self.0
            }
        }

        impl fmt::Display for $outcome {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }

        /// The report as text, so that `unwrap`, `expect` and a test returning
        /// `Result<_, Failed>` show every check.
        impl fmt::Debug for $outcome {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}(\n{}\n)", stringify!($outcome), self.0)
            }
        }
    )*};
}

outcome_impls!(Passed, Failed);

impl std::error::Error for Failed {}

// ---------------------------------------------------------------------------------------
// Running one check
// ---------------------------------------------------------------------------------------

/// What a check body concluded.
enum Told {
    Pass(String),
    Fail(String),
    Skip(String),
}

/// What a check body returns: `Err` is a verdict it reached early (the design would not
/// build), so that a body can `?` it.
type Checked = Result<Told, Told>;

/// `Pass` with `figures` when nothing went wrong, else `Fail` naming the faults first.
fn told(faults: &[String], figures: String) -> Told {
    if faults.is_empty() {
        Told::Pass(figures)
    } else {
        Told::Fail(format!("{}; {figures}", faults.join("; ")))
    }
}

/// `Pass` with `figures` when `ok`, else `Fail` with them.
fn judged(ok: bool, figures: String) -> Told {
    if ok {
        Told::Pass(figures)
    } else {
        Told::Fail(figures)
    }
}

/// Runs `check` on its own thread, waiting at most the deadline for its verdict.
fn run_one(check: Check, design: Design, options: Options) -> Finding {
    let began = Instant::now();
    let watch = Arc::new(Watch::default());
    let env = Env { design, descriptor: design.descriptor(), watch: Arc::clone(&watch) };
    let body = check.body();
    let name = format!("conformance-{check:?}");
    let told = run_within(&name, options.deadline, move || {
        let told = body(&env).unwrap_or_else(|early| early);
        env.watch.finish();
        told
    })
    .unwrap_or_else(|missed| match missed {
        Missed::Deadline(_) => Told::Fail(format!("{missed}: {}", watch.give_up())),
        missed => Told::Fail(missed.to_string()),
    });
    let (verdict, figures) = match told {
        Told::Pass(figures) => (Verdict::Pass, figures),
        Told::Fail(figures) => (Verdict::Fail, figures),
        Told::Skip(figures) => (Verdict::Skip, figures),
    };
    Finding { check, verdict, figures, elapsed: began.elapsed() }
}

/// What a running check shares with the thread that waits for it: where it is, and its
/// handlers' state, so that a check past its deadline can say how far it got and release
/// what it held.
#[derive(Default)]
struct Watch {
    state: Mutex<WatchState>,
}

#[derive(Default)]
struct WatchState {
    stage: &'static str,
    shared: Vec<Arc<Shared>>,
}

impl Watch {
    fn stage(&self, stage: &'static str) {
        lock(&self.state).stage = stage;
    }

    fn register(&self, shared: &Arc<Shared>) {
        lock(&self.state).shared.push(Arc::clone(shared));
    }

    /// The check finished: stop its timers.
    fn finish(&self) {
        let shared = std::mem::take(&mut lock(&self.state).shared);
        for shared in shared {
            shared.timer.stop();
        }
    }

    /// The check is past its deadline: opens its gates (so that whatever waits on them may
    /// end) and says where it was stuck. The gates open on a thread of their own: a wake
    /// may run the stuck executor's code, which must not hold up the caller.
    fn give_up(&self) -> String {
        let state = lock(&self.state);
        let mut text = format!("stuck in `{}`", state.stage);
        let gates: Vec<Arc<Gate>> = state.shared.iter().map(|s| Arc::clone(&s.gate)).collect();
        let _ = thread::Builder::new()
            .name("conformance-release".to_owned())
            .spawn(move || gates.iter().for_each(|gate| gate.open()));
        if let Some(shared) = state.shared.last() {
            let (accepted, started, ended) = shared.log.progress();
            text += &format!(
                " ({} accepted, {} started, {} ended)",
                count(accepted),
                count(started),
                count(ended)
            );
        }
        text
    }
}

/// What a check body works with.
struct Env {
    design: Design,
    descriptor: &'static Descriptor,
    watch: Arc<Watch>,
}

impl Env {
    fn stage(&self, stage: &'static str) {
        self.watch.stage(stage);
    }

    fn ordered(&self) -> bool {
        self.descriptor.ordered
    }

    /// The handler state for `plan`, registered with the watch, and the design built with
    /// `max_in_flight` and a handler on that state, reachable from it.
    fn build(&self, max_in_flight: usize) -> Result<(Arc<Shared>, Arc<dyn Strategy>), Told> {
        let shared = Arc::new(Shared::new(self.descriptor.window_scope));
        self.watch.register(&shared);
        self.stage("build");
        let config =
            StrategyConfig { workers: WORKERS, max_in_flight, ..StrategyConfig::default() };
        let handler: Arc<dyn Handler> = Arc::new(Probe(Arc::clone(&shared)));
        let strategy: Arc<dyn Strategy> = match self.design.build(config, handler) {
            Ok(strategy) => Arc::from(strategy),
            Err(error) => {
                return Err(Told::Fail(format!(
                "cannot build it with {WORKERS} workers and a window of {max_in_flight}: {error}"
            )))
            }
        };
        let _ = shared.strategy.set(Arc::downgrade(&strategy));
        Ok((shared, strategy))
    }

    /// `drain`, naming it while it runs.
    fn drain(&self, strategy: &dyn Strategy) {
        self.stage("drain");
        strategy.drain();
    }

    /// `close`, naming it while it runs.
    fn close(&self, strategy: &dyn Strategy) {
        self.stage("close");
        strategy.close();
    }

    /// Submits `lists` as [`produce`] does (naming `stage` meanwhile), then `drain`s: what
    /// `read` read from the drained strategy.
    fn produce_and_drain<T>(
        &self,
        stage: &'static str,
        strategy: &Arc<dyn Strategy>,
        shared: &Arc<Shared>,
        lists: &[Vec<Message>],
        read: impl FnOnce(&dyn Strategy) -> T,
    ) -> T {
        self.stage(stage);
        produce(strategy, shared, lists);
        self.drain(&**strategy);
        read(&**strategy)
    }

    /// Builds the design for `plan` with `max_in_flight`, submits `plan`'s lists (each
    /// from its own thread, naming `stage`), drains, reads the drained strategy with
    /// `read`, and closes.
    fn run<T>(
        &self,
        plan: &Plan,
        max_in_flight: usize,
        stage: &'static str,
        read: impl FnOnce(&dyn Strategy) -> T,
    ) -> Result<Run<T>, Told> {
        let (shared, strategy) = self.build(max_in_flight)?;
        let drained = self.produce_and_drain(stage, &strategy, &shared, &plan.lists, read);
        self.close(&*strategy);
        let tally = shared.log.tally();
        Ok(Run { shared, strategy, drained, tally })
    }
}

/// What [`Env::run`] leaves for a check to read.
struct Run<T> {
    shared: Arc<Shared>,
    /// The strategy, closed.
    strategy: Arc<dyn Strategy>,
    /// What was read from the strategy between `drain` and `close`.
    drained: T,
    /// The log's tally after `close`.
    tally: Tally,
}

/// Submits each list of `plan` from its own thread, in order, and waits for them all.
/// Returns the messages an open strategy handed back.
fn produce(strategy: &Arc<dyn Strategy>, shared: &Arc<Shared>, lists: &[Vec<Message>]) -> usize {
    let refused = AtomicU64::new(0);
    thread::scope(|scope| {
        for list in lists {
            let refused = &refused;
            scope.spawn(move || {
                lock(&shared.submitters).insert(thread::current().id());
                for message in list {
                    if shared.submit(&**strategy, *message).is_err() {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    refused.into_inner() as usize
}

/// Runs `during` on this thread while another submits `lists` as [`produce`] does, then
/// waits for that submitter: what `during` returned.
fn while_producing<T>(
    strategy: &Arc<dyn Strategy>,
    shared: &Arc<Shared>,
    lists: &[Vec<Message>],
    during: impl FnOnce() -> T,
) -> T {
    thread::scope(|scope| {
        let producer = scope.spawn(move || produce(strategy, shared, lists));
        let seen = during();
        let _ = producer.join();
        seen
    })
}

// ---------------------------------------------------------------------------------------
// The checks
// ---------------------------------------------------------------------------------------

fn exactly_once(env: &Env) -> Checked {
    let mix = Mix { types: 3, keys: 300, hot: 6, hot_percent: 25, messages: 3_000, job: quick_job };
    let plan = Plan::mixed(1, &mix);
    let run = env.run(&plan, WINDOW, "submit", |_| ())?;
    let tally = &run.tally;
    let figures = format!(
        "{} synchronous messages over {} keys of {} types ({} hot) from 2 submitters: {}",
        count(plan.len()),
        mix.keys,
        mix.types,
        mix.hot,
        tally.once(),
    );
    Ok(judged(tally.is_complete() && tally.report.accepted == plan.len(), figures))
}

fn order(env: &Env) -> Checked {
    let mix = Mix { types: 2, keys: 200, hot: 4, hot_percent: 30, messages: 20_000, job: tiny_job };
    judge_order(env, 2, &mix)
}

fn order_with_waits(env: &Env) -> Checked {
    let mix = Mix { types: 2, keys: 200, hot: 4, hot_percent: 30, messages: 2_000, job: wait_job };
    judge_order(env, 3, &mix)
}

/// An order check: `mix` (seeded with `seed`) from 2 submitters, judged on order alone;
/// skipped for a design that does not promise order. Its figures count the pending
/// messages (`wait_job`'s, up to 300 us), or call them all synchronous where there are none.
fn judge_order(env: &Env, seed: u64, mix: &Mix) -> Checked {
    if !env.ordered() {
        return Ok(unordered());
    }
    let plan = Plan::mixed(seed, mix);
    let waits = plan.count(|job| matches!(job, Job::Wait { .. }));
    let run = env.run(&plan, WINDOW, "submit", |_| ())?;
    let (kind, pending) = match waits {
        0 => ("synchronous ", String::new()),
        waits => ("", format!(", {} of them pending up to 300 us on a timer thread", count(waits))),
    };
    let figures = format!(
        "{} {kind}messages over {} keys ({} hot) from 2 submitters{pending}: {}",
        count(plan.len()),
        mix.keys,
        mix.hot,
        run.tally.order(),
    );
    Ok(judged(run.tally.is_ordered(), figures))
}

fn unordered() -> Told {
    Told::Skip("the descriptor does not promise per-key order".to_owned())
}

fn window(env: &Env) -> Checked {
    let mut faults = Vec::new();

    // Part 1: 12 held messages from 12 threads: 8 admitted, 4 submits blocked.
    const HELD: u64 = 12;
    let held: Vec<Vec<Message>> =
        (0..HELD).map(|i| vec![message(Key::new(0, 1_000 + i), 0, Job::Custom(HOLD))]).collect();
    let plan = Plan { lists: held, extra: Vec::new() };
    let (shared, strategy) = env.build(SMALL_WINDOW)?;
    env.stage("submit into a full window");
    let (admitted, ended) = while_producing(&strategy, &shared, &plan.lists, || {
        let until = Instant::now() + PATIENCE;
        while shared.log.admitted() < SMALL_WINDOW && Instant::now() < until {
            thread::sleep(Duration::from_millis(1));
        }
        thread::sleep(GRACE);
        let seen = (shared.log.admitted(), shared.log.progress().2);
        shared.gate.open();
        seen
    });
    env.drain(&*strategy);
    env.close(&*strategy);
    let tally = shared.log.tally();
    if admitted > SMALL_WINDOW {
        faults.push(format!(
            "{admitted} of {HELD} held messages admitted before any finished: more than the \
             window of {SMALL_WINDOW}"
        ));
    } else if admitted < SMALL_WINDOW {
        faults.push(format!(
            "only {admitted} of {HELD} held messages admitted while none finished: the window \
             of {SMALL_WINDOW} was never filled"
        ));
    }
    if ended > 0 {
        faults.push(format!("{ended} held messages ended before they were released"));
    }
    if !tally.is_complete() {
        faults.push(format!("after the release: {}", tally.once()));
    }

    // Part 2: a load with waits never has more than the window unfinished.
    let mix =
        Mix { types: 2, keys: 40, hot: 2, hot_percent: 20, messages: 600, job: long_wait_job };
    let plan = Plan::mixed(4, &mix);
    let peak_in_flight = |strategy: &dyn Strategy| strategy.stats().peak_in_flight;
    let run = env.run(&plan, SMALL_WINDOW, "submit", peak_in_flight)?;
    let (tally, reported) = (&run.tally, run.drained);
    let per = match env.descriptor.window_scope {
        WindowScope::Strategy => "in its window",
        WindowScope::Type => "in one type's window",
    };
    if tally.peak_window > SMALL_WINDOW {
        faults.push(format!(
            "{} started and unfinished at once {per}, window {SMALL_WINDOW}",
            tally.peak_window
        ));
    }
    if !tally.is_complete() {
        faults.push(format!("the load with waits: {}", tally.once()));
    }
    let figures = format!(
        "window of {SMALL_WINDOW}: {admitted} of {HELD} held messages admitted before any \
         finished, the other {} submits blocked until released; {} messages over {} types, \
         {} pending up to 800 us: at most {} started and unfinished {per} (stats: peak {})",
        HELD as usize - admitted.min(HELD as usize),
        plan.len(),
        mix.types,
        plan.count(|job| matches!(job, Job::Wait { .. })),
        tally.peak_window,
        reported,
    );
    Ok(told(&faults, figures))
}

fn reentrant(env: &Env) -> Checked {
    const CHAINS: u64 = 16;
    const LENGTH: u32 = 30;
    let mut lists = Vec::new();
    let mut extra = Vec::new();
    for chain in 0..CHAINS {
        let kind = if chain % 2 == 0 { CHAIN_CALL } else { CHAIN_STEP };
        let job = Job::Custom(kind | LENGTH);
        let key = Key::new(0, 2_000 + chain);
        lists.push(vec![message(key, 0, job)]);
        extra.extend((1..u64::from(LENGTH)).map(|seq| message(key, seq, job)));
    }
    let plan = Plan { lists, extra };
    let total = plan.len() + plan.extra.len();
    let stage = "chains submitting into a full window";
    let run = env.run(&plan, SMALL_WINDOW, stage, |strategy| strategy.stats())?;
    let (tally, stats) = (&run.tally, &run.drained);
    let reentry = *lock(&run.shared.reentry);
    let ok = tally.is_complete()
        && tally.report.accepted == total
        && reentry.refused == 0
        && (!env.ordered() || tally.is_ordered());
    let order = if env.ordered() { format!(", {}", tally.order()) } else { String::new() };
    let figures = format!(
        "{CHAINS} chains of {LENGTH} through a window of {SMALL_WINDOW}, each handler \
         submitting its chain's next message (half from the call, half from a pending step): \
         {}{order}; {} re-entrant submissions ({} handed back), the longest took {:.1} ms; \
         the strategy reports {} at most in its admission queue",
        tally.once(),
        reentry.submits,
        reentry.refused,
        reentry.longest.as_secs_f64() * 1e3,
        stats.peak_admission_queue,
    );
    Ok(judged(ok, figures))
}

fn drain_and_close(env: &Env) -> Checked {
    let mut sequencer = Sequencer::default();
    let mut phase = |count: u64, job: fn(u64) -> Job| -> Vec<Message> {
        (0..count).map(|i| sequencer.next(Key::new(0, 5_000 + i % 10), job(i))).collect()
    };
    let first = phase(60, |i| match i % 3 {
        0 => Job::Wait { ns: 2_000_000 + (i as u32 % 5) * 1_000_000 },
        1 => Job::Spin { ns: 100_000 },
        _ => Job::Noop,
    });
    let second = phase(10, |_| Job::Noop);
    let third = phase(20, |i| if i % 2 == 0 { Job::Wait { ns: 5_000_000 } } else { Job::Noop });
    let late = phase(5, |_| Job::Noop);
    let later = phase(1, |_| Job::Noop);
    let plan = Plan { lists: vec![first, second, third, late, later], extra: Vec::new() };
    let (shared, strategy) = env.build(WINDOW)?;
    let mut faults = Vec::new();
    let submit_all = |list: &[Message], faults: &mut Vec<String>| {
        let refused = list.iter().filter(|m| shared.submit(&*strategy, **m).is_err()).count();
        if refused > 0 {
            faults.push(format!("an open strategy handed back {refused} of {}", list.len()));
        }
    };
    let unfinished = || {
        let (accepted, _, ended) = shared.log.progress();
        accepted.saturating_sub(ended)
    };
    let [first, second, third, late, later] = &plan.lists[..] else { unreachable!() };

    // Each phase submits its list and ends with `drain` or `close`, which must leave none
    // of what was accepted unfinished: its stage, its list, how it ends, and what a fault
    // calls that end and the list's size.
    let drain: fn(&Env, &dyn Strategy) = Env::drain;
    let phases = [
        ("submit", first, drain, "drain", format!(" of {}", first.len())),
        ("submit after drain", second, drain, "the second drain", String::new()),
        ("submit, then close", third, Env::close, "close", format!(" of {}", third.len())),
    ];
    for (stage, list, end, what, of) in phases {
        env.stage(stage);
        submit_all(list, &mut faults);
        end(env, &*strategy);
        let left = unfinished();
        if left > 0 {
            faults.push(format!("{what} returned with {left}{of} unfinished"));
        }
    }
    let stats = strategy.stats();
    if stats.failed + stats.discarded + stats.abandoned > 0 {
        faults.push(format!(
            "after close, stats() report {} failed, {} discarded and {} abandoned, all 0 expected",
            stats.failed, stats.discarded, stats.abandoned
        ));
    }
    env.stage("submit after close");
    let mut handed_back = 0;
    for &message in late {
        match strategy.submit(message) {
            Err(SubmitError::Closed(back)) if back == message => handed_back += 1,
            Err(SubmitError::Closed(back)) => {
                faults.push(format!("handed back {back:?} for {message:?}"));
            }
            Ok(()) => faults.push(format!("accepted {message:?} after close")),
        }
    }
    env.stage("close again");
    strategy.close();
    env.stage("force_close after close");
    let forced = strategy.force_close();
    if forced.discarded + forced.abandoned > 0 {
        faults.push(format!("force_close after close reported {forced:?}"));
    }
    let last = later[0];
    if !matches!(strategy.submit(last), Err(SubmitError::Closed(back)) if back == last) {
        faults.push("a submit after the second close was not handed back".to_owned());
    }
    thread::sleep(GRACE / 4);
    let ran_late = late.iter().chain(later).filter(|m| shared.log.started(m)).count();
    if ran_late > 0 {
        faults.push(format!("{ran_late} handed-back messages ran"));
    }
    let tally = shared.log.tally();
    if tally.report.stray_ends + tally.report.unexpected + tally.report.duplicated > 0 {
        faults.push(tally.once());
    }
    let figures = format!(
        "drain waited for {} (20 pending up to 6 ms) and the strategy stayed open for {} more; \
         close finished {} (10 pending 5 ms), with nothing failed, discarded or abandoned, \
         then handed back {handed_back} of {} late messages unchanged and ran none; a second \
         close and a force_close after it did nothing",
        first.len(),
        second.len(),
        third.len(),
        late.len(),
    );
    Ok(told(&faults, figures))
}

fn force_close(env: &Env) -> Checked {
    const NEVER_KEYS: u64 = 4;
    let mut sequencer = Sequencer::default();
    let mut list = Vec::new();
    let never_keys: Vec<Key> = (0..NEVER_KEYS).map(|i| Key::new(0, 3_000 + i)).collect();
    for &key in &never_keys {
        list.push(sequencer.next(key, Job::Custom(NEVER)));
    }
    for i in 0..2 {
        list.push(sequencer.next(Key::new(0, 3_100 + i), Job::Block { ns: 40_000_000 }));
    }
    for &key in &never_keys {
        list.extend((0..3).map(|_| sequencer.next(key, Job::Noop)));
    }
    list.extend((0..40).map(|i| sequencer.next(Key::new(0, 3_200 + i % 20), Job::Noop)));
    let late = sequencer.next(Key::new(0, 3_300), Job::Noop);
    let plan = Plan { lists: vec![list], extra: vec![late] };
    let submitted = plan.len();
    let (shared, strategy) = env.build(WINDOW)?;
    let mut faults = Vec::new();
    env.stage("submit");
    let forced = while_producing(&strategy, &shared, &plan.lists, || {
        let never_started = |log: &testkit::Log| log.started_where(|k| never_keys.contains(&k)) > 0;
        if !shared.log.order.wait_until(PATIENCE, never_started) {
            faults.push(format!(
                "no step that never completes started within {} s",
                PATIENCE.as_secs()
            ));
        }
        thread::sleep(Duration::from_millis(10));
        env.stage("force_close");
        let forced = strategy.force_close();
        shared.log.mark_closed();
        env.stage("submitter after force_close");
        forced
    });
    thread::sleep(GRACE);
    let stats = strategy.stats();
    env.stage("a second force_close");
    let again = strategy.force_close();
    let late_back = matches!(strategy.submit(late), Err(SubmitError::Closed(back)) if back == late);
    let fates = shared.log.fates();
    let after = shared.log.after_close();
    let polls_after = shared.polls_after_close.load(Ordering::SeqCst);
    let counted = [
        (forced.discarded, "discarded", fates.never_started, "never started"),
        (forced.abandoned, "abandoned", fates.never_ended, "started and never ended"),
    ];
    for (reported, what, seen, fate) in counted {
        if reported != seen as u64 {
            faults.push(format!("reported {reported} {what}, {seen} admitted messages {fate}"));
        }
    }
    let accounted = fates.ran as u64 + forced.discarded + forced.abandoned;
    if accounted != fates.admitted as u64 {
        faults.push(format!(
            "{} ran + {} discarded + {} abandoned = {accounted}, {} admitted",
            fates.ran, forced.discarded, forced.abandoned, fates.admitted
        ));
    }
    if fates.never_ended == 0 && faults.is_empty() {
        faults.push("no pending step was left to abandon".to_owned());
    }
    if after > 0 || polls_after > 0 {
        faults.push(format!(
            "after it returned: {after} handler calls, {polls_after} polls of abandoned steps"
        ));
    }
    if (stats.discarded, stats.abandoned) != (forced.discarded, forced.abandoned) {
        faults.push(format!(
            "stats() report {} discarded and {} abandoned",
            stats.discarded, stats.abandoned
        ));
    }
    if again.discarded + again.abandoned > 0 {
        faults.push(format!("a second force_close reported {again:?}"));
    }
    if !late_back {
        faults.push("a submit after force_close was not handed back unchanged".to_owned());
    }
    if fates.ran_handed_back > 0 {
        faults.push(format!("{} handed-back messages ran", fates.ran_handed_back));
    }
    let dropped = shared.nevers_dropped.load(Ordering::SeqCst);
    let figures = format!(
        "{submitted} submitted from another thread, force_close while 2 steps block their \
         threads and {NEVER_KEYS} keys wait on steps that never complete: {} ran + {} \
         discarded + {} abandoned = {} admitted ({} handed back); no handler call or poll \
         after it returned; {dropped} abandoned steps dropped",
        fates.ran, forced.discarded, forced.abandoned, fates.admitted, fates.handed_back,
    );
    Ok(told(&faults, figures))
}

fn panics(env: &Env) -> Checked {
    const KEYS: u64 = 12;
    const ROUNDS: u64 = 20;
    let mut sequencer = Sequencer::default();
    let mut lists = vec![Vec::new(); 4];
    let (mut in_call, mut in_poll) = (0, 0);
    for round in 0..ROUNDS {
        for k in 0..KEYS {
            let job = match (k, round % 4) {
                (0..=3, 1) => Job::Panic,
                (4..=5, 2) => Job::Custom(PANIC_IN_POLL),
                (_, 3) => Job::Wait { ns: 100_000 },
                _ => Job::Spin { ns: 5_000 },
            };
            in_call += usize::from(job == Job::Panic);
            in_poll += usize::from(job == Job::Custom(PANIC_IN_POLL));
            lists[(k % 2) as usize].push(sequencer.next(Key::new(0, 4_000 + k), job));
        }
    }
    for _ in 0..5 {
        for k in 0..KEYS {
            let next = sequencer.next(Key::new(0, 4_000 + k), Job::Spin { ns: 5_000 });
            lists[2 + (k % 2) as usize].push(next);
        }
    }
    let planned = (in_call + in_poll) as u64;
    let plan = Plan { lists, extra: Vec::new() };
    let (shared, strategy) = env.build(WINDOW)?;
    let mut faults = Vec::new();
    let failed_and_threads =
        |strategy: &dyn Strategy| (strategy.stats().failed, strategy.threads_started());
    let (before, after) = (&plan.lists[..2], &plan.lists[2..]);
    let (failed_before, threads_before) = env.produce_and_drain(
        "submit around panics",
        &strategy,
        &shared,
        before,
        failed_and_threads,
    );
    let (failed_after, threads_after) = env.produce_and_drain(
        "submit after the panics",
        &strategy,
        &shared,
        after,
        failed_and_threads,
    );
    env.close(&*strategy);
    let tally = shared.log.tally();
    if !tally.is_complete() || tally.report.accepted != plan.len() {
        faults.push(tally.once());
    }
    let ran = shared.log.failed() as u64;
    if ran != planned {
        faults.push(format!("{ran} of the {planned} planned panics ran"));
    }
    if failed_before != planned || failed_after != planned {
        faults.push(format!(
            "stats().failed {failed_before} after the panics and {failed_after} after the rest, \
             {planned} planned"
        ));
    }
    let order = match (env.ordered(), tally.is_ordered()) {
        (true, true) => ", in order",
        (true, false) => ", out of order (the order checks judge that)",
        (false, _) => "",
    };
    let figures = format!(
        "{planned} planned panics ({in_call} in the call, {in_poll} in a pending step's poll) \
         among {} messages over {KEYS} keys: stats().failed {failed_after}; every other \
         message ran once{order}, those after a panic of their key included, and {} more \
         after them ({threads_before} threads started before them, {threads_after} after)",
        plan.lists[0].len() + plan.lists[1].len(),
        plan.lists[2].len() + plan.lists[3].len(),
    );
    Ok(told(&faults, figures))
}

fn threads(env: &Env) -> Checked {
    let mix = Mix { types: 4, keys: 40, hot: 0, hot_percent: 0, messages: 400, job: spin_job };
    let mut plan = Plan::mixed(5, &mix);
    // Every 50th message panics: a worker lost to a panic must not be replaced past the
    // budget.
    let mut panicking = 0;
    for message in plan.lists.iter_mut().flatten().step_by(50) {
        message.job = Job::Panic;
        panicking += 1;
    }
    let run = env.run(&plan, WINDOW, "submit", |strategy| strategy.threads_started())?;
    let started = run.drained;
    let after_close = run.strategy.threads_started();
    let handler_threads = run.shared.log.threads();
    let submitters = lock(&run.shared.submitters).clone();
    let on_submitters = handler_threads.intersection(&submitters).count();
    let types = mix.types as usize;
    let (bound, budget) = match env.descriptor.threads {
        Threads::SharedPool => (WORKERS, format!("a shared pool: at most {WORKERS} workers")),
        Threads::PoolPerType => {
            (WORKERS * types, format!("a pool per type: at most {WORKERS} workers x {types} types"))
        }
        Threads::Caller => (0, "runs on the caller: none".to_owned()),
    };
    let mut faults = Vec::new();
    if started.max(after_close) > bound {
        faults.push(format!("{} threads started", started.max(after_close)));
    }
    let where_run = if env.descriptor.threads == Threads::Caller {
        if on_submitters < handler_threads.len() {
            faults.push(format!(
                "handlers ran on {} threads that did not submit",
                handler_threads.len() - on_submitters
            ));
        }
        format!("handlers ran on {on_submitters} submitting threads")
    } else {
        if on_submitters > 0 {
            faults.push(format!("handlers ran on {on_submitters} submitting threads"));
        }
        if handler_threads.len() > bound {
            faults.push(format!("handlers ran on {} threads", handler_threads.len()));
        }
        format!("handlers ran on {} of them, never on a submitter", handler_threads.len())
    };
    let figures = format!(
        "{} messages over {types} types from 2 submitters, {panicking} of them panicking: \
         {started} threads started ({budget}), {where_run}",
        plan.len()
    );
    Ok(told(&faults, figures))
}

fn mailboxes(env: &Env) -> Checked {
    let mix = Mix { types: 2, keys: 50, hot: 2, hot_percent: 20, messages: 600, job: wait_job };
    let plan = Plan::mixed(6, &mix);
    let live_mailboxes = |strategy: &dyn Strategy| strategy.stats().live_mailboxes;
    let run = env.run(&plan, WINDOW, "submit", live_mailboxes)?;
    let ran = format!("{} messages over {} keys, some pending, then drain", plan.len(), mix.keys);
    Ok(match run.drained {
        None => Told::Skip("no per-key mailboxes (stats().live_mailboxes is None)".to_owned()),
        Some(0) => Told::Pass(format!("{ran}: 0 live mailboxes")),
        Some(live) => Told::Fail(format!(
            "{ran}: {live} live mailboxes: a mailbox outlived its key's last message"
        )),
    })
}

// ---------------------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------------------

/// What the probe handler does with a `Job::Custom` code: the kind in the top bits, a
/// chain's length in the low ones.
const KIND_MASK: u32 = 0xf << 28;
/// Pending until the check opens its gate.
const HOLD: u32 = 1 << 28;
/// Pending for ever.
const NEVER: u32 = 2 << 28;
/// Pending; panics when polled after a short wait.
const PANIC_IN_POLL: u32 = 3 << 28;
/// Submits its chain's next message from the handler call, then ends.
const CHAIN_CALL: u32 = 4 << 28;
/// Pending; after a short wait its poll submits the chain's next message, then it ends.
const CHAIN_STEP: u32 = 5 << 28;

/// Mostly no-ops, some spins up to 20 us.
fn quick_job(rng: &mut Rng) -> Job {
    if rng.percent(40) {
        Job::Spin { ns: rng.below(20_000) as u32 }
    } else {
        Job::Noop
    }
}

/// Mostly no-ops, some spins up to 3 us.
fn tiny_job(rng: &mut Rng) -> Job {
    if rng.percent(30) {
        Job::Spin { ns: rng.below(3_000) as u32 }
    } else {
        Job::Noop
    }
}

/// A third pending up to 300 us (one in ten of those ready at once), the rest short.
fn wait_job(rng: &mut Rng) -> Job {
    match rng.below(100) {
        0..=2 => Job::Wait { ns: 0 },
        3..=32 => Job::Wait { ns: 20_000 + rng.below(280_000) as u32 },
        33..=47 => Job::Spin { ns: rng.below(10_000) as u32 },
        _ => Job::Noop,
    }
}

/// Most pending 100-800 us, so that waits fill a small window.
fn long_wait_job(rng: &mut Rng) -> Job {
    if rng.percent(70) {
        Job::Wait { ns: 100_000 + rng.below(700_000) as u32 }
    } else {
        Job::Noop
    }
}

/// A 5 us spin.
fn spin_job(_: &mut Rng) -> Job {
    Job::Spin { ns: 5_000 }
}

fn message(key: Key, seq: u64, job: Job) -> Message {
    Message { key, seq, intended_ns: 0, job }
}

/// A mixed workload's shape.
struct Mix {
    types: u32,
    keys: u64,
    /// Keys that get `hot_percent` of the messages between them.
    hot: u64,
    hot_percent: u64,
    messages: usize,
    job: fn(&mut Rng) -> Job,
}

/// The messages of one check: `lists` are submitted (each from its own thread, or phase
/// by phase), `extra` are those the handler submits itself (chains) or a late probe.
struct Plan {
    lists: Vec<Vec<Message>>,
    extra: Vec<Message>,
}

impl Plan {
    /// `mix` from 2 submitters, each owning half of the keys (and half of the hot ones).
    fn mixed(seed: u64, mix: &Mix) -> Self {
        const SUBMITTERS: u64 = 2;
        let mut rng = Rng::new(seed);
        let mut sequencer = Sequencer::default();
        let lists = (0..SUBMITTERS)
            .map(|submitter| {
                let own: Vec<(u64, Key)> = (0..mix.keys)
                    .filter(|i| (i / u64::from(mix.types)) % SUBMITTERS == submitter)
                    .map(|i| (i, Key::new((i % u64::from(mix.types)) as u32, i)))
                    .collect();
                let hot: Vec<Key> =
                    own.iter().filter(|(i, _)| *i < mix.hot).map(|&(_, key)| key).collect();
                (0..mix.messages / SUBMITTERS as usize)
                    .map(|_| {
                        let key = if !hot.is_empty() && rng.percent(mix.hot_percent) {
                            hot[rng.below(hot.len() as u64) as usize]
                        } else {
                            own[rng.below(own.len() as u64) as usize].1
                        };
                        let job = (mix.job)(&mut rng);
                        sequencer.next(key, job)
                    })
                    .collect()
            })
            .collect();
        Self { lists, extra: Vec::new() }
    }

    /// The messages submitted from outside.
    fn len(&self) -> usize {
        self.lists.iter().map(Vec::len).sum()
    }

    fn all(&self) -> impl Iterator<Item = &Message> + '_ {
        self.lists.iter().flatten().chain(&self.extra)
    }

    fn count(&self, what: impl Fn(Job) -> bool) -> usize {
        self.all().filter(|message| what(message.job)).count()
    }
}

// ---------------------------------------------------------------------------------------
// The probe handler and its log
// ---------------------------------------------------------------------------------------

/// The handler of one check's strategy and what the check reads back.
struct Shared {
    log: Log,
    timer: Timer,
    gate: Arc<Gate>,
    /// The strategy the handler runs in, for chains to submit into; set once built.
    strategy: OnceLock<Weak<dyn Strategy>>,
    reentry: Mutex<Reentry>,
    /// The threads that submitted from outside.
    submitters: Mutex<HashSet<ThreadId>>,
    polls_after_close: AtomicU64,
    nevers_dropped: AtomicU64,
}

/// The handler's own submissions.
#[derive(Clone, Copy, Default)]
struct Reentry {
    submits: usize,
    refused: usize,
    longest: Duration,
}

impl Shared {
    fn new(scope: WindowScope) -> Self {
        Self {
            log: Log::new(scope),
            timer: Timer::new(),
            gate: Arc::new(Gate::default()),
            strategy: OnceLock::new(),
            reentry: Mutex::new(Reentry::default()),
            submitters: Mutex::new(HashSet::new()),
            polls_after_close: AtomicU64::new(0),
            nevers_dropped: AtomicU64::new(0),
        }
    }

    /// Submits `message` and records whether it was accepted or handed back.
    fn submit(&self, strategy: &dyn Strategy, message: Message) -> Result<(), SubmitError> {
        let result = strategy.submit(message);
        self.log.submitted(&message, &result);
        result
    }

    /// A chain message's handler submits the next one, if the chain goes on.
    fn chain_next(&self, message: &Message, length: u32) {
        if message.seq + 1 >= u64::from(length) {
            return;
        }
        let next = Message { seq: message.seq + 1, ..*message };
        let Some(strategy) = self.strategy.get().and_then(Weak::upgrade) else {
            lock(&self.reentry).refused += 1;
            return;
        };
        let began = Instant::now();
        let result = self.submit(&*strategy, next);
        let took = began.elapsed();
        let mut reentry = lock(&self.reentry);
        reentry.submits += 1;
        reentry.refused += usize::from(result.is_err());
        reentry.longest = reentry.longest.max(took);
    }
}

/// The handler every check builds its strategy with: records starts and ends and runs the
/// job (module docs).
struct Probe(Arc<Shared>);

/// The payload of a planned panic: raised with `resume_unwind`, which skips the panic hook,
/// so a planned panic prints nothing.
struct PlannedPanic;

fn planned_panic() -> ! {
    std::panic::resume_unwind(Box::new(PlannedPanic))
}

fn pending(step: impl Future<Output = ()> + Send + 'static) -> Outcome {
    Outcome::Pending(Box::pin(step))
}

fn spin(ns: u32) {
    let until = Instant::now() + Duration::from_nanos(u64::from(ns));
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

impl Handler for Probe {
    fn handle(&self, message: &Message) -> Outcome {
        let shared = &self.0;
        let message = *message;
        shared.log.start(&message);
        match message.job {
            Job::Noop | Job::Retry { .. } | Job::Touch { .. } => {}
            Job::Spin { ns } => spin(ns),
            Job::Block { ns } => thread::sleep(Duration::from_nanos(u64::from(ns))),
            Job::Wait { ns } => {
                let sleep = shared.timer.sleep(Duration::from_nanos(u64::from(ns)));
                let shared = Arc::clone(shared);
                return pending(async move {
                    sleep.await;
                    shared.log.end(&message, false);
                });
            }
            Job::Panic => {
                shared.log.end(&message, true);
                planned_panic();
            }
            Job::Custom(code) => match code & KIND_MASK {
                HOLD => {
                    let opened = Gate::opened(&shared.gate);
                    let shared = Arc::clone(shared);
                    return pending(async move {
                        opened.await;
                        shared.log.end(&message, false);
                    });
                }
                NEVER => return Outcome::Pending(Box::pin(Never(Arc::clone(shared)))),
                PANIC_IN_POLL => {
                    let sleep = shared.timer.sleep(Duration::from_micros(200));
                    let shared = Arc::clone(shared);
                    return pending(async move {
                        sleep.await;
                        shared.log.end(&message, true);
                        planned_panic();
                    });
                }
                CHAIN_CALL => shared.chain_next(&message, code & !KIND_MASK),
                CHAIN_STEP => {
                    let sleep = shared.timer.sleep(Duration::from_micros(50));
                    let shared = Arc::clone(shared);
                    return pending(async move {
                        sleep.await;
                        shared.chain_next(&message, code & !KIND_MASK);
                        shared.log.end(&message, false);
                    });
                }
                _ => {}
            },
        }
        shared.log.end(&message, false);
        Outcome::Done
    }
}

/// A step that never completes; counts polls after a forced close returned, and its drop.
struct Never(Arc<Shared>);

impl Future for Never {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        if self.0.log.is_closed() {
            self.0.polls_after_close.fetch_add(1, Ordering::SeqCst);
        }
        Poll::Pending
    }
}

impl Drop for Never {
    fn drop(&mut self) {
        self.0.nevers_dropped.fetch_add(1, Ordering::SeqCst);
    }
}

/// Every start and end of the probe handler, in the test kit's order log, with what
/// `submit` returned and how full the window got.
struct Log {
    order: OrderLog,
    submissions: Mutex<Submissions>,
    windows: Mutex<Windows>,
    scope: WindowScope,
    /// Set once a forced close returned: from then on a handler call is one too many.
    closed: AtomicBool,
    /// Handler calls after `closed` was set.
    after_close: AtomicUsize,
}

/// What `submit` returned, for the checks' and the handler's own submissions.
#[derive(Default)]
struct Submissions {
    accepted: Vec<Message>,
    handed_back: Vec<Message>,
    /// Hand-backs that carried another message than the one submitted.
    wrong_hand_back: usize,
}

/// Started and unfinished messages per window (0, or the aggregate type).
#[derive(Default)]
struct Windows {
    in_flight: HashMap<u32, usize>,
    peak: usize,
}

impl Log {
    fn new(scope: WindowScope) -> Self {
        Self {
            order: OrderLog::default(),
            submissions: Mutex::default(),
            windows: Mutex::default(),
            scope,
            closed: AtomicBool::new(false),
            after_close: AtomicUsize::new(0),
        }
    }

    fn window_of(&self, key: Key) -> u32 {
        match self.scope {
            WindowScope::Strategy => 0,
            WindowScope::Type => key.aggregate_type,
        }
    }

    /// A handler call for `message` began.
    fn start(&self, message: &Message) {
        if self.is_closed() {
            self.after_close.fetch_add(1, Ordering::SeqCst);
        }
        let mut windows = lock(&self.windows);
        let in_flight = windows.in_flight.entry(self.window_of(message.key)).or_insert(0);
        *in_flight += 1;
        let in_flight = *in_flight;
        windows.peak = windows.peak.max(in_flight);
        drop(windows);
        self.order.start(message);
    }

    /// The message ended: its handler returned done, its step completed, or it is about to
    /// panic (`failed`).
    fn end(&self, message: &Message, failed: bool) {
        if self.order.end(message, failed) {
            let mut windows = lock(&self.windows);
            if let Some(in_flight) = windows.in_flight.get_mut(&self.window_of(message.key)) {
                *in_flight = in_flight.saturating_sub(1);
            }
        }
    }

    /// `submit` returned `result` for `message`.
    fn submitted(&self, message: &Message, result: &Result<(), SubmitError>) {
        let mut submissions = lock(&self.submissions);
        match result {
            Ok(()) => submissions.accepted.push(*message),
            Err(SubmitError::Closed(back)) => {
                submissions.handed_back.push(*message);
                submissions.wrong_hand_back += usize::from(back != message);
            }
        }
    }

    /// From now on a handler call or a poll is one too many.
    fn mark_closed(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    fn after_close(&self) -> usize {
        self.after_close.load(Ordering::SeqCst)
    }

    fn started(&self, message: &Message) -> bool {
        self.order.with_log(|log| log.starts_and_ends(message.key, message.seq).0 > 0)
    }

    /// Messages admitted so far: `submit` returned `Ok`, or the handler started.
    fn admitted(&self) -> usize {
        let mut admitted: HashSet<(Key, u64)> =
            lock(&self.submissions).accepted.iter().map(|m| (m.key, m.seq)).collect();
        self.order.with_log(|log| admitted.extend(log.runs().iter().map(|r| (r.key, r.seq))));
        admitted.len()
    }

    /// (accepted, started, ended) so far.
    fn progress(&self) -> (usize, usize, usize) {
        let accepted = lock(&self.submissions).accepted.len();
        let (started, ended) = self.order.with_log(|log| (log.started(), log.ended()));
        (accepted, started, ended)
    }

    /// Messages that ended by panicking.
    fn failed(&self) -> usize {
        self.order.with_log(testkit::Log::failed)
    }

    fn threads(&self) -> HashSet<ThreadId> {
        self.order.with_log(testkit::Log::threads)
    }

    /// Where each admitted message ended up.
    fn fates(&self) -> Fates {
        let submissions = lock(&self.submissions);
        let ids = |messages: &[Message]| -> HashSet<(Key, u64)> {
            messages.iter().map(|m| (m.key, m.seq)).collect()
        };
        let (accepted, handed_back) = (ids(&submissions.accepted), ids(&submissions.handed_back));
        self.order.with_log(|log| {
            let started = log.runs().iter().map(|run| (run.key, run.seq));
            let all: HashSet<(Key, u64)> =
                accepted.iter().chain(&handed_back).copied().chain(started).collect();
            let mut fates = Fates::default();
            for (key, seq) in all {
                let (starts, ends) = log.starts_and_ends(key, seq);
                let was_handed_back = handed_back.contains(&(key, seq));
                fates.handed_back += usize::from(was_handed_back);
                fates.ran_handed_back += usize::from(was_handed_back && starts > 0);
                // A message the caller's own thread ran inside `submit` before a forced
                // close abandoned it counts as admitted too.
                if accepted.contains(&(key, seq)) || starts > 0 {
                    fates.admitted += 1;
                    match (starts, ends) {
                        (0, _) => fates.never_started += 1,
                        (_, 0) => fates.never_ended += 1,
                        _ => fates.ran += 1,
                    }
                }
            }
            fates
        })
    }

    /// What ran against what was submitted.
    fn tally(&self) -> Tally {
        let submissions = lock(&self.submissions);
        let report = self.order.report(&submissions.accepted, &submissions.handed_back);
        Tally {
            handed_back: submissions.handed_back.len(),
            wrong_hand_back: submissions.wrong_hand_back,
            peak_window: lock(&self.windows).peak,
            report,
        }
    }
}

/// Where the admitted messages of a forced close ended up.
#[derive(Default)]
struct Fates {
    admitted: usize,
    ran: usize,
    never_started: usize,
    never_ended: usize,
    handed_back: usize,
    ran_handed_back: usize,
}

/// What [`Log::tally`] found: the order log's report, and what only a check knows.
struct Tally {
    report: testkit::Report,
    /// Messages an open strategy handed back (it must hand back none).
    handed_back: usize,
    wrong_hand_back: usize,
    peak_window: usize,
}

impl Tally {
    /// Every accepted message ran exactly once, to the end; nothing else ran; nothing was
    /// handed back.
    fn is_complete(&self) -> bool {
        self.report.is_complete() && self.handed_back + self.wrong_hand_back == 0
    }

    fn is_ordered(&self) -> bool {
        self.report.order_faults() == 0
    }

    /// The exactly-once figures: what ran once and every kind of fault seen.
    fn once(&self) -> String {
        let report = &self.report;
        let mut text = format!(
            "{} of {} ran once, {} lost, {} duplicated, {} unexpected",
            count(report.once),
            count(report.accepted),
            count(report.lost),
            count(report.duplicated),
            count(report.unexpected)
        );
        let extras = [
            (report.unfinished, "never ended"),
            (self.handed_back, "handed back by an open strategy"),
            (report.ran_handed_back, "ran after being handed back"),
            (self.wrong_hand_back, "handed back as another message"),
            (report.stray_ends, "ended twice"),
        ];
        for (n, what) in extras {
            if n > 0 {
                text += &format!(", {} {what}", count(n));
            }
        }
        text
    }

    /// The order figures, with the first few faults.
    fn order(&self) -> String {
        let report = &self.report;
        let mut text = format!(
            "{} out of order, {} overlapping",
            count(report.out_of_order),
            count(report.overlaps)
        );
        if !report.details.is_empty() {
            let examples: Vec<&str> = report.details.iter().take(3).map(String::as_str).collect();
            text += &format!(" (e.g. {})", examples.join("; "));
        }
        text
    }
}

/// `n` with thousands separated by commas.
fn count(n: usize) -> String {
    let digits = n.to_string();
    let mut text = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

// ---------------------------------------------------------------------------------------
// What pending steps wait on besides the test kit's timer: a gate
// ---------------------------------------------------------------------------------------

/// A gate that pending steps wait on until the check opens it.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
}

#[derive(Default)]
struct GateState {
    open: bool,
    wakers: Vec<Waker>,
}

impl Gate {
    /// Opens it: every waiting step is woken (outside the gate's lock), later ones complete
    /// at their first poll.
    fn open(&self) {
        let wakers = {
            let mut state = lock(&self.state);
            state.open = true;
            std::mem::take(&mut state.wakers)
        };
        wakers.into_iter().for_each(Waker::wake);
    }

    fn opened(gate: &Arc<Self>) -> Opened {
        Opened(Arc::clone(gate))
    }
}

/// The future of [`Gate::opened`].
struct Opened(Arc<Gate>);

impl Future for Opened {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = lock(&self.0.state);
        if state.open {
            return Poll::Ready(());
        }
        if !state.wakers.iter().any(|waker| waker.will_wake(cx.waker())) {
            state.wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_written_with_thousands_separators() {
        let cases = [(0, "0"), (999, "999"), (1_000, "1,000"), (20_000, "20,000")];
        for (n, text) in cases {
            assert_eq!(count(n), text);
        }
        assert_eq!(count(1_234_567), "1,234,567");
    }

    #[test]
    fn a_mixed_plan_gives_each_submitter_its_own_keys_in_sequence() {
        let mix =
            Mix { types: 3, keys: 30, hot: 4, hot_percent: 50, messages: 600, job: quick_job };
        let plan = Plan::mixed(7, &mix);
        assert_eq!(plan.len(), 600);
        let keys = |list: &Vec<Message>| list.iter().map(|m| m.key).collect::<HashSet<_>>();
        assert!(keys(&plan.lists[0]).is_disjoint(&keys(&plan.lists[1])));
        let mut next: HashMap<Key, u64> = HashMap::new();
        for message in plan.lists.iter().flatten() {
            let seq = next.entry(message.key).or_insert(0);
            assert_eq!(message.seq, *seq, "{message:?}");
            *seq += 1;
        }
        let types: HashSet<u32> = plan.all().map(|m| m.key.aggregate_type).collect();
        assert_eq!(types.len(), 3);
    }
}
