//! `work-stealing`: per-key mailboxes scheduled by work stealing, with no affinity.
//!
//! # Algorithm
//!
//! 1. The mailbox machinery of `keyed-mailbox` (`mailbox.rs`), unchanged: one mailbox per
//!    active key, at most `throughput` messages per turn, pending steps free the worker.
//! 2. Placement differs: a mailbox made runnable from outside the pool goes to a global
//!    `crossbeam_deque::Injector`; a mailbox requeued after a full turn goes to the back of
//!    the running worker's local FIFO deque. A waker finishes the woken step itself, as in
//!    `keyed-mailbox` (`mailbox.rs`, step 4): the key's last message ends, and its mailbox
//!    is retired, on the waking thread; only a key with another message (or a step woken
//!    again while polled there) goes to the injector, where any worker takes it.
//! 3. A worker takes work from its own deque, else a batch from the injector, else steals
//!    from the other workers' deques. When all are empty it spins for `idle_spin_us`,
//!    looking at every queue on each iteration, then parks; it parks at once when the spin
//!    is 0 or its previous park outlasted the spin (`parking.rs`, `IdleSpin`). A producer
//!    wakes one parked worker.
//!
//! # Ordering guarantee
//!
//! Identical to `keyed-mailbox`: order is a property of the mailbox (one FIFO per key, one
//! runner at a time, next message after the previous step is ready), not of placement; a
//! stolen mailbox is still run by one thread at a time.
//!
//! # Trade-offs
//!
//! Idle workers take over a long synchronous round's backlog, but every runnable mailbox
//! passes through a shared injector and may move between cores (cache misses, contention
//! on the injector under many submitters). The waking thread pays for the polls after a
//! wake and the retirement, as in `keyed-mailbox`. Every spinning worker polls all the deques and
//! the injector, so the idle spin costs more shared-cache traffic here than in
//! `keyed-mailbox`.
//!
//! # References
//!
//! - crossbeam-deque's documentation (the `find_task` loop used here).
//! - tokio's multi-thread scheduler (work stealing with local queues and an injector).

use std::iter;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_deque::{Injector, Steal, Stealer, Worker};

use crate::events::{Event, EventCounter, EventSet};
use crate::executor::{BuiltIn, Core, Engine, Threads};
use crate::mailbox::{Mailbox, MailboxSet, Placement, Turn};
use crate::parking::{IdleSpin, ParkSlot};
use crate::{Message, StrategyId};

/// Work-stealing placement: a global injector plus one stealable deque per worker.
#[derive(Debug)]
pub(crate) struct Stealing {
    injector: Injector<Arc<Mailbox>>,
    stealers: Vec<Stealer<Arc<Mailbox>>>,
    parks: Vec<ParkSlot>,
    shutdown: AtomicBool,
}

impl Stealing {
    /// Wakes one parked worker, if any, to look for work; whether it woke one.
    fn wake_one(&self) -> bool {
        self.parks.iter().any(ParkSlot::unpark)
    }

    /// Whether any queue a worker could take from holds a mailbox.
    fn has_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|stealer| !stealer.is_empty())
    }

    /// The crossbeam-deque `find_task` loop: local deque, then the injector, then the others
    /// (a steal from another worker's deque is counted as a take).
    fn find(&self, local: &Worker<Arc<Mailbox>>, events: &EventCounter) -> Option<Arc<Mailbox>> {
        local.pop().or_else(|| {
            iter::repeat_with(|| {
                self.injector.steal_batch_and_pop(local).or_else(|| {
                    let stolen: Steal<_> =
                        self.stealers.iter().map(|stealer| stealer.steal()).collect();
                    if stolen.is_success() {
                        events.count(Event::Take);
                    }
                    stolen
                })
            })
            .find(|steal| !steal.is_retry())
            .and_then(|steal| steal.success())
        })
    }
}

impl Placement for Stealing {
    /// The reference's wake path, as in `keyed-mailbox`.
    const WAKER_FINISHES_WAIT: bool = true;

    fn bind(&self) -> usize {
        0 // no affinity: any worker may run any mailbox
    }

    fn schedule(set: &Arc<MailboxSet<Self>>, mailbox: Arc<Mailbox>) {
        set.placement.injector.push(mailbox);
        if set.placement.wake_one() {
            set.core.events.count(Event::Wakeup);
        }
    }
}

/// The `work-stealing` strategy.
#[derive(Debug)]
pub(crate) struct WorkStealing {
    set: Arc<MailboxSet<Stealing>>,
    threads: Threads,
}

impl BuiltIn for WorkStealing {
    const ID: StrategyId = StrategyId::WorkStealing;
    const EVENTS: EventSet = EventSet::ALL;
}

impl Engine for WorkStealing {
    fn start(core: &Arc<Core>) -> Self {
        let workers = core.config.workers;
        let locals: Vec<_> = (0..workers).map(|_| Worker::new_fifo()).collect();
        let placement = Stealing {
            injector: Injector::new(),
            stealers: locals.iter().map(Worker::stealer).collect(),
            parks: (0..workers).map(|_| ParkSlot::default()).collect(),
            shutdown: AtomicBool::new(false),
        };
        let set = MailboxSet::new(Arc::clone(core), placement);
        let threads = Threads::default();
        for (index, local) in locals.into_iter().enumerate() {
            let set = Arc::clone(&set);
            threads.spawn(format!("work-stealing-{index}"), move || work(&set, index, &local));
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
        for park in &placement.parks {
            park.unpark();
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

/// The loop of worker `index`.
fn work(set: &Arc<MailboxSet<Stealing>>, index: usize, local: &Worker<Arc<Mailbox>>) {
    let placement = &set.placement;
    let park = &placement.parks[index];
    park.register();
    let mut idle = IdleSpin::new(set.core.config.idle_spin_us);
    loop {
        if let Some(mailbox) = placement.find(local, &set.core.events) {
            if idle.reset() {
                set.core.events.count(Event::SpinHit);
            }
            // More runnable work than this worker: share it.
            if !local.is_empty() && placement.wake_one() {
                set.core.events.count(Event::Wakeup);
            }
            if let Turn::Requeue(mailbox) = set.run(mailbox) {
                set.core.events.count(Event::Hop);
                local.push(mailbox);
            }
            continue;
        }
        if idle.spin() {
            continue; // spin first: parking and being woken cost system calls
        }
        park.prepare_park();
        if placement.has_work() {
            park.cancel_park();
            continue;
        }
        // SeqCst: pairs with the shutdown store in `WorkStealing::stop`.
        if placement.shutdown.load(Ordering::SeqCst) {
            park.cancel_park();
            return;
        }
        set.core.events.count(Event::Park);
        if set.core.events.is_on() && placement.has_work() {
            set.core.events.count(Event::ParkedWhileQueued);
        }
        idle.park(park);
    }
}
