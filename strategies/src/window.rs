//! The admission window shared by every strategy: at most `max_in_flight` unfinished
//! messages, refilled in batches.
//!
//! # Protocol
//!
//! The window models a receiver that requests messages from its transport in batches:
//!
//! 1. It starts with `max_in_flight` *credits*. Admitting a message takes one credit and
//!    adds one to *in flight*; with no credit left, `admit` blocks.
//! 2. Finishing a message removes it from *in flight* and adds it to a *pending refill*
//!    count. When that count reaches `batch = max(1, max_in_flight / 16)`, it is reset and
//!    `batch` credits are granted at once (one request to the transport).
//! 3. Credits are therefore granted only in whole batches. If one key holds `h` unfinished
//!    messages, the other keys can finish at most `max_in_flight - h`; with
//!    `h >= max_in_flight - batch + 1` (241 of 256) that is fewer than a batch, so no refill
//!    happens and every other key waits: the shared-window stall of docs/design.md section 3.
//!
//! # Implementation
//!
//! Everything lives in one `AtomicU64` so that admission and completion are each one
//! compare-and-swap: bit 63 is the *closed* flag, then three 21-bit fields: credits,
//! pending refill, in flight. Waiters (blocked submitters, `wait_empty`) sleep on a condvar;
//! a completion that grants credits or empties the window notifies them only when the
//! sleeper count says someone may be asleep. No wake-up is lost: a sleeper increments the
//! count, issues a `SeqCst` fence, then reads the state; a notifier changes the state,
//! issues a `SeqCst` fence, then reads the count. Whichever fence comes second sees the
//! other side's write (the pairing of `parking.rs`, in the form loom checks exactly: it
//! models `SeqCst` fences, but `SeqCst` accesses only as acquire/release).
//!
//! The state's writers pair with its readers: the compare-and-swap in `finish` (a credit
//! granted, a message out of flight) and the `fetch_or` in `close` with the load and the
//! compare-and-swap in `try_admit`, the load in `in_flight` (so a `drain` that sees the
//! window empty sees everything the finished messages did) and the sleeper's read in
//! `sleep_until`. The sleeper count's increment and decrement pair with its load in
//! `notify`.

use crate::sync::{fence, lock, AtomicU64, AtomicUsize, Condvar, Mutex, Ordering};

/// The largest window the packed state can represent.
pub const MAX_WINDOW: usize = (1 << FIELD_BITS) - 1;

const FIELD_BITS: u32 = 21;
const FIELD_MASK: u64 = (1 << FIELD_BITS) - 1;
const IN_FLIGHT_SHIFT: u32 = 0;
const REFILL_SHIFT: u32 = FIELD_BITS;
const CREDITS_SHIFT: u32 = 2 * FIELD_BITS;
const CLOSED: u64 = 1 << 63;

/// One decoded view of the packed window state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct State {
    closed: bool,
    credits: u64,
    refill: u64,
    in_flight: u64,
}

impl State {
    fn unpack(word: u64) -> Self {
        Self {
            closed: word & CLOSED != 0,
            credits: (word >> CREDITS_SHIFT) & FIELD_MASK,
            refill: (word >> REFILL_SHIFT) & FIELD_MASK,
            in_flight: (word >> IN_FLIGHT_SHIFT) & FIELD_MASK,
        }
    }

    fn pack(self) -> u64 {
        (if self.closed { CLOSED } else { 0 })
            | (self.credits << CREDITS_SHIFT)
            | (self.refill << REFILL_SHIFT)
            | (self.in_flight << IN_FLIGHT_SHIFT)
    }
}

/// Why `admit` refused a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WindowClosed;

/// The shared bounded in-flight window (see the module docs).
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
}

impl Window {
    /// A window of `max_in_flight` messages; the caller has validated `1..=MAX_WINDOW`.
    pub(crate) fn new(max_in_flight: usize) -> Self {
        assert!((1..=MAX_WINDOW).contains(&max_in_flight), "window size out of range");
        let initial =
            State { closed: false, credits: max_in_flight as u64, refill: 0, in_flight: 0 };
        Self {
            state: AtomicU64::new(initial.pack()),
            batch: (max_in_flight as u64 / 16).max(1),
            peak: AtomicUsize::new(0),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            changed: Condvar::new(),
        }
    }

    /// Takes one credit, blocking while there is none. Fails once the window is closed,
    /// also when it closes while this call is blocked.
    pub(crate) fn admit(&self) -> Result<(), WindowClosed> {
        if self.try_admit()? {
            return Ok(());
        }
        self.sleep_until(|state| state.closed || state.credits > 0, || self.try_admit())
    }

    /// One attempt: `Ok(true)` when a credit was taken, `Ok(false)` when none is left.
    fn try_admit(&self) -> Result<bool, WindowClosed> {
        // SeqCst: pairs with the CAS in `finish` and the `fetch_or` in `close`.
        let mut word = self.state.load(Ordering::SeqCst);
        loop {
            let mut state = State::unpack(word);
            if state.closed {
                return Err(WindowClosed);
            }
            if state.credits == 0 {
                return Ok(false);
            }
            state.credits -= 1;
            state.in_flight += 1;
            // SeqCst (both): pairs with the CAS in `finish` that granted the credit and with
            // the `fetch_or` in `close`.
            match self.state.compare_exchange_weak(
                word,
                state.pack(),
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => {
                    let in_flight = state.in_flight as usize;
                    if in_flight > self.peak.load(Ordering::Relaxed) {
                        self.peak.fetch_max(in_flight, Ordering::Relaxed);
                    }
                    return Ok(true);
                }
                Err(actual) => word = actual,
            }
        }
    }

    /// Marks one admitted message finished (completed, failed, discarded or abandoned).
    pub(crate) fn finish(&self) {
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
            // SeqCst: pairs with the load in `in_flight` (a drain that sees 0 sees what the
            // message did), the CAS in `try_admit` (a granted credit) and the sleeper's read
            // in `sleep_until` (through the fence in `notify`).
            match self.state.compare_exchange_weak(
                word,
                state.pack(),
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    if granted || state.in_flight == 0 {
                        self.notify();
                    }
                    return;
                }
                Err(actual) => word = actual,
            }
        }
    }

    /// Rejects every later `admit` and wakes the blocked ones, which fail.
    pub(crate) fn close(&self) {
        // SeqCst: pairs with the load and CAS in `try_admit` and, through the fence in
        // `notify`, the sleeper's read in `sleep_until`.
        self.state.fetch_or(CLOSED, Ordering::SeqCst);
        self.notify();
    }

    /// Blocks until no admitted message is unfinished.
    pub(crate) fn wait_empty(&self) {
        if self.in_flight() == 0 {
            return;
        }
        let _ = self.sleep_until(
            |state| state.in_flight == 0,
            || Ok::<bool, WindowClosed>(self.in_flight() == 0),
        );
    }

    /// Messages admitted and not yet finished.
    pub(crate) fn in_flight(&self) -> usize {
        // SeqCst: pairs with the CAS in `finish`: reading 0, a drain sees what every finished
        // message did.
        State::unpack(self.state.load(Ordering::SeqCst)).in_flight as usize
    }

    /// `(credits, pending refill, in flight)` now.
    #[cfg(test)]
    pub(crate) fn fields(&self) -> (usize, usize, usize) {
        // SeqCst: pairs with the CASes in `try_admit` and `finish`.
        let state = State::unpack(self.state.load(Ordering::SeqCst));
        (state.credits as usize, state.refill as usize, state.in_flight as usize)
    }

    /// The highest in-flight count seen so far.
    pub(crate) fn peak_in_flight(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
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
            // SeqCst: pairs with the CAS in `finish` and the `fetch_or` in `close`.
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
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn pack_round_trips() {
        let state = State { closed: true, credits: MAX_WINDOW as u64, refill: 3, in_flight: 7 };
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
            window.finish();
        }
        assert_eq!(window.fields().0, 0, "15 finished messages are less than a batch");
        window.finish();
        assert_eq!(window.fields().0, 16);
        assert_eq!(window.in_flight(), 240);
    }

    #[test]
    fn batch_is_at_least_one() {
        let window = Window::new(8);
        for _ in 0..8 {
            window.admit().unwrap();
        }
        window.finish();
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
        window.finish();
        assert_eq!(admitter.join().unwrap(), Ok(()));
        let drainer = {
            let window = Arc::clone(&window);
            std::thread::spawn(move || window.wait_empty())
        };
        window.finish();
        drainer.join().unwrap();
        assert_eq!(window.in_flight(), 0);
        assert_eq!(window.peak_in_flight(), 1);
    }
}
