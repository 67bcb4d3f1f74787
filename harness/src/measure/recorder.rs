//! The recorder: what every handler call reports, and the online correctness checks.
//!
//! One slot per generated message, found in O(1) from (aggregate id, seq) because ids are
//! dense and sequence numbers count up per key. A call records its start and its end
//! (after the last pending step). At start it checks, per key:
//! - **overlap**: another message of the key has started and not ended;
//! - **order violation**: a later message of the key (a higher sequence number) has
//!   already started;
//! - **duplicate**: this message has started before (a repeat is counted only as a
//!   duplicate, never as an order violation as well).
//!
//! After the run, messages that never started are **lost**.
//!
//! Each fault is counted as its own kind and nothing else: a lost message does not make
//! the messages after it "out of order", and a repeated one does not shift its successors.
//! (Comparing each start with a running count of starts, the earlier check, reported every
//! later message of a key as an order violation after one loss or one duplicate.) Swapping
//! messages `i < j` of one key counts `j - i` order violations: each of `i + 1 ..= j - 1`
//! and `i` itself starts after `j`.
//!
//! The recorder's own cost per message is measured and reported by the suite.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Instant;

use strategies::Message;

use crate::results::Correctness;

/// Nanoseconds since the start of a run; the time base of intended, start and end times.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    origin: Instant,
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Self {
        Self { origin: Instant::now() }
    }

    /// Nanoseconds since the clock started.
    pub fn now_ns(&self) -> u64 {
        self.origin.elapsed().as_nanos() as u64
    }

    /// The instant `ns` after the clock started.
    pub fn instant_at(&self, ns: u64) -> Instant {
        self.origin + std::time::Duration::from_nanos(ns)
    }
}

/// Bytes the recorder keeps per message of a workload: its slot of times and starts.
pub const BYTES_PER_MESSAGE: usize = std::mem::size_of::<Slot>();

/// Bytes the recorder keeps per key of a workload: its online order and overlap checks.
pub const BYTES_PER_KEY: usize = std::mem::size_of::<KeyState>();

/// What happened to one message.
#[derive(Debug, Default)]
struct Slot {
    intended_ns: AtomicU64,
    start_ns: AtomicU64,
    /// 0 until the message ended (times are offset by one so 0 means "not yet").
    end_ns: AtomicU64,
    starts: AtomicU32,
}

/// Per-key state of the online checks.
#[derive(Debug, Default)]
struct KeyState {
    /// One more than the highest sequence number started so far (0: none yet); a first
    /// start below it is out of order.
    highest_started: AtomicU64,
    /// Whether a message of the key is running (started and not ended).
    running: AtomicBool,
}

/// The times of one finished message, for metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timing {
    /// When it was meant to arrive.
    pub intended_ns: u64,
    /// When its handler started.
    pub start_ns: u64,
    /// When its last step completed.
    pub end_ns: u64,
}

/// Records every message of one workload; reset between runs.
#[derive(Debug)]
pub struct Recorder {
    clock: Clock,
    /// `offsets[id]` is the slot of message (id, 0); `offsets[keys]` the total.
    offsets: Vec<usize>,
    slots: Vec<Slot>,
    keys: Vec<KeyState>,
    order_violations: AtomicU64,
    overlaps: AtomicU64,
    duplicates: AtomicU64,
    /// Messages outside the workload (an unknown key or sequence number).
    strays: AtomicU64,
    /// Per key: whether it is a background key, whose messages are made while the run goes
    /// (not in the workload): only their order and overlaps are checked.
    background: Vec<bool>,
}

impl Recorder {
    /// A recorder for `messages` over keys `0..keys`, timing with `clock`.
    pub fn new(messages: &[Message], keys: usize, clock: Clock) -> Self {
        let mut counts = vec![0usize; keys];
        for message in messages {
            counts[message.key.aggregate_id as usize] += 1;
        }
        let mut offsets = Vec::with_capacity(keys + 1);
        let mut total = 0;
        for count in counts {
            offsets.push(total);
            total += count;
        }
        offsets.push(total);
        Self {
            clock,
            offsets,
            slots: (0..total).map(|_| Slot::default()).collect(),
            keys: (0..keys).map(|_| KeyState::default()).collect(),
            order_violations: AtomicU64::new(0),
            overlaps: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            strays: AtomicU64::new(0),
            background: Vec::new(),
        }
    }

    /// Makes `keys` background keys: their messages are not in the workload (the runner
    /// makes them as the run goes), so a start of one is not a stray; their order (each
    /// start after the key's highest sequence number so far) and overlaps are checked, not
    /// losses or repeats.
    pub fn with_background(mut self, keys: &[u64]) -> Self {
        self.background = vec![false; self.keys.len()];
        for &key in keys {
            if let Some(flag) = self.background.get_mut(key as usize) {
                *flag = true;
            }
        }
        self
    }

    fn is_background(&self, message: &Message) -> bool {
        usize::try_from(message.key.aggregate_id)
            .ok()
            .and_then(|id| self.background.get(id))
            .is_some_and(|&background| background)
    }

    /// The clock all times are measured with.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Forgets everything recorded; call only while no message is in flight. The clock
    /// keeps its origin: runs differ by their start time, not by their time base.
    pub fn reset(&self) {
        for slot in &self.slots {
            slot.intended_ns.store(0, Ordering::Relaxed);
            slot.start_ns.store(0, Ordering::Relaxed);
            slot.end_ns.store(0, Ordering::Relaxed);
            slot.starts.store(0, Ordering::Relaxed);
        }
        for key in &self.keys {
            key.highest_started.store(0, Ordering::Relaxed);
            key.running.store(false, Ordering::Relaxed);
        }
        for counter in [&self.order_violations, &self.overlaps, &self.duplicates, &self.strays] {
            counter.store(0, Ordering::Relaxed);
        }
    }

    fn slot_index(&self, message: &Message) -> Option<usize> {
        let id = usize::try_from(message.key.aggregate_id).ok()?;
        let (first, end) = (*self.offsets.get(id)?, *self.offsets.get(id + 1)?);
        let index = first.checked_add(usize::try_from(message.seq).ok()?)?;
        (index < end).then_some(index)
    }

    /// The start of a message that has no slot: a background key's has its order and
    /// overlaps checked (nothing is timed), any other is a stray.
    #[inline]
    fn start_unrecorded(&self, message: &Message) {
        if self.is_background(message) {
            let key = &self.keys[message.key.aggregate_id as usize];
            // AcqRel: as for a recorded message in `start`.
            if key.running.swap(true, Ordering::AcqRel) {
                self.overlaps.fetch_add(1, Ordering::Relaxed);
            }
            let next = message.seq.saturating_add(1);
            if key.highest_started.fetch_max(next, Ordering::Relaxed) >= next {
                self.order_violations.fetch_add(1, Ordering::Relaxed);
            }
        } else {
            self.strays.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Records the start of `message` and runs the checks. Returns the token to end it.
    pub fn start(&self, message: &Message) -> Option<usize> {
        self.start_at(message, self.clock.now_ns())
    }

    /// [`Recorder::start`] at `now` on the recorder's time base: a start that happened
    /// elsewhere (an external design's record), replayed in time order. Always inlined:
    /// `start` is this with the clock's reading, at no cost of its own (instruction counts).
    #[inline(always)]
    pub fn start_at(&self, message: &Message, now: u64) -> Option<usize> {
        let Some(index) = self.slot_index(message) else {
            self.start_unrecorded(message);
            return None;
        };
        let slot = &self.slots[index];
        let repeat = slot.starts.fetch_add(1, Ordering::Relaxed) > 0;
        if repeat {
            self.duplicates.fetch_add(1, Ordering::Relaxed);
        }
        let key = &self.keys[message.key.aggregate_id as usize];
        // AcqRel: the Acquire half pairs with the Release store in `end`, so this start sees
        // the previous message of the key as ended; the Release half pairs with the next
        // start's swap.
        if key.running.swap(true, Ordering::AcqRel) {
            self.overlaps.fetch_add(1, Ordering::Relaxed);
        }
        // `seq + 1` cannot overflow: `slot_index` found the message, so `seq` is below the
        // key's message count.
        let highest = key.highest_started.fetch_max(message.seq + 1, Ordering::Relaxed);
        if !repeat && highest > message.seq + 1 {
            self.order_violations.fetch_add(1, Ordering::Relaxed);
        }
        slot.intended_ns.store(message.intended_ns, Ordering::Relaxed);
        slot.start_ns.store(now, Ordering::Relaxed);
        Some(index)
    }

    /// Records the end of the message `start` returned `token` for.
    pub fn end(&self, token: Option<usize>, message: &Message) {
        self.end_at(token, message, self.clock.now_ns());
    }

    /// [`Recorder::end`] at `now` on the recorder's time base (see [`Recorder::start_at`]).
    #[inline(always)]
    pub fn end_at(&self, token: Option<usize>, message: &Message, now: u64) {
        if let Some(index) = token {
            self.slots[index].end_ns.store(now + 1, Ordering::Relaxed);
            // Release: pairs with the AcqRel swap in `start` of the key's next message.
            self.keys[message.key.aggregate_id as usize].running.store(false, Ordering::Release);
        } else if self.is_background(message) {
            // Release: pairs with the AcqRel swap in `start` of the key's next message.
            self.keys[message.key.aggregate_id as usize].running.store(false, Ordering::Release);
        }
    }

    /// The correctness counts so far; `failed` comes from the strategy.
    pub fn correctness(&self, failed: u64) -> Correctness {
        let lost =
            self.slots.iter().filter(|slot| slot.starts.load(Ordering::Relaxed) == 0).count();
        Correctness {
            order_violations: self.order_violations.load(Ordering::Relaxed),
            overlaps: self.overlaps.load(Ordering::Relaxed),
            lost: lost as u64,
            duplicates: self.duplicates.load(Ordering::Relaxed)
                + self.strays.load(Ordering::Relaxed),
            failed,
        }
    }

    /// The correctness counts of a run that submitted only the first `sent[id]` messages of
    /// each key (a completion-driven run stops when its time is up): a message never sent
    /// is not lost.
    pub fn correctness_of_sent(&self, failed: u64, sent: &[u64]) -> Correctness {
        let mut lost = 0u64;
        for (id, window) in self.offsets.windows(2).enumerate() {
            let sent = sent.get(id).copied().unwrap_or(0) as usize;
            let end = window[1].min(window[0] + sent);
            lost += self.slots[window[0]..end]
                .iter()
                .filter(|slot| slot.starts.load(Ordering::Relaxed) == 0)
                .count() as u64;
        }
        Correctness { lost, ..self.correctness(failed) }
    }

    /// Visits every key's finished messages in sequence order: `(key id, timings)`.
    pub fn for_each_key(&self, mut visit: impl FnMut(usize, &mut dyn Iterator<Item = Timing>)) {
        for id in 0..self.keys.len() {
            let slots = &self.slots[self.offsets[id]..self.offsets[id + 1]];
            let mut timings = slots.iter().filter_map(|slot| {
                let end = slot.end_ns.load(Ordering::Relaxed);
                (end != 0).then(|| Timing {
                    intended_ns: slot.intended_ns.load(Ordering::Relaxed),
                    start_ns: slot.start_ns.load(Ordering::Relaxed),
                    end_ns: end - 1,
                })
            });
            visit(id, &mut timings);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strategies::{Job, Key};

    fn message(id: u64, seq: u64) -> Message {
        Message { key: Key::new(0, id), seq, intended_ns: 0, job: Job::Noop }
    }

    fn recorder() -> Recorder {
        let messages: Vec<_> = (0..3).flat_map(|seq| [message(0, seq), message(1, seq)]).collect();
        Recorder::new(&messages, 2, Clock::start())
    }

    #[test]
    fn a_clean_run_is_clean() {
        let recorder = recorder();
        for seq in 0..3 {
            for id in 0..2 {
                let token = recorder.start(&message(id, seq));
                recorder.end(token, &message(id, seq));
            }
        }
        assert!(recorder.correctness(0).is_clean());
    }

    #[test]
    fn catches_reordering_overlap_duplicates_and_loss() {
        let recorder = recorder();
        let first = recorder.start(&message(0, 1)); // out of order
        let second = recorder.start(&message(0, 0)); // overlaps the first
        recorder.end(first, &message(0, 1));
        recorder.end(second, &message(0, 0));
        let again = recorder.start(&message(0, 0)); // duplicate
        recorder.end(again, &message(0, 0));
        let stray = recorder.start(&message(7, 0));
        assert!(stray.is_none());
        let counts = recorder.correctness(2);
        assert_eq!(counts.overlaps, 1);
        assert_eq!(counts.order_violations, 1, "(0,0) started after (0,1)");
        assert_eq!(counts.duplicates, 2, "one repeat and one stray");
        assert_eq!(counts.lost, 4, "(0,2) and all of key 1");
        assert_eq!(counts.failed, 2);
    }

    #[test]
    fn a_loss_or_a_repeat_is_counted_once_not_as_reordering_of_what_follows() {
        let recorder = recorder();
        let run = |id, seq| {
            let token = recorder.start(&message(id, seq));
            recorder.end(token, &message(id, seq));
        };
        run(0, 0);
        run(0, 2); // (0,1) is lost
        run(1, 0);
        run(1, 0); // repeated
        run(1, 1);
        run(1, 2);
        let counts = recorder.correctness(0);
        assert_eq!(
            counts,
            Correctness { lost: 1, duplicates: 1, ..Correctness::default() },
            "{counts:?}"
        );
    }

    #[test]
    fn reset_forgets() {
        let recorder = recorder();
        let token = recorder.start(&message(0, 2));
        recorder.end(token, &message(0, 2));
        recorder.reset();
        assert_eq!(recorder.correctness(0).order_violations, 0);
        assert_eq!(recorder.correctness(0).lost, 6);
    }

    #[test]
    fn a_background_key_is_checked_for_order_and_overlap_only() {
        // Key 0 has two recorded messages; key 1 is background (not in the workload).
        let recorder =
            Recorder::new(&[message(0, 0), message(0, 1)], 2, Clock::start()).with_background(&[1]);
        for seq in 0..3 {
            let token = recorder.start(&message(1, seq));
            recorder.end(token, &message(1, seq));
        }
        assert!(recorder.correctness_of_sent(0, &[0, 0]).is_clean());
        // A background message that goes back in sequence is out of order.
        let token = recorder.start(&message(1, 1));
        recorder.end(token, &message(1, 1));
        assert_eq!(recorder.correctness_of_sent(0, &[0, 0]).order_violations, 1);
        // Two at once overlap.
        let first = recorder.start(&message(1, 10));
        let second = recorder.start(&message(1, 11));
        recorder.end(first, &message(1, 10));
        recorder.end(second, &message(1, 11));
        assert_eq!(recorder.correctness_of_sent(0, &[0, 0]).overlaps, 1);
        // A key that is not background is still a stray.
        let recorder = Recorder::new(&[message(0, 0)], 2, Clock::start());
        let token = recorder.start(&message(1, 0));
        recorder.end(token, &message(1, 0));
        assert_eq!(recorder.correctness(0).duplicates, 1);
    }

    #[test]
    fn only_sent_messages_can_be_lost() {
        let messages = [message(0, 0), message(0, 1), message(0, 2), message(1, 0)];
        let recorder = Recorder::new(&messages, 2, Clock::start());
        let token = recorder.start(&messages[0]);
        recorder.end(token, &messages[0]);
        // Key 0 sent two (one ran), key 1 sent none: one lost.
        assert_eq!(recorder.correctness_of_sent(0, &[2, 0]).lost, 1);
        assert_eq!(recorder.correctness_of_sent(0, &[1, 0]).lost, 0);
        assert_eq!(recorder.correctness(0).lost, 3);
    }
}
