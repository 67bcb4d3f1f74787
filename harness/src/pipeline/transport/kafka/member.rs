//! A member's client of the group: its polls (step 4), commits (step 5) and end.

use super::gone::Gone;
use super::group::{apply, commit_in, commit_within, Change, GroupView, MemberContext, Settings};
use super::produce::{record_of, MockProducer};
use super::settings::{broker, POLL_WAIT, PROBE_EVERY, PROBE_WAIT};
use crate::pipeline::log::{LogError, Record};
use crate::pipeline::transport::options::CommitObserver;
use crate::pipeline::transport::{Commit, Member, MemberId, RebalanceListener, TransportError};
use parking_lot::Mutex;
use rdkafka::consumer::BaseConsumer;
use rdkafka::consumer::Consumer;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::Producer;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::{BTreeMap, BTreeSet};
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use std::{fmt, thread};

/// A member's side of the group.
#[derive(Debug, Default)]
pub(super) struct MemberState {
    /// The partitions the broker has assigned the member.
    pub(super) owned: BTreeSet<u32>,
    /// Whether the listener was told of `owned` (module docs, step 3): until then polls
    /// return nothing and the assignment is empty.
    pub(super) holding: bool,
    /// The next offset of each owned partition the listener was given.
    pub(super) positions: BTreeMap<u32, u64>,
    /// The membership epoch the member's hold belongs to.
    pub(super) epoch: u64,
    /// Set by a client error, cleared once the broker answers again.
    pub(super) unanswered: Option<Unanswered>,
}

/// Since when the broker may not have answered the member's client (module docs, step 4).
#[derive(Debug)]
pub(super) struct Unanswered {
    pub(super) since: Instant,
    /// The client's error that raised the doubt.
    pub(super) first: String,
    /// When the last metadata request checked it.
    pub(super) probed: Option<Instant>,
}

/// A member's client of a [`KafkaTransport`](super::KafkaTransport).
pub struct KafkaMember {
    /// Closed by the member's drop (on a thread of its own), while the cluster still runs.
    pub(super) consumer: ManuallyDrop<BaseConsumer<MemberContext>>,
    pub(super) id: MemberId,
    pub(super) topic: String,
    pub(super) partitions: u32,
    pub(super) end_offsets: Arc<[u64]>,
    pub(super) settings: Settings,
    pub(super) group: Arc<GroupView>,
    pub(super) state: Mutex<MemberState>,
    /// Set by a crash: the client is destroyed without closing.
    pub(super) crashed: AtomicBool,
    /// Told of every commit the group took (a test's hook).
    pub(super) commits: Option<Arc<dyn CommitObserver>>,
    /// Set once a request of the cell found no broker: the member's requests then fail at
    /// once.
    pub(super) gone: Arc<Gone>,
    /// The log's producer, whose failure (a paced record the broker did not take) ends
    /// the member's polls; on the mock its client runs the cluster, kept up until the
    /// member is gone.
    pub(super) producer: Arc<MockProducer>,
}

impl fmt::Debug for KafkaMember {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KafkaMember")
            .field("id", &self.id)
            .field("topic", &self.topic)
            .field("state", &*self.state.lock())
            .finish_non_exhaustive()
    }
}

impl Drop for KafkaMember {
    fn drop(&mut self) {
        self.group.record(self.id, &BTreeSet::new());
        if self.crashed.load(Ordering::Acquire) {
            self.end_aside(End::Crash);
            return;
        }
        // From here the callback makes the revocations itself, since no poll will.
        self.close_changes();
        self.unsubscribe_first();
        self.end_aside(End::Close);
    }
}

/// How a member's client ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum End {
    /// Closed (rust-rdkafka's drop): the group's leave, then the connections.
    Close,
    /// Destroyed without closing, as a crashed process's client goes: no leave (librdkafka's
    /// `RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE`), no commit.
    Crash,
}

/// Ends `consumer` the way `end` says.
pub(super) fn end_client(consumer: BaseConsumer<MemberContext>, end: End) {
    if end == End::Close {
        drop(consumer);
        return;
    }
    // SAFETY: the pointer is the consumer's live client, destroyed here once; the wrapper
    // is then forgotten so that nothing touches the client again (its queue reference and
    // context are leaked: a few hundred bytes per crash). librdkafka's destroy joins the
    // client's threads, so no callback runs after it returns.
    unsafe {
        rdkafka::bindings::rd_kafka_destroy_flags(
            consumer.client().native_ptr(),
            rdkafka::bindings::RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE,
        );
    }
    std::mem::forget(consumer);
}

impl KafkaMember {
    /// A partition list of `partitions` of the member's topic.
    pub(super) fn list(&self, partitions: &[u32]) -> TopicPartitionList {
        let mut tpl = TopicPartitionList::with_capacity(partitions.len());
        for &partition in partitions {
            tpl.add_partition(&self.topic, partition as i32);
        }
        tpl
    }

    /// From now on the rebalance callback makes the broker's changes itself; the queued
    /// ones are made now, the listener not told.
    pub(super) fn close_changes(&self) {
        let context = self.consumer.context();
        context.closing.store(true, Ordering::Release);
        let queued: Vec<Change> = context.changes.lock().drain(..).collect();
        for change in queued {
            let partitions = match &change {
                Change::Assign(partitions) | Change::Revoke(partitions) => partitions,
            };
            let _ = apply(&self.consumer, &self.list(partitions), &change);
        }
    }

    /// Leaves the group before the close: an unsubscribe, then polls, whose callback makes
    /// the revocation, until the client holds nothing (at most the transport's timeout, or
    /// a second). The close then has nothing to revoke: a revocation made while librdkafka
    /// closes a KIP-848 member can wait for ever on its group's thread.
    pub(super) fn unsubscribe_first(&self) {
        if self.consumer.context().held.lock().is_empty() {
            return;
        }
        self.consumer.unsubscribe();
        let deadline = Instant::now() + self.settings.timeout.min(Duration::from_secs(1));
        while !self.consumer.context().held.lock().is_empty() && Instant::now() < deadline {
            let _ = self.consumer.poll(Duration::from_millis(10));
        }
    }

    /// Ends the client as `end` says on a thread of its own, waiting at most the
    /// transport's timeout: a broker that stopped answering would hold the member's caller
    /// for the client's session. An end still going on then finishes in the background, the
    /// cluster kept up until it does.
    pub(super) fn end_aside(&mut self, end: End) {
        // SAFETY: called once, from the member's drop; the field is not used after it.
        let consumer = unsafe { ManuallyDrop::take(&mut self.consumer) };
        let cluster = Arc::clone(&self.producer);
        let (closed, done) = mpsc::channel();
        let spawned = thread::Builder::new().name("kafka-close".into()).spawn(move || {
            end_client(consumer, end);
            drop(cluster);
            let _ = closed.send(());
        });
        // A thread that cannot start drops the client here (closed). A broker that is gone
        // is not waited for.
        let wait = if self.gone.is_gone() { Duration::ZERO } else { self.settings.timeout };
        if spawned.is_ok() {
            let _ = done.recv_timeout(wait);
        }
    }

    /// Notes a client error: the broker may have stopped answering.
    pub(super) fn broker_error(&self, error: &KafkaError) {
        self.consumer.context().seen.error();
        let mut state = self.state.lock();
        state.unanswered.get_or_insert_with(|| Unanswered {
            since: Instant::now(),
            first: error.to_string(),
            probed: None,
        });
    }

    /// Fails once no broker has answered for the transport's timeout since a client error:
    /// a metadata request, at most every [`PROBE_EVERY`], tells a broker that answers again
    /// from one that is gone (module docs, step 4).
    pub(super) fn check_broker(&self) -> Result<(), TransportError> {
        let (since, first) = {
            let mut state = self.state.lock();
            let Some(unanswered) = &mut state.unanswered else {
                return Ok(());
            };
            if unanswered.probed.is_some_and(|at| at.elapsed() < PROBE_EVERY) {
                return Ok(());
            }
            unanswered.probed = Some(Instant::now());
            (unanswered.since, unanswered.first.clone())
        };
        match self.consumer.fetch_metadata(Some(&self.topic), PROBE_WAIT) {
            Ok(_) => {
                self.state.lock().unanswered = None;
                Ok(())
            }
            Err(error) if since.elapsed() >= self.settings.timeout => {
                let words = format!(
                    "no broker answered for {} ms (--kafka-timeout-ms): {first}; then {error}",
                    self.settings.timeout.as_millis()
                );
                self.gone.note(&words);
                Err(broker(words))
            }
            Err(_) => Ok(()),
        }
    }

    pub(super) fn check_owner(&self, partition: u32) -> Result<(), TransportError> {
        if self.state.lock().owned.contains(&partition) {
            Ok(())
        } else {
            Err(TransportError::NotAssigned { member: self.id, partition })
        }
    }

    /// Ends the member's hold if the membership changed since it began (module docs, step
    /// 3): the listener is revoked what it holds, which stays the member's on the broker.
    pub(super) fn membership_changed(&self, listener: &mut dyn RebalanceListener) -> bool {
        let epoch = self.group.epoch.load(Ordering::Acquire);
        let held: Vec<u32> = {
            let mut state = self.state.lock();
            if state.epoch == epoch {
                return false;
            }
            state.epoch = epoch;
            if !state.holding {
                return false;
            }
            state.owned.iter().copied().collect()
        };
        listener.revoked(&held);
        let mut state = self.state.lock();
        state.holding = false;
        state.positions.clear();
        drop(state);
        let _ = self.consumer.pause(&self.list(&held));
        true
    }

    /// Makes the broker's next queued change, telling the listener if the member holds
    /// its partitions; whether there was one.
    pub(super) fn next_change(&self, listener: &mut dyn RebalanceListener) -> bool {
        let Some(change) = self.consumer.context().changes.lock().pop_front() else {
            return false;
        };
        let holding = self.state.lock().holding;
        match &change {
            Change::Revoke(partitions) => {
                if holding {
                    listener.revoked(partitions);
                }
                let _ = apply(&self.consumer, &self.list(partitions), &change);
                let mut state = self.state.lock();
                for partition in partitions {
                    state.owned.remove(partition);
                    state.positions.remove(partition);
                }
                self.group.record(self.id, &state.owned);
            }
            Change::Assign(partitions) => {
                let tpl = self.list(partitions);
                let _ = apply(&self.consumer, &tpl, &change);
                let mut state = self.state.lock();
                state.owned.extend(partitions.iter().copied());
                self.group.record(self.id, &state.owned);
                drop(state);
                if holding {
                    listener.assigned(partitions);
                } else {
                    let _ = self.consumer.pause(&tpl);
                }
            }
        }
        true
    }

    /// Begins the member's hold once the broker's assignment has settled: the listener is
    /// assigned what the member owns.
    pub(super) fn take_hold(&self, listener: &mut dyn RebalanceListener) {
        // Serve the client's events (the rebalance callback among them); what it fetched
        // of partitions not held is dropped, and the hold seeks anyway.
        if let Some(Err(error)) = self.consumer.poll(POLL_WAIT) {
            self.broker_error(&error);
        }
        if !self.consumer.context().changes.lock().is_empty()
            || !self.group.settled(self.partitions)
        {
            return;
        }
        let owned: Vec<u32> = {
            let mut state = self.state.lock();
            state.holding = true;
            state.owned.iter().copied().collect()
        };
        listener.assigned(&owned);
    }

    /// Up to `max_records` records from the client's queue (module docs, step 4).
    pub(super) fn fetch(&self, max_records: usize) -> Vec<Record> {
        let mut polled = Vec::new();
        let mut wait = POLL_WAIT;
        while polled.len() < max_records {
            let message = match self.consumer.poll(wait) {
                Some(Ok(message)) => message,
                Some(Err(error)) => {
                    self.broker_error(&error);
                    break;
                }
                None => break,
            };
            wait = Duration::ZERO;
            let Some(record) = record_of(&message) else {
                continue;
            };
            let mut state = self.state.lock();
            state.unanswered = None;
            if state.holding && state.positions.contains_key(&record.partition) {
                state.positions.insert(record.partition, record.offset + 1);
                polled.push(record);
            }
            drop(state);
            if !self.consumer.context().changes.lock().is_empty() {
                break;
            }
        }
        polled
    }

    /// Sets the pause of `partitions`, which the member owns.
    pub(super) fn set_paused(
        &self,
        partitions: &[u32],
        paused: bool,
    ) -> Result<(), TransportError> {
        for &partition in partitions {
            self.check_owner(partition)?;
        }
        let tpl = self.list(partitions);
        let done = if paused { self.consumer.pause(&tpl) } else { self.consumer.resume(&tpl) };
        done.map_err(|error| broker(format!("cannot pause or resume: {error}")))
    }

    /// A refused commit of `partition` with `bytes` characters of metadata in the
    /// transport's terms, with the broker's words where it has no term for them.
    pub(super) fn commit_error(
        &self,
        partition: u32,
        bytes: usize,
        error: &KafkaError,
    ) -> TransportError {
        match error.rdkafka_error_code() {
            Some(RDKafkaErrorCode::OffsetMetadataTooLarge) => TransportError::MetadataRefused {
                partition,
                bytes,
                limit: self.settings.metadata_limit,
            },
            Some(RDKafkaErrorCode::FencedInstanceId) => TransportError::Fenced { member: self.id },
            // The group no longer counts the member as the partition's owner: its session
            // ended while no coordinator answered (a broker lost), or a rebalance moved on.
            Some(
                RDKafkaErrorCode::UnknownMemberId
                | RDKafkaErrorCode::IllegalGeneration
                | RDKafkaErrorCode::RebalanceInProgress
                | RDKafkaErrorCode::FencedMemberEpoch
                | RDKafkaErrorCode::StaleMemberEpoch,
            ) => TransportError::NotAssigned { member: self.id, partition },
            _ => broker(format!("cannot commit partition {partition}: {error}")),
        }
    }
}

impl Member for KafkaMember {
    fn id(&self) -> MemberId {
        self.id
    }

    fn poll(
        &self,
        max_records: usize,
        listener: &mut dyn RebalanceListener,
    ) -> Result<Vec<Record>, TransportError> {
        self.gone.check()?;
        self.check_broker()?;
        if self.settings.watched {
            // Serves the log producer's statistics, which nothing else polls once a backlog
            // is produced.
            self.producer.poll(Duration::ZERO);
        }
        // A paced record the broker did not take would be waited for in vain.
        let delivery = self.producer.context();
        if let Some(failure) = delivery.failure.lock().clone() {
            let words = format!("the log's producer failed: {failure}");
            if delivery.timed_out.load(Ordering::Relaxed) {
                self.gone.note(&words);
            }
            return Err(broker(words));
        }
        if self.membership_changed(listener) || self.next_change(listener) {
            return Ok(Vec::new());
        }
        if !self.state.lock().holding {
            self.take_hold(listener);
            return Ok(Vec::new());
        }
        Ok(self.fetch(max_records))
    }

    fn assignment(&self) -> Vec<u32> {
        let state = self.state.lock();
        if state.holding {
            state.owned.iter().copied().collect()
        } else {
            Vec::new()
        }
    }

    fn position(&self, partition: u32) -> Option<u64> {
        self.state.lock().positions.get(&partition).copied()
    }

    fn seek(&self, partition: u32, offset: u64) -> Result<(), TransportError> {
        self.check_owner(partition)?;
        self.gone.check()?;
        let to = Offset::Offset(offset as i64);
        // A partition just assigned is not yet fetching, and librdkafka refuses to seek it
        // (`ERR__STATE`) until it is: a matter of milliseconds.
        let deadline = Instant::now() + self.settings.timeout;
        loop {
            match self.consumer.seek(&self.topic, partition as i32, to, self.settings.timeout) {
                Ok(()) => break,
                Err(error)
                    if error.rdkafka_error_code() == Some(RDKafkaErrorCode::State)
                        && Instant::now() < deadline =>
                {
                    thread::sleep(Duration::from_millis(2));
                }
                Err(error) => {
                    return Err(broker(format!("cannot seek partition {partition}: {error}")));
                }
            }
        }
        self.state.lock().positions.insert(partition, offset);
        Ok(())
    }

    fn commit(&self, partition: u32, offset: u64, metadata: &str) -> Result<(), TransportError> {
        self.check_owner(partition)?;
        self.gone.check()?;
        // A broker compares Java's `String.length()`: UTF-16 code units.
        let bytes = metadata.encode_utf16().count();
        let limit = self.settings.metadata_limit;
        if bytes > limit {
            return Err(TransportError::MetadataTooLarge { partition, bytes, limit });
        }
        let mut tpl = TopicPartitionList::with_capacity(1);
        tpl.add_partition(&self.topic, partition as i32).set_metadata(metadata);
        tpl.set_partition_offset(&self.topic, partition as i32, Offset::Offset(offset as i64))
            .map_err(|error| broker(format!("cannot commit partition {partition}: {error}")))?;
        match commit_within(&self.consumer, &tpl, self.settings.timeout) {
            Some(Ok(())) => {
                if let Some(observer) = &self.commits {
                    observer.committed(&self.topic, partition, offset);
                }
                Ok(())
            }
            Some(Err(error)) => Err(self.commit_error(partition, bytes, &error)),
            None => {
                let words = format!(
                    "no answer to the commit of partition {partition} within {} ms \
                     (--kafka-timeout-ms)",
                    self.settings.timeout.as_millis()
                );
                self.gone.note(&words);
                Err(broker(words))
            }
        }
    }

    fn committed(&self, partition: u32) -> Result<Option<Commit>, TransportError> {
        self.gone.check()?;
        if partition >= self.partitions {
            let partitions = self.partitions;
            return Err(TransportError::Log(LogError::NoSuchPartition { partition, partitions }));
        }
        let committed = self
            .consumer
            .committed_offsets(self.list(&[partition]), self.settings.timeout)
            .map_err(|error| broker(format!("cannot read the commits: {error}")))?;
        Ok(commit_in(&committed, &self.topic, partition))
    }

    fn high_watermark(&self, partition: u32) -> Result<u64, TransportError> {
        self.end_offsets.get(partition as usize).copied().ok_or(TransportError::Log(
            LogError::NoSuchPartition { partition, partitions: self.partitions },
        ))
    }

    fn pause(&self, partitions: &[u32]) -> Result<(), TransportError> {
        self.set_paused(partitions, true)
    }

    fn resume(&self, partitions: &[u32]) -> Result<(), TransportError> {
        self.set_paused(partitions, false)
    }

    fn leave(&self, listener: &mut dyn RebalanceListener) {
        let held = self.assignment();
        if !held.is_empty() {
            listener.revoked(&held);
        }
        {
            let mut state = self.state.lock();
            state.holding = false;
            state.positions.clear();
            state.owned.clear();
        }
        if self.group.members.lock().remove(&self.id).is_some() {
            self.group.epoch.fetch_add(1, Ordering::AcqRel);
        }
        // The client leaves the broker's group when it is dropped (its close): an
        // unsubscribe first can leave the close waiting on librdkafka's unassign.
    }

    fn crash(&self) {
        self.crashed.store(true, Ordering::Release);
    }
}
