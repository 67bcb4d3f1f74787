//! The embedded transport: the module's protocol over an in-process [`Topic`], with an
//! eager consumer group.
//!
//! # The group, step by step
//!
//! 1. Every join of a new id and every leave bumps the group's *epoch*; a member's state
//!    remembers the epoch of the assignment it holds (none yet: 0).
//! 2. The assignor gives partition `p` to the `p mod n`th of the `n` members, by ascending
//!    id.
//! 3. A poll of a member whose assignment is older than the group's: if it holds one, its
//!    listener's `revoked` runs for all its partitions (eager; even none), and they are
//!    released once it returns; if it holds none, it waits (the poll returns nothing) while
//!    another member still holds partitions of an older assignment, and then gets its share
//!    of the new one through `assigned`, each partition positioned at the committed offset.
//!    So no partition ever has two owners, and no member starts on the new assignment
//!    before every member has given the old one up, as in Kafka's classic protocol.
//! 4. A join under an id already in the group resets that member's state under a new client
//!    (the old client is fenced): its partitions are assigned again, from the commits, at
//!    the new client's first poll.
//! 5. Any other poll fetches: each unpaused partition's next records in offset order,
//!    partitions interleaved one record at a time (round-robin), the first partition
//!    rotating from one poll to the next so that a small `max_records` starves none.
//! 6. A record is visible to polls from its intended produce time on, counted from the
//!    epoch given to [`EmbeddedTransport::pace_from`] (a paced producer); before that call,
//!    and for records produced at 0, at once.
//!
//! Locks: the group's mutex is taken before the topic's lock, never the other way round;
//! appends take only the topic's write lock, so producers never wait on the group. No lock
//! is held while a listener runs, so that it can commit.

use parking_lot::{Mutex, RwLock};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use super::{
    Backend, Commit, Member, MemberId, RebalanceListener, SideTopics, Transport, TransportError,
};
use crate::pipeline::commit::DEFAULT_METADATA_LIMIT_BYTES;
use crate::pipeline::log::{LogError, Record, Topic};
use crate::pipeline::retry::RetryTopic;

/// The embedded log as a scenario's [`Backend`]: each cell's transport is a copy of the
/// log the scenario produced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Embedded {
    /// The most bytes of metadata text the group stores per commit (`--metadata-limit`).
    pub metadata_limit: usize,
}

impl Default for Embedded {
    fn default() -> Self {
        Self { metadata_limit: DEFAULT_METADATA_LIMIT_BYTES }
    }
}

impl Backend for Embedded {
    type Transport = EmbeddedTransport;

    fn open(&self, log: &Topic, epoch: Instant) -> Result<EmbeddedTransport, TransportError> {
        let transport =
            EmbeddedTransport::new(log.clone()).with_metadata_limit(self.metadata_limit);
        transport.pace_from(epoch);
        Ok(transport)
    }
}

/// One member's side of the group.
#[derive(Debug, Default)]
struct MemberState {
    /// The client that acts for it now: a join under its id replaces it.
    client: u64,
    /// The group epoch of the assignment it holds (0: none, before its first or since its
    /// last revocation).
    epoch: u64,
    /// Its next fetch offset for each partition it owns; the keys are its assignment.
    positions: BTreeMap<u32, u64>,
    /// Owned partitions that polls skip until resumed.
    paused: BTreeSet<u32>,
    /// Which owned partition the next poll starts with, so that every partition gets its
    /// turn to go first.
    next_first: usize,
}

/// The consumer group: who is in it, who owns what, and what was committed.
#[derive(Debug, Default)]
struct Group {
    /// Every member in the group, by ascending id (the assignor's order).
    members: BTreeMap<MemberId, MemberState>,
    /// Each owned partition's one owner.
    owners: BTreeMap<u32, MemberId>,
    /// The group's last commit of each partition.
    committed: BTreeMap<u32, Commit>,
    /// Bumped by every change of membership (module docs, step 1).
    epoch: u64,
    /// Clients handed out so far: each join's client gets the next number.
    clients: u64,
}

/// What a poll does, decided under the group's lock and done after it is released.
enum Turn {
    /// The client was replaced (or its member left): nothing.
    Fenced,
    /// Revoke these partitions through the listener, then release them.
    Revoke(Vec<u32>),
    /// Wait for other members to give their partitions up.
    Wait,
    /// Tell the listener of these newly assigned partitions.
    Assigned(Vec<u32>),
    /// Fetch records.
    Fetch,
}

impl Group {
    /// The state of `member` if `client` still acts for it.
    fn current(&mut self, member: MemberId, client: u64) -> Option<&mut MemberState> {
        self.members.get_mut(&member).filter(|state| state.client == client)
    }

    fn check_client(&mut self, member: MemberId, client: u64) -> Result<(), TransportError> {
        match self.current(member, client) {
            Some(_) => Ok(()),
            None => Err(TransportError::Fenced { member }),
        }
    }

    fn check_owner(&self, member: MemberId, partition: u32) -> Result<(), TransportError> {
        if self.owners.get(&partition) == Some(&member) {
            Ok(())
        } else {
            Err(TransportError::NotAssigned { member, partition })
        }
    }

    /// The partitions the assignor gives `member` among `partitions` (module docs, step 2).
    fn share(&self, member: MemberId, partitions: u32) -> Vec<u32> {
        let count = self.members.len() as u32;
        let Some(index) = self.members.keys().position(|&id| id == member) else {
            return Vec::new();
        };
        (0..partitions).filter(|partition| partition % count == index as u32).collect()
    }

    /// Whether a member other than `member` still owns partitions of an older assignment.
    fn revoking(&self, member: MemberId) -> bool {
        self.members.iter().any(|(&id, state)| {
            id != member && state.epoch != self.epoch && !state.positions.is_empty()
        })
    }

    /// Drops `member`'s ownership of `partitions`, with their positions and pauses.
    fn release(&mut self, member: MemberId, partitions: &[u32]) {
        for partition in partitions {
            if self.owners.get(partition) == Some(&member) {
                self.owners.remove(partition);
            }
        }
        if let Some(state) = self.members.get_mut(&member) {
            for partition in partitions {
                state.positions.remove(partition);
                state.paused.remove(partition);
            }
        }
    }

    /// What `member`'s poll does (module docs, step 3); assigns its share when it is time.
    fn turn(&mut self, member: MemberId, client: u64, partitions: u32) -> Turn {
        let epoch = self.epoch;
        let Some(state) = self.current(member, client) else {
            return Turn::Fenced;
        };
        if state.epoch == epoch {
            return Turn::Fetch;
        }
        // Every member that holds an older assignment is revoked, even one of nothing.
        if state.epoch != 0 {
            return Turn::Revoke(state.positions.keys().copied().collect());
        }
        if self.revoking(member) {
            return Turn::Wait;
        }
        let share = self.share(member, partitions);
        let committed: Vec<u64> = share
            .iter()
            .map(|partition| self.committed.get(partition).map_or(0, |commit| commit.offset))
            .collect();
        for &partition in &share {
            self.owners.insert(partition, member);
        }
        if let Some(state) = self.current(member, client) {
            state.positions = share.iter().copied().zip(committed).collect();
            state.paused.clear();
            state.next_first = 0;
            state.epoch = epoch;
        }
        Turn::Assigned(share)
    }
}

/// Up to `max_records` records of `batches`, one of each batch in turn (module docs, step 5)
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

/// What the transport and every member's client share.
#[derive(Debug)]
struct Broker {
    /// The log; read-locked by polls, write-locked by appends and expansions.
    topic: RwLock<Topic>,
    /// Membership, assignments, positions and commits.
    group: Mutex<Group>,
    /// Where the records' produce times count from; unset: every record is visible.
    epoch: std::sync::OnceLock<Instant>,
    /// The most bytes of metadata text one commit may carry (Kafka's
    /// `offset.metadata.max.bytes`).
    metadata_limit: AtomicUsize,
}

impl Broker {
    /// The newest produce time visible now (every one, unpaced).
    fn visible_ns(&self) -> u64 {
        self.epoch
            .get()
            .map_or(u64::MAX, |epoch| u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

/// A [`Transport`] over an in-process [`Topic`]: producers append through it while
/// consumers poll.
#[derive(Debug)]
pub struct EmbeddedTransport {
    broker: Arc<Broker>,
}

/// A member's client of an [`EmbeddedTransport`].
#[derive(Debug)]
pub struct EmbeddedMember {
    broker: Arc<Broker>,
    member: MemberId,
    /// Which client of the member it is: a later join under the same id fences it.
    client: u64,
}

impl EmbeddedTransport {
    /// A transport over `topic`, with an empty group that stores up to
    /// [`DEFAULT_METADATA_LIMIT_BYTES`] of metadata per commit, as a broker does by default.
    pub fn new(topic: Topic) -> Self {
        Self {
            broker: Arc::new(Broker {
                topic: RwLock::new(topic),
                group: Mutex::new(Group::default()),
                epoch: std::sync::OnceLock::new(),
                metadata_limit: AtomicUsize::new(DEFAULT_METADATA_LIMIT_BYTES),
            }),
        }
    }

    /// The same transport, its group storing up to `bytes` of metadata text per commit.
    pub fn with_metadata_limit(self, bytes: usize) -> Self {
        self.broker.metadata_limit.store(bytes, Ordering::Relaxed);
        self
    }

    /// Makes each record visible to polls only from its produce time on, counted from
    /// `epoch` (a paced producer writes it then). Only the first call counts.
    pub fn pace_from(&self, epoch: Instant) {
        let _ = self.broker.epoch.set(epoch);
    }

    /// Appends a record by its key's hash (see [`Topic::append`]).
    pub fn append(&self, key: u64, version: u64, payload_bytes: u32, produce_ns: u64) -> Record {
        self.broker.topic.write().append(key, version, payload_bytes, produce_ns)
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
        self.broker.topic.write().append_to(partition, key, version, payload_bytes, produce_ns)
    }

    /// Grows the topic (see [`Topic::expand_to`]) and rebalances the group, as a broker's
    /// members do once they see the new partition count: the new partitions are assigned
    /// with the rest.
    pub fn expand_to(&self, new_partitions: u32) -> Result<(), LogError> {
        let mut group = self.broker.group.lock();
        self.broker.topic.write().expand_to(new_partitions)?;
        group.epoch += 1;
        Ok(())
    }

    /// The log end offset of every partition, by partition number.
    pub fn end_offsets(&self) -> Vec<u64> {
        let topic = self.broker.topic.read();
        (0..topic.partitions()).map(|partition| topic.end_offset(partition).unwrap_or(0)).collect()
    }

    /// Runs `f` on the topic, read-locked (appends wait until it returns).
    pub fn with_topic<R>(&self, f: impl FnOnce(&Topic) -> R) -> R {
        f(&self.broker.topic.read())
    }

    /// The group's last commit of `partition`, if any.
    pub fn committed(&self, partition: u32) -> Option<Commit> {
        self.broker.group.lock().committed.get(&partition).cloned()
    }
}

impl Transport for EmbeddedTransport {
    type Member = EmbeddedMember;

    fn join(&self, member: MemberId) -> Result<Arc<EmbeddedMember>, TransportError> {
        let mut group = self.broker.group.lock();
        group.clients += 1;
        let client = group.clients;
        let state = MemberState { client, ..MemberState::default() };
        match group.members.insert(member, state) {
            // A restarted process: its partitions go to the new client, no one else's move.
            Some(replaced) => {
                let partitions: Vec<u32> = replaced.positions.into_keys().collect();
                group.release(member, &partitions);
            }
            None => group.epoch += 1,
        }
        Ok(Arc::new(EmbeddedMember { broker: Arc::clone(&self.broker), member, client }))
    }

    fn partitions(&self) -> u32 {
        self.broker.topic.read().partitions()
    }
}

impl EmbeddedMember {
    /// Up to `max_records` records of the member's unpaused partitions (module docs, step
    /// 5), its positions moved past them.
    fn fetch(&self, max_records: usize) -> Vec<Record> {
        let mut group = self.broker.group.lock();
        let Some(state) = group.current(self.member, self.client) else {
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
        let topic = self.broker.topic.read();
        let visible_ns = self.broker.visible_ns();
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

    /// Runs `revoked` for `partitions`, which the member still owns, then releases them.
    fn revoke(&self, partitions: &[u32], listener: &mut dyn RebalanceListener) {
        listener.revoked(partitions);
        let mut group = self.broker.group.lock();
        if let Some(state) = group.current(self.member, self.client) {
            state.epoch = 0; // holds no assignment until the next one
            group.release(self.member, partitions);
        }
    }

    /// Sets or clears the pause of `partitions`, which the member owns.
    fn set_paused(&self, partitions: &[u32], paused: bool) -> Result<(), TransportError> {
        let mut group = self.broker.group.lock();
        group.check_client(self.member, self.client)?;
        for &partition in partitions {
            group.check_owner(self.member, partition)?;
        }
        let Some(state) = group.current(self.member, self.client) else {
            return Ok(());
        };
        if paused {
            state.paused.extend(partitions.iter().copied());
        } else {
            state.paused.retain(|partition| !partitions.contains(partition));
        }
        Ok(())
    }
}

impl Member for EmbeddedMember {
    fn id(&self) -> MemberId {
        self.member
    }

    fn poll(
        &self,
        max_records: usize,
        listener: &mut dyn RebalanceListener,
    ) -> Result<Vec<Record>, TransportError> {
        let partitions = self.broker.topic.read().partitions();
        let turn = self.broker.group.lock().turn(self.member, self.client, partitions);
        Ok(match turn {
            Turn::Fenced | Turn::Wait => Vec::new(),
            Turn::Revoke(partitions) => {
                self.revoke(&partitions, listener);
                Vec::new()
            }
            Turn::Assigned(partitions) => {
                listener.assigned(&partitions);
                Vec::new()
            }
            Turn::Fetch => self.fetch(max_records),
        })
    }

    fn assignment(&self) -> Vec<u32> {
        let mut group = self.broker.group.lock();
        let state = group.current(self.member, self.client);
        state.map(|state| state.positions.keys().copied().collect()).unwrap_or_default()
    }

    fn position(&self, partition: u32) -> Option<u64> {
        let mut group = self.broker.group.lock();
        group.current(self.member, self.client)?.positions.get(&partition).copied()
    }

    fn seek(&self, partition: u32, offset: u64) -> Result<(), TransportError> {
        let mut group = self.broker.group.lock();
        group.check_client(self.member, self.client)?;
        group.check_owner(self.member, partition)?;
        if let Some(state) = group.current(self.member, self.client) {
            state.positions.insert(partition, offset);
        }
        Ok(())
    }

    fn commit(&self, partition: u32, offset: u64, metadata: &str) -> Result<(), TransportError> {
        let mut group = self.broker.group.lock();
        group.check_client(self.member, self.client)?;
        group.check_owner(self.member, partition)?;
        // A broker compares Java's `String.length()`: UTF-16 code units, one per character
        // of base64.
        let bytes = metadata.encode_utf16().count();
        let limit = self.broker.metadata_limit.load(Ordering::Relaxed);
        if bytes > limit {
            return Err(TransportError::MetadataTooLarge { partition, bytes, limit });
        }
        group.committed.insert(partition, Commit { offset, metadata: metadata.to_owned() });
        Ok(())
    }

    fn committed(&self, partition: u32) -> Result<Option<Commit>, TransportError> {
        self.broker.topic.read().partition(partition)?;
        Ok(self.broker.group.lock().committed.get(&partition).cloned())
    }

    fn high_watermark(&self, partition: u32) -> Result<u64, TransportError> {
        Ok(self.broker.topic.read().end_offset(partition)?)
    }

    fn pause(&self, partitions: &[u32]) -> Result<(), TransportError> {
        self.set_paused(partitions, true)
    }

    fn resume(&self, partitions: &[u32]) -> Result<(), TransportError> {
        self.set_paused(partitions, false)
    }

    fn leave(&self, listener: &mut dyn RebalanceListener) {
        let owned = self.assignment();
        if !owned.is_empty() {
            self.revoke(&owned, listener);
        }
        let mut group = self.broker.group.lock();
        if group.current(self.member, self.client).is_some() {
            group.release(self.member, &owned);
            group.members.remove(&self.member);
            group.epoch += 1;
        }
    }
}

/// The embedded log's side topics: in-process.
impl SideTopics for RetryTopic {
    fn retry(&self, record: &Record, due_ns: u64) -> Result<(), TransportError> {
        self.send(record, due_ns);
        Ok(())
    }

    fn due(&self, now_ns: u64) -> Result<Vec<(u32, u64)>, TransportError> {
        Ok(self.poll_due(now_ns))
    }

    fn dead_letter(&self, _: &Record) -> Result<(), TransportError> {
        self.count_dead_letter();
        Ok(())
    }

    fn dead_letters(&self) -> Result<u64, TransportError> {
        Ok(self.dead_lettered())
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

    /// What a listener was told, in order: `(assigned?, partitions)`.
    #[derive(Debug, Default)]
    struct Told(Vec<(bool, Vec<u32>)>);

    impl RebalanceListener for Told {
        fn assigned(&mut self, partitions: &[u32]) {
            self.0.push((true, partitions.to_vec()));
        }

        fn revoked(&mut self, partitions: &[u32]) {
            self.0.push((false, partitions.to_vec()));
        }
    }

    /// Polls `member` once for records, telling a fresh listener.
    fn poll(member: &EmbeddedMember, max_records: usize) -> Vec<Record> {
        member.poll(max_records, &mut Told::default()).unwrap()
    }

    /// Polls `member` once and returns what its listener was told.
    fn told(member: &EmbeddedMember) -> Vec<(bool, Vec<u32>)> {
        let mut told = Told::default();
        assert!(
            member.poll(10, &mut told).unwrap().is_empty(),
            "a rebalancing poll returns no records"
        );
        told.0
    }

    /// Joins `member` and polls once for its assignment.
    fn joined(transport: &EmbeddedTransport, member: MemberId) -> Arc<EmbeddedMember> {
        let client = transport.join(member).unwrap();
        assert_eq!(told(&client).len(), 1, "{member}: assigned at its first poll");
        client
    }

    fn offsets(records: &[Record]) -> Vec<(u32, u64)> {
        records.iter().map(|record| (record.partition, record.offset)).collect()
    }

    #[test]
    fn each_partition_is_polled_in_offset_order() {
        let transport = filled(2, 20);
        let a = joined(&transport, A);
        let mut seen: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
        loop {
            let records = poll(&a, 3);
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
        assert_eq!(a.position(0), Some(20));
        assert_eq!(a.high_watermark(0), Ok(20));
    }

    #[test]
    fn one_poll_interleaves_partitions_round_robin() {
        let transport = filled(3, 4);
        let a = joined(&transport, A);
        assert_eq!(offsets(&poll(&a, 7)), [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 2)]);
        // The next poll starts with the next partition.
        assert_eq!(offsets(&poll(&a, 3)), [(1, 2), (2, 2), (0, 3)]);
    }

    #[test]
    fn an_exhausted_partition_leaves_the_rest_to_the_others() {
        let transport = filled(2, 1);
        transport.append_to(1, 1, 2, 10, 0).unwrap();
        transport.append_to(1, 1, 3, 10, 0).unwrap();
        let a = joined(&transport, A);
        assert_eq!(offsets(&poll(&a, 10)), [(0, 0), (1, 0), (1, 1), (1, 2)]);
        assert!(poll(&a, 10).is_empty());
    }

    #[test]
    fn the_group_shares_the_partitions_and_members_keep_their_own_positions() {
        let transport = filled(3, 5);
        let (a, b) = (transport.join(A).unwrap(), transport.join(B).unwrap());
        // Partition p goes to the (p mod 2)th member by id; the first poll assigns.
        assert_eq!(told(&a), [(true, vec![0, 2])]);
        assert_eq!(told(&b), [(true, vec![1])]);
        assert_eq!(offsets(&poll(&a, 2)), [(0, 0), (2, 0)]);
        assert_eq!(offsets(&poll(&b, 1)), [(1, 0)]);
        assert_eq!((a.position(0), b.position(1), a.position(1)), (Some(1), Some(1), None));
        // A member with nothing to own is told so.
        let c = transport.join(MemberId(3)).unwrap();
        assert_eq!(told(&c), [], "waits while the others give their partitions up");
        assert_eq!(told(&a), [(false, vec![0, 2])]);
        assert_eq!(told(&c), [], "b still holds partition 1");
        assert_eq!(told(&b), [(false, vec![1])]);
        assert_eq!(told(&c), [(true, vec![2])]);
        assert_eq!(told(&a), [(true, vec![0])]);
        assert_eq!(told(&b), [(true, vec![1])]);
        assert_eq!(a.position(0), Some(0), "nothing was committed: from the start again");
    }

    #[test]
    fn commit_committed_and_seek_round_trip() {
        let transport = filled(1, 10);
        let a = joined(&transport, A);
        assert_eq!(a.committed(0), Ok(None));
        assert_eq!(poll(&a, 8).len(), 8);
        a.commit(0, 5, "AQID").unwrap();
        assert_eq!(a.committed(0), Ok(Some(Commit { offset: 5, metadata: "AQID".into() })));
        assert_eq!(a.position(0), Some(8));
        a.seek(0, 5).unwrap();
        assert_eq!(poll(&a, 1)[0].offset, 5);
        assert!(a.committed(1).is_err(), "no such partition");
    }

    /// Commits `partition` at its position when it is revoked.
    struct CommitOnRevoke<'a>(&'a EmbeddedMember);

    impl RebalanceListener for CommitOnRevoke<'_> {
        fn assigned(&mut self, _: &[u32]) {}

        fn revoked(&mut self, partitions: &[u32]) {
            for &partition in partitions {
                let position = self.0.position(partition).unwrap();
                self.0.commit(partition, position, "").unwrap();
            }
        }
    }

    #[test]
    fn a_revoked_member_commits_in_the_callback_and_is_refused_after() {
        let transport = filled(2, 10);
        let a = joined(&transport, A);
        assert_eq!(poll(&a, 6).len(), 6);
        a.commit(0, 2, "").unwrap();
        // B joins: A gives both partitions up at its next poll, committing its positions.
        let b = transport.join(B).unwrap();
        assert!(a.poll(10, &mut CommitOnRevoke(&a)).unwrap().is_empty());
        assert_eq!(a.assignment(), Vec::<u32>::new());
        assert_eq!(transport.committed(0), Some(Commit::offset(3)));
        let late = a.commit(1, 4, "");
        assert_eq!(late, Err(TransportError::NotAssigned { member: A, partition: 1 }));
        assert_eq!(told(&b), [(true, vec![1])]);
        assert_eq!(b.position(1), Some(3), "from the commit made while it was revoked");
        b.commit(1, 4, "").unwrap();
        assert_eq!(transport.committed(1), Some(Commit::offset(4)));
    }

    #[test]
    fn a_member_never_assigned_cannot_commit_or_pause() {
        let transport = filled(2, 1);
        let a = transport.join(A).unwrap();
        let error = a.commit(0, 1, "").unwrap_err();
        assert_eq!(
            error.to_string(),
            "member-1 is not assigned partition 0 (revoked or never assigned)"
        );
        assert_eq!(a.pause(&[0]), Err(TransportError::NotAssigned { member: A, partition: 0 }));
    }

    #[test]
    fn a_client_joining_under_a_taken_id_fences_the_old_one_and_resumes_from_the_commits() {
        let transport = filled(2, 10);
        let (old, b) = (transport.join(A).unwrap(), transport.join(B).unwrap());
        assert_eq!((told(&old), told(&b)), (vec![(true, vec![0])], vec![(true, vec![1])]));
        assert_eq!(poll(&old, 10).len(), 10);
        old.commit(0, 4, "").unwrap();
        let new = transport.join(A).unwrap();
        assert!(poll(&old, 10).is_empty());
        assert_eq!(old.commit(0, 9, ""), Err(TransportError::Fenced { member: A }));
        assert_eq!(told(&new), [(true, vec![0])]);
        assert_eq!(new.position(0), Some(4));
        let mut unchanged = Told::default();
        assert_eq!(b.poll(0, &mut unchanged).unwrap(), []);
        assert!(unchanged.0.is_empty(), "b keeps its partition: no rebalance");
        assert_eq!(b.assignment(), [1]);
    }

    #[test]
    fn a_member_that_leaves_gives_its_partitions_up_and_the_rest_are_rebalanced() {
        let transport = filled(2, 10);
        let (a, b) = (transport.join(A).unwrap(), transport.join(B).unwrap());
        assert_eq!((told(&a), told(&b)), (vec![(true, vec![0])], vec![(true, vec![1])]));
        assert_eq!(poll(&b, 3).len(), 3);
        b.leave(&mut CommitOnRevoke(&b));
        assert_eq!(transport.committed(1), Some(Commit::offset(3)));
        assert_eq!(b.commit(1, 5, ""), Err(TransportError::Fenced { member: B }));
        assert_eq!(told(&a), [(false, vec![0])]);
        assert_eq!(told(&a), [(true, vec![0, 1])]);
        assert_eq!(a.position(1), Some(3));
    }

    #[test]
    fn metadata_past_the_limit_is_refused_counted_as_a_broker_counts_a_string() {
        let transport = filled(1, 1).with_metadata_limit(4);
        let a = joined(&transport, A);
        a.commit(0, 1, "AQID").unwrap();
        assert_eq!(
            a.commit(0, 1, "AQIDBA"),
            Err(TransportError::MetadataTooLarge { partition: 0, bytes: 6, limit: 4 })
        );
        // A broker counts UTF-16 code units: a character of two UTF-8 bytes counts one.
        a.commit(0, 1, "\u{e9}\u{e9}\u{e9}\u{e9}").unwrap();
        assert_eq!(transport.committed(0).unwrap().metadata, "\u{e9}\u{e9}\u{e9}\u{e9}");
    }

    #[test]
    fn a_paused_partition_keeps_its_position_until_resumed() {
        let transport = filled(2, 3);
        let a = joined(&transport, A);
        a.pause(&[0]).unwrap();
        assert!(poll(&a, 10).iter().all(|record| record.partition == 1));
        assert_eq!(a.position(0), Some(0));
        a.resume(&[0]).unwrap();
        assert_eq!(offsets(&poll(&a, 10)), [(0, 0), (0, 1), (0, 2)]);
    }

    #[test]
    fn producers_append_while_consumers_poll() {
        let transport = filled(1, 0);
        let a = joined(&transport, A);
        assert!(poll(&a, 10).is_empty());
        transport.append(9, 1, 10, 0);
        transport.append(9, 2, 10, 0);
        let versions: Vec<u64> = poll(&a, 10).iter().map(|record| record.version).collect();
        assert_eq!(versions, [1, 2]);
        assert_eq!(transport.end_offsets(), [2]);
        assert_eq!(a.high_watermark(0), Ok(2));
    }

    #[test]
    fn a_paced_record_is_polled_only_from_its_produce_time_on() {
        let transport = EmbeddedTransport::new(Topic::new("events", 1).unwrap());
        transport.append_to(0, 1, 1, 0, 0).unwrap();
        transport.append_to(0, 1, 2, 0, 60_000_000_000).unwrap();
        let a = joined(&transport, A);
        transport.pace_from(Instant::now());
        assert_eq!(offsets(&poll(&a, 10)), [(0, 0)]);
        assert!(poll(&a, 10).is_empty(), "a minute ahead");
        assert_eq!(a.position(0), Some(1));
    }

    #[test]
    fn an_expansion_rebalances_the_new_partitions_in() {
        let transport = filled(1, 1);
        let a = joined(&transport, A);
        transport.expand_to(3).unwrap();
        assert_eq!(transport.partitions(), 3);
        transport.append_to(2, 5, 1, 10, 0).unwrap();
        assert_eq!(told(&a), [(false, vec![0])]);
        assert_eq!(told(&a), [(true, vec![0, 1, 2])]);
        assert_eq!(offsets(&poll(&a, 10)), [(0, 0), (2, 0)]);
        assert_eq!(transport.expand_to(2), Err(LogError::NotGrowing { current: 3, requested: 2 }));
        assert_eq!(transport.with_topic(|topic| topic.len()), 2);
    }

    #[test]
    fn the_embedded_backend_copies_the_log_and_paces_it() {
        let mut log = Topic::new("events", 2).unwrap();
        log.append_to(1, 3, 1, 0, 0).unwrap();
        log.append_to(1, 3, 2, 0, 60_000_000_000).unwrap();
        let backend = Embedded { metadata_limit: 8 };
        let transport = backend.open(&log, Instant::now()).unwrap();
        let a = joined(&transport, A);
        assert_eq!(offsets(&poll(&a, 10)), [(1, 0)]);
        assert_eq!(transport.with_topic(Clone::clone), log);
        assert!(a.commit(1, 1, "123456789").is_err(), "the backend's limit");
    }
}
