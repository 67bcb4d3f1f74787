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

pub mod admin;
pub mod broker;
mod gone;
mod seen;
pub mod side;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::DeliveryResult;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer, ProducerContext};
use rdkafka::statistics::Statistics;
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{ClientConfig, ClientContext, Message, Offset, TopicPartitionList};

use super::options::{ClientSetting, CommitObserver, GroupProtocol, KafkaOptions, TopicAdmin};
use super::{
    Backend, BrokerFault, ClientCounts, Commit, Endpoint, Member, MemberId, RebalanceListener,
    SideTopics, Transport, TransportError,
};
use crate::pipeline::commit::DEFAULT_METADATA_LIMIT_BYTES;
use crate::pipeline::log::{self, LogError, Record, Topic};
use gone::Gone;
use seen::{report_statistics, Role, Seen};

/// Brokers of each cell's mock cluster.
pub const BROKERS: i32 = 3;

/// Bytes the mock cluster keeps of one partition's log (librdkafka's mock trims older
/// message sets past it): a cell whose fullest partition would hold more is refused.
pub const MOCK_PARTITION_BYTES: u64 = 5 * 1024 * 1024;

/// Bytes one record is reckoned to take on the mock, batch framing included: an 8-byte
/// key, a 20-byte value and up to 36 bytes of record and batch overhead.
pub const RECORD_BYTES: u64 = 64;

/// The mock group's heartbeat interval: how soon a member hears of an assignment change.
const HEARTBEAT_MS: i32 = 100;

/// The mock group's session timeout: how long a member that stopped heartbeating keeps
/// its partitions.
const SESSION_TIMEOUT_MS: i32 = 3_000;

/// A classic member's session on a cluster (unless `-X session.timeout.ms` is given):
/// Kafka's default `group.min.session.timeout.ms`, the shortest a broker allows unless
/// lowered, where librdkafka's own default is 45 s. On KIP-848's protocol the broker sets
/// the session (`group.consumer.session.timeout.ms`).
const CLUSTER_SESSION_TIMEOUT_MS: i32 = 6_000;

/// How long a poll first waits for records.
const POLL_WAIT: Duration = Duration::from_millis(1);

/// How long a fetch waits on the broker for records, and how long the client backs off
/// fetching a partition after an error or a full queue (librdkafka's defaults are 500 ms,
/// 500 ms and 1 s: a pipeline cell lasts well under a second on the mock).
const FETCH_WAIT_MS: &str = "10";

/// How long a metadata request that checks whether the broker still answers may wait, and
/// how often one is made while it may not (module docs, step 4).
const PROBE_WAIT: Duration = Duration::from_millis(250);
const PROBE_EVERY: Duration = Duration::from_millis(100);

/// Bytes of a record's value: version, payload size, produce time.
const VALUE_BYTES: usize = 20;

/// The pipeline's log on a Kafka broker as a scenario's [`Backend`]: each cell gets a mock
/// cluster of its own, or a topic and group of its own on the user's cluster.
#[derive(Clone, Debug)]
pub struct Kafka {
    /// The most bytes of metadata text one commit may carry (`--metadata-limit`).
    pub metadata_limit: usize,
    /// How long a request to the broker may take (`--kafka-timeout-ms`).
    pub timeout: Duration,
    /// One cell's brokers taken down on purpose (the mock's only).
    pub fault: Option<BrokerFault>,
    /// The broker, the group protocol and the `-X` settings.
    pub options: KafkaOptions,
    /// The user's cluster's admin, once connected.
    admin: Option<Arc<dyn TopicAdmin>>,
}

impl Default for Kafka {
    fn default() -> Self {
        Self {
            metadata_limit: DEFAULT_METADATA_LIMIT_BYTES,
            timeout: Duration::from_secs(10),
            fault: None,
            options: KafkaOptions::default(),
            admin: None,
        }
    }
}

impl Kafka {
    /// A backend on `options`' broker; on the user's cluster, connected to its admin (or
    /// the hooks' admin in its place).
    pub fn new(
        metadata_limit: usize,
        timeout: Duration,
        fault: Option<BrokerFault>,
        options: KafkaOptions,
    ) -> Result<Self, TransportError> {
        let admin = match (&options.cluster, &options.hooks.admin) {
            (None, _) => None,
            (Some(_), Some(admin)) => Some(Arc::clone(admin)),
            (Some(cluster), None) => {
                let admin =
                    admin::ClusterAdmin::connect(&cluster.bootstrap, &options.client, timeout)?;
                Some(Arc::new(admin) as Arc<dyn TopicAdmin>)
            }
        };
        Ok(Self { metadata_limit, timeout, fault, options, admin })
    }

    /// The client settings of a run with `timeout` and `options` that differ from
    /// librdkafka's defaults, as `client key=value`: the log's producer's, the members', the
    /// side topics' producer's and the retry topic reader's (recorded with a run's results;
    /// secrets hidden).
    pub fn client_settings(timeout: Duration, options: &KafkaOptions) -> Vec<String> {
        let producer = producer_settings(timeout, options);
        let consumer = consumer_settings("<bootstrap>", "<group>", timeout, options);
        let secret = |key: &str| {
            options.client.iter().any(|setting| setting.key == key && setting.is_secret())
        };
        let shown = |key: &str, value: &str| {
            if secret(key) {
                "<secret>".to_owned()
            } else {
                value.to_owned()
            }
        };
        let keys = |config: &ClientConfig, side: &str| -> Vec<String> {
            let mut pairs: Vec<String> = config
                .config_map()
                .iter()
                .filter(|(key, _)| !matches!(**key, "bootstrap.servers" | "group.id"))
                .map(|(key, value)| format!("{side} {key}={}", shown(key, value)))
                .collect();
            pairs.sort();
            pairs
        };
        let base = with_user_settings(options);
        let mut settings = keys(&producer, "producer");
        settings.extend(keys(&consumer, "consumer"));
        let side = side::producer_settings(&base, timeout, !options.is_mock());
        settings.extend(keys(&side, "side-producer"));
        settings.extend(keys(&side::reader_settings(&base, "<topic>-retry"), "retry-reader"));
        settings
    }

    /// librdkafka's version, as it reports it.
    pub fn client_version() -> String {
        rdkafka::util::get_rdkafka_version().1
    }
}

/// The features this build of librdkafka has (`builtin.features`: `ssl`, `sasl_plain`, ...).
pub fn builtin_features() -> Vec<String> {
    let mut config = ClientConfig::new();
    config.set("client.id", "keyed-bench");
    let native = config.create_native_config();
    let Ok(native) = native else {
        return Vec::new();
    };
    native
        .get("builtin.features")
        .map(|features| features.split(',').map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Checks the run's `-X` settings before it starts: each needs nothing this build lacks
/// (TLS, a SASL mechanism), and librdkafka accepts each key and value.
pub fn check_settings(settings: &[ClientSetting]) -> Result<(), String> {
    let features = builtin_features();
    for setting in settings {
        if let Some((feature, cargo)) = setting.needs() {
            if !features.iter().any(|built| built == feature) {
                return Err(format!(
                    "-X {} needs librdkafka with {feature}, which this build lacks: \
                     build it with --features {cargo} (librdkafka here has: {})",
                    setting.recorded(),
                    features.join(",")
                ));
            }
        }
        let mut config = ClientConfig::new();
        config.set(&setting.key, &setting.value);
        config.create_native_config().map_err(|error| {
            let words = error.to_string();
            let words = if setting.is_secret() && !setting.value.is_empty() {
                words.replace(&setting.value, "<secret>")
            } else {
                words
            };
            format!("-X {}: {words}", setting.recorded())
        })?;
    }
    Ok(())
}

/// Bytes the fullest partition of `log` is reckoned to take on the mock.
pub fn partition_bytes(log: &Topic) -> u64 {
    (0..log.partitions())
        .map(|partition| log.end_offset(partition).unwrap_or(0))
        .max()
        .unwrap_or(0)
        .saturating_mul(RECORD_BYTES)
}

/// A broker failure in words.
fn broker(what: impl fmt::Display) -> TransportError {
    TransportError::Broker(what.to_string())
}

fn millis(duration: Duration) -> String {
    duration.as_millis().clamp(1, i32::MAX as u128).to_string()
}

/// A client configuration with the run's `-X` settings, to which the suite's own are added.
fn with_user_settings(options: &KafkaOptions) -> ClientConfig {
    let mut config = ClientConfig::new();
    for setting in &options.client {
        config.set(&setting.key, &setting.value);
    }
    config
}

fn producer_settings(timeout: Duration, options: &KafkaOptions) -> ClientConfig {
    let mut config = with_user_settings(options);
    match &options.cluster {
        None => config.set("test.mock.num.brokers", BROKERS.to_string()),
        Some(cluster) => config.set("bootstrap.servers", &cluster.bootstrap),
    };
    config
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("partitioner", "murmur2_random")
        .set("message.timeout.ms", millis(timeout));
    report_statistics(&mut config, !options.is_mock());
    config
}

fn consumer_settings(
    bootstrap: &str,
    group: &str,
    timeout: Duration,
    options: &KafkaOptions,
) -> ClientConfig {
    let mut config = with_user_settings(options);
    let session_given = options.client.iter().any(|setting| setting.key == "session.timeout.ms");
    if options.group_protocol == GroupProtocol::Classic && !session_given {
        // The mock waits out most of a classic member's session before it rebalances; a
        // crashed member keeps its partitions for the session.
        let session =
            if options.is_mock() { SESSION_TIMEOUT_MS } else { CLUSTER_SESSION_TIMEOUT_MS };
        config.set("session.timeout.ms", session.to_string());
    }
    config
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("group.protocol", options.group_protocol.as_str())
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", FETCH_WAIT_MS)
        .set("fetch.error.backoff.ms", FETCH_WAIT_MS)
        .set("fetch.queue.backoff.ms", FETCH_WAIT_MS)
        .set("socket.timeout.ms", millis(timeout));
    report_statistics(&mut config, !options.is_mock());
    config
}

/// A record's value on the broker: version, payload size and produce time, big-endian.
fn value_of(record: &Record) -> [u8; VALUE_BYTES] {
    let mut value = [0; VALUE_BYTES];
    value[..8].copy_from_slice(&record.version.to_be_bytes());
    value[8..12].copy_from_slice(&record.payload_bytes.to_be_bytes());
    value[12..].copy_from_slice(&record.produce_ns.to_be_bytes());
    value
}

/// The record a consumed message carries, if it is one of the pipeline's.
fn record_of(message: &impl Message) -> Option<Record> {
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
fn place(record: &Record) -> usize {
    (record.offset as usize) << 16 | record.partition as usize
}

/// The producer's context: every delivery report checked against the place the embedded
/// log gave its record.
#[derive(Debug)]
struct Delivery {
    /// The first failed or misplaced delivery.
    failure: Mutex<Option<String>>,
    /// Whether a record was not acknowledged within the timeout: no broker took it (other
    /// failures, a misplaced record among them, come from a broker that answered).
    timed_out: AtomicBool,
    /// What the producer sees of the cluster.
    seen: Seen,
}

impl Delivery {
    fn new(counts: &Arc<ClientCounts>) -> Self {
        Self {
            failure: Mutex::default(),
            timed_out: AtomicBool::new(false),
            seen: Seen::new(Role::Producer, Arc::clone(counts)),
        }
    }

    /// Notes the producer's first failure; `timed_out` when no broker acknowledged in time.
    fn fail(&self, words: String, timed_out: bool) {
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

type MockProducer = BaseProducer<Delivery>;

/// Sends `record` by its key, waiting while librdkafka's queue is full.
fn send(producer: &MockProducer, topic: &str, record: &Record) -> Result<(), TransportError> {
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
fn flush(producer: &MockProducer, timeout: Duration) -> Result<(), TransportError> {
    producer.flush(timeout).map_err(|error| broker(format!("cannot produce: {error}")))?;
    match producer.context().failure.lock().clone() {
        Some(failure) => Err(broker(failure)),
        None => Ok(()),
    }
}

/// Takes every broker of the producer's mock cluster down: its connections closed, new
/// ones refused.
fn brokers_down(producer: &MockProducer) {
    let Some(cluster) = producer.client().mock_cluster() else {
        return;
    };
    for id in 1..=BROKERS {
        let _ = cluster.broker_down(id);
    }
}

/// The paced producer's thread: each record sent at its produce time from `epoch`.
struct Pacer {
    producer: Arc<MockProducer>,
    topic: String,
    records: Vec<Record>,
    epoch: Instant,
    stop: Arc<AtomicBool>,
    timeout: Duration,
    gone: Arc<Gone>,
}

impl Pacer {
    fn run(self) {
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

/// What the transport knows of the group's membership and assignment (module docs, step 3).
#[derive(Debug, Default)]
struct GroupView {
    /// Bumped by every join of a new id and every leave.
    epoch: AtomicU64,
    /// Every member in the group and the partitions the broker has assigned it.
    members: Mutex<BTreeMap<MemberId, BTreeSet<u32>>>,
}

impl GroupView {
    /// Whether the broker's assignment covers each of `partitions` partitions exactly
    /// once, and gives every member something where there are enough to go round.
    fn settled(&self, partitions: u32) -> bool {
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

    fn record(&self, member: MemberId, owned: &BTreeSet<u32>) {
        if let Some(entry) = self.members.lock().get_mut(&member) {
            entry.clone_from(owned);
        }
    }
}

/// Settings every member shares.
#[derive(Clone, Copy, Debug)]
struct Settings {
    /// Whether the clients report statistics (a cell on a cluster).
    watched: bool,
    metadata_limit: usize,
    timeout: Duration,
}

/// A [`Transport`] over a topic on a mock cluster, with its consumer group.
pub struct KafkaTransport {
    /// The producer (on the mock, its client runs the cluster, which lives as long as it).
    producer: Arc<MockProducer>,
    bootstrap: String,
    topic: String,
    group_id: String,
    partitions: u32,
    end_offsets: Arc<[u64]>,
    settings: Settings,
    group: Arc<GroupView>,
    /// The paced producer, if the log has records produced after 0.
    pacer: Mutex<Option<JoinHandle<()>>>,
    stop: Arc<AtomicBool>,
    /// The clients' settings.
    options: KafkaOptions,
    /// The cell's topic and group on the user's cluster, deleted after everything else.
    made: Option<Made>,
    /// What the cell's clients see of the cluster.
    counts: Arc<ClientCounts>,
    /// Set once a request of the cell found no broker.
    gone: Arc<Gone>,
    /// A client outside the group that reads its commits ([`Transport::group_commits`]),
    /// made at the first read.
    reader: Mutex<Option<BaseConsumer>>,
}

impl fmt::Debug for KafkaTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KafkaTransport")
            .field("bootstrap", &self.bootstrap)
            .field("topic", &self.topic)
            .field("group_id", &self.group_id)
            .field("partitions", &self.partitions)
            .finish_non_exhaustive()
    }
}

impl Drop for KafkaTransport {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(pacer) = self.pacer.lock().take() {
            let _ = pacer.join();
        }
    }
}

/// Group ids made so far in this process, so that each transport's is new.
static GROUPS: AtomicU64 = AtomicU64::new(0);

impl Backend for Kafka {
    type Transport = KafkaTransport;

    fn open(&self, log: &Topic, epoch: Instant) -> Result<KafkaTransport, TransportError> {
        let number = GROUPS.fetch_add(1, Ordering::Relaxed);
        let gone = Arc::new(Gone::default());
        let made = self.made(log, number, &gone)?;
        let counts = Arc::new(ClientCounts::default());
        let producer: MockProducer = producer_settings(self.timeout, &self.options)
            .create_with_context(Delivery::new(&counts))
            .map_err(|error| broker(format!("cannot create the producer: {error}")))?;
        let (bootstrap, topic, group_id) = match (&made, &self.options.cluster) {
            (Some(made), Some(cluster)) => {
                (cluster.bootstrap.clone(), made.topics[0].clone(), made.group.clone())
            }
            _ => {
                let bootstrap = create_topic(&producer, log, &self.options)?;
                let group = format!("keyed-bench-{}-{number}", std::process::id());
                (bootstrap, log.name().to_owned(), group)
            }
        };
        let partitions = log.partitions();
        let end_offsets: Arc<[u64]> =
            (0..partitions).map(|partition| log.end_offset(partition).unwrap_or(0)).collect();
        let transport = KafkaTransport {
            producer: Arc::new(producer),
            bootstrap,
            topic,
            group_id,
            partitions,
            end_offsets,
            settings: Settings {
                watched: !self.options.is_mock(),
                metadata_limit: self.metadata_limit,
                timeout: self.timeout,
            },
            options: self.options.clone(),
            group: Arc::default(),
            pacer: Mutex::new(None),
            stop: Arc::default(),
            made,
            counts,
            gone,
            reader: Mutex::new(None),
        };
        transport.produce(log, epoch)?;
        let mock = self.options.is_mock();
        if let Some(fault) = self.fault.as_ref().filter(|fault| mock && fault.strikes()) {
            transport.take_down(fault.after)?;
        }
        Ok(transport)
    }
}

impl Kafka {
    /// On the user's cluster, the cell's topic (`PREFIX-N`) made for `log`, and its group
    /// named; on the mock, nothing yet, once `log` is known to fit.
    fn made(
        &self,
        log: &Topic,
        number: u64,
        gone: &Arc<Gone>,
    ) -> Result<Option<Made>, TransportError> {
        let (Some(cluster), Some(admin)) = (&self.options.cluster, &self.admin) else {
            let bytes = partition_bytes(log);
            if bytes > MOCK_PARTITION_BYTES {
                return Err(broker(format!(
                    "the fullest partition would hold about {bytes} bytes, more than the mock \
                     cluster keeps ({MOCK_PARTITION_BYTES})"
                )));
            }
            return Ok(None);
        };
        let topic = format!("{}-{number}", cluster.prefix);
        // A log that grew is made as it stood before, and grown as it is produced.
        let partitions = log.growth().map_or(log.partitions(), |growth| growth.partitions);
        let mut made = Made {
            admin: Arc::clone(admin),
            group: topic.clone(),
            topics: Vec::new(),
            keep: cluster.keep_topics,
            leftovers: Arc::clone(&self.options.hooks.leftovers),
            gone: Arc::clone(gone),
        };
        let replicas = self.options.replication_factor;
        let sides = [side::retry_topic(&topic), side::dead_letter_topic(&topic)];
        let all = [(topic.clone(), partitions)].into_iter().chain(sides.map(|side| (side, 1)));
        // A topic that fails leaves the ones made before it to `made`'s drop.
        for (name, partitions) in all {
            admin.create(&name, partitions, replicas)?;
            made.topics.push(name);
        }
        Ok(Some(made))
    }
}

/// A cell's topic and group on the user's cluster: deleted when the transport goes, unless
/// the run keeps them; a deletion that fails is noted in the run's leftovers.
struct Made {
    admin: Arc<dyn TopicAdmin>,
    /// The log's topic, then its side topics, as far as they were made.
    topics: Vec<String>,
    group: String,
    keep: bool,
    leftovers: Arc<super::options::Leftovers>,
    /// Once the cell's broker stopped answering, nothing is deleted: each request would
    /// wait out the timeout in vain, and the run names what is left.
    gone: Arc<Gone>,
}

impl Drop for Made {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Err(error) = self.gone.check() {
            let what = self.topics.join(", ");
            let left =
                broker(format!("topics {what} and group {} not deleted: {error}", self.group));
            self.leftovers.note(&left);
            return;
        }
        let topics: Vec<&str> = self.topics.iter().map(String::as_str).collect();
        if !topics.is_empty() {
            if let Err(error) = self.admin.delete_topics(&topics) {
                self.leftovers.note(&error);
            }
        }
        // Last: a crashed member stays in the group until its session ends.
        if let Err(error) = self.admin.delete_group(&self.group) {
            self.leftovers.note(&error);
        }
    }
}

/// Creates `log`'s topic on the producer's mock cluster and shortens its group timings;
/// returns the cluster's bootstrap servers.
fn create_topic(
    producer: &MockProducer,
    log: &Topic,
    options: &KafkaOptions,
) -> Result<String, TransportError> {
    let cluster = producer
        .client()
        .mock_cluster()
        .ok_or_else(|| broker("the producer started no mock cluster"))?;
    let partitions = i32::try_from(log.partitions()).unwrap_or(i32::MAX);
    let replicas = i32::from(options.replication_factor);
    let sides = [side::retry_topic(log.name()), side::dead_letter_topic(log.name())];
    for (name, partitions) in
        [(log.name().to_owned(), partitions)].into_iter().chain(sides.map(|side| (side, 1)))
    {
        cluster
            .create_topic(&name, partitions, replicas)
            .map_err(|error| broker(format!("cannot create topic {name}: {error}")))?;
    }
    // SAFETY: the pointer is the producer's live client, which `producer` borrows for the
    // call; librdkafka returns its mock cluster (checked non-null above through the safe
    // API), whose settings functions queue an operation to the cluster's own thread.
    unsafe {
        let mock = rdkafka::bindings::rd_kafka_handle_mock_cluster(producer.client().native_ptr());
        rdkafka::bindings::rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(
            mock,
            HEARTBEAT_MS,
        );
        rdkafka::bindings::rd_kafka_mock_set_group_consumer_session_timeout_ms(
            mock,
            SESSION_TIMEOUT_MS,
        );
        rdkafka::bindings::rd_kafka_mock_group_initial_rebalance_delay_ms(mock, HEARTBEAT_MS);
    }
    Ok(cluster.bootstrap_servers())
}

impl KafkaTransport {
    /// Produces `log` (module docs, step 1): the records produced at 0 now, the others on
    /// the pacer's thread.
    fn produce(&self, log: &Topic, epoch: Instant) -> Result<(), TransportError> {
        let (now, mut paced): (Vec<Record>, Vec<Record>) =
            log.records().copied().partition(|record| record.produce_ns == 0);
        if let Some(growth) = log.growth() {
            // A log that grows is a backlog (pipeline-expand): nothing is paced.
            if !paced.is_empty() {
                return Err(broker("a log that grows is produced before it is consumed"));
            }
            let grown = self.produce_growing(log, growth, &now)?;
            // The first producer's metadata predates the growth: the new partitions are
            // unknown to it.
            return self.check_watermarks(&grown);
        }
        for record in &now {
            send(&self.producer, &self.topic, record)?;
        }
        flush(&self.producer, self.settings.timeout)?;
        if paced.is_empty() {
            return self.check_watermarks(&self.producer);
        }
        paced.sort_by_key(|record| (record.produce_ns, record.partition, record.offset));
        let pacer = Pacer {
            producer: Arc::clone(&self.producer),
            topic: self.topic.clone(),
            records: paced,
            epoch,
            stop: Arc::clone(&self.stop),
            timeout: self.settings.timeout,
            gone: Arc::clone(&self.gone),
        };
        let handle = thread::Builder::new()
            .name("kafka-producer".into())
            .spawn(move || pacer.run())
            .map_err(|error| broker(format!("cannot start the producer thread: {error}")))?;
        *self.pacer.lock() = Some(handle);
        Ok(())
    }

    /// Produces `records` of a log that grew, as it grew: the records written before the
    /// growth, then (on the user's cluster) the topic grown to the log's partitions through
    /// CreatePartitions, then the rest, by a producer whose first metadata has the new
    /// count, so that Kafka's partitioner hashes them over it as the log did. The mock
    /// cannot add partitions. Returns the second producer.
    fn produce_growing(
        &self,
        log: &Topic,
        growth: &log::Growth,
        records: &[Record],
    ) -> Result<MockProducer, TransportError> {
        let Some(made) = &self.made else {
            return Err(broker("the mock cluster cannot add partitions to a topic"));
        };
        let (before, after): (Vec<&Record>, Vec<&Record>) =
            records.iter().partition(|record| growth.before(record));
        for record in before {
            send(&self.producer, &self.topic, record)?;
        }
        flush(&self.producer, self.settings.timeout)?;
        made.admin.grow(&self.topic, log.partitions())?;
        let grown: MockProducer = producer_settings(self.settings.timeout, &self.options)
            .create_with_context(Delivery::new(&self.counts))
            .map_err(|error| broker(format!("cannot create the producer: {error}")))?;
        for record in after {
            send(&grown, &self.topic, record)?;
        }
        flush(&grown, self.settings.timeout)?;
        Ok(grown)
    }

    /// Fails unless each partition's high watermark on the broker, as `producer`'s client
    /// reads it, is the log's end offset.
    fn check_watermarks(&self, producer: &MockProducer) -> Result<(), TransportError> {
        for (partition, &end) in self.end_offsets.iter().enumerate() {
            let (_, high) = producer
                .client()
                .fetch_watermarks(&self.topic, partition as i32, self.settings.timeout)
                .map_err(|error| broker(format!("cannot read the watermarks: {error}")))?;
            if high != end as i64 {
                return Err(broker(format!(
                    "partition {partition} ends at {high} on the broker, at {end} in the log"
                )));
            }
        }
        Ok(())
    }

    /// Takes every broker of the cluster down `after` now, as a broker that dies would go
    /// (its connections closed, new ones refused), from a thread of its own.
    fn take_down(&self, after: Duration) -> Result<(), TransportError> {
        let producer = Arc::clone(&self.producer);
        thread::Builder::new()
            .name("kafka-fault".into())
            .spawn(move || {
                thread::sleep(after);
                brokers_down(&producer);
            })
            .map(drop)
            .map_err(|error| broker(format!("cannot start the fault's thread: {error}")))
    }

    /// The cluster's bootstrap servers.
    pub fn bootstrap_servers(&self) -> &str {
        &self.bootstrap
    }

    /// The first failure of the paced producer, if any.
    pub fn producer_failure(&self) -> Option<String> {
        self.producer.context().failure.lock().clone()
    }
}

impl Transport for KafkaTransport {
    type Member = KafkaMember;

    fn join(&self, member: MemberId) -> Result<Arc<KafkaMember>, TransportError> {
        let consumer: BaseConsumer<MemberContext> = consumer_settings(
            &self.bootstrap,
            &self.group_id,
            self.settings.timeout,
            &self.options,
        )
        .create_with_context(MemberContext::new(self.options.group_protocol, &self.counts))
        .map_err(|error| broker(format!("cannot create the consumer: {error}")))?;
        consumer
            .subscribe(&[&self.topic])
            .map_err(|error| broker(format!("cannot subscribe: {error}")))?;
        let epoch = {
            let mut members = self.group.members.lock();
            match members.insert(member, BTreeSet::new()) {
                Some(_) => self.group.epoch.load(Ordering::Acquire),
                None => self.group.epoch.fetch_add(1, Ordering::AcqRel) + 1,
            }
        };
        Ok(Arc::new(KafkaMember {
            consumer: ManuallyDrop::new(consumer),
            id: member,
            topic: self.topic.clone(),
            partitions: self.partitions,
            end_offsets: Arc::clone(&self.end_offsets),
            settings: self.settings,
            group: Arc::clone(&self.group),
            state: Mutex::new(MemberState { epoch, ..MemberState::default() }),
            crashed: AtomicBool::new(false),
            commits: self.options.hooks.commits.clone(),
            gone: Arc::clone(&self.gone),
            producer: Arc::clone(&self.producer),
        }))
    }

    fn partitions(&self) -> u32 {
        self.partitions
    }

    fn side_topics(&self) -> Result<Arc<dyn SideTopics>, TransportError> {
        let mut base = with_user_settings(&self.options);
        base.set("bootstrap.servers", &self.bootstrap);
        let timeout = self.settings.timeout;
        let counts = self.client_counts();
        let side =
            side::KafkaSideTopics::new(base, &self.topic, timeout, counts.as_ref(), &self.gone);
        Ok(Arc::new(side))
    }

    /// On a cluster only: the mock's clients report no statistics.
    fn client_counts(&self) -> Option<Arc<ClientCounts>> {
        self.settings.watched.then(|| Arc::clone(&self.counts))
    }

    fn endpoint(&self) -> Option<Endpoint> {
        self.made.as_ref()?;
        Some(Endpoint {
            bootstrap: self.bootstrap.clone(),
            topic: self.topic.clone(),
            group: self.group_id.clone(),
            session_timeout_ms: session_timeout_ms(&self.options),
        })
    }

    fn group_commits(&self) -> Result<Vec<Option<Commit>>, TransportError> {
        self.gone.check()?;
        let mut reader = self.reader.lock();
        if reader.is_none() {
            // A client that never subscribes joins no group: its offset fetch reads the
            // group's commits and moves nothing.
            let mut config = with_user_settings(&self.options);
            let client = config
                .set("bootstrap.servers", &self.bootstrap)
                .set("group.id", &self.group_id)
                .set("enable.auto.commit", "false")
                .create::<BaseConsumer>()
                .map_err(|error| broker(format!("cannot create the commit reader: {error}")))?;
            *reader = Some(client);
        }
        let client = reader.as_ref().expect("made above");
        let mut list = TopicPartitionList::with_capacity(self.partitions as usize);
        for partition in 0..self.partitions {
            list.add_partition(&self.topic, partition as i32);
        }
        let committed = client
            .committed_offsets(list, self.settings.timeout)
            .map_err(|error| broker(format!("cannot read the group's commits: {error}")))?;
        Ok((0..self.partitions)
            .map(|partition| commit_in(&committed, &self.topic, partition))
            .collect())
    }
}

/// The commit of `topic`'s `partition` in an offset fetch's answer; `None` where the group
/// committed none.
fn commit_in(committed: &TopicPartitionList, topic: &str, partition: u32) -> Option<Commit> {
    let elem = committed.find_partition(topic, partition as i32)?;
    match elem.offset() {
        Offset::Offset(offset) => Some(Commit {
            offset: u64::try_from(offset).unwrap_or(0),
            metadata: elem.metadata().to_owned(),
        }),
        _ => None,
    }
}

/// The session timeout a classic member joins a cluster with: `-X session.timeout.ms` if
/// given, else [`CLUSTER_SESSION_TIMEOUT_MS`].
fn session_timeout_ms(options: &KafkaOptions) -> u64 {
    let given = options.client.iter().rev().find(|setting| setting.key == "session.timeout.ms");
    given
        .and_then(|setting| setting.value.parse().ok())
        .unwrap_or(CLUSTER_SESSION_TIMEOUT_MS as u64)
}

/// A change of assignment the broker made, queued by the rebalance callback.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Change {
    Assign(Vec<u32>),
    Revoke(Vec<u32>),
}

/// A member's consumer context: the rebalance callback queues the broker's changes for the
/// member's next poll, or makes them at once while the client closes.
#[derive(Debug)]
struct MemberContext {
    changes: Mutex<VecDeque<Change>>,
    closing: AtomicBool,
    /// Whether the group protocol assigns incrementally, known from the settings (KIP-848's
    /// `consumer` protocol always does). librdkafka is never asked: its
    /// `rd_kafka_rebalance_protocol` waits on the group's thread for ever, and a closing
    /// consumer's group may have stopped serving it.
    cooperative: bool,
    /// The partitions the client's own assignment holds: what its assigns and unassigns
    /// made so far.
    held: Mutex<BTreeSet<u32>>,
    /// What the member sees of the cluster.
    seen: Seen,
}

impl MemberContext {
    fn new(group_protocol: GroupProtocol, counts: &Arc<ClientCounts>) -> Self {
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
fn apply(
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
fn commit_within(
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

/// A member's side of the group.
#[derive(Debug, Default)]
struct MemberState {
    /// The partitions the broker has assigned the member.
    owned: BTreeSet<u32>,
    /// Whether the listener was told of `owned` (module docs, step 3): until then polls
    /// return nothing and the assignment is empty.
    holding: bool,
    /// The next offset of each owned partition the listener was given.
    positions: BTreeMap<u32, u64>,
    /// The membership epoch the member's hold belongs to.
    epoch: u64,
    /// Set by a client error, cleared once the broker answers again.
    unanswered: Option<Unanswered>,
}

/// Since when the broker may not have answered the member's client (module docs, step 4).
#[derive(Debug)]
struct Unanswered {
    since: Instant,
    /// The client's error that raised the doubt.
    first: String,
    /// When the last metadata request checked it.
    probed: Option<Instant>,
}

/// A member's client of a [`KafkaTransport`].
pub struct KafkaMember {
    /// Closed by the member's drop (on a thread of its own), while the cluster still runs.
    consumer: ManuallyDrop<BaseConsumer<MemberContext>>,
    id: MemberId,
    topic: String,
    partitions: u32,
    end_offsets: Arc<[u64]>,
    settings: Settings,
    group: Arc<GroupView>,
    state: Mutex<MemberState>,
    /// Set by a crash: the client is destroyed without closing.
    crashed: AtomicBool,
    /// Told of every commit the group took (a test's hook).
    commits: Option<Arc<dyn CommitObserver>>,
    /// Set once a request of the cell found no broker: the member's requests then fail at
    /// once.
    gone: Arc<Gone>,
    /// The log's producer, whose failure (a paced record the broker did not take) ends
    /// the member's polls; on the mock its client runs the cluster, kept up until the
    /// member is gone.
    producer: Arc<MockProducer>,
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
enum End {
    /// Closed (rust-rdkafka's drop): the group's leave, then the connections.
    Close,
    /// Destroyed without closing, as a crashed process's client goes: no leave (librdkafka's
    /// `RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE`), no commit.
    Crash,
}

/// Ends `consumer` the way `end` says.
fn end_client(consumer: BaseConsumer<MemberContext>, end: End) {
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
    fn list(&self, partitions: &[u32]) -> TopicPartitionList {
        let mut tpl = TopicPartitionList::with_capacity(partitions.len());
        for &partition in partitions {
            tpl.add_partition(&self.topic, partition as i32);
        }
        tpl
    }

    /// From now on the rebalance callback makes the broker's changes itself; the queued
    /// ones are made now, the listener not told.
    fn close_changes(&self) {
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
    fn unsubscribe_first(&self) {
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
    fn end_aside(&mut self, end: End) {
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
    fn broker_error(&self, error: &KafkaError) {
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
    fn check_broker(&self) -> Result<(), TransportError> {
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

    fn check_owner(&self, partition: u32) -> Result<(), TransportError> {
        if self.state.lock().owned.contains(&partition) {
            Ok(())
        } else {
            Err(TransportError::NotAssigned { member: self.id, partition })
        }
    }

    /// Ends the member's hold if the membership changed since it began (module docs, step
    /// 3): the listener is revoked what it holds, which stays the member's on the broker.
    fn membership_changed(&self, listener: &mut dyn RebalanceListener) -> bool {
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
    fn next_change(&self, listener: &mut dyn RebalanceListener) -> bool {
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
    fn take_hold(&self, listener: &mut dyn RebalanceListener) {
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
    fn fetch(&self, max_records: usize) -> Vec<Record> {
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
    fn set_paused(&self, partitions: &[u32], paused: bool) -> Result<(), TransportError> {
        for &partition in partitions {
            self.check_owner(partition)?;
        }
        let tpl = self.list(partitions);
        let done = if paused { self.consumer.pause(&tpl) } else { self.consumer.resume(&tpl) };
        done.map_err(|error| broker(format!("cannot pause or resume: {error}")))
    }

    /// A refused commit of `partition` with `bytes` characters of metadata in the
    /// transport's terms, with the broker's words where it has no term for them.
    fn commit_error(&self, partition: u32, bytes: usize, error: &KafkaError) -> TransportError {
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
