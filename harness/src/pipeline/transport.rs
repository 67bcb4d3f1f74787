//! The consumer's view of a broker: assignments, fetch positions, polls and the consumer
//! group's committed offsets, behind [`Transport`] so that a Kafka-protocol client could
//! stand in for [`EmbeddedTransport`] without the consumer changing.
//!
//! # Protocol
//!
//! 1. One consumer group. A member ([`MemberId`]) is given partitions with
//!    [`Transport::assign`]; a partition has at most one owner, so assigning it to one
//!    member revokes it from whoever held it (a rebalance).
//! 2. A newly assigned partition starts at the group's committed offset, or at 0 when the
//!    group never committed it. A partition the member keeps keeps its position.
//! 3. [`Transport::poll`] returns up to `max_records` records of the member's assigned,
//!    unpaused partitions: each partition's records in offset order, partitions
//!    interleaved one record at a time (round-robin), the first partition rotating from one
//!    poll to the next so that a small `max_records` starves none. Polling advances the
//!    member's positions past what it returned; each member has positions of its own.
//! 4. [`Transport::commit`] stores a [`Commit`] (the next offset to consume, Kafka's
//!    convention, and metadata text) for the group. Metadata longer than the group's limit
//!    (Kafka's `offset.metadata.max.bytes`, counted as a broker counts it: the string's
//!    length in UTF-16 code units, one per character of base64) is refused with
//!    [`TransportError::MetadataTooLarge`]. Only the partition's owner
//!    may commit: a revoked member's late commit is refused with
//!    [`TransportError::NotAssigned`], as a broker refuses a commit from an old generation,
//!    so it cannot move the offset under the new owner.
//! 5. [`Transport::seek_to_committed`] puts every position of a member back at the committed
//!    offset (or 0): what a restarted consumer does before its first poll.
//! 6. A record is visible to polls from its intended produce time on, counted from the
//!    epoch given to [`EmbeddedTransport::pace_from`] (a paced producer); before that call,
//!    and for records produced at 0, at once.
//! 7. [`Transport::pause`] stops polls from returning a partition's records without losing
//!    its position; [`Transport::resume`] lets them flow again (the consumer's back-pressure
//!    when commit metadata would grow too large).

use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

use super::commit::DEFAULT_METADATA_LIMIT_BYTES;
use super::log::{LogError, Record, Topic};

/// A member of the consumer group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MemberId(pub u32);

impl fmt::Display for MemberId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "member-{}", self.0)
    }
}

/// What the group stores for a partition when a member commits.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// The next offset to consume (Kafka's convention): every record below it is done, and
    /// a restarted consumer reads from here.
    pub offset: u64,
    /// Text stored beside the offset (Kafka's `OffsetAndMetadata.metadata`, a string); the
    /// `contiguous+metadata` policy keeps the completed offsets above `offset` here, in
    /// base64.
    pub metadata: String,
}

impl Commit {
    /// A commit of `offset` with no metadata.
    pub fn offset(offset: u64) -> Self {
        Self { offset, metadata: String::new() }
    }
}

/// A request the group refused; nothing changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The member does not own the partition (it was revoked, or never assigned).
    #[error("{member} is not assigned partition {partition} (revoked or never assigned)")]
    NotAssigned {
        /// Who asked.
        member: MemberId,
        /// The partition it asked about.
        partition: u32,
    },
    /// The commit's metadata is longer than the group stores (Kafka's
    /// `OFFSET_METADATA_TOO_LARGE`).
    #[error(
        "the commit of partition {partition} carries {bytes} bytes of metadata, more than the \
         limit of {limit}"
    )]
    MetadataTooLarge {
        /// The partition committed.
        partition: u32,
        /// Bytes of metadata text it carried.
        bytes: usize,
        /// The most the group stores.
        limit: usize,
    },
    /// The partition does not exist.
    #[error(transparent)]
    Log(#[from] LogError),
}

/// The consumer's view of a broker and its consumer group. Implementations are shared by
/// every consumer thread.
pub trait Transport: Send + Sync {
    /// How many partitions the topic has now.
    fn partitions(&self) -> u32;

    /// Makes `partitions` the member's whole assignment, revoking each of them from any
    /// other member that held it; newly assigned partitions start at the committed offset
    /// (or 0). Fails, changing nothing, if a partition does not exist.
    fn assign(&self, member: MemberId, partitions: &[u32]) -> Result<(), TransportError>;

    /// The member's partitions, ascending.
    fn assignment(&self, member: MemberId) -> Vec<u32>;

    /// Up to `max_records` records of the member's assigned, unpaused partitions, in offset
    /// order per partition and round-robin across partitions; advances its positions.
    fn poll(&self, member: MemberId, max_records: usize) -> Vec<Record>;

    /// Stores `commit` for `partition` in the group; only the partition's owner may.
    fn commit(
        &self,
        member: MemberId,
        partition: u32,
        commit: Commit,
    ) -> Result<(), TransportError>;

    /// The group's last commit of `partition`, if any.
    fn committed(&self, partition: u32) -> Option<Commit>;

    /// Moves each of the member's positions to its partition's committed offset (or 0).
    fn seek_to_committed(&self, member: MemberId);

    /// The member's next fetch offset in `partition`, if it owns it.
    fn position(&self, member: MemberId, partition: u32) -> Option<u64>;

    /// Stops polls of `member` from returning records of `partitions`; positions are kept.
    fn pause(&self, member: MemberId, partitions: &[u32]) -> Result<(), TransportError>;

    /// Lets polls of `member` return records of `partitions` again.
    fn resume(&self, member: MemberId, partitions: &[u32]) -> Result<(), TransportError>;
}

/// One member's side of the group.
#[derive(Debug, Default)]
struct Member {
    /// The member's next fetch offset for each partition it owns; the keys are its
    /// assignment.
    positions: BTreeMap<u32, u64>,
    /// Owned partitions that polls skip until resumed.
    paused: BTreeSet<u32>,
    /// Which assigned partition the next poll starts with, so that every partition gets
    /// its turn to go first.
    next_first: usize,
}

impl Member {
    /// Drops a partition the member no longer owns: its position and its pause.
    fn forget(&mut self, partition: u32) {
        self.positions.remove(&partition);
        self.paused.remove(&partition);
    }
}

/// The consumer group: who owns what, and what was committed.
#[derive(Debug, Default)]
struct Group {
    /// Every member that was ever assigned partitions.
    members: BTreeMap<MemberId, Member>,
    /// Each assigned partition's one owner.
    owners: BTreeMap<u32, MemberId>,
    /// The group's last commit of each partition.
    committed: BTreeMap<u32, Commit>,
}

impl Group {
    /// Makes `member` the owner of `partition`, revoking it from a previous owner, which
    /// forgets it.
    fn take_over(&mut self, partition: u32, member: MemberId) {
        let Some(previous) = self.owners.insert(partition, member) else {
            return;
        };
        if previous == member {
            return;
        }
        if let Some(revoked) = self.members.get_mut(&previous) {
            revoked.forget(partition);
        }
    }

    fn committed_offset(&self, partition: u32) -> u64 {
        self.committed.get(&partition).map_or(0, |commit| commit.offset)
    }

    fn check_owner(&self, member: MemberId, partition: u32) -> Result<(), TransportError> {
        if self.owners.get(&partition) == Some(&member) {
            Ok(())
        } else {
            Err(TransportError::NotAssigned { member, partition })
        }
    }
}

/// Up to `max_records` records of `batches`, one of each batch in turn (protocol, step 3)
/// until `max_records` or every batch is exhausted.
fn round_robin(batches: &mut [std::vec::IntoIter<Record>], max_records: usize) -> Vec<Record> {
    let mut polled = Vec::with_capacity(max_records);
    while polled.len() < max_records {
        let before = polled.len();
        for batch in batches.iter_mut() {
            if polled.len() == max_records {
                break;
            }
            if let Some(record) = batch.next() {
                polled.push(record);
            }
        }
        if polled.len() == before {
            break;
        }
    }
    polled
}

/// A [`Transport`] over an in-process [`Topic`]: producers append through it while
/// consumers poll.
///
/// Locks: the group's mutex is taken before the topic's lock, never the other way round;
/// appends take only the topic's write lock, so producers never wait on the group.
#[derive(Debug)]
pub struct EmbeddedTransport {
    /// The log; read-locked by polls, write-locked by appends and expansions.
    topic: RwLock<Topic>,
    /// Assignments, positions and commits.
    group: Mutex<Group>,
    /// Where the records' produce times count from; unset: every record is visible.
    epoch: std::sync::OnceLock<std::time::Instant>,
    /// The most bytes of metadata text one commit may carry (Kafka's
    /// `offset.metadata.max.bytes`).
    metadata_limit: usize,
}

impl EmbeddedTransport {
    /// A transport over `topic`, with an empty group that stores up to
    /// [`DEFAULT_METADATA_LIMIT_BYTES`] of metadata per commit, as a broker does by default.
    pub fn new(topic: Topic) -> Self {
        Self {
            topic: RwLock::new(topic),
            group: Mutex::new(Group::default()),
            epoch: std::sync::OnceLock::new(),
            metadata_limit: DEFAULT_METADATA_LIMIT_BYTES,
        }
    }

    /// The same transport, its group storing up to `bytes` of metadata text per commit.
    pub fn with_metadata_limit(self, bytes: usize) -> Self {
        Self { metadata_limit: bytes, ..self }
    }

    /// Makes each record visible to polls only from its produce time on, counted from
    /// `epoch` (a paced producer writes it then). Only the first call counts.
    pub fn pace_from(&self, epoch: std::time::Instant) {
        let _ = self.epoch.set(epoch);
    }

    /// The newest produce time visible now (every one, unpaced).
    fn visible_ns(&self) -> u64 {
        self.epoch
            .get()
            .map_or(u64::MAX, |epoch| u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }

    /// Appends a record by its key's hash (see [`Topic::append`]).
    pub fn append(&self, key: u64, version: u64, payload_bytes: u32, produce_ns: u64) -> Record {
        self.topic.write().append(key, version, payload_bytes, produce_ns)
    }

    /// Appends a record to a named partition (see [`Topic::append_to`]).
    pub fn append_to(
        &self,
        partition: u32,
        key: u64,
        version: u64,
        payload_bytes: u32,
        produce_ns: u64,
    ) -> Result<Record, LogError> {
        self.topic.write().append_to(partition, key, version, payload_bytes, produce_ns)
    }

    /// Grows the topic (see [`Topic::expand_to`]); the new partitions are unassigned until
    /// the next [`Transport::assign`].
    pub fn expand_to(&self, new_partitions: u32) -> Result<(), LogError> {
        self.topic.write().expand_to(new_partitions)
    }

    /// The log end offset of every partition, by partition number.
    pub fn end_offsets(&self) -> Vec<u64> {
        let topic = self.topic.read();
        (0..topic.partitions()).map(|partition| topic.end_offset(partition).unwrap_or(0)).collect()
    }

    /// Runs `f` on the topic, read-locked (appends wait until it returns).
    pub fn with_topic<R>(&self, f: impl FnOnce(&Topic) -> R) -> R {
        f(&self.topic.read())
    }

    fn check_partitions(&self, partitions: &[u32]) -> Result<(), TransportError> {
        let topic = self.topic.read();
        for &partition in partitions {
            topic.partition(partition)?;
        }
        Ok(())
    }
}

impl Transport for EmbeddedTransport {
    fn partitions(&self) -> u32 {
        self.topic.read().partitions()
    }

    fn assign(&self, member: MemberId, partitions: &[u32]) -> Result<(), TransportError> {
        self.check_partitions(partitions)?;
        let wanted: BTreeSet<u32> = partitions.iter().copied().collect();
        let mut group = self.group.lock();
        let group = &mut *group;
        for &partition in &wanted {
            group.take_over(partition, member);
        }
        let state = group.members.entry(member).or_default();
        let dropped: Vec<u32> = state
            .positions
            .keys()
            .copied()
            .filter(|partition| !wanted.contains(partition))
            .collect();
        for partition in dropped {
            state.forget(partition);
            group.owners.remove(&partition);
        }
        for &partition in &wanted {
            let committed = &group.committed;
            state
                .positions
                .entry(partition)
                .or_insert_with(|| committed.get(&partition).map_or(0, |commit| commit.offset));
        }
        state.next_first = 0;
        Ok(())
    }

    fn assignment(&self, member: MemberId) -> Vec<u32> {
        self.group
            .lock()
            .members
            .get(&member)
            .map(|state| state.positions.keys().copied().collect())
            .unwrap_or_default()
    }

    fn poll(&self, member: MemberId, max_records: usize) -> Vec<Record> {
        let mut group = self.group.lock();
        let Some(state) = group.members.get_mut(&member) else {
            return Vec::new();
        };
        let active: Vec<u32> = state
            .positions
            .keys()
            .copied()
            .filter(|partition| !state.paused.contains(partition))
            .collect();
        if active.is_empty() || max_records == 0 {
            return Vec::new();
        }
        let first = state.next_first % active.len();
        state.next_first = (first + 1) % active.len();
        let topic = self.topic.read();
        let visible_ns = self.visible_ns();
        // Each partition's next records, at most `max_records` of each, in rotation order.
        let mut batches: Vec<std::vec::IntoIter<Record>> = active[first..]
            .iter()
            .chain(&active[..first])
            .map(|&partition| {
                let mut batch = topic
                    .read(partition, state.positions[&partition], max_records)
                    .unwrap_or_default();
                // A partition's produce times rise with its offsets.
                batch.truncate(batch.partition_point(|record| record.produce_ns <= visible_ns));
                batch
            })
            .map(Vec::into_iter)
            .collect();
        let polled = round_robin(&mut batches, max_records);
        for record in &polled {
            state.positions.insert(record.partition, record.offset + 1);
        }
        polled
    }

    fn commit(
        &self,
        member: MemberId,
        partition: u32,
        commit: Commit,
    ) -> Result<(), TransportError> {
        let mut group = self.group.lock();
        group.check_owner(member, partition)?;
        // A broker compares Java's `String.length()`: UTF-16 code units, one per character
        // of base64.
        let (bytes, limit) = (commit.metadata.encode_utf16().count(), self.metadata_limit);
        if bytes > limit {
            return Err(TransportError::MetadataTooLarge { partition, bytes, limit });
        }
        group.committed.insert(partition, commit);
        Ok(())
    }

    fn committed(&self, partition: u32) -> Option<Commit> {
        self.group.lock().committed.get(&partition).cloned()
    }

    fn seek_to_committed(&self, member: MemberId) {
        let mut group = self.group.lock();
        let offsets: Vec<(u32, u64)> = match group.members.get(&member) {
            Some(state) => state
                .positions
                .keys()
                .map(|&partition| (partition, group.committed_offset(partition)))
                .collect(),
            None => return,
        };
        if let Some(state) = group.members.get_mut(&member) {
            state.positions.extend(offsets);
        }
    }

    fn position(&self, member: MemberId, partition: u32) -> Option<u64> {
        self.group.lock().members.get(&member)?.positions.get(&partition).copied()
    }

    fn pause(&self, member: MemberId, partitions: &[u32]) -> Result<(), TransportError> {
        let mut group = self.group.lock();
        for &partition in partitions {
            group.check_owner(member, partition)?;
        }
        if let Some(state) = group.members.get_mut(&member) {
            state.paused.extend(partitions.iter().copied());
        }
        Ok(())
    }

    fn resume(&self, member: MemberId, partitions: &[u32]) -> Result<(), TransportError> {
        let mut group = self.group.lock();
        for &partition in partitions {
            group.check_owner(member, partition)?;
        }
        if let Some(state) = group.members.get_mut(&member) {
            for partition in partitions {
                state.paused.remove(partition);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: MemberId = MemberId(1);
    const B: MemberId = MemberId(2);

    /// A transport of `partitions` partitions with `per_partition` records in each; record
    /// `i` of partition `p` has key `p` and version `i + 1`.
    fn filled(partitions: u32, per_partition: u64) -> EmbeddedTransport {
        let transport = EmbeddedTransport::new(Topic::new("t", partitions).unwrap());
        for partition in 0..partitions {
            for version in 1..=per_partition {
                transport.append_to(partition, u64::from(partition), version, 10, 0).unwrap();
            }
        }
        transport
    }

    fn offsets(records: &[Record]) -> Vec<(u32, u64)> {
        records.iter().map(|record| (record.partition, record.offset)).collect()
    }

    #[test]
    fn each_partition_is_polled_in_offset_order() {
        let transport = filled(2, 20);
        transport.assign(A, &[0, 1]).unwrap();
        let mut seen: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        loop {
            let records = transport.poll(A, 3);
            if records.is_empty() {
                break;
            }
            for record in records {
                seen.entry(record.partition).or_default().push(record.offset);
            }
        }
        let expected: Vec<u64> = (0..20).collect();
        assert_eq!(seen[&0], expected);
        assert_eq!(seen[&1], expected);
        assert_eq!(transport.position(A, 0), Some(20));
    }

    #[test]
    fn one_poll_interleaves_partitions_round_robin() {
        let transport = filled(3, 4);
        transport.assign(A, &[0, 1, 2]).unwrap();
        assert_eq!(
            offsets(&transport.poll(A, 7)),
            [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 2)]
        );
        // The next poll starts with the next partition.
        assert_eq!(offsets(&transport.poll(A, 3)), [(1, 2), (2, 2), (0, 3)]);
    }

    #[test]
    fn an_exhausted_partition_leaves_the_rest_to_the_others() {
        let transport = filled(2, 1);
        transport.append_to(1, 1, 2, 10, 0).unwrap();
        transport.append_to(1, 1, 3, 10, 0).unwrap();
        transport.assign(A, &[0, 1]).unwrap();
        assert_eq!(offsets(&transport.poll(A, 10)), [(0, 0), (1, 0), (1, 1), (1, 2)]);
        assert!(transport.poll(A, 10).is_empty());
    }

    #[test]
    fn members_keep_their_own_positions() {
        let transport = filled(2, 5);
        transport.assign(A, &[0]).unwrap();
        transport.assign(B, &[1]).unwrap();
        assert_eq!(offsets(&transport.poll(A, 2)), [(0, 0), (0, 1)]);
        assert_eq!(offsets(&transport.poll(B, 1)), [(1, 0)]);
        assert_eq!(transport.position(A, 0), Some(2));
        assert_eq!(transport.position(B, 1), Some(1));
        assert_eq!(transport.position(A, 1), None);
    }

    #[test]
    fn commit_committed_and_seek_round_trip() {
        let transport = filled(1, 10);
        transport.assign(A, &[0]).unwrap();
        assert_eq!(transport.committed(0), None);
        assert_eq!(transport.poll(A, 8).len(), 8);
        let commit = Commit { offset: 5, metadata: "AQID".into() };
        transport.commit(A, 0, commit.clone()).unwrap();
        assert_eq!(transport.committed(0), Some(commit));
        assert_eq!(transport.position(A, 0), Some(8));
        transport.seek_to_committed(A);
        assert_eq!(transport.position(A, 0), Some(5));
        assert_eq!(transport.poll(A, 1)[0].offset, 5);
    }

    #[test]
    fn seek_without_a_commit_goes_back_to_the_start() {
        let transport = filled(1, 4);
        transport.assign(A, &[0]).unwrap();
        assert_eq!(transport.poll(A, 4).len(), 4);
        transport.seek_to_committed(A);
        assert_eq!(transport.position(A, 0), Some(0));
    }

    #[test]
    fn a_revoked_members_commit_is_rejected() {
        let transport = filled(2, 10);
        transport.assign(A, &[0, 1]).unwrap();
        transport.poll(A, 6);
        transport.commit(A, 0, Commit::offset(2)).unwrap();
        // A rebalance hands partition 0 to B, which starts at the group's commit.
        transport.assign(B, &[0]).unwrap();
        assert_eq!(transport.assignment(A), [1]);
        assert_eq!(transport.assignment(B), [0]);
        assert_eq!(transport.position(B, 0), Some(2));
        let late = transport.commit(A, 0, Commit::offset(3));
        assert_eq!(late, Err(TransportError::NotAssigned { member: A, partition: 0 }));
        assert_eq!(transport.committed(0), Some(Commit::offset(2)));
        assert!(transport.poll(A, 10).iter().all(|record| record.partition == 1));
        transport.commit(B, 0, Commit::offset(4)).unwrap();
        assert_eq!(transport.committed(0), Some(Commit::offset(4)));
    }

    #[test]
    fn metadata_past_the_limit_is_refused_counted_in_bytes_of_text() {
        let transport = filled(1, 1).with_metadata_limit(4);
        transport.assign(A, &[0]).unwrap();
        transport.commit(A, 0, Commit { offset: 1, metadata: "AQID".into() }).unwrap();
        let long = Commit { offset: 1, metadata: "AQIDBA".into() };
        assert_eq!(
            transport.commit(A, 0, long),
            Err(TransportError::MetadataTooLarge { partition: 0, bytes: 6, limit: 4 })
        );
        // Counted as a broker counts a string: a character of two UTF-8 bytes counts one.
        let wide = Commit { offset: 1, metadata: "\u{e9}\u{e9}\u{e9}\u{e9}".into() };
        transport.commit(A, 0, wide.clone()).unwrap();
        assert_eq!(transport.committed(0), Some(wide));
    }

    #[test]
    fn a_member_never_assigned_cannot_commit() {
        let transport = filled(1, 1);
        let error = transport.commit(A, 0, Commit::offset(1)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "member-1 is not assigned partition 0 (revoked or never assigned)"
        );
    }

    #[test]
    fn assigning_a_missing_partition_changes_nothing() {
        let transport = filled(2, 1);
        transport.assign(A, &[0]).unwrap();
        let error = transport.assign(A, &[1, 2]).unwrap_err();
        assert_eq!(
            error,
            TransportError::Log(LogError::NoSuchPartition { partition: 2, partitions: 2 })
        );
        assert_eq!(transport.assignment(A), [0]);
    }

    #[test]
    fn a_paused_partition_keeps_its_position_until_resumed() {
        let transport = filled(2, 3);
        transport.assign(A, &[0, 1]).unwrap();
        transport.pause(A, &[0]).unwrap();
        assert!(transport.poll(A, 10).iter().all(|record| record.partition == 1));
        assert_eq!(transport.position(A, 0), Some(0));
        transport.resume(A, &[0]).unwrap();
        assert_eq!(offsets(&transport.poll(A, 10)), [(0, 0), (0, 1), (0, 2)]);
        assert_eq!(
            transport.pause(B, &[0]),
            Err(TransportError::NotAssigned { member: B, partition: 0 })
        );
    }

    #[test]
    fn producers_append_while_consumers_poll() {
        let transport = filled(1, 0);
        transport.assign(A, &[0]).unwrap();
        assert!(transport.poll(A, 10).is_empty());
        transport.append(9, 1, 10, 0);
        transport.append(9, 2, 10, 0);
        let versions: Vec<u64> =
            transport.poll(A, 10).iter().map(|record| record.version).collect();
        assert_eq!(versions, [1, 2]);
        assert_eq!(transport.end_offsets(), [2]);
    }

    #[test]
    fn a_paced_record_is_polled_only_from_its_produce_time_on() {
        let transport = EmbeddedTransport::new(Topic::new("events", 1).unwrap());
        transport.append_to(0, 1, 1, 0, 0).unwrap();
        transport.append_to(0, 1, 2, 0, 60_000_000_000).unwrap();
        transport.assign(A, &[0]).unwrap();
        transport.pace_from(std::time::Instant::now());
        assert_eq!(offsets(&transport.poll(A, 10)), [(0, 0)]);
        assert!(transport.poll(A, 10).is_empty(), "a minute ahead");
        assert_eq!(transport.position(A, 0), Some(1));
    }

    #[test]
    fn expansion_adds_partitions_that_can_then_be_assigned() {
        let transport = filled(1, 1);
        transport.expand_to(3).unwrap();
        assert_eq!(transport.partitions(), 3);
        transport.append_to(2, 5, 1, 10, 0).unwrap();
        transport.assign(A, &[0, 1, 2]).unwrap();
        assert_eq!(offsets(&transport.poll(A, 10)), [(0, 0), (2, 0)]);
        assert_eq!(transport.expand_to(2), Err(LogError::NotGrowing { current: 3, requested: 2 }));
        assert_eq!(transport.with_topic(|topic| topic.len()), 2);
    }
}
