//! Messages: keys, random jobs (the per-key sequence numbers come from the test kit's
//! `Sequencer`), and the `Job::Custom` codes that
//! [`TestHandler`](super::TestHandler) interprets (gates, planned panics, endless yields,
//! chains that submit their next message into the strategy).

use strategies::testkit::Rng;
#[allow(unused_imports)]
pub use strategies::testkit::Sequencer;
use strategies::{Job, Key, Message};

/// Aggregate `id` of type 0.
pub fn key(id: u64) -> Key {
    Key::new(0, id)
}

/// A random job: `Wait` with probability `waits` (up to `max_wait_us`, sometimes zero, so
/// a step is ready at its first poll), otherwise `Noop` or `Spin` up to `max_spin_us`.
pub fn random_job(rng: &mut Rng, waits: f64, max_spin_us: u32, max_wait_us: u32) -> Job {
    let micros = |rng: &mut Rng, low: u32, high: u32| {
        rng.between(u64::from(low), u64::from(high)) as u32 * 1_000
    };
    if rng.chance(waits) {
        let ns = if rng.chance(0.1) { 0 } else { micros(rng, 1, max_wait_us) };
        Job::Wait { ns }
    } else if rng.chance(0.3) {
        Job::Noop
    } else {
        Job::Spin { ns: micros(rng, 0, max_spin_us) }
    }
}

pub(super) const BLOCK_ON_GATE: u32 = 1 << 28;
pub(super) const PEND_ON_GATE: u32 = 2 << 28;
pub(super) const PANIC_WHEN_POLLED: u32 = 3 << 28;
pub(super) const PANIC_ON_FIRST_POLL: u32 = 4 << 28;
pub(super) const YIELD_FOREVER: u32 = 5 << 28;
pub(super) const CHAIN: u32 = 6 << 28;
pub(super) const KIND_MASK: u32 = 0xf << 28;

/// A chain code's fields: the length in bits 0-15, the gate in bits 16-26 (0: none), and
/// bit 27 set when the next message is submitted from the pending step's poll.
const CHAIN_LENGTH_MASK: u32 = 0xffff;
const CHAIN_GATE_SHIFT: u32 = 16;
const CHAIN_GATE_MASK: u32 = 0x7ff;
const CHAIN_FROM_STEP: u32 = 1 << 27;

/// What a chain job's handler does (see [`chain`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ChainLink {
    /// Messages in the whole chain: the message with `seq + 1 == length` submits nothing.
    pub(super) length: u64,
    /// After submitting, return pending until this gate opens (0: do not): the message
    /// keeps its credit, and its worker is free.
    pub(super) gate: u32,
    /// Submit from the pending step's poll (after a short wait) instead of the call.
    pub(super) from_step: bool,
}

/// A job whose handler submits its chain's next message (the same key, `seq + 1`, the same
/// job) into the strategy it runs in, from inside the handler call, until the chain holds
/// `length` messages (`seq` 0 to `length - 1`): a saga sending a command. The submission's
/// outcome is recorded like any other (accepted, or handed back after a close).
pub fn chain(length: u32) -> Job {
    assert!((1..=CHAIN_LENGTH_MASK).contains(&length), "chain length {length}");
    Job::Custom(CHAIN | length)
}

/// [`chain`], submitting the next message from the handler's pending step instead: the
/// handler returns pending, and the step's poll (after a short wait) submits.
pub fn chain_from_step(length: u32) -> Job {
    let Job::Custom(code) = chain(length) else { unreachable!() };
    Job::Custom(code | CHAIN_FROM_STEP)
}

/// [`chain`], whose handler returns pending on gate `gate` (1 to 2047) after it submitted
/// the next message, so that the message keeps its credit until the gate opens while its
/// worker goes on.
pub fn chain_then_pend(length: u32, gate: u32) -> Job {
    assert!((1..=CHAIN_GATE_MASK).contains(&gate), "chain gate {gate}");
    let Job::Custom(code) = chain(length) else { unreachable!() };
    Job::Custom(code | gate << CHAIN_GATE_SHIFT)
}

/// The first message (`seq` 0) of the chain of `key` with chain job `job`.
pub fn chain_head(key: Key, job: Job) -> Message {
    Message { key, seq: 0, intended_ns: 0, job }
}

/// The fields of a chain job's code.
pub(super) fn chain_link(code: u32) -> ChainLink {
    ChainLink {
        length: u64::from(code & CHAIN_LENGTH_MASK),
        gate: (code >> CHAIN_GATE_SHIFT) & CHAIN_GATE_MASK,
        from_step: code & CHAIN_FROM_STEP != 0,
    }
}

/// A job that blocks its worker thread until gate `gate` opens, then ends.
pub fn block_on_gate(gate: u32) -> Job {
    Job::Custom(BLOCK_ON_GATE | gate)
}

/// A job that returns pending and completes when gate `gate` opens.
pub fn pend_on_gate(gate: u32) -> Job {
    Job::Custom(PEND_ON_GATE | gate)
}

/// A job that returns pending and panics when its step is polled after a short wait.
pub fn panic_when_polled() -> Job {
    Job::Custom(PANIC_WHEN_POLLED)
}

/// A job that returns pending and panics the first time its step is polled (before any
/// wake, so inside the strategy's first poll rather than a resumed one).
pub fn panic_on_first_poll() -> Job {
    Job::Custom(PANIC_ON_FIRST_POLL)
}

/// A job that returns pending and never completes, waking itself at every poll: a
/// cooperative loop that yields for ever (`tokio::task::yield_now` in a loop).
pub fn yield_forever() -> Job {
    Job::Custom(YIELD_FOREVER)
}

/// Whether `job` makes the test handler panic (at the call or in its pending step).
pub fn panics(job: Job) -> bool {
    match job {
        Job::Panic => true,
        Job::Custom(code) => matches!(code & KIND_MASK, PANIC_WHEN_POLLED | PANIC_ON_FIRST_POLL),
        _ => false,
    }
}
