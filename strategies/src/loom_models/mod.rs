//! Loom models of the concurrency this crate implements itself: the mailbox state machine
//! (its wake path, where the thread that completes a wait finishes it, included),
//! park/unpark, the admission window and its admission queue, and the close protocol.
//!
//! Built only with `--cfg loom` (`scripts/loom.sh`), where `sync.rs` swaps every lock,
//! atomic, park and thread of the core for loom's. Each model runs a small scenario under
//! every interleaving loom can produce within the preemption bound (`LOOM_MAX_PREEMPTIONS`,
//! 3 unless set) and prints how many it explored. Checks never panic inside a handler
//! (the executor would contain the panic and count it as a failure); the [`Probe`] records
//! what it saw and the model asserts afterwards.
//!
//! Here: the mailbox state machine and the whole keyed-mailbox executor. The models of
//! the wake path (the thread that completes a wait finishes it: `mailbox.rs`, step 4) are
//! in `wake_path.rs`; park/unpark and the admission window in `window.rs`.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicUsize as StdAtomicUsize;
use std::sync::{Arc, OnceLock, Weak};
use std::task::{Context, Poll, Waker};

use crate::events::EventSet;
use crate::executor::{Core, QueuedDispatch};
use crate::mailbox::{Mailbox, MailboxSet, Placement, Turn};
use crate::parking::ParkSlot;
use crate::sync::thread::ThreadId;
use crate::sync::{lock, thread, AtomicBool, AtomicUsize, Mutex, Ordering};
use crate::window::{Admission, Window, WindowClosed};
use crate::{
    Handler, Job, Key, Message, Outcome, Strategy, StrategyConfig, StrategyId, SubmitError,
    WindowScope,
};

mod take;
mod wake_path;
mod window;

/// Runs `model` under every interleaving within the preemption bound and reports the count.
fn explore(name: &str, model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    let bound = builder.preemption_bound;
    let runs = Arc::new(StdAtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    builder.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model();
    });
    let runs = runs.load(std::sync::atomic::Ordering::Relaxed);
    println!("loom model {name}: {runs} interleavings explored (preemption bound {bound:?})");
}

const KEY: Key = Key::new(0, 7);

/// A second key.
const OTHER: Key = Key::new(0, 8);

fn message(key: Key, seq: u64, job: Job) -> Message {
    Message { key, seq, intended_ns: 0, job }
}

/// A one-shot event a pending step waits for, opened by another thread (an I/O reply).
#[derive(Debug, Default)]
struct Gate {
    open: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Gate {
    fn open(&self) {
        // SeqCst: pairs with the two loads in `Wait::poll`: a poll that stored its waker
        // after the take below sees the gate open at its second look.
        self.open.store(true, Ordering::SeqCst);
        let waker = lock(&self.waker).take();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// Waits for its gate, then records the end of its message.
struct Wait {
    gate: Arc<Gate>,
    probe: Arc<Probe>,
    message: Message,
}

impl Gate {
    /// Whether the gate is open; if not, `cx`'s waker is woken when it opens.
    fn poll_open(&self, cx: &Context<'_>) -> bool {
        // SeqCst (both loads): pair with the store in `Gate::open`.
        if !self.open.load(Ordering::SeqCst) {
            *lock(&self.waker) = Some(cx.waker().clone());
            if !self.open.load(Ordering::SeqCst) {
                return false;
            }
        }
        true
    }
}

impl Future for Wait {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if !self.gate.poll_open(cx) {
            return Poll::Pending;
        }
        self.probe.end(&self.message);
        Poll::Ready(())
    }
}

/// `Job::Custom` code of a step that waits for the probe's gate, then for its second gate
/// (a retry: pending again after its first wake), then records its end.
const TWO_GATES: u32 = 3;

/// The step of [`TWO_GATES`].
struct TwoGates {
    first_open: bool,
    probe: Arc<Probe>,
    message: Message,
}

impl Future for TwoGates {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if !self.first_open {
            if !self.probe.gate.poll_open(cx) {
                return Poll::Pending;
            }
            self.first_open = true;
        }
        if !self.probe.second_gate.poll_open(cx) {
            return Poll::Pending;
        }
        self.probe.end(&self.message);
        Poll::Ready(())
    }
}

/// `Job::Custom` code of a step that wakes itself once, then completes.
const YIELD_ONCE: u32 = 1;

/// `Job::Custom` code of a handler that submits its key's next message (`seq + 1`, a
/// `Noop`) into the strategy the probe is bound to, then ends: a re-entrant submission.
const SUBMIT_NEXT: u32 = 2;

/// `Job::Custom` code of a handler that submits a message of the same id but the other
/// aggregate type (0 and 1; `seq` 0, a `Noop`), then ends: a re-entrant submission into
/// another type's window when windows are per type.
const SUBMIT_OTHER_TYPE: u32 = 4;

/// Wakes itself during its first poll and completes at the second (a cooperative yield).
struct YieldOnce {
    yielded: bool,
    probe: Arc<Probe>,
    message: Message,
}

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if !self.yielded {
            self.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.probe.end(&self.message);
        Poll::Ready(())
    }
}

/// The handler of every model: records starts and ends per key, and every overlap.
struct Probe {
    /// Itself, for the pending futures it hands out.
    me: std::sync::Weak<Probe>,
    /// `(key, seq)` in the order the handler started them.
    started: Mutex<Vec<(Key, u64)>>,
    /// Ends, in order.
    ended: Mutex<Vec<(Key, u64)>>,
    /// Keys with a message between start and end.
    active: Mutex<Vec<Key>>,
    /// A message started while another of its key was unfinished.
    overlaps: AtomicUsize,
    /// The gate a `Job::Wait` message waits for.
    gate: Arc<Gate>,
    /// The second gate of a `TWO_GATES` step.
    second_gate: Arc<Gate>,
    /// `(key, seq)` and the thread of every start, in order.
    started_on: Mutex<Vec<((Key, u64), ThreadId)>>,
    /// `(key, seq)` and the thread of every end, in order.
    ended_on: Mutex<Vec<((Key, u64), ThreadId)>>,
    /// The strategy a `SUBMIT_NEXT` handler submits into (weak: it holds the probe).
    strategy: OnceLock<Weak<dyn Strategy>>,
    /// `(key, seq)` of the `SUBMIT_NEXT` submissions that were handed back.
    handed_back: Mutex<Vec<(Key, u64)>>,
}

/// A fresh probe for one execution.
fn probe() -> Arc<Probe> {
    Arc::new_cyclic(|me| Probe {
        me: me.clone(),
        started: Mutex::default(),
        ended: Mutex::default(),
        active: Mutex::default(),
        overlaps: AtomicUsize::new(0),
        gate: Arc::default(),
        second_gate: Arc::default(),
        started_on: Mutex::default(),
        ended_on: Mutex::default(),
        strategy: OnceLock::new(),
        handed_back: Mutex::default(),
    })
}

impl Probe {
    fn end(&self, message: &Message) {
        lock(&self.active).retain(|key| *key != message.key);
        lock(&self.ended).push((message.key, message.seq));
        lock(&self.ended_on).push(((message.key, message.seq), thread::current().id()));
    }

    /// The thread `(key, seq)` started on, if it started.
    fn started_on(&self, key: Key, seq: u64) -> Option<ThreadId> {
        lock(&self.started_on).iter().find(|(id, _)| *id == (key, seq)).map(|&(_, on)| on)
    }

    /// The thread `(key, seq)` ended on, if it ended.
    fn ended_on(&self, key: Key, seq: u64) -> Option<ThreadId> {
        lock(&self.ended_on).iter().find(|(id, _)| *id == (key, seq)).map(|&(_, on)| on)
    }

    fn ended(&self) -> Vec<(Key, u64)> {
        lock(&self.ended).clone()
    }

    /// Makes `strategy` the one `SUBMIT_NEXT` handlers submit into.
    fn bind(&self, strategy: &Arc<dyn Strategy>) {
        assert!(self.strategy.set(Arc::downgrade(strategy)).is_ok(), "a probe is bound once");
    }

    /// The `SUBMIT_NEXT` job: submits the key's next message into the bound strategy.
    fn submit_next(&self, message: &Message) {
        self.submit_reentrant(self::message(message.key, message.seq + 1, Job::Noop));
    }

    /// Submits `next` into the bound strategy from a handler, noting it if handed back.
    fn submit_reentrant(&self, next: Message) {
        let strategy = self.strategy.get().and_then(Weak::upgrade).expect("a bound strategy");
        if strategy.submit(next).is_err() {
            lock(&self.handed_back).push((next.key, next.seq));
        }
    }

    /// Every recorded start, end and overlap agrees with per-key order, exactly once each,
    /// for the messages that ran: `expected` lists them, in order, per key.
    fn assert_ran_in_order(&self, expected: &[(Key, u64)]) {
        // SeqCst: pairs with the increment in `Probe::handle`.
        assert_eq!(self.overlaps.load(Ordering::SeqCst), 0, "two messages of a key overlapped");
        let started = lock(&self.started).clone();
        assert_eq!(started, expected, "starts: wrong order, a duplicate or a loss");
        assert_eq!(self.ended(), expected, "ends: wrong order, a duplicate or a loss");
    }

    /// After a forced close: no overlap, the messages that started are a prefix of `all`
    /// (in order, no duplicate), and those that ended a prefix of them (an abandoned step
    /// never ends).
    fn assert_ran_a_prefix(&self, all: &[(Key, u64)]) {
        // SeqCst: pairs with the increment in `Probe::handle`.
        assert_eq!(self.overlaps.load(Ordering::SeqCst), 0, "two messages of a key overlapped");
        let started = lock(&self.started).clone();
        assert!(all.starts_with(&started), "starts {started:?} of {all:?}");
        let ended = self.ended();
        assert!(started.starts_with(&ended), "ends {ended:?} of the starts {started:?}");
    }
}

impl Handler for Probe {
    fn handle(&self, message: &Message) -> Outcome {
        {
            let mut active = lock(&self.active);
            if active.contains(&message.key) {
                // SeqCst: pairs with the loads of `overlaps` in the models' checks.
                self.overlaps.fetch_add(1, Ordering::SeqCst);
            }
            active.push(message.key);
        }
        lock(&self.started).push((message.key, message.seq));
        lock(&self.started_on).push(((message.key, message.seq), thread::current().id()));
        match message.job {
            Job::Custom(YIELD_ONCE) => {
                let probe = self.me.upgrade().expect("the model holds its probe");
                Outcome::Pending(Box::pin(YieldOnce { yielded: false, probe, message: *message }))
            }
            Job::Custom(TWO_GATES) => {
                let probe = self.me.upgrade().expect("the model holds its probe");
                let message = *message;
                Outcome::Pending(Box::pin(TwoGates { first_open: false, probe, message }))
            }
            Job::Custom(SUBMIT_NEXT) => {
                self.submit_next(message);
                self.end(message);
                Outcome::Done
            }
            Job::Custom(SUBMIT_OTHER_TYPE) => {
                let other = Key::new(1 - message.key.aggregate_type, message.key.aggregate_id);
                self.submit_reentrant(self::message(other, 0, Job::Noop));
                self.end(message);
                Outcome::Done
            }
            Job::Wait { .. } => {
                let probe = self.me.upgrade().expect("the model holds its probe");
                Outcome::Pending(Box::pin(Wait {
                    gate: Arc::clone(&self.gate),
                    probe,
                    message: *message,
                }))
            }
            _ => {
                self.end(message);
                Outcome::Done
            }
        }
    }
}

/// Placement of the mailbox models: one shared FIFO that runner threads take from. It
/// asserts that a mailbox is never queued twice. `FINISHES` is its
/// [`Placement::WAKER_FINISHES_WAIT`]: true (the default) models `keyed-mailbox` and
/// `work-stealing`, false `tokio` and `rayon`.
#[derive(Debug, Default)]
struct SharedQueue<const FINISHES: bool = true> {
    queue: Mutex<VecDeque<Arc<Mailbox>>>,
    /// Mailboxes handed to `schedule` so far.
    scheduled: AtomicUsize,
}

impl<const FINISHES: bool> SharedQueue<FINISHES> {
    fn push(&self, mailbox: Arc<Mailbox>) {
        let mut queue = lock(&self.queue);
        assert!(
            !queue.iter().any(|queued| Arc::ptr_eq(queued, &mailbox)),
            "a mailbox was scheduled twice"
        );
        queue.push_back(mailbox);
    }

    /// Mailboxes handed to `schedule` so far (read after the threads that schedule joined).
    fn scheduled(&self) -> usize {
        self.scheduled.load(Ordering::Relaxed)
    }
}

impl<const FINISHES: bool> Placement for SharedQueue<FINISHES> {
    const WAKER_FINISHES_WAIT: bool = FINISHES;

    fn bind(&self) -> usize {
        0
    }

    fn schedule(set: &Arc<MailboxSet<Self>>, mailbox: Arc<Mailbox>) {
        set.placement.scheduled.fetch_add(1, Ordering::Relaxed);
        set.placement.push(mailbox);
    }
}

fn config(throughput: usize) -> StrategyConfig {
    // No idle spin: a worker parks at once (under loom it always does; see `IdleSpin`).
    StrategyConfig {
        workers: 1,
        max_in_flight: 8,
        throughput,
        groups_per_worker: 1,
        idle_spin_us: 0,
        window_scope: None,
        binding: crate::Binding::Reference,
    }
}

/// A mailbox set with `probe` as handler and `throughput` messages per turn.
fn mailbox_set(probe: &Arc<Probe>, throughput: usize) -> Arc<MailboxSet<SharedQueue>> {
    mailbox_set_with(probe, config(throughput))
}

/// A mailbox set with `probe` as handler and `config`.
fn mailbox_set_with<const F: bool>(
    probe: &Arc<Probe>,
    config: StrategyConfig,
) -> Arc<MailboxSet<SharedQueue<F>>> {
    let handler: Arc<dyn Handler> = Arc::clone(probe) as Arc<dyn Handler>;
    let scope = config.window_scope.unwrap_or(WindowScope::Strategy);
    let core = Arc::new(Core::new(config, scope, EventSet::ALL, handler));
    MailboxSet::new(core, SharedQueue::default())
}

/// Hands the messages the admission queue admits to a model's mailbox set, as an engine's
/// `dispatch_admitted` does.
struct SetDispatch(Arc<MailboxSet<SharedQueue>>);

impl QueuedDispatch for SetDispatch {
    fn dispatch_queued(&self, message: Message) {
        self.0.submit(message);
    }
}

/// Binds `set` as its core's engine for admitted queued messages (what `Executor::boxed`
/// does); the model keeps the binding alive.
fn bind_set(set: &Arc<MailboxSet<SharedQueue>>) -> Arc<SetDispatch> {
    let dispatch = Arc::new(SetDispatch(Arc::clone(set)));
    let weak: Weak<dyn QueuedDispatch> = Arc::downgrade(&dispatch) as Weak<SetDispatch>;
    set.core.bind(weak);
    dispatch
}

/// What `Executor::submit` does: take a credit, then queue.
fn submit<P: Placement>(set: &Arc<MailboxSet<P>>, message: Message) {
    let admission = set.core.admit(message).expect("the window is open");
    assert_eq!(admission, Admission::Admitted, "an outside submission is never queued");
    set.submit(message);
}

/// Runs the one queued mailbox on this thread: a turn before the model's race begins.
fn run_queued(set: &Arc<MailboxSet<SharedQueue>>) {
    let mailbox = lock(&set.placement.queue).pop_front().expect("a queued mailbox");
    assert!(matches!(set.run(mailbox), Turn::Done), "the turn ended waiting");
    assert!(lock(&set.placement.queue).is_empty(), "a waiting mailbox was requeued");
}

/// Runs queued mailboxes until `total` messages have ended; returns the thread's id.
fn runner<const F: bool>(
    set: &Arc<MailboxSet<SharedQueue<F>>>,
    probe: &Probe,
    total: usize,
) -> ThreadId {
    loop {
        let next = lock(&set.placement.queue).pop_front();
        match next {
            Some(mailbox) => {
                if let Turn::Requeue(mailbox) = set.run(mailbox) {
                    set.placement.push(mailbox);
                }
            }
            None if lock(&probe.ended).len() == total => return thread::current().id(),
            None => thread::yield_now(),
        }
    }
}

/// A thread running [`runner`].
fn spawn_runner<const F: bool>(
    set: &Arc<MailboxSet<SharedQueue<F>>>,
    probe: &Arc<Probe>,
    total: usize,
) -> thread::JoinHandle<ThreadId> {
    let (set, probe) = (Arc::clone(set), Arc::clone(probe));
    thread::spawn(move || runner(&set, &probe, total))
}

/// A thread opening the probe's gate (the reply a pending step waits for); returns the
/// thread's id.
fn spawn_opener(probe: &Probe) -> thread::JoinHandle<ThreadId> {
    spawn_gate_opener(&probe.gate)
}

/// A thread opening `gate`; returns the thread's id.
fn spawn_gate_opener(gate: &Arc<Gate>) -> thread::JoinHandle<ThreadId> {
    let gate = Arc::clone(gate);
    thread::spawn(move || {
        gate.open();
        thread::current().id()
    })
}

/// A keyed-mailbox executor (one worker) with `probe` as handler.
fn keyed_mailbox(probe: &Arc<Probe>) -> Arc<dyn Strategy> {
    keyed_mailbox_with(probe, config(16))
}

/// A keyed-mailbox executor with `probe` as handler and `config`; the probe's
/// `SUBMIT_NEXT` handlers submit into it.
fn keyed_mailbox_with(probe: &Arc<Probe>, config: StrategyConfig) -> Arc<dyn Strategy> {
    let handler: Arc<dyn Handler> = Arc::clone(probe) as Arc<dyn Handler>;
    let strategy: Arc<dyn Strategy> =
        Arc::from(StrategyId::KeyedMailbox.build(config, handler).unwrap());
    probe.bind(&strategy);
    strategy
}

/// After a model: nothing queued, no mailbox left, the window empty.
fn assert_quiet<const F: bool>(set: &MailboxSet<SharedQueue<F>>) {
    assert!(lock(&set.placement.queue).is_empty(), "a mailbox was left queued");
    assert_eq!(set.live(), 0, "a mailbox was left in the map");
    assert_eq!(set.core.windows.in_flight(), 0, "a credit was not returned");
}

#[test]
fn mailbox_submit_races_the_end_of_a_turn() {
    // A message submitted while its mailbox runs, requeues (throughput 1), finds the queue
    // empty or is being retired: neither lost nor run twice, the map ends empty.
    explore("mailbox_submit_races_the_end_of_a_turn", || {
        let probe = probe();
        let set = mailbox_set(&probe, 1);
        submit(&set, message(KEY, 0, Job::Noop));
        let worker = spawn_runner(&set, &probe, 2);
        submit(&set, message(KEY, 1, Job::Noop));
        // What `drain` waits for; by then the emptied mailbox has left the map.
        set.core.windows.wait_empty();
        assert_eq!(set.live(), 0, "a drained set still had a live mailbox");
        worker.join().unwrap();
        probe.assert_ran_in_order(&[(KEY, 0), (KEY, 1)]);
        assert_quiet(&set);
    });
}

#[test]
fn mailbox_a_step_that_wakes_itself_is_requeued() {
    // A step that wakes itself during its first poll (a yield) is stored and its mailbox
    // requeued, while the key's next message arrives: each runs once, in order.
    explore("mailbox_a_step_that_wakes_itself_is_requeued", || {
        let probe = probe();
        let set = mailbox_set(&probe, 4);
        submit(&set, message(KEY, 0, Job::Custom(YIELD_ONCE)));
        let worker = spawn_runner(&set, &probe, 2);
        submit(&set, message(KEY, 1, Job::Noop));
        worker.join().unwrap();
        probe.assert_ran_in_order(&[(KEY, 0), (KEY, 1)]);
        assert_quiet(&set);
    });
}

/// A pending step whose wake arrives before, during or after the turn that stored it,
/// while the next message of the key arrives, on a placement whose waker finishes waits
/// (`F`) or only schedules the mailbox.
fn wake_races_the_running_turn<const F: bool>() {
    let probe = probe();
    let set = mailbox_set_with::<F>(&probe, config(4));
    submit(&set, message(KEY, 0, Job::Wait { ns: 0 }));
    let worker = spawn_runner(&set, &probe, 2);
    let io = spawn_opener(&probe);
    submit(&set, message(KEY, 1, Job::Noop));
    io.join().unwrap();
    worker.join().unwrap();
    probe.assert_ran_in_order(&[(KEY, 0), (KEY, 1)]);
    assert_quiet(&set);
}

#[test]
fn mailbox_wake_races_the_running_turn() {
    // The waker finishes the wait (`keyed-mailbox`, `work-stealing`): whether the wake
    // finds the turn still polling (notified: the runner requeues) or the step stored (the
    // opener polls it), the mailbox is queued at most once at a time and the second
    // message starts only after the first ended.
    explore("mailbox_wake_races_the_running_turn", wake_races_the_running_turn::<true>);
}

#[test]
fn mailbox_a_scheduling_wake_races_the_running_turn() {
    // The same race where the waker only schedules the mailbox (`tokio`, `rayon`): the
    // mailbox is scheduled exactly once per wake.
    explore(
        "mailbox_a_scheduling_wake_races_the_running_turn",
        wake_races_the_running_turn::<false>,
    );
}

#[test]
fn mailbox_two_runners_never_share_a_mailbox() {
    // Two threads take mailboxes from one queue (as work stealing does); with throughput 1
    // the key's mailbox is requeued after each message and may move between them, yet
    // never runs on both at once.
    explore("mailbox_two_runners_never_share_a_mailbox", || {
        let probe = probe();
        let set = mailbox_set(&probe, 1);
        submit(&set, message(KEY, 0, Job::Noop));
        submit(&set, message(KEY, 1, Job::Noop));
        let workers: Vec<_> = (0..2).map(|_| spawn_runner(&set, &probe, 2)).collect();
        for worker in workers {
            worker.join().unwrap();
        }
        probe.assert_ran_in_order(&[(KEY, 0), (KEY, 1)]);
        assert_quiet(&set);
    });
}

#[test]
fn keyed_mailbox_close_races_submit() {
    // The whole keyed-mailbox executor (one worker thread): a submitter sends two messages
    // of one key while the main thread closes. Each message runs or is handed back, the
    // ones that ran are a prefix in order, nothing runs after `close` returns, and the
    // worker is joined.
    explore("keyed_mailbox_close_races_submit", || {
        let probe = probe();
        let strategy = keyed_mailbox(&probe);
        let submitter = {
            let strategy = Arc::clone(&strategy);
            thread::spawn(move || {
                let mut returned = Vec::new();
                for seq in 0..2 {
                    match strategy.submit(message(KEY, seq, Job::Noop)) {
                        Ok(()) => {}
                        Err(SubmitError::Closed(message)) => returned.push(message.seq),
                    }
                }
                returned
            })
        };
        strategy.close();
        let ran_at_close = probe.ended();
        let returned = submitter.join().unwrap();
        assert_eq!(probe.ended(), ran_at_close, "a message ran after close returned");
        let ran: Vec<u64> = ran_at_close.iter().map(|&(_, seq)| seq).collect();
        let mut all = ran.clone();
        all.extend(&returned);
        all.sort_unstable();
        assert_eq!(all, [0, 1], "ran {ran:?}, handed back {returned:?}");
        probe.assert_ran_in_order(&ran_at_close);
        assert_eq!(strategy.stats().live_mailboxes, Some(0));
    });
}

#[test]
fn keyed_mailbox_forced_close_races_a_wake() {
    // A pending step whose wake races a forced close, with a second message queued behind
    // it: force_close returns, and each message is finished, abandoned or discarded,
    // exactly once.
    explore("keyed_mailbox_forced_close_races_a_wake", || {
        let probe = probe();
        let strategy = keyed_mailbox(&probe);
        strategy.submit(message(KEY, 0, Job::Wait { ns: 0 })).unwrap();
        strategy.submit(message(KEY, 1, Job::Noop)).unwrap();
        let io = spawn_opener(&probe);
        let forced = strategy.force_close();
        io.join().unwrap();
        let ended = probe.ended().len() as u64;
        assert_eq!(ended + forced.discarded + forced.abandoned, 2, "{forced:?}, ended {ended}");
        assert_eq!(lock(&probe.started).len() as u64, 2 - forced.discarded);
        // SeqCst: pairs with the increment in `Probe::handle`.
        assert_eq!(probe.overlaps.load(Ordering::SeqCst), 0);
        assert_eq!(strategy.stats().live_mailboxes, Some(0), "a forced close left a mailbox");
    });
}

#[test]
fn keyed_mailbox_forced_close_races_an_admitted_submit() {
    // A submission admitted just before a forced close races the sweep and the runner's
    // retirement of the same mailbox (its pending step abandoned, its queue emptied by the
    // sweep between the runner's look and its retirement): every admitted message is
    // finished, discarded or abandoned once, and no mailbox is left.
    explore("keyed_mailbox_forced_close_races_an_admitted_submit", || {
        let probe = probe();
        let strategy = keyed_mailbox(&probe);
        strategy.submit(message(KEY, 0, Job::Wait { ns: 0 })).unwrap();
        let submitter = {
            let strategy = Arc::clone(&strategy);
            thread::spawn(move || strategy.submit(message(KEY, 1, Job::Noop)).is_ok())
        };
        let forced = strategy.force_close();
        let accepted = submitter.join().unwrap();
        let ended = probe.ended().len() as u64;
        let admitted = if accepted { 2 } else { 1 };
        assert_eq!(ended + forced.discarded + forced.abandoned, admitted, "{forced:?}");
        assert_eq!(strategy.stats().live_mailboxes, Some(0), "a forced close left a mailbox");
    });
}

#[test]
fn mailbox_a_spare_serves_the_next_key_while_a_late_wake_arrives() {
    // Key A waits on a step whose waker fires late; key B arrives meanwhile. A retired
    // mailbox is reused for another key only when nothing refers to it, so the late wake
    // of A's finished step can never schedule B's mailbox: each message runs once, in
    // order, and the set ends empty.
    explore("mailbox_a_spare_serves_the_next_key_while_a_late_wake_arrives", || {
        let probe = probe();
        let set = mailbox_set(&probe, 4);
        submit(&set, message(KEY, 0, Job::Wait { ns: 0 }));
        let worker = spawn_runner(&set, &probe, 2);
        let io = spawn_opener(&probe);
        submit(&set, message(OTHER, 0, Job::Noop));
        io.join().unwrap();
        worker.join().unwrap();
        let mut ended = probe.ended();
        ended.sort_unstable();
        assert_eq!(ended, [(KEY, 0), (OTHER, 0)]);
        // SeqCst: pairs with the increment in `Probe::handle`.
        assert_eq!(probe.overlaps.load(Ordering::SeqCst), 0);
        assert_quiet(&set);
    });
}

#[test]
fn keyed_mailbox_a_handler_submits_into_its_full_window() {
    // The whole keyed-mailbox executor, one worker, window 1: the handler of the only
    // admitted message submits its key's next message (a saga sending a command). The
    // window is full, so it queues instead of blocking the worker; the handler's own credit
    // admits it once the handler returned, and `drain` racing all of it returns only after
    // both ran, in order.
    explore("keyed_mailbox_a_handler_submits_into_its_full_window", || {
        let probe = probe();
        let strategy =
            keyed_mailbox_with(&probe, StrategyConfig { max_in_flight: 1, ..config(16) });
        strategy.submit(message(KEY, 0, Job::Custom(SUBMIT_NEXT))).unwrap();
        strategy.drain();
        assert_eq!(probe.ended(), [(KEY, 0), (KEY, 1)], "drain returned before both ran");
        probe.assert_ran_in_order(&[(KEY, 0), (KEY, 1)]);
        assert!(lock(&probe.handed_back).is_empty(), "an open strategy refused a message");
        let stats = strategy.stats();
        assert_eq!((stats.peak_admission_queue, stats.admission_queued), (1, 1), "{stats:?}");
        assert_eq!(stats.peak_in_flight, 1, "{stats:?}");
        assert_eq!(stats.live_mailboxes, Some(0), "{stats:?}");
        strategy.close();
    });
}

#[test]
fn keyed_mailbox_close_races_a_reentrant_submit() {
    // A close racing a handler's submission into its own full window (one worker, window
    // 1): the submission is accepted (queued, then run before `close` returns) or, once
    // the close began, handed back; never both, never neither, and nothing runs after
    // `close` returned.
    explore("keyed_mailbox_close_races_a_reentrant_submit", || {
        let probe = probe();
        let strategy =
            keyed_mailbox_with(&probe, StrategyConfig { max_in_flight: 1, ..config(16) });
        strategy.submit(message(KEY, 0, Job::Custom(SUBMIT_NEXT))).unwrap();
        strategy.close();
        let ran = probe.ended();
        let handed_back = lock(&probe.handed_back).clone();
        match handed_back.as_slice() {
            [] => assert_eq!(ran, [(KEY, 0), (KEY, 1)], "an accepted submission was stranded"),
            [(KEY, 1)] => assert_eq!(ran, [(KEY, 0)], "a handed-back submission ran"),
            other => panic!("handed back {other:?}, ran {ran:?}"),
        }
        probe.assert_ran_in_order(&ran);
        assert_eq!(strategy.stats().live_mailboxes, Some(0));
    });
}
