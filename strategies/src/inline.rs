//! `inline`: the handler runs on the submitting thread; the zero-overhead reference.
//!
//! # Algorithm
//!
//! 1. `submit` takes a window credit, then calls the handler right there.
//! 2. A pending step is polled to completion on the same thread, which parks between
//!    polls and is unparked by the step's waker.
//! 3. A handler that submits into this strategy (`executor.rs`, "Re-entrant
//!    submissions") never runs the new message inside its own call: with a free credit the
//!    message is admitted and put on this strategy's *admitted* list; at a full window it
//!    waits in the admission queue, and when a message finishes, its credit admits the
//!    queue's head onto the same list (never run inside `finish`).
//! 4. Every `submit` that runs a message runs the admitted list too, in FIFO order: first
//!    what was admitted before its own message (so that it does not overtake them), then,
//!    after its message, what its message let in, until the list is empty. The list is run
//!    in a loop at the depth of that `submit`, so a chain of queued messages adds no depth.
//!
//! # Ordering guarantee
//!
//! Per submitting thread, messages start one after another in submission order. With one
//! submitting thread (as in the harness) that is total order, so per-key order holds, and
//! a message a handler submits runs after that handler's message has ended (step 3), so a
//! saga that sends its key's next message never overlaps it.
//!
//! With several submitting threads neither holds in general: two threads submitting the
//! same key overlap, since the strategy keeps no per-key state; and a message that waited
//! in the admission queue is admitted by whichever thread finishes a message next, whose
//! frame may start it while the handler that submitted it is still running on its own
//! thread. The exported conformance check shows this in its re-entrant check, which
//! submits from two threads; the suite's handlers never submit, and `inline` is the
//! reference, not a contender.
//!
//! # Trade-offs
//!
//! No parallelism beyond the submitting threads, and every wait blocks the submitter: it
//! measures the cost of the handler and the window alone, with no queueing. A message of
//! the admitted list may run on another submitting thread than the one whose handler
//! submitted it.
//!
//! # References
//!
//! - crossbeam's channel benchmarks, which report a plain single-thread loop alongside.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use crate::events::EventSet;
use crate::executor::{BuiltIn, Core, Engine};
use crate::{Key, Message, Pending, StrategyId};

/// How often a submitter blocked on a pending step looks for a forced close.
const FORCED_CHECK_MS: u64 = 1;

/// The `inline` strategy.
#[derive(Debug)]
pub(crate) struct Inline {
    core: Arc<Core>,
    /// Messages the admission queue admitted (step 3), oldest first: in flight, run by the
    /// next `submit` frame that looks (step 4), never inside the `finish` that admitted
    /// them.
    admitted: Mutex<VecDeque<Message>>,
}

impl Inline {
    /// Runs `message` to completion on this thread.
    fn run(&self, message: &Message) {
        if let Some(step) = self.core.start(message) {
            block_on(&self.core, message.key, step);
        }
    }

    /// Runs the admitted list until it is empty (step 4).
    fn run_admitted(&self) {
        while let Some(message) = self.next_admitted() {
            self.run(&message);
        }
    }

    fn next_admitted(&self) -> Option<Message> {
        self.admitted.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).pop_front()
    }
}

impl BuiltIn for Inline {
    const ID: StrategyId = StrategyId::Inline;
    /// Everything runs on the submitter: no hand-off ever happens.
    const EVENTS: EventSet = EventSet::HOPS;
}

impl Engine for Inline {
    fn start(core: &Arc<Core>) -> Self {
        Self { core: Arc::clone(core), admitted: Mutex::new(VecDeque::new()) }
    }

    fn dispatch(&self, message: Message) {
        if self.core.is_running_here() {
            // A handler of this strategy submitted it: the frame running that handler runs
            // it once the handler's message has ended (step 3).
            self.dispatch_admitted(message);
            return;
        }
        self.run_admitted(); // admitted before `message`: they go first
        self.run(&message);
        self.run_admitted(); // what `message` let in
    }

    fn dispatch_admitted(&self, message: Message) {
        // Called inside `finish`, under the admission queue's lock: the frame that called
        // that `finish` runs it after (every finish of this strategy happens in a frame).
        self.admitted.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push_back(message);
    }

    fn sweep(&self) {
        // Nothing is queued but the admitted list, which the frame that filled it runs (a
        // forced close makes it discard them); a submitter blocked on a pending step
        // abandons it itself.
    }

    fn stop(&self) {}

    fn threads_started(&self) -> usize {
        0
    }
}

/// Wakes the thread that drives a step.
struct ThreadWaker(std::thread::Thread);

impl Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `step` to completion on the calling thread, abandoning it on a forced close.
fn block_on(core: &Core, key: Key, mut step: Pending) {
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    while core.poll(key, &mut step, &mut cx).is_pending() {
        if core.is_forced() {
            core.abandon(key, step);
            return;
        }
        // A forced close cannot unpark this thread, so wake now and then to look.
        std::thread::park_timeout(Duration::from_millis(FORCED_CHECK_MS));
    }
}
