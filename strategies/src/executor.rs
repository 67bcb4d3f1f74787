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
//!    stored pending steps the engine can reach; a step being polled on a thread (a
//!    worker's, or the waker's that finishes a wait in `keyed-mailbox` and
//!    `work-stealing`) finishes that poll, and is abandoned if it is still pending;
//! 3. stop and join the threads; report how many were discarded and abandoned.
//!
//! Forced, step 1 also empties the admission queue (below): its messages count as
//! discarded. Graceful, step 2 waits for queued messages too: they were accepted.
//!
//! # Re-entrant submissions
//!
//! A handler may submit into its own strategy (a saga sending a command). Blocking there
//! on a full window could deadlock: the credit comes back only when a message finishes,
//! and the blocked thread may be the one that would finish it. So the core tells such a
//! submission apart and never blocks it:
//!
//! 1. **Mark.** Around every handler call and every poll of a pending step, which all run
//!    here under `catch_unwind` ([`Core::handle`], [`Core::poll_step`]) on whatever thread
//!    makes them (a worker, or the thread that woke a step whose mailbox finishes waits on
//!    the waking thread), the core pushes its own address on a thread-local stack and pops
//!    it after. A submission is *re-entrant*
//!    when the strategy's core is on the calling thread's stack. A stack rather than one
//!    slot: a handler may submit into another strategy instance that runs its handler on
//!    the same thread (`inline`), and that handler may submit into the first one. Another
//!    instance has another core, so it is never taken for this one.
//! 2. **Admit.** Every submission first tries to take a credit without blocking. If none
//!    is free, an outside submission blocks in [`Window::admit`] as before; a re-entrant one
//!    calls [`Window::admit_or_queue`], which admits it if a credit came free meanwhile and
//!    otherwise appends it to the window's admission queue: `submit` returns `Ok` at once.
//! 3. **Serve.** Every credit a finishing message returns goes through [`Core::finish`].
//!    When [`Window::finish`] reports that it granted credits while messages were queued,
//!    the finishing thread admits queued messages in FIFO order and hands each to the
//!    engine ([`Engine::dispatch_admitted`], through the [`QueuedDispatch`] the executor
//!    bound at start). That runs on whatever thread finished the message, under the queue's
//!    lock: an engine queues the message there and never runs it (`inline` leaves it to the
//!    frame that is running a message on that thread, which runs it next, so nothing
//!    recurses). The window's module docs show why no credit is lost or doubled and why a
//!    key's order holds.
//! 4. **Close.** A re-entrant submission after a close began is refused and handed back,
//!    like any other. `drain` and `close` wait until the queue is empty too; `force_close`
//!    empties it and counts its messages in [`ForcedClose::discarded`].

use std::borrow::Cow;
use std::cell::RefCell;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::events::{EventCounter, EventSet};
use crate::sync::thread::{self, JoinHandle};
use crate::sync::{lock, pause, thread_local, AtomicBool, AtomicU64, AtomicUsize, Mutex, Ordering};
use crate::window::{Admission, Window, WindowClosed};
use crate::windows::Windows;
use crate::{
    ForcedClose, Handler, Key, Message, Outcome, Pending, Stats, Strategy, StrategyConfig,
    StrategyId, SubmitError, WindowScope,
};

/// How long a forced close waits for running steps between two sweeps.
const SWEEP_INTERVAL_US: u64 = 200;

#[cfg(not(loom))]
thread_local! {
    /// The cores (by address) whose handler calls or step polls are on this thread's stack
    /// now, innermost last: a submission into one of them is re-entrant (module docs).
    static RUNNING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

// loom's `thread_local!` takes no `const` initialiser.
#[cfg(loom)]
thread_local! {
    static RUNNING: RefCell<Vec<usize>> = RefCell::new(Vec::new());
}

/// Marks the calling thread as inside a handler call or step poll of one core until it is
/// dropped (on the same thread: it is not `Send`).
pub(crate) struct Inside {
    core: usize,
    _not_send: PhantomData<*const ()>,
}

impl Drop for Inside {
    fn drop(&mut self) {
        let popped = RUNNING.with(|running| running.borrow_mut().pop());
        debug_assert_eq!(popped, Some(self.core), "re-entrancy marks popped out of order");
    }
}

/// Where the admission queue hands a message once it has a credit: the strategy's engine,
/// as a trait object the core can hold ([`Core::bind`]).
pub(crate) trait QueuedDispatch: Send + Sync + 'static {
    /// See [`Engine::dispatch_admitted`].
    fn dispatch_queued(&self, message: Message);
}

impl<E: Engine> QueuedDispatch for E {
    fn dispatch_queued(&self, message: Message) {
        Engine::dispatch_admitted(self, message);
    }
}

/// State shared by a strategy's submit path and its threads: the admission windows, the
/// handler and the counters. An [`Engine`] gets it at [`Engine::start`] and runs messages
/// through it.
pub struct Core {
    pub(crate) config: StrategyConfig,
    /// The admission windows, in the strategy's scope (`windows.rs`).
    pub(crate) windows: Windows,
    handler: Arc<dyn Handler>,
    /// Where messages admitted from the admission queue go: the engine, bound once by
    /// `Executor::boxed`, weakly, since the engine holds the core.
    dispatcher: OnceLock<Weak<dyn QueuedDispatch>>,
    /// Raised by a forced close: dequeued messages are discarded instead of run.
    forced: AtomicBool,
    failed: AtomicU64,
    discarded: AtomicU64,
    abandoned: AtomicU64,
    /// The cost breakdown's counters, off unless the harness asks (`events.rs`).
    pub(crate) events: EventCounter,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("config", &self.config)
            .field("windows", &self.windows)
            .field("forced", &self.forced)
            .finish_non_exhaustive()
    }
}

impl Core {
    /// A core whose windows have `scope` (the caller resolved the strategy's default) and
    /// whose engine sees the events `seen`.
    pub(crate) fn new(
        config: StrategyConfig,
        scope: WindowScope,
        seen: EventSet,
        handler: Arc<dyn Handler>,
    ) -> Self {
        Self {
            config,
            windows: Windows::new(scope, config.max_in_flight),
            handler,
            dispatcher: OnceLock::new(),
            forced: AtomicBool::new(false),
            failed: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
            abandoned: AtomicU64::new(0),
            events: EventCounter::new(seen),
        }
    }

    /// The settings the strategy was built with.
    pub fn config(&self) -> &StrategyConfig {
        &self.config
    }

    /// Binds the engine that messages admitted from the admission queue are handed to;
    /// once, before any message is submitted.
    pub(crate) fn bind(&self, dispatcher: Weak<dyn QueuedDispatch>) {
        let bound = self.dispatcher.set(dispatcher);
        debug_assert!(bound.is_ok(), "a core is bound to one engine");
    }

    /// Admits a submission (module docs, "Re-entrant submissions", step 2): `Admitted` when
    /// it took a credit (the caller hands it to the engine), `Queued` when it waits in the
    /// admission queue. Only an outside submission blocks, while the window is full.
    pub(crate) fn admit(&self, message: Message) -> Result<Admission, WindowClosed> {
        self.windows.admit(message, || self.is_running_here(), || self.events.is_on())
    }

    /// Marks the calling thread as inside a handler call or step poll of this core until
    /// the guard drops (step 1).
    pub(crate) fn enter(&self) -> Inside {
        let core = self.address();
        RUNNING.with(|running| running.borrow_mut().push(core));
        Inside { core, _not_send: PhantomData }
    }

    /// Whether the calling thread is inside a handler call or step poll of this core.
    pub(crate) fn is_running_here(&self) -> bool {
        let core = self.address();
        RUNNING.with(|running| running.borrow().contains(&core))
    }

    /// This core's identity for the re-entrancy marks: its address, stable while it lives
    /// (in its `Arc`), and it outlives every mark it pushed.
    fn address(&self) -> usize {
        std::ptr::from_ref(self).addr()
    }

    /// Returns the credit of a finished message of `key` (completed, failed, discarded or
    /// abandoned) to its window and, if it let queued messages in, hands them to the
    /// engine (step 3).
    #[inline]
    pub(crate) fn finish(&self, key: Key) {
        self.windows.finish(key, |window| self.admit_queued(window));
    }

    /// Step 3: admits what `window`'s admission queue holds while credits last.
    #[cold]
    fn admit_queued(&self, window: &Window) {
        let dispatcher = self.dispatcher.get().and_then(Weak::upgrade);
        // The engine lives as long as its executor, whose drop empties the queue first.
        debug_assert!(dispatcher.is_some(), "messages were queued with no engine to admit them");
        if let Some(dispatcher) = dispatcher {
            window.admit_queued(|message| dispatcher.dispatch_queued(message));
        }
    }

    /// Forced close: drops the messages of the admission queues, counted as discarded
    /// (they were never admitted, so no credit comes back).
    fn discard_queued(&self) {
        let count = self.windows.discard_queued();
        self.discarded.fetch_add(count, Ordering::Relaxed);
    }

    /// Starts `message`: runs its handler, containing a panic. Returns the rest of the step
    /// when it is pending; otherwise the message is finished. A forced close discards it
    /// instead of running it.
    pub fn start(&self, message: &Message) -> Option<Pending> {
        if self.is_forced() {
            self.discard(message.key, 1);
            return None;
        }
        let step = self.handle(message);
        if step.is_none() {
            self.finish(message.key);
        }
        step
    }

    /// [`Core::start`], except that a message that ends keeps its window credit in `held`
    /// until [`Held::release`] (or the drop of `held`): a runner returns the credit of a
    /// key's last message only after it retired the emptied mailbox, so that `drain` never
    /// returns while a mailbox is still live.
    pub fn start_holding(&self, message: &Message, held: &mut Held<'_>) -> Option<Pending> {
        debug_assert_eq!(message.key, held.key, "credits are held for one key");
        if self.is_forced() {
            self.discard(message.key, 1);
            return None;
        }
        let step = self.handle(message);
        if step.is_none() {
            held.credits += 1;
        }
        step
    }

    /// Runs the handler, containing a panic (counted as a failure): the pending rest of the
    /// step, or `None` when the message ended. The thread is marked as inside this core
    /// meanwhile, so that a submission from the handler is re-entrant.
    #[inline]
    fn handle(&self, message: &Message) -> Option<Pending> {
        let _inside = self.enter();
        match catch_unwind(AssertUnwindSafe(|| self.handler.handle(message))) {
            Ok(Outcome::Done) => None,
            Ok(Outcome::Pending(step)) => Some(step),
            Err(_) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }

    /// Polls a pending step of a message of `key`, containing a panic. `Ready` means the
    /// message is finished.
    pub fn poll(&self, key: Key, step: &mut Pending, cx: &mut Context<'_>) -> Poll<()> {
        let poll = self.poll_step(step, cx);
        if poll.is_ready() {
            self.finish(key);
        }
        poll
    }

    /// [`Core::poll`], keeping the credit of a step that ends in `held` (see
    /// [`Core::start_holding`]).
    pub fn poll_holding(
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
    /// [`Ended`], so a destructor that panics cannot unwind through a runner. The thread is
    /// marked as inside this core meanwhile, as for a handler call.
    #[inline]
    fn poll_step(&self, step: &mut Pending, cx: &mut Context<'_>) -> Poll<()> {
        let _inside = self.enter();
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

    /// An empty set of held window credits of messages of `key` (see
    /// [`Core::start_holding`]).
    pub fn hold(&self, key: Key) -> Held<'_> {
        Held { core: self, key, credits: 0 }
    }

    /// Forced close, step 1: from now on dequeued messages are discarded and steps that
    /// return pending are abandoned.
    pub(crate) fn raise_forced(&self) {
        // Release: pairs with the Acquire load in `Core::is_forced`.
        self.forced.store(true, Ordering::Release);
    }

    /// Messages discarded and pending steps abandoned so far (by every forced close).
    pub(crate) fn forced_counts(&self) -> ForcedClose {
        ForcedClose {
            discarded: self.discarded.load(Ordering::Relaxed),
            abandoned: self.abandoned.load(Ordering::Relaxed),
        }
    }

    /// Whether a forced close has begun.
    pub fn is_forced(&self) -> bool {
        // Acquire: pairs with the Release store in `Core::raise_forced`.
        self.forced.load(Ordering::Acquire)
    }

    /// Drops `count` queued messages of `key` without running them (forced close).
    pub fn discard(&self, key: Key, count: u64) {
        if count > 0 {
            self.discarded.fetch_add(count, Ordering::Relaxed);
            for _ in 0..count {
                self.finish(key);
            }
        }
    }

    /// Drops the pending step of a message of `key` before it completed (forced close); a
    /// panic in its destructor is contained.
    pub fn abandon(&self, key: Key, step: Pending) {
        self.abandoned.fetch_add(1, Ordering::Relaxed);
        drop_contained(step);
        self.finish(key);
    }

    /// [`Core::abandon`], keeping the window credit in `held` (see [`Core::start_holding`]).
    pub fn abandon_holding(&self, step: Pending, held: &mut Held<'_>) {
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
pub struct Held<'a> {
    core: &'a Core,
    /// The key whose messages' credits these are (one window).
    key: Key,
    credits: u32,
}

impl Held<'_> {
    /// Returns every held credit to the window now.
    #[inline]
    pub fn release(&mut self) {
        while self.credits > 0 {
            self.credits -= 1;
            self.core.finish(self.key);
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// The part of a strategy that differs between designs: where messages go and who runs
/// them. The executor adds admission and closing: the window, the admission queue, `drain`,
/// `close` and `force_close` are the same for every engine, the built-in ones and any built
/// outside this crate ([`crate::engine`]).
///
/// An engine runs each message it is handed with [`Core::start`], polls a step that returned
/// pending with [`Core::poll`] when its waker fires, and keeps whatever per-key order its
/// design promises. The core returns each finished message's window credit, contains
/// panics and counts failures; an engine never touches the window itself.
pub trait Engine: Send + Sync + Sized + 'static {
    /// Starts the engine (its threads, or lazily later).
    fn start(core: &Arc<Core>) -> Self;

    /// Queues an admitted message. Never blocks on the window and never fails.
    fn dispatch(&self, message: Message);

    /// Queues a message the admission queue just admitted: called on the thread whose
    /// finishing message returned the credit, with the queue's lock held, so it must not
    /// run the message there (it may finish and submit) nor block. Every engine but
    /// `inline` queues it as [`Engine::dispatch`] does.
    fn dispatch_admitted(&self, message: Message) {
        self.dispatch(message);
    }

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

/// What the crate knows of a built-in engine beyond [`Engine`].
pub(crate) trait BuiltIn: Engine {
    /// The strategy this engine implements.
    const ID: StrategyId;

    /// The events it counts for the cost breakdown (`events.rs`).
    const EVENTS: EventSet;
}

/// A [`Strategy`] made of a [`Core`] and an [`Engine`].
pub(crate) struct Executor<E: Engine> {
    /// The id [`Strategy::id`] reports.
    id: Cow<'static, str>,
    core: Arc<Core>,
    /// Shared only with the core's weak [`QueuedDispatch`] binding.
    engine: Arc<E>,
    /// Set once the threads have been stopped, so closing twice is harmless.
    stopped: Mutex<bool>,
}

impl<E: Engine> Executor<E> {
    pub(crate) fn boxed(id: Cow<'static, str>, core: Arc<Core>) -> Box<dyn Strategy> {
        let engine = Arc::new(E::start(&core));
        let dispatcher: Weak<dyn QueuedDispatch> = Arc::downgrade(&engine) as Weak<E>;
        core.bind(dispatcher);
        Box::new(Self { id, core, engine, stopped: Mutex::new(false) })
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
        f.debug_struct("Executor")
            .field("id", &self.id)
            .field("core", &self.core)
            .finish_non_exhaustive()
    }
}

impl<E: Engine> Strategy for Executor<E> {
    fn id(&self) -> &str {
        &self.id
    }

    fn submit(&self, message: Message) -> Result<(), SubmitError> {
        match self.core.admit(message) {
            Ok(Admission::Admitted) => {
                self.engine.dispatch(message);
                Ok(())
            }
            Ok(Admission::Queued) => Ok(()),
            Err(WindowClosed) => Err(SubmitError::Closed(message)),
        }
    }

    fn drain(&self) {
        self.core.windows.wait_empty();
    }

    fn close(&self) {
        self.core.windows.close();
        self.core.windows.wait_empty();
        self.stop_once();
    }

    fn force_close(&self) -> ForcedClose {
        let before = self.core.forced_counts();
        self.core.windows.close();
        self.core.raise_forced();
        // The window is closed, so nothing is queued after this.
        self.core.discard_queued();
        loop {
            self.engine.sweep();
            if self.core.windows.in_flight() == 0 {
                break;
            }
            pause(Duration::from_micros(SWEEP_INTERVAL_US));
        }
        self.stop_once();
        let after = self.core.forced_counts();
        ForcedClose {
            discarded: after.discarded - before.discarded,
            abandoned: after.abandoned - before.abandoned,
        }
    }

    fn threads_started(&self) -> usize {
        self.engine.threads_started()
    }

    fn count_events(&self, on: bool) -> bool {
        self.core.events.set(on, self.core.windows.blocked_ns());
        true
    }

    fn stats(&self) -> Stats {
        let ForcedClose { discarded, abandoned } = self.core.forced_counts();
        Stats {
            failed: self.core.failed.load(Ordering::Relaxed),
            discarded,
            abandoned,
            peak_in_flight: self.core.windows.peak_in_flight(),
            peak_admission_queue: self.core.windows.peak_queued(),
            admission_queued: self.core.windows.queued_total(),
            window_scope: self.core.windows.scope(),
            windows: self.core.windows.count(),
            events: self.core.events.snapshot(self.core.windows.blocked_ns()),
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
