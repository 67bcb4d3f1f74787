//! Per-key mailboxes: the machinery shared by `keyed-mailbox`, `work-stealing`, `tokio`
//! and `rayon`, which differ only in [`Placement`]: where a runnable mailbox goes, and
//! whether the thread that wakes a waiting mailbox finishes its message itself.
//!
//! # Protocol
//!
//! A [`Mailbox`] exists while its key has unfinished messages. Its queue and its [`Phase`]
//! are guarded by one small mutex; the map from key to mailbox is a `DashMap` (sharded
//! `RwLock<HashMap>`s, so submissions of different keys rarely touch the same lock and no
//! lock is global) with a fast fixed hash (`hash.rs`). Lock order is always map shard,
//! then mailbox, and no user code (a handler, a step's poll or destructor) ever runs while
//! one of them is held, so a step may wake any mailbox from anywhere.
//!
//! The phase says who holds the mailbox: nobody (`Idle`, `Waiting`, `Retired`), a run
//! queue (`Scheduled`) or one thread (`Running`). Only the thread that moves it out of
//! `Idle`, `Scheduled` or `Waiting` under its lock holds it next, so it is never run by two
//! threads at once.
//!
//! 1. **Submit** (under the shard lock of the key): find or create the mailbox (a new one
//!    is bound to a worker by [`Placement::bind`]), push the message; if the mailbox was
//!    `Idle`, mark it `Scheduled` and hand it to [`Placement::schedule`]. In every other
//!    phase someone already holds the mailbox, or will (its waker), and sees the message.
//! 2. **Run a turn** (the one thread that dequeued it): `Scheduled` -> `Running`. Resume
//!    the stored pending step, if any; then pop and run messages, at most `throughput` per
//!    turn.
//! 3. **A pending step** is polled with the mailbox's waker: the mailbox itself
//!    (`Waker::from(Arc<Mailbox>)`, no allocation). If it is not ready, the mailbox stores
//!    it, becomes `Waiting` and gives the worker back. A wake that arrives while the
//!    mailbox is `Running` (a turn, or the wake path below, is polling) sets `notified`:
//!    the poller then stores the step and, instead of waiting, makes the mailbox
//!    `Scheduled` and queues it behind the other runnable ones (a worker requeues it; the
//!    wake path hands it to [`Placement::schedule`]). No wake-up is lost, the mailbox is
//!    never queued twice, and a step that wakes itself at every poll holds no thread.
//! 4. **The wake path** (the reference's: the thread that completes a wait finishes it).
//!    The waker moves `Waiting` -> `Running` under the mailbox lock and takes the stored
//!    step, so exactly one thread, this one, holds the mailbox; a second wake finds it
//!    `Running` (step 3) or no longer waiting and does nothing else. This thread polls the
//!    step as a worker would ([`Core::poll_holding`]: panic containment, the re-entrancy
//!    mark, the forced-close check), then:
//!    - still pending: the step is stored again (`Waiting`) and nothing more happens here;
//!      the next wake repeats this step (a retry's next backoff);
//!    - woken during the poll: stored, `Scheduled`, and handed to [`Placement::schedule`]
//!      (a worker polls it next, as step 3);
//!    - over (completed, failed, or abandoned by a forced close): if the key has another
//!      message, the mailbox becomes `Scheduled` and goes to [`Placement::schedule`] (its
//!      home worker for `keyed-mailbox`); if not, this thread retires it (step 6). The
//!      message's window credit is returned last, in both cases (below).
//!
//!    Placements whose threads must run every poll ([`Placement::WAKER_FINISHES_WAIT`]
//!    false: `tokio`, `rayon`) skip this: their waker moves `Waiting` -> `Scheduled` and
//!    schedules the mailbox, and a turn polls the step (step 2).
//! 5. **End of turn**: after `throughput` messages a non-empty mailbox goes back to
//!    `Scheduled` and is requeued behind the other runnable mailboxes (fairness).
//! 6. **Retire**: a holder that finds the queue empty takes the shard lock, checks the
//!    queue again and removes the mailbox from the map (`Retired`). A concurrent submission
//!    either pushed before that check (the holder sees it and runs it, or, on the wake
//!    path, schedules the mailbox) or comes after the removal and creates a new mailbox. A
//!    retired mailbox that nothing else refers to (`Arc::get_mut` succeeds: no waker, no
//!    queue, no map entry holds it) is kept as a spare and reused for a later key, so the
//!    synchronous path allocates nothing once warm; the wake path recycles it too when its
//!    waker was consumed by the wake (`Waker::wake`, the common case).
//!
//! **Credits.** A finished message's window credit is returned when its holder takes the
//! key's next message (itself in flight), when it hands the mailbox to a run queue, or, for
//! the key's last message, only after the emptied mailbox is retired: `drain` and `close`
//! wait for an empty window, so when they return no emptied mailbox is left in the map.
//! Returning the credit after [`Placement::schedule`] also means that `schedule` is called
//! only while a message of the key is in flight, so never after a close found the window
//! empty and stopped the engine's threads.
//!
//! **Forced close.** [`MailboxSet::sweep`] discards queued messages, abandons the steps of
//! `Waiting` mailboxes (the waker that loses that race to the sweep finds the mailbox
//! `Idle` and does nothing) and leaves `Running` ones to their holder, which abandons a
//! step that is still pending after its poll; the key's later messages are discarded by
//! the sweep, or by the turn that dequeues them (`Core::start_holding`). The holder keeps
//! the message's credit until it is done, so `force_close` cannot return while a waker
//! polls, and a step woken after the close finds nothing to run.
//!
//! Per-key order follows: one queue per key, FIFO, one holder at a time, and the next
//! message starts only after the previous step is over.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};
use std::task::{Context, Wake, Waker};

use crate::events::Event;
use crate::executor::{Core, Held};
use crate::sync::{ArrayQueue, AtomicUsize, KeyMap, Mutex, MutexGuard, Ordering};
use crate::{Key, Message, Pending};

/// Retired mailboxes kept for reuse per strategy instance (one under loom).
const SPARE_MAILBOXES: usize = 1024;

/// Where a mailbox is in its life, and who holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Not queued, no holder, nothing pending.
    Idle,
    /// In a run queue (exactly one).
    Scheduled,
    /// One thread holds it: a worker running a turn, or a waker finishing its step.
    Running,
    /// A pending step is stored; its waker takes the mailbox next (or, where the waker
    /// does not finish waits, schedules it).
    Waiting,
    /// Removed from the map. Only reused, as a spare for another key, once nothing else
    /// refers to it (`MailboxSet::recycle`).
    Retired,
}

struct Inner {
    messages: VecDeque<Message>,
    phase: Phase,
    /// A wake arrived while `Running`: the holder hands the mailbox on instead of waiting.
    notified: bool,
    /// The step the mailbox waits for while `Waiting` (or was woken for, while `Scheduled`).
    pending: Option<Pending>,
}

/// The queue of one active key. It is also the waker of its pending steps (`Wake`).
pub(crate) struct Mailbox {
    key: Key,
    /// The worker chosen at creation (`keyed-mailbox`), or the one that last took the
    /// mailbox from another's queue (`hybrid`); placements without affinity ignore it.
    /// Relaxed: it changes only while the mailbox is out of every queue and held by the
    /// thread that took it, and every later reader reaches the mailbox through its lock or
    /// that thread's own queue.
    home: AtomicUsize,
    /// The set the mailbox belongs to, whose wake path its waker calls. Weak: the set owns
    /// its mailboxes; once the set is gone (the strategy dropped) a wake does nothing.
    set: Weak<dyn WakeTarget>,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Mailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailbox").field("key", &self.key).field("home", &self.home()).finish()
    }
}

impl Mailbox {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }

    /// The worker this mailbox belongs to: bound at creation, moved by a take (`hybrid`).
    pub(crate) fn home(&self) -> usize {
        self.home.load(Ordering::Relaxed)
    }

    /// Makes `worker` its home: by the thread that took it from another worker's queue,
    /// before it runs the mailbox.
    pub(crate) fn move_home(&self, worker: usize) {
        self.home.store(worker, Ordering::Relaxed);
    }
}

/// A pending step's waker is its mailbox: `Waker::from(Arc<Mailbox>)` only wraps the `Arc`
/// (a reference count, no allocation), and a clone is another count.
impl Wake for Mailbox {
    fn wake(self: Arc<Self>) {
        if let Some(set) = self.set.upgrade() {
            set.wake_mailbox(self);
        }
    }

    fn wake_by_ref(self: &Arc<Self>) {
        if let Some(set) = self.set.upgrade() {
            // The caller keeps its waker, so this mailbox cannot be recycled here.
            set.wake_mailbox(Arc::clone(self));
        }
    }
}

/// The wake path of a [`MailboxSet`], behind a trait object so that a [`Mailbox`] need not
/// name its placement.
trait WakeTarget: Send + Sync + 'static {
    /// [`MailboxSet::wake`].
    fn wake_mailbox(self: Arc<Self>, mailbox: Arc<Mailbox>);
}

/// Where runnable mailboxes go: the one thing the mailbox strategies do differently.
pub(crate) trait Placement: Send + Sync + Sized + 'static {
    /// Whether the thread that wakes a waiting mailbox polls its step and finishes the
    /// message itself (module docs, step 4), handing the mailbox to [`Placement::schedule`]
    /// only if its key has another message; otherwise every wake schedules the mailbox and
    /// one of the placement's threads polls the step.
    const WAKER_FINISHES_WAIT: bool;

    /// Chooses the worker a new mailbox is bound to for its whole life.
    fn bind(&self) -> usize;

    /// Makes `mailbox` (now `Scheduled`) run a turn soon. Called from any thread: the
    /// submitter, a waker, or a runner requeueing after a full turn; always while a
    /// message of the mailbox's key is in flight (module docs, "Credits"), so never after
    /// the engine was stopped.
    fn schedule(set: &Arc<MailboxSet<Self>>, mailbox: Arc<Mailbox>);
}

/// How a turn ended, inside [`MailboxSet`].
#[derive(Debug)]
enum End {
    /// The queue was empty: the mailbox left the map (`Retired`).
    Retired,
    /// A pending step is stored; its waker takes the mailbox next (`Waiting`).
    Waiting,
    /// `Scheduled` again: after a full turn, or a step that was woken while polled.
    Requeue,
    /// A forced close retired it while it was queued: nothing to do.
    Swept,
}

/// How a turn ended.
#[derive(Debug)]
pub(crate) enum Turn {
    /// The mailbox is retired, waiting, or left for its next owner.
    Done,
    /// A full turn: the mailbox is `Scheduled` again and the caller must requeue it
    /// (behind the other runnable mailboxes).
    Requeue(Arc<Mailbox>),
}

/// Every mailbox of one strategy instance, and the rules that move them.
pub(crate) struct MailboxSet<P> {
    pub(crate) core: Arc<Core>,
    pub(crate) placement: P,
    mailboxes: KeyMap<Key, Arc<Mailbox>>,
    /// Retired mailboxes kept for reuse, so that activating a key allocates nothing once
    /// the set is warm (and a mailbox's queue keeps its capacity).
    spare: ArrayQueue<Arc<Mailbox>>,
}

impl<P> std::fmt::Debug for MailboxSet<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailboxSet").field("mailboxes", &self.mailboxes.len()).finish()
    }
}

impl<P: Placement> WakeTarget for MailboxSet<P> {
    fn wake_mailbox(self: Arc<Self>, mailbox: Arc<Mailbox>) {
        self.wake(mailbox);
    }
}

impl<P: Placement> MailboxSet<P> {
    pub(crate) fn new(core: Arc<Core>, placement: P) -> Arc<Self> {
        let spare = ArrayQueue::new(SPARE_MAILBOXES);
        Arc::new(Self { core, placement, mailboxes: KeyMap::new(), spare })
    }

    /// Mailboxes in the map: keys with unfinished messages.
    pub(crate) fn live(&self) -> usize {
        self.mailboxes.len()
    }

    /// Step 1: queue an admitted message in its key's mailbox.
    pub(crate) fn submit(self: &Arc<Self>, message: Message) {
        let activate = || self.activate(message.key);
        let to_schedule = self.mailboxes.with_entry(message.key, activate, |mailbox| {
            let mut inner = mailbox.lock();
            debug_assert_ne!(inner.phase, Phase::Retired, "a retired mailbox is never in the map");
            inner.messages.push_back(message);
            if inner.phase == Phase::Idle {
                inner.phase = Phase::Scheduled;
                Some(Arc::clone(mailbox))
            } else {
                None
            }
        });
        if let Some(mailbox) = to_schedule {
            self.hand_off(mailbox);
        }
    }

    /// Hands a `Scheduled` mailbox to [`Placement::schedule`], counting the hop.
    #[inline]
    pub(crate) fn hand_off(self: &Arc<Self>, mailbox: Arc<Mailbox>) {
        self.core.events.count(Event::Hop);
        P::schedule(self, mailbox);
    }

    /// A mailbox for `key`, bound to a worker: a spare one if there is one.
    fn activate(self: &Arc<Self>, key: Key) -> Arc<Mailbox> {
        self.core.events.count(Event::Activation);
        let home = self.placement.bind();
        if let Some(mut mailbox) = self.spare.pop() {
            if let Some(spare) = Arc::get_mut(&mut mailbox) {
                spare.key = key;
                spare.home.store(home, Ordering::Relaxed);
                let inner = spare.inner.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
                debug_assert!(inner.messages.is_empty() && inner.pending.is_none());
                inner.phase = Phase::Idle;
                inner.notified = false;
                return mailbox;
            }
        }
        let set: Weak<dyn WakeTarget> = Arc::downgrade(self) as Weak<Self>;
        Arc::new(Mailbox {
            key,
            home: AtomicUsize::new(home),
            set,
            inner: Mutex::new(Inner {
                messages: VecDeque::new(),
                phase: Phase::Idle,
                notified: false,
                pending: None,
            }),
        })
    }

    /// Activation and retirement alone, with no message (`stages.rs`): `key`'s mailbox
    /// enters the map as a first submission's would, then leaves it and is kept as a
    /// spare as a last turn's would.
    #[cfg(not(loom))]
    pub(crate) fn activate_and_retire(self: &Arc<Self>, key: Key) {
        let mailbox = self.mailboxes.with_entry(key, || self.activate(key), Arc::clone);
        let retired = self.retire(&mailbox);
        debug_assert!(retired, "nothing else uses the stage's mailboxes");
        self.recycle(mailbox);
    }

    /// Keeps a retired mailbox for reuse if nothing else refers to it (a waker of an
    /// earlier step may still hold it; then it is simply dropped later).
    fn recycle(&self, mut mailbox: Arc<Mailbox>) {
        if Arc::get_mut(&mut mailbox).is_some() {
            let _ = self.spare.push(mailbox); // a full spare queue drops it
        }
    }

    /// Steps 2 to 6: run one turn of a `Scheduled` mailbox.
    ///
    /// The window credit of a message that ends is returned when the runner takes the
    /// key's next message (which is itself in flight), or, for the last one, after the
    /// emptied mailbox is retired: once `drain` returns, no emptied mailbox is left in the
    /// map, and a finished message never holds its credit past its key's next pop.
    pub(crate) fn run(self: &Arc<Self>, mailbox: Arc<Mailbox>) -> Turn {
        let mut held = self.core.hold(mailbox.key);
        let turn = match self.turn(&mailbox, &mut held) {
            End::Retired => {
                self.recycle(mailbox);
                Turn::Done
            }
            End::Waiting | End::Swept => Turn::Done,
            End::Requeue => Turn::Requeue(mailbox),
        };
        held.release();
        turn
    }

    fn turn(self: &Arc<Self>, mailbox: &Arc<Mailbox>, held: &mut Held<'_>) -> End {
        let resumed = {
            let mut inner = mailbox.lock();
            if inner.phase == Phase::Retired {
                return End::Swept; // retired by a forced close while it was queued
            }
            debug_assert_eq!(inner.phase, Phase::Scheduled, "only a scheduled mailbox runs");
            inner.phase = Phase::Running;
            inner.pending.take()
        };
        if let Some(step) = resumed {
            if let Some(end) = self.drive(mailbox, step, held) {
                return end;
            }
        }
        let mut ran = 0;
        loop {
            let next = {
                let mut inner = mailbox.lock();
                if ran == self.core.config.throughput && !inner.messages.is_empty() {
                    inner.phase = Phase::Scheduled;
                    return End::Requeue;
                }
                inner.messages.pop_front()
            };
            match next {
                Some(message) => {
                    held.release(); // the key still has a message in flight: this one
                    ran += 1;
                    if let Some(step) = self.core.start_holding(&message, held) {
                        if let Some(end) = self.drive(mailbox, step, held) {
                            return end;
                        }
                    }
                }
                None if self.retire(mailbox) => return End::Retired,
                None => {} // a message arrived meanwhile: keep running
            }
        }
    }

    /// Step 3: polls a pending step once, with the mailbox as its waker; `None` when it is
    /// over (completed, failed, or abandoned by a forced close) and the caller goes on. A
    /// step that is not ready is stored: the mailbox waits for its waker (`End::Waiting`)
    /// or, when a wake already arrived during the poll (a step that yields),
    /// `End::Requeue`: it is `Scheduled` and the caller queues it behind the other runnable
    /// mailboxes, so that such a step cannot hold its poller.
    fn drive(&self, mailbox: &Arc<Mailbox>, mut step: Pending, held: &mut Held<'_>) -> Option<End> {
        let waker = Waker::from(Arc::clone(mailbox));
        let mut cx = Context::from_waker(&waker);
        if self.core.poll_holding(&mut step, &mut cx, held).is_ready() {
            return None;
        }
        let mut inner = mailbox.lock();
        let woken = std::mem::take(&mut inner.notified);
        if self.core.is_forced() {
            drop(inner);
            self.core.abandon_holding(step, held);
            return None;
        }
        inner.pending = Some(step);
        if woken {
            inner.phase = Phase::Scheduled;
            Some(End::Requeue)
        } else {
            inner.phase = Phase::Waiting;
            Some(End::Waiting)
        }
    }

    /// Step 6: removes an empty mailbox from the map; `false` if a message arrived.
    fn retire(&self, mailbox: &Arc<Mailbox>) -> bool {
        let mut mapped = false;
        let removed = self.mailboxes.remove_if(&mailbox.key, |current| {
            mapped = Arc::ptr_eq(current, mailbox);
            let mut inner = current.lock();
            let empty = mapped && inner.messages.is_empty();
            if empty {
                inner.phase = Phase::Retired;
            }
            empty
        });
        if removed {
            self.core.events.count(Event::Retirement);
            return true;
        }
        if mapped {
            // A message arrived: look again. (A forced close may already have discarded it;
            // then the next look finds the queue empty and retires the mailbox.)
            return false;
        }
        // The map no longer holds this mailbox, which cannot happen while the protocol
        // holds; then nobody can push to it: run what it holds, then it is done, rather
        // than a runner spinning on it for ever.
        debug_assert!(false, "a running mailbox was missing from the map");
        let mut inner = mailbox.lock();
        if inner.messages.is_empty() {
            inner.phase = Phase::Retired;
            return true;
        }
        false
    }

    /// A waker of `mailbox` fired (module docs, steps 3 and 4), on any thread.
    fn wake(self: &Arc<Self>, mailbox: Arc<Mailbox>) {
        let step = {
            let mut inner = mailbox.lock();
            match inner.phase {
                Phase::Waiting if P::WAKER_FINISHES_WAIT => {
                    let step = inner.pending.take();
                    debug_assert!(step.is_some(), "a waiting mailbox stores its step");
                    if step.is_some() {
                        inner.phase = Phase::Running; // this thread holds it now
                    }
                    step
                }
                Phase::Waiting => {
                    inner.phase = Phase::Scheduled;
                    drop(inner);
                    self.hand_off(mailbox);
                    return;
                }
                Phase::Running => {
                    inner.notified = true;
                    return;
                }
                // Already scheduled, or a late wake of a finished or abandoned step.
                Phase::Idle | Phase::Scheduled | Phase::Retired => return,
            }
        };
        if let Some(step) = step {
            self.finish_wait(mailbox, step);
        }
    }

    /// Step 4: this thread took the `Running` mailbox from its waker and polls its step,
    /// then leaves the mailbox waiting again, hands it to a run queue, or retires it; the
    /// finished message's credit is returned last ("Credits").
    fn finish_wait(self: &Arc<Self>, mailbox: Arc<Mailbox>, step: Pending) {
        let mut held = self.core.hold(mailbox.key);
        match self.drive(&mailbox, step, &mut held) {
            None => self.pass_on(mailbox),
            Some(End::Requeue) => self.hand_off(mailbox), // woken during the poll
            Some(_) => {} // `Waiting` again: the next wake comes back here
        }
        held.release();
    }

    /// Step 4, once the woken step is over: hands the mailbox to its worker if its key has
    /// another message, otherwise retires (and recycles) it on this thread.
    fn pass_on(self: &Arc<Self>, mailbox: Arc<Mailbox>) {
        {
            let mut inner = mailbox.lock();
            if !inner.messages.is_empty() {
                inner.phase = Phase::Scheduled;
                drop(inner);
                self.hand_off(mailbox);
                return;
            }
        }
        if self.retire(&mailbox) {
            self.recycle(mailbox);
            return;
        }
        // A message arrived between the look and the retirement: its worker runs it.
        mailbox.lock().phase = Phase::Scheduled;
        self.hand_off(mailbox);
    }

    /// Forced close: discards every queued message, abandons the pending step of every
    /// `Waiting` mailbox, and retires the mailboxes left with nothing to do: those it
    /// abandoned, and `Scheduled` ones with no stored step (their runner, if the engine
    /// still runs one, finds them `Retired` and drops them). A mailbox already woken
    /// (`Scheduled`, its step still stored) is left to its runner, which polls the step once
    /// more, abandons it if it is still not ready and retires the mailbox; so is a `Running`
    /// one, whether a worker or a waker holds it.
    ///
    /// The abandoned steps are dropped, and every credit returned, only after the walk over
    /// the map: a step's destructor is user code and may wake another mailbox, whose wake
    /// path takes map locks.
    pub(crate) fn sweep(&self) {
        let mut idle = Vec::new();
        let mut abandoned = Vec::new();
        let mut discarded = Vec::new();
        self.mailboxes.for_each(|mailbox| {
            let mut inner = mailbox.lock();
            if !inner.messages.is_empty() {
                discarded.push((mailbox.key, inner.messages.len() as u64));
            }
            inner.messages.clear();
            if inner.phase == Phase::Waiting {
                abandoned.extend(inner.pending.take().map(|step| (mailbox.key, step)));
                // Nothing is left to wait for; a late wake finds it idle and ignores it.
                inner.phase = Phase::Idle;
            }
            if inner.phase == Phase::Idle
                || (inner.phase == Phase::Scheduled && inner.pending.is_none())
            {
                idle.push(Arc::clone(mailbox));
            }
        });
        // A submission admitted before the close may have queued a message in one of them
        // meanwhile; then its runner discards the message and retires the mailbox.
        for mailbox in idle {
            let retired = self.mailboxes.remove_if(&mailbox.key, |current| {
                let mut inner = current.lock();
                let idle = Arc::ptr_eq(current, &mailbox)
                    && matches!(inner.phase, Phase::Idle | Phase::Scheduled)
                    && inner.messages.is_empty()
                    && inner.pending.is_none();
                if idle {
                    inner.phase = Phase::Retired;
                }
                idle
            });
            if retired {
                self.core.events.count(Event::Retirement);
            }
        }
        for (key, count) in discarded {
            self.core.discard(key, count);
        }
        for (key, step) in abandoned {
            self.core.abandon(key, step);
        }
    }
}
