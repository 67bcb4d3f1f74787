//! The admission window shared by every strategy: at most `max_in_flight` unfinished
//! messages, refilled in batches, and the *admission queue* that lets a handler submit into
//! its own strategy without blocking.
//!
//! # Protocol
//!
//! The window models a receiver that requests messages from its transport in batches:
//!
//! 1. It starts with `max_in_flight` *credits*. Admitting a message takes one credit and
//!    adds one to *in flight*; with no credit left, an outside `admit` blocks.
//! 2. Finishing a message removes it from *in flight* and adds it to a *pending refill*
//!    count. When that count reaches `batch = max(1, max_in_flight / 16)`, it is reset and
//!    `batch` credits are granted at once (one request to the transport).
//! 3. Credits are therefore granted only in whole batches. If one key holds `h` unfinished
//!    messages, the other keys can finish at most `max_in_flight - h`; with
//!    `h >= max_in_flight - batch + 1` (241 of 256) that is fewer than a batch, so no refill
//!    happens and every other key waits: the shared-window stall of docs/design.md section 3.
//!
//! # The admission queue
//!
//! A full window must never block one of the strategy's own threads: a handler that submits
//! into its own strategy (a saga sending a command) would wait for a credit that only a
//! finishing message returns, possibly one that this very thread would run. The executor
//! core recognises such a *re-entrant* submission (`executor.rs`) and calls
//! [`Window::admit_or_queue`] instead of [`Window::admit`]:
//!
//! 4. **Queue.** Under the queue's lock, one compare-and-swap either takes a free credit
//!    (when one is free and nothing is queued: admitted as any other message) or sets the
//!    *queued* flag of the state word; in the second case the message is appended to the
//!    admission queue and `submit` returns `Ok` at once. A queued message is accepted but
//!    holds no credit and is not in flight. The same compare-and-swap sees the closed flag:
//!    after a close a re-entrant submission is refused, like any other.
//! 5. **Credits belong to the queue while the flag is set.** An outside admission (and a
//!    re-entrant one, which would otherwise overtake the queue) treats the window as full,
//!    so blocked outside submitters get credits only once the queue is empty: the queued
//!    messages were accepted first.
//! 6. **Serve.** A `finish` whose compare-and-swap grants credits while the flag is set
//!    tells its caller to serve the queue ([`Window::admit_queued`]): under the queue's
//!    lock, in FIFO order, each message takes one credit (credits - 1, in flight + 1, one
//!    compare-and-swap) and is handed to the engine, still under the lock. Serving stops
//!    when no credit is left (the flag stays set; the next grant sees it and serves again)
//!    or when the queue is empty: then, still under the lock, the flag is cleared and the
//!    waiters are woken, and the remaining credits are the window's again.
//! 7. **Close.** A graceful close leaves the queue alone: queued messages are admitted as
//!    credits come back, and [`Window::wait_empty`] waits until nothing is in flight *and*
//!    the flag is clear, so `drain` and `close` wait for queued messages too. A forced close
//!    empties the queue ([`Window::discard_queued`]; the executor counts the messages as
//!    discarded) and clears the flag; since the window is closed, nothing is queued again.
//!
//! Why no credit is lost or doubled. Credits, in flight and the flag change only by
//! compare-and-swap on the one word, so each credit is taken by exactly one admission, and a
//! queued message is popped in the step that took its credit, so it is admitted once. The
//! flag is set only under the queue's lock, by a compare-and-swap that found no credit it
//! could take, and cleared only under that lock with the queue empty: the flag is set
//! exactly while the queue holds messages (as seen under the lock). Credits appear while the
//! flag is set only through a grant that saw the flag, and that finisher serves the queue
//! after it, waiting for the lock if another thread holds it: every message queued before
//! the grant is then in the queue. A grant that saw the flag clear gave its credits to the
//! window, where the next submission takes them (step 4) instead of queueing. So no queued
//! message waits while a credit is free, and only the server takes credits while the flag
//! is set.
//!
//! Why per-key order holds. The queue is FIFO and served under its lock, so queued messages
//! reach the engine in the order they were accepted. The flag is cleared only after the
//! last queued message was handed to the engine, so a submission that takes a free credit
//! (step 5 keeps it from doing so earlier) reaches the engine after every message queued
//! before it. A queued message admitted after an earlier message of its key reaches the
//! engine later, so it lines up behind it in the key's mailbox or group as usual.
//!
//! # Implementation
//!
//! Everything lives in one `AtomicU64` so that admission and completion are each one
//! compare-and-swap: bit 63 is the *closed* flag, bit 62 the *queued* flag, then credits
//! (21 bits), pending refill (20 bits: it stays below a batch, at most 2^17) and in flight
//! (21 bits). Waiters (blocked submitters, `wait_empty`) sleep on a condvar; a completion
//! that grants credits or empties the window, and a server that clears the queued flag,
//! notify them only when the sleeper count says someone may be asleep. No wake-up is lost:
//! a sleeper increments the count, issues a `SeqCst` fence, then reads the state; a notifier
//! changes the state, issues a `SeqCst` fence, then reads the count. Whichever fence comes
//! second sees the other side's write (the pairing of `parking.rs`, in the form loom checks
//! exactly: it models `SeqCst` fences, but `SeqCst` accesses only as acquire/release).
//!
//! The state's writers pair with its readers: the compare-and-swaps in `finish` (a credit
//! granted, a message out of flight) and in `take_queued_credit`, the `fetch_and` that
//! clears the queued flag and the `fetch_or` in `close` with the load and the
//! compare-and-swap in `try_admit` and `admit_or_queue`, the load in `is_empty` (so a
//! `drain` that sees the window empty sees everything the finished messages did) and the
//! sleeper's read in `sleep_until`. The sleeper count's increment and decrement pair with
//! its load in `notify`. The queue's contents are guarded by its lock; the peak and total
//! counters are statistics, written under that lock and read with `Relaxed`, as is the
//! time submitters spent blocked (a plain `std` atomic even under loom: no model reads it).

use std::collections::VecDeque;
use std::sync::atomic::AtomicU64 as StatU64;
use std::time::Instant;

use crate::sync::{fence, lock, AtomicU64, AtomicUsize, Condvar, Mutex, Ordering};
use crate::Message;

/// The largest window the packed state can represent.
pub const MAX_WINDOW: usize = (1 << FIELD_BITS) - 1;

/// Bits of the credits and in-flight fields.
const FIELD_BITS: u32 = 21;
/// Bits of the pending-refill field, which stays below a batch (at most `MAX_WINDOW / 16`).
const REFILL_BITS: u32 = 20;
const FIELD_MASK: u64 = (1 << FIELD_BITS) - 1;
const REFILL_MASK: u64 = (1 << REFILL_BITS) - 1;
const IN_FLIGHT_SHIFT: u32 = 0;
const REFILL_SHIFT: u32 = FIELD_BITS;
const CREDITS_SHIFT: u32 = FIELD_BITS + REFILL_BITS;
const QUEUED: u64 = 1 << 62;
const CLOSED: u64 = 1 << 63;

// The fields fit below the two flags, and a pending refill (below a batch) fits its field.
const _: () = assert!(CREDITS_SHIFT + FIELD_BITS == 62);
const _: () = assert!((MAX_WINDOW as u64 / 16) <= REFILL_MASK);

/// One decoded view of the packed window state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct State {
    closed: bool,
    /// The admission queue holds messages: credits are reserved for them.
    queued: bool,
    credits: u64,
    refill: u64,
    in_flight: u64,
}

impl State {
    fn unpack(word: u64) -> Self {
        Self {
            closed: word & CLOSED != 0,
            queued: word & QUEUED != 0,
            credits: (word >> CREDITS_SHIFT) & FIELD_MASK,
            refill: (word >> REFILL_SHIFT) & REFILL_MASK,
            in_flight: (word >> IN_FLIGHT_SHIFT) & FIELD_MASK,
        }
    }

    fn pack(self) -> u64 {
        debug_assert!(self.credits <= FIELD_MASK && self.in_flight <= FIELD_MASK);
        debug_assert!(self.refill <= REFILL_MASK);
        (if self.closed { CLOSED } else { 0 })
            | (if self.queued { QUEUED } else { 0 })
            | (self.credits << CREDITS_SHIFT)
            | (self.refill << REFILL_SHIFT)
            | (self.in_flight << IN_FLIGHT_SHIFT)
    }

    /// Whether a submission may take a credit now: one is free and none is reserved for
    /// the admission queue (step 5).
    fn admissible(self) -> bool {
        self.credits > 0 && !self.queued
    }
}

/// Why an admission was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WindowClosed;

/// How a re-entrant submission was accepted ([`Window::admit_or_queue`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// It took a credit: the caller hands it to the engine.
    Admitted,
    /// It waits in the admission queue; a finishing message's credit admits it later.
    Queued,
}

/// The shared bounded in-flight window and its admission queue (see the module docs).
#[derive(Debug)]
pub(crate) struct Window {
    state: AtomicU64,
    /// Credits granted per refill: `max(1, max_in_flight / 16)`.
    batch: u64,
    /// The most messages ever in flight at once, for the `peak_in_flight` metric.
    peak: AtomicUsize,
    /// Threads blocked in `admit` or `wait_empty`; read by completions to decide whether
    /// a notification is needed.
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    changed: Condvar,
    /// Re-entrant submissions accepted while no credit was free, oldest first. Its lock
    /// also orders their hand-over to the engine and every change of the queued flag
    /// (module docs, steps 4 to 7).
    queue: Mutex<VecDeque<Message>>,
    /// The most messages the admission queue held at once (`Stats::peak_admission_queue`).
    peak_queued: AtomicUsize,
    /// Messages ever accepted into the admission queue (`Stats::admission_queued`).
    queued_total: AtomicU64,
    /// Nanoseconds outside submitters spent blocked in `admit_timed`, summed over them.
    blocked_ns: StatU64,
}

impl Window {
    /// A window of `max_in_flight` messages; the caller has validated `1..=MAX_WINDOW`.
    pub(crate) fn new(max_in_flight: usize) -> Self {
        assert!((1..=MAX_WINDOW).contains(&max_in_flight), "window size out of range");
        let initial = State {
            closed: false,
            queued: false,
            credits: max_in_flight as u64,
            refill: 0,
            in_flight: 0,
        };
        Self {
            state: AtomicU64::new(initial.pack()),
            batch: (max_in_flight as u64 / 16).max(1),
            peak: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            changed: Condvar::new(),
            queue: Mutex::new(VecDeque::new()),
            peak_queued: AtomicUsize::new(0),
            queued_total: AtomicU64::new(0),
            blocked_ns: StatU64::new(0),
        }
    }

    /// Takes one credit, blocking while there is none free (or the free ones are reserved
    /// for the admission queue). Fails once the window is closed, also when it closes while
    /// this call is blocked. For outside submitters only: a re-entrant submission uses
    /// [`Window::admit_or_queue`].
    pub(crate) fn admit(&self) -> Result<(), WindowClosed> {
        if self.try_admit()? {
            return Ok(());
        }
        self.sleep_until(|state| state.closed || state.admissible(), || self.try_admit())
    }

    /// [`Window::admit`], adding the time it blocked to [`Window::blocked_ns`]: for the
    /// cost breakdown's counted repetition only, so that no timed admission reads a clock.
    pub(crate) fn admit_timed(&self) -> Result<(), WindowClosed> {
        if self.try_admit()? {
            return Ok(());
        }
        let started = Instant::now();
        let result =
            self.sleep_until(|state| state.closed || state.admissible(), || self.try_admit());
        let waited = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.blocked_ns.fetch_add(waited, Ordering::Relaxed);
        result
    }

    /// Nanoseconds outside submitters have spent blocked in `admit_timed` so far, summed.
    pub(crate) fn blocked_ns(&self) -> u64 {
        self.blocked_ns.load(Ordering::Relaxed)
    }

    /// One attempt: `Ok(true)` when a credit was taken, `Ok(false)` when none is free or
    /// the free ones are reserved for the admission queue.
    pub(crate) fn try_admit(&self) -> Result<bool, WindowClosed> {
        // SeqCst: pairs with the CAS in `finish`, the `fetch_and` in `clear_queued` and the
        // `fetch_or` in `close`.
        let mut word = self.state.load(Ordering::SeqCst);
        loop {
            let mut state = State::unpack(word);
            if state.closed {
                return Err(WindowClosed);
            }
            if !state.admissible() {
                return Ok(false);
            }
            state.credits -= 1;
            state.in_flight += 1;
            // SeqCst (both): pairs with the CAS in `finish` that granted the credit, with the
            // `fetch_and` in `clear_queued` (seeing the flag clear, this admission comes after
            // every queued message was handed to the engine) and with the `fetch_or` in
            // `close`.
            match self.state.compare_exchange_weak(
                word,
                state.pack(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => {
                    self.note_in_flight(state.in_flight);
                    return Ok(true);
                }
                Err(actual) => word = actual,
            }
        }
    }

    /// A re-entrant submission (module docs, step 4): takes a credit if one is free and
    /// nothing is queued, otherwise appends `message` to the admission queue. Never waits
    /// for a credit, only for the queue's short lock. Fails once the window is closed.
    pub(crate) fn admit_or_queue(&self, message: Message) -> Result<Admission, WindowClosed> {
        let mut queue = lock(&self.queue);
        // SeqCst: pairs with the CAS in `finish`, the `fetch_and` in `clear_queued` and the
        // `fetch_or` in `close`.
        let mut word = self.state.load(Ordering::SeqCst);
        loop {
            let mut state = State::unpack(word);
            if state.closed {
                return Err(WindowClosed);
            }
            let admission = if state.admissible() {
                debug_assert!(queue.is_empty(), "the queued flag is clear with messages queued");
                state.credits -= 1;
                state.in_flight += 1;
                Admission::Admitted
            } else {
                state.queued = true;
                Admission::Queued
            };
            // SeqCst (both): pairs with the CAS in `finish` (a grant either comes before this
            // and is taken here, or comes after and sees the flag, so its finisher serves the
            // queue), with `clear_queued` and with the `fetch_or` in `close`.
            match self.state.compare_exchange_weak(
                word,
                state.pack(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => {
                    match admission {
                        Admission::Admitted => self.note_in_flight(state.in_flight),
                        Admission::Queued => {
                            queue.push_back(message);
                            self.peak_queued.fetch_max(queue.len(), Ordering::Relaxed);
                            self.queued_total.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    return Ok(admission);
                }
                Err(actual) => word = actual,
            }
        }
    }

    /// Marks one admitted message finished (completed, failed, discarded or abandoned).
    /// Returns `true` when this granted credits while messages were queued: the caller must
    /// then serve the queue with [`Window::admit_queued`] (module docs, step 6).
    #[must_use = "credits granted while messages are queued must be given to them (`admit_queued`)"]
    pub(crate) fn finish(&self) -> bool {
        let mut word = self.state.load(Ordering::Relaxed);
        loop {
            let mut state = State::unpack(word);
            debug_assert!(state.in_flight > 0, "finish without a matching admit");
            state.in_flight -= 1;
            state.refill += 1;
            let granted = state.refill == self.batch;
            if granted {
                state.refill = 0;
                state.credits += self.batch;
            }
            // SeqCst: pairs with the load in `is_empty` (a drain that sees the window empty
            // sees what the message did), the CASes in `try_admit`, `admit_or_queue` and
            // `take_queued_credit` (a granted credit; the queued flag seen or not, see the
            // module docs) and the sleeper's read in `sleep_until` (through the fence in
            // `notify`).
            match self.state.compare_exchange_weak(
                word,
                state.pack(),
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    // While messages are queued no waiter can go on (the credits are theirs,
                    // and the window is not empty): the server notifies once it is done.
                    if !state.queued && (granted || state.in_flight == 0) {
                        self.notify();
                    }
                    return granted && state.queued;
                }
                Err(actual) => word = actual,
            }
        }
    }

    /// Step 6: admits queued messages in FIFO order while credits last, handing each to
    /// `dispatch` under the queue's lock (so they reach the engine in queue order). Once the
    /// queue is empty, clears the queued flag and wakes the waiters. `dispatch` must not
    /// finish a message or submit (the queue's lock is held).
    pub(crate) fn admit_queued(&self, mut dispatch: impl FnMut(Message)) {
        let mut queue = lock(&self.queue);
        while let Some(&message) = queue.front() {
            if !self.take_queued_credit() {
                // No credit left: the flag stays set, and the next grant serves again.
                return;
            }
            queue.pop_front();
            dispatch(message);
        }
        self.clear_queued();
        drop(queue);
        self.notify();
    }

    /// Takes a credit for the head of the admission queue; `false` if none is left. Called
    /// with the queue's lock held and the queue not empty, so the flag is set and no other
    /// admission takes credits meanwhile.
    fn take_queued_credit(&self) -> bool {
        // SeqCst: pairs with the CAS in `finish` that granted the credit.
        let mut word = self.state.load(Ordering::SeqCst);
        loop {
            let mut state = State::unpack(word);
            debug_assert!(state.queued, "serving the admission queue with the flag clear");
            if state.credits == 0 {
                return false;
            }
            state.credits -= 1;
            state.in_flight += 1;
            // SeqCst (both): pairs with the CAS in `finish` (the granted credit, and a later
            // finish of this message) and the load in `is_empty`.
            match self.state.compare_exchange_weak(
                word,
                state.pack(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => {
                    self.note_in_flight(state.in_flight);
                    return true;
                }
                Err(actual) => word = actual,
            }
        }
    }

    /// Clears the queued flag; the caller holds the queue's lock and the queue is empty.
    fn clear_queued(&self) {
        // SeqCst: pairs with the load and CAS in `try_admit` and `admit_or_queue` (an
        // admission that sees the flag clear comes after every queued message was handed to
        // the engine), the load in `is_empty` and, through the fence in `notify`, the
        // sleeper's read in `sleep_until`.
        self.state.fetch_and(!QUEUED, Ordering::SeqCst);
    }

    /// Forced close (step 7): empties the admission queue and returns how many messages it
    /// held; they were never admitted, so no credit comes back for them.
    pub(crate) fn discard_queued(&self) -> u64 {
        let mut queue = lock(&self.queue);
        let count = queue.len() as u64;
        queue.clear();
        self.clear_queued();
        drop(queue);
        self.notify();
        count
    }

    /// Rejects every later admission, queued or not, and wakes the blocked ones, which
    /// fail. Messages already queued stay accepted (step 7).
    pub(crate) fn close(&self) {
        // SeqCst: pairs with the loads and CASes in `try_admit` and `admit_or_queue` and,
        // through the fence in `notify`, the sleeper's read in `sleep_until`.
        self.state.fetch_or(CLOSED, Ordering::SeqCst);
        self.notify();
    }

    /// Blocks until no admitted message is unfinished and none is queued.
    pub(crate) fn wait_empty(&self) {
        if self.is_empty() {
            return;
        }
        let _ = self.sleep_until(
            |state| state.in_flight == 0 && !state.queued,
            || Ok::<bool, WindowClosed>(self.is_empty()),
        );
    }

    /// Whether no admitted message is unfinished and none is queued: what `drain` waits for.
    pub(crate) fn is_empty(&self) -> bool {
        // SeqCst: pairs with the CASes in `finish` and `take_queued_credit` and the
        // `fetch_and` in `clear_queued`: reading empty, a drain sees what every finished
        // message did.
        let state = State::unpack(self.state.load(Ordering::SeqCst));
        state.in_flight == 0 && !state.queued
    }

    /// Messages admitted and not yet finished (queued ones are not admitted yet).
    pub(crate) fn in_flight(&self) -> usize {
        // SeqCst: pairs with the CAS in `finish`: reading 0, a forced close sees what every
        // finished message did.
        State::unpack(self.state.load(Ordering::SeqCst)).in_flight as usize
    }

    /// `(credits, pending refill, in flight)` now.
    #[cfg(test)]
    pub(crate) fn fields(&self) -> (usize, usize, usize) {
        // SeqCst: pairs with the CASes in `try_admit` and `finish`.
        let state = State::unpack(self.state.load(Ordering::SeqCst));
        (state.credits as usize, state.refill as usize, state.in_flight as usize)
    }

    /// Whether the queued flag is set now.
    #[cfg(test)]
    pub(crate) fn is_queued(&self) -> bool {
        // SeqCst: pairs with the CAS in `admit_or_queue` and the `fetch_and` in
        // `clear_queued`.
        State::unpack(self.state.load(Ordering::SeqCst)).queued
    }

    /// The highest in-flight count seen so far.
    pub(crate) fn peak_in_flight(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    /// The most messages the admission queue held at once so far.
    pub(crate) fn peak_queued(&self) -> usize {
        self.peak_queued.load(Ordering::Relaxed)
    }

    /// Messages accepted into the admission queue so far.
    pub(crate) fn queued_total(&self) -> u64 {
        self.queued_total.load(Ordering::Relaxed)
    }

    /// Records an in-flight count just reached, for the peak.
    fn note_in_flight(&self, in_flight: u64) {
        let in_flight = in_flight as usize;
        if in_flight > self.peak.load(Ordering::Relaxed) {
            self.peak.fetch_max(in_flight, Ordering::Relaxed);
        }
    }

    /// Sleeps until `ready` holds for the state, then returns what `attempt` gives once it
    /// succeeds (`Ok(true)`); `attempt` is retried after every wake-up.
    fn sleep_until(
        &self,
        ready: impl Fn(State) -> bool,
        attempt: impl Fn() -> Result<bool, WindowClosed>,
    ) -> Result<(), WindowClosed> {
        // SeqCst: pairs with the sleeper-count load in `notify`.
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        // Pairs with the fence in `notify`: the state read below sees the notifier's change,
        // or the notifier sees this sleeper.
        fence(Ordering::SeqCst);
        let mut guard = lock(&self.lock);
        let result = loop {
            match attempt() {
                Ok(true) => break Ok(()),
                Ok(false) => {}
                Err(closed) => break Err(closed),
            }
            // SeqCst: pairs with the CAS in `finish`, the `fetch_and` in `clear_queued` and
            // the `fetch_or` in `close`.
            if !ready(State::unpack(self.state.load(Ordering::SeqCst))) {
                guard = self.changed.wait(guard).unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        };
        drop(guard);
        // SeqCst: pairs with the sleeper-count load in `notify`.
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        result
    }

    fn notify(&self) {
        // Pairs with the fence in `sleep_until` (see the module docs).
        fence(Ordering::SeqCst);
        // SeqCst: pairs with the increment and decrement in `sleep_until`.
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = lock(&self.lock);
            self.changed.notify_all();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Arc;
    use std::time::Duration;

    use crate::{Job, Key};

    fn message(seq: u64) -> Message {
        Message { key: Key::new(0, 1), seq, intended_ns: 0, job: Job::Noop }
    }

    /// What `admit_queued` hands over.
    fn served(window: &Window) -> Vec<u64> {
        let mut seqs = Vec::new();
        window.admit_queued(|message| seqs.push(message.seq));
        seqs
    }

    #[test]
    fn pack_round_trips() {
        let state = State {
            closed: true,
            queued: true,
            credits: MAX_WINDOW as u64,
            refill: REFILL_MASK,
            in_flight: MAX_WINDOW as u64,
        };
        assert_eq!(State::unpack(state.pack()), state);
        let state = State { closed: false, queued: false, credits: 5, refill: 3, in_flight: 7 };
        assert_eq!(State::unpack(state.pack()), state);
    }

    #[test]
    fn refills_only_in_whole_batches() {
        let window = Window::new(256);
        for _ in 0..256 {
            window.admit().unwrap();
        }
        assert_eq!(window.fields().0, 0);
        for _ in 0..15 {
            assert!(!window.finish());
        }
        assert_eq!(window.fields().0, 0, "15 finished messages are less than a batch");
        assert!(!window.finish());
        assert_eq!(window.fields().0, 16);
        assert_eq!(window.in_flight(), 240);
    }

    #[test]
    fn batch_is_at_least_one() {
        let window = Window::new(8);
        for _ in 0..8 {
            window.admit().unwrap();
        }
        assert!(!window.finish());
        assert_eq!(window.fields().0, 1);
    }

    #[test]
    fn close_wakes_a_blocked_admit() {
        let window = Arc::new(Window::new(1));
        window.admit().unwrap();
        let blocked = {
            let window = Arc::clone(&window);
            std::thread::spawn(move || window.admit())
        };
        std::thread::sleep(Duration::from_millis(20));
        window.close();
        assert_eq!(blocked.join().unwrap(), Err(WindowClosed));
        assert_eq!(window.admit(), Err(WindowClosed));
    }

    #[test]
    fn finish_wakes_a_blocked_admit_and_wait_empty() {
        let window = Arc::new(Window::new(1));
        window.admit().unwrap();
        let admitter = {
            let window = Arc::clone(&window);
            std::thread::spawn(move || window.admit())
        };
        std::thread::sleep(Duration::from_millis(20));
        assert!(!window.finish());
        assert_eq!(admitter.join().unwrap(), Ok(()));
        let drainer = {
            let window = Arc::clone(&window);
            std::thread::spawn(move || window.wait_empty())
        };
        assert!(!window.finish());
        drainer.join().unwrap();
        assert_eq!(window.in_flight(), 0);
        assert_eq!(window.peak_in_flight(), 1);
    }

    #[test]
    fn a_reentrant_submission_takes_a_free_credit_and_queues_at_a_full_window() {
        let window = Window::new(2);
        assert_eq!(window.admit_or_queue(message(0)), Ok(Admission::Admitted));
        window.admit().unwrap();
        assert_eq!(window.admit_or_queue(message(1)), Ok(Admission::Queued));
        assert!(window.is_queued());
        assert_eq!(window.fields(), (0, 0, 2), "a queued message holds no credit");
        assert!(window.finish(), "a grant while messages are queued must serve them");
        assert_eq!(window.fields(), (1, 0, 1), "the credit is not taken before it is served");
        assert_eq!(window.try_admit(), Ok(false), "the free credit is reserved for the queue");
        assert_eq!(served(&window), [1]);
        assert!(!window.is_queued());
        assert_eq!(window.fields(), (0, 0, 2));
        assert_eq!((window.peak_queued(), window.queued_total()), (1, 1));
    }

    #[test]
    fn queued_messages_are_admitted_in_fifo_order_before_outside_submitters() {
        let window = Window::new(2);
        window.admit().unwrap();
        window.admit().unwrap();
        for seq in 0..3 {
            assert_eq!(window.admit_or_queue(message(seq)), Ok(Admission::Queued));
        }
        assert_eq!(window.peak_queued(), 3);
        // Batch 1: each finish grants one credit, which goes to the head of the queue.
        for expected in 0..3 {
            assert_eq!(window.try_admit(), Ok(false), "an outside admission overtook the queue");
            assert!(window.finish());
            assert_eq!(served(&window), [expected]);
        }
        assert!(!window.is_queued());
        assert!(!window.finish(), "nothing queued: the credit goes back to the window");
        assert_eq!(window.try_admit(), Ok(true));
        assert_eq!(window.fields(), (0, 0, 2));
        assert_eq!((window.peak_queued(), window.queued_total()), (3, 3));
    }

    #[test]
    fn a_blocked_outside_admission_waits_until_the_queue_is_served() {
        let window = Arc::new(Window::new(1));
        window.admit().unwrap();
        assert_eq!(window.admit_or_queue(message(0)), Ok(Admission::Queued));
        let (admitted, admitted_receiver) = mpsc::channel();
        let admitter = {
            let window = Arc::clone(&window);
            std::thread::spawn(move || {
                let result = window.admit();
                let _ = admitted.send(());
                result
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        assert!(window.finish());
        assert_eq!(served(&window), [0]);
        assert!(
            admitted_receiver.recv_timeout(Duration::from_millis(50)).is_err(),
            "the outside admission took the queued message's credit"
        );
        assert!(!window.finish());
        assert_eq!(admitter.join().unwrap(), Ok(()));
        assert_eq!(window.fields(), (0, 0, 1));
    }

    #[test]
    fn wait_empty_waits_for_queued_messages() {
        let window = Arc::new(Window::new(1));
        window.admit().unwrap();
        assert_eq!(window.admit_or_queue(message(0)), Ok(Admission::Queued));
        assert!(window.finish());
        assert_eq!(window.in_flight(), 0);
        assert!(!window.is_empty(), "a queued message is accepted and unfinished");
        let (drained, drained_receiver) = mpsc::channel();
        let drainer = {
            let window = Arc::clone(&window);
            std::thread::spawn(move || {
                window.wait_empty();
                let _ = drained.send(());
            })
        };
        assert!(drained_receiver.recv_timeout(Duration::from_millis(50)).is_err());
        assert_eq!(served(&window), [0]);
        assert!(drained_receiver.recv_timeout(Duration::from_millis(50)).is_err());
        assert!(!window.finish());
        drainer.join().unwrap();
        assert!(window.is_empty());
    }

    #[test]
    fn a_closed_window_refuses_reentrant_submissions_but_admits_queued_ones() {
        let window = Window::new(1);
        window.admit().unwrap();
        assert_eq!(window.admit_or_queue(message(0)), Ok(Admission::Queued));
        window.close();
        assert_eq!(window.admit_or_queue(message(1)), Err(WindowClosed));
        assert!(window.finish());
        assert_eq!(served(&window), [0], "a graceful close still admits queued messages");
        assert!(!window.finish());
        assert!(window.is_empty());
        assert_eq!(window.queued_total(), 1);
    }

    #[test]
    fn discard_queued_empties_the_queue_without_returning_credits() {
        let window = Window::new(1);
        window.admit().unwrap();
        for seq in 0..2 {
            assert_eq!(window.admit_or_queue(message(seq)), Ok(Admission::Queued));
        }
        window.close();
        assert_eq!(window.discard_queued(), 2);
        assert!(!window.is_queued());
        assert!(!window.finish(), "nothing left to serve");
        assert!(window.is_empty());
        assert_eq!(window.fields(), (1, 0, 0));
    }
}
