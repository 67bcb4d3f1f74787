//! `thread-pool`: a plain pool fed by one channel, with no per-key order. The negative
//! control: the correctness checker must catch it.
//!
//! # Algorithm
//!
//! 1. `workers` threads receive from one unbounded flume channel (MPMC).
//! 2. A thread runs each message it receives at once, whatever its key.
//! 3. A pending step is stored in a shared cell; its waker sends the cell back down the
//!    channel and whichever thread receives it polls the step again.
//!
//! # Ordering guarantee
//!
//! None: two messages of one key can run at the same time on two threads, and a later one
//! can finish first. This is what a consumer that hands records to a plain executor gets
//! (docs/design.md section 4).
//!
//! # Trade-offs
//!
//! The cheapest dispatch and perfect load balance, bought by giving up ordering.
//!
//! # References
//!
//! - docs/design.md section 4 (why a plain pool breaks per-key order and offset commits).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};

use crate::events::{Event, EventSet};
use crate::executor::{BuiltIn, Core, Engine, Threads};
use crate::{Key, Message, Pending, StrategyId};

/// Work for any pool thread.
enum Task {
    Run(Message),
    /// A pending step was woken.
    Resume(Arc<StepCell>),
    Stop,
}

/// A pending step, polled by whichever thread receives its `Resume`.
struct StepCell {
    id: u64,
    /// The key of the message whose step this is (its credit's window).
    key: Key,
    /// `None` once the step completed or was abandoned. Locked while it is polled.
    step: Mutex<Option<Pending>>,
    sender: flume::Sender<Task>,
}

impl Wake for StepCell {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // After `Stop` nothing is in flight: the wake is moot.
        let _ = self.sender.send(Task::Resume(Arc::clone(self)));
    }
}

/// State shared by the pool threads.
struct Shared {
    core: Arc<Core>,
    sender: flume::Sender<Task>,
    /// Pending steps not yet complete, so a forced close can abandon them.
    waiting: Mutex<HashMap<u64, Arc<StepCell>>>,
    next_id: AtomicU64,
}

impl Shared {
    fn run(&self, message: &Message) {
        let Some(step) = self.core.start(message) else { return };
        let cell = Arc::new(StepCell {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            key: message.key,
            step: Mutex::new(Some(step)),
            sender: self.sender.clone(),
        });
        self.lock_waiting().insert(cell.id, Arc::clone(&cell));
        self.resume(&cell);
    }

    fn resume(&self, cell: &Arc<StepCell>) {
        let mut slot = cell.step.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Some(step) = slot.as_mut() else { return }; // done, or a repeated wake
        let waker = Waker::from(Arc::clone(cell));
        if self.core.poll(cell.key, step, &mut Context::from_waker(&waker)).is_ready() {
            *slot = None;
            drop(slot);
            self.lock_waiting().remove(&cell.id);
        }
    }

    fn sweep(&self) {
        let cells: Vec<_> = self.lock_waiting().drain().map(|(_, cell)| cell).collect();
        for cell in cells {
            let step = cell.step.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take();
            if let Some(step) = step {
                self.core.abandon(cell.key, step);
            }
        }
    }

    fn lock_waiting(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<StepCell>>> {
        self.waiting.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The `thread-pool` strategy.
pub(crate) struct ThreadPool {
    shared: Arc<Shared>,
    threads: Threads,
}

impl std::fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPool").field("threads", &self.threads).finish_non_exhaustive()
    }
}

impl BuiltIn for ThreadPool {
    const ID: StrategyId = StrategyId::ThreadPool;
    /// flume's parks and wake-ups are its own.
    const EVENTS: EventSet = EventSet::HOPS;
}

impl Engine for ThreadPool {
    fn start(core: &Arc<Core>) -> Self {
        let (sender, receiver) = flume::unbounded();
        let shared = Arc::new(Shared {
            core: Arc::clone(core),
            sender,
            waiting: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(0),
        });
        let threads = Threads::default();
        for index in 0..core.config.workers {
            let (shared, receiver) = (Arc::clone(&shared), receiver.clone());
            threads.spawn(format!("thread-pool-{index}"), move || {
                while let Ok(task) = receiver.recv() {
                    if matches!(task, Task::Run(_) | Task::Resume(_)) {
                        shared.core.events.count(Event::Hop); // it came over the channel
                    }
                    match task {
                        Task::Run(message) => shared.run(&message),
                        Task::Resume(cell) => shared.resume(&cell),
                        Task::Stop => return,
                    }
                }
            });
        }
        Self { shared, threads }
    }

    fn dispatch(&self, message: Message) {
        // The pool's threads only exit on `Stop`, after which nothing is sent.
        let _ = self.shared.sender.send(Task::Run(message));
    }

    fn sweep(&self) {
        self.shared.sweep();
    }

    fn stop(&self) {
        for _ in 0..self.threads.started() {
            let _ = self.shared.sender.send(Task::Stop);
        }
        self.threads.join_all();
    }

    fn threads_started(&self) -> usize {
        self.threads.started()
    }
}
