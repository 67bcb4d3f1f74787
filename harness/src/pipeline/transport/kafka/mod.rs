//! The Kafka transport: the module's protocol over a Kafka-protocol broker through
//! librdkafka (rust-rdkafka's blocking `BaseProducer` and `BaseConsumer`, on the pipeline's
//! own threads). The broker is librdkafka's in-process mock cluster, one per cell, or the
//! user's cluster (`--bootstrap-servers`: module `admin`).
//!
//! # Steps
//!
//! 1. **Open.** On the mock, a producer whose client starts a mock cluster of [`BROKERS`]
//!    brokers on ephemeral 127.0.0.1 ports (`test.mock.num.brokers`); the topic is created
//!    through the mock's own API (it has no CreateTopics), with the log's partitions, and
//!    the group protocol's timings shortened through `rd_kafka_mock_*`. On a cluster, the
//!    cell's topic `PREFIX-N` is made by the admin client and the producer bootstraps
//!    there; topic and group are deleted when the transport goes. Every record of the log is
//!    produced by its key (`partitioner=murmur2_random`, Kafka's Java partitioner;
//!    idempotent, `acks=all`) in each partition's offset order, and every delivery report
//!    is checked to name the partition and offset the embedded log gave the record, so
//!    that a producer retry can never pass for a redelivery. Records produced at 0 are
//!    written before the transport is returned; a paced log's others by a thread of the
//!    transport at their produce time, counted from the pipeline's epoch.
//! 2. **Join.** A `BaseConsumer` subscribes under the group's id with the run's
//!    `group.protocol` (`consumer`, KIP-848, by default), auto commit and auto offset store
//!    off, and the run's `-X` settings. Member
//!    ids are not sent to the broker (the mock has no static membership): a restarted
//!    process is a new client of the group, which the broker gives the partitions its
//!    predecessor released: by closing (its leave), or after a crash (destroyed without
//!    closing: no commit, no leave) once its session timed out.
//! 3. **The group assigns.** The broker decides; librdkafka reports each change through
//!    the context's rebalance callback, which only queues it: the member's next `poll`
//!    runs the listener (`revoked` while the partitions are still assigned, so that it
//!    can commit them) and then makes the client's incremental unassign or assign.
//!    Membership changes made through the transport (a join of a new id, a leave) also
//!    end every member's current hold on its partitions, as the embedded (eager) group
//!    does: at its next poll each member's listener is revoked everything it holds,
//!    without giving it back to the broker, and no member is assigned again until the
//!    broker's assignment covers every partition once ([`GroupView::settled`]). The
//!    broker itself moves only the partitions that move.
//! 4. **Poll** returns up to `max_records` records of the member's unpaused partitions
//!    from librdkafka's fetch queue (a first wait of [`POLL_WAIT`], then what is queued).
//! 5. **Commit** is a synchronous `OffsetCommit` of one partition with the metadata text;
//!    text longer than `--metadata-limit` (UTF-16 units, as a broker counts a Java
//!    string) is refused here, as a broker's `offset.metadata.max.bytes` refuses it: the
//!    mock stores any length.
//! 6. **Read.** `committed` is an `OffsetFetch`; the high watermark is the log's end
//!    offset once produced (a paced producer's partitions report it from the start, as
//!    the embedded log does), checked against the broker's after producing.
//!
//! By job: the clients' settings (`settings`), the producer (`produce`), the backend that
//! makes a cell's topic (`backend`), the transport over it (`transport`), what it knows of
//! the group (`group`), a member's client (`member`), the retry and dead-letter topics
//! (`side`), a cluster's admin (`admin`), the mock broker (`broker`), and what the clients
//! saw of the cluster (`seen`, `gone`).
//!
//! [`GroupView::settled`]: group::GroupView::settled
//! [`POLL_WAIT`]: settings::POLL_WAIT

pub mod admin;
mod backend;
pub mod broker;
mod gone;
mod group;
mod member;
mod produce;
mod seen;
mod settings;
pub mod side;
mod transport;

pub use backend::Kafka;
pub use member::KafkaMember;
pub use settings::{
    builtin_features, check_settings, partition_bytes, BROKERS, MOCK_PARTITION_BYTES, RECORD_BYTES,
};
pub use transport::KafkaTransport;
