//! Event counts: what a strategy's machinery did, for the per-message cost breakdown.
//!
//! Counting is off until [`Strategy::count_events`](crate::Strategy::count_events) turns it
//! on, and then costs one relaxed read-modify-write per event on a counter line of the
//! counting thread's own shard (threads are spread over [`SHARDS`] cache-line-aligned
//! shards, so two threads rarely share a line). Off, an event costs one relaxed load of a
//! flag that only changes when counting is switched, and a predictable branch. The harness
//! counts on a repetition of its own, after the timed ones, so no timed figure carries the
//! counters.
//!
//! Each engine names the events it can see ([`EventSet`]); the others are reported as not
//! available (a library's internals: tokio's and rayon's parks and wake-ups, flume's).

// Plain `std` atomics even under loom: statistics, not part of any modelled protocol.
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use crate::Events;

/// What is counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// An unpark that woke a parked thread.
    Wakeup = 0,
    /// A worker that went to sleep (parked).
    Park = 1,
    /// A mailbox made for a key that had none (a map insert).
    Activation = 2,
    /// A mailbox removed from the map once empty.
    Retirement = 3,
    /// A unit of work handed to a queue that a thread takes from: a mailbox scheduled or
    /// requeued, a task spawned, a message or a resume sent to a lane.
    Hop = 4,
    /// An idle stretch that found work before its worker parked: by a look of its spin, or
    /// by the second look after `prepare_park`.
    SpinHit = 5,
    /// A mailbox a worker took from another worker's queue (`hybrid`'s take,
    /// `work-stealing`'s steal from another worker's deque).
    Take = 6,
    /// A worker that went to sleep (parked) while another worker's queue held a runnable
    /// mailbox it could not or did not take. For `work-stealing` the queues are the
    /// injector and the other deques, all looked at just before it parks, so only a push
    /// racing that look counts.
    ParkedWhileQueued = 7,
}

const KINDS: usize = 8;

/// A set of [`Event`]s, as a bit mask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EventSet(u8);

impl EventSet {
    /// Every event.
    pub(crate) const ALL: Self = Self(0b1111_1111);
    /// Every event but takes: worker threads that never run another worker's mailboxes.
    pub(crate) const NO_TAKES: Self = Self(Self::ALL.0 & !(1 << Event::Take as u8));
    /// None: an engine built outside this crate, whose events it cannot see.
    pub(crate) const NONE: Self = Self(0);
    /// What a mailbox set sees whatever runs its mailboxes.
    pub(crate) const MAILBOXES: Self =
        Self(1 << Event::Activation as u8 | 1 << Event::Retirement as u8 | 1 << Event::Hop as u8);
    /// Hand-offs only.
    pub(crate) const HOPS: Self = Self(1 << Event::Hop as u8);

    const fn contains(self, event: Event) -> bool {
        self.0 & (1 << event as u8) != 0
    }
}

/// Shards of counters; a thread counts on shard `its index % SHARDS`.
const SHARDS: usize = 16;

/// One shard: a line of its own (two, for the adjacent-line prefetcher).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard([AtomicU64; KINDS]);

/// Hands each thread a shard index, round-robin, on its first count.
static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

std::thread_local! {
    static SHARD: usize = NEXT_SHARD.fetch_add(1, Ordering::Relaxed) % SHARDS;
}

/// The counters of one strategy instance.
#[derive(Debug)]
pub(crate) struct EventCounter {
    on: AtomicBool,
    seen: EventSet,
    shards: Box<[Shard]>,
    /// The window's blocked-submitter total (`Window::blocked_ns`) when counting was turned
    /// on, and when it was turned off: the window keeps its own running total.
    waited_at_on: AtomicU64,
    waited_at_off: AtomicU64,
}

impl EventCounter {
    /// Counters for an engine that sees `seen`, off.
    pub(crate) fn new(seen: EventSet) -> Self {
        let shards = (0..SHARDS).map(|_| Shard::default()).collect();
        Self {
            on: AtomicBool::new(false),
            seen,
            shards,
            waited_at_on: AtomicU64::new(0),
            waited_at_off: AtomicU64::new(0),
        }
    }

    /// Whether counting is on: for a count that needs a look of its own (a look at other
    /// workers' queues), taken only while counting.
    #[inline]
    pub(crate) fn is_on(&self) -> bool {
        // Relaxed: as in `count`.
        self.on.load(Ordering::Relaxed)
    }

    /// Counts one `event` if counting is on.
    #[inline]
    pub(crate) fn count(&self, event: Event) {
        // Relaxed: a statistic; `set` is followed by the harness's own synchronisation
        // (the submissions it makes after it) before it matters.
        if self.on.load(Ordering::Relaxed) {
            self.add(event);
        }
    }

    #[inline(never)]
    fn add(&self, event: Event) {
        debug_assert!(self.seen.contains(event), "{event:?} counted by an engine that hides it");
        let shard = SHARD.with(|shard| *shard);
        self.shards[shard].0[event as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Turns counting on (from zero) or off (keeping the counts); `waited_ns` is the
    /// window's blocked-submitter total at that moment.
    pub(crate) fn set(&self, on: bool, waited_ns: u64) {
        if on {
            for shard in self.shards.iter() {
                for counter in &shard.0 {
                    counter.store(0, Ordering::Relaxed);
                }
            }
            self.waited_at_on.store(waited_ns, Ordering::Relaxed);
        } else {
            self.waited_at_off.store(waited_ns, Ordering::Relaxed);
        }
        self.on.store(on, Ordering::Relaxed);
    }

    /// The counts so far; `None` for what this engine does not see. `waited_ns` is the
    /// window's blocked-submitter total now; the time blocked while counting is taken
    /// from it (visible to every engine: the window is the executor's).
    pub(crate) fn snapshot(&self, waited_ns: u64) -> Events {
        let end = if self.is_on() { waited_ns } else { self.waited_at_off.load(Ordering::Relaxed) };
        let window_wait_ns = end.saturating_sub(self.waited_at_on.load(Ordering::Relaxed));
        let total = |event: Event| {
            self.seen.contains(event).then(|| {
                self.shards
                    .iter()
                    .map(|shard| shard.0[event as usize].load(Ordering::Relaxed))
                    .sum()
            })
        };
        Events {
            wakeups: total(Event::Wakeup),
            parks: total(Event::Park),
            activations: total(Event::Activation),
            retirements: total(Event::Retirement),
            hops: total(Event::Hop),
            spin_hits: total(Event::SpinHit),
            takes: total(Event::Take),
            parked_while_queued: total(Event::ParkedWhileQueued),
            window_wait_ns: Some(window_wait_ns),
        }
    }
}
