//! The saga chain of a `saga` workload: a key whose handler, as each of its messages
//! completes, submits the chain's next message into the same executor from that completion
//! (a re-entrant submission, on whichever thread completed the message).
//!
//! 1. The runner binds the chain to the executor once it is built (the handler is built
//!    first, so the chain holds a weak reference, set once).
//! 2. Each repetition, just before the paced bystanders, [`SagaChain::start`] sets the next
//!    sequence number to 1 and submits message 0.
//! 3. The handler's completion hook calls [`SagaChain::completed`] with the aggregate id of
//!    every message that ends; for the saga key it submits the next message, intended now,
//!    until the chain has had its `steps`.
//!
//! The hook runs after the recorder has the message's end and before the executor counts
//! the message finished, so the chain is never empty between two of its messages and a
//! `drain` cannot return before the chain has run to its end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use strategies::{Key, Message, Strategy, SubmitError};

use super::recorder::Clock;
use crate::workload::Saga;

/// One workload's saga chain (module docs).
#[derive(Debug)]
pub(crate) struct SagaChain {
    saga: Saga,
    clock: Clock,
    /// The executor the chain submits into, set once it is built.
    executor: OnceLock<Weak<dyn Strategy>>,
    /// The sequence number of the chain's next message.
    next_seq: AtomicU64,
}

impl SagaChain {
    /// The chain of `saga`, timed on `clock`.
    pub(crate) fn new(saga: Saga, clock: Clock) -> Arc<Self> {
        Arc::new(Self { saga, clock, executor: OnceLock::new(), next_seq: AtomicU64::new(0) })
    }

    /// Binds the chain to the executor its handler runs in.
    pub(crate) fn bind(&self, executor: &Arc<dyn Strategy>) {
        let _ = self.executor.set(Arc::downgrade(executor));
    }

    /// The chain's message `seq`, intended now.
    fn message(&self, seq: u64) -> Message {
        let key = Key::new(0, self.saga.key);
        Message { key, seq, intended_ns: self.clock.now_ns(), job: self.saga.job }
    }

    /// Starts a repetition's chain: submits its first message into `executor`.
    pub(crate) fn start(&self, executor: &dyn Strategy) -> Result<(), SubmitError> {
        // Relaxed: the submission below hands the message (and this store before it) to the
        // thread that runs it, through the executor's own synchronisation.
        self.next_seq.store(1, Ordering::Relaxed);
        executor.submit(self.message(0))
    }

    /// The completion hook: a message of `key` ended; for the saga key, submits the next.
    pub(crate) fn completed(&self, key: u64) {
        if key != self.saga.key {
            return;
        }
        // Relaxed: the chain has one message in flight, and its completion follows its
        // submission through the executor.
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        if seq >= self.saga.steps {
            return;
        }
        if let Some(executor) = self.executor.get().and_then(Weak::upgrade) {
            // An open executor accepts a re-entrant submission whatever its window holds
            // (the conformance suite's re-entrant check), and it stays open until after the
            // drain that waits for this chain; a refusal would leave the chain short, which
            // the recorder does not see, so none is possible here by that protocol.
            let _ = executor.submit(self.message(seq));
        }
    }
}
