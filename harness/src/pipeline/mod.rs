//! The end-to-end pipeline: records of per-aggregate versions flow from a producer through a
//! partitioned log and a consumer into an executor, whose handler builds business state; a
//! crash and restart then shows what each commit policy loses or runs twice.
//!
//! # The pipeline, step by step
//!
//! 1. **Produce** (`log`). The producer appends each event of aggregate `key` with the
//!    key's next version (from 1) to a [`Topic`]. [`Topic::append`] places it with
//!    [`partition_for`], Kafka's default partitioner, so one key's events share a partition
//!    and sit there in version order (entity order). A producer that races itself, or an
//!    outbox read in a different order than its commits, writes versions out of order;
//!    [`Topic::expand_to`] adds partitions, after which a key's newer events land in
//!    another partition than its older ones.
//! 2. **Partitioned log** (`log`). Each partition is an offset-ordered, append-only list of
//!    [`Record`]s; nothing is deleted, so a restarted consumer can read any offset again.
//! 3. **Poll** (`transport`). A consumer joins the group of a [`Transport`]
//!    ([`EmbeddedTransport`] here; a Kafka client can stand in) and polls through its
//!    [`Member`] client: the group decides which partitions it owns and tells it, inside a
//!    poll, through its [`RebalanceListener`]; a poll returns a batch of records of those
//!    partitions, each partition's in offset order (the embedded log interleaves them
//!    round-robin).
//! 4. **Execute.** The consumer hands each record to an executor, a
//!    `strategies::Strategy`, keyed by aggregate: one key's records run one at a time in
//!    submission order, different keys in parallel. Records of one partition therefore
//!    complete out of offset order.
//! 5. **Apply** (`projection`). The handler applies the record to the [`Projection`]: the
//!    version-aware state machine applies `current + 1`, ignores `<= current` and stashes
//!    a gap until it closes; beside it a naive projection applies whatever arrives, to show
//!    what the version check prevents.
//! 6. **Track completions** (`commit`). The consumer tells the partition's
//!    [`PartitionProgress`] what it polled and what completed; the progress keeps the
//!    contiguous offset and the completed offsets above it.
//! 7. **Commit** (`commit`). Periodically the consumer commits each partition's
//!    [`PartitionProgress::commit`] by its [`CommitPolicy`]: `contiguous` (safe, redelivers
//!    everything above the first incomplete record), `contiguous+metadata` (safe, the
//!    completed offsets above the gap ride in the commit's metadata; the partition is
//!    paused while that metadata would pass 75% of its limit) or `highest-completed`
//!    (unsafe: skips incomplete records below it).
//! 8. **Crash and restart.** A crash drops everything in flight. The restarted consumer
//!    builds each partition's progress from the group's [`Commit`] with
//!    [`PartitionProgress::resume`] when the group assigns it the partition, seeks to
//!    [`PartitionProgress::resume_offset`] with [`Member::seek`], and skips the records the
//!    metadata says completed.
//!    The projection is not rolled back: a redelivered record reaches it again, which the
//!    version-aware projection ignores and the naive one applies twice.
//!
//! # Metrics
//!
//! Per partition ([`PartitionProgress`]), at any moment:
//! - **lag** ([`PartitionProgress::lag`]): `(highest completed offset + 1) - committed
//!   offset`, how far the commit trails the work done;
//! - **incomplete below highest** ([`PartitionProgress::incomplete_below_highest`]):
//!   offsets below the highest completed one that have not completed;
//! - **redelivered if crashed** ([`PartitionProgress::redelivered_if_crashed`]): completed
//!   records a restart from the commit would run again (duplicates);
//! - **skipped if crashed** ([`PartitionProgress::skipped_if_crashed`]): incomplete
//!   records a restart would never run (lost: only `highest-completed` has any);
//! - **paused** ([`PartitionProgress::needs_pause`]): the metadata back-pressure is on.
//!
//! For the run ([`ProjectionReport`]): `applied`, `ignored` and `duplicates` (redelivered
//! or repeated versions the version check dropped), `gaps` (records stashed because a
//! predecessor was missing) and `max_stash` (the deepest stash), the naive projection's
//! `naive_out_of_order` and `naive_double_applies`, and whether each projection's final
//! state is correct (every key at its last version, nothing stashed, the digest of a
//! sequential replay), with the number of keys that are not.
//!
//! [`Topic`]: crate::pipeline::Topic
//! [`Topic::append`]: crate::pipeline::Topic::append
//! [`partition_for`]: crate::pipeline::partition_for
//! [`Topic::expand_to`]: crate::pipeline::Topic::expand_to
//! [`Record`]: crate::pipeline::Record
//! [`Transport`]: crate::pipeline::Transport
//! [`EmbeddedTransport`]: crate::pipeline::EmbeddedTransport
//! [`Projection`]: crate::pipeline::Projection
//! [`PartitionProgress`]: crate::pipeline::PartitionProgress
//! [`PartitionProgress::commit`]: crate::pipeline::PartitionProgress::commit
//! [`CommitPolicy`]: crate::results::CommitPolicy
//! [`Commit`]: crate::pipeline::Commit
//! [`PartitionProgress::resume`]: crate::pipeline::PartitionProgress::resume
//! [`PartitionProgress::resume_offset`]: crate::pipeline::PartitionProgress::resume_offset
//! [`Member`]: crate::pipeline::Member
//! [`RebalanceListener`]: crate::pipeline::RebalanceListener
//! [`Member::seek`]: crate::pipeline::Member::seek
//! [`PartitionProgress::lag`]: crate::pipeline::PartitionProgress::lag
//! [`PartitionProgress::incomplete_below_highest`]: crate::pipeline::PartitionProgress::incomplete_below_highest
//! [`PartitionProgress::redelivered_if_crashed`]: crate::pipeline::PartitionProgress::redelivered_if_crashed
//! [`PartitionProgress::skipped_if_crashed`]: crate::pipeline::PartitionProgress::skipped_if_crashed
//! [`PartitionProgress::needs_pause`]: crate::pipeline::PartitionProgress::needs_pause
//! [`ProjectionReport`]: crate::results::ProjectionReport

pub mod commit;
pub mod consumer;
pub mod log;
pub mod metadata;
pub mod projection;
pub mod retry;
pub mod scenario;
pub mod transport;

pub use commit::{
    CommitError, MetadataLimit, PartitionProgress, DEFAULT_METADATA_LIMIT_BYTES, MIN_METADATA_LIMIT,
};
pub use consumer::{
    run_incarnation, ConsumerConfig, ConsumerError, Delivery, DeliveryTally, Hold, Incarnation,
    Pipeline, Signal, Stop, Treat, Treatment, DEFAULT_MAX_POLL_RECORDS,
};
pub use log::{murmur2, partition_for, partition_for_bytes, LogError, Partition, Record, Topic};
pub use metadata::{decode_metadata, MetadataError, TAG_BITSET, TAG_RUN_LENGTH};
pub use projection::{fold_digest, replay_digest, Applied, Projection, INITIAL_DIGEST, SHARDS};
pub use retry::{RetryConfig, RetryTopic};
pub use scenario::{
    policy_param, run_crash, run_scenario, run_scenario_where, Bench, PipelineError, PipelinePlan,
    Wanted, DEFAULT_KAFKA_TIMEOUT,
};
pub use transport::{
    Backend, BrokerFault, ClientSetting, Cluster, Commit, Embedded, EmbeddedMember,
    EmbeddedTransport, GroupProtocol, KafkaOptions, Member, MemberId, RebalanceListener, Transport,
    TransportError, TransportKind,
};
