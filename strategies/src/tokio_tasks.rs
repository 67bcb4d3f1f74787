//! `tokio`: per-key mailboxes drained by tasks on tokio's multi-thread runtime.
//!
//! # Algorithm
//!
//! 1. The mailbox machinery of `keyed-mailbox` (`mailbox.rs`): one mailbox per active key,
//!    at most `throughput` messages per turn, pending steps free the thread.
//! 2. Each turn of a runnable mailbox is one task spawned on a runtime of `workers`
//!    threads; a full turn, or a woken pending step, spawns the next turn.
//! 3. tokio schedules the tasks: per-worker local queues, a global injector, a LIFO slot
//!    and work stealing.
//! 4. A woken step is re-polled on a runtime thread, never on the waking one
//!    (`WAKER_FINISHES_WAIT` is false): the waker only marks the mailbox `Scheduled` and
//!    spawns a turn task (from a thread outside the runtime, such as the harness timer,
//!    the task enters tokio's injection queue); a tokio worker runs that task, which polls
//!    the step, finishes the message, returns its credit and runs or retires the key's
//!    mailbox. That is what tokio does with a task that awaits the step itself: its waker
//!    re-queues the task and a runtime thread polls it. (The step is polled with the
//!    mailbox's own waker, so tokio would not stop the waking thread from polling it; this
//!    strategy keeps every poll on tokio's threads, as a tokio program's would be.)
//!
//! # Ordering guarantee
//!
//! A mailbox has at most one turn task in existence (its phase, `mailbox.rs`), and a turn
//! runs the key's messages in FIFO order, each after the previous step is ready.
//!
//! # Trade-offs
//!
//! A task allocation and a scheduler round trip per turn, a wake included: a waiting
//! message ends only when a runtime thread gets to its turn task, and its last message
//! costs a task too. The LIFO slot favours the most recently spawned turn, which can delay
//! older ones under CPU-heavy handlers.
//!
//! # Why this is tokio at its best for the job
//!
//! - **One task per turn, not per message.** A spawn allocates a task and goes through the
//!   scheduler; a turn amortises it over up to `throughput` messages of one key. The
//!   per-key order lives in the mailbox: tokio promises none between tasks.
//! - **The default runtime.** Work stealing, the injection queue for spawns from outside
//!   the runtime (the producer, the harness timer) and each worker's local queue for spawns
//!   from inside are what a tokio program gets. The LIFO slot (a turn spawned from a worker
//!   runs next there) can only be turned off in `tokio_unstable` builds; it stays on, as in
//!   every stable tokio program.
//! - **No `block_in_place` or `spawn_blocking`.** Handlers are run where the task runs.
//!   `block_in_place` hands the worker's queue to a new thread for each blocking call and
//!   `spawn_blocking` runs the call on tokio's blocking pool (up to 512 threads): either
//!   breaks the `workers`-thread budget that every strategy is measured with, and neither
//!   would keep the key's order without the mailbox waiting on the call.
//! - **Pending steps are awaited by tokio's waker protocol.** A woken step's mailbox spawns
//!   a turn task, as a task awaiting the step would be rescheduled; no poll runs on the
//!   waking thread.
//! - The idiomatic alternative, one long-lived task and channel per active key, is the
//!   `tokio-actors` strategy, measured beside this one.
//!
//! # References
//!
//! - tokio's multi-thread scheduler (docs.rs/tokio, `runtime` module, `Builder`).
//! - docs/design.md section 5 (the LIFO slot's tail-latency problems).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::events::EventSet;
use crate::executor::{BuiltIn, wait_for_threads, Core, Engine};
use crate::mailbox::{Mailbox, MailboxSet, Placement, Turn};
use crate::{Message, StrategyId};

/// Placement on a tokio runtime: one spawned task per turn.
#[derive(Debug)]
pub(crate) struct TokioPlacement {
    handle: tokio::runtime::Handle,
}

impl Placement for TokioPlacement {
    /// Every poll runs in a task on the runtime (module docs, step 4).
    const WAKER_FINISHES_WAIT: bool = false;

    fn bind(&self) -> usize {
        0
    }

    fn schedule(set: &Arc<MailboxSet<Self>>, mailbox: Arc<Mailbox>) {
        let set_for_task = Arc::clone(set);
        // The join handle is dropped: a turn reports nothing back.
        drop(set.placement.handle.spawn(async move {
            if let Turn::Requeue(mailbox) = set_for_task.run(mailbox) {
                set_for_task.hand_off(mailbox);
            }
        }));
    }
}

/// The `tokio` strategy.
#[derive(Debug)]
pub(crate) struct TokioTasks {
    set: Arc<MailboxSet<TokioPlacement>>,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    started: Arc<AtomicUsize>,
}

impl BuiltIn for TokioTasks {
    const ID: StrategyId = StrategyId::Tokio;
    /// tokio's parks and wake-ups are its own.
    const EVENTS: EventSet = EventSet::MAILBOXES;
}

impl Engine for TokioTasks {
    fn start(core: &Arc<Core>) -> Self {
        let (runtime, started) = start_runtime(core.config.workers, "tokio-worker");
        let placement = TokioPlacement { handle: runtime.handle().clone() };
        Self {
            set: MailboxSet::new(Arc::clone(core), placement),
            runtime: Mutex::new(Some(runtime)),
            started,
        }
    }

    fn dispatch(&self, message: Message) {
        self.set.submit(message);
    }

    fn sweep(&self) {
        self.set.sweep();
    }

    fn stop(&self) {
        stop_runtime(&self.runtime);
    }

    fn threads_started(&self) -> usize {
        self.started.load(Ordering::Relaxed)
    }

    fn live_mailboxes(&self) -> Option<usize> {
        Some(self.set.live())
    }
}

/// A multi-thread runtime of `workers` threads named `name`, started and counted: returns
/// once every thread runs, with the count of threads started (`threads_started`). Shared
/// with `tokio-actors`.
pub(crate) fn start_runtime(
    workers: usize,
    name: &'static str,
) -> (tokio::runtime::Runtime, Arc<AtomicUsize>) {
    let started = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&started);
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(workers).thread_name(name);
    // tokio built with `--cfg loom` (scripts/loom.sh) has no thread hooks; these strategies
    // are never modelled, so there they only have to compile.
    #[cfg(not(loom))]
    builder.on_thread_start(move || {
        // Release: pairs with the Acquire load in `executor::wait_for_threads`.
        counter.fetch_add(1, Ordering::Release);
    });
    #[cfg(loom)]
    drop(counter);
    let runtime =
        builder.build().unwrap_or_else(|error| panic!("cannot start the tokio runtime: {error}"));
    wait_for_threads(&started, workers);
    (runtime, started)
}

/// Shuts the runtime down, once; called when nothing is in flight, so no task is left to
/// wait for.
pub(crate) fn stop_runtime(runtime: &Mutex<Option<tokio::runtime::Runtime>>) {
    let runtime = runtime.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
    if let Some(runtime) = runtime {
        runtime.shutdown_timeout(std::time::Duration::from_secs(10));
    }
}
