//! The fixture: one strategy built with a [`TestHandler`], what it accepted and handed
//! back, the checks run on it, and watchdogs so that a broken strategy fails a test
//! instead of hanging it.

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock, Weak};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use strategies::testkit::{within, Log, OrderLog, Report};
use strategies::{ForcedClose, Message, Strategy, StrategyConfig, StrategyId, SubmitError};

use super::classes::has_mailboxes;
use super::gates::Gates;
use super::handler::{quiet_planned_panics, TestHandler};
use super::ledger::Ledger;
use super::{lock, PATIENCE};

/// One strategy under test, its handler's log and gates, and what it accepted.
pub struct Fixture {
    pub id: StrategyId,
    pub config: StrategyConfig,
    pub log: Arc<OrderLog>,
    pub gates: Arc<Gates>,
    /// `None` only while dropping.
    strategy: Option<Arc<dyn Strategy>>,
    /// What the test and the handler's chain jobs submitted, and what became of it.
    submissions: Arc<Submissions>,
    /// Dropped with the fixture, which stops its submit watchdog.
    _stop_watchdog: mpsc::Sender<()>,
}

/// Every submission to the strategy under test, from the test and from its handler (chain
/// jobs submit their next message from inside the strategy): each accepted or handed-back
/// message is recorded here, and each call is counted for the submit watchdog, so that a
/// handler's submission that blocks for ever fails the test too.
#[derive(Debug, Default)]
pub struct Submissions {
    /// The strategy, bound once it is built. Weak: the strategy holds the handler, which
    /// holds this.
    strategy: OnceLock<Weak<dyn Strategy>>,
    accepted: Mutex<Vec<Message>>,
    rejected: Mutex<Vec<Message>>,
    watch: Arc<SubmitWatch>,
}

impl Submissions {
    /// Submits `message` to the bound strategy and records whether it was accepted or
    /// handed back (a handed-back message must be the one submitted). Refused, and recorded
    /// as handed back, once the fixture has dropped the strategy.
    pub fn submit(&self, message: Message) -> Result<(), SubmitError> {
        match self.strategy.get().and_then(Weak::upgrade) {
            Some(strategy) => self.submit_to(&*strategy, message),
            None => {
                lock(&self.rejected).push(message);
                Err(SubmitError::Closed(message))
            }
        }
    }

    fn submit_to(&self, strategy: &dyn Strategy, message: Message) -> Result<(), SubmitError> {
        self.watch.begun.fetch_add(1, Ordering::SeqCst);
        let result = strategy.submit(message);
        self.watch.returned.fetch_add(1, Ordering::SeqCst);
        match result {
            Ok(()) => lock(&self.accepted).push(message),
            Err(error) => {
                assert_eq!(error.into_message(), message, "handed back another message");
                lock(&self.rejected).push(message);
            }
        }
        result
    }

    /// Whether the watchdog found submissions stuck and closed admission to end them.
    pub fn stalled(&self) -> bool {
        self.watch.stalled.load(Ordering::SeqCst)
    }
}

/// Turns a `submit` that blocks forever (a window whose credits leaked) into a failure
/// instead of a hung test: when submissions are under way and none has returned for
/// [`PATIENCE`], the watchdog closes admission, which wakes the blocked `submit` with
/// `SubmitError::Closed`, and [`Fixture::try_submit`] reports the stall.
#[derive(Debug, Default)]
struct SubmitWatch {
    begun: AtomicU64,
    returned: AtomicU64,
    /// Set when the watchdog closed admission.
    stalled: AtomicBool,
}

impl SubmitWatch {
    fn spawn_watchdog(self: &Arc<Self>, strategy: Weak<dyn Strategy>, stop: mpsc::Receiver<()>) {
        let watch = Arc::clone(self);
        thread::spawn(move || {
            let mut last_returned = 0;
            let mut progress_at = Instant::now();
            while let Err(mpsc::RecvTimeoutError::Timeout) =
                stop.recv_timeout(Duration::from_millis(100))
            {
                let begun = watch.begun.load(Ordering::SeqCst);
                let returned = watch.returned.load(Ordering::SeqCst);
                if returned != last_returned || begun == returned {
                    last_returned = returned;
                    progress_at = Instant::now();
                } else if progress_at.elapsed() >= PATIENCE {
                    watch.stalled.store(true, Ordering::SeqCst);
                    if let Some(strategy) = strategy.upgrade() {
                        // `close` itself may never return: leave it on its own thread.
                        thread::spawn(move || strategy.close());
                    }
                    return;
                }
            }
        });
    }
}

impl fmt::Debug for Fixture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fixture")
            .field("id", &self.id)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Fixture {
    /// Builds `id` with `config` and a [`TestHandler`].
    #[track_caller]
    pub fn new(id: StrategyId, config: StrategyConfig) -> Self {
        quiet_planned_panics();
        let log = Arc::new(OrderLog::default());
        let gates = Arc::new(Gates::default());
        let submissions = Arc::new(Submissions::default());
        let handler = Arc::new(TestHandler {
            log: Arc::clone(&log),
            gates: Arc::clone(&gates),
            submissions: Arc::clone(&submissions),
        });
        let strategy = id
            .build(config, handler)
            .unwrap_or_else(|error| panic!("{id}: cannot build with {config:?}: {error}"));
        assert_eq!(strategy.id(), id.as_str(), "built the wrong strategy");
        let strategy: Arc<dyn Strategy> = Arc::from(strategy);
        let bound = submissions.strategy.set(Arc::downgrade(&strategy));
        assert!(bound.is_ok(), "submissions are bound once");
        let (stop_watchdog, stop) = mpsc::channel();
        submissions.watch.spawn_watchdog(Arc::downgrade(&strategy), stop);
        Self {
            id,
            config,
            log,
            gates,
            strategy: Some(strategy),
            submissions,
            _stop_watchdog: stop_watchdog,
        }
    }

    /// The strategy under test.
    pub fn strategy(&self) -> &dyn Strategy {
        &**self.shared_ref()
    }

    fn shared_ref(&self) -> &Arc<dyn Strategy> {
        self.strategy.as_ref().expect("the strategy lives until the fixture is dropped")
    }

    /// A handle to the strategy for another thread.
    pub fn shared(&self) -> Arc<dyn Strategy> {
        Arc::clone(self.shared_ref())
    }

    /// Submits `message`, which must be accepted.
    #[track_caller]
    pub fn submit(&self, message: Message) {
        if let Err(error) = self.try_submit(message) {
            panic!("{}: an open strategy refused a message: {error}", self.id);
        }
    }

    /// Submits every message, each of which must be accepted.
    #[track_caller]
    pub fn submit_all(&self, messages: impl IntoIterator<Item = Message>) {
        for message in messages {
            self.submit(message);
        }
    }

    /// Submits `message` and remembers whether it was accepted or handed back; a handed
    /// back message must be the one submitted.
    #[track_caller]
    pub fn try_submit(&self, message: Message) -> Result<(), SubmitError> {
        let result = self.submissions.submit_to(self.strategy(), message);
        if result.is_err() && self.stalled() {
            panic!(
                "{}: submit made no progress for {PATIENCE:?} (window credits lost, or a handler \
                 blocked submitting into its own strategy?); \
                 the watchdog closed admission to end the wait",
                self.id
            );
        }
        result
    }

    /// The messages `submit` accepted so far, the test's and the handler's.
    pub fn accepted(&self) -> Vec<Message> {
        lock(&self.submissions.accepted).clone()
    }

    /// The messages `submit` handed back so far, the test's and the handler's.
    pub fn rejected(&self) -> Vec<Message> {
        lock(&self.submissions.rejected).clone()
    }

    /// Whether the submit watchdog found submissions (the test's or the handler's) stuck
    /// for [`PATIENCE`] and closed admission to end them.
    pub fn stalled(&self) -> bool {
        self.submissions.stalled()
    }

    /// `drain`, which must return within [`PATIENCE`].
    #[track_caller]
    pub fn drain(&self) {
        let strategy = self.shared();
        within(&format!("{}: drain", self.id), PATIENCE, move || strategy.drain());
    }

    /// `close`, which must return within [`PATIENCE`].
    #[track_caller]
    pub fn close(&self) {
        let strategy = self.shared();
        within(&format!("{}: close", self.id), PATIENCE, move || strategy.close());
    }

    /// `force_close`, which must return within [`PATIENCE`].
    #[track_caller]
    pub fn force_close(&self) -> ForcedClose {
        let strategy = self.shared();
        within(&format!("{}: force_close", self.id), PATIENCE, move || strategy.force_close())
    }

    /// Waits until `ready` holds; fails the test, naming `what`, after [`PATIENCE`].
    #[track_caller]
    pub fn wait_until(&self, what: &str, ready: impl Fn(&Log) -> bool) {
        if !self.log.wait_until(PATIENCE, ready) {
            let (started, ended) = self.log.with_log(|log| (log.started(), log.ended()));
            panic!(
                "{}: timed out after {PATIENCE:?} waiting for {what} ({started} started, {ended} ended)",
                self.id
            );
        }
    }

    /// Waits until `count` messages have ended.
    #[track_caller]
    pub fn wait_ended(&self, count: usize) {
        self.wait_until(&format!("{count} messages to end"), |log| log.ended() >= count);
    }

    /// Waits until `count` messages have started.
    #[track_caller]
    pub fn wait_started(&self, count: usize) {
        self.wait_until(&format!("{count} messages to start"), |log| log.started() >= count);
    }

    /// What ran, against what was accepted and handed back.
    pub fn report(&self) -> Report {
        self.log.report(&self.accepted(), &self.rejected())
    }

    /// Drains, then checks that every accepted message ran once, in per-key order.
    #[track_caller]
    pub fn assert_ordered(&self, context: &str) {
        self.drain();
        self.report().assert_ordered(&format!("{}: {context}", self.id));
    }

    /// Drains, then checks that every accepted message ran exactly once (order aside).
    #[track_caller]
    pub fn assert_complete(&self, context: &str) {
        self.drain();
        self.report().assert_complete(&format!("{}: {context}", self.id));
    }

    /// Checks, without draining, order for ordered strategies and exactly-once for all.
    #[track_caller]
    pub fn check_contract(&self, context: &str) {
        let report = self.report();
        let context = format!("{}: {context}", self.id);
        if self.id.is_ordered() {
            report.assert_ordered(&context);
        } else {
            report.assert_complete(&context);
        }
    }

    /// Drains, then checks order for ordered strategies and exactly-once for all.
    #[track_caller]
    pub fn assert_contract(&self, context: &str) {
        self.drain();
        self.check_contract(context);
    }

    /// Where every submitted message went so far (see [`Ledger`]).
    pub fn ledger(&self) -> Ledger {
        let (accepted, rejected) = (self.accepted(), self.rejected());
        let report = self.log.report(&accepted, &rejected);
        let (ended, handler_failures) =
            self.log.with_log(|log| (log.ended() as u64, log.failed() as u64));
        let stats = self.strategy().stats();
        Ledger {
            submitted: (accepted.len() + rejected.len()) as u64,
            handed_back: rejected.len() as u64,
            completed: ended.saturating_sub(handler_failures),
            handler_failures,
            never_started: report.lost as u64,
            never_ended: report.unfinished as u64,
            failed: stats.failed,
            discarded: stats.discarded,
            abandoned: stats.abandoned,
            report,
        }
    }

    /// Asserts that the strategy's per-key mailboxes are all retired: `Some(0)` for the
    /// per-key mailbox strategies, `None` (no mailboxes) for the others. Exact as soon as
    /// `drain`, `close` or `force_close` returns: a runner retires an emptied mailbox before
    /// it returns the window credits those calls wait for.
    #[track_caller]
    pub fn assert_mailboxes_retired(&self, context: &str) {
        let expected = has_mailboxes(self.id).then_some(0);
        let live = self.strategy().stats().live_mailboxes;
        assert_eq!(live, expected, "{}: {context}: live mailboxes", self.id);
    }

    /// The threads handlers ran on.
    pub fn handler_threads(&self) -> HashSet<ThreadId> {
        self.log.with_log(Log::threads)
    }

    /// Submits `messages` from a helper thread (the window may block it) while `observe`
    /// runs on this one, then opens every gate so the submitter can finish, also when
    /// `observe` panics. `observe` is given the number of messages submitted so far.
    pub fn observe_while_submitting<T>(
        &self,
        messages: Vec<Message>,
        observe: impl FnOnce(&AtomicUsize) -> T,
    ) -> T {
        struct OpenOnDrop<'a>(&'a Gates);
        impl Drop for OpenOnDrop<'_> {
            fn drop(&mut self) {
                self.0.open_all();
            }
        }
        let submitted = AtomicUsize::new(0);
        thread::scope(|scope| {
            let _release = OpenOnDrop(&self.gates);
            scope.spawn(|| {
                for message in messages {
                    self.submit(message);
                    submitted.fetch_add(1, Ordering::SeqCst);
                }
            });
            observe(&submitted)
        })
    }
}

impl Drop for Fixture {
    /// Opens every gate so nothing stays blocked, then closes the strategy by force (a
    /// no-op if it is closed already) and drops it, on a helper thread: after a failure that
    /// thread is left alone, otherwise it must finish within [`PATIENCE`]. Closing first
    /// means no handler still runs when the fixture lets go of the strategy, so a chain
    /// job's handle to it is never the last one.
    fn drop(&mut self) {
        self.gates.open_all();
        let Some(strategy) = self.strategy.take() else { return };
        let close_and_drop = move || {
            strategy.force_close();
            drop(strategy);
        };
        if thread::panicking() {
            thread::spawn(close_and_drop);
        } else {
            within(&format!("{}: dropping the strategy", self.id), PATIENCE, close_and_drop);
        }
    }
}
