//! The consumer's view of a broker, shaped after a Kafka client's (librdkafka's consumer as
//! rust-rdkafka's `BaseConsumer` and `ConsumerContext` expose it) so that such a client can
//! stand in for the embedded log ([`EmbeddedTransport`]) without the consumer or the
//! scenarios changing. `docs/transport.md` maps every step onto rust-rdkafka.
//!
//! # Protocol
//!
//! 1. **Join.** A consumer process joins the group with [`Transport::join`] under a
//!    [`MemberId`] and gets its client, a [`Member`]. Ids are static (Kafka's
//!    `group.instance.id`): joining again under an id already in the group (a restarted
//!    process) puts the new client in the old one's place, fences the old one (its polls
//!    return nothing, its commits are refused) and changes no one else's assignment; any
//!    other join changes the group's assignment.
//! 2. **The group assigns.** Which member owns which partition is the transport's decision
//!    (its assignor, or the broker's), never the caller's. A member learns of a change only
//!    by polling: [`Member::poll`] first runs the member's [`RebalanceListener`]:
//!    `revoked(partitions)` while the member still owns them (it may commit them, and is
//!    done with them when the callback returns; they are released then), or
//!    `assigned(partitions)` once they are its own, each positioned at the group's
//!    committed offset (0 when there is none). The first poll after a join assigns, even
//!    nothing. A partition is assigned only once its previous owner's `revoked` has
//!    returned, so it never has two owners.
//! 3. **Poll in batches.** A poll that ran a callback returns no records. Any other returns
//!    up to `max_records` records of the member's unpaused partitions, each partition's in
//!    offset order, and moves the member's positions past them.
//! 4. **Commit.** [`Member::commit`] stores, for a partition the member owns, the next offset
//!    to consume (Kafka's convention) and metadata text. Text longer than the group stores
//!    (`offset.metadata.max.bytes`, counted as a broker counts a string) is refused, and so
//!    is a commit of a partition the member does not own (revoked: a late commit cannot
//!    move the offset under the new owner).
//! 5. **Read.** [`Member::committed`] is the group's commit of any partition: what a
//!    (re)started member resumes from, or what one waits on for another's progress.
//!    [`Member::high_watermark`] is a partition's end offset (the offset the next record
//!    produced gets); [`Member::position`] the member's next fetch offset in a partition it
//!    owns, which [`Member::seek`] moves.
//! 6. **Pause.** [`Member::pause`] stops polls from returning a partition's records without
//!    losing its position; [`Member::resume`] lets them flow again.
//! 7. **Leave.** [`Member::leave`] runs the listener's `revoked` for the member's
//!    partitions, then takes it out of the group, whose other members are rebalanced (step
//!    2). A member that dies without leaving keeps its partitions until its id joins again.
//! 8. **Crash.** [`Member::crash`] marks the client to go as a crashed process's does when
//!    it is dropped: no final commit, no leave. The embedded group keeps its partitions
//!    until its id joins again; a broker once the member's session times out. A client
//!    dropped without it closes, and so leaves the group.
//! 9. **Side topics.** [`Transport::side_topics`] gives the topics beside the log that a
//!    consumer writes: the retry topic (a record sent back with a due time, polled again
//!    once it is due) and the dead-letter topic. Each write returns once the broker holds
//!    it, so that the record's offset completes only after: a commit never skips a record
//!    that is neither done nor kept. They last as long as the transport, across
//!    incarnations.
//!
//! How a rebalance unfolds is the transport's: the embedded group is eager (Kafka's classic
//! protocol: every change revokes every member's partitions, and none is assigned until all
//! were given up); a broker on KIP-848's `consumer` protocol revokes and assigns only the
//! partitions that move. The listener is told which, and handles both alike.

pub mod broker;
mod embedded;
#[cfg(feature = "kafka")]
pub mod kafka;
pub mod options;

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use embedded::{Embedded, EmbeddedMember, EmbeddedTransport};
#[cfg(feature = "kafka")]
pub use kafka::{Kafka, KafkaMember, KafkaTransport};
pub use options::{ClientSetting, Cluster, GroupProtocol, KafkaOptions};

use super::log::{LogError, Record, Topic};

pub use crate::results::{ClientEvents, TransportKind};

/// A member of the consumer group (Kafka's `group.instance.id`).
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
    /// A newer client joined under the member's id, and this one may no longer act for it
    /// (Kafka's `FENCED_INSTANCE_ID`).
    #[error("{member} was replaced by a newer client under its id")]
    Fenced {
        /// The member whose old client asked.
        member: MemberId,
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
        /// Bytes of metadata text it carried, as a broker counts them.
        bytes: usize,
        /// The most the group stores.
        limit: usize,
    },
    /// The broker refused the commit's metadata as too long (Kafka's
    /// `OFFSET_METADATA_TOO_LARGE`) although it was within `--metadata-limit`: the broker
    /// stores less (`offset.metadata.max.bytes`).
    #[error(
        "the broker refused the commit of partition {partition}: its {bytes} characters of \
         metadata are more than the broker stores (OFFSET_METADATA_TOO_LARGE; its \
         offset.metadata.max.bytes is below --metadata-limit {limit})"
    )]
    MetadataRefused {
        /// The partition committed.
        partition: u32,
        /// Characters of metadata text it carried, as a broker counts them.
        bytes: usize,
        /// The run's `--metadata-limit`.
        limit: usize,
    },
    /// The partition does not exist.
    #[error(transparent)]
    Log(#[from] LogError),
    /// The broker failed or did not answer in time (a transport over a network).
    #[error("the broker failed: {0}")]
    Broker(String),
}

/// Every broker of one cell's cluster taken down on purpose, to see how a run fails when
/// its broker dies: the `cell`-th transport the run opens (counting from 0, over clones of
/// the fault) loses its brokers `after` it opened. Only a transport with brokers has any
/// to take down; the embedded log ignores it.
#[derive(Clone, Debug)]
pub struct BrokerFault {
    /// Which transport opened, from 0.
    pub cell: usize,
    /// How long after it opened.
    pub after: Duration,
    opened: Arc<AtomicUsize>,
}

impl BrokerFault {
    /// The brokers of the `cell`-th transport opened go down `after` it opened.
    pub fn new(cell: usize, after: Duration) -> Self {
        Self { cell, after, opened: Arc::default() }
    }

    /// Counts a transport opened; whether its brokers are the ones to take down.
    pub fn strikes(&self) -> bool {
        self.opened.fetch_add(1, Ordering::Relaxed) == self.cell
    }
}

impl PartialEq for BrokerFault {
    fn eq(&self, other: &Self) -> bool {
        (self.cell, self.after) == (other.cell, other.after)
    }
}

impl Eq for BrokerFault {}

/// What a member does when the group changes its assignment: run on the polling thread,
/// from inside [`Member::poll`] or [`Member::leave`] (rust-rdkafka: a `ConsumerContext`'s
/// `pre_rebalance` and `post_rebalance`).
pub trait RebalanceListener {
    /// `partitions` are now the member's, each positioned at the group's committed offset
    /// (or 0); empty when a new assignment gives it nothing.
    fn assigned(&mut self, partitions: &[u32]);

    /// `partitions` are being taken away: the member still owns them and may commit them;
    /// once this returns they are released and a later commit of them is refused.
    fn revoked(&mut self, partitions: &[u32]);
}

/// One consumer process's client of the group (rust-rdkafka: a `BaseConsumer`): the
/// module docs' steps 2 to 7. Calls from several threads are allowed (a committer thread
/// commits while the polling thread polls); the listener runs on the polling thread.
pub trait Member: Send + Sync {
    /// The member it acts for.
    fn id(&self) -> MemberId;

    /// Runs the listener if the group changed the member's assignment, and otherwise
    /// returns up to `max_records` records of its unpaused partitions, each partition's in
    /// offset order (steps 2 and 3); an error once the broker has not answered for the
    /// transport's timeout.
    fn poll(
        &self,
        max_records: usize,
        listener: &mut dyn RebalanceListener,
    ) -> Result<Vec<Record>, TransportError>;

    /// The partitions the member owns, ascending.
    fn assignment(&self) -> Vec<u32>;

    /// The member's next fetch offset in `partition`, if it owns it.
    fn position(&self, partition: u32) -> Option<u64>;

    /// Makes `offset` the member's next fetch offset in `partition`, which it owns.
    fn seek(&self, partition: u32, offset: u64) -> Result<(), TransportError>;

    /// Stores `offset` and `metadata` as the group's commit of `partition`, which the
    /// member owns (step 4).
    fn commit(&self, partition: u32, offset: u64, metadata: &str) -> Result<(), TransportError>;

    /// The group's last commit of `partition`, owned by the member or not (step 5).
    fn committed(&self, partition: u32) -> Result<Option<Commit>, TransportError>;

    /// The offset the next record produced to `partition` gets (step 5).
    fn high_watermark(&self, partition: u32) -> Result<u64, TransportError>;

    /// Stops polls from returning records of `partitions`, which the member owns; their
    /// positions are kept (step 6).
    fn pause(&self, partitions: &[u32]) -> Result<(), TransportError>;

    /// Lets polls return records of `partitions`, which the member owns, again.
    fn resume(&self, partitions: &[u32]) -> Result<(), TransportError>;

    /// Gives the member's partitions up through the listener and leaves the group (step 7).
    fn leave(&self, listener: &mut dyn RebalanceListener);

    /// The member's process dies: its client goes, once dropped, without a final commit or
    /// a leave (step 8). The embedded group needs nothing for that.
    fn crash(&self) {}
}

/// A consumer group on a broker that holds one topic: what members join (step 1).
pub trait Transport: Send + Sync {
    /// The client a member gets.
    type Member: Member + 'static;

    /// Joins the group as `member`, or takes the place of the client that joined under that
    /// id before (step 1).
    fn join(&self, member: MemberId) -> Result<Arc<Self::Member>, TransportError>;

    /// How many partitions the topic has now.
    fn partitions(&self) -> u32;

    /// The retry and dead-letter topics beside the log (step 9); in-process unless the
    /// transport has a broker to keep them.
    fn side_topics(&self) -> Result<Arc<dyn SideTopics>, TransportError> {
        Ok(Arc::new(crate::pipeline::retry::RetryTopic::new()))
    }

    /// What the transport's clients see of the broker while the cell runs; none where
    /// there is no broker to see.
    fn client_counts(&self) -> Option<Arc<ClientCounts>> {
        None
    }

    /// Where a consumer in another process finds the log: on a cluster only (the embedded
    /// log and the mock live in this process).
    fn endpoint(&self) -> Option<Endpoint> {
        None
    }

    /// The group's commit of every partition, read from outside the group (joining it
    /// would move its partitions): what a consumer in another process committed.
    fn group_commits(&self) -> Result<Vec<Option<Commit>>, TransportError> {
        Err(TransportError::Broker("this log has no group to read from outside".into()))
    }
}

/// A cell's log on a cluster, as a consumer in another process joins it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The cluster's bootstrap servers.
    pub bootstrap: String,
    /// The log's topic.
    pub topic: String,
    /// The cell's consumer group.
    pub group: String,
    /// The session timeout the suite's own consumers join with, in milliseconds.
    pub session_timeout_ms: u64,
}

/// What a cell's broker clients saw of the cluster, counted as they run and read when the
/// cell's result is made ([`ClientEvents`]): a client's report in its last 100 ms may be
/// left out.
#[derive(Debug, Default)]
pub struct ClientCounts {
    leader_changes: AtomicU64,
    produce_retries: AtomicU64,
    request_retries: AtomicU64,
    disconnects: AtomicU64,
    client_errors: AtomicU64,
}

impl ClientCounts {
    /// Adds `events` to the counts (Relaxed: independent counters, each read on its own).
    pub fn add(&self, events: ClientEvents) {
        let ClientEvents {
            leader_changes,
            produce_retries,
            request_retries,
            disconnects,
            client_errors,
        } = events;
        self.leader_changes.fetch_add(leader_changes, Ordering::Relaxed);
        self.produce_retries.fetch_add(produce_retries, Ordering::Relaxed);
        self.request_retries.fetch_add(request_retries, Ordering::Relaxed);
        self.disconnects.fetch_add(disconnects, Ordering::Relaxed);
        self.client_errors.fetch_add(client_errors, Ordering::Relaxed);
    }

    /// The counts so far.
    pub fn read(&self) -> ClientEvents {
        ClientEvents {
            leader_changes: self.leader_changes.load(Ordering::Relaxed),
            produce_retries: self.produce_retries.load(Ordering::Relaxed),
            request_retries: self.request_retries.load(Ordering::Relaxed),
            disconnects: self.disconnects.load(Ordering::Relaxed),
            client_errors: self.client_errors.load(Ordering::Relaxed),
        }
    }
}

/// The topics beside the log a consumer writes to (step 9).
pub trait SideTopics: Send + Sync + fmt::Debug {
    /// Sends `record` to the retry topic, to be polled at `due_ns` (counted from the
    /// pipeline's epoch) or later; returns once the topic holds it.
    fn retry(&self, record: &Record, due_ns: u64) -> Result<(), TransportError>;

    /// The `(partition, offset)` of every record of the retry topic due at `now_ns`,
    /// earliest first, each returned once.
    fn due(&self, now_ns: u64) -> Result<Vec<(u32, u64)>, TransportError>;

    /// Sends `record` to the dead-letter topic; returns once the topic holds it.
    fn dead_letter(&self, record: &Record) -> Result<(), TransportError>;

    /// Records the dead-letter topic holds.
    fn dead_letters(&self) -> Result<u64, TransportError>;
}

/// Where a scenario's log lives: it opens a [`Transport`] over the log the scenario
/// produced. The embedded log copies it ([`Embedded`]); a Kafka backend would create the
/// topic on its broker and produce every record to its partition.
pub trait Backend: Sync {
    /// The transport it opens.
    type Transport: Transport;

    /// A transport whose topic holds `log`'s records, each in its partition at its offset,
    /// with an empty group; a record becomes visible to polls at `epoch` plus its produce
    /// time (a record produced at 0 at once).
    fn open(&self, log: &Topic, epoch: Instant) -> Result<Self::Transport, TransportError>;
}
