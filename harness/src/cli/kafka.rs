//! The flags of `keyed-bench run` that say which Kafka broker the pipeline scenarios use
//! and how their clients talk to it, checked into [`KafkaOptions`]; and the check of the
//! user's cluster before a run writes anything ([`check_cluster`]).

use clap::Args;

use crate::config::{RunConfig, SettingError};
use crate::limits::settings::FLAGS;
use crate::limits::{FlagRange, NumberParser};
use crate::pipeline::transport::options::{
    self, DEFAULT_CLUSTER_REPLICATION, DEFAULT_MOCK_REPLICATION,
};
use crate::pipeline::{ClientSetting, Cluster, GroupProtocol, KafkaOptions, TransportKind};

/// The range of `--replication-factor`.
pub const REPLICATION_RANGE: FlagRange =
    FlagRange { flag: "replication-factor", min: 1.0, max: 32_767.0, integer: true };

/// Brokers of each cell's mock cluster: the most replicas a topic there can have.
const MOCK_BROKERS: u16 = 3;

/// Flags of `--transport kafka`.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct KafkaArgs {
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.bootstrap_servers.name, help = FLAGS.bootstrap_servers.help,
          long_help = FLAGS.bootstrap_servers.long_help,
          help_heading = "Pipeline", value_name = "HOST:PORT[,...]")]
    pub bootstrap_servers: Option<String>,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.replication_factor.name, help = FLAGS.replication_factor.help,
          long_help = FLAGS.replication_factor.long_help,
          help_heading = "Pipeline", value_name = "N",
          value_parser = NumberParser::<u16>::new(REPLICATION_RANGE),
          allow_negative_numbers = true)]
    pub replication_factor: Option<u16>,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.keep_topics.name, help = FLAGS.keep_topics.help,
          long_help = FLAGS.keep_topics.long_help,
          help_heading = "Pipeline")]
    pub keep_topics: bool,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.group_protocol.name, help = FLAGS.group_protocol.help,
          long_help = FLAGS.group_protocol.long_help,
          help_heading = "Pipeline", value_enum, value_name = "PROTOCOL")]
    pub group_protocol: Option<GroupProtocol>,
    /// A librdkafka setting for every Kafka client of the run, as kcat's -X
    /// (`-X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN`); repeatable. Settings the
    /// suite makes itself (group.id, enable.auto.commit, partitioner, acks, ...) are
    /// refused. TLS needs a build with `--features kafka-ssl`, SASL/GSSAPI one with
    /// `--features kafka-gssapi`.
    #[arg(short = 'X', help_heading = "Pipeline", value_name = "KEY=VALUE",
          value_parser = parse_setting)]
    pub client: Vec<ClientSetting>,
}

fn parse_setting(given: &str) -> Result<ClientSetting, String> {
    given.parse()
}

impl KafkaArgs {
    /// The checked options for a run over `transport`.
    pub fn options(&self, transport: TransportKind) -> Result<KafkaOptions, SettingError> {
        let kafka = transport == TransportKind::Kafka;
        let given = [
            ("bootstrap-servers", self.bootstrap_servers.is_some()),
            ("replication-factor", self.replication_factor.is_some()),
            ("keep-topics", self.keep_topics),
            ("group-protocol", self.group_protocol.is_some()),
            ("X", !self.client.is_empty()),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, given)| *given && !kafka) {
            let dashes = if *flag == "X" { "-" } else { "--" };
            return Err(SettingError::Kafka(format!(
                "{dashes}{flag} is a setting of the Kafka transport: add --transport kafka"
            )));
        }
        let cluster = self.cluster()?;
        if self.keep_topics && cluster.is_none() {
            return Err(SettingError::Kafka(
                "--keep-topics keeps a cluster's topics: it needs --bootstrap-servers (a mock \
                 cluster's go with it)"
                    .into(),
            ));
        }
        let replication_factor = self.replication_factor.unwrap_or(if cluster.is_some() {
            DEFAULT_CLUSTER_REPLICATION
        } else {
            DEFAULT_MOCK_REPLICATION
        });
        if cluster.is_none() && replication_factor > MOCK_BROKERS {
            return Err(SettingError::Kafka(format!(
                "--replication-factor {replication_factor} is more than the mock cluster's \
                 {MOCK_BROKERS} brokers"
            )));
        }
        let options = KafkaOptions {
            cluster,
            replication_factor,
            group_protocol: self.group_protocol.unwrap_or_default(),
            client: self.client.clone(),
            hooks: Default::default(),
        };
        if kafka {
            check_client(&options)?;
        }
        Ok(options)
    }

    /// The user's cluster, its addresses checked for form.
    fn cluster(&self) -> Result<Option<Cluster>, SettingError> {
        let Some(given) = &self.bootstrap_servers else {
            return Ok(None);
        };
        for address in given.split(',') {
            let well_formed = address
                .trim()
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
            if !well_formed {
                return Err(SettingError::Kafka(format!(
                    "--bootstrap-servers `{given}`: `{address}` is not HOST:PORT (give \
                     host:port[,host:port...])"
                )));
            }
        }
        Ok(Some(Cluster {
            bootstrap: given.trim().to_owned(),
            keep_topics: self.keep_topics,
            prefix: options::prefix(),
            brokers: None,
        }))
    }
}

/// Before a run over Kafka writes anything (and not for `--dry-run`, which contacts no
/// broker): the user's cluster, if any, answers and lets the run make and delete a topic
/// (its broker count noted). The `-X` settings were checked with the flags. Returns the lines to tell the user: where the
/// run's topics go.
pub fn check_cluster(config: &mut RunConfig) -> Result<Vec<String>, SettingError> {
    if config.transport != TransportKind::Kafka {
        return Ok(Vec::new());
    }
    let timeout = config.kafka_timeout;
    let options = &mut config.kafka;
    let Some(cluster) = options.cluster.as_mut() else {
        return Ok(Vec::new());
    };
    let brokers = checked(cluster, &options.client, options.replication_factor, timeout)?;
    cluster.brokers = Some(brokers);
    let fate = if cluster.keep_topics { "kept (--keep-topics)" } else { "deleted after each cell" };
    Ok(vec![format!(
        "the cluster at {} ({brokers} brokers) answered; the run's topics and groups there \
         begin with {} and are {fate}",
        cluster.bootstrap, cluster.prefix
    )])
}

#[cfg(feature = "kafka")]
fn check_client(options: &KafkaOptions) -> Result<(), SettingError> {
    crate::pipeline::transport::kafka::check_settings(&options.client).map_err(SettingError::Kafka)
}

#[cfg(feature = "kafka")]
fn checked(
    cluster: &Cluster,
    client: &[ClientSetting],
    replicas: u16,
    timeout: std::time::Duration,
) -> Result<u32, SettingError> {
    let started = std::time::Instant::now();
    crate::pipeline::transport::kafka::admin::check(cluster, client, replicas, timeout)
        .map(|(_, brokers)| brokers)
        .map_err(|error| {
            let words = match error {
                crate::pipeline::TransportError::Broker(words) => words,
                other => other.to_string(),
            };
            SettingError::Kafka(format!(
                "--bootstrap-servers {}: {words} (after {:.1} s; --kafka-timeout-ms {})",
                cluster.bootstrap,
                started.elapsed().as_secs_f64(),
                timeout.as_millis()
            ))
        })
}

/// Without the feature `--transport kafka` was refused already.
#[cfg(not(feature = "kafka"))]
fn check_client(_: &KafkaOptions) -> Result<(), SettingError> {
    Ok(())
}

#[cfg(not(feature = "kafka"))]
fn checked(
    _: &Cluster,
    _: &[ClientSetting],
    _: u16,
    _: std::time::Duration,
) -> Result<u32, SettingError> {
    Ok(0)
}

/// What the run left on the user's cluster, as lines for its end: each deletion that failed,
/// with the prefix to find the rest by.
pub fn leftovers(config: &RunConfig) -> Vec<String> {
    let Some(cluster) = &config.kafka.cluster else {
        return Vec::new();
    };
    let failures = config.kafka.hooks.leftovers.failures();
    if failures.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![format!(
        "warning: {} deletion(s) on the cluster failed; the run's topics and groups begin \
         with {}",
        failures.len(),
        cluster.prefix
    )];
    lines.extend(failures.into_iter().map(|failure| format!("  {failure}")));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kafka(args: KafkaArgs) -> Result<KafkaOptions, SettingError> {
        args.options(TransportKind::Kafka)
    }

    #[test]
    fn kafka_flags_need_the_kafka_transport() {
        let args = KafkaArgs { bootstrap_servers: Some("a:9092".into()), ..KafkaArgs::default() };
        let error = args.options(TransportKind::Embedded).unwrap_err().to_string();
        assert!(error.contains("--bootstrap-servers is a setting of the Kafka"), "{error}");
        let args =
            KafkaArgs { client: vec!["client.id=bench".parse().unwrap()], ..KafkaArgs::default() };
        let error = args.options(TransportKind::Embedded).unwrap_err().to_string();
        assert!(error.starts_with("-X is a setting"), "{error}");
        assert_eq!(
            KafkaArgs::default().options(TransportKind::Embedded).unwrap(),
            KafkaOptions::default()
        );
    }

    #[test]
    fn the_mock_and_a_cluster_have_their_own_defaults_and_limits() {
        let mock = kafka(KafkaArgs::default()).unwrap();
        assert!(mock.is_mock());
        assert_eq!(mock.replication_factor, 1);
        assert_eq!(mock.group_protocol, GroupProtocol::Consumer);
        let on_cluster = KafkaArgs {
            bootstrap_servers: Some("kafka-1:9092,kafka-2:9092".into()),
            keep_topics: true,
            ..KafkaArgs::default()
        };
        let options = kafka(on_cluster).unwrap();
        let cluster = options.cluster.unwrap();
        assert_eq!(options.replication_factor, 3);
        assert!(cluster.keep_topics);
        assert!(cluster.prefix.starts_with("keyed-bench-"), "{}", cluster.prefix);
        let too_many = KafkaArgs { replication_factor: Some(4), ..KafkaArgs::default() };
        assert!(kafka(too_many).unwrap_err().to_string().contains("3 brokers"));
        let keep = KafkaArgs { keep_topics: true, ..KafkaArgs::default() };
        assert!(kafka(keep).unwrap_err().to_string().contains("needs --bootstrap-servers"));
    }

    #[test]
    fn bootstrap_servers_must_be_host_port_lists() {
        for bad in ["kafka", "kafka:", ":9092", "a:9092,,b:9092", "a:99999"] {
            let args = KafkaArgs { bootstrap_servers: Some(bad.into()), ..KafkaArgs::default() };
            let error = kafka(args).unwrap_err().to_string();
            assert!(error.contains("is not HOST:PORT"), "{bad}: {error}");
        }
    }
}
