//! The mixed soak: rounds of hot and cold keys with waits and panics, each checked by the
//! recorder (see the parent module's docs).

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strategies::{Design, Handler, Job, Key, Message, Outcome, Strategy};

use super::PROGRESS_INTERVAL;
use super::{build, grouped, MixedOutcome, SoakConfig, SoakError};
use crate::measure::handler::{workload_panic, BenchHandler};
use crate::measure::recorder::{Clock, Recorder};
use crate::measure::timer::Timer;

/// Hot keys (ids `0..HOT_KEYS`) and their share of the messages, in percent.
const HOT_KEYS: usize = 4;
const HOT_SHARE_PCT: usize = 20;
/// Messages per cold key per round.
const COLD_PER_KEY: usize = 2;
/// Aggregate types (key id modulo this).
const TYPES: u64 = 4;
/// Per 1,000 messages: synchronous panics, panics inside a pending step (after a wait of
/// 10 to 200 us), pending waits (10 to 500 us) and CPU spins (1 to 20 us); the rest are
/// no-ops.
const PANIC_PER_MILLE: u32 = 10;
const PENDING_PANIC_PER_MILLE: u32 = 5;
const WAIT_PER_MILLE: u32 = 200;
const SPIN_PER_MILLE: u32 = 400;

/// The mixed soak's handler: the benchmark handler, plus `Job::Custom(us)`, which waits
/// `us` microseconds (pending) and then panics.
#[derive(Debug)]
struct SoakHandler {
    bench: BenchHandler,
    recorder: Arc<Recorder>,
    timer: Timer,
}

impl Handler for SoakHandler {
    fn handle(&self, message: &Message) -> Outcome {
        let Job::Custom(wait_us) = message.job else { return self.bench.handle(message) };
        let token = self.recorder.start(message);
        let (recorder, message) = (Arc::clone(&self.recorder), *message);
        let wait = self.timer.sleep(Duration::from_micros(u64::from(wait_us)));
        Outcome::Pending(Box::pin(async move {
            wait.await;
            // The message ends as it fails, like a synchronous `Job::Panic`.
            recorder.end(token, &message);
            workload_panic();
        }))
    }
}

/// Whether a mixed-soak job panics.
fn injects_panic(job: Job) -> bool {
    matches!(job, Job::Panic | Job::Custom(_))
}

/// One random job of the mix.
fn soak_job(rng: &mut impl Rng) -> Job {
    let roll = rng.gen_range(0..1_000);
    let mut below = PANIC_PER_MILLE;
    if roll < below {
        return Job::Panic;
    }
    below += PENDING_PANIC_PER_MILLE;
    if roll < below {
        return Job::Custom(rng.gen_range(10..=200));
    }
    below += WAIT_PER_MILLE;
    if roll < below {
        return Job::Wait { ns: rng.gen_range(10..=500) * 1_000 };
    }
    below += SPIN_PER_MILLE;
    if roll < below {
        return Job::Spin { ns: rng.gen_range(1..=20) * 1_000 };
    }
    Job::Noop
}

/// The keys of a round: every round sends each key the same number of messages (so one
/// recorder, reset between rounds, serves them all), in a new order with new jobs.
#[derive(Clone, Copy, Debug)]
struct Shape {
    hot_per_key: usize,
    cold_keys: usize,
}

impl Shape {
    fn new(round_messages: usize) -> Self {
        let hot_per_key = (round_messages * HOT_SHARE_PCT / 100 / HOT_KEYS).max(1);
        let cold = round_messages.saturating_sub(hot_per_key * HOT_KEYS) / COLD_PER_KEY;
        Self { hot_per_key, cold_keys: cold.max(1) }
    }

    fn keys(&self) -> usize {
        HOT_KEYS + self.cold_keys
    }

    fn messages_of(&self, id: usize) -> usize {
        if id < HOT_KEYS {
            self.hot_per_key
        } else {
            COLD_PER_KEY
        }
    }

    /// What submitter `part` (of two) sends in one round: the keys of its parity, each
    /// key's messages in sequence order, the keys interleaved at random.
    fn round(&self, part: usize, rng: &mut impl Rng) -> Vec<Message> {
        let mut order: Vec<usize> = (part..self.keys())
            .step_by(2)
            .flat_map(|id| std::iter::repeat_n(id, self.messages_of(id)))
            .collect();
        order.shuffle(rng);
        let mut next_seq = vec![0u64; self.keys()];
        order
            .into_iter()
            .map(|id| {
                let key = Key::new((id as u64 % TYPES) as u32, id as u64);
                let seq = next_seq[id];
                next_seq[id] += 1;
                Message { key, seq, intended_ns: 0, job: soak_job(rng) }
            })
            .collect()
    }

    /// Both submitters' messages of one round.
    fn both(&self, rng: &mut impl Rng) -> [Vec<Message>; 2] {
        [self.round(0, rng), self.round(1, rng)]
    }
}

/// Submits `messages` in order. An open strategy accepts every message; a refused one
/// shows as lost.
fn submit_all(strategy: &dyn Strategy, messages: &[Message]) {
    for &message in messages {
        let _ = strategy.submit(message);
    }
}

/// Runs the mixed soak of `strategy_id`.
pub(super) fn mixed_soak(
    strategy_id: Design,
    config: &SoakConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<MixedOutcome, SoakError> {
    let shape = Shape::new(config.round_messages);
    let mut rng = ChaCha8Rng::seed_from_u64(config.seed);
    let mut next_round = Some(shape.both(&mut rng));
    let first: Vec<Message> = next_round.iter().flatten().flatten().copied().collect();
    let recorder = Arc::new(Recorder::new(&first, shape.keys(), Clock::start()));
    let timer = Timer::start();
    let handler = SoakHandler {
        bench: BenchHandler::new(Arc::clone(&recorder), timer.clone()),
        recorder: Arc::clone(&recorder),
        timer,
    };
    let strategy = build(strategy_id, config, Arc::new(handler))?;
    let mut outcome = MixedOutcome::default();
    let started = Instant::now();
    let mut last = started;
    loop {
        let parts = next_round.take().unwrap_or_else(|| shape.both(&mut rng));
        let messages = parts.iter().flatten();
        outcome.injected_panics += messages.clone().filter(|m| injects_panic(m.job)).count() as u64;
        outcome.messages += messages.count() as u64;
        let failed_before = strategy.stats().failed;
        thread::scope(|scope| {
            for part in &parts {
                let strategy = &*strategy;
                scope.spawn(move || submit_all(strategy, part));
            }
        });
        strategy.drain();
        let failed = strategy.stats().failed - failed_before;
        outcome.correctness.add(&recorder.correctness(failed));
        recorder.reset();
        outcome.rounds += 1;
        if last.elapsed() >= PROGRESS_INTERVAL {
            last = Instant::now();
            let c = &outcome.correctness;
            progress(&format!(
                "{strategy_id}: soak: {:.0} s of {:.0} s, {} messages, {} failed of {} panics \
                 injected, {} order violations, {} overlaps, {} lost, {} duplicates",
                started.elapsed().as_secs_f64(),
                config.duration.as_secs_f64(),
                grouped(outcome.messages),
                grouped(c.failed),
                grouped(outcome.injected_panics),
                c.order_violations,
                c.overlaps,
                c.lost,
                c.duplicates
            ));
        }
        if started.elapsed() >= config.duration {
            break;
        }
    }
    outcome.elapsed = started.elapsed();
    outcome.live_mailboxes = strategy.stats().live_mailboxes;
    strategy.close();
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_sends_each_key_its_messages_in_order_split_by_parity() {
        let shape = Shape::new(1_000);
        let parts = shape.both(&mut ChaCha8Rng::seed_from_u64(1));
        let total: usize = parts.iter().map(Vec::len).sum();
        assert_eq!(total, (0..shape.keys()).map(|id| shape.messages_of(id)).sum::<usize>());
        assert!((990..=1_000).contains(&total), "{total}");
        for (part, messages) in parts.iter().enumerate() {
            let mut next = vec![0u64; shape.keys()];
            for message in messages {
                let id = message.key.aggregate_id as usize;
                assert_eq!(id % 2, part, "a key is sent by one submitter only");
                assert_eq!(message.seq, next[id], "sequence order per key");
                next[id] += 1;
            }
        }
    }

    #[test]
    fn the_mix_has_every_kind_of_job() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let jobs: Vec<Job> = (0..10_000).map(|_| soak_job(&mut rng)).collect();
        let count = |kind: fn(&Job) -> bool| jobs.iter().filter(|job| kind(job)).count();
        assert!((50..=150).contains(&count(|job| matches!(job, Job::Panic))));
        assert!((20..=80).contains(&count(|job| matches!(job, Job::Custom(_)))));
        assert!((1_700..=2_300).contains(&count(|job| matches!(job, Job::Wait { .. }))));
        assert!((3_600..=4_400).contains(&count(|job| matches!(job, Job::Spin { .. }))));
    }
}
