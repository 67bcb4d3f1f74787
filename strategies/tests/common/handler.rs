//! The test handler: runs each message's [`Job`] (spins, timed waits, retries, planned
//! panics, and the gate and chain codes of `messages.rs`) and records every start and end.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Once, OnceLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use strategies::testkit::{OrderLog, Sleep, Timer};
use strategies::{Handler, Job, Message, Outcome};

use super::fixture::Submissions;
use super::gates::Gates;
use super::messages::{
    chain_link, BLOCK_ON_GATE, CHAIN, KIND_MASK, PANIC_ON_FIRST_POLL, PANIC_WHEN_POLLED,
    PEND_ON_GATE, YIELD_FOREVER,
};

/// How long a chain step waits before its poll submits the next message: long enough that
/// the submission comes from a later poll, after a wake.
const CHAIN_STEP_WAIT: Duration = Duration::from_micros(20);

/// A sleep on the timer the whole test binary shares: what `Job::Wait`, `Job::Retry` and
/// the steps that wait a moment wait on.
fn sleep(duration: Duration) -> Sleep {
    static TIMER: OnceLock<Timer> = OnceLock::new();
    TIMER.get_or_init(Timer::new).sleep(duration)
}

/// The payload of a panic a test asked for; the panic hook keeps it quiet.
#[derive(Debug)]
pub struct PlannedPanic;

fn planned_panic() -> ! {
    std::panic::panic_any(PlannedPanic)
}

/// Keeps planned panics out of the test output; every other panic is printed as usual.
pub fn quiet_planned_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<PlannedPanic>() {
                default(info);
            }
        }));
    });
}

/// Burns about `ns` nanoseconds of CPU.
fn spin(ns: u32) {
    let until = Instant::now() + Duration::from_nanos(u64::from(ns));
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

fn pending(step: impl Future<Output = ()> + Send + 'static) -> Outcome {
    Outcome::Pending(Box::pin(step))
}

/// A step that never completes but is always ready to be polled again: every poll wakes
/// its own waker before returning `Pending`.
struct YieldForever;

impl Future for YieldForever {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Runs the jobs of the test messages and records every start and end.
#[derive(Debug)]
pub struct TestHandler {
    pub(super) log: Arc<OrderLog>,
    pub(super) gates: Arc<Gates>,
    /// Where chain jobs submit their next message: the strategy this handler runs in.
    pub(super) submissions: Arc<Submissions>,
}

impl Handler for TestHandler {
    fn handle(&self, message: &Message) -> Outcome {
        self.log.start(message);
        let message = *message;
        let log = Arc::clone(&self.log);
        match message.job {
            Job::Noop => {}
            // The suite keeps no aggregate state: a touch is its CPU time.
            Job::Spin { ns } | Job::Touch { spin_ns: ns, .. } => spin(ns),
            Job::Block { ns } => std::thread::sleep(Duration::from_nanos(u64::from(ns))),
            Job::Wait { ns } => {
                return pending(async move {
                    sleep(Duration::from_nanos(u64::from(ns))).await;
                    log.end(&message, false);
                });
            }
            Job::Retry { retries, backoff_ns, spin_ns } => {
                spin(spin_ns); // the first attempt
                if retries > 0 {
                    return pending(async move {
                        let mut backoff = Duration::from_nanos(u64::from(backoff_ns));
                        for _ in 0..retries {
                            sleep(backoff).await;
                            spin(spin_ns);
                            backoff *= 2;
                        }
                        log.end(&message, false);
                    });
                }
            }
            Job::Panic => {
                log.end(&message, true);
                planned_panic();
            }
            Job::Custom(code) => {
                let gate = code & !KIND_MASK;
                match code & KIND_MASK {
                    BLOCK_ON_GATE => self.gates.block(gate),
                    PEND_ON_GATE => {
                        let opened = self.gates.opened(gate);
                        return pending(async move {
                            opened.await;
                            log.end(&message, false);
                        });
                    }
                    PANIC_WHEN_POLLED => {
                        return pending(async move {
                            sleep(Duration::from_millis(1)).await;
                            log.end(&message, true);
                            planned_panic();
                        });
                    }
                    PANIC_ON_FIRST_POLL => {
                        return pending(async move {
                            log.end(&message, true);
                            planned_panic();
                        });
                    }
                    YIELD_FOREVER => return pending(YieldForever),
                    CHAIN => {
                        let link = chain_link(code);
                        let next = (message.seq + 1 < link.length)
                            .then_some(Message { seq: message.seq + 1, ..message });
                        if link.from_step {
                            let submissions = Arc::clone(&self.submissions);
                            return pending(async move {
                                sleep(CHAIN_STEP_WAIT).await;
                                if let Some(next) = next {
                                    let _ = submissions.submit(next); // recorded either way
                                }
                                log.end(&message, false);
                            });
                        }
                        if let Some(next) = next {
                            let _ = self.submissions.submit(next); // recorded either way
                        }
                        if link.gate != 0 {
                            let opened = self.gates.opened(link.gate);
                            return pending(async move {
                                opened.await;
                                log.end(&message, false);
                            });
                        }
                    }
                    _ => {} // a plain custom value: nothing to do
                }
            }
        }
        self.log.end(&message, false);
        Outcome::Done
    }
}
