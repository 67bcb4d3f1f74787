//! The one harness timer that completes every *pending* step, the same for every
//! strategy: a thread with a deadline heap, sleeping on a condvar with a nanosecond
//! timeout (sub-millisecond precision on Linux).

use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

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

struct Shared {
    queue: Mutex<Queue>,
    changed: Condvar,
}

/// The harness timer. Cloning shares the thread; it stops when the last clone is dropped.
#[derive(Clone)]
pub struct Timer {
    shared: Arc<Shared>,
    _thread: Arc<TimerThread>,
}

impl std::fmt::Debug for Timer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timer").finish_non_exhaustive()
    }
}

/// Joins the timer thread when the last `Timer` goes.
struct TimerThread {
    shared: Arc<Shared>,
    handle: Option<JoinHandle<()>>,
}

impl Drop for TimerThread {
    fn drop(&mut self) {
        lock(&self.shared.queue).shutdown = true;
        self.shared.changed.notify_all();
        if let Some(handle) = self.handle.take() {
            let _ = handle.join();
        }
    }
}

fn lock(queue: &Mutex<Queue>) -> std::sync::MutexGuard<'_, Queue> {
    queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Timer {
    /// Starts the timer thread (`harness-timer`).
    pub fn start() -> Self {
        let shared =
            Arc::new(Shared { queue: Mutex::new(Queue::default()), changed: Condvar::new() });
        let for_thread = Arc::clone(&shared);
        let handle = std::thread::Builder::new()
            .name("harness-timer".into())
            .spawn(move || run(&for_thread))
            .expect("cannot start the harness timer thread");
        let thread = Arc::new(TimerThread { shared: Arc::clone(&shared), handle: Some(handle) });
        Self { shared, _thread: thread }
    }

    /// A future that completes `after` from now.
    pub fn sleep(&self, after: Duration) -> Sleep {
        Sleep { deadline: Instant::now() + after, shared: Arc::clone(&self.shared), armed: false }
    }
}

fn register(shared: &Shared, deadline: Instant, waker: Waker) {
    let mut queue = lock(&shared.queue);
    let earliest = queue.entries.peek().is_none_or(|head| deadline < head.deadline);
    queue.entries.push(Entry { deadline, waker });
    drop(queue);
    if earliest {
        shared.changed.notify_one();
    }
}

fn run(shared: &Shared) {
    let mut due = Vec::new();
    let mut queue = lock(&shared.queue);
    loop {
        if queue.shutdown {
            return;
        }
        let now = Instant::now();
        while queue.entries.peek().is_some_and(|head| head.deadline <= now) {
            due.extend(queue.entries.pop().map(|entry| entry.waker));
        }
        if !due.is_empty() {
            drop(queue);
            due.drain(..).for_each(Waker::wake);
            queue = lock(&shared.queue);
            continue;
        }
        queue = match queue.entries.peek().map(|head| head.deadline - now) {
            Some(timeout) => shared
                .changed
                .wait_timeout(queue, timeout)
                .map_or_else(|e| e.into_inner().0, |r| r.0),
            None => shared.changed.wait(queue).unwrap_or_else(|poisoned| poisoned.into_inner()),
        };
    }
}

/// Completes at its deadline; see [`Timer::sleep`].
pub struct Sleep {
    deadline: Instant,
    shared: Arc<Shared>,
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
            register(&self.shared, self.deadline, cx.waker().clone());
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
    }
}
