//! Test support for the conformance suite, on top of the crate's test kit
//! (`strategies::testkit`: the order log, the deadline, the seeded generator and the timer
//! it shares with `strategies::conformance::check`).
//!
//! - [`TestHandler`]: interprets [`Job`]s: `Spin` busy-loops, `Wait` returns a pending step
//!   completed by the test kit's timer, `Retry` waits a doubling backoff between attempts,
//!   `Panic` panics; `Custom` codes built by [`block_on_gate`], [`pend_on_gate`],
//!   [`panic_when_polled`], [`panic_on_first_poll`] and [`yield_forever`] block the worker
//!   on a [`Gates`] gate, wait (pending) for a gate, panic while the step is polled (after
//!   a wake, or at once), or never complete while waking themselves at every poll; the
//!   chain codes ([`chain`], [`chain_from_step`], [`chain_then_pend`]) submit the chain's
//!   next message into the strategy under test from inside it, as a saga sends a command.
//!   Every start and end goes to an [`OrderLog`]: a pending message *ends* when its step
//!   completes; a panicking one ends as it panics and counts as a handler failure.
//! - [`Fixture`]: one strategy built with a [`TestHandler`], the messages it accepted and
//!   rejected (the handler's own submissions too, through [`Submissions`]), and watchdogs
//!   so that a broken strategy fails a test instead of hanging it.
//! - [`Ledger`]: where every submitted message went (completed, failed, discarded,
//!   abandoned, handed back), from the order log and the strategy's counters, which must
//!   agree message for message.
//!
//! Timing rule: tests wait for events with [`PATIENCE`] (generous, for a loaded 2-core
//! machine); sleeps ([`GRACE`]) only give a wrong implementation the chance to misbehave.
//!
//! Why not the harness's recorder (`harness/src/measure/`): the dependency goes one way,
//! harness -> strategies, and the suite must run with nothing but the contract of
//! `strategies/src/lib.rs`, so that a strategy passes or fails on what it promises, not on
//! the benchmark machinery.
//!
//! Layout: `classes.rs` (which strategies a test applies to), `messages.rs` (keys, message
//! streams and the jobs the handler understands), `gates.rs` (what pending steps wait on
//! besides the timer), `handler.rs`, `fixture.rs`, `ledger.rs`, and `concurrent.rs` (one
//! check for every strategy at once). Everything public is re-exported here, with the test kit,
//! so a test needs only `use common::*`.

#![allow(dead_code)] // each test binary uses a different part of the support module

mod classes;
mod concurrent;
mod fixture;
mod gates;
mod handler;
mod ledger;
mod messages;

use std::time::Duration;

// Each test binary uses a different part of the support module.
#[allow(unused_imports)]
pub use self::{
    classes::*, concurrent::*, fixture::*, gates::*, handler::*, ledger::*, messages::*,
};
#[allow(unused_imports)]
pub use strategies::testkit::{lock, within, Log, OrderLog, Report, Rng, Run};

/// How long a test waits for something that must happen.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// How long a test gives a wrong implementation to do something it must not do.
pub const GRACE: Duration = Duration::from_millis(300);

/// Groups per worker large enough that the handful of keys a window test uses land in
/// distinct hash-serial groups (`group-by`, `per-type-pool`): those tests are about the
/// window, not about head-of-line blocking inside a group. The hash is fixed, so this is
/// deterministic.
pub const DISTINCT_GROUPS: usize = 1 << 16;
