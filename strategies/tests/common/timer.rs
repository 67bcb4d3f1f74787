//! The timer behind `Job::Wait` and `Job::Retry`: one process-wide thread that wakes
//! sleeping steps at their deadlines.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use super::lock;

/// What a sleeping step and the timer thread share.
#[derive(Debug, Default)]
struct Alarm {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

struct Entry {
    deadline: Instant,
    id: u64,
    alarm: Arc<Alarm>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.deadline, self.id) == (other.deadline, other.id)
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
        (self.deadline, self.id).cmp(&(other.deadline, other.id))
    }
}

/// One process-wide timer thread: a heap of deadlines, woken through a condvar.
struct Timer {
    heap: Mutex<BinaryHeap<Reverse<Entry>>>,
    changed: Condvar,
    next_id: AtomicU64,
}

impl Timer {
    fn get() -> &'static Timer {
        static TIMER: OnceLock<&'static Timer> = OnceLock::new();
        TIMER.get_or_init(|| {
            let timer: &'static Timer = Box::leak(Box::new(Timer {
                heap: Mutex::new(BinaryHeap::new()),
                changed: Condvar::new(),
                next_id: AtomicU64::new(0),
            }));
            thread::Builder::new()
                .name("test-timer".into())
                .spawn(move || timer.run())
                .expect("start the test timer thread");
            timer
        })
    }

    fn register(&self, deadline: Instant, alarm: Arc<Alarm>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.heap).push(Reverse(Entry { deadline, id, alarm }));
        self.changed.notify_one();
    }

    fn run(&self) {
        let mut heap = lock(&self.heap);
        loop {
            let now = Instant::now();
            let mut due = Vec::new();
            while heap.peek().is_some_and(|entry| entry.0.deadline <= now) {
                due.push(heap.pop().expect("peeked").0.alarm);
            }
            if !due.is_empty() {
                drop(heap);
                for alarm in due {
                    // SeqCst, then the waker lock: a poll that stored its waker after we
                    // took the slot sees `fired` when it looks again (see `Sleep::poll`).
                    alarm.fired.store(true, Ordering::SeqCst);
                    let waker = lock(&alarm.waker).take();
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                }
                heap = lock(&self.heap);
                continue;
            }
            heap = match heap.peek().map(|entry| entry.0.deadline) {
                Some(deadline) => {
                    self.changed
                        .wait_timeout(heap, deadline - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.changed.wait(heap).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}

/// A future that completes after a duration, woken by the timer thread.
pub(super) struct Sleep {
    deadline: Instant,
    alarm: Option<Arc<Alarm>>,
}

impl Sleep {
    pub(super) fn new(duration: Duration) -> Self {
        Self { deadline: Instant::now() + duration, alarm: None }
    }
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let alarm = match &self.alarm {
            Some(alarm) => Arc::clone(alarm),
            None => {
                if Instant::now() >= self.deadline {
                    return Poll::Ready(());
                }
                let alarm = Arc::new(Alarm::default());
                *lock(&alarm.waker) = Some(cx.waker().clone());
                Timer::get().register(self.deadline, Arc::clone(&alarm));
                self.alarm = Some(alarm);
                return Poll::Pending;
            }
        };
        if alarm.fired.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        *lock(&alarm.waker) = Some(cx.waker().clone());
        if alarm.fired.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}
