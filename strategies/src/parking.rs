//! Sleeping and waking one worker thread without losing a wake-up, and the idle spin that
//! comes before the sleep.
//!
//! # Idle spin
//!
//! Parking and being woken cost a system call on each side, so a worker that finds nothing
//! to do first spins ([`IdleSpin`], set by `StrategyConfig::idle_spin_us`):
//! 1. at its first empty look it notes the time; it then looks at its queues again and
//!    again, with a `spin_loop` hint between looks and a `yield_now` every
//!    `SPINS_PER_YIELD` looks, so that spinning workers do not starve the threads that have
//!    work on a machine with few cores;
//! 2. once the budget has passed since that first empty look it parks, by the protocol
//!    below; finding work ends the spin, and the next idle stretch starts a budget of its
//!    own;
//! 3. it skips the spin and parks at once when the budget is zero, or when its previous
//!    park outlasted the budget: a worker that sleeps longer than it would spin serves a
//!    light load, where spinning only burns CPU. A park no longer than the budget turns the
//!    spin back on.
//!
//! The clock is read only while the worker is idle, never on its way to work. The spin
//! comes before the protocol and changes nothing in it: however long a worker spun, it
//! parks as below. Under loom there is no real time: the budget is zero there and a worker
//! parks at once, as the models expect (spinning would only multiply interleavings).
//!
//! # Protocol
//!
//! A worker that finds nothing to do (and has spun its budget, or skipped the spin):
//! 1. calls [`ParkSlot::prepare_park`], which stores `PARKED` and issues a `SeqCst` fence;
//! 2. looks at every queue it would take work from once more; if it finds work it calls
//!    [`ParkSlot::cancel_park`], otherwise [`ParkSlot::park`] (through [`IdleSpin::park`],
//!    which times the sleep), which sleeps until the state is no longer `PARKED`.
//!
//! A producer pushes to a queue, then calls [`ParkSlot::unpark`], whose `SeqCst` fence
//! precedes its load of the state; it wakes the worker only if it moves the state from
//! `PARKED` to `RUNNING` itself, so a worker is woken once however many producers race.
//!
//! Why no wake-up is lost: the two fences order "store PARKED, then read the queue" against
//! "push, then read the state". At least one side sees the other's write: either the
//! worker's second look finds the new work, or the producer sees `PARKED` and wakes it.
//! `std::thread::park` keeps an unpark that arrives before it sleeps, and spurious returns
//! are absorbed by re-checking the state.

use std::hint;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::sync::thread::{self, Thread};
use crate::sync::{fence, AtomicU8, Ordering};

const RUNNING: u8 = 0;
const PARKED: u8 = 1;

/// A spinning worker yields its thread once every this many empty looks, so that on a
/// machine with fewer cores than spinning workers the threads with work still run.
const SPINS_PER_YIELD: u32 = 16;

/// The sleep state of one worker thread.
#[derive(Debug, Default)]
pub(crate) struct ParkSlot {
    state: AtomicU8,
    /// The worker's thread, registered before it first parks.
    thread: OnceLock<Thread>,
}

impl ParkSlot {
    /// Registers the calling thread as this slot's worker.
    pub(crate) fn register(&self) {
        let _ = self.thread.set(thread::current());
    }

    /// Whether the worker is asleep or about to sleep.
    pub(crate) fn is_parked(&self) -> bool {
        self.state.load(Ordering::Relaxed) == PARKED
    }

    /// Step 1 of parking: announce it; the caller must then look at its queues again.
    pub(crate) fn prepare_park(&self) {
        // Release: a producer whose CAS (Acquire) reads PARKED also sees the registered
        // thread, so it never finds the slot parked yet without a thread to unpark.
        self.state.store(PARKED, Ordering::Release);
        // SeqCst fence: pairs with the fence in `unpark` (store PARKED, then read queues).
        fence(Ordering::SeqCst);
    }

    /// The second look found work: stay awake.
    pub(crate) fn cancel_park(&self) {
        self.state.store(RUNNING, Ordering::Relaxed);
    }

    /// Sleeps until a producer (or shutdown) has called [`ParkSlot::unpark`].
    pub(crate) fn park(&self) {
        // Acquire: pairs with the AcqRel CAS in `unpark`, so the work pushed before it is
        // visible once we see RUNNING.
        while self.state.load(Ordering::Acquire) == PARKED {
            thread::park();
        }
    }

    /// Wakes the worker if it is parked; returns whether this call woke it.
    pub(crate) fn unpark(&self) -> bool {
        // SeqCst fence: pairs with the fence in `prepare_park` (push, then read the state).
        fence(Ordering::SeqCst);
        if self.state.load(Ordering::Relaxed) != PARKED {
            return false;
        }
        // AcqRel: the Acquire half pairs with the Release store in `prepare_park` (the
        // worker's thread is registered), the Release half with the Acquire load in `park`.
        let woke = self
            .state
            .compare_exchange(PARKED, RUNNING, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok();
        if woke {
            if let Some(thread) = self.thread.get() {
                thread.unpark();
            }
        }
        woke
    }
}

/// How long an idle worker spins for new work before it parks, and whether it spins at all
/// (the "Idle spin" steps of the module docs). One per worker thread.
#[derive(Debug)]
pub(crate) struct IdleSpin {
    /// How long an idle stretch spins before the worker parks; zero parks at once.
    budget: Duration,
    /// When the current idle stretch began (the first look that found nothing); `None`
    /// while the worker has work.
    idle_since: Option<Instant>,
    /// Whether the previous park outlasted the budget, so the load is light and the next
    /// idle stretch parks at once.
    last_park_was_long: bool,
    /// Empty looks in the current idle stretch, to yield every `SPINS_PER_YIELD` of them.
    spins: u32,
}

impl IdleSpin {
    /// The spin of a worker set up with `idle_spin_us` microseconds
    /// (`StrategyConfig::idle_spin_us`). Under loom the budget is zero: no real time there.
    pub(crate) fn new(idle_spin_us: u32) -> Self {
        #[cfg(not(loom))]
        let budget = Duration::from_micros(u64::from(idle_spin_us));
        #[cfg(loom)]
        let budget = {
            let _ = idle_spin_us;
            Duration::ZERO
        };
        Self::with_budget(budget)
    }

    fn with_budget(budget: Duration) -> Self {
        Self { budget, idle_since: None, last_park_was_long: false, spins: 0 }
    }

    /// The worker found work: its idle stretch, if any, is over. Reads no clock. Returns
    /// whether the stretch had spun, so that it was a spin that found the work.
    pub(crate) fn reset(&mut self) -> bool {
        let spun = self.spins != 0;
        self.idle_since = None;
        self.spins = 0;
        spun
    }

    /// The worker found nothing. While the spin lasts, pauses a moment and returns `true`:
    /// look at the queues again. Returns `false` once the worker should park.
    pub(crate) fn spin(&mut self) -> bool {
        if !self.keeps_spinning(Instant::now) {
            return false;
        }
        self.spins = self.spins.wrapping_add(1);
        if self.spins.is_multiple_of(SPINS_PER_YIELD) {
            thread::yield_now();
        } else {
            hint::spin_loop();
        }
        true
    }

    /// The decision of [`IdleSpin::spin`] at the time `now` returns; `now` is called only
    /// when the decision needs the time (not when the worker parks at once).
    fn keeps_spinning(&mut self, now: impl FnOnce() -> Instant) -> bool {
        if self.budget.is_zero() || self.last_park_was_long {
            return false;
        }
        let now = now();
        let since = *self.idle_since.get_or_insert(now);
        now.saturating_duration_since(since) < self.budget
    }

    /// Parks on `slot` (its [`ParkSlot::park`], after `prepare_park` and the second look),
    /// timing the sleep so that the next idle stretch knows whether to spin. With a zero
    /// budget there is nothing to decide and the clock is not read.
    pub(crate) fn park(&mut self, slot: &ParkSlot) {
        if self.budget.is_zero() {
            slot.park();
            self.reset();
            return;
        }
        let start = Instant::now();
        slot.park();
        self.parked_for(start.elapsed());
    }

    /// Records that the worker slept `parked`; its idle stretch ended with the wake-up.
    fn parked_for(&mut self, parked: Duration) {
        self.last_park_was_long = parked > self.budget;
        self.reset();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn a_racing_producer_always_wakes_the_worker() {
        for _ in 0..200 {
            let slot = Arc::new(ParkSlot::default());
            let flag = Arc::new(AtomicBool::new(false));
            let worker = {
                let (slot, flag) = (Arc::clone(&slot), Arc::clone(&flag));
                std::thread::spawn(move || {
                    slot.register();
                    loop {
                        if flag.load(Ordering::Relaxed) {
                            return;
                        }
                        slot.prepare_park();
                        if flag.load(Ordering::Relaxed) {
                            slot.cancel_park();
                            return;
                        }
                        slot.park();
                    }
                })
            };
            flag.store(true, Ordering::Relaxed);
            slot.unpark();
            worker.join().unwrap();
        }
    }

    const BUDGET: Duration = Duration::from_micros(20);

    /// A clock that must not be read: the decision is made without the time.
    fn no_clock() -> Instant {
        panic!("the idle spin read the clock where it parks at once")
    }

    #[test]
    fn new_takes_its_budget_in_microseconds() {
        assert_eq!(IdleSpin::new(20).budget, BUDGET);
        let longest = IdleSpin::new(crate::StrategyConfig::MAX_IDLE_SPIN_US);
        assert_eq!(longest.budget, Duration::from_millis(1));
        assert_eq!(IdleSpin::new(0).budget, Duration::ZERO);
    }

    #[test]
    fn a_zero_budget_parks_at_once_without_reading_the_clock() {
        let mut idle = IdleSpin::with_budget(Duration::ZERO);
        assert!(!idle.keeps_spinning(no_clock));
        idle.parked_for(Duration::ZERO);
        assert!(!idle.keeps_spinning(no_clock), "a short park turned a zero spin on");
        idle.reset();
        assert!(!idle.keeps_spinning(no_clock));
        assert!(!IdleSpin::new(0).spin());
    }

    #[test]
    fn it_spins_until_the_budget_has_passed_since_the_first_empty_look() {
        let start = Instant::now();
        let mut idle = IdleSpin::with_budget(BUDGET);
        assert!(idle.keeps_spinning(|| start), "the first empty look");
        assert!(idle.keeps_spinning(|| start + BUDGET / 2));
        assert!(idle.keeps_spinning(|| start + BUDGET - Duration::from_nanos(1)));
        assert!(!idle.keeps_spinning(|| start + BUDGET), "spun past the budget");
        assert!(!idle.keeps_spinning(|| start + 2 * BUDGET));
        // Work found: the next idle stretch starts a budget of its own.
        idle.reset();
        let later = start + 10 * BUDGET;
        assert!(idle.keeps_spinning(|| later), "the next stretch did not spin");
        assert!(idle.keeps_spinning(|| later + BUDGET / 2));
        assert!(!idle.keeps_spinning(|| later + BUDGET));
    }

    #[test]
    fn after_a_park_longer_than_the_budget_it_parks_at_once() {
        let mut idle = IdleSpin::with_budget(BUDGET);
        idle.parked_for(BUDGET + Duration::from_nanos(1));
        assert!(!idle.keeps_spinning(no_clock), "spun after a long park");
        // Work in between changes nothing: the previous park decides.
        idle.reset();
        assert!(!idle.keeps_spinning(no_clock), "spun after work that followed a long park");
        idle.parked_for(Duration::from_secs(1));
        assert!(!idle.keeps_spinning(no_clock));
    }

    #[test]
    fn after_a_short_park_it_spins_again() {
        let start = Instant::now();
        let mut idle = IdleSpin::with_budget(BUDGET);
        idle.parked_for(10 * BUDGET);
        assert!(!idle.keeps_spinning(no_clock));
        idle.parked_for(BUDGET); // as long as the budget: not longer
        assert!(idle.keeps_spinning(|| start), "no spin after a park of exactly the budget");
        assert!(!idle.keeps_spinning(|| start + BUDGET));
        // A park ends the idle stretch: the next one spins a full budget again.
        idle.parked_for(BUDGET / 4);
        let later = start + 100 * BUDGET;
        assert!(idle.keeps_spinning(|| later), "no spin after a short park");
        assert!(idle.keeps_spinning(|| later + BUDGET / 2));
        assert!(!idle.keeps_spinning(|| later + BUDGET));
    }

    /// The real clock: `spin` says "park" only once the budget has passed (a lower bound,
    /// which a slow or preempted machine only makes longer).
    #[test]
    fn spin_asks_to_park_only_after_its_budget() {
        let budget = Duration::from_micros(200);
        let mut idle = IdleSpin::with_budget(budget);
        let start = Instant::now();
        let mut looks = 0u64;
        while idle.spin() {
            looks += 1;
        }
        assert!(start.elapsed() >= budget, "parked after {:?}", start.elapsed());
        assert!(looks > 0, "never looked again");
    }

    /// A park through `IdleSpin` is the slot's park: it returns once a producer unparks.
    #[test]
    fn an_idle_spin_park_returns_when_unparked() {
        let slot = Arc::new(ParkSlot::default());
        let flag = Arc::new(AtomicBool::new(false));
        let worker = {
            let (slot, flag) = (Arc::clone(&slot), Arc::clone(&flag));
            std::thread::spawn(move || {
                slot.register();
                let mut idle = IdleSpin::with_budget(BUDGET);
                while !flag.load(Ordering::Relaxed) {
                    if idle.spin() {
                        continue;
                    }
                    slot.prepare_park();
                    if flag.load(Ordering::Relaxed) {
                        slot.cancel_park();
                        break;
                    }
                    idle.park(&slot);
                }
            })
        };
        flag.store(true, Ordering::Relaxed);
        slot.unpark();
        worker.join().unwrap();
    }
}
