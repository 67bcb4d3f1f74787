//! The version-aware projection that business state is built with, and beside it what a
//! naive projection would have made of the same records.
//!
//! # Protocol
//!
//! Every record carries its aggregate's version, assigned by the producer per key from 1.
//! Handler threads call [`Projection::apply`] concurrently; a key's state lives in one of
//! [`SHARDS`] mutex-guarded maps (chosen by a hash of the key), so different keys rarely
//! contend and one key's records are applied one at a time. For each record:
//!
//! 1. The version-aware state machine compares the version with the key's `current` one
//!    (0: nothing applied yet):
//!    - `version == current + 1`: apply it (fold it into the digest, `current = version`),
//!      then apply the stashed successors `current + 1, current + 2, ...` while they are
//!      there;
//!    - `version <= current`: ignore it; it was applied already (a redelivery: a
//!      *duplicate*). Version 0, which no producer writes, is ignored as stale;
//!    - `version > current + 1`: a *gap*: the predecessor has not arrived (a retry, a
//!      producer race, a partition migration). Stash it until the gap closes. A version
//!      already stashed is ignored as a duplicate.
//! 2. The naive projection applies every record as it arrives, with no version check. It
//!    counts an *out-of-order* apply when the version is not its last one + 1, and a
//!    *double apply* when that version was applied before.
//! 3. A record that failed `--max-attempts` times goes to the dead-letter topic instead
//!    ([`Projection::dead_letter`]): the version-aware projection treats its version as
//!    settled without an effect (an operator moved past it), so the key's later versions
//!    are not stashed behind it for ever; the naive projection moves past it only when it
//!    is next in line.
//! 4. [`Projection::report`] compares both with what the producer wrote (each key's last
//!    version). A key's final state is correct when its version is the last one, nothing is
//!    left stashed, and its digest equals that of a sequential replay of versions `1..=n`
//!    without the dead-lettered ones.
//!
//! # The digest
//!
//! A key's state is a `u64` digest: starting from [`INITIAL_DIGEST`], each applied record
//! folds in its `(version, payload_bytes)` with [`fold_digest`], a multiply-xorshift mix
//! that depends on the order of the folds. Applying records out of order, or one twice,
//! gives a different digest even when the last version is right. The replay folds versions
//! `1..=n` with the payload size each version arrived with the first time (a redelivery
//! carries the same record), so it needs only each key's last version.

use parking_lot::Mutex;
use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap};

use super::log::Record;
use crate::results::ProjectionReport;

/// How many independently locked maps the key states are spread over.
pub const SHARDS: usize = 64;

/// The digest of a key with nothing applied.
pub const INITIAL_DIGEST: u64 = 0;

/// Bytes the projection holds per key, at most, beside what grows with its records (the
/// versions each key saw arrive, its stash): the key's slot in its shard's hash map, up to
/// two slots per key as the map grows by doubling, each its key, its `KeyState` and a
/// control byte.
pub const BYTES_PER_KEY: u64 = 2 * (std::mem::size_of::<(u64, KeyState)>() as u64 + 1);

/// Folds the record `(version, payload_bytes)` into `digest`: the version and payload size
/// are mixed in by multiplication by odd constants after a rotation of the digest, then
/// finished with an xor-shift (splitmix64's finalizer constant). Not commutative: folding
/// `a` then `b` differs from `b` then `a`.
pub fn fold_digest(digest: u64, version: u64, payload_bytes: u32) -> u64 {
    let mixed = digest.rotate_left(23)
        ^ version.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ u64::from(payload_bytes).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    let folded = mixed.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    folded ^ (folded >> 31)
}

/// The digest of a sequential replay: [`INITIAL_DIGEST`] with each `(version,
/// payload_bytes)` folded in, in the order given.
pub fn replay_digest(records: impl IntoIterator<Item = (u64, u32)>) -> u64 {
    records.into_iter().fold(INITIAL_DIGEST, |digest, (version, payload_bytes)| {
        fold_digest(digest, version, payload_bytes)
    })
}

/// What the version-aware projection did with one record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Applied {
    /// Applied, then `drained` stashed successors after it.
    Applied {
        /// How many stashed records the apply released.
        drained: usize,
    },
    /// Ignored: a duplicate (its version applied or stashed already), or stale (version 0).
    Ignored {
        /// Whether the same version had been applied or stashed before.
        duplicate: bool,
    },
    /// Stashed until its predecessors arrive.
    Stashed {
        /// How many records of the key wait in the stash now, this one included.
        depth: usize,
    },
}

/// One key's state in both projections.
#[derive(Debug, Default)]
struct KeyState {
    /// The last version the version-aware projection applied (0: none).
    current: u64,
    /// The version-aware projection's state.
    digest: u64,
    /// Records that arrived before their predecessors, by version (`None`: a dead letter,
    /// settled without an effect once its predecessors are in).
    stash: BTreeMap<u64, Option<Record>>,
    /// Versions that went to the dead-letter topic: never applied, left out of the replay.
    dead: std::collections::BTreeSet<u64>,
    /// The deepest this key's stash got: how far ahead of its predecessors a record came.
    max_stash: usize,
    /// The naive projection's last applied version (0: none).
    naive_last: u64,
    /// The naive projection's state.
    naive_digest: u64,
    /// The payload size each version first arrived with: the replay's input, and how the
    /// naive projection knows it applied a version before.
    arrived: BTreeMap<u64, u32>,
}

impl KeyState {
    /// The version-aware step for `version`: `record` applies it, `None` settles it without
    /// an effect (a dead letter).
    fn settle(&mut self, counters: &mut Counters, version: u64, record: Option<Record>) -> Applied {
        if version == self.current + 1 {
            self.advance(version, record.as_ref());
            let mut drained = 0;
            while let Some(next) = self.stash.remove(&(self.current + 1)) {
                self.advance(self.current + 1, next.as_ref());
                drained += usize::from(next.is_some());
            }
            counters.applied += u64::from(record.is_some()) + drained as u64;
            Applied::Applied { drained }
        } else if version <= self.current || self.stash.contains_key(&version) {
            let duplicate = version > 0;
            counters.ignored += 1;
            counters.duplicates += u64::from(duplicate);
            Applied::Ignored { duplicate }
        } else {
            self.stash.insert(version, record);
            let depth = self.stash.len();
            self.max_stash = self.max_stash.max(depth);
            counters.gaps += 1;
            counters.max_stash = counters.max_stash.max(depth as u64);
            Applied::Stashed { depth }
        }
    }

    /// Makes `version` current, folding in `record` (none for a dead letter).
    fn advance(&mut self, version: u64, record: Option<&Record>) {
        self.current = version;
        if let Some(record) = record {
            self.digest = fold_digest(self.digest, record.version, record.payload_bytes);
        }
    }
}

/// Counters of one shard, summed by the report.
#[derive(Clone, Copy, Debug, Default)]
struct Counters {
    /// Records the version-aware projection applied, stashed ones released included.
    applied: u64,
    /// Records it ignored.
    ignored: u64,
    /// Ignored records whose version had been applied or stashed before.
    duplicates: u64,
    /// Records stashed because a predecessor was missing.
    gaps: u64,
    /// The deepest any key's stash got.
    max_stash: u64,
    /// Records the naive projection applied (every record).
    naive_applied: u64,
    /// Naive applies whose version was not the last one + 1.
    naive_out_of_order: u64,
    /// Naive applies of a version applied before.
    naive_double_applies: u64,
}

/// One lock's worth of keys.
#[derive(Debug, Default)]
struct Shard {
    /// Each key's state in both projections.
    keys: HashMap<u64, KeyState>,
    /// What happened to this shard's records.
    counters: Counters,
}

/// Both projections, fed from any number of threads.
#[derive(Debug)]
pub struct Projection {
    /// The key states, spread by a hash of the key so that handler threads working on
    /// different keys rarely wait on one lock.
    shards: Vec<Mutex<Shard>>,
}

impl Default for Projection {
    fn default() -> Self {
        Self::new()
    }
}

impl Projection {
    /// Empty projections.
    pub fn new() -> Self {
        Self { shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect() }
    }

    fn shard(&self, key: u64) -> &Mutex<Shard> {
        // The top bits of a Fibonacci hash, so that sequential keys spread over every shard.
        let index = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 58) as usize % SHARDS;
        &self.shards[index]
    }

    /// Applies `record` to both projections; returns what the version-aware one did.
    pub fn apply(&self, record: Record) -> Applied {
        let mut shard = self.shard(record.key).lock();
        let Shard { keys, counters } = &mut *shard;
        let state = keys.entry(record.key).or_default();

        match state.arrived.entry(record.version) {
            Entry::Occupied(_) => counters.naive_double_applies += 1,
            Entry::Vacant(vacant) => {
                vacant.insert(record.payload_bytes);
            }
        }
        if record.version != state.naive_last + 1 {
            counters.naive_out_of_order += 1;
        }
        state.naive_last = record.version;
        state.naive_digest = fold_digest(state.naive_digest, record.version, record.payload_bytes);
        counters.naive_applied += 1;

        state.settle(counters, record.version, Some(record))
    }

    /// Settles `record` without an effect: it went to the dead-letter topic after its last
    /// attempt failed. The version-aware projection moves past its version (at once, or
    /// once its predecessors are in), the naive one when it is next in line; the replay
    /// leaves it out.
    pub fn dead_letter(&self, record: Record) {
        let mut shard = self.shard(record.key).lock();
        let Shard { keys, counters } = &mut *shard;
        let state = keys.entry(record.key).or_default();
        state.dead.insert(record.version);
        if record.version == state.naive_last + 1 {
            state.naive_last = record.version;
        }
        state.settle(counters, record.version, None);
    }

    /// The version-aware projection's version of `key` (0: nothing applied).
    pub fn current(&self, key: u64) -> u64 {
        self.shard(key).lock().keys.get(&key).map_or(0, |state| state.current)
    }

    /// The deepest `key`'s stash got (0: its records never arrived ahead of a predecessor).
    pub fn max_stash(&self, key: u64) -> usize {
        self.shard(key).lock().keys.get(&key).map_or(0, |state| state.max_stash)
    }

    /// The version-aware projection's digest of `key`.
    pub fn digest(&self, key: u64) -> u64 {
        self.shard(key).lock().keys.get(&key).map_or(INITIAL_DIGEST, |state| state.digest)
    }

    /// Both projections against `expected` (each key's last version produced; a key
    /// missing from it is expected to have nothing). Call it once the records are applied.
    pub fn report(&self, expected: &BTreeMap<u64, u64>) -> ProjectionReport {
        let mut report = ProjectionReport::default();
        let mut totals = Counters::default();
        let mut seen_expected = 0_u64;
        for shard in &self.shards {
            let shard = shard.lock();
            let counters = shard.counters;
            totals.applied += counters.applied;
            totals.ignored += counters.ignored;
            totals.duplicates += counters.duplicates;
            totals.gaps += counters.gaps;
            totals.max_stash = totals.max_stash.max(counters.max_stash);
            totals.naive_out_of_order += counters.naive_out_of_order;
            totals.naive_double_applies += counters.naive_double_applies;
            for (key, state) in &shard.keys {
                let last = expected.get(key).copied();
                seen_expected += u64::from(last.is_some());
                let last = last.unwrap_or(0);
                let replay = (1..=last)
                    .filter(|version| !state.dead.contains(version))
                    .map(|version| state.arrived.get(&version).map(|&bytes| (version, bytes)))
                    .collect::<Option<Vec<_>>>()
                    .map(replay_digest);
                let correct =
                    state.current == last && state.stash.is_empty() && replay == Some(state.digest);
                // The naive projection may end below `last` only by dead letters.
                let naive_at_end = state.naive_last == last
                    || (state.naive_last < last
                        && (state.naive_last + 1..=last).all(|v| state.dead.contains(&v)));
                let naive_correct = naive_at_end && replay == Some(state.naive_digest);
                report.keys += 1;
                report.keys_reordered += u64::from(state.max_stash > 0);
                report.stashed_at_end += state.stash.len() as u64;
                report.keys_wrong += u64::from(!correct);
                report.naive_keys_wrong += u64::from(!naive_correct);
            }
        }
        // Keys the producer wrote that never arrived: wrong in both, unless nothing was
        // expected of them.
        let unseen = expected.len() as u64 - seen_expected;
        if unseen > 0 {
            let missing = expected
                .iter()
                .filter(|&(&key, &last)| {
                    last > 0 && !self.shard(key).lock().keys.contains_key(&key)
                })
                .count() as u64;
            report.keys += unseen;
            report.keys_wrong += missing;
            report.naive_keys_wrong += missing;
        }
        report.applied = totals.applied;
        report.ignored = totals.ignored;
        report.duplicates = totals.duplicates;
        report.gaps = totals.gaps;
        report.max_stash = totals.max_stash;
        report.naive_out_of_order = totals.naive_out_of_order;
        report.naive_double_applies = totals.naive_double_applies;
        report.final_state_correct = report.keys_wrong == 0;
        report.naive_final_state_correct = report.naive_keys_wrong == 0;
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ops::Range;

    fn record(key: u64, version: u64) -> Record {
        Record {
            partition: 0,
            offset: 0,
            key,
            version,
            payload_bytes: (key * 31 + version * 7) as u32 % 500,
            produce_ns: 0,
        }
    }

    fn apply_all(projection: &Projection, key: u64, versions: &[u64]) -> Vec<Applied> {
        versions.iter().map(|&version| projection.apply(record(key, version))).collect()
    }

    #[test]
    fn an_in_order_stream_is_correct_for_both() {
        let projection = Projection::new();
        let mut expected = BTreeMap::new();
        for version in 1..=20 {
            for key in 0..10 {
                assert_eq!(projection.apply(record(key, version)), Applied::Applied { drained: 0 });
                expected.insert(key, version);
            }
        }
        let report = projection.report(&expected);
        assert!(report.final_state_correct && report.naive_final_state_correct, "{report:?}");
        assert_eq!((report.keys, report.applied, report.ignored, report.gaps), (10, 200, 0, 0));
        assert_eq!((report.naive_out_of_order, report.naive_double_applies), (0, 0));
        let replay =
            replay_digest((1..=20).map(|version| (version, record(3, version).payload_bytes)));
        assert_eq!(projection.digest(3), replay);
    }

    #[test]
    fn v8_before_v7_is_stashed_by_one_and_misapplied_by_the_other() {
        let projection = Projection::new();
        let outcomes = apply_all(&projection, 1, &[1, 2, 3, 4, 5, 6, 8, 7, 9]);
        assert_eq!(outcomes[6], Applied::Stashed { depth: 1 });
        assert_eq!(outcomes[7], Applied::Applied { drained: 1 });
        assert_eq!(outcomes[8], Applied::Applied { drained: 0 });
        assert_eq!(projection.current(1), 9);
        assert_eq!(projection.max_stash(1), 1);

        let report = projection.report(&BTreeMap::from([(1, 9)]));
        assert!(report.final_state_correct, "{report:?}");
        assert_eq!((report.applied, report.gaps, report.max_stash), (9, 1, 1));
        assert_eq!(report.stashed_at_end, 0);
        // The naive one ends at version 9 too, but it applied 8 after 6, 7 after 8 and 9
        // after 7, so its state is not the replay's.
        assert!(!report.naive_final_state_correct);
        assert_eq!(report.naive_out_of_order, 3);
        assert_eq!(report.naive_keys_wrong, 1);
    }

    #[test]
    fn a_duplicate_is_ignored_by_one_and_applied_twice_by_the_other() {
        let projection = Projection::new();
        let outcomes = apply_all(&projection, 4, &[1, 2, 3, 4, 5, 5, 6, 7, 8]);
        assert_eq!(outcomes[5], Applied::Ignored { duplicate: true });
        let report = projection.report(&BTreeMap::from([(4, 8)]));
        assert!(report.final_state_correct, "{report:?}");
        assert_eq!((report.applied, report.ignored, report.duplicates), (8, 1, 1));
        assert!(!report.naive_final_state_correct);
        assert_eq!(report.naive_double_applies, 1);
    }

    #[test]
    fn a_gap_that_never_closes_leaves_the_key_wrong() {
        let projection = Projection::new();
        let outcomes = apply_all(&projection, 2, &[1, 2, 4, 5, 4]);
        assert_eq!(outcomes[3], Applied::Stashed { depth: 2 });
        assert_eq!(outcomes[4], Applied::Ignored { duplicate: true });
        let report = projection.report(&BTreeMap::from([(2, 5)]));
        assert!(!report.final_state_correct);
        assert_eq!((report.keys_wrong, report.stashed_at_end, report.max_stash), (1, 2, 2));
        assert_eq!(projection.current(2), 2);
        assert_eq!((projection.max_stash(2), projection.max_stash(3)), (2, 0));
    }

    #[test]
    fn version_zero_is_stale_not_a_duplicate() {
        let projection = Projection::new();
        projection.apply(record(6, 1));
        assert_eq!(projection.apply(record(6, 0)), Applied::Ignored { duplicate: false });
        let report = projection.report(&BTreeMap::from([(6, 1)]));
        assert_eq!((report.ignored, report.duplicates), (1, 0));
        assert!(report.final_state_correct);
    }

    #[test]
    fn missing_and_unexpected_keys_are_wrong() {
        let projection = Projection::new();
        apply_all(&projection, 1, &[1, 2]);
        apply_all(&projection, 99, &[1]);
        // Key 2 was produced but never applied; key 3 had nothing to apply.
        let report = projection.report(&BTreeMap::from([(1, 2), (2, 1), (3, 0)]));
        assert_eq!(report.keys, 4);
        assert_eq!((report.keys_wrong, report.naive_keys_wrong), (2, 2));
        assert!(!report.final_state_correct);
    }

    #[test]
    fn the_digest_is_a_known_order_sensitive_fold() {
        let in_order = replay_digest([(1, 10), (2, 20), (3, 30)]);
        let by_hand = fold_digest(fold_digest(fold_digest(INITIAL_DIGEST, 1, 10), 2, 20), 3, 30);
        assert_eq!(in_order, by_hand);
        assert_ne!(in_order, replay_digest([(2, 20), (1, 10), (3, 30)]));
        assert_ne!(in_order, replay_digest([(1, 10), (2, 20), (2, 20), (3, 30)]));
        assert_ne!(replay_digest([(1, 10)]), replay_digest([(1, 11)]));
        assert_eq!(replay_digest([]), INITIAL_DIGEST);
    }

    /// Applies each key's versions `1..=versions` in swapped pairs (2, 1, 4, 3, ...), the
    /// keys interleaved.
    fn apply_in_swapped_pairs(projection: &Projection, keys: Range<u64>, versions: u64) {
        for pair in (1..=versions).step_by(2) {
            for key in keys.clone() {
                projection.apply(record(key, pair + 1));
                projection.apply(record(key, pair));
            }
        }
    }

    #[test]
    fn concurrent_applies_over_disjoint_keys_end_correct() {
        const THREADS: u64 = 4;
        const KEYS_PER_THREAD: u64 = 250;
        const VERSIONS: u64 = 20;
        let projection = Projection::new();
        std::thread::scope(|scope| {
            for thread in 0..THREADS {
                let projection = &projection;
                let keys = thread * 1_000..thread * 1_000 + KEYS_PER_THREAD;
                scope.spawn(move || apply_in_swapped_pairs(projection, keys, VERSIONS));
            }
        });
        let expected: BTreeMap<u64, u64> = (0..THREADS)
            .flat_map(|thread| thread * 1_000..thread * 1_000 + KEYS_PER_THREAD)
            .map(|key| (key, VERSIONS))
            .collect();
        let report = projection.report(&expected);
        let records = THREADS * KEYS_PER_THREAD * VERSIONS;
        assert!(report.final_state_correct, "{report:?}");
        assert_eq!(report.keys, THREADS * KEYS_PER_THREAD);
        assert_eq!(report.applied, records);
        assert_eq!(report.gaps, records / 2);
        assert_eq!(report.max_stash, 1);
        assert!(!report.naive_final_state_correct);
        assert_eq!(report.naive_out_of_order, records);
    }

    #[test]
    fn the_report_round_trips_through_json() {
        let projection = Projection::new();
        apply_all(&projection, 1, &[2, 1]);
        let report = projection.report(&BTreeMap::from([(1, 2)]));
        let json = serde_json::to_string(&report).unwrap();
        assert_eq!(serde_json::from_str::<ProjectionReport>(&json).unwrap(), report);
    }
}
