//! Sleeping and waking one worker thread without losing a wake-up.
//!
//! # Protocol
//!
//! A worker that finds nothing to do:
//! 1. calls [`ParkSlot::prepare_park`], which stores `PARKED` and issues a `SeqCst` fence;
//! 2. looks at every queue it would take work from once more; if it finds work it calls
//!    [`ParkSlot::cancel_park`], otherwise [`ParkSlot::park`], which sleeps until the
//!    state is no longer `PARKED`.
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

use std::sync::OnceLock;

use crate::sync::thread::{self, Thread};
use crate::sync::{fence, AtomicU8, Ordering};

const RUNNING: u8 = 0;
const PARKED: u8 = 1;

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
}
