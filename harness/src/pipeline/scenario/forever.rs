//! Retry for ever in `pipeline-retry` (`--max-attempts 0`): how such a cell ends, and its
//! stall detector.
//!
//! A poison record retried for ever never settles, so the cell cannot consume its log to
//! the end and drain: under pause-partition nothing past the poison record in its partition
//! is ever polled, and a hash-serial design holds every key of the poison record's group
//! behind it. The cell ends instead as follows:
//!
//! 1. The consumer runs with [`Stop::Until`]; beside it a watcher reads the delivery tally
//!    every [`WATCH_EVERY`]: the records of the keys without a poison record (the
//!    bystanders, and the keys that fail transiently) produced so far and not yet applied.
//! 2. It raises the stop once every one of them is applied (intake went on past the poison
//!    record), or once none has been applied for the stall limit
//!    ([`Waits::stall_limit`](super::Waits::stall_limit)) while one waited (intake
//!    stalled: the cell is *cut off*).
//! 3. The consumer dies at once, force-closes its executor (the poison record, still
//!    retrying, is abandoned with whatever waits behind it) and commits what completed.
//! 4. The stall detector, from the tally ([`longest_stall`]): the longest interval in which
//!    some bystander record waited (produced, not applied) and no bystander record was
//!    applied. Intervals with no bystander waiting (the paced producer between records)
//!    do not count. A cut-off cell with bystanders left shows at least the stall limit; a
//!    cell whose intake went on shows the longest gap its bystanders met otherwise.
//!
//! The cell's records left unsettled are not lost: the last commit stops below the first of
//! them (contiguous), so a next consumer would run them again, or they wait in the retry
//! topic. `lost` counts only the records that commit covers, that never took effect and
//! that are not in the retry topic. The expected state stops each
//! poison record's key before the poison record: nothing after it can apply in order.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use crate::pipeline::consumer::{Pipeline, Signal};
use crate::pipeline::log::{Record, Topic};
use crate::pipeline::transport::Member;
use crate::results::RetryForever;

/// How often the watcher reads the tally.
pub const WATCH_EVERY: Duration = Duration::from_millis(1);

/// The records a cell waits for (module docs, step 1), in produce order, and the watcher's
/// view of them.
struct Watcher<'p> {
    pipeline: &'p Pipeline,
    /// `(partition, offset, produce_ns)` of every record watched, in produce order.
    watched: &'p [(u32, u64, u64)],
    /// The next one not yet produced when last looked at.
    next: usize,
    /// Produced and not applied when last looked at.
    waiting: Vec<(u32, u64, u64)>,
    /// When one was last seen applied, nanoseconds since the epoch.
    last_applied_ns: u64,
}

/// How a retry-forever cell's watcher ended it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stopped {
    /// When, in nanoseconds since the epoch.
    pub at_ns: u64,
    /// Whether the stall limit did (else every record watched was applied, or the
    /// consumer returned by itself).
    pub cut_off: bool,
}

impl Watcher<'_> {
    /// One look at the tally: whether the cell is over, every record watched applied
    /// (`Some(false)`) or the stall limit passed while one waited (`Some(true)`).
    fn over(&mut self, now_ns: u64, limit_ns: u64) -> Option<bool> {
        while let Some(&record) = self.watched.get(self.next) {
            if record.2 > now_ns {
                break;
            }
            self.waiting.push(record);
            self.next += 1;
        }
        let before = self.waiting.len();
        let pipeline = self.pipeline;
        self.waiting.retain(|&(partition, offset, _)| {
            pipeline.tally.first_applied_ns(partition, offset).is_none()
        });
        if self.waiting.len() < before {
            self.last_applied_ns = now_ns;
        }
        let Some(oldest) = self.waiting.iter().map(|&(_, _, produced)| produced).min() else {
            return (self.next == self.watched.len()).then_some(false);
        };
        (now_ns.saturating_sub(self.last_applied_ns.max(oldest)) >= limit_ns).then_some(true)
    }
}

/// Watches `pipeline` until the cell is over (module docs, step 2) and raises `stop`; gives
/// up without raising once `ended` is (the consumer returned by itself: cancelled, or
/// failed).
pub(super) fn watch(
    pipeline: &Pipeline,
    watched: &[(u32, u64, u64)],
    limit: Duration,
    stop: &Signal,
    ended: &AtomicBool,
) -> Stopped {
    let limit_ns = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX);
    let mut watcher =
        Watcher { pipeline, watched, next: 0, waiting: Vec::new(), last_applied_ns: 0 };
    // Acquire: pairs with the Release store once the consumer has returned.
    while !ended.load(Ordering::Acquire) {
        let now_ns = pipeline.now_ns();
        if let Some(cut_off) = watcher.over(now_ns, limit_ns) {
            stop.raise();
            return Stopped { at_ns: now_ns, cut_off };
        }
        thread::sleep(WATCH_EVERY);
    }
    Stopped { at_ns: pipeline.now_ns(), cut_off: false }
}

/// The stall detector: the longest interval in which some bystander waited and none was
/// applied, as `(length, start)` in nanoseconds. `bystanders`: each one's produce time and
/// when it was applied (`None`: never, before the cell stopped at `end_ns`).
pub fn longest_stall(bystanders: &[(u64, Option<u64>)], end_ns: u64) -> (u64, u64) {
    // By when each was applied; those never applied at the end.
    let mut by_applied: Vec<(u64, u64)> = bystanders
        .iter()
        .map(|&(produced, applied)| (applied.map_or(end_ns, |at| at.min(end_ns)), produced))
        .collect();
    by_applied.sort_unstable();
    // The earliest produce time among those applied at or after each one.
    let mut earliest_after = vec![u64::MAX; by_applied.len() + 1];
    for index in (0..by_applied.len()).rev() {
        earliest_after[index] = earliest_after[index + 1].min(by_applied[index].1);
    }
    let mut longest = (0, 0);
    let mut previous = 0;
    for (index, &(applied, _)) in by_applied.iter().enumerate() {
        let start = previous.max(earliest_after[index]);
        let length = applied.saturating_sub(start);
        if length > longest.0 {
            longest = (length, start);
        }
        previous = applied;
    }
    longest
}

/// A stopped cell's figures from what `pipeline` holds at `end_ns`: the stall detector,
/// the bystanders stranded, and the poison and other troubled records left unsettled.
pub(super) fn figures(
    pipeline: &Pipeline,
    topic: &Topic,
    troubled: &BTreeSet<u64>,
    poison: &HashSet<(u32, u64)>,
    limit: Duration,
    stopped: Stopped,
) -> RetryForever {
    let end_ns = stopped.at_ns;
    let applied =
        |record: &Record| pipeline.tally.first_applied_ns(record.partition, record.offset);
    let bystanders: Vec<(u64, Option<u64>)> = topic
        .records()
        .filter(|record| !troubled.contains(&record.key))
        .map(|record| (record.produce_ns, applied(record)))
        .collect();
    let (stall_ns, from_ns) = longest_stall(&bystanders, end_ns);
    let settled = |record: &Record| {
        let delivery = pipeline.tally.of(record.partition, record.offset);
        delivery.applied > 0 || delivery.dead_lettered > 0
    };
    let unsettled_troubled = topic
        .records()
        .filter(|record| troubled.contains(&record.key) && !settled(record))
        .filter(|record| !poison.contains(&(record.partition, record.offset)))
        .count();
    let still_retrying = poison
        .iter()
        .filter(|&&(partition, offset)| {
            let delivery = pipeline.tally.of(partition, offset);
            delivery.applied == 0 && delivery.dead_lettered == 0
        })
        .count();
    RetryForever {
        stall_s: stall_ns as f64 / 1e9,
        stall_from_s: from_ns as f64 / 1e9,
        stall_limit_s: limit.as_secs_f64(),
        cut_off: stopped.cut_off,
        stranded: bystanders.iter().filter(|(_, applied)| applied.is_none()).count() as u64,
        still_retrying: still_retrying as u64,
        unsettled: unsettled_troubled as u64,
    }
}

/// The records the member's last commits cover (below each partition's committed offset)
/// that were neither applied nor dead-lettered, nor `handed_off` (waiting in the retry
/// topic, which holds them as durably as the log): lost, where everything above the
/// commits would run again.
pub(super) fn lost_below_commits<M: Member>(
    pipeline: &Pipeline,
    member: &M,
    handed_off: impl Fn(&Record) -> bool,
) -> u64 {
    let mut lost = 0;
    for (partition, records) in pipeline.log.iter().enumerate() {
        let partition = partition as u32;
        let committed = member.committed(partition).ok().flatten().map_or(0, |c| c.offset);
        lost += records
            .iter()
            .take_while(|record| record.offset < committed)
            .filter(|record| {
                let delivery = pipeline.tally.of(partition, record.offset);
                delivery.applied == 0 && delivery.dead_lettered == 0 && !handed_off(record)
            })
            .count() as u64;
    }
    lost
}

/// `expected` with each poison record's key ending before it: its version less one (the
/// key's earliest poison record where it has more than one).
pub(super) fn expected_before_poison(
    expected: &BTreeMap<u64, u64>,
    topic: &Topic,
    poison: &HashSet<(u32, u64)>,
) -> BTreeMap<u64, u64> {
    let mut before = expected.clone();
    for record in topic.records().filter(|r| poison.contains(&(r.partition, r.offset))) {
        if let Some(last) = before.get_mut(&record.key) {
            *last = (*last).min(record.version - 1);
        }
    }
    before
}

/// The records the watcher waits for (module docs, step 1): those of the keys without a
/// poison record, as `(partition, offset, produce_ns)`, in produce order.
pub(super) fn watched_of(topic: &Topic, poison: &HashSet<(u32, u64)>) -> Vec<(u32, u64, u64)> {
    let poisoned: BTreeSet<u64> = topic
        .records()
        .filter(|record| poison.contains(&(record.partition, record.offset)))
        .map(|record| record.key)
        .collect();
    let mut watched: Vec<(u32, u64, u64)> = topic
        .records()
        .filter(|record| !poisoned.contains(&record.key))
        .map(|record| (record.partition, record.offset, record.produce_ns))
        .collect();
    watched.sort_by_key(|&(partition, offset, produced)| (produced, partition, offset));
    watched
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_stall_counts_only_while_a_bystander_waits() {
        // Produced at 0, 10, 100; applied at 5, 12, 130: the paced gap 12..100 has no
        // bystander waiting; 100..130 is the longest wait with none applied.
        let paced = [(0, Some(5)), (10, Some(12)), (100, Some(130))];
        assert_eq!(longest_stall(&paced, 200), (30, 100));
        // One produced at 20 and applied only at 90: 20..90 with nobody else applied.
        let held = [(0, Some(5)), (20, Some(90)), (21, Some(91))];
        assert_eq!(longest_stall(&held, 200), (70, 20));
        // Never applied: the interval runs from the last application to the end.
        let stranded = [(0, Some(5)), (10, None), (11, Some(15))];
        assert_eq!(longest_stall(&stranded, 1_000), (985, 15));
        assert_eq!(longest_stall(&[], 1_000), (0, 0));
    }
}
