//! `keyed-bench broker`: what a standalone broker is asked for, checked, in every build.
//! The broker itself, librdkafka's mock cluster served to other clients, is
//! [`MockBroker`] (feature `kafka`).

use crate::limits::FlagRange;

#[cfg(feature = "kafka")]
pub use super::kafka::broker::{BrokerError, MockBroker};

/// Brokers of the cluster when `--brokers` is not given (as the pipeline's cells have).
pub const DEFAULT_BROKERS: u32 = 3;

/// The range of `--brokers`.
pub const BROKERS_RANGE: FlagRange =
    FlagRange { flag: "brokers", min: 1.0, max: 16.0, integer: true };

/// The range of `--port`.
pub const PORT_RANGE: FlagRange =
    FlagRange { flag: "port", min: 1.0, max: u16::MAX as f64, integer: true };

/// The range of a `--topic`'s partitions.
pub const TOPIC_PARTITIONS_RANGE: FlagRange =
    FlagRange { flag: "topic", min: 1.0, max: 1_024.0, integer: true };

/// Partitions of a `--topic` that names none: what the mock gives a topic it creates itself.
pub const DEFAULT_TOPIC_PARTITIONS: u32 = 4;

/// The longest topic name Kafka accepts.
pub const MAX_TOPIC_NAME: usize = 249;

/// A topic the broker creates before it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerTopic {
    /// Its name: 1 to 249 of `a-z A-Z 0-9 . _ -`, neither `.` nor `..`.
    pub name: String,
    /// Its partitions.
    pub partitions: u32,
}

/// A standalone broker's settings, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BrokerConfig {
    /// Brokers of the mock cluster, in [`BROKERS_RANGE`].
    pub brokers: u32,
    /// The 127.0.0.1 port clients bootstrap at; `None` for the brokers' own ports.
    pub port: Option<u16>,
    /// Topics created before the bootstrap line is printed.
    pub topics: Vec<BrokerTopic>,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self { brokers: DEFAULT_BROKERS, port: None, topics: Vec::new() }
    }
}

/// Whether Kafka accepts `name` as a topic's name.
pub fn is_topic_name(name: &str) -> bool {
    (1..=MAX_TOPIC_NAME).contains(&name.len())
        && name != "."
        && name != ".."
        && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"._-".contains(&byte))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_names_follow_kafka() {
        for good in ["demo", "a.b_c-D9", &"x".repeat(MAX_TOPIC_NAME)] {
            assert!(is_topic_name(good), "{good}");
        }
        for bad in ["", ".", "..", "a b", "a/b", "é", &"x".repeat(MAX_TOPIC_NAME + 1)] {
            assert!(!is_topic_name(bad), "{bad}");
        }
    }
}
