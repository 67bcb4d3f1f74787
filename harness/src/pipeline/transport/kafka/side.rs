//! The retry and dead-letter topics over Kafka (the transport's step 9): two topics of one
//! partition beside the log, `<topic>-retry` and `<topic>-dlq`, made with it.
//!
//! # Steps
//!
//! 1. **Send.** A record sent to either is produced (idempotent, `acks=all`) with its key
//!    and, as its value, its place in the log and its due time, and the call returns once
//!    the broker acknowledged it: its offset in the log completes only after.
//! 2. **Read the retry topic.** Once a record was sent there, a client that joins no group,
//!    assigned the retry topic's partition from its beginning, drains what it has fetched
//!    at every `due` and keeps each record until its due time, earliest first: Kafka has no
//!    delayed delivery, so a retry consumer holds what is not yet due, as one in
//!    production does.
//! 3. **Count the dead letters** from the dead-letter topic's high watermark.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::DeliveryResult;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::{ClientConfig, ClientContext, Message, Offset, TopicPartitionList};

use super::super::{ClientCounts, SideTopics, TransportError};
use super::gone::Gone;
use super::seen::{report_statistics, Role, Seen};
use crate::pipeline::log::Record;
use crate::pipeline::retry::RetryTopic;

/// Bytes of a side record's value: partition, offset, due time, big-endian.
const VALUE_BYTES: usize = 20;

/// The retry topic's name beside `topic`.
pub fn retry_topic(topic: &str) -> String {
    format!("{topic}-retry")
}

/// The dead-letter topic's name beside `topic`.
pub fn dead_letter_topic(topic: &str) -> String {
    format!("{topic}-dlq")
}

fn broker(what: impl fmt::Display) -> TransportError {
    TransportError::Broker(what.to_string())
}

/// The side producer's settings over `base` (step 1): each record sent at once, idempotent,
/// acknowledged by every replica within `timeout`; its statistics reported when `watched`.
pub fn producer_settings(base: &ClientConfig, timeout: Duration, watched: bool) -> ClientConfig {
    let timeout_ms = timeout.as_millis().clamp(1, i32::MAX as u128).to_string();
    let mut producer = base.clone();
    producer
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "0")
        .set("message.timeout.ms", timeout_ms);
    report_statistics(&mut producer, watched);
    producer
}

/// The retry topic reader's settings over `base` (step 2). librdkafka assigns partitions
/// only within a group's client: the id is never joined or committed under, so the broker
/// keeps no group of it.
pub fn reader_settings(base: &ClientConfig, retry: &str) -> ClientConfig {
    let mut reader = base.clone();
    reader
        .set("group.id", format!("{retry}-reader"))
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "10");
    reader
}

/// The side producer's context: the first failed delivery, in the broker's words.
#[derive(Debug)]
struct Acks {
    failure: Mutex<Option<String>>,
    /// What the producer sees of the cluster.
    seen: Seen,
}

impl ClientContext for Acks {
    fn stats(&self, statistics: rdkafka::statistics::Statistics) {
        self.seen.report(&statistics);
    }
}

impl ProducerContext for Acks {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        if let Err((error, _)) = result {
            self.failure.lock().get_or_insert(error.to_string());
        }
    }
}

/// The retry and dead-letter topics of one transport on its broker. Their clients are made
/// when first needed: a cell that retries and dead-letters nothing runs none.
pub struct KafkaSideTopics {
    /// The run's settings and the broker's bootstrap.
    base: ClientConfig,
    producer: OnceLock<BaseProducer<Acks>>,
    reader: OnceLock<BaseConsumer>,
    retry: String,
    dead: String,
    /// Fetched records not yet due (step 2).
    waiting: RetryTopic,
    /// What the producer sees of the cluster, counted for the cell on a cluster.
    counts: Option<Arc<ClientCounts>>,
    /// Set once a request of the cell found no broker: a write then fails at once.
    gone: Arc<Gone>,
    timeout: Duration,
}

impl fmt::Debug for KafkaSideTopics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KafkaSideTopics")
            .field("retry", &self.retry)
            .field("dead", &self.dead)
            .finish_non_exhaustive()
    }
}

impl KafkaSideTopics {
    /// The side topics of `topic`, which exist, on the broker `base` bootstraps at (its
    /// settings the run's `-X` and bootstrap).
    pub fn new(
        base: ClientConfig,
        topic: &str,
        timeout: Duration,
        counts: Option<&Arc<ClientCounts>>,
        gone: &Arc<Gone>,
    ) -> Self {
        Self {
            base,
            counts: counts.cloned(),
            gone: Arc::clone(gone),
            producer: OnceLock::new(),
            reader: OnceLock::new(),
            retry: retry_topic(topic),
            dead: dead_letter_topic(topic),
            waiting: RetryTopic::new(),
            timeout,
        }
    }

    fn producer(&self) -> Result<&BaseProducer<Acks>, TransportError> {
        if let Some(producer) = self.producer.get() {
            return Ok(producer);
        }
        let watched = self.counts.is_some();
        let counts = self.counts.clone().unwrap_or_default();
        let made = producer_settings(&self.base, self.timeout, watched)
            .create_with_context(Acks {
                failure: Mutex::default(),
                seen: Seen::new(Role::Producer, counts),
            })
            .map_err(|error| broker(format!("cannot create the side topics' producer: {error}")))?;
        Ok(self.producer.get_or_init(|| made))
    }

    fn reader(&self) -> Result<&BaseConsumer, TransportError> {
        if let Some(reader) = self.reader.get() {
            return Ok(reader);
        }
        let cannot = |error: KafkaError| broker(format!("cannot read {}: {error}", self.retry));
        let made: BaseConsumer =
            reader_settings(&self.base, &self.retry).create().map_err(cannot)?;
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&self.retry, 0, Offset::Beginning).map_err(cannot)?;
        made.assign(&tpl).map_err(cannot)?;
        Ok(self.reader.get_or_init(|| made))
    }

    /// Produces `record` with `due_ns` to `topic` and waits for the broker's
    /// acknowledgement (step 1).
    fn send(&self, topic: &str, record: &Record, due_ns: u64) -> Result<(), TransportError> {
        self.gone.check()?;
        let producer = self.producer()?;
        let key = record.key.to_be_bytes();
        let mut value = [0; VALUE_BYTES];
        value[..4].copy_from_slice(&record.partition.to_be_bytes());
        value[4..12].copy_from_slice(&record.offset.to_be_bytes());
        value[12..].copy_from_slice(&due_ns.to_be_bytes());
        producer
            .send(BaseRecord::to(topic).key(&key).payload(&value))
            .map_err(|(error, _)| broker(format!("cannot send to {topic}: {error}")))?;
        producer.flush(self.timeout).map_err(|error| {
            let words = format!("no acknowledgement from {topic}: {error}");
            self.gone.note(&words);
            broker(words)
        })?;
        match producer.context().failure.lock().clone() {
            Some(failure) => Err(broker(format!("{topic} refused a record: {failure}"))),
            None => Ok(()),
        }
    }

    /// Moves every record `reader` has fetched into the waiting records (step 2).
    fn fetch(&self, reader: &BaseConsumer) {
        while let Some(polled) = reader.poll(Duration::ZERO) {
            // An error event (a broker not yet reachable) is the main member's to judge.
            let Ok(message) = polled else {
                continue;
            };
            let Some(value) = message.payload().filter(|value| value.len() == VALUE_BYTES) else {
                continue;
            };
            let number = |range: std::ops::Range<usize>| {
                value[range].iter().fold(0_u64, |number, &byte| number << 8 | u64::from(byte))
            };
            let partition = u32::try_from(number(0..4)).unwrap_or(u32::MAX);
            self.waiting.hold(partition, number(4..12), number(12..20));
        }
    }
}

impl SideTopics for KafkaSideTopics {
    fn retry(&self, record: &Record, due_ns: u64) -> Result<(), TransportError> {
        self.reader()?;
        self.send(&self.retry, record, due_ns)
    }

    fn due(&self, now_ns: u64) -> Result<Vec<(u32, u64)>, TransportError> {
        // Only a transport that sent a retry has a reader, and a record to read.
        if let Some(reader) = self.reader.get() {
            self.fetch(reader);
        }
        Ok(self.waiting.poll_due(now_ns))
    }

    fn dead_letter(&self, record: &Record) -> Result<(), TransportError> {
        self.send(&self.dead, record, 0)
    }

    fn dead_letters(&self) -> Result<u64, TransportError> {
        let (_, high) =
            self.producer()?.client().fetch_watermarks(&self.dead, 0, self.timeout).map_err(
                |error| broker(format!("cannot read {}'s watermarks: {error}", self.dead)),
            )?;
        Ok(u64::try_from(high).unwrap_or(0))
    }
}
