//! What checking an executor takes, shared by [`conformance::check`](crate::conformance) and
//! the crate's own tests: a deadline, an order log, a seeded generator, per-key sequences
//! and a timer.
//!
//! - [`run_within`] (and [`within`], which panics): runs work on a thread of its own and
//!   waits for it at most a deadline, so that an executor that deadlocks fails a check
//!   instead of hanging it. The thread is left behind when the deadline passes.
//! - [`OrderLog`]: every handler call's start and end, with its thread and instants,
//!   checked for per-key order as it happens, and a [`Report`] of what ran against what
//!   was accepted and handed back (lost, unfinished, duplicated, unexpected).
//! - [`Rng`]: a small seeded generator (SplitMix64), so that a check's workload is the
//!   same on every run and needs no dependency.
//! - [`Sequencer`]: per-key sequence numbers for the messages a check makes, shuffled
//!   with an [`Rng`] where asked.
//! - [`Timer`]: a thread that completes pending steps' sleeps ([`Timer::sleep`]) from
//!   outside the executor under test.
//!
//! # What the order log counts
//!
//! - An *out-of-order* start: the first start of a message whose `seq` is below the
//!   highest `seq` its key has started. A lost message counts only as lost, a repeat only
//!   as a duplicate, and swapping messages `i < j` of a key counts `j - i`.
//! - An *overlap*: a message that starts while another message of its key has started and
//!   not ended.
//! - A *stray end*: an end with no started, unended run of its message (a double
//!   completion, or a bug in the handler that records).
//!
//! For a key whose messages carry `seq` 0, 1, 2, ... in submission order, a report with
//! no fault of any kind means each of them ran once, one at a time, in that order.
//!
//! Layout: `deadline.rs`, `order.rs`, `workload.rs` (the generator and the sequences) and
//! `timer.rs`; everything public is re-exported here.

mod deadline;
mod order;
mod timer;
mod workload;

pub use self::deadline::{panic_text, run_within, within, Missed};
pub use self::order::{lock, name, Log, OrderLog, Report, Run};
pub use self::timer::{Sleep, Timer};
pub use self::workload::{Rng, Sequencer};
