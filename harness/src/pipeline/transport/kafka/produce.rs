//! Step 1's producer: a record's value on the broker, every delivery report checked, and
//! the paced producer's thread.

use super::gone::Gone;
use super::seen::{Role, Seen};
use super::settings::{broker, BROKERS};
use crate::pipeline::log::Record;
use crate::pipeline::transport::{ClientCounts, TransportError};
use parking_lot::Mutex;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::DeliveryResult;
use rdkafka::producer::Producer;
use rdkafka::producer::{BaseProducer, BaseRecord, ProducerContext};
use rdkafka::statistics::Statistics;
use rdkafka::{ClientContext, Message};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// Bytes of a record's value: version, payload size, produce time.
pub(super) const VALUE_BYTES: usize = 20;
/// A record's value on the broker: version, payload size and produce time, big-endian.
pub(super) fn value_of(record: &Record) -> [u8; VALUE_BYTES] {
    let mut value = [0; VALUE_BYTES];
    value[..8].copy_from_slice(&record.version.to_be_bytes());
    value[8..12].copy_from_slice(&record.payload_bytes.to_be_bytes());
    value[12..].copy_from_slice(&record.produce_ns.to_be_bytes());
    value
}

/// The record a consumed message carries, if it is one of the pipeline's.
pub(super) fn record_of(message: &impl Message) -> Option<Record> {
    let key: [u8; 8] = message.key()?.try_into().ok()?;
    let value: [u8; VALUE_BYTES] = message.payload()?.try_into().ok()?;
    let mut version = [0; 8];
    let mut payload = [0; 4];
    let mut produce = [0; 8];
    version.copy_from_slice(&value[..8]);
    payload.copy_from_slice(&value[8..12]);
    produce.copy_from_slice(&value[12..]);
    Some(Record {
        partition: u32::try_from(message.partition()).ok()?,
        offset: u64::try_from(message.offset()).ok()?,
        key: u64::from_be_bytes(key),
        version: u64::from_be_bytes(version),
        payload_bytes: u32::from_be_bytes(payload),
        produce_ns: u64::from_be_bytes(produce),
    })
}

/// A record's place in the log, as its delivery report's opaque value.
pub(super) fn place(record: &Record) -> usize {
    (record.offset as usize) << 16 | record.partition as usize
}

/// The producer's context: every delivery report checked against the place the embedded
/// log gave its record.
#[derive(Debug)]
pub(super) struct Delivery {
    /// The first failed or misplaced delivery.
    pub(super) failure: Mutex<Option<String>>,
    /// Whether a record was not acknowledged within the timeout: no broker took it (other
    /// failures, a misplaced record among them, come from a broker that answered).
    pub(super) timed_out: AtomicBool,
    /// What the producer sees of the cluster.
    pub(super) seen: Seen,
}

impl Delivery {
    pub(super) fn new(counts: &Arc<ClientCounts>) -> Self {
        Self {
            failure: Mutex::default(),
            timed_out: AtomicBool::new(false),
            seen: Seen::new(Role::Producer, Arc::clone(counts)),
        }
    }

    /// Notes the producer's first failure; `timed_out` when no broker acknowledged in time.
    pub(super) fn fail(&self, words: String, timed_out: bool) {
        // Relaxed: read with the failure, under its lock's ordering.
        self.timed_out.fetch_or(timed_out, Ordering::Relaxed);
        self.failure.lock().get_or_insert(words);
    }
}

impl ClientContext for Delivery {
    fn stats(&self, statistics: Statistics) {
        self.seen.report(&statistics);
    }
}

impl ProducerContext for Delivery {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, expected: usize) {
        let (partition, offset) = (expected & 0xffff, expected >> 16);
        let failure = match result {
            Ok(message)
                if message.partition() as usize == partition
                    && message.offset() as usize == offset =>
            {
                return;
            }
            Ok(message) => format!(
                "record {offset} of partition {partition} landed at offset {} of partition {} \
                 (the broker's partitioner or order differs from the log's)",
                message.offset(),
                message.partition()
            ),
            Err((error, _)) => {
                let timed_out =
                    error.rdkafka_error_code() == Some(RDKafkaErrorCode::MessageTimedOut);
                let words =
                    format!("record {offset} of partition {partition} was not delivered: {error}");
                self.fail(words, timed_out);
                return;
            }
        };
        self.fail(failure, false);
    }
}

pub(super) type MockProducer = BaseProducer<Delivery>;

/// Sends `record` by its key, waiting while librdkafka's queue is full.
pub(super) fn send(
    producer: &MockProducer,
    topic: &str,
    record: &Record,
) -> Result<(), TransportError> {
    let key = record.key.to_be_bytes();
    let value = value_of(record);
    let mut message =
        BaseRecord::with_opaque_to(topic, place(record)).key(&key[..]).payload(&value[..]);
    loop {
        match producer.send(message) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), back)) => {
                message = back;
                producer.poll(Duration::from_millis(1));
            }
            Err((error, _)) => return Err(broker(format!("cannot produce: {error}"))),
        }
    }
}

/// Waits until every record sent was delivered, and fails with the first bad delivery.
pub(super) fn flush(producer: &MockProducer, timeout: Duration) -> Result<(), TransportError> {
    producer.flush(timeout).map_err(|error| broker(format!("cannot produce: {error}")))?;
    match producer.context().failure.lock().clone() {
        Some(failure) => Err(broker(failure)),
        None => Ok(()),
    }
}

/// Takes every broker of the producer's mock cluster down: its connections closed, new
/// ones refused.
pub(super) fn brokers_down(producer: &MockProducer) {
    let Some(cluster) = producer.client().mock_cluster() else {
        return;
    };
    for id in 1..=BROKERS {
        let _ = cluster.broker_down(id);
    }
}

/// The paced producer's thread: each record sent at its produce time from `epoch`.
pub(super) struct Pacer {
    pub(super) producer: Arc<MockProducer>,
    pub(super) topic: String,
    pub(super) records: Vec<Record>,
    pub(super) epoch: Instant,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) timeout: Duration,
    pub(super) gone: Arc<Gone>,
}

impl Pacer {
    pub(super) fn run(self) {
        let mut next = 0;
        while next < self.records.len() && !self.stop.load(Ordering::Acquire) {
            let now_ns = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
            let due = self.records[next..].partition_point(|record| record.produce_ns <= now_ns);
            let sent = self.records[next..next + due]
                .iter()
                .try_for_each(|record| send(&self.producer, &self.topic, record));
            if let Err(error) = sent {
                self.producer.context().fail(error.to_string(), false);
                return;
            }
            next += due;
            self.producer.poll(Duration::ZERO);
            thread::sleep(Duration::from_micros(200));
        }
        // The cell's broker gone, the last records are not waited for.
        let wait = if self.gone.is_gone() { Duration::ZERO } else { self.timeout };
        if let Err(error) = self.producer.flush(wait) {
            self.producer.context().fail(format!("cannot produce: {error}"), true);
        }
    }
}
