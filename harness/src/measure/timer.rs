//! The harness timer that completes every *pending* step, the same for every strategy:
//! one or more threads (shards), each with a deadline heap, sleeping on a condvar with a
//! nanosecond timeout (sub-millisecond precision on Linux). Sleeps are spread over the
//! shards round-robin.
//!
//! The timer measures its own lateness: for every wake-up, the time from the deadline to
//! the moment the waker is called. A late timer delays every waiting message of every
//! strategy alike, and a waker that does work of its own (a strategy that finishes the
//! woken message on the completing thread) makes the next wake-ups later still; the
//! runner reports the lateness of each run so that a reader can tell.

use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use parking_lot::{Condvar, Mutex};

use super::histograms::new_histogram;

/// A waker due at `deadline` (earliest first in the heap).
struct Entry {
    deadline: Instant,
    waker: Waker,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.deadline == other.deadline
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.deadline.cmp(&self.deadline) // reversed: BinaryHeap is a max-heap
    }
}

#[derive(Default)]
struct Queue {
    entries: BinaryHeap<Entry>,
    shutdown: bool,
}

/// One timer thread's state.
struct Shard {
    queue: Mutex<Queue>,
    changed: Condvar,
    /// Deadline to waker call, in nanoseconds, of every wake-up since the last reset.
    lateness: Mutex<Histogram<u64>>,
}

/// The harness timer. Cloning shares its threads; they stop when the last clone is dropped.
#[derive(Clone)]
pub struct Timer {
    shards: Arc<[Arc<Shard>]>,
    /// The shard of the next sleep.
    next: Arc<AtomicUsize>,
    _threads: Arc<TimerThreads>,
}

impl std::fmt::Debug for Timer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timer").field("threads", &self.shards.len()).finish_non_exhaustive()
    }
}

/// Joins the timer threads when the last `Timer` goes.
struct TimerThreads {
    shards: Arc<[Arc<Shard>]>,
    handles: Vec<JoinHandle<()>>,
}

impl Drop for TimerThreads {
    fn drop(&mut self) {
        for shard in self.shards.iter() {
            shard.queue.lock().shutdown = true;
            shard.changed.notify_all();
        }
        // The last handle may be dropped on a timer thread itself (a step that owned a
        // clone ended there): that thread is not joined, it sees `shutdown` and returns.
        let me = std::thread::current().id();
        for handle in self.handles.drain(..) {
            if handle.thread().id() != me {
                let _ = handle.join();
            }
        }
    }
}

/// The default number of timer threads.
pub const DEFAULT_TIMER_THREADS: usize = 1;
/// The most timer threads.
pub const MAX_TIMER_THREADS: usize = 64;

impl Timer {
    /// Starts one timer thread (`harness-timer-0`).
    pub fn start() -> Self {
        Self::with_threads(DEFAULT_TIMER_THREADS)
    }

    /// Starts `threads` timer threads (at least one, at most [`MAX_TIMER_THREADS`]).
    pub fn with_threads(threads: usize) -> Self {
        let shards: Arc<[Arc<Shard>]> = (0..threads.clamp(1, MAX_TIMER_THREADS))
            .map(|_| {
                Arc::new(Shard {
                    queue: Mutex::new(Queue::default()),
                    changed: Condvar::new(),
                    lateness: Mutex::new(new_histogram()),
                })
            })
            .collect();
        let handles = shards
            .iter()
            .enumerate()
            .map(|(index, shard)| {
                let shard = Arc::clone(shard);
                std::thread::Builder::new()
                    .name(format!("harness-timer-{index}"))
                    .spawn(move || {
                        let _counted = super::interference::register_harness_thread();
                        run(&shard);
                    })
                    .expect("cannot start a harness timer thread")
            })
            .collect();
        let threads = Arc::new(TimerThreads { shards: Arc::clone(&shards), handles });
        Self { shards, next: Arc::new(AtomicUsize::new(0)), _threads: threads }
    }

    /// How many timer threads complete the sleeps.
    pub fn threads(&self) -> usize {
        self.shards.len()
    }

    /// A future that completes `after` from now.
    pub fn sleep(&self, after: Duration) -> Sleep {
        // Relaxed: the counter only spreads sleeps over the shards.
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.shards.len();
        Sleep {
            deadline: Instant::now() + after,
            shard: Arc::clone(&self.shards[index]),
            armed: false,
        }
    }

    /// Forgets the lateness recorded so far.
    pub fn reset_lateness(&self) {
        for shard in self.shards.iter() {
            shard.lateness.lock().reset();
        }
    }

    /// The lateness of every wake-up since the last reset, all shards merged, in
    /// nanoseconds.
    pub fn lateness(&self) -> Histogram<u64> {
        let mut merged = new_histogram();
        for shard in self.shards.iter() {
            // Same bounds everywhere, so adding cannot fail.
            let _ = merged.add(&*shard.lateness.lock());
        }
        merged
    }
}

fn register(shard: &Shard, deadline: Instant, waker: Waker) {
    let mut queue = shard.queue.lock();
    let earliest = queue.entries.peek().is_none_or(|head| deadline < head.deadline);
    queue.entries.push(Entry { deadline, waker });
    drop(queue);
    if earliest {
        shard.changed.notify_one();
    }
}

/// Asks the kernel to wake this thread at its deadlines without the default timer slack
/// (50 us on Linux, by which every sleep of a normal thread may be extended).
fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument (the slack in nanoseconds) and
    // only changes a property of the calling thread; a failure leaves the default.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) };
}

fn run(shard: &Shard) {
    tighten_timer_slack();
    let mut due = Vec::new();
    let mut late = Vec::new();
    let mut queue = shard.queue.lock();
    loop {
        if queue.shutdown {
            return;
        }
        let now = Instant::now();
        while queue.entries.peek().is_some_and(|head| head.deadline <= now) {
            due.extend(queue.entries.pop());
        }
        if !due.is_empty() {
            drop(queue);
            for entry in due.drain(..) {
                // Lateness up to the waker call: a slow waker delays the ones after it.
                late.push(entry.deadline.elapsed().as_nanos() as u64);
                entry.waker.wake();
            }
            // One lock per batch of wake-ups, not per wake-up.
            let mut lateness = shard.lateness.lock();
            for late_ns in late.drain(..) {
                lateness.saturating_record(late_ns.max(1));
            }
            drop(lateness);
            queue = shard.queue.lock();
            continue;
        }
        match queue.entries.peek().map(|head| head.deadline - now) {
            Some(timeout) => {
                shard.changed.wait_for(&mut queue, timeout);
            }
            None => shard.changed.wait(&mut queue),
        }
    }
}

/// Completes at its deadline; see [`Timer::sleep`].
pub struct Sleep {
    deadline: Instant,
    shard: Arc<Shard>,
    armed: bool,
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep").field("deadline", &self.deadline).finish_non_exhaustive()
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        if !self.armed {
            self.armed = true;
            register(&self.shard, self.deadline, cx.waker().clone());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::Wake;

    struct Flag(AtomicBool, std::thread::Thread);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            // SeqCst: pairs with the load in the test's wait loop.
            self.0.store(true, Ordering::SeqCst);
            self.1.unpark();
        }
    }

    /// Waits (10 s at most) until the timer has recorded `count` wake-ups: it records a
    /// batch just after the batch's wakers ran.
    fn recorded(timer: &Timer, count: u64) {
        let started = Instant::now();
        while timer.lateness().len() < count && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn sleeps_at_least_the_duration_and_wakes() {
        let timer = Timer::start();
        let flag = Arc::new(Flag(AtomicBool::new(false), std::thread::current()));
        let waker = Waker::from(Arc::clone(&flag));
        let started = Instant::now();
        let mut sleep = timer.sleep(Duration::from_millis(5));
        assert!(Pin::new(&mut sleep).poll(&mut Context::from_waker(&waker)).is_pending());
        // SeqCst: pairs with the store in `Flag::wake`.
        while !flag.0.load(Ordering::SeqCst) {
            std::thread::park_timeout(Duration::from_secs(5));
            assert!(started.elapsed() < Duration::from_secs(10), "timer never fired");
        }
        assert!(started.elapsed() >= Duration::from_millis(5));
        assert!(Pin::new(&mut sleep).poll(&mut Context::from_waker(&waker)).is_ready());
        // The wake-up was recorded (just after its waker ran), and a reset forgets it.
        recorded(&timer, 1);
        assert_eq!(timer.lateness().len(), 1);
        timer.reset_lateness();
        assert_eq!(timer.lateness().len(), 0);
    }

    /// Holds the last clone of a timer and drops it when woken, on the timer's thread.
    struct LastClone(Mutex<Option<Timer>>, AtomicBool, std::thread::Thread);
    impl Wake for LastClone {
        fn wake(self: Arc<Self>) {
            drop(self.0.lock().take());
            // SeqCst: pairs with the load in the test's wait loop; set only once the drop
            // returned.
            self.1.store(true, Ordering::SeqCst);
            self.2.unpark();
        }
    }

    #[test]
    fn the_last_clone_may_be_dropped_on_a_timer_thread() {
        let timer = Timer::start();
        let mut sleep = timer.sleep(Duration::from_millis(2));
        let last = Arc::new(LastClone(
            Mutex::new(Some(timer)),
            AtomicBool::new(false),
            std::thread::current(),
        ));
        let waker = Waker::from(Arc::clone(&last));
        assert!(Pin::new(&mut sleep).poll(&mut Context::from_waker(&waker)).is_pending());
        drop(waker);
        let started = Instant::now();
        // SeqCst: pairs with the store in `LastClone::wake`.
        while !last.1.load(Ordering::SeqCst) {
            std::thread::park_timeout(Duration::from_millis(50));
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "dropping the last clone on the timer's own thread did not return"
            );
        }
    }

    #[test]
    fn sleeps_spread_over_every_shard_and_all_complete() {
        let timer = Timer::with_threads(3);
        assert_eq!(timer.threads(), 3);
        let flags: Vec<_> = (0..9)
            .map(|_| Arc::new(Flag(AtomicBool::new(false), std::thread::current())))
            .collect();
        let mut sleeps: Vec<_> =
            (0..9).map(|i| timer.sleep(Duration::from_millis(2 * i + 2))).collect();
        let mut registered = 0;
        for (sleep, flag) in sleeps.iter_mut().zip(&flags) {
            let waker = Waker::from(Arc::clone(flag));
            if Pin::new(sleep).poll(&mut Context::from_waker(&waker)).is_ready() {
                Arc::clone(flag).wake(); // already due (a slow machine): nothing to wait for
            } else {
                registered += 1;
            }
        }
        let started = Instant::now();
        // SeqCst: pairs with the store in `Flag::wake`.
        while !flags.iter().all(|flag| flag.0.load(Ordering::SeqCst)) {
            std::thread::park_timeout(Duration::from_millis(50));
            assert!(started.elapsed() < Duration::from_secs(10), "a shard never fired");
        }
        recorded(&timer, registered);
        assert_eq!(timer.lateness().len(), registered);
    }
}
