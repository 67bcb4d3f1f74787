//! A pipeline scenario's log, produced once from the run's seed for every cell, as its
//! spec's [`Produce`] says: the events, then the producers that write them.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::pipeline::log::{LogError, Record, Topic};
use crate::workload::scenario::pipeline::Produce;
use crate::workload::{ScenarioId, Sizes};

/// Bytes of every record's payload (only folded into the projection's digest).
pub(super) const PAYLOAD_BYTES: u32 = 64;

/// Producers racing in a [`Produce::Racing`] log.
pub(super) const PRODUCERS: u32 = 2;

/// A scenario's log as produced, and what its producers know of it.
#[derive(Debug)]
pub(super) struct Log {
    /// The records, by partition.
    pub(super) topic: Topic,
    /// Each key's last version: the state a sequential replay ends with.
    pub(super) expected: BTreeMap<u64, u64>,
    /// The old partitions' end offsets at the expansion, `(partition, offset)`; none where
    /// the log did not grow.
    pub(super) marks: Vec<(u32, u64)>,
    /// Records the producers appended after a higher version of their key; 0 but where
    /// producers race.
    pub(super) appended_out_of_order: u64,
}

impl Log {
    /// The log of `scenario`, produced by `produce` from `seed` at `sizes`.
    pub(super) fn of(
        scenario: ScenarioId,
        produce: Produce,
        sizes: &Sizes,
        seed: u64,
    ) -> Result<Self, LogError> {
        let events = events(sizes, seed, scenario);
        let mut log = Self {
            topic: Topic::new("events", sizes.partitions)?,
            expected: last_versions(&events),
            marks: Vec::new(),
            appended_out_of_order: 0,
        };
        match produce {
            Produce::Backlog => append(&mut log.topic, &events),
            Produce::Paced => paced(&mut log.topic, &events, sizes.pipeline_rate),
            Produce::Expanding => log.marks = expanding(&mut log.topic, &events, sizes.expand_to)?,
            Produce::Racing => {
                log.appended_out_of_order = racing(&mut log.topic, &events, sizes, seed);
            }
        }
        Ok(log)
    }
}

/// The events of a scenario's log in the order they happen: `(key, version)`, each the
/// next version of a uniformly drawn key, from the scenario's own random stream.
pub(super) fn events(sizes: &Sizes, seed: u64, scenario: ScenarioId) -> Vec<(u64, u64)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ scenario.stream().wrapping_mul(0x9e37_79b9));
    let mut versions: BTreeMap<u64, u64> = BTreeMap::new();
    (0..sizes.pipeline_records)
        .map(|_| {
            let key = rng.gen_range(0..sizes.pipeline_keys as u64);
            let version = versions.entry(key).and_modify(|v| *v += 1).or_insert(1);
            (key, *version)
        })
        .collect()
}

/// Each key's last version among `events`.
pub(super) fn last_versions(events: &[(u64, u64)]) -> BTreeMap<u64, u64> {
    let mut last = BTreeMap::new();
    for &(key, version) in events {
        let entry = last.entry(key).or_insert(0);
        *entry = version.max(*entry);
    }
    last
}

/// Appends `events` in order by the key's hash, each produced at 0 (a backlog there from
/// the start).
fn append(topic: &mut Topic, events: &[(u64, u64)]) {
    for &(key, version) in events {
        topic.append(key, version, PAYLOAD_BYTES, 0);
    }
}

/// Appends `events` produced at `rate` records per second, from 0.
fn paced(topic: &mut Topic, events: &[(u64, u64)], rate: u64) {
    let gap_ns = 1e9 / rate as f64;
    for (index, &(key, version)) in events.iter().enumerate() {
        topic.append(key, version, PAYLOAD_BYTES, (index as f64 * gap_ns) as u64);
    }
}

/// Appends the first half of `events`, grows the topic to `expand_to` partitions, and
/// appends the second half over the new count: the old partitions' end offsets at the
/// expansion.
fn expanding(
    topic: &mut Topic,
    events: &[(u64, u64)],
    expand_to: u32,
) -> Result<Vec<(u32, u64)>, LogError> {
    let (before, after) = events.split_at(events.len() / 2);
    append(topic, before);
    let marks = (0..topic.partitions())
        .map(|partition| Ok((partition, topic.end_offset(partition)?)))
        .collect::<Result<Vec<_>, LogError>>()?;
    topic.expand_to(expand_to)?;
    append(topic, after);
    Ok(marks)
}

/// Appends `events` as [`PRODUCERS`] racing producers send them: each event gets its
/// aggregate's next version when it commits, and one of the producers (chosen at random per
/// event) sends it; the first at once, the second up to `--producer-jitter` records late.
/// The records appended after a higher version of their key.
fn racing(topic: &mut Topic, events: &[(u64, u64)], sizes: &Sizes, seed: u64) -> u64 {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x0005_eed0_f0de);
    // Each event's send time, in events: the first producer's at once, the second's late.
    let mut sends: Vec<(usize, usize)> = (0..events.len())
        .map(|index| {
            let late = if rng.gen_range(0..PRODUCERS) == 0 {
                0
            } else {
                rng.gen_range(0..=sizes.producer_jitter)
            };
            (index + late, index)
        })
        .collect();
    sends.sort_unstable();
    let mut highest: BTreeMap<u64, u64> = BTreeMap::new();
    let mut out_of_order = 0;
    for (_, index) in sends {
        let (key, version) = events[index];
        let seen = highest.entry(key).or_insert(0);
        out_of_order += u64::from(version < *seen);
        *seen = version.max(*seen);
        topic.append(key, version, PAYLOAD_BYTES, 0);
    }
    out_of_order
}

/// A well-mixed hash of a record's place in the log: which records are slow, and which
/// fail.
pub(super) fn place_hash(record: &Record) -> u64 {
    let place = u64::from(record.partition) << 40 | record.offset;
    place.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20
}
