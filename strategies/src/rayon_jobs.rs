//! `rayon`: per-key mailboxes drained by jobs on a rayon thread pool.
//!
//! # Algorithm
//!
//! 1. The mailbox machinery of `keyed-mailbox` (`mailbox.rs`): one mailbox per active key,
//!    at most `throughput` messages per turn, pending steps free the thread.
//! 2. Each turn of a runnable mailbox is one job given to `ThreadPool::spawn_fifo` on a
//!    pool of `workers` threads; a full turn, or a woken pending step, spawns the next.
//! 3. rayon schedules the jobs: per-thread deques (FIFO here), a global injector, stealing.
//! 4. A woken step is re-polled on a pool thread, never on the waking one
//!    (`WAKER_FINISHES_WAIT` is false): the waker only marks the mailbox `Scheduled` and
//!    spawns a turn job with `spawn_fifo` (from a thread outside the pool, such as the
//!    harness timer, the job enters the pool's global injector; from a pool thread, that
//!    thread's deque); a pool thread runs the job, which polls the step, finishes the
//!    message, returns its credit and runs or retires the key's mailbox. rayon has no
//!    futures: a job is the only way to run code on its threads, so every poll is a job.
//!
//! # Ordering guarantee
//!
//! A mailbox has at most one turn job in existence (its phase, `mailbox.rs`), and a turn
//! runs the key's messages in FIFO order, each after the previous step is ready.
//!
//! # Trade-offs
//!
//! rayon is built for fork-join data parallelism: a heap allocation per job (a wake
//! included: a waiting message ends only when a pool thread runs its job), and sleeping
//! threads are woken through its own sleep module tuned for that use.
//!
//! # Why this is rayon at its best for the job
//!
//! - **One job per turn, not per message.** A job is rayon's unit of scheduling and
//!   costs a heap allocation and a trip through its deques and sleep module; a turn
//!   amortises it over up to `throughput` messages of one key, and the key's order lives
//!   in the mailbox, not in rayon (which promises no order between spawns).
//! - **`spawn_fifo`, not `spawn`.** A full turn requeued from a pool thread would, with
//!   `spawn`, go to the front of that thread's deque (rayon spawns LIFO per thread) and
//!   run again before the keys queued behind it: the fairness rounds would be lost.
//!   `spawn_fifo` keeps a thread's own spawns in FIFO order; from the producer (outside the
//!   pool) both enter the same global injector.
//! - **No scope.** `scope`/`scope_fifo` end by joining every task spawned in them: a
//!   fork-join shape with a known end, where this is an unbounded stream whose producer must
//!   not block on a batch. `in_place_scope` would run the producer's turns on the producer.
//! - **No blocking helpers.** rayon has none (no `block_in_place`); a blocking handler holds
//!   its pool thread, as it would any rayon user's.
//! - **The pool's lock is not on a shared line.** `schedule` takes the pool's `RwLock` for
//!   reading; only `stop` writes it, so the producer's read is one atomic add on a line that
//!   pool threads touch only when they requeue a full turn or reschedule a woken step.
//!
//! # References
//!
//! - rayon's documentation (`ThreadPool::spawn_fifo`, `ThreadPoolBuilder`, rayon RFC 1 on
//!   FIFO spawns).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock};

use crate::events::EventSet;
use crate::executor::{BuiltIn, wait_for_threads, Core, Engine};
use crate::mailbox::{Mailbox, MailboxSet, Placement, Turn};
use crate::{Message, StrategyId};

/// Placement on a rayon pool: one job per turn.
#[derive(Debug)]
pub(crate) struct RayonPlacement {
    /// The pool; taken out (and so shut down) by `stop`. Read-locked once per turn.
    pool: RwLock<Option<rayon::ThreadPool>>,
}

impl Placement for RayonPlacement {
    /// Every poll runs in a job on the pool (module docs, step 4).
    const WAKER_FINISHES_WAIT: bool = false;

    fn bind(&self) -> usize {
        0
    }

    fn schedule(set: &Arc<MailboxSet<Self>>, mailbox: Arc<Mailbox>) {
        let set_for_job = Arc::clone(set);
        let pool = set.placement.pool.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        // After `stop` nothing is in flight, so a late wake has nothing to run.
        if let Some(pool) = pool.as_ref() {
            pool.spawn_fifo(move || {
                if let Turn::Requeue(mailbox) = set_for_job.run(mailbox) {
                    set_for_job.hand_off(mailbox);
                }
            });
        }
    }
}

/// The `rayon` strategy.
#[derive(Debug)]
pub(crate) struct RayonJobs {
    set: Arc<MailboxSet<RayonPlacement>>,
    started: Arc<AtomicUsize>,
    /// Signalled by each pool thread as it exits, so `stop` can wait for all of them.
    exited: Arc<(Mutex<usize>, Condvar)>,
}

impl BuiltIn for RayonJobs {
    const ID: StrategyId = StrategyId::Rayon;
    /// rayon's parks and wake-ups are its own.
    const EVENTS: EventSet = EventSet::MAILBOXES;
}

impl Engine for RayonJobs {
    fn start(core: &Arc<Core>) -> Self {
        let started = Arc::new(AtomicUsize::new(0));
        let exited = Arc::new((Mutex::new(0), Condvar::new()));
        let on_start = Arc::clone(&started);
        let on_exit = Arc::clone(&exited);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(core.config.workers)
            .thread_name(|index| format!("rayon-{index}"))
            .start_handler(move |_| {
                // Release: pairs with the Acquire load in `executor::wait_for_threads`.
                on_start.fetch_add(1, Ordering::Release);
            })
            .exit_handler(move |_| {
                let (count, changed) = &*on_exit;
                *count.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) += 1;
                changed.notify_all();
            })
            .build()
            .unwrap_or_else(|error| panic!("cannot start the rayon pool: {error}"));
        wait_for_threads(&started, core.config.workers);
        let set =
            MailboxSet::new(Arc::clone(core), RayonPlacement { pool: RwLock::new(Some(pool)) });
        Self { set, started, exited }
    }

    fn dispatch(&self, message: Message) {
        self.set.submit(message);
    }

    fn sweep(&self) {
        self.set.sweep();
    }

    fn stop(&self) {
        let pool =
            self.set.placement.pool.write().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
        // Dropping a rayon pool only tells its threads to exit; wait for them here.
        drop(pool);
        let started = self.set.core.config.workers;
        let (count, changed) = &*self.exited;
        let mut exited = count.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while *exited < started {
            exited = changed.wait(exited).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }

    fn threads_started(&self) -> usize {
        self.started.load(Ordering::Relaxed)
    }

    fn live_mailboxes(&self) -> Option<usize> {
        Some(self.set.live())
    }
}
