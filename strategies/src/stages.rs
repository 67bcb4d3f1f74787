//! The stages of one message's dispatch through a mailbox strategy, each on its own, for
//! the `stages` benchmark (`benches/stages.rs`): admission through the window, activation
//! of a mailbox (map insert, then retirement), a hop to a worker that is running, and a hop
//! that has to wake a parked one. Each stage runs the strategies' own code (`window.rs`,
//! `mailbox.rs`, `parking.rs`), not a copy of it, so that a strategy's dispatch cost can be
//! read as a sum of what its messages go through (their event counts, `events.rs`).
//!
//! Nothing here is needed to run a strategy; it exists to be measured.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::events::EventSet;
use crate::executor::Core;
use crate::mailbox::{Mailbox, MailboxSet, Placement};
use crate::parking::{IdleSpin, ParkSlot};
use crate::sync::SegQueue;
use crate::window::Window;
use crate::{Key, Message, Outcome, StrategyConfig, WindowScope, MAX_WINDOW};

/// Admission alone: one credit of a window taken and returned, as every admitted message
/// does once (uncontended: one thread).
#[derive(Debug)]
pub struct AdmissionStage {
    window: Window,
}

impl AdmissionStage {
    /// A window of `max_in_flight` credits (`1..=MAX_WINDOW`, clamped).
    pub fn new(max_in_flight: usize) -> Self {
        Self { window: Window::new(max_in_flight.clamp(1, MAX_WINDOW)) }
    }

    /// Takes a credit and returns it.
    pub fn admit_and_finish(&self) {
        let admitted = self.window.try_admit();
        debug_assert_eq!(admitted, Ok(true), "one thread holds at most one credit");
        let granted = self.window.finish();
        debug_assert!(!granted, "nothing is ever queued here");
    }
}

/// A placement that never schedules: the activation stage creates and retires mailboxes
/// without running them.
#[derive(Debug)]
struct Unplaced;

impl Placement for Unplaced {
    const WAKER_FINISHES_WAIT: bool = false;

    fn bind(&self) -> usize {
        0
    }

    fn schedule(_set: &Arc<MailboxSet<Self>>, _mailbox: Arc<Mailbox>) {
        unreachable!("the activation stage never schedules a mailbox");
    }
}

/// Activation alone: a key's mailbox created in the mailbox map (a spare one reused, as
/// in a warm strategy), then removed from the map and kept as a spare again, as a key's
/// first submission and its last turn do. Binding to a worker (`keyed-mailbox`'s scan) is
/// not included: it is the placement's.
#[derive(Debug)]
pub struct ActivationStage {
    set: Arc<MailboxSet<Unplaced>>,
}

impl Default for ActivationStage {
    fn default() -> Self {
        let handler = Arc::new(|_: &Message| Outcome::Done);
        let core = Core::new(
            StrategyConfig::with_workers(1),
            WindowScope::Strategy,
            EventSet::MAILBOXES,
            handler,
        );
        Self { set: MailboxSet::new(Arc::new(core), Unplaced) }
    }
}

impl ActivationStage {
    /// Activates `key`'s mailbox and retires it.
    pub fn activate_and_retire(&self, key: Key) {
        self.set.activate_and_retire(key);
    }
}

/// What the producer and the worker of a [`HopStage`] share.
#[derive(Debug, Default)]
struct HopShared {
    queue: SegQueue<u64>,
    park: ParkSlot,
    /// Items the worker has taken.
    received: AtomicU64,
    shutdown: AtomicBool,
}

/// A queue hop: items pushed to one worker's FIFO, waking it when it is parked, the way
/// `keyed-mailbox` schedules a mailbox on its worker (the same queue, park slot and idle
/// spin); the worker only counts what it takes.
#[derive(Debug)]
pub struct HopStage {
    shared: Arc<HopShared>,
    worker: Option<JoinHandle<()>>,
}

impl HopStage {
    /// Starts the worker; an idle worker spins `idle_spin_us` microseconds before it parks
    /// (0: parks at once). A long spin keeps a fed worker running; 0 makes every hop after
    /// a pause wake a parked one.
    pub fn start(idle_spin_us: u32) -> Self {
        let shared = Arc::new(HopShared::default());
        let for_worker = Arc::clone(&shared);
        let worker = std::thread::Builder::new()
            .name("hop-stage".into())
            .spawn(move || hop_worker(&for_worker, idle_spin_us))
            .unwrap_or_else(|error| panic!("cannot start the hop stage's worker: {error}"));
        Self { shared, worker: Some(worker) }
    }

    /// Pushes one item to the worker and wakes it if it is parked; whether it woke it.
    pub fn hop(&self, item: u64) -> bool {
        self.shared.queue.push(item);
        self.shared.park.unpark()
    }

    /// Items the worker has taken so far.
    pub fn received(&self) -> u64 {
        // Acquire: pairs with the worker's Release increment.
        self.shared.received.load(Ordering::Acquire)
    }

    /// Spins until the worker has taken `count` items in all.
    pub fn wait_received(&self, count: u64) {
        while self.received() < count {
            std::hint::spin_loop();
        }
    }

    /// Spins (yielding) until the worker is parked, or about to park.
    pub fn wait_parked(&self) {
        while !self.shared.park.is_parked() {
            std::thread::yield_now();
        }
    }
}

impl Drop for HopStage {
    fn drop(&mut self) {
        // SeqCst: pairs with the worker's shutdown load after `prepare_park`, as in
        // `keyed_mailbox.rs`.
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.park.unpark();
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// The worker loop of `keyed_mailbox.rs`, with a counter where a turn would run.
fn hop_worker(shared: &HopShared, idle_spin_us: u32) {
    shared.park.register();
    let mut idle = IdleSpin::new(idle_spin_us);
    loop {
        if shared.queue.pop().is_some() {
            idle.reset();
            // Release: pairs with the Acquire load in `HopStage::received`.
            shared.received.fetch_add(1, Ordering::Release);
            continue;
        }
        if idle.spin() {
            continue;
        }
        shared.park.prepare_park();
        if !shared.queue.is_empty() {
            shared.park.cancel_park();
            continue;
        }
        if shared.shutdown.load(Ordering::SeqCst) {
            shared.park.cancel_park();
            return;
        }
        idle.park(&shared.park);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_returns_every_credit() {
        let stage = AdmissionStage::new(4);
        for _ in 0..100 {
            stage.admit_and_finish();
        }
        assert_eq!(stage.window.in_flight(), 0);
    }

    #[test]
    fn activation_leaves_the_map_empty() {
        let stage = ActivationStage::default();
        for id in 0..100 {
            stage.activate_and_retire(Key::new(0, id));
            assert_eq!(stage.set.live(), 0);
        }
    }

    #[test]
    fn hops_reach_a_parked_worker() {
        let stage = HopStage::start(0);
        let mut woke = 0;
        for item in 1..=20 {
            stage.wait_parked();
            woke += u64::from(stage.hop(item));
            stage.wait_received(item);
        }
        // A worker seen parking may still be between its announcement and its sleep; the
        // hop then cancels the park without a wake-up, but most hops wake it.
        assert!(woke > 0, "no hop woke the parked worker");
        assert_eq!(stage.received(), 20);
    }
}
