//! The timer that completes pending steps' sleeps from outside the executor.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use super::lock;

/// A timer: a thread, started with the first sleep, that wakes sleeping steps at their
/// deadlines from outside the executor, as real I/O does. `conformance::check` gives each
/// check a timer of its own, stopped when the check finishes (a check past its deadline
/// leaves it running for the strategy it left behind), so that an executor that blocks
/// inside a waker stalls only its own check; a test binary may share one.
#[derive(Debug)]
pub struct Timer {
    inner: Arc<TimerInner>,
}

#[derive(Debug)]
struct TimerInner {
    state: Mutex<TimerState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct TimerState {
    /// Deadlines in order; the `u64` breaks ties.
    alarms: BTreeMap<(Instant, u64), Arc<Alarm>>,
    next_id: u64,
    stopped: bool,
    started: bool,
}

/// What a sleeping step and the timer thread share.
#[derive(Debug, Default)]
struct Alarm {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Timer {
    /// A timer whose thread starts with its first sleep.
    pub fn new() -> Self {
        let inner = TimerInner { state: Mutex::default(), changed: Condvar::new() };
        Self { inner: Arc::new(inner) }
    }

    /// A future that completes `duration` from now.
    pub fn sleep(&self, duration: Duration) -> Sleep {
        Sleep { timer: Arc::clone(&self.inner), deadline: Instant::now() + duration, alarm: None }
    }

    /// Stops its thread; sleeps not yet due never complete.
    pub fn stop(&self) {
        let mut state = lock(&self.inner.state);
        state.stopped = true;
        state.alarms.clear();
        drop(state);
        self.inner.changed.notify_all();
    }
}

impl Default for Timer {
    fn default() -> Self {
        Self::new()
    }
}

impl TimerInner {
    fn register(self: &Arc<Self>, deadline: Instant, alarm: Arc<Alarm>) {
        let mut state = lock(&self.state);
        if state.stopped {
            return;
        }
        let id = state.next_id;
        state.next_id += 1;
        state.alarms.insert((deadline, id), alarm);
        if !state.started {
            state.started = true;
            let timer = Arc::clone(self);
            let spawned =
                thread::Builder::new().name("testkit-timer".to_owned()).spawn(move || timer.run());
            if spawned.is_err() {
                state.started = false;
            }
        }
        drop(state);
        self.changed.notify_all();
    }

    fn run(&self) {
        let mut state = lock(&self.state);
        loop {
            if state.stopped {
                return;
            }
            let now = Instant::now();
            let mut due = Vec::new();
            while let Some(entry) = state.alarms.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                due.push(entry.remove());
            }
            if !due.is_empty() {
                drop(state);
                // Woken without the timer's lock: a strategy may poll the step in `wake`.
                for alarm in due {
                    alarm.fired.store(true, Ordering::SeqCst);
                    let waker = lock(&alarm.waker).take();
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                }
                state = lock(&self.state);
                continue;
            }
            state = match state.alarms.keys().next().map(|&(deadline, _)| deadline) {
                Some(deadline) => {
                    self.changed
                        .wait_timeout(state, deadline - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.changed.wait(state).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}

/// A future that completes at its deadline, woken by the timer thread.
#[derive(Debug)]
pub struct Sleep {
    timer: Arc<TimerInner>,
    deadline: Instant,
    alarm: Option<Arc<Alarm>>,
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
                self.timer.register(self.deadline, Arc::clone(&alarm));
                self.alarm = Some(alarm);
                return Poll::Pending;
            }
        };
        if alarm.fired.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        *lock(&alarm.waker) = Some(cx.waker().clone());
        // The timer sets `fired` before it takes the waker: a poll that stored its waker
        // after the take sees `fired` here.
        if alarm.fired.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}
