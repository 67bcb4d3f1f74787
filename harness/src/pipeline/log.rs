//! An embedded, in-process, deterministic partitioned log: what a Kafka topic is to its
//! consumers, without a broker.
//!
//! # Protocol
//!
//! 1. A [`Topic`] holds `P` partitions; each is a vector of [`Record`]s in offset order.
//!    A record's offset is its index in its partition (0, 1, 2, ...), so offsets are dense
//!    and never reused.
//! 2. [`Topic::append`] places a record by its key with [`partition_for`], Kafka's default
//!    partitioner over the topic's *current* partition count: every record of one key lands
//!    in the same partition while the count stays the same (entity order).
//!    [`Topic::append_to`] names the partition instead, for tests and for producers that
//!    route (or reorder) on their own.
//! 3. [`Topic::expand_to`] only grows the topic. Records already written stay where they
//!    are; later appends use the new count. A key whose `hash mod P` changes therefore has
//!    its older records in one partition and its newer ones in another, and two consumers
//!    can run them in parallel: the reordering a partition migration causes.
//! 4. [`Topic::read`] returns up to `max` records of one partition from an offset, in
//!    offset order. Nothing is ever deleted, so a restart can read from any offset again.
//!
//! Everything here is deterministic: the same appends give the same log, byte for byte.

use serde::{Deserialize, Serialize};

/// One record of the log: an event of one aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The partition it was written to.
    pub partition: u32,
    /// Its position in that partition, from 0; the consumer commits `offset + 1` once it
    /// and everything before it are done.
    pub offset: u64,
    /// The aggregate id: the partitioning key, and the key the executor serializes on.
    pub key: u64,
    /// The aggregate's version after this event, assigned by the producer per key from 1,
    /// so that a consumer can tell a duplicate (`<= current`) from a gap (`> current + 1`).
    pub version: u64,
    /// The size the event's payload would have on the wire; it is folded into the
    /// projection's digest so that applying the wrong record changes the state.
    pub payload_bytes: u32,
    /// When the producer wrote it, in nanoseconds from the start of the run.
    pub produce_ns: u64,
}

/// A mistake in using the log: the log is unchanged.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogError {
    /// A topic needs at least one partition.
    #[error("a topic needs at least one partition, 0 given")]
    ZeroPartitions,
    /// The partition number is not below the partition count.
    #[error(
        "partition {partition} does not exist: the topic has {partitions} partitions \
         (0 to {last})",
        last = partitions.saturating_sub(1)
    )]
    NoSuchPartition {
        /// The partition asked for.
        partition: u32,
        /// How many partitions the topic has.
        partitions: u32,
    },
    /// Partitions can be added, never removed, and an expansion must add at least one.
    #[error(
        "cannot expand from {current} to {requested} partitions: a topic only grows, to more \
         than {current}"
    )]
    NotGrowing {
        /// The partition count now.
        current: u32,
        /// The partition count asked for.
        requested: u32,
    },
}

/// Kafka's `Utils.murmur2`: the 32-bit MurmurHash2 of `data`, as Kafka's producer computes
/// it to choose a key's partition.
///
/// Seed `0x9747b28c`, `m = 0x5bd1e995`, `r = 24`: `h = seed ^ len`; for each 4-byte chunk
/// read little-endian, `k *= m; k ^= k >>> r; k *= m; h *= m; h ^= k`; the 1-3 trailing
/// bytes are xored in (byte 2 `<< 16`, byte 1 `<< 8`, byte 0) and `h *= m`; finally
/// `h ^= h >>> 13; h *= m; h ^= h >>> 15`. All arithmetic wraps, as Java's `int` does; the
/// result is Java's signed `int`.
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;

    let mut h = SEED ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = chunks.remainder();
    if tail.len() >= 3 {
        h ^= u32::from(tail[2]) << 16;
    }
    if tail.len() >= 2 {
        h ^= u32::from(tail[1]) << 8;
    }
    if !tail.is_empty() {
        h ^= u32::from(tail[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// Kafka's default partition for a serialized key: `toPositive(murmur2(key_bytes)) %
/// partitions`, where `toPositive(x) = x & 0x7fffffff` (not `abs`: it maps `i32::MIN` to 0
/// and keeps every other value's low 31 bits).
///
/// # Panics
///
/// If `partitions` is 0 (a [`Topic`] never has 0 partitions).
pub fn partition_for_bytes(key_bytes: &[u8], partitions: u32) -> u32 {
    assert!(partitions > 0, "a key has no partition among 0 partitions");
    (murmur2(key_bytes) as u32 & 0x7fff_ffff) % partitions
}

/// The partition Kafka's default partitioner gives aggregate id `key`: the key serialized as
/// Kafka's `LongSerializer` does (8 bytes, big-endian), then [`partition_for_bytes`]. A
/// Kafka producer keyed by the same `u64` would pick the same partition.
///
/// # Panics
///
/// If `partitions` is 0 (a [`Topic`] never has 0 partitions).
pub fn partition_for(key: u64, partitions: u32) -> u32 {
    partition_for_bytes(&key.to_be_bytes(), partitions)
}

/// One partition: its records in offset order, each record's offset equal to its index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Partition {
    /// Every record written to the partition, oldest first; never truncated, so a consumer
    /// can seek back to any offset after a crash.
    records: Vec<Record>,
}

impl Partition {
    /// The records, in offset order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The offset the next record will get (Kafka's log end offset).
    pub fn end_offset(&self) -> u64 {
        self.records.len() as u64
    }
}

/// A named topic of partitions that only grows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Topic {
    /// The topic's name, for results and messages.
    name: String,
    /// The partitions, indexed by partition number; their count is what
    /// [`Topic::append`] hashes keys over.
    partitions: Vec<Partition>,
    /// The topic as it stood when it first grew, if it did.
    growth: Option<Growth>,
}

/// A topic as it stood when it first grew ([`Topic::expand_to`]): what a broker's topic
/// must hold before its partitions are added, for the rest to land where the log put it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Growth {
    /// Its partitions then.
    pub partitions: u32,
    /// Each of those partitions' end offset then.
    pub ends: Vec<u64>,
}

impl Growth {
    /// Whether `record` was written before the growth.
    pub fn before(&self, record: &Record) -> bool {
        self.ends.get(record.partition as usize).is_some_and(|&end| record.offset < end)
    }
}

impl Topic {
    /// An empty topic of `partitions` partitions.
    pub fn new(name: impl Into<String>, partitions: u32) -> Result<Self, LogError> {
        if partitions == 0 {
            return Err(LogError::ZeroPartitions);
        }
        Ok(Self {
            name: name.into(),
            partitions: vec![Partition::default(); partitions as usize],
            growth: None,
        })
    }

    /// The topic as it stood when it first grew, if it did.
    pub fn growth(&self) -> Option<&Growth> {
        self.growth.as_ref()
    }

    /// The topic's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many partitions the topic has now.
    pub fn partitions(&self) -> u32 {
        self.partitions.len() as u32
    }

    /// Partition `partition`.
    pub fn partition(&self, partition: u32) -> Result<&Partition, LogError> {
        self.partitions
            .get(partition as usize)
            .ok_or(LogError::NoSuchPartition { partition, partitions: self.partitions() })
    }

    /// Appends an event of aggregate `key` to the partition [`partition_for`] gives it over
    /// the current partition count, and returns the record as written.
    pub fn append(
        &mut self,
        key: u64,
        version: u64,
        payload_bytes: u32,
        produce_ns: u64,
    ) -> Record {
        let partition = partition_for(key, self.partitions());
        self.write(partition, key, version, payload_bytes, produce_ns)
    }

    /// Appends an event of aggregate `key` to partition `partition`, whatever its hash says.
    pub fn append_to(
        &mut self,
        partition: u32,
        key: u64,
        version: u64,
        payload_bytes: u32,
        produce_ns: u64,
    ) -> Result<Record, LogError> {
        self.partition(partition)?;
        Ok(self.write(partition, key, version, payload_bytes, produce_ns))
    }

    /// Grows the topic to `new_partitions`. Records already written stay in their
    /// partitions; appends from now on hash over the new count. Fails, changing nothing,
    /// unless `new_partitions` is larger than the count now.
    pub fn expand_to(&mut self, new_partitions: u32) -> Result<(), LogError> {
        let current = self.partitions();
        if new_partitions <= current {
            return Err(LogError::NotGrowing { current, requested: new_partitions });
        }
        if self.growth.is_none() {
            let ends = self.partitions.iter().map(Partition::end_offset).collect();
            self.growth = Some(Growth { partitions: current, ends });
        }
        self.partitions.resize(new_partitions as usize, Partition::default());
        Ok(())
    }

    /// The offset the next record of `partition` will get.
    pub fn end_offset(&self, partition: u32) -> Result<u64, LogError> {
        Ok(self.partition(partition)?.end_offset())
    }

    /// Up to `max` records of `partition` from `from_offset` on, in offset order; none when
    /// `from_offset` is at or past the end.
    pub fn read(
        &self,
        partition: u32,
        from_offset: u64,
        max: usize,
    ) -> Result<Vec<Record>, LogError> {
        let records = &self.partition(partition)?.records;
        let start = usize::try_from(from_offset).unwrap_or(usize::MAX).min(records.len());
        let end = start.saturating_add(max).min(records.len());
        Ok(records[start..end].to_vec())
    }

    /// Every record of the topic, partition by partition, each in offset order.
    pub fn records(&self) -> impl Iterator<Item = &Record> + '_ {
        self.partitions.iter().flat_map(|partition| partition.records.iter())
    }

    /// How many records the topic holds, over every partition.
    pub fn len(&self) -> u64 {
        self.partitions.iter().map(Partition::end_offset).sum()
    }

    /// Whether no record was written yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn write(
        &mut self,
        partition: u32,
        key: u64,
        version: u64,
        payload_bytes: u32,
        produce_ns: u64,
    ) -> Record {
        let records = &mut self.partitions[partition as usize].records;
        let record = Record {
            partition,
            offset: records.len() as u64,
            key,
            version,
            payload_bytes,
            produce_ns,
        };
        records.push(record);
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_topic_remembers_how_it_stood_when_it_first_grew() {
        let mut topic = Topic::new("grows", 2).unwrap();
        assert!(topic.growth().is_none());
        for key in 0..10 {
            topic.append(key, 1, 0, 0);
        }
        let ends = vec![topic.end_offset(0).unwrap(), topic.end_offset(1).unwrap()];
        topic.expand_to(3).unwrap();
        let late = topic.append(3, 2, 0, 0);
        topic.expand_to(4).unwrap();
        let growth = topic.growth().unwrap();
        assert_eq!((growth.partitions, &growth.ends), (2, &ends), "the first growth");
        let early = topic.read(0, 0, 1).unwrap()[0];
        assert!(growth.before(&early));
        assert!(!growth.before(&late), "{late:?}");
    }

    /// Kafka's `UtilsTest.testMurmur2` vectors (the UTF-8 bytes of each string, and the
    /// signed hash Java returns).
    #[test]
    fn murmur2_reproduces_kafkas_test_vectors() {
        let cases: [(&[u8], i32); 6] = [
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58_897_971),
            (b"abc", 479_470_107),
        ];
        for (data, expected) in cases {
            assert_eq!(murmur2(data), expected, "murmur2({:?})", String::from_utf8_lossy(data));
        }
    }

    #[test]
    fn partition_takes_the_low_31_bits_of_the_hash() {
        // murmur2("foobar") = -790332482 = 0xd0e47bbe; & 0x7fffffff = 1357151166, and
        // 1357151166 % 50 = 16.
        assert_eq!(partition_for_bytes(b"foobar", 50), 16);
        assert_eq!(partition_for_bytes(b"foobar", 1), 0);
    }

    #[test]
    fn a_key_is_hashed_as_eight_big_endian_bytes() {
        for key in [0_u64, 1, 255, 256, 1 << 40, u64::MAX] {
            for partitions in [1, 3, 12, 64] {
                let expected = partition_for_bytes(&key.to_be_bytes(), partitions);
                assert_eq!(partition_for(key, partitions), expected);
                assert!(expected < partitions);
            }
        }
        // Little-endian bytes would hash differently for a non-palindromic key.
        assert_ne!(murmur2(&1_u64.to_be_bytes()), murmur2(&1_u64.to_le_bytes()));
    }

    #[test]
    fn appends_get_dense_offsets_in_their_keys_partition() {
        let mut topic = Topic::new("orders", 4).unwrap();
        for version in 1..=5 {
            let record = topic.append(42, version, 100, version * 10);
            assert_eq!(record.partition, partition_for(42, 4));
            assert_eq!(record.offset, version - 1);
            assert_eq!(record.version, version);
        }
        let partition = partition_for(42, 4);
        assert_eq!(topic.end_offset(partition), Ok(5));
        assert_eq!(topic.len(), 5);
        let versions: Vec<u64> =
            topic.read(partition, 0, 10).unwrap().iter().map(|record| record.version).collect();
        assert_eq!(versions, [1, 2, 3, 4, 5]);
    }

    #[test]
    fn read_is_bounded_by_max_and_the_end() {
        let mut topic = Topic::new("t", 1).unwrap();
        for version in 1..=10 {
            topic.append_to(0, 7, version, 1, 0).unwrap();
        }
        let offsets: Vec<u64> =
            topic.read(0, 3, 4).unwrap().iter().map(|record| record.offset).collect();
        assert_eq!(offsets, [3, 4, 5, 6]);
        assert_eq!(topic.read(0, 8, 100).unwrap().len(), 2);
        assert!(topic.read(0, 10, 5).unwrap().is_empty());
        assert!(topic.read(0, u64::MAX, 5).unwrap().is_empty());
        assert_eq!(topic.read(0, 0, 0).unwrap(), Vec::<Record>::new());
    }

    #[test]
    fn append_to_writes_where_it_is_told() {
        let mut topic = Topic::new("t", 3).unwrap();
        let record = topic.append_to(2, 5, 1, 8, 0).unwrap();
        assert_eq!((record.partition, record.offset), (2, 0));
        assert_eq!(
            topic.append_to(3, 5, 2, 8, 0),
            Err(LogError::NoSuchPartition { partition: 3, partitions: 3 })
        );
        assert_eq!(topic.len(), 1);
    }

    #[test]
    fn expansion_keeps_old_records_and_moves_later_appends() {
        // A key whose partition changes from 2 to 3 partitions.
        let key = (0..1_000).find(|&key| partition_for(key, 2) != partition_for(key, 3)).unwrap();
        let mut topic = Topic::new("t", 2).unwrap();
        let before = topic.append(key, 1, 10, 0);
        topic.expand_to(3).unwrap();
        let after = topic.append(key, 2, 10, 0);
        assert_eq!(topic.partitions(), 3);
        assert_eq!(before.partition, partition_for(key, 2));
        assert_eq!(after.partition, partition_for(key, 3));
        assert_ne!(before.partition, after.partition);
        assert_eq!(topic.read(before.partition, 0, 10).unwrap(), vec![before]);
    }

    #[test]
    fn a_topic_never_shrinks_or_stays_put_and_never_has_zero_partitions() {
        let mut topic = Topic::new("t", 4).unwrap();
        let shrink = topic.expand_to(3).unwrap_err();
        assert_eq!(shrink, LogError::NotGrowing { current: 4, requested: 3 });
        let message = shrink.to_string();
        assert!(message.contains('4') && message.contains('3'), "{message}");
        assert_eq!(topic.expand_to(4), Err(LogError::NotGrowing { current: 4, requested: 4 }));
        assert_eq!(topic.partitions(), 4);
        assert_eq!(Topic::new("t", 0), Err(LogError::ZeroPartitions));
    }

    /// Five partitions, fifty keys of three versions each.
    fn fifty_keys_three_versions() -> Topic {
        let mut topic = Topic::new("t", 5).unwrap();
        for key in 0..50 {
            for version in 1..=3 {
                topic.append(key, version, (key * version) as u32, key + version);
            }
        }
        topic
    }

    #[test]
    fn the_same_appends_give_the_same_log() {
        assert_eq!(fifty_keys_three_versions(), fifty_keys_three_versions());
    }

    #[test]
    fn records_round_trip_through_json() {
        let record =
            Record { partition: 1, offset: 2, key: 3, version: 4, payload_bytes: 5, produce_ns: 6 };
        let json = serde_json::to_string(&record).unwrap();
        assert_eq!(serde_json::from_str::<Record>(&json).unwrap(), record);
    }
}
