//! What a consumer does with a record whose handler failed: the retry policies, and the
//! retry topic that one of them sends records to.
//!
//! # Policies
//!
//! A failing attempt is retried after a backoff that doubles from attempt to attempt
//! (`backoff`, `2 x backoff`, `4 x backoff`, ...). A record that has failed
//! `max_attempts` times goes to the dead-letter topic, under every policy, so that a
//! poison record (one that always fails) never stalls a run for ever; its offset then
//! counts as done. With `max_attempts` 0 a record is retried for ever, as a consumer
//! configured never to give up does: a poison record then never settles, and whoever runs
//! the consumer must stop it (`pipeline-retry` stops its retry-forever cells once the
//! bystanders are done, or stalled; see `scenario::retry`).
//!
//! - [`RetryPolicy::RetryInPlace`]: the handler waits out the backoff without a thread (a
//!   pending step) and tries again. The key stays busy meanwhile, so its later records wait
//!   and order is kept. A per-key design freezes only that key; a hash-serial one freezes
//!   every key of its group.
//! - [`RetryPolicy::PausePartition`]: as in place, and the consumer also pauses the
//!   record's partition until the record succeeds or is dead-lettered: records already
//!   polled run on, nothing more of the partition is polled.
//! - [`RetryPolicy::RetryTopic`]: the failing record goes to a retry topic with the
//!   backoff as its delay, its offset counts as done, and the stream goes on. Once the
//!   delay is over the consumer polls it from the retry topic and submits it again, behind
//!   whatever the key received meanwhile: later versions of the key overtake it, which the
//!   version-aware projection stashes until it arrives.

use parking_lot::Mutex;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::log::Record;
use crate::results::RetryPolicy;

/// How a consumer retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryConfig {
    /// What a failed attempt leads to.
    pub policy: RetryPolicy,
    /// Failed attempts after which a record is dead-lettered; 0: never, it is retried for
    /// ever.
    pub max_attempts: u32,
    /// The wait after the first failed attempt; each later one doubles it.
    pub backoff: Duration,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            policy: RetryPolicy::RetryInPlace,
            max_attempts: 4,
            backoff: Duration::from_millis(2),
        }
    }
}

impl RetryConfig {
    /// Whether a record that has failed `attempt` times (from 1) goes to the dead-letter
    /// topic now: at `max_attempts`, never where that is 0 (retry for ever).
    pub fn gives_up_after(&self, attempt: u32) -> bool {
        self.max_attempts != 0 && attempt >= self.max_attempts
    }

    /// Whether a poison record is retried for ever (`max_attempts` 0).
    pub fn forever(&self) -> bool {
        self.max_attempts == 0
    }

    /// The wait after failed attempt `attempt` (from 1): `backoff x 2^(attempt - 1)`,
    /// saturating.
    pub fn backoff_after(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(20);
        self.backoff.saturating_mul(1 << doublings)
    }
}

/// A record waiting in the retry topic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Delayed {
    /// When it may be polled again, in nanoseconds since the pipeline's epoch.
    due_ns: u64,
    /// Arrival order, so that records due at once come out in the order they went in.
    sequence: u64,
    /// Where the record lives in the log.
    partition: u32,
    offset: u64,
}

/// The retry topic in-process: records with a delay, polled once it is over, earliest due
/// first; beside it, the dead-letter topic's count. The embedded transport's side topics.
#[derive(Debug, Default)]
pub struct RetryTopic {
    queue: Mutex<(BinaryHeap<Reverse<Delayed>>, u64)>,
    dead_letters: AtomicU64,
}

impl RetryTopic {
    /// An empty retry topic.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `record`, to be polled at `due_ns` or later.
    pub fn send(&self, record: &Record, due_ns: u64) {
        self.hold(record.partition, record.offset, due_ns);
    }

    /// Appends the record at `offset` of `partition`, to be polled at `due_ns` or later.
    pub fn hold(&self, partition: u32, offset: u64, due_ns: u64) {
        let mut queue = self.queue.lock();
        let (heap, sequence) = &mut *queue;
        *sequence += 1;
        heap.push(Reverse(Delayed { due_ns, sequence: *sequence, partition, offset }));
    }

    /// The `(partition, offset)` of every record due at `now_ns`, earliest first, taken off
    /// the topic.
    pub fn poll_due(&self, now_ns: u64) -> Vec<(u32, u64)> {
        let mut queue = self.queue.lock();
        let heap = &mut queue.0;
        let mut due = Vec::new();
        while heap.peek().is_some_and(|Reverse(next)| next.due_ns <= now_ns) {
            if let Some(Reverse(next)) = heap.pop() {
                due.push((next.partition, next.offset));
            }
        }
        due
    }

    /// Records waiting.
    pub fn len(&self) -> usize {
        self.queue.lock().0.len()
    }

    /// Whether nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Counts a record sent to the dead-letter topic beside it.
    pub fn count_dead_letter(&self) {
        self.dead_letters.fetch_add(1, Ordering::Relaxed);
    }

    /// Records sent to the dead-letter topic beside it.
    pub fn dead_lettered(&self) -> u64 {
        self.dead_letters.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(partition: u32, offset: u64) -> Record {
        Record { partition, offset, key: 1, version: 1, payload_bytes: 0, produce_ns: 0 }
    }

    #[test]
    fn policies_round_trip_through_their_names() {
        for policy in RetryPolicy::ALL {
            assert_eq!(policy.as_str().parse::<RetryPolicy>(), Ok(policy));
            let json = serde_json::to_string(&policy).unwrap();
            assert_eq!(json, format!("\"{policy}\""));
        }
        let error = "retry-later".parse::<RetryPolicy>().unwrap_err();
        assert!(error.to_string().contains("`retry-later`"), "{error}");
    }

    #[test]
    fn the_backoff_doubles_per_failed_attempt() {
        let config = RetryConfig { backoff: Duration::from_millis(3), ..RetryConfig::default() };
        let waits: Vec<u128> = (1..=4).map(|a| config.backoff_after(a).as_millis()).collect();
        assert_eq!(waits, [3, 6, 12, 24]);
        assert!(config.backoff_after(u32::MAX) >= config.backoff_after(21));
    }

    #[test]
    fn zero_attempts_never_give_up() {
        let four = RetryConfig::default();
        assert!(!four.gives_up_after(3) && four.gives_up_after(4) && !four.forever());
        let forever = RetryConfig { max_attempts: 0, ..four };
        assert!(forever.forever());
        assert!(![1, 4, 1_000, u32::MAX].into_iter().any(|a| forever.gives_up_after(a)));
    }

    #[test]
    fn the_retry_topic_returns_what_is_due_earliest_first() {
        let topic = RetryTopic::new();
        topic.send(&record(0, 5), 300);
        topic.send(&record(1, 2), 100);
        topic.send(&record(0, 9), 100);
        assert!(topic.poll_due(99).is_empty());
        assert_eq!(topic.poll_due(100), [(1, 2), (0, 9)]);
        assert_eq!(topic.len(), 1);
        assert_eq!(topic.poll_due(1_000), [(0, 5)]);
        assert!(topic.is_empty());
    }
}
