//! `keyed-bench broker`: clap-derived raw values, then a `TryFrom` into the validated
//! [`BrokerConfig`].

use clap::Args;

use crate::limits::{check_in, NumberParser, SettingError};
use crate::pipeline::transport::broker::{
    is_topic_name, BrokerConfig, BrokerTopic, BROKERS_RANGE, DEFAULT_BROKERS,
    DEFAULT_TOPIC_PARTITIONS, MAX_TOPIC_NAME, PORT_RANGE, TOPIC_PARTITIONS_RANGE,
};

/// Flags of `keyed-bench broker`.
#[derive(Args, Clone, Debug, PartialEq)]
pub struct BrokerArgs {
    /// Brokers of the mock cluster [1..=16].
    #[arg(long, default_value_t = DEFAULT_BROKERS,
          value_parser = NumberParser::<u32>::new(BROKERS_RANGE), allow_negative_numbers = true)]
    pub brokers: u32,
    /// Bootstrap at 127.0.0.1:PORT, relayed to the first broker (the mock binds its brokers
    /// to ports of the system's choosing) [1..=65535; default: the brokers' own ports].
    #[arg(long, value_parser = NumberParser::<u16>::new(PORT_RANGE), allow_negative_numbers = true)]
    pub port: Option<u16>,
    /// Create this topic before serving, with PARTITIONS partitions [1..=1024; default: 4,
    /// as the mock creates a missing topic]; repeat the flag for several.
    #[arg(long = "topic", value_name = "NAME[:PARTITIONS]")]
    pub topics: Vec<String>,
}

impl TryFrom<BrokerArgs> for BrokerConfig {
    type Error = SettingError;

    fn try_from(args: BrokerArgs) -> Result<Self, SettingError> {
        check_in(&BROKERS_RANGE, args.brokers)?;
        if let Some(port) = args.port {
            check_in(&PORT_RANGE, port)?;
        }
        let mut topics: Vec<BrokerTopic> = Vec::with_capacity(args.topics.len());
        for given in &args.topics {
            let topic = parse_topic(given)?;
            if topics.iter().any(|earlier| earlier.name == topic.name) {
                return Err(SettingError::Duplicate { flag: "topic", value: topic.name });
            }
            topics.push(topic);
        }
        Ok(Self { brokers: args.brokers, port: args.port, topics })
    }
}

/// `NAME` or `NAME:PARTITIONS`.
fn parse_topic(given: &str) -> Result<BrokerTopic, SettingError> {
    let (name, partitions) = match given.rsplit_once(':') {
        Some((name, partitions)) => (name, Some(partitions)),
        None => (given, None),
    };
    if !is_topic_name(name) {
        return Err(SettingError::Unknown {
            flag: "topic",
            message: format!(
                "`{given}` is no NAME[:PARTITIONS]: a topic's name is 1 to {MAX_TOPIC_NAME} of \
                 a-z, A-Z, 0-9, `.`, `_` and `-` (not `.` or `..`)"
            ),
        });
    }
    let partitions = match partitions {
        None => DEFAULT_TOPIC_PARTITIONS,
        Some(text) => text.parse::<u32>().map_err(|_| SettingError::OutOfRange {
            flag: "topic",
            value: format!("`{given}`"),
            expected: format!(
                "NAME:PARTITIONS with a whole number in {}",
                TOPIC_PARTITIONS_RANGE.text()
            ),
        })?,
    };
    check_in(&TOPIC_PARTITIONS_RANGE, partitions).map_err(|_| SettingError::OutOfRange {
        flag: "topic",
        value: format!("`{given}`"),
        expected: format!("partitions in {}", TOPIC_PARTITIONS_RANGE.text()),
    })?;
    Ok(BrokerTopic { name: name.to_owned(), partitions })
}

/// Why `keyed-bench broker` does not run in a build without the Kafka transport.
pub fn not_built() -> SettingError {
    SettingError::UnbuiltCommand {
        command: "broker",
        how: "cargo build --release --features kafka (or cargo run --release --features kafka \
              -- broker); the build compiles librdkafka and needs gcc, g++, make, pkg-config \
              and python3",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> BrokerArgs {
        BrokerArgs { brokers: DEFAULT_BROKERS, port: None, topics: Vec::new() }
    }

    fn config(args: BrokerArgs) -> Result<BrokerConfig, String> {
        BrokerConfig::try_from(args).map_err(|error| error.to_string())
    }

    #[test]
    fn the_defaults_are_three_brokers_at_their_own_ports() {
        assert_eq!(config(args()).unwrap(), BrokerConfig::default());
    }

    #[test]
    fn brokers_and_port_are_range_checked() {
        let error = config(BrokerArgs { brokers: 0, ..args() }).unwrap_err();
        assert_eq!(error, "--brokers must be in 1..=16, got 0");
        let error = config(BrokerArgs { brokers: 17, ..args() }).unwrap_err();
        assert_eq!(error, "--brokers must be in 1..=16, got 17");
        let error = config(BrokerArgs { port: Some(0), ..args() }).unwrap_err();
        assert_eq!(error, "--port must be in 1..=65535, got 0");
        assert_eq!(config(BrokerArgs { port: Some(9092), ..args() }).unwrap().port, Some(9092));
    }

    #[test]
    fn topics_take_partitions_or_the_mocks_default() {
        let given = vec!["demo:3".to_owned(), "events".to_owned()];
        let topics = config(BrokerArgs { topics: given, ..args() }).unwrap().topics;
        let expected = [
            BrokerTopic { name: "demo".into(), partitions: 3 },
            BrokerTopic { name: "events".into(), partitions: DEFAULT_TOPIC_PARTITIONS },
        ];
        assert_eq!(topics, expected);
    }

    #[test]
    fn a_bad_topic_is_refused_naming_it() {
        let refused = |given: &str| {
            config(BrokerArgs { topics: vec![given.to_owned()], ..args() }).unwrap_err()
        };
        assert!(refused("a b").starts_with("--topic: `a b` is no NAME[:PARTITIONS]"));
        assert!(refused(":3").starts_with("--topic: `:3` is no NAME[:PARTITIONS]"));
        assert_eq!(refused("demo:0"), "--topic must be partitions in 1..=1024, got `demo:0`");
        assert_eq!(refused("demo:1025"), "--topic must be partitions in 1..=1024, got `demo:1025`");
        assert!(refused("demo:x").contains("NAME:PARTITIONS with a whole number"));
        let twice = vec!["demo:1".to_owned(), "demo:2".to_owned()];
        let error = config(BrokerArgs { topics: twice, ..args() }).unwrap_err();
        assert_eq!(error, "--topic names `demo` twice; give each value once");
    }

    #[test]
    fn a_build_without_kafka_says_how_to_build_it() {
        let message = not_built().to_string();
        assert!(message.starts_with("`keyed-bench broker` is not in this build"), "{message}");
        assert!(message.contains("--features kafka"), "{message}");
    }
}
