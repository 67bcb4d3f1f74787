//! How the Kafka transport reaches its broker and what its clients are told: the flags
//! `--bootstrap-servers`, `--replication-factor`, `--keep-topics`, `--group-protocol` and
//! `-X key=value`, checked in every build (the clients themselves need feature `kafka`).
//!
//! Without `--bootstrap-servers` each cell starts a mock cluster of its own; with it every
//! cell's topic and group live on the user's cluster under the run's [`prefix`], made by the
//! admin client and deleted after the cell unless `--keep-topics`.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use parking_lot::Mutex;

use super::TransportError;

/// The consumer group protocol the members speak (`--group-protocol`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum GroupProtocol {
    /// Kafka's classic protocol: JoinGroup and SyncGroup, eager rebalances (every member
    /// gives everything up at each change).
    Classic,
    /// KIP-848's protocol (Kafka 4.0 or later): the broker assigns, and moves only the
    /// partitions that move.
    #[default]
    Consumer,
}

impl GroupProtocol {
    /// Its name in librdkafka's `group.protocol` and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Classic => "classic",
            Self::Consumer => "consumer",
        }
    }
}

impl fmt::Display for GroupProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Settings the suite makes itself (and their aliases), with why `-X` may not change them.
pub const RESERVED: &[(&str, &str)] = &[
    ("bootstrap.servers", "give --bootstrap-servers"),
    ("metadata.broker.list", "give --bootstrap-servers"),
    ("group.id", "each cell's group is named after the run's prefix"),
    ("group.instance.id", "every member would share it and fence the others"),
    ("group.protocol", "give --group-protocol"),
    ("partition.assignment.strategy", "the group protocol decides how partitions move"),
    ("enable.auto.commit", "the consumer commits by its commit policy"),
    ("enable.auto.offset.store", "the consumer commits by its commit policy"),
    ("auto.offset.reset", "a member without a commit starts at the log's beginning"),
    ("enable.partition.eof", "a poll returns records, not end-of-partition events"),
    ("partitioner", "every record must land in the partition the log gave it"),
    ("enable.idempotence", "a producer retry must never pass for a redelivery"),
    ("acks", "a record is produced once every replica has it"),
    ("request.required.acks", "a record is produced once every replica has it"),
    ("message.timeout.ms", "give --kafka-timeout-ms"),
    ("delivery.timeout.ms", "give --kafka-timeout-ms"),
    ("socket.timeout.ms", "give --kafka-timeout-ms"),
    ("fetch.wait.max.ms", "the suite sets it for cells that last under a second"),
    ("fetch.error.backoff.ms", "the suite sets it for cells that last under a second"),
    ("fetch.queue.backoff.ms", "the suite sets it for cells that last under a second"),
    ("linger.ms", "a retry or dead letter is sent at once and waited for"),
    ("queue.buffering.max.ms", "a retry or dead letter is sent at once and waited for"),
    ("test.mock.num.brokers", "the mock cluster is what runs without --bootstrap-servers"),
    ("statistics.interval.ms", "the cell's record counts what the clients saw from them"),
];

/// One `-X key=value`: a librdkafka setting for every client of the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientSetting {
    /// The property (`security.protocol`).
    pub key: String,
    /// Its value.
    pub value: String,
}

impl FromStr for ClientSetting {
    type Err = String;

    fn from_str(given: &str) -> Result<Self, String> {
        let (key, value) = given
            .split_once('=')
            .ok_or_else(|| format!("`{given}` is not key=value (-X security.protocol=ssl)"))?;
        let key = key.trim();
        if key.is_empty() {
            return Err(format!("`{given}` names no property"));
        }
        if let Some((_, why)) = RESERVED.iter().find(|(reserved, _)| *reserved == key) {
            return Err(format!("`{key}` is set by the suite: {why}"));
        }
        Ok(Self { key: key.to_owned(), value: value.to_owned() })
    }
}

impl ClientSetting {
    /// Whether the value is a secret (a password, a key, a token), never written to results.
    pub fn is_secret(&self) -> bool {
        let key = self.key.as_str();
        key.contains("password")
            || key.contains("passphrase")
            || key.contains("secret")
            || key.ends_with(".pem")
            || key == "sasl.oauthbearer.config"
    }

    /// `key=value` as results record it: a secret's value is `<secret>`.
    pub fn recorded(&self) -> String {
        let value = if self.is_secret() { "<secret>" } else { self.value.as_str() };
        format!("{}={value}", self.key)
    }

    /// What this build of librdkafka must have for the setting: the name in its
    /// `builtin.features`, and the cargo feature of this project that brings it.
    pub fn needs(&self) -> Option<(&'static str, &'static str)> {
        let value = self.value.to_ascii_lowercase();
        let key = self.key.as_str();
        let tls = (key == "security.protocol" && (value == "ssl" || value == "sasl_ssl"))
            || key.starts_with("ssl.")
            || key.starts_with("ssl_");
        if tls {
            return Some(("ssl", "kafka-ssl"));
        }
        if !matches!(key, "sasl.mechanism" | "sasl.mechanisms") {
            return None;
        }
        match value.as_str() {
            "gssapi" => Some(("sasl_gssapi", "kafka-gssapi")),
            "scram-sha-256" | "scram-sha-512" => Some(("sasl_scram", "kafka-ssl")),
            _ => None,
        }
    }
}

impl fmt::Display for ClientSetting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.key, self.value)
    }
}

/// The user's cluster (`--bootstrap-servers`), and what the run leaves on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cluster {
    /// `host:port[,host:port...]`.
    pub bootstrap: String,
    /// Whether the run's topics and groups stay after it (`--keep-topics`).
    pub keep_topics: bool,
    /// What every topic and group id of the run begins with ([`prefix`]).
    pub prefix: String,
    /// Brokers in the cluster, as its metadata named them when the run checked it; `None`
    /// until then.
    pub brokers: Option<u32>,
}

/// How the run's topics and groups are made and deleted on the user's cluster: the admin
/// client (feature `kafka`), or what a test puts in its place.
pub trait TopicAdmin: Send + Sync + fmt::Debug {
    /// Makes `name` with `partitions` partitions of `replicas` replicas, and returns once
    /// every partition has a leader.
    fn create(&self, name: &str, partitions: u32, replicas: u16) -> Result<(), TransportError>;

    /// Grows `name` to `partitions` partitions (CreatePartitions), and returns once every
    /// partition has a leader.
    fn grow(&self, name: &str, partitions: u32) -> Result<(), TransportError>;

    /// Deletes the topics `names`.
    fn delete_topics(&self, names: &[&str]) -> Result<(), TransportError>;

    /// Deletes the consumer group `id` (empty once its members closed).
    fn delete_group(&self, id: &str) -> Result<(), TransportError>;
}

/// Told of every commit the group took, as it takes it: a test's hook into a running cell
/// (a broker killed once so many records are committed). No flag sets one.
pub trait CommitObserver: Send + Sync + fmt::Debug {
    /// The group took the member's commit of `offset` (the next to consume) in `partition`
    /// of `topic`.
    fn committed(&self, topic: &str, partition: u32, offset: u64);
}

/// What the run made on the cluster and could not delete, named at its end.
#[derive(Debug, Default)]
pub struct Leftovers {
    failures: Mutex<Vec<String>>,
}

impl Leftovers {
    /// Notes a deletion that failed, in the broker's words.
    pub fn note(&self, error: &TransportError) {
        self.failures.lock().push(error.to_string());
    }

    /// Every deletion that failed so far.
    pub fn failures(&self) -> Vec<String> {
        self.failures.lock().clone()
    }
}

/// What the run shares with its transports and no flag sets: where failed deletions are
/// noted, and (for tests) an admin in the admin client's place and an observer of
/// commits. Always equal: it is not a
/// setting.
#[derive(Clone, Debug, Default)]
pub struct KafkaHooks {
    /// Deletions that failed.
    pub leftovers: Arc<Leftovers>,
    /// Makes and deletes topics in the admin client's place.
    pub admin: Option<Arc<dyn TopicAdmin>>,
    /// Told of every commit the group took.
    pub commits: Option<Arc<dyn CommitObserver>>,
}

impl PartialEq for KafkaHooks {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for KafkaHooks {}

/// The run's Kafka settings other than the request timeout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KafkaOptions {
    /// The user's cluster; `None` for a mock cluster per cell.
    pub cluster: Option<Cluster>,
    /// Replicas of each topic (`--replication-factor`).
    pub replication_factor: u16,
    /// `--group-protocol`.
    pub group_protocol: GroupProtocol,
    /// Every `-X key=value`, in the order given.
    pub client: Vec<ClientSetting>,
    /// Shared with the transports.
    pub hooks: KafkaHooks,
}

impl Default for KafkaOptions {
    fn default() -> Self {
        Self {
            cluster: None,
            replication_factor: DEFAULT_MOCK_REPLICATION,
            group_protocol: GroupProtocol::default(),
            client: Vec::new(),
            hooks: KafkaHooks::default(),
        }
    }
}

impl KafkaOptions {
    /// Whether the broker is librdkafka's mock cluster, one per cell.
    pub fn is_mock(&self) -> bool {
        self.cluster.is_none()
    }

    /// The client settings as results record them (secrets hidden).
    pub fn recorded_client(&self) -> Vec<String> {
        self.client.iter().map(ClientSetting::recorded).collect()
    }
}

/// Replicas of a topic on the mock cluster when `--replication-factor` is not given.
pub const DEFAULT_MOCK_REPLICATION: u16 = 1;

/// Replicas of a topic on the user's cluster when `--replication-factor` is not given.
pub const DEFAULT_CLUSTER_REPLICATION: u16 = 3;

/// A prefix for the run's topics and group ids that no other run shares: the start time
/// and the process id (`keyed-bench-20261206t051012-4242`).
pub fn prefix() -> String {
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let stamp: String = now.chars().filter(char::is_ascii_alphanumeric).collect();
    format!("keyed-bench-{}-{}", stamp.to_ascii_lowercase(), std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_as_key_value_and_the_suites_own_are_refused() {
        let setting: ClientSetting = "security.protocol=SASL_SSL".parse().unwrap();
        assert_eq!(
            (setting.key.as_str(), setting.value.as_str()),
            ("security.protocol", "SASL_SSL")
        );
        let with_equals: ClientSetting = "sasl.oauthbearer.config=a=b".parse().unwrap();
        assert_eq!(with_equals.value, "a=b");
        assert!("linger.ms".parse::<ClientSetting>().unwrap_err().contains("key=value"));
        assert!("=1".parse::<ClientSetting>().unwrap_err().contains("names no property"));
        let refused = "enable.auto.commit=true".parse::<ClientSetting>().unwrap_err();
        assert!(refused.contains("set by the suite"), "{refused}");
    }

    #[test]
    fn secrets_are_never_recorded() {
        let password: ClientSetting = "sasl.password=hunter2".parse().unwrap();
        assert_eq!(password.recorded(), "sasl.password=<secret>");
        let linger: ClientSetting = "client.id=bench".parse().unwrap();
        assert_eq!(linger.recorded(), "client.id=bench");
    }

    #[test]
    fn security_settings_name_the_feature_they_need() {
        let needs = |given: &str| given.parse::<ClientSetting>().unwrap().needs();
        assert_eq!(needs("security.protocol=SSL"), Some(("ssl", "kafka-ssl")));
        assert_eq!(needs("ssl.ca.location=/etc/ca.pem"), Some(("ssl", "kafka-ssl")));
        assert_eq!(needs("sasl.mechanism=SCRAM-SHA-512"), Some(("sasl_scram", "kafka-ssl")));
        assert_eq!(needs("sasl.mechanisms=GSSAPI"), Some(("sasl_gssapi", "kafka-gssapi")));
        assert_eq!(needs("sasl.mechanism=PLAIN"), None);
        assert_eq!(needs("security.protocol=sasl_plaintext"), None);
        assert_eq!(needs("client.id=bench"), None);
    }

    #[test]
    fn prefixes_are_topic_names() {
        let prefix = prefix();
        assert!(prefix.starts_with("keyed-bench-"), "{prefix}");
        assert!(super::super::broker::is_topic_name(&format!("{prefix}-12")), "{prefix}");
    }
}
