//! `keyed-mailbox`: per-key mailboxes pinned to one worker at creation, fair rounds, waits
//! that free the worker, the shared bounded window.
//!
//! # Algorithm
//!
//! 1. One set of `workers` threads for every aggregate type; each worker owns a lock-free
//!    FIFO of runnable mailboxes (`crossbeam_queue::SegQueue`) and a park slot.
//! 2. A message goes to the mailbox of its key, created on demand (see `mailbox.rs`).
//! 3. A new mailbox is bound to a worker, scanning from the next worker in round-robin
//!    order: the first *running* (not parked) worker whose queue is empty (waiting briefly behind its
//!    current message is cheaper than waking a sleeper); else the first *parked* worker;
//!    else the round-robin worker itself. It stays on that worker for its whole life.
//! 4. A runnable mailbox is pushed to its worker's FIFO, waking the worker if it is parked
//!    (`parking.rs`: no lost wake-up).
//! 5. A worker pops mailboxes in FIFO order and runs at most `throughput` messages of each
//!    per turn, then pushes a non-empty mailbox to the back of its own FIFO.
//! 6. A worker with nothing to do spins for `idle_spin_us`, looking at its FIFO on every
//!    iteration, then parks; it parks at once when the spin is 0 or its previous park
//!    outlasted the spin (`parking.rs`, `IdleSpin`).
//! 7. A pending step gives the worker back at once. The thread that wakes it (a timer, an
//!    I/O thread, any thread) polls the step itself (`mailbox.rs`, step 4): if it is
//!    still pending it stays stored and that thread is done; if it is over, the message is
//!    finished there, and the mailbox is pushed to its own worker's FIFO if its key has
//!    another message, or else retired there, before the message's window credit is
//!    returned. A waiting key's last message therefore never waits for its worker, and a
//!    wait costs the worker no turn unless the key has more to run. A step woken again
//!    while it is being polled is pushed to its worker's FIFO instead.
//!
//! # Ordering guarantee
//!
//! One mailbox per active key, FIFO inside; a mailbox is in at most one FIFO and held by
//! one thread at a time, its worker or the waker finishing its step (its phase,
//! `mailbox.rs`); the next message starts only after the previous step is over, and always
//! on the mailbox's worker. A removed mailbox is empty, so a new one starts after the old
//! one's last message finished.
//!
//! # Trade-offs
//!
//! No stealing: a mailbox queued behind a long synchronous turn waits even when other
//! workers are idle (`long-sync`). The window is shared by all keys, so one key holding
//! `max_in_flight - batch + 1` unfinished messages stalls admission for every key
//! (`hot-backlog`). Activating a key costs a map insert and removal (mailboxes themselves
//! are recycled). The idle spin trades CPU for wake-up latency: a spinning worker burns up
//! to `idle_spin_us` per idle stretch, which busy threads miss when workers outnumber cores.
//! The waking thread runs every poll after a wake (each retry attempt's CPU included) and
//! the mailbox's retirement: a timer thread that completes many waits is slower to fire the next ones,
//! and a waker must not be woken while holding a lock the step's poll takes.
//!
//! Binding reads state other threads keep writing: each activation's scan loads the park
//! state and the queue ends of the workers it looks at, a cache miss each while they are
//! busy. With one worker there is nothing to choose and the scan is skipped. The
//! `dispatch` criterion bench runs `--binding round-robin` beside the reference binding to
//! show what the scan costs.
//!
//! With more workers than the machine has cores to spare, no stealing costs throughput,
//! and the scan is not where it goes: when the OS runs the producer or the other worker in
//! place of one worker, that worker's mailboxes wait for it (nobody else may run them), the
//! shared window fills with their messages, the producer blocks, and the other worker runs
//! dry. The reference run `results/2026-12-01-vm-5/summary.md` (2 workers sharing a
//! 2-core VM with the producer) has keyed-mailbox's throughput beside work-stealing's on
//! `uniform`, `zipf` and `many-types`; `results/2026-12-01-vm-6/summary.md` has the same
//! workloads at 1 and 2 workers.
//!
//! # References
//!
//! - docs/design.md section 3 (the design this implements, and its test suite).
//! - Akka/Pekko dispatchers: `throughput` messages per actor per turn; the affinity pool.
//! - tokio's scheduler docs for the park/unpark protocol.

use std::sync::Arc;

use crate::events::{Event, EventSet};
use crate::executor::{BuiltIn, Core, Engine, Threads};
use crate::mailbox::{Mailbox, MailboxSet, Placement, Turn};
use crate::parking::{IdleSpin, ParkSlot};
use crate::sync::{AtomicBool, AtomicUsize, Ordering, SegQueue};
use crate::{Binding, Message, StrategyId};

mod take;

pub(crate) use take::take;

/// One worker's run queue and sleep state.
#[derive(Debug, Default)]
pub(crate) struct Worker {
    /// Runnable mailboxes bound to this worker, in FIFO order.
    pub(crate) runnable: SegQueue<Arc<Mailbox>>,
    park: ParkSlot,
}

/// Affinity placement: a mailbox runs on its home worker, chosen when it was created (and,
/// for `hybrid`, moved by a take).
#[derive(Debug)]
pub(crate) struct Affinity {
    pub(crate) workers: Vec<Worker>,
    /// Where the next binding scan starts.
    next: AtomicUsize,
    /// The binding rule: the reference scan, or an ablation (`Binding`).
    binding: Binding,
    shutdown: AtomicBool,
}

impl Affinity {
    /// `workers` empty FIFOs, the binding scan starting at worker 0.
    pub(crate) fn new(workers: usize, binding: Binding) -> Self {
        Self {
            workers: (0..workers).map(|_| Worker::default()).collect(),
            next: AtomicUsize::new(0),
            binding,
            shutdown: AtomicBool::new(false),
        }
    }

    /// Whether a worker other than `index` has a runnable mailbox queued (the breakdown's
    /// parked-while-queued count; a look at every other queue, taken only while counting).
    fn others_queued(&self, index: usize) -> bool {
        self.workers
            .iter()
            .enumerate()
            .any(|(other, worker)| other != index && !worker.runnable.is_empty())
    }
}

impl Placement for Affinity {
    /// The reference's wake path: the completing thread finishes the wait.
    const WAKER_FINISHES_WAIT: bool = true;

    fn bind(&self) -> usize {
        let count = self.workers.len();
        if count == 1 {
            // The only worker: the scan would choose it whatever it found, and reading a
            // busy worker's queue and park state costs a cache miss per activation.
            return 0;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) % count;
        if self.binding == Binding::RoundRobin {
            return start;
        }
        let order = (0..count).map(|offset| (start + offset) % count);
        let running_and_empty = |&index: &usize| {
            let worker = &self.workers[index];
            !worker.park.is_parked() && worker.runnable.is_empty()
        };
        let parked = |&index: &usize| self.workers[index].park.is_parked();
        order
            .clone()
            .find(running_and_empty)
            .or_else(|| order.clone().find(parked))
            .unwrap_or(start)
    }

    fn schedule(set: &Arc<MailboxSet<Self>>, mailbox: Arc<Mailbox>) {
        let worker = &set.placement.workers[mailbox.home()];
        worker.runnable.push(mailbox);
        if worker.park.unpark() {
            set.core.events.count(Event::Wakeup);
        }
    }
}

/// The `keyed-mailbox` strategy; with `TAKE`, `hybrid` (`hybrid.rs`): the same affinity,
/// and a worker that runs dry takes a queued mailbox from another worker's queue.
#[derive(Debug)]
pub(crate) struct KeyedMailbox<const TAKE: bool = false> {
    set: Arc<MailboxSet<Affinity>>,
    threads: Threads,
}

impl BuiltIn for KeyedMailbox<false> {
    const ID: StrategyId = StrategyId::KeyedMailbox;
    const EVENTS: EventSet = EventSet::NO_TAKES;
}

impl BuiltIn for KeyedMailbox<true> {
    const ID: StrategyId = StrategyId::Hybrid;
    const EVENTS: EventSet = EventSet::ALL;
}

impl<const TAKE: bool> Engine for KeyedMailbox<TAKE> {
    fn start(core: &Arc<Core>) -> Self {
        let workers = core.config.workers;
        let placement = Affinity::new(workers, core.config.binding);
        let set = MailboxSet::new(Arc::clone(core), placement);
        let threads = Threads::default();
        let name = if TAKE { StrategyId::Hybrid } else { StrategyId::KeyedMailbox };
        for index in 0..workers {
            let set = Arc::clone(&set);
            threads.spawn(format!("{name}-{index}"), move || work::<TAKE>(&set, index));
        }
        Self { set, threads }
    }

    fn dispatch(&self, message: Message) {
        self.set.submit(message);
    }

    fn sweep(&self) {
        self.set.sweep();
    }

    fn stop(&self) {
        let placement = &self.set.placement;
        // SeqCst: pairs with the shutdown load in `work`, which follows the fence of
        // `prepare_park`; the fences of the `unpark`s below then wake a worker that read
        // `false` (the pairing of `parking.rs`).
        placement.shutdown.store(true, Ordering::SeqCst);
        for worker in &placement.workers {
            worker.park.unpark();
        }
        self.threads.join_all();
    }

    fn threads_started(&self) -> usize {
        self.threads.started()
    }

    fn live_mailboxes(&self) -> Option<usize> {
        Some(self.set.live())
    }
}

/// The loop of worker `index`: run mailboxes in FIFO order, park when there are none;
/// with `TAKE` (`hybrid`), take another worker's queued mailbox before spinning.
fn work<const TAKE: bool>(set: &Arc<MailboxSet<Affinity>>, index: usize) {
    let placement = &set.placement;
    let me = &placement.workers[index];
    me.park.register();
    let mut idle = IdleSpin::new(set.core.config.idle_spin_us);
    loop {
        let own = me.runnable.pop();
        let next = if TAKE {
            own.or_else(|| {
                let taken = take(placement, index);
                if taken.is_some() {
                    set.core.events.count(Event::Take);
                }
                taken
            })
        } else {
            own
        };
        if let Some(mailbox) = next {
            if idle.reset() {
                set.core.events.count(Event::SpinHit);
            }
            if let Turn::Requeue(mailbox) = set.run(mailbox) {
                set.core.events.count(Event::Hop);
                me.runnable.push(mailbox);
            }
            continue;
        }
        if idle.spin() {
            continue; // spin first: parking and being woken cost system calls
        }
        me.park.prepare_park();
        if !me.runnable.is_empty() {
            me.park.cancel_park();
            continue;
        }
        // SeqCst: pairs with the shutdown store in `KeyedMailbox::stop`.
        if placement.shutdown.load(Ordering::SeqCst) {
            me.park.cancel_park();
            return;
        }
        set.core.events.count(Event::Park);
        if set.core.events.is_on() && placement.others_queued(index) {
            set.core.events.count(Event::ParkedWhileQueued);
        }
        idle.park(&me.park);
    }
}
