//! The Kafka [`Backend`]: step 1, a cell's topic and group made on a mock cluster of its
//! own or on the user's cluster, and the log produced to it.

use super::gone::Gone;
use super::group::Settings;
use super::produce::{Delivery, MockProducer};
use super::settings::{
    broker, consumer_settings, partition_bytes, producer_settings, with_user_settings,
    HEARTBEAT_MS, MOCK_PARTITION_BYTES, SESSION_TIMEOUT_MS,
};
use super::transport::{KafkaTransport, Made};
use super::{admin, side};
use crate::pipeline::commit::DEFAULT_METADATA_LIMIT_BYTES;
use crate::pipeline::log::Topic;
use crate::pipeline::transport::options::{KafkaOptions, TopicAdmin};
use crate::pipeline::transport::{Backend, BrokerFault, ClientCounts, TransportError};
use parking_lot::Mutex;
use rdkafka::producer::Producer;
use rdkafka::ClientConfig;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    pub(super) admin: Option<Arc<dyn TopicAdmin>>,
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
/// Group ids made so far in this process, so that each transport's is new.
pub(super) static GROUPS: AtomicU64 = AtomicU64::new(0);

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
    pub(super) fn made(
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

/// Creates `log`'s topic on the producer's mock cluster and shortens its group timings;
/// returns the cluster's bootstrap servers.
pub(super) fn create_topic(
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
