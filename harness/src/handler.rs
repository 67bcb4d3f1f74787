//! The benchmark handler: interprets each message's [`Job`] and reports to the recorder.

use std::sync::Arc;
use std::time::{Duration, Instant};

use strategies::{Handler, Job, Message, Outcome};

use crate::recorder::Recorder;
use crate::timer::Timer;

/// Burns about `ns` nanoseconds of CPU on the calling thread.
pub fn spin(ns: u64) {
    if ns == 0 {
        return;
    }
    let until = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// Runs jobs: spins for CPU work, waits on the shared [`Timer`] for pending work.
#[derive(Debug, Clone)]
pub struct BenchHandler {
    recorder: Arc<Recorder>,
    timer: Timer,
}

impl BenchHandler {
    /// A handler that records to `recorder` and waits on `timer`.
    pub fn new(recorder: Arc<Recorder>, timer: Timer) -> Self {
        Self { recorder, timer }
    }
}

impl Handler for BenchHandler {
    fn handle(&self, message: &Message) -> Outcome {
        let token = self.recorder.start(message);
        match message.job {
            Job::Noop | Job::Custom(_) => {}
            Job::Spin { ns } => spin(u64::from(ns)),
            Job::Wait { ns } => {
                let (recorder, message) = (Arc::clone(&self.recorder), *message);
                let sleep = self.timer.sleep(Duration::from_nanos(u64::from(ns)));
                return Outcome::Pending(Box::pin(async move {
                    sleep.await;
                    recorder.end(token, &message);
                }));
            }
            Job::Retry { retries, backoff_ns, spin_ns } => {
                spin(u64::from(spin_ns));
                let (recorder, timer, message) =
                    (Arc::clone(&self.recorder), self.timer.clone(), *message);
                return Outcome::Pending(Box::pin(async move {
                    for attempt in 0..u32::from(retries) {
                        // The version check failed: back off, then try again.
                        timer.sleep(Duration::from_nanos(u64::from(backoff_ns) << attempt)).await;
                        spin(u64::from(spin_ns));
                    }
                    recorder.end(token, &message);
                }));
            }
            Job::Panic => panic!("handler failure requested by the workload"),
        }
        self.recorder.end(token, message);
        Outcome::Done
    }
}
