//! What a mailbox strategy allocates per wait: nothing, once warm.
//!
//! A binary of its own, because it counts allocations with a global allocator (one per
//! binary): each thread counts its own allocations, so a test reads what one thread
//! allocated between two points, whatever the other threads do meanwhile.
//!
//! A wait here is one pending step, polled once by the strategy right after its handler
//! returned (on the worker) and once more after its waker fires (on the waking thread, the
//! test's, in the strategies whose waker finishes the wait). The handler's own allocation
//! (the boxed step) is made before the count starts. Counted:
//! - on the worker, from the handler's return to the step's first poll: the strategy's
//!   waker for that poll;
//! - on the waking thread, across `Waker::wake`: in `keyed-mailbox` and `work-stealing`,
//!   the step's last poll, the message's end, the retirement of its mailbox and the
//!   return of its credit. (`tokio` and `rayon` spawn a task or job there: their
//!   library's allocation, not counted.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use strategies::{Family, Handler, Job, Key, Message, Outcome, StrategyConfig, StrategyId};

/// Counts every allocation (and reallocation) per thread, then defers to the system's.
struct Counting;

thread_local! {
    /// Allocations made by this thread so far.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: a thread being torn down may still allocate.
    let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
}

/// Allocations made by the calling thread so far.
fn allocations_here() -> u64 {
    ALLOCATIONS.try_with(Cell::get).unwrap_or(0)
}

// SAFETY: every method passes its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; counting touches only a const-initialised thread-local `Cell`
// without a destructor, which never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc`, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Waits before the measured ones: mailboxes, spares, map capacity and thread-local
/// buffers are allocated then.
const WARM_UP: u64 = 50;

/// Measured waits.
const MEASURED: u64 = 200;

/// What the test and the steps share.
#[derive(Default)]
struct Shared {
    /// The waker of the step waiting now.
    waker: Mutex<Option<Waker>>,
    /// Measuring has begun (after the warm-up).
    measuring: std::sync::atomic::AtomicBool,
    /// Allocations the worker made between a handler's return and its step's first poll,
    /// summed over the measured waits.
    before_first_poll: AtomicU64,
}

/// A step that is pending at its first poll and ready at the next.
struct Step {
    shared: Arc<Shared>,
    /// The worker's allocation count when the handler returned it.
    at_return: u64,
    polled: bool,
}

impl Future for Step {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.polled {
            return Poll::Ready(());
        }
        self.polled = true;
        let strategy_allocations = allocations_here() - self.at_return;
        // SeqCst (both): pair with the test's store of `measuring` and its final load.
        if self.shared.measuring.load(Ordering::SeqCst) {
            self.shared.before_first_poll.fetch_add(strategy_allocations, Ordering::SeqCst);
        }
        *self.shared.waker.lock().unwrap() = Some(cx.waker().clone());
        Poll::Pending
    }
}

struct WaitOnce(Arc<Shared>);

impl Handler for WaitOnce {
    fn handle(&self, _: &Message) -> Outcome {
        let mut step = Box::pin(Step { shared: Arc::clone(&self.0), at_return: 0, polled: false });
        step.at_return = allocations_here();
        Outcome::Pending(step)
    }
}

/// Waits until the current step has stored its waker, and takes it.
fn take_waker(shared: &Shared, id: StrategyId) -> Waker {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(waker) = shared.waker.lock().unwrap().take() {
            return waker;
        }
        assert!(Instant::now() < deadline, "{id}: the step was never polled");
        std::thread::yield_now();
    }
}

/// One wait at a time through `id` with one worker, over four keys (each wait is its
/// key's last message, so its mailbox retires): returns the allocations counted before
/// the first polls and across the wakes, over the measured waits.
fn allocations_per_wait(id: StrategyId) -> (u64, u64) {
    let shared = Arc::new(Shared::default());
    let handler = Arc::new(WaitOnce(Arc::clone(&shared)));
    let strategy = id.build(StrategyConfig::with_workers(1), handler).unwrap();
    let mut across_wakes = 0;
    for i in 0..WARM_UP + MEASURED {
        if i == WARM_UP {
            // SeqCst: pairs with the load in `Step::poll`.
            shared.measuring.store(true, Ordering::SeqCst);
        }
        let key = Key::new(0, i % 4);
        strategy.submit(Message { key, seq: i / 4, intended_ns: 0, job: Job::Noop }).unwrap();
        let waker = take_waker(&shared, id);
        let before = allocations_here();
        waker.wake();
        if i >= WARM_UP {
            across_wakes += allocations_here() - before;
        }
        strategy.drain();
    }
    strategy.close();
    assert_eq!(strategy.stats().live_mailboxes, Some(0), "{id}");
    // SeqCst: pairs with the increments in `Step::poll`.
    (shared.before_first_poll.load(Ordering::SeqCst), across_wakes)
}

/// No mailbox strategy allocates a waker for a step's poll, and in the strategies whose
/// waker finishes the wait, finishing it (last poll, end, retirement, credit) allocates
/// nothing either.
#[test]
fn a_wait_allocates_nothing_in_the_mailbox_strategies() {
    let finishing = [StrategyId::KeyedMailbox, StrategyId::Hybrid, StrategyId::WorkStealing];
    for &id in StrategyId::ALL.iter().filter(|id| id.descriptor().family == Family::Mailboxes) {
        let (before_first_poll, across_wakes) = allocations_per_wait(id);
        assert_eq!(
            before_first_poll, 0,
            "{id}: allocations for the first polls of {MEASURED} pending steps"
        );
        if finishing.contains(&id) {
            assert_eq!(across_wakes, 0, "{id}: allocations across {MEASURED} wakes");
        }
    }
}
