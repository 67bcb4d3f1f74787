//! `inline`: the handler runs on the submitting thread; the zero-overhead reference.
//!
//! # Algorithm
//!
//! 1. `submit` takes a window credit, then calls the handler right there.
//! 2. A pending step is polled to completion on the same thread, which parks between
//!    polls and is unparked by the step's waker.
//!
//! # Ordering guarantee
//!
//! Per submitting thread, messages run one after another in submission order. With one
//! submitting thread (as in the harness) that is total order, so per-key order holds.
//! Several threads submitting the same key concurrently would overlap: the strategy keeps
//! no per-key state.
//!
//! # Trade-offs
//!
//! No parallelism beyond the submitting threads, and every wait blocks the submitter: it
//! measures the cost of the handler and the window alone, with no queueing.
//!
//! # References
//!
//! - crossbeam's channel benchmarks, which report a plain single-thread loop alongside.

use std::sync::Arc;
use std::task::{Context, Wake, Waker};
use std::time::Duration;

use crate::executor::{Core, Engine};
use crate::{Message, Pending, StrategyId};

/// How often a submitter blocked on a pending step looks for a forced close.
const FORCED_CHECK_MS: u64 = 1;

/// The `inline` strategy.
#[derive(Debug)]
pub(crate) struct Inline {
    core: Arc<Core>,
}

impl Engine for Inline {
    const ID: StrategyId = StrategyId::Inline;

    fn start(core: &Arc<Core>) -> Self {
        Self { core: Arc::clone(core) }
    }

    fn dispatch(&self, message: Message) {
        if let Some(step) = self.core.start(&message) {
            block_on(&self.core, step);
        }
    }

    fn sweep(&self) {
        // Nothing is queued; a submitter blocked on a pending step abandons it itself.
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
fn block_on(core: &Core, mut step: Pending) {
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    while core.poll(&mut step, &mut cx).is_pending() {
        if core.is_forced() {
            core.abandon(step);
            return;
        }
        // A forced close cannot unpark this thread, so wake now and then to look.
        std::thread::park_timeout(Duration::from_millis(FORCED_CHECK_MS));
    }
}
