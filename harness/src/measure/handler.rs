//! The benchmark handler: interprets each message's [`Job`] and reports to the recorder.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once};
use std::time::{Duration, Instant};

use strategies::{Handler, Job, Message, Outcome};

use crate::measure::recorder::Recorder;
use crate::measure::timer::Timer;
use crate::watch::Watch;
use crate::workload::STATE_LINE_BYTES;

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

/// The payload of a panic a workload asked for (`Job::Panic`); see [`quiet_workload_panics`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkloadPanic;

/// Panics with [`WorkloadPanic`], on purpose.
pub fn workload_panic() -> ! {
    std::panic::panic_any(WorkloadPanic)
}

/// Keeps the panics a workload asks for out of stderr (a soak injects thousands); every
/// other panic is printed by the hook that was in place. Installed once per process.
pub fn quiet_workload_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<WorkloadPanic>() {
                previous(info);
            }
        }));
    });
}

/// The state of `stateful`'s aggregates: a block of `bytes` per key, in one allocation,
/// written once when made so that no run pays its page faults. A [`Job::Touch`] reads and
/// writes one word of each of its lines (relaxed atomics: the unordered control may run two
/// messages of a key at once, and that must not be a data race).
#[derive(Debug)]
pub struct AggregateState {
    words_per_key: usize,
    words: Box<[AtomicU64]>,
}

impl AggregateState {
    /// `keys` blocks of `bytes` (a whole number of cache lines).
    pub fn new(keys: usize, bytes: usize) -> Self {
        let words_per_key = bytes.div_ceil(8).max(1);
        let words = (0..keys * words_per_key).map(|_| AtomicU64::new(0)).collect();
        Self { words_per_key, words }
    }

    /// Reads and writes the first word of each of the first `lines` lines of `key`'s block.
    pub fn touch(&self, key: u64, lines: u32) {
        let block = &self.words[key as usize * self.words_per_key..][..self.words_per_key];
        for word in block.iter().step_by(STATE_LINE_BYTES / 8).take(lines as usize) {
            word.store(word.load(Ordering::Relaxed).wrapping_add(1), Ordering::Relaxed);
        }
    }
}

/// The completion hook of a [`BenchHandler`].
type Hook = Arc<dyn Fn(u64) + Send + Sync>;

/// Runs jobs: spins for CPU work, waits on the shared [`Timer`] for pending work.
#[derive(Clone)]
pub struct BenchHandler {
    recorder: Arc<Recorder>,
    timer: Timer,
    /// Hears the aggregate id of every message that ended (a completion-driven run).
    completions: Option<Hook>,
    /// The aggregates' state, where the workload has some (`stateful`).
    state: Option<Arc<AggregateState>>,
    /// Counts every message that ends, for the watchdog that supervises the cell.
    watch: Option<Watch>,
}

impl std::fmt::Debug for BenchHandler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BenchHandler")
            .field("recorder", &self.recorder)
            .field("timer", &self.timer)
            .field("completions", &self.completions.is_some())
            .field("watch", &self.watch.is_some())
            .finish()
    }
}

impl BenchHandler {
    /// A handler that records to `recorder` and waits on `timer`.
    pub fn new(recorder: Arc<Recorder>, timer: Timer) -> Self {
        Self { recorder, timer, completions: None, state: None, watch: None }
    }

    /// The same handler, counting every message that ends in `watch` (the cell's progress).
    pub fn with_watch(self, watch: Watch) -> Self {
        Self { watch: Some(watch), ..self }
    }

    /// The same handler, keeping `state` for the messages' `Job::Touch`.
    pub fn with_state(self, state: Arc<AggregateState>) -> Self {
        Self { state: Some(state), ..self }
    }

    /// The same handler, telling `completions` the aggregate id of every message that
    /// ended, right after the recorder has its end (a sender that waits for its message).
    pub fn with_completions(self, completions: Hook) -> Self {
        Self { completions: Some(completions), ..self }
    }

    fn ended(
        recorder: &Recorder,
        token: Option<usize>,
        message: &Message,
        hook: Option<&Hook>,
        watch: Option<&Watch>,
    ) {
        recorder.end(token, message);
        if let Some(watch) = watch {
            watch.advance();
        }
        if let Some(hook) = hook {
            hook(message.key.aggregate_id);
        }
    }
}

/// A `Job::Retry`'s attempts after its first, failed, one: each backs off (the first
/// backoff `backoff_ns`, each later one twice the one before), then spins `spin_ns`.
async fn retry(timer: &Timer, retries: u8, backoff_ns: u32, spin_ns: u32) {
    for attempt in 0..u32::from(retries) {
        // The version check failed: back off, then try again.
        timer.sleep(Duration::from_nanos(u64::from(backoff_ns) << attempt)).await;
        spin(u64::from(spin_ns));
    }
}

impl Handler for BenchHandler {
    fn handle(&self, message: &Message) -> Outcome {
        let token = self.recorder.start(message);
        match message.job {
            Job::Noop | Job::Custom(_) => {}
            Job::Spin { ns } => spin(u64::from(ns)),
            Job::Touch { lines, spin_ns } => {
                if let Some(state) = &self.state {
                    state.touch(message.key.aggregate_id, lines);
                }
                spin(u64::from(spin_ns));
            }
            // A blocking call: the thread sleeps (and may oversleep); the recorder's start
            // and end give the actual service time.
            Job::Block { ns } => std::thread::sleep(Duration::from_nanos(u64::from(ns))),
            Job::Wait { ns } => {
                let (recorder, message) = (Arc::clone(&self.recorder), *message);
                let (hook, watch) = (self.completions.clone(), self.watch.clone());
                let sleep = self.timer.sleep(Duration::from_nanos(u64::from(ns)));
                return Outcome::Pending(Box::pin(async move {
                    sleep.await;
                    Self::ended(&recorder, token, &message, hook.as_ref(), watch.as_ref());
                }));
            }
            Job::Retry { retries, backoff_ns, spin_ns } => {
                spin(u64::from(spin_ns));
                let (recorder, timer, message) =
                    (Arc::clone(&self.recorder), self.timer.clone(), *message);
                let (hook, watch) = (self.completions.clone(), self.watch.clone());
                return Outcome::Pending(Box::pin(async move {
                    retry(&timer, retries, backoff_ns, spin_ns).await;
                    Self::ended(&recorder, token, &message, hook.as_ref(), watch.as_ref());
                }));
            }
            Job::Panic => {
                // The message ends as it fails: the recorder must not see its key as still
                // running when the key's next message starts (that would be an overlap).
                self.recorder.end(token, message);
                if let Some(watch) = &self.watch {
                    watch.advance();
                }
                workload_panic();
            }
        }
        let (hook, watch) = (self.completions.as_ref(), self.watch.as_ref());
        Self::ended(&self.recorder, token, message, hook, watch);
        Outcome::Done
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::recorder::Clock;
    use strategies::Key;

    #[test]
    fn a_panicking_message_ends_so_the_next_one_of_its_key_is_clean() {
        quiet_workload_panics();
        let key = Key::new(0, 0);
        let messages: Vec<Message> = [Job::Panic, Job::Noop]
            .into_iter()
            .zip(0..)
            .map(|(job, seq)| Message { key, seq, intended_ns: 0, job })
            .collect();
        let recorder = Arc::new(Recorder::new(&messages, 1, Clock::start()));
        let handler = BenchHandler::new(Arc::clone(&recorder), Timer::start());
        let call = std::panic::AssertUnwindSafe(|| handler.handle(&messages[0]));
        let panic = std::panic::catch_unwind(call).unwrap_err();
        assert!(panic.is::<WorkloadPanic>(), "the payload says the workload asked for it");
        assert!(matches!(handler.handle(&messages[1]), Outcome::Done));
        assert!(recorder.correctness(0).is_clean(), "{:?}", recorder.correctness(0));
    }
}
