//! The run's topics and groups on the user's cluster (`--bootstrap-servers`): made through
//! librdkafka's admin client under the run's prefix, and deleted after each cell unless
//! `--keep-topics`.
//!
//! # Steps
//!
//! 1. **Check** before the run writes anything: the cluster answers a metadata request
//!    within the timeout, and a topic can be made and deleted there (a probe under the run's
//!    prefix). A refusal (no route, a wrong address, a missing CreateTopics or DeleteTopics
//!    permission, a replication factor above the brokers) is the broker's words, and the run
//!    exits 2.
//! 2. **Make** a cell's topic with the log's partitions and the replication factor, then wait
//!    until its metadata names a leader for every partition.
//! 3. **Delete** the cell's topics, then its group, when its transport goes (a group whose
//!    crashed member's session has not ended yet is tried again until it has, within
//!    [`GROUP_EMPTIES_WITHIN`]); what cannot be deleted is noted in the run's
//!    [`Leftovers`](super::super::options::Leftovers), which it names at its end with the
//!    prefix.

use std::fmt;
use std::thread;
use std::time::{Duration, Instant};

use futures_executor::block_on;
use rdkafka::admin::{AdminClient, AdminOptions, NewPartitions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::RDKafkaErrorCode;
use rdkafka::ClientConfig;

use super::super::options::{ClientSetting, Cluster, TopicAdmin};
use super::super::TransportError;

/// The longest a group with a crashed member is waited for before its deletion is given
/// up: past KIP-848's default session (45 s) and the classic session the suite asks for on
/// a cluster (6 s), and under the shortest `--cell-timeout` (60 s).
pub const GROUP_EMPTIES_WITHIN: Duration = Duration::from_secs(50);

/// How often the deletion of a group with a crashed member is tried again.
const GROUP_RETRY: Duration = Duration::from_millis(500);

/// A broker failure in words.
fn broker(what: impl fmt::Display) -> TransportError {
    TransportError::Broker(what.to_string())
}

/// The admin client of the user's cluster.
pub struct ClusterAdmin {
    client: AdminClient<DefaultClientContext>,
    timeout: Duration,
}

impl fmt::Debug for ClusterAdmin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterAdmin").field("timeout", &self.timeout).finish_non_exhaustive()
    }
}

impl ClusterAdmin {
    /// An admin client of the cluster at `bootstrap` with the run's `-X` settings.
    pub fn connect(
        bootstrap: &str,
        settings: &[ClientSetting],
        timeout: Duration,
    ) -> Result<Self, TransportError> {
        let mut config = ClientConfig::new();
        for setting in settings {
            config.set(&setting.key, &setting.value);
        }
        config.set("bootstrap.servers", bootstrap);
        let client = config
            .create()
            .map_err(|error| broker(format!("cannot create the admin client: {error}")))?;
        Ok(Self { client, timeout })
    }

    /// How many brokers the cluster has, once one answered a metadata request within the
    /// timeout (step 1).
    pub fn brokers(&self) -> Result<u32, TransportError> {
        let metadata =
            self.client.inner().fetch_metadata(None, self.timeout).map_err(|error| {
                broker(format!("no broker answered within the timeout: {error}"))
            })?;
        Ok(u32::try_from(metadata.brokers().len()).unwrap_or(u32::MAX))
    }

    fn options(&self) -> AdminOptions {
        AdminOptions::new()
            .request_timeout(Some(self.timeout))
            .operation_timeout(Some(self.timeout))
    }

    /// Waits until the metadata of `name` names a leader for each of `partitions` (step 2).
    fn wait_for_leaders(&self, name: &str, partitions: u32) -> Result<(), TransportError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            let led = |topic: &rdkafka::metadata::MetadataTopic| {
                topic.name() == name
                    && topic.error().is_none()
                    && topic.partitions().len() == partitions as usize
                    && topic.partitions().iter().all(|partition| partition.leader() >= 0)
            };
            let ready = self
                .client
                .inner()
                .fetch_metadata(Some(name), self.timeout)
                .is_ok_and(|metadata| metadata.topics().iter().any(led));
            if ready {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(broker(format!(
                    "topic {name} was created, but its {partitions} partitions had no leaders \
                     within the timeout"
                )));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }
}

impl TopicAdmin for ClusterAdmin {
    fn create(&self, name: &str, partitions: u32, replicas: u16) -> Result<(), TransportError> {
        let count = i32::try_from(partitions).unwrap_or(i32::MAX);
        let topic = NewTopic::new(name, count, TopicReplication::Fixed(i32::from(replicas)));
        let refused = |(topic, code): (String, RDKafkaErrorCode)| {
            broker(format!("cannot create topic {topic}: {code}"))
        };
        let made = block_on(self.client.create_topics([&topic], &self.options()))
            .map_err(|error| broker(format!("cannot create topic {name}: {error}")))
            .and_then(|results| {
                results.into_iter().try_for_each(|result| result.map(drop).map_err(refused))
            })
            .and_then(|()| self.wait_for_leaders(name, partitions));
        // A request that timed out, or a topic without leaders, may still have been made:
        // delete it, or say that it may be left.
        made.map_err(|error| match self.delete_topics(&[name]) {
            Ok(()) => error,
            Err(_) => broker(format!("{error} (topic {name} may be left on the cluster)")),
        })
    }

    fn grow(&self, name: &str, partitions: u32) -> Result<(), TransportError> {
        let count = usize::try_from(partitions).unwrap_or(usize::MAX);
        let grown = NewPartitions::new(name, count);
        let results = block_on(self.client.create_partitions([&grown], &self.options()))
            .map_err(|error| broker(format!("cannot grow topic {name}: {error}")))?;
        for result in results {
            result.map_err(|(topic, code)| broker(format!("cannot grow topic {topic}: {code}")))?;
        }
        self.wait_for_leaders(name, partitions)
    }

    fn delete_topics(&self, names: &[&str]) -> Result<(), TransportError> {
        let results = block_on(self.client.delete_topics(names, &self.options()))
            .map_err(|error| broker(format!("cannot delete topics: {error}")))?;
        for result in results {
            result
                .map_err(|(topic, code)| broker(format!("cannot delete topic {topic}: {code}")))?;
        }
        Ok(())
    }

    /// Deletes group `id`; while a crashed member is still in it (its session has not
    /// ended: `NonEmptyGroup`), tries again every [`GROUP_RETRY`] for at most
    /// [`GROUP_EMPTIES_WITHIN`].
    fn delete_group(&self, id: &str) -> Result<(), TransportError> {
        let deadline = Instant::now() + GROUP_EMPTIES_WITHIN;
        loop {
            let results = block_on(self.client.delete_groups(&[id], &self.options()))
                .map_err(|error| broker(format!("cannot delete group {id}: {error}")))?;
            let refused = results.into_iter().find_map(|result| match result {
                // A cell that ended before any member joined made no group.
                Ok(_) | Err((_, RDKafkaErrorCode::GroupIdNotFound)) => None,
                Err((group, code)) => Some((group, code)),
            });
            match refused {
                None => return Ok(()),
                Some((_, RDKafkaErrorCode::NonEmptyGroup)) if Instant::now() < deadline => {
                    thread::sleep(GROUP_RETRY);
                }
                Some((group, code)) => {
                    return Err(broker(format!("cannot delete group {group}: {code}")));
                }
            }
        }
    }
}

/// Step 1: checks that `cluster` answers and lets the run make and delete a topic there;
/// returns its admin and its brokers' count.
pub fn check(
    cluster: &Cluster,
    settings: &[ClientSetting],
    replicas: u16,
    timeout: Duration,
) -> Result<(ClusterAdmin, u32), TransportError> {
    let admin = ClusterAdmin::connect(&cluster.bootstrap, settings, timeout)?;
    let brokers = admin.brokers()?;
    let probe = format!("{}-check", cluster.prefix);
    admin.create(&probe, 1, replicas)?;
    admin.delete_topics(&[&probe]).map_err(|error| {
        broker(format!("{error} (the probe topic {probe} is left on the cluster)"))
    })?;
    Ok((admin, brokers))
}
