//! The exported conformance check (`strategies::conformance`) itself: it catches broken
//! executors on the check each one breaks, the `thread-pool` control disguised as an
//! ordered design included, and its report says what it saw. (That every built-in design
//! passes it is the first test of `conformance.rs`.) The broken executors are
//! written here, the way a user would write one: an [`Engine`] on the shared window, and
//! [`Strategy`] implementations of their own.
//!
//! Each test registers its designs under ids of its own (the registry is process-wide).

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, JoinHandle, Thread};
use std::time::Duration;

use strategies::conformance::{self, Check, Options, Report, Verdict};
use strategies::engine::{Core, Engine};
use strategies::{
    ConfigError, Descriptor, Design, Family, ForcedClose, Handler, Message, Outcome, Stats,
    Strategy, StrategyConfig, StrategyId, SubmitError, Threads, MAX_WINDOW,
};

/// Fails unless the checks that failed are exactly `expected`, printing the report.
#[track_caller]
fn assert_failed_exactly(report: &Report, expected: &[Check]) {
    assert_eq!(report.failed(), expected, "{report}");
    assert_eq!(report.is_passed(), expected.is_empty(), "{report}");
}

/// The finding of `check`, which must have `verdict`, and its figures.
#[track_caller]
fn figures(report: &Report, check: Check, verdict: Verdict) -> String {
    let finding = report.finding(check).unwrap_or_else(|| panic!("no {check} finding"));
    assert_eq!(finding.verdict, verdict, "{check}: {report}");
    finding.figures.clone()
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Registers `id` as an ordered shared-pool design built by `build`.
fn register(
    id: &'static str,
    build: impl Fn(StrategyConfig, Arc<dyn Handler>) -> Result<Box<dyn Strategy>, ConfigError>
        + Send
        + Sync
        + 'static,
) -> Design {
    let descriptor = Descriptor::custom(
        id,
        "a broken test executor",
        Family::Mailboxes,
        true,
        Threads::SharedPool,
    );
    Design::register(descriptor, build).unwrap_or_else(|error| panic!("{id}: {error}"))
}

// ---------------------------------------------------------------------------------------
// The built-in designs
// ---------------------------------------------------------------------------------------

/// `thread-pool` promises no order: its order checks are skipped, saying why, and it
/// passes the rest.
#[test]
fn the_thread_pool_passes_with_its_order_checks_skipped() {
    let passed = conformance::check(Design::from(StrategyId::ThreadPool))
        .unwrap_or_else(|failed| panic!("{failed}"));
    assert_eq!(passed.skipped(), [Check::Order, Check::OrderWithWaits, Check::Mailboxes]);
    let text = figures(&passed, Check::Order, Verdict::Skip);
    assert!(text.contains("does not promise per-key order"), "{text}");
}

/// The report prints one line per check, each with its name and verdict, under a header
/// naming the design.
#[test]
fn the_report_has_a_line_per_check_with_its_verdict_and_figures() {
    let passed = conformance::check(Design::from(StrategyId::KeyedMailbox))
        .unwrap_or_else(|failed| panic!("{failed}"));
    let text = passed.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + Check::ALL.len(), "{text}");
    assert!(lines[0].starts_with("`keyed-mailbox` keeps the contract: 10 of 10"), "{text}");
    for (line, check) in lines[1..].iter().zip(Check::ALL) {
        assert!(line.trim_start().starts_with(check.name()), "{check}: {line}");
        assert!(line.contains(" pass "), "{check}: {line}");
    }
    let order = figures(&passed, Check::Order, Verdict::Pass);
    assert!(order.contains("20,000") && order.contains("0 out of order"), "{order}");
    assert!(format!("{passed:?}").contains("keeps the contract"), "Debug shows the report");
}

/// A design this process cannot build (known from a results file only) fails every check,
/// saying why, without a deadline to wait for.
#[test]
fn a_design_that_cannot_be_built_fails_every_check() {
    let descriptor = Descriptor::custom(
        "test-recorded-only",
        "known from a results file",
        Family::Mailboxes,
        true,
        Threads::SharedPool,
    );
    let design = Design::recorded(descriptor).unwrap();
    let failed = conformance::check(design).expect_err("nothing builds it");
    assert_failed_exactly(&failed, &Check::ALL);
    let text = figures(&failed, Check::ExactlyOnce, Verdict::Fail);
    assert!(text.contains("cannot build"), "{text}");
    let error: &dyn std::error::Error = &failed;
    assert!(error.to_string().starts_with("`test-recorded-only` breaks the contract"));
}

// ---------------------------------------------------------------------------------------
// The control: the thread-pool, claiming order
// ---------------------------------------------------------------------------------------

/// The `thread-pool` registered under a descriptor that claims per-key order: the order
/// checks must catch it, both of them, and only where order is judged; what it does keep
/// (exactly once, the shared window, closing, panics, threads) still passes.
#[test]
fn a_thread_pool_that_claims_order_fails_the_order_checks() {
    let design = register("test-ordered-thread-pool", |config, handler| {
        StrategyId::ThreadPool.build(config, handler)
    });
    let failed = conformance::check(design).expect_err("the control must be caught");
    let report = failed.report();
    let failures = report.failed();
    assert!(
        failures.contains(&Check::Order) && failures.contains(&Check::OrderWithWaits),
        "{report}"
    );
    // The re-entrant check judges chain order too: the control may fail it as well.
    let judged_order = [Check::Order, Check::OrderWithWaits, Check::Reentrant];
    assert!(failures.iter().all(|check| judged_order.contains(check)), "{report}");
    for check in [Check::Order, Check::OrderWithWaits] {
        let text = figures(report, check, Verdict::Fail);
        assert!(text.contains("overlapping") && text.contains("e.g."), "{check}: {text}");
    }
}

// ---------------------------------------------------------------------------------------
// (a) An engine that starts a thread per message
// ---------------------------------------------------------------------------------------

/// Runs every message on a thread of its own, waiting out its pending step there: the
/// shared window and close protocol hold (it is an [`Engine`]), per-key order and the
/// thread budget do not.
struct ThreadPerMessage {
    core: Arc<Core>,
    started: AtomicUsize,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

/// Wakes the thread that drives a step.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `message`'s step to completion on this thread, abandoning it on a forced close.
fn run_to_completion(core: &Core, message: Message) {
    let Some(mut step) = core.start(&message) else { return };
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    while core.poll(message.key, &mut step, &mut cx).is_pending() {
        if core.is_forced() {
            core.abandon(message.key, step);
            return;
        }
        thread::park_timeout(Duration::from_millis(1));
    }
}

impl Engine for ThreadPerMessage {
    fn start(core: &Arc<Core>) -> Self {
        Self { core: Arc::clone(core), started: AtomicUsize::new(0), handles: Mutex::default() }
    }

    fn dispatch(&self, message: Message) {
        let core = Arc::clone(&self.core);
        let handle = thread::spawn(move || run_to_completion(&core, message));
        self.started.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).push(handle);
    }

    fn sweep(&self) {} // each thread abandons its own step

    fn stop(&self) {
        for handle in std::mem::take(&mut *lock(&self.handles)) {
            let _ = handle.join();
        }
    }

    fn threads_started(&self) -> usize {
        self.started.load(Ordering::Relaxed)
    }
}

/// Two messages of a key on two fresh threads run at once: both order checks fail; so does
/// the thread budget, a thread per message. The window, closing and panics are the shared
/// core's and pass.
#[test]
fn an_engine_with_a_thread_per_message_fails_order_and_threads() {
    let descriptor = Descriptor::custom(
        "test-thread-per-message",
        "a fresh thread per message",
        Family::Mailboxes,
        true,
        Threads::SharedPool,
    );
    let design = Design::register_engine::<ThreadPerMessage>(descriptor).unwrap();
    let failed = conformance::check(design).expect_err("a thread per message keeps no order");
    let report = failed.report();
    let failures = report.failed();
    for check in [Check::Order, Check::OrderWithWaits, Check::Threads] {
        assert!(failures.contains(&check), "{check} passed: {report}");
    }
    let allowed = [Check::Order, Check::OrderWithWaits, Check::Reentrant, Check::Threads];
    assert!(failures.iter().all(|check| allowed.contains(check)), "{report}");
    let text = figures(report, Check::Threads, Verdict::Fail);
    assert!(text.contains("threads started"), "{text}");
}

// ---------------------------------------------------------------------------------------
// (b) A strategy that drops every 50th message
// ---------------------------------------------------------------------------------------

/// `keyed-mailbox`, except that every 50th `submit` returns `Ok` and forgets the message.
#[derive(Debug)]
struct Lossy {
    inner: Box<dyn Strategy>,
    submits: AtomicU64,
}

impl Strategy for Lossy {
    fn id(&self) -> &str {
        "test-lossy"
    }

    fn submit(&self, message: Message) -> Result<(), SubmitError> {
        if (self.submits.fetch_add(1, Ordering::Relaxed) + 1).is_multiple_of(50) {
            return Ok(());
        }
        self.inner.submit(message)
    }

    fn drain(&self) {
        self.inner.drain();
    }

    fn close(&self) {
        self.inner.close();
    }

    fn force_close(&self) -> ForcedClose {
        self.inner.force_close()
    }

    fn threads_started(&self) -> usize {
        self.inner.threads_started()
    }

    fn stats(&self) -> Stats {
        self.inner.stats()
    }
}

/// The exactly-once check counts the 60 of 3,000 messages it dropped as lost; a loss is
/// not taken for disorder (the order checks pass), nor does it touch the thread budget.
#[test]
fn a_strategy_that_drops_every_50th_message_fails_exactly_once() {
    let design = register("test-lossy", |config, handler| {
        let inner = StrategyId::KeyedMailbox.build(config, handler)?;
        Ok(Box::new(Lossy { inner, submits: AtomicU64::new(0) }))
    });
    let failed = conformance::check(design).expect_err("a lossy strategy must be caught");
    let report = failed.report();
    let text = figures(report, Check::ExactlyOnce, Verdict::Fail);
    assert!(text.contains("2,940 of 3,000 ran once, 60 lost, 0 duplicated"), "{text}");
    for check in [Check::Order, Check::OrderWithWaits, Check::Threads, Check::Mailboxes] {
        figures(report, check, Verdict::Pass);
    }
}

// ---------------------------------------------------------------------------------------
// (c) A design that ignores the window
// ---------------------------------------------------------------------------------------

/// `keyed-mailbox` built with the largest window whatever `max_in_flight` says: it lets
/// everything in at once. Only the window check fails.
#[test]
fn a_design_that_ignores_the_window_fails_the_window_check_only() {
    let design = register("test-windowless", |config, handler| {
        StrategyId::KeyedMailbox
            .build(StrategyConfig { max_in_flight: MAX_WINDOW, ..config }, handler)
    });
    let failed = conformance::check(design).expect_err("an unbounded window must be caught");
    assert_failed_exactly(&failed, &[Check::Window]);
    let text = figures(&failed, Check::Window, Verdict::Fail);
    assert!(text.contains("12 of 12 held messages admitted before any finished"), "{text}");
}

// ---------------------------------------------------------------------------------------
// (c') A strategy whose submit blocks its own handlers
// ---------------------------------------------------------------------------------------

/// One worker thread that runs messages in submission order, polling each pending step to
/// completion before the next (so order holds), with a window of its own: `submit` blocks
/// while `max_in_flight` messages are unfinished, from any thread. That is the bug: a
/// handler that submits at a full window blocks the only thread that could free a credit.
#[derive(Debug)]
struct OneLane {
    lane: Arc<Lane>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

struct Lane {
    handler: Arc<dyn Handler>,
    max_in_flight: usize,
    state: Mutex<LaneState>,
    changed: Condvar,
    forced: AtomicBool,
}

impl std::fmt::Debug for Lane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lane").field("state", &self.state).finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct LaneState {
    queue: VecDeque<Message>,
    in_flight: usize,
    peak: usize,
    closed: bool,
    stop: bool,
    failed: u64,
    discarded: u64,
    abandoned: u64,
}

impl Lane {
    fn work(&self) {
        let mut state = lock(&self.state);
        loop {
            if let Some(message) = state.queue.pop_front() {
                if self.forced.load(Ordering::SeqCst) {
                    state.discarded += 1;
                } else {
                    drop(state);
                    self.run(&message);
                    state = lock(&self.state);
                }
                state.in_flight -= 1;
                self.changed.notify_all();
            } else if state.stop {
                return;
            } else {
                state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
            }
        }
    }

    fn run(&self, message: &Message) {
        let mut step = match catch_unwind(AssertUnwindSafe(|| self.handler.handle(message))) {
            Ok(Outcome::Done) => return,
            Ok(Outcome::Pending(step)) => step,
            Err(_) => {
                lock(&self.state).failed += 1;
                return;
            }
        };
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        loop {
            match catch_unwind(AssertUnwindSafe(|| step.as_mut().poll(&mut cx))) {
                Ok(Poll::Ready(())) => return,
                Err(_) => {
                    lock(&self.state).failed += 1;
                    return;
                }
                Ok(Poll::Pending) if self.forced.load(Ordering::SeqCst) => {
                    lock(&self.state).abandoned += 1;
                    return;
                }
                Ok(Poll::Pending) => thread::park_timeout(Duration::from_millis(1)),
            }
        }
    }

    fn wait_empty(&self) -> MutexGuard<'_, LaneState> {
        let mut state = lock(&self.state);
        while state.in_flight > 0 {
            state = self.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state
    }
}

impl OneLane {
    fn start(config: StrategyConfig, handler: Arc<dyn Handler>) -> Self {
        let lane = Arc::new(Lane {
            handler,
            max_in_flight: config.max_in_flight,
            state: Mutex::default(),
            changed: Condvar::new(),
            forced: AtomicBool::new(false),
        });
        let worker = {
            let lane = Arc::clone(&lane);
            thread::spawn(move || lane.work())
        };
        Self { lane, worker: Mutex::new(Some(worker)) }
    }

    /// Closes admission, waits until nothing is in flight, stops and joins the worker.
    fn shut(&self) {
        lock(&self.lane.state).closed = true;
        self.lane.changed.notify_all();
        self.lane.wait_empty().stop = true;
        self.lane.changed.notify_all();
        if let Some(worker) = lock(&self.worker).take() {
            let _ = worker.join();
        }
    }
}

impl Strategy for OneLane {
    fn id(&self) -> &str {
        "test-one-lane"
    }

    fn submit(&self, message: Message) -> Result<(), SubmitError> {
        let mut state = lock(&self.lane.state);
        loop {
            if state.closed {
                return Err(SubmitError::Closed(message));
            }
            if state.in_flight < self.lane.max_in_flight {
                break;
            }
            state = self.lane.changed.wait(state).unwrap_or_else(|p| p.into_inner());
        }
        state.in_flight += 1;
        state.peak = state.peak.max(state.in_flight);
        state.queue.push_back(message);
        self.lane.changed.notify_all();
        Ok(())
    }

    fn drain(&self) {
        drop(self.lane.wait_empty());
    }

    fn close(&self) {
        self.shut();
    }

    fn force_close(&self) -> ForcedClose {
        let before = {
            let state = lock(&self.lane.state);
            (state.discarded, state.abandoned)
        };
        self.lane.forced.store(true, Ordering::SeqCst);
        self.shut();
        let state = lock(&self.lane.state);
        ForcedClose { discarded: state.discarded - before.0, abandoned: state.abandoned - before.1 }
    }

    fn threads_started(&self) -> usize {
        1
    }

    fn stats(&self) -> Stats {
        let state = lock(&self.lane.state);
        Stats {
            failed: state.failed,
            discarded: state.discarded,
            abandoned: state.abandoned,
            peak_in_flight: state.peak,
            windows: 1,
            ..Stats::default()
        }
    }
}

impl Drop for OneLane {
    fn drop(&mut self) {
        if lock(&self.worker).is_some() {
            self.force_close();
        }
    }
}

/// The re-entrant check deadlocks it (16 chains at a full window of 8, the one worker
/// blocked in its handler's `submit`) and says so at the deadline, leaving the stuck
/// strategy behind; every other check passes.
#[test]
fn a_strategy_whose_submit_blocks_its_own_handlers_fails_the_reentrant_check_only() {
    let design =
        register("test-one-lane", |config, handler| Ok(Box::new(OneLane::start(config, handler))));
    let options = Options { deadline: Duration::from_secs(5) };
    let failed = conformance::check_with(design, options).expect_err("the deadlock is caught");
    assert_failed_exactly(&failed, &[Check::Reentrant]);
    let text = figures(&failed, Check::Reentrant, Verdict::Fail);
    assert!(text.contains("did not finish within 5 s: stuck in `chains"), "{text}");
}

// ---------------------------------------------------------------------------------------
// (d) A force_close that leaves messages running
// ---------------------------------------------------------------------------------------

/// `keyed-mailbox`, except that `force_close` starts a graceful close on another thread
/// and returns at once, reporting nothing: queued messages go on running after it
/// returned, and the steps that never complete are never abandoned.
#[derive(Debug)]
struct LeavesRunning {
    inner: Arc<dyn Strategy>,
}

impl Strategy for LeavesRunning {
    fn id(&self) -> &str {
        "test-leaves-running"
    }

    fn submit(&self, message: Message) -> Result<(), SubmitError> {
        self.inner.submit(message)
    }

    fn drain(&self) {
        self.inner.drain();
    }

    fn close(&self) {
        self.inner.close();
    }

    fn force_close(&self) -> ForcedClose {
        let inner = Arc::clone(&self.inner);
        thread::spawn(move || inner.close());
        ForcedClose::default()
    }

    fn threads_started(&self) -> usize {
        self.inner.threads_started()
    }

    fn stats(&self) -> Stats {
        self.inner.stats()
    }
}

/// Only the force-close check fails: the handler was called after `force_close` returned,
/// and what it reported does not account for what was admitted.
#[test]
fn a_force_close_that_leaves_messages_running_fails_the_force_close_check_only() {
    let design = register("test-leaves-running", |config, handler| {
        let inner = StrategyId::KeyedMailbox.build(config, handler)?;
        Ok(Box::new(LeavesRunning { inner: Arc::from(inner) }))
    });
    let failed = conformance::check(design).expect_err("a leaky force_close must be caught");
    assert_failed_exactly(&failed, &[Check::ForceClose]);
    let text = figures(&failed, Check::ForceClose, Verdict::Fail);
    assert!(text.contains("after it returned:") && text.contains("handler calls"), "{text}");
    assert!(text.contains("reported 0 abandoned"), "{text}");
}

// ---------------------------------------------------------------------------------------
// (e) A graceful close counted as a discard
// ---------------------------------------------------------------------------------------

/// `keyed-mailbox`, except that once `close` was called its `stats()` count one message
/// discarded, as a strategy that miscounts what a graceful close finished would.
#[derive(Debug)]
struct MiscountsClose {
    inner: Box<dyn Strategy>,
    closed: AtomicBool,
}

impl Strategy for MiscountsClose {
    fn id(&self) -> &str {
        "test-miscounts-close"
    }

    fn submit(&self, message: Message) -> Result<(), SubmitError> {
        self.inner.submit(message)
    }

    fn drain(&self) {
        self.inner.drain();
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.inner.close();
    }

    fn force_close(&self) -> ForcedClose {
        self.inner.force_close()
    }

    fn threads_started(&self) -> usize {
        self.inner.threads_started()
    }

    fn stats(&self) -> Stats {
        let stats = self.inner.stats();
        let miscounted = u64::from(self.closed.load(Ordering::SeqCst));
        Stats { discarded: stats.discarded + miscounted, ..stats }
    }
}

/// Only the drain-and-close check fails: after a graceful close, `stats()` must count
/// nothing discarded.
#[test]
fn a_close_counted_as_a_discard_fails_the_drain_and_close_check_only() {
    let design = register("test-miscounts-close", |config, handler| {
        let inner = StrategyId::KeyedMailbox.build(config, handler)?;
        Ok(Box::new(MiscountsClose { inner, closed: AtomicBool::new(false) }))
    });
    let failed = conformance::check(design).expect_err("a miscounted close must be caught");
    assert_failed_exactly(&failed, &[Check::DrainAndClose]);
    let text = figures(&failed, Check::DrainAndClose, Verdict::Fail);
    assert!(text.contains("after close, stats() report 0 failed, 1 discarded"), "{text}");
}
