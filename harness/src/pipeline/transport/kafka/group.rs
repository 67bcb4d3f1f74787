//! Step 3: what the transport knows of the group, and a member's consumer context, whose
//! rebalance callback queues the broker's changes for the member's next poll.

use super::seen::{Role, Seen};
use crate::pipeline::transport::options::GroupProtocol;
use crate::pipeline::transport::{ClientCounts, Commit, MemberId};
use parking_lot::Mutex;
use rdkafka::consumer::Consumer;
use rdkafka::consumer::{BaseConsumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::statistics::Statistics;
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the transport knows of the group's membership and assignment (module docs, step 3).
#[derive(Debug, Default)]
pub(super) struct GroupView {
    /// Bumped by every join of a new id and every leave.
    pub(super) epoch: AtomicU64,
    /// Every member in the group and the partitions the broker has assigned it.
    pub(super) members: Mutex<BTreeMap<MemberId, BTreeSet<u32>>>,
}

impl GroupView {
    /// Whether the broker's assignment covers each of `partitions` partitions exactly
    /// once, and gives every member something where there are enough to go round.
    pub(super) fn settled(&self, partitions: u32) -> bool {
        let members = self.members.lock();
        let mut seen = BTreeSet::new();
        for owned in members.values() {
            if owned.is_empty() && members.len() <= partitions as usize {
                return false;
            }
            if owned.iter().any(|&partition| !seen.insert(partition)) {
                return false;
            }
        }
        seen.len() == partitions as usize
    }

    pub(super) fn record(&self, member: MemberId, owned: &BTreeSet<u32>) {
        if let Some(entry) = self.members.lock().get_mut(&member) {
            entry.clone_from(owned);
        }
    }
}

/// Settings every member shares.
#[derive(Clone, Copy, Debug)]
pub(super) struct Settings {
    /// Whether the clients report statistics (a cell on a cluster).
    pub(super) watched: bool,
    pub(super) metadata_limit: usize,
    pub(super) timeout: Duration,
}
/// The commit of `topic`'s `partition` in an offset fetch's answer; `None` where the group
/// committed none.
pub(super) fn commit_in(
    committed: &TopicPartitionList,
    topic: &str,
    partition: u32,
) -> Option<Commit> {
    let elem = committed.find_partition(topic, partition as i32)?;
    match elem.offset() {
        Offset::Offset(offset) => Some(Commit {
            offset: u64::try_from(offset).unwrap_or(0),
            metadata: elem.metadata().to_owned(),
        }),
        _ => None,
    }
}
/// A change of assignment the broker made, queued by the rebalance callback.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Change {
    Assign(Vec<u32>),
    Revoke(Vec<u32>),
}

/// A member's consumer context: the rebalance callback queues the broker's changes for the
/// member's next poll, or makes them at once while the client closes.
#[derive(Debug)]
pub(super) struct MemberContext {
    pub(super) changes: Mutex<VecDeque<Change>>,
    pub(super) closing: AtomicBool,
    /// Whether the group protocol assigns incrementally, known from the settings (KIP-848's
    /// `consumer` protocol always does). librdkafka is never asked: its
    /// `rd_kafka_rebalance_protocol` waits on the group's thread for ever, and a closing
    /// consumer's group may have stopped serving it.
    pub(super) cooperative: bool,
    /// The partitions the client's own assignment holds: what its assigns and unassigns
    /// made so far.
    pub(super) held: Mutex<BTreeSet<u32>>,
    /// What the member sees of the cluster.
    pub(super) seen: Seen,
}

impl MemberContext {
    pub(super) fn new(group_protocol: GroupProtocol, counts: &Arc<ClientCounts>) -> Self {
        Self {
            changes: Mutex::default(),
            closing: AtomicBool::new(false),
            cooperative: group_protocol == GroupProtocol::Consumer,
            held: Mutex::default(),
            seen: Seen::new(Role::Member, Arc::clone(counts)),
        }
    }
}

impl ClientContext for MemberContext {
    fn stats(&self, statistics: Statistics) {
        self.seen.report(&statistics);
    }
}

impl ConsumerContext for MemberContext {
    fn rebalance(
        &self,
        consumer: &BaseConsumer<Self>,
        err: RDKafkaRespErr,
        tpl: &mut TopicPartitionList,
    ) {
        let partitions: Vec<u32> =
            tpl.elements().iter().filter_map(|elem| u32::try_from(elem.partition()).ok()).collect();
        let change = match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => Change::Assign(partitions),
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => Change::Revoke(partitions),
            _ => return,
        };
        if self.closing.load(Ordering::Acquire) {
            let _ = apply(consumer, tpl, &change);
        } else {
            self.changes.lock().push_back(change);
        }
    }
}

/// Makes the client's assign or unassign of `tpl` for `change`.
pub(super) fn apply(
    consumer: &BaseConsumer<MemberContext>,
    tpl: &TopicPartitionList,
    change: &Change,
) -> Result<(), KafkaError> {
    let context = consumer.context();
    match (change, context.cooperative) {
        (Change::Assign(_), true) => consumer.incremental_assign(tpl),
        (Change::Assign(_), false) => consumer.assign(tpl),
        (Change::Revoke(_), true) => consumer.incremental_unassign(tpl),
        (Change::Revoke(_), false) => consumer.unassign(),
    }?;
    let mut held = context.held.lock();
    match change {
        Change::Assign(partitions) => held.extend(partitions.iter().copied()),
        Change::Revoke(_) if !context.cooperative => held.clear(),
        Change::Revoke(partitions) => partitions.iter().for_each(|partition| {
            held.remove(partition);
        }),
    }
    Ok(())
}

/// Commits `tpl` and waits at most `timeout` for the broker's answer: none if it did not
/// come. (A synchronous `commit` waits for ever, and a commit to a broker that died waits
/// for its coordinator to come back.) The answer comes to a queue of the call's own, so
/// no poll of the consumer is needed to hear it.
pub(super) fn commit_within(
    consumer: &BaseConsumer<MemberContext>,
    tpl: &TopicPartitionList,
    timeout: Duration,
) -> Option<Result<(), KafkaError>> {
    use rdkafka::bindings as rd;
    let rk = consumer.client().native_ptr();
    let wait_ms = i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX);
    // SAFETY: `rk` is the consumer's live client, which `consumer` borrows for the call;
    // `tpl` outlives the call, which copies it. The queue is created, polled and destroyed
    // here; the commit's reply holds a reference of its own to the queue, so a reply that
    // comes after the queue is destroyed is dropped by librdkafka, not written to freed
    // memory. The event, when there is one, is destroyed once its error is read.
    unsafe {
        let queue = rd::rd_kafka_queue_new(rk);
        let sent = rd::rd_kafka_commit_queue(rk, tpl.ptr(), queue, None, std::ptr::null_mut());
        let answer = if sent == RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR {
            let event = rd::rd_kafka_queue_poll(queue, wait_ms);
            (!event.is_null()).then(|| {
                let code = rd::rd_kafka_event_error(event);
                rd::rd_kafka_event_destroy(event);
                code
            })
        } else {
            Some(sent)
        };
        rd::rd_kafka_queue_destroy(queue);
        answer.map(|code| match code {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR_NO_ERROR => Ok(()),
            code => Err(KafkaError::ConsumerCommit(code.into())),
        })
    }
}
