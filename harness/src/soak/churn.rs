//! The churn phase: `keys` distinct keys, a few messages each, then the leak checks (the
//! steps are in the parent module's docs).

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use strategies::{Design, Handler, Job, Key, Message, Outcome, Strategy};

use super::{build, grouped, ChurnOutcome, Memory, SoakConfig, SoakError};
use super::{CHURN_PER_KEY, MIB, PROGRESS_INTERVAL};
use crate::measure::system::{self, MemorySampler};

/// How often the waiting thread looks whether the submitters are done.
const POLL_MS: u64 = 10;
/// Submitters publish their progress every this many steps.
const PROGRESS_STEPS: usize = 4_096;

/// The churn's handler: counts calls and checks each key's sequence numbers.
#[derive(Debug)]
struct ChurnCheck {
    /// The sequence number each key's next message must have.
    next_seq: Vec<AtomicU8>,
    ran: AtomicU64,
    out_of_order: AtomicU64,
}

impl ChurnCheck {
    /// A checker for `keys` keys, its memory written now so that it is resident before the
    /// baseline is read.
    fn new(keys: usize) -> Self {
        let next_seq: Vec<AtomicU8> = (0..keys).map(|_| AtomicU8::new(0)).collect();
        next_seq.iter().for_each(|slot| slot.store(0, Ordering::Relaxed));
        Self { next_seq, ran: AtomicU64::new(0), out_of_order: AtomicU64::new(0) }
    }
}

impl Handler for ChurnCheck {
    fn handle(&self, message: &Message) -> Outcome {
        let slot = &self.next_seq[message.key.aggregate_id as usize];
        if u64::from(slot.fetch_add(1, Ordering::Relaxed)) != message.seq {
            self.out_of_order.fetch_add(1, Ordering::Relaxed);
        }
        self.ran.fetch_add(1, Ordering::Relaxed);
        Outcome::Done
    }
}

/// The message the churn sends at `step` as the `seq`-th of its key (diagonal order, see
/// the module docs), if that key exists and belongs to submitter `part` (of two).
fn churn_message(step: usize, seq: usize, keys: usize, part: usize) -> Option<Message> {
    let id = step.checked_sub(seq).filter(|&id| id < keys && id % 2 == part)?;
    Some(Message { key: Key::new(0, id as u64), seq: seq as u64, intended_ns: 0, job: Job::Noop })
}

/// Sends the churn messages of submitter `part`; raises `steps_done` now and then.
fn send_churn(strategy: &dyn Strategy, keys: usize, part: usize, steps_done: &AtomicU64) {
    let per_key = usize::from(CHURN_PER_KEY);
    for step in 0..keys + per_key - 1 {
        for seq in 0..per_key {
            if let Some(message) = churn_message(step, seq, keys, part) {
                // An open strategy accepts every message; a refused one shows as not run.
                let _ = strategy.submit(message);
            }
        }
        if step % PROGRESS_STEPS == 0 {
            steps_done.fetch_max(step as u64, Ordering::Relaxed);
        }
    }
}

/// Runs the churn phase of `strategy_id`.
pub(super) fn churn(
    strategy_id: Design,
    config: &SoakConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<ChurnOutcome, SoakError> {
    let keys = config.keys;
    let check = Arc::new(ChurnCheck::new(keys));
    let strategy = build(strategy_id, config, Arc::clone(&check) as Arc<dyn Handler>)?;
    let before = system::resident_bytes();
    let sampler = MemorySampler::start();
    let started = Instant::now();
    let steps_done = AtomicU64::new(0);
    thread::scope(|scope| {
        let submitters: Vec<_> = (0..2)
            .map(|part| {
                let (strategy, steps_done) = (&*strategy, &steps_done);
                scope.spawn(move || send_churn(strategy, keys, part, steps_done))
            })
            .collect();
        let mut last = Instant::now();
        while !submitters.iter().all(|submitter| submitter.is_finished()) {
            thread::sleep(Duration::from_millis(POLL_MS));
            if last.elapsed() >= PROGRESS_INTERVAL {
                last = Instant::now();
                let rss = system::resident_bytes()
                    .map_or_else(|| "-".into(), |bytes| format!("{:.1}", bytes as f64 / MIB));
                let sent = steps_done.load(Ordering::Relaxed).min(keys as u64);
                progress(&format!(
                    "{strategy_id}: churn: {} of {} keys sent, RSS {rss} MiB",
                    grouped(sent),
                    grouped(keys as u64)
                ));
            }
        }
    });
    strategy.drain();
    let live_mailboxes = strategy.stats().live_mailboxes;
    let elapsed = started.elapsed();
    let peak = sampler.map(MemorySampler::finish);
    let after = system::resident_bytes();
    strategy.close();
    let memory = match (before, peak, after) {
        (Some(before), Some(peak), Some(after)) => Some(Memory { before, peak, after }),
        _ => None,
    };
    Ok(ChurnOutcome {
        keys,
        messages: keys as u64 * u64::from(CHURN_PER_KEY),
        ran: check.ran.load(Ordering::Relaxed),
        out_of_order: check.out_of_order.load(Ordering::Relaxed),
        live_mailboxes,
        memory,
        elapsed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of `step` and `seq`, if any; asserts that at most one of the two
    /// submitters sends it.
    fn sent_by_one(step: usize, seq: usize, keys: usize) -> Option<Message> {
        let both: Vec<Message> =
            (0..2).filter_map(|part| churn_message(step, seq, keys, part)).collect();
        assert!(both.len() <= 1, "one submitter per key");
        both.into_iter().next()
    }

    #[test]
    fn the_diagonal_sends_every_message_once_in_key_order() {
        let (keys, per_key) = (10, usize::from(CHURN_PER_KEY));
        let mut next = vec![0u64; keys];
        for step in 0..keys + per_key - 1 {
            for message in (0..per_key).filter_map(|seq| sent_by_one(step, seq, keys)) {
                let id = message.key.aggregate_id as usize;
                assert_eq!(message.seq, next[id]);
                next[id] += 1;
            }
        }
        assert!(next.iter().all(|&sent| sent == per_key as u64), "{next:?}");
    }
}
