//! Test support for the conformance suite.
//!
//! - [`Recorder`]: every handler call records when its message started and ended, on which
//!   thread, and checks per-key order on the fly: an *order violation* is a message whose
//!   `seq` does not directly follow the previous started `seq` of its key (the first must
//!   be 0); an *overlap* is a message that starts while another message of its key has
//!   started and not ended. [`Recorder::report`] adds lost, duplicated and unexpected
//!   messages against what the test submitted.
//! - [`TestHandler`]: interprets [`Job`]s: `Spin` busy-loops, `Wait` returns a pending step
//!   completed by a small timer thread, `Retry` waits a doubling backoff between attempts,
//!   `Panic` panics; `Custom` codes built by [`block_on_gate`], [`pend_on_gate`],
//!   [`panic_when_polled`], [`panic_on_first_poll`] and [`yield_forever`] block the worker
//!   on a [`Gates`] gate, wait (pending) for a gate, panic while the step is polled (after
//!   a wake, or at once), or never complete while waking themselves at every poll; the
//!   chain codes ([`chain`], [`chain_from_step`], [`chain_then_pend`]) submit the chain's
//!   next message into the strategy under test from inside it, as a saga sends a command.
//!   A pending message *ends* when its step completes; a panicking one ends as it panics and
//!   is also counted as a handler failure.
//! - [`Fixture`]: one strategy built with a [`TestHandler`], the messages it accepted and
//!   rejected (the handler's own submissions too, through [`Submissions`]), and watchdogs
//!   so that a broken strategy fails a test instead of hanging it.
//! - [`Ledger`]: where every submitted message went (completed, failed, discarded,
//!   abandoned, handed back), from the recorder and the strategy's counters, which must
//!   agree message for message.
//!
//! Timing rule: tests wait for events with [`PATIENCE`] (generous, for a loaded 2-core
//! machine); sleeps ([`GRACE`]) only give a wrong implementation the chance to misbehave.
//!
//! Why a recorder and a timer of their own, not the harness's (`harness/src/measure/`): the
//! dependency goes one way, harness -> strategies, and the conformance suite must run with
//! nothing but the contract of `strategies/src/lib.rs`, so that a strategy passes or fails
//! on what it promises, not on the benchmark machinery, and can be tested without it. The
//! two recorders also check order differently. The harness's recorder is built to measure:
//! lock-free slots sized in advance from a generated workload, one counter per fault kind,
//! and each fault counted once as its own kind: an order violation is a first start below
//! the highest `seq` its key has already started, so a lost message counts only as lost, a
//! repeat only as a duplicate, and swapping messages `i < j` of a key counts `j - i`
//! violations. This one is built to diagnose: a locked log of every run (thread, start and
//! end instants, position among all starts) for any key and `seq`, checked more strictly:
//! every start must carry exactly the `seq` after the previous start of its key (0 first),
//! so a skipped `seq` or a repeat is an order violation the moment it starts, besides the
//! loss or duplicate the report finds, and a swap is counted once per break in the key's
//! sequence of starts (two to four), each with a message naming the key and both `seq`s.
//! Overlaps are counted from the key's started and unended runs (the harness keeps one
//! running flag per key, which the first of two overlapping ends clears), and
//! [`Recorder::report`] also finds messages that ran after being handed back or were never
//! submitted.
//!
//! Layout: `classes.rs` (which strategies a test applies to), `messages.rs` (keys, message
//! streams and the jobs the handler understands), `recorder.rs`, `gates.rs` and `timer.rs`
//! (what pending steps wait on), `handler.rs`, `fixture.rs`, `ledger.rs`, and
//! `concurrent.rs` (running checks on helper threads). Everything public is re-exported
//! here, so a test needs only `use common::*`.

#![allow(dead_code)] // each test binary uses a different part of the support module

mod classes;
mod concurrent;
mod fixture;
mod gates;
mod handler;
mod ledger;
mod messages;
mod recorder;
mod timer;

use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

// Each test binary uses a different part of the support module.
#[allow(unused_imports)]
pub use self::{
    classes::*, concurrent::*, fixture::*, gates::*, handler::*, ledger::*, messages::*,
    recorder::*,
};

/// How long a test waits for something that must happen.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// How long a test gives a wrong implementation to do something it must not do.
pub const GRACE: Duration = Duration::from_millis(300);

/// Groups per worker large enough that the handful of keys a window test uses land in
/// distinct hash-serial groups (`group-by`, `per-type-pool`): those tests are about the
/// window, not about head-of-line blocking inside a group. The hash is fixed, so this is
/// deterministic.
pub const DISTINCT_GROUPS: usize = 1 << 16;

/// Locks `mutex`, ignoring poisoning (a failed test may have panicked while holding it).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
