//! Per-key mailboxes: the machinery shared by `keyed-mailbox`, `work-stealing`, `tokio`
//! and `rayon`, which differ only in [`Placement`]: where a runnable mailbox goes.
//!
//! # Protocol
//!
//! A [`Mailbox`] exists while its key has unfinished messages. Its queue and its [`Phase`]
//! are guarded by one small mutex; the map from key to mailbox is a `DashMap` (sharded
//! `RwLock<HashMap>`s, so submissions of different keys rarely touch the same lock and no
//! lock is global) with a fast fixed hash (`hash.rs`). Lock order is always map shard,
//! then mailbox.
//!
//! 1. **Submit** (under the shard lock of the key): find or create the mailbox (a new one
//!    is bound to a worker by [`Placement::bind`]), push the message; if the mailbox was
//!    `Idle`, mark it `Scheduled` and hand it to [`Placement::schedule`]. In every other
//!    phase someone already owns the mailbox and will see the message.
//! 2. **Run a turn** (the one thread that dequeued it, so never two at once): `Scheduled`
//!    -> `Running`. Resume the stored pending step, if any; then pop and run messages, at
//!    most `throughput` per turn.
//! 3. **A pending step** is polled with a waker for this mailbox. If it is not ready, the
//!    mailbox stores it, becomes `Waiting` and gives the worker back. The waker moves
//!    `Waiting` -> `Scheduled` and schedules the mailbox again (on its own worker for
//!    `keyed-mailbox`). A wake that arrives while the turn is still `Running` sets
//!    `notified`; the runner then stores the step and requeues the mailbox behind the other
//!    runnable ones instead of waiting: no wake-up is lost, the mailbox is never scheduled
//!    twice, and a step that wakes itself at every poll cannot hold its runner.
//! 4. **End of turn**: after `throughput` messages a non-empty mailbox goes back to
//!    `Scheduled` and is requeued behind the other runnable mailboxes (fairness).
//! 5. **Retire**: a runner that finds the queue empty takes the shard lock, checks the queue
//!    again and removes the mailbox from the map (`Retired`). A concurrent submission
//!    either pushed before that check (the runner sees it and keeps running) or comes after
//!    the removal and creates a new mailbox. A retired mailbox that nothing else refers to
//!    (`Arc::get_mut` succeeds: no waker, no queue, no map entry holds it) is kept as a
//!    spare and reused for a later key, so the synchronous path allocates nothing once warm.
//!    The window credits of the turn's finished messages are returned only after that, so
//!    when `drain` returns no emptied mailbox is left in the map.
//!
//! Per-key order follows: one queue per key, FIFO, one runner at a time, and the next
//! message starts only after the previous step is ready.

use std::collections::VecDeque;
use std::sync::Arc;
use std::task::{Context, Wake, Waker};

use crate::executor::{Core, Held};
use crate::sync::{ArrayQueue, KeyMap, Mutex, MutexGuard};
use crate::{Key, Message, Pending};

/// Retired mailboxes kept for reuse per strategy instance (one under loom).
const SPARE_MAILBOXES: usize = 1024;

/// Where a mailbox is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Not queued, no runner, nothing pending.
    Idle,
    /// In a run queue (exactly one).
    Scheduled,
    /// A thread is running a turn.
    Running,
    /// A pending step is stored; its waker will schedule the mailbox.
    Waiting,
    /// Removed from the map. Only reused, as a spare for another key, once nothing else
    /// refers to it (`MailboxSet::recycle`).
    Retired,
}

struct Inner {
    messages: VecDeque<Message>,
    phase: Phase,
    /// A wake arrived while `Running`: poll the pending step again before waiting.
    notified: bool,
    /// The step the mailbox waits for while `Waiting`.
    pending: Option<Pending>,
}

/// The queue of one active key.
pub(crate) struct Mailbox {
    key: Key,
    /// The worker chosen at creation (`keyed-mailbox`); placements without affinity ignore it.
    home: usize,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for Mailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mailbox").field("key", &self.key).field("home", &self.home).finish()
    }
}

impl Mailbox {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }

    /// The worker this mailbox was bound to at creation.
    pub(crate) fn home(&self) -> usize {
        self.home
    }
}

/// Where runnable mailboxes go: the one thing the mailbox strategies do differently.
pub(crate) trait Placement: Send + Sync + Sized + 'static {
    /// Chooses the worker a new mailbox is bound to for its whole life.
    fn bind(&self) -> usize;

    /// Makes `mailbox` (now `Scheduled`) run a turn soon. Called from any thread: the
    /// submitter, a waker, or a runner requeueing after a full turn.
    fn schedule(set: &Arc<MailboxSet<Self>>, mailbox: Arc<Mailbox>);
}

/// How a turn ended, inside [`MailboxSet`].
#[derive(Debug)]
enum End {
    /// The queue was empty: the mailbox left the map (`Retired`).
    Retired,
    /// A pending step is stored; its waker will schedule the mailbox (`Waiting`).
    Waiting,
    /// `Scheduled` again: after a full turn, or a step that woke itself while polled.
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
            P::schedule(self, mailbox);
        }
    }

    /// A mailbox for `key`, bound to a worker: a spare one if there is one.
    fn activate(&self, key: Key) -> Arc<Mailbox> {
        let home = self.placement.bind();
        if let Some(mut mailbox) = self.spare.pop() {
            if let Some(spare) = Arc::get_mut(&mut mailbox) {
                spare.key = key;
                spare.home = home;
                let inner = spare.inner.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
                debug_assert!(inner.messages.is_empty() && inner.pending.is_none());
                inner.phase = Phase::Idle;
                inner.notified = false;
                return mailbox;
            }
        }
        Arc::new(Mailbox {
            key,
            home,
            inner: Mutex::new(Inner {
                messages: VecDeque::new(),
                phase: Phase::Idle,
                notified: false,
                pending: None,
            }),
        })
    }

    /// Keeps a retired mailbox for reuse if nothing else refers to it (a waker of an
    /// earlier step may still hold it; then it is simply dropped later).
    fn recycle(&self, mut mailbox: Arc<Mailbox>) {
        if Arc::get_mut(&mut mailbox).is_some() {
            let _ = self.spare.push(mailbox); // a full spare queue drops it
        }
    }

    /// Steps 2 to 5: run one turn of a `Scheduled` mailbox.
    ///
    /// The window credit of a message that ends is returned when the runner takes the
    /// key's next message (which is itself in flight), or, for the last one, after the
    /// emptied mailbox is retired: once `drain` returns, no emptied mailbox is left in the
    /// map, and a finished message never holds its credit past its key's next pop.
    pub(crate) fn run(self: &Arc<Self>, mailbox: Arc<Mailbox>) -> Turn {
        let mut held = self.core.hold();
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

    /// Step 3: polls a pending step once; `None` when it is over (completed, failed, or
    /// abandoned by a forced close) and the turn goes on. A step that is not ready is
    /// stored: the mailbox waits for its waker or, when the waker already fired during the
    /// poll (a step that yields), goes behind the other runnable mailboxes, so that such a
    /// step cannot hold its runner.
    fn drive(
        self: &Arc<Self>,
        mailbox: &Arc<Mailbox>,
        mut step: Pending,
        held: &mut Held<'_>,
    ) -> Option<End> {
        let waker = Waker::from(Arc::new(MailboxWaker {
            set: Arc::clone(self),
            mailbox: Arc::clone(mailbox),
        }));
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

    /// Step 5: removes an empty mailbox from the map; `false` if a message arrived.
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

    /// The waker of a pending step fired.
    fn wake(self: &Arc<Self>, mailbox: &Arc<Mailbox>) {
        let mut inner = mailbox.lock();
        match inner.phase {
            Phase::Waiting => {
                inner.phase = Phase::Scheduled;
                drop(inner);
                P::schedule(self, Arc::clone(mailbox));
            }
            Phase::Running => inner.notified = true,
            // Already scheduled, or a late wake of a finished step: nothing to do.
            Phase::Idle | Phase::Scheduled | Phase::Retired => {}
        }
    }

    /// Forced close: discards every queued message, abandons the pending step of every
    /// `Waiting` mailbox, and retires the mailboxes left with nothing to do: those it
    /// abandoned, and `Scheduled` ones with no stored step (their runner, if the engine
    /// still runs one, finds them `Retired` and drops them). A mailbox already woken
    /// (`Scheduled`, its step still stored) is left to its runner, which polls the step once
    /// more, abandons it if it is still not ready and retires the mailbox; so is a `Running`
    /// one.
    pub(crate) fn sweep(&self) {
        let mut idle = Vec::new();
        self.mailboxes.for_each(|mailbox| {
            let (discarded, abandoned) = {
                let mut inner = mailbox.lock();
                let discarded = inner.messages.len() as u64;
                inner.messages.clear();
                let abandoned =
                    if inner.phase == Phase::Waiting { inner.pending.take() } else { None };
                if abandoned.is_some() {
                    // Nothing is left to wait for; a late wake finds it idle and ignores it.
                    inner.phase = Phase::Idle;
                }
                if inner.phase == Phase::Idle
                    || (inner.phase == Phase::Scheduled && inner.pending.is_none())
                {
                    idle.push(Arc::clone(mailbox));
                }
                (discarded, abandoned)
            };
            self.core.discard(discarded);
            if let Some(step) = abandoned {
                self.core.abandon(step);
            }
        });
        // Outside the iteration, which holds the map's locks. A submission admitted before
        // the close may have queued a message in one of them meanwhile; then its runner
        // discards the message and retires the mailbox.
        for mailbox in idle {
            self.mailboxes.remove_if(&mailbox.key, |current| {
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
        }
    }
}

/// Wakes one mailbox when its pending step can make progress.
struct MailboxWaker<P> {
    set: Arc<MailboxSet<P>>,
    mailbox: Arc<Mailbox>,
}

impl<P: Placement> Wake for MailboxWaker<P> {
    fn wake(self: Arc<Self>) {
        self.set.wake(&self.mailbox);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.set.wake(&self.mailbox);
    }
}
