//! The Kafka [`Transport`]: a topic with its consumer group, which members join (step 2),
//! and the reads of step 6.

use super::gone::Gone;
use super::group::{commit_in, GroupView, MemberContext, Settings};
use super::member::{KafkaMember, MemberState};
use super::produce::{brokers_down, flush, send, Delivery, MockProducer, Pacer};
use super::settings::{
    broker, consumer_settings, producer_settings, session_timeout_ms, with_user_settings,
};
use super::side;
use crate::pipeline::log;
use crate::pipeline::log::{Record, Topic};
use crate::pipeline::transport::options::{KafkaOptions, TopicAdmin};
use crate::pipeline::transport::{
    ClientCounts, Commit, Endpoint, MemberId, SideTopics, Transport, TransportError,
};
use parking_lot::Mutex;
use rdkafka::consumer::BaseConsumer;
use rdkafka::consumer::Consumer;
use rdkafka::producer::Producer;
use rdkafka::TopicPartitionList;
use std::collections::BTreeSet;
use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use std::{fmt, thread};

/// A [`Transport`] over a topic on a mock cluster, with its consumer group.
pub struct KafkaTransport {
    /// The producer (on the mock, its client runs the cluster, which lives as long as it).
    pub(super) producer: Arc<MockProducer>,
    pub(super) bootstrap: String,
    pub(super) topic: String,
    pub(super) group_id: String,
    pub(super) partitions: u32,
    pub(super) end_offsets: Arc<[u64]>,
    pub(super) settings: Settings,
    pub(super) group: Arc<GroupView>,
    /// The paced producer, if the log has records produced after 0.
    pub(super) pacer: Mutex<Option<JoinHandle<()>>>,
    pub(super) stop: Arc<AtomicBool>,
    /// The clients' settings.
    pub(super) options: KafkaOptions,
    /// The cell's topic and group on the user's cluster, deleted after everything else.
    pub(super) made: Option<Made>,
    /// What the cell's clients see of the cluster.
    pub(super) counts: Arc<ClientCounts>,
    /// Set once a request of the cell found no broker.
    pub(super) gone: Arc<Gone>,
    /// A client outside the group that reads its commits ([`Transport::group_commits`]),
    /// made at the first read.
    pub(super) reader: Mutex<Option<BaseConsumer>>,
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
/// A cell's topic and group on the user's cluster: deleted when the transport goes, unless
/// the run keeps them; a deletion that fails is noted in the run's leftovers.
pub(super) struct Made {
    pub(super) admin: Arc<dyn TopicAdmin>,
    /// The log's topic, then its side topics, as far as they were made.
    pub(super) topics: Vec<String>,
    pub(super) group: String,
    pub(super) keep: bool,
    pub(super) leftovers: Arc<crate::pipeline::transport::options::Leftovers>,
    /// Once the cell's broker stopped answering, nothing is deleted: each request would
    /// wait out the timeout in vain, and the run names what is left.
    pub(super) gone: Arc<Gone>,
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
impl KafkaTransport {
    /// Produces `log` (module docs, step 1): the records produced at 0 now, the others on
    /// the pacer's thread.
    pub(super) fn produce(&self, log: &Topic, epoch: Instant) -> Result<(), TransportError> {
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
    pub(super) fn produce_growing(
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
    pub(super) fn check_watermarks(&self, producer: &MockProducer) -> Result<(), TransportError> {
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
    pub(super) fn take_down(&self, after: Duration) -> Result<(), TransportError> {
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
