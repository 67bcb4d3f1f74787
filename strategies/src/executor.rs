//! What every strategy shares: the [`Core`] (window, handler, counters) and the
//! [`Executor`] that turns an [`Engine`] into a [`Strategy`] with one close protocol.
//!
//! # Close protocol
//!
//! Graceful ([`Strategy::close`]):
//! 1. close the window: every later `submit`, and every one blocked on credits, fails and
//!    hands its message back;
//! 2. wait until the window is empty: a submission admitted before step 1 is counted in
//!    flight, so it is queued and run before this returns (run or handed back, never lost);
//! 3. stop and join the engine's threads.
//!
//! Forced ([`Strategy::force_close`]):
//! 1. close the window and raise the *forced* flag: engines discard, rather than run, any
//!    message they dequeue from now on, and abandon a step that returns pending;
//! 2. sweep until the window is empty: each sweep discards what is queued and abandons the
//!    stored pending steps the engine can reach; a step running on a thread finishes;
//! 3. stop and join the threads; report how many were discarded and abandoned.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::sync::thread::{self, JoinHandle};
use crate::sync::{lock, pause, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::window::Window;
use crate::{
    ForcedClose, Handler, Message, Outcome, Pending, Stats, Strategy, StrategyConfig, StrategyId,
    SubmitError,
};

/// How long a forced close waits for running steps between two sweeps.
const SWEEP_INTERVAL_US: u64 = 200;

/// State shared by a strategy's submit path and its threads.
pub(crate) struct Core {
    pub(crate) config: StrategyConfig,
    pub(crate) window: Window,
    handler: Arc<dyn Handler>,
    /// Raised by a forced close: dequeued messages are discarded instead of run.
    forced: AtomicBool,
    failed: AtomicU64,
    discarded: AtomicU64,
    abandoned: AtomicU64,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("config", &self.config)
            .field("window", &self.window)
            .field("forced", &self.forced)
            .finish_non_exhaustive()
    }
}

impl Core {
    pub(crate) fn new(config: StrategyConfig, handler: Arc<dyn Handler>) -> Self {
        Self {
            config,
            window: Window::new(config.max_in_flight),
            handler,
            forced: AtomicBool::new(false),
            failed: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
            abandoned: AtomicU64::new(0),
        }
    }

    /// Starts `message`: runs its handler, containing a panic. Returns the rest of the step
    /// when it is pending; otherwise the message is finished. A forced close discards it
    /// instead of running it.
    pub(crate) fn start(&self, message: &Message) -> Option<Pending> {
        if self.is_forced() {
            self.discard(1);
            return None;
        }
        let step = self.handle(message);
        if step.is_none() {
            self.window.finish();
        }
        step
    }

    /// [`Core::start`], except that a message that ends keeps its window credit in `held`
    /// until [`Held::release`] (or the drop of `held`): a runner returns the credit of a
    /// key's last message only after it retired the emptied mailbox, so that `drain` never
    /// returns while a mailbox is still live.
    pub(crate) fn start_holding(&self, message: &Message, held: &mut Held<'_>) -> Option<Pending> {
        if self.is_forced() {
            self.discard(1);
            return None;
        }
        let step = self.handle(message);
        if step.is_none() {
            held.credits += 1;
        }
        step
    }

    /// Runs the handler, containing a panic (counted as a failure): the pending rest of the
    /// step, or `None` when the message ended.
    #[inline]
    fn handle(&self, message: &Message) -> Option<Pending> {
        match catch_unwind(AssertUnwindSafe(|| self.handler.handle(message))) {
            Ok(Outcome::Done) => None,
            Ok(Outcome::Pending(step)) => Some(step),
            Err(_) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Polls a pending step, containing a panic. `Ready` means the message is finished.
    pub(crate) fn poll(&self, step: &mut Pending, cx: &mut Context<'_>) -> Poll<()> {
        let poll = self.poll_step(step, cx);
        if poll.is_ready() {
            self.window.finish();
        }
        poll
    }

    /// [`Core::poll`], keeping the credit of a step that ends in `held` (see
    /// [`Core::start_holding`]).
    pub(crate) fn poll_holding(
        &self,
        step: &mut Pending,
        cx: &mut Context<'_>,
        held: &mut Held<'_>,
    ) -> Poll<()> {
        let poll = self.poll_step(step, cx);
        if poll.is_ready() {
            held.credits += 1;
        }
        poll
    }

    /// Polls a step, containing a panic (counted as a failure, and the step as ended). A
    /// step that ends is dropped here, inside the containment too: `step` is left holding
    /// [`Ended`], so a destructor that panics cannot unwind through a runner.
    #[inline]
    fn poll_step(&self, step: &mut Pending, cx: &mut Context<'_>) -> Poll<()> {
        let polled = catch_unwind(AssertUnwindSafe(|| {
            let poll = step.as_mut().poll(cx);
            if poll.is_ready() {
                drop(std::mem::replace(step, Box::pin(Ended)));
            }
            poll
        }));
        match polled {
            Ok(poll) => poll,
            Err(_) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                drop_contained(std::mem::replace(step, Box::pin(Ended)));
                Poll::Ready(())
            }
        }
    }

    /// An empty set of held window credits (see [`Core::start_holding`]).
    pub(crate) fn hold(&self) -> Held<'_> {
        Held { core: self, credits: 0 }
    }

    /// Whether a forced close has begun.
    pub(crate) fn is_forced(&self) -> bool {
        // Acquire: pairs with the Release store in `Executor::force_close`.
        self.forced.load(Ordering::Acquire)
    }

    /// Drops `count` queued messages without running them (forced close).
    pub(crate) fn discard(&self, count: u64) {
        if count > 0 {
            self.discarded.fetch_add(count, Ordering::Relaxed);
            for _ in 0..count {
                self.window.finish();
            }
        }
    }

    /// Drops a pending step before it completed (forced close); a panic in its destructor
    /// is contained.
    pub(crate) fn abandon(&self, step: Pending) {
        self.abandoned.fetch_add(1, Ordering::Relaxed);
        drop_contained(step);
        self.window.finish();
    }

    /// [`Core::abandon`], keeping the window credit in `held` (see [`Core::start_holding`]).
    pub(crate) fn abandon_holding(&self, step: Pending, held: &mut Held<'_>) {
        self.abandoned.fetch_add(1, Ordering::Relaxed);
        held.credits += 1;
        drop_contained(step);
    }
}

/// What a step that ended is replaced with: a future with nothing to drop (and no
/// allocation: it has no size).
struct Ended;

impl std::future::Future for Ended {
    type Output = ();

    fn poll(self: std::pin::Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        Poll::Ready(())
    }
}

/// Drops a step whose destructor may panic (user code), containing the panic: its
/// message is already accounted for (ended, failed or abandoned).
fn drop_contained(step: Pending) {
    let _ = catch_unwind(AssertUnwindSafe(move || drop(step)));
}

/// Window credits of messages that finished but are not yet returned to the window;
/// returned by [`Held::release`], and at the latest when dropped (also while unwinding, so
/// a panic escaping a runner cannot leak them).
#[derive(Debug)]
pub(crate) struct Held<'a> {
    core: &'a Core,
    credits: u32,
}

impl Held<'_> {
    /// Returns every held credit to the window now.
    #[inline]
    pub(crate) fn release(&mut self) {
        while self.credits > 0 {
            self.credits -= 1;
            self.core.window.finish();
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// The part of a strategy that differs between designs: where messages go and who runs
/// them. [`Executor`] adds admission and closing.
pub(crate) trait Engine: Send + Sync + Sized + 'static {
    /// The strategy this engine implements.
    const ID: StrategyId;

    /// Starts the engine (its threads, or lazily later).
    fn start(core: &Arc<Core>) -> Self;

    /// Queues an admitted message. Never blocks on the window and never fails.
    fn dispatch(&self, message: Message);

    /// Forced close: discards the queued messages and abandons the stored pending steps
    /// the engine can reach (through [`Core::discard`] and [`Core::abandon`]).
    fn sweep(&self);

    /// Stops and joins every thread; called once, when nothing is in flight.
    fn stop(&self);

    /// OS threads started so far.
    fn threads_started(&self) -> usize;

    /// Per-key mailboxes alive now; `None` for engines without them.
    fn live_mailboxes(&self) -> Option<usize> {
        None
    }
}

/// A [`Strategy`] made of a [`Core`] and an [`Engine`].
pub(crate) struct Executor<E: Engine> {
    core: Arc<Core>,
    engine: E,
    /// Set once the threads have been stopped, so closing twice is harmless.
    stopped: Mutex<bool>,
}

impl<E: Engine> Executor<E> {
    pub(crate) fn boxed(core: Arc<Core>) -> Box<dyn Strategy> {
        let engine = E::start(&core);
        Box::new(Self { core, engine, stopped: Mutex::new(false) })
    }

    fn stop_once(&self) {
        let mut stopped = lock(&self.stopped);
        if !*stopped {
            self.engine.stop();
            *stopped = true;
        }
    }
}

impl<E: Engine> std::fmt::Debug for Executor<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor").field("core", &self.core).finish_non_exhaustive()
    }
}

impl<E: Engine> Strategy for Executor<E> {
    fn id(&self) -> StrategyId {
        E::ID
    }

    fn submit(&self, message: Message) -> Result<(), SubmitError> {
        match self.core.window.admit() {
            Ok(()) => {
                self.engine.dispatch(message);
                Ok(())
            }
            Err(_) => Err(SubmitError::Closed(message)),
        }
    }

    fn drain(&self) {
        self.core.window.wait_empty();
    }

    fn close(&self) {
        self.core.window.close();
        self.core.window.wait_empty();
        self.stop_once();
    }

    fn force_close(&self) -> ForcedClose {
        let before = self.stats();
        self.core.window.close();
        // Release: pairs with the Acquire load in `Core::is_forced`.
        self.core.forced.store(true, Ordering::Release);
        loop {
            self.engine.sweep();
            if self.core.window.in_flight() == 0 {
                break;
            }
            pause(Duration::from_micros(SWEEP_INTERVAL_US));
        }
        self.stop_once();
        let after = self.stats();
        ForcedClose {
            discarded: after.discarded - before.discarded,
            abandoned: after.abandoned - before.abandoned,
        }
    }

    fn threads_started(&self) -> usize {
        self.engine.threads_started()
    }

    fn stats(&self) -> Stats {
        Stats {
            failed: self.core.failed.load(Ordering::Relaxed),
            discarded: self.core.discarded.load(Ordering::Relaxed),
            abandoned: self.core.abandoned.load(Ordering::Relaxed),
            peak_in_flight: self.core.window.peak_in_flight(),
            live_mailboxes: self.engine.live_mailboxes(),
        }
    }
}

impl<E: Engine> Drop for Executor<E> {
    /// Dropping an open strategy closes it by force, so that no thread outlives it.
    fn drop(&mut self) {
        let stopped = *self.stopped.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        if !stopped {
            self.force_close();
        }
    }
}

/// The OS threads an engine started: counted for `threads_started`, joined by `stop`.
#[derive(Debug, Default)]
pub(crate) struct Threads {
    started: AtomicUsize,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl Threads {
    /// Starts a named thread running `body`.
    pub(crate) fn spawn(&self, name: String, body: impl FnOnce() + Send + 'static) {
        let handle = thread::Builder::new()
            .name(name)
            .spawn(body)
            .unwrap_or_else(|error| panic!("cannot start a worker thread: {error}"));
        self.started.fetch_add(1, Ordering::Relaxed);
        lock(&self.handles).push(handle);
    }

    /// Threads started so far (joined ones included).
    pub(crate) fn started(&self) -> usize {
        self.started.load(Ordering::Relaxed)
    }

    /// Waits for every started thread to end; the caller has told them to stop. Handler
    /// panics are contained by `Core`, so a worker that panicked hit a bug of ours: its
    /// panic is passed on rather than hidden.
    pub(crate) fn join_all(&self) {
        let handles = std::mem::take(&mut *lock(&self.handles));
        let mut first_panic = None;
        for handle in handles {
            if let Err(panic) = handle.join() {
                first_panic.get_or_insert(panic);
            }
        }
        if let Some(panic) = first_panic {
            std::panic::resume_unwind(panic);
        }
    }
}

/// Waits until `counter` (a thread-start count kept by a pool's start hook) reaches
/// `expected`, so that `threads_started` is exact as soon as the strategy is built.
pub(crate) fn wait_for_threads(counter: &std::sync::atomic::AtomicUsize, expected: usize) {
    // Acquire: pairs with the Release increments of the start hooks in `TokioTasks::start`
    // and `RayonJobs::start`.
    while counter.load(std::sync::atomic::Ordering::Acquire) < expected {
        std::thread::sleep(Duration::from_micros(50));
    }
}
