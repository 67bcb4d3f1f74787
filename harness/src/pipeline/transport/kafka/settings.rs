//! The clients' settings: the mock cluster's sizes and timings, librdkafka's settings for
//! the producer and the members, and the checks of the run's `-X` settings.

use super::seen::report_statistics;
use crate::pipeline::log::Topic;
use crate::pipeline::transport::options::{ClientSetting, GroupProtocol, KafkaOptions};
use crate::pipeline::transport::TransportError;
use rdkafka::ClientConfig;
use std::fmt;
use std::time::Duration;

/// Brokers of each cell's mock cluster.
pub const BROKERS: i32 = 3;

/// Bytes the mock cluster keeps of one partition's log (librdkafka's mock trims older
/// message sets past it): a cell whose fullest partition would hold more is refused.
pub const MOCK_PARTITION_BYTES: u64 = 5 * 1024 * 1024;

/// Bytes one record is reckoned to take on the mock, batch framing included: an 8-byte
/// key, a 20-byte value and up to 36 bytes of record and batch overhead.
pub const RECORD_BYTES: u64 = 64;

/// The mock group's heartbeat interval: how soon a member hears of an assignment change.
pub(super) const HEARTBEAT_MS: i32 = 100;

/// The mock group's session timeout: how long a member that stopped heartbeating keeps
/// its partitions.
pub(super) const SESSION_TIMEOUT_MS: i32 = 3_000;

/// A classic member's session on a cluster (unless `-X session.timeout.ms` is given):
/// Kafka's default `group.min.session.timeout.ms`, the shortest a broker allows unless
/// lowered, where librdkafka's own default is 45 s. On KIP-848's protocol the broker sets
/// the session (`group.consumer.session.timeout.ms`).
pub(super) const CLUSTER_SESSION_TIMEOUT_MS: i32 = 6_000;

/// How long a poll first waits for records.
pub(super) const POLL_WAIT: Duration = Duration::from_millis(1);

/// How long a fetch waits on the broker for records, and how long the client backs off
/// fetching a partition after an error or a full queue (librdkafka's defaults are 500 ms,
/// 500 ms and 1 s: a pipeline cell lasts well under a second on the mock).
pub(super) const FETCH_WAIT_MS: &str = "10";

/// How long a metadata request that checks whether the broker still answers may wait, and
/// how often one is made while it may not (module docs, step 4).
pub(super) const PROBE_WAIT: Duration = Duration::from_millis(250);
pub(super) const PROBE_EVERY: Duration = Duration::from_millis(100);

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
pub(super) fn broker(what: impl fmt::Display) -> TransportError {
    TransportError::Broker(what.to_string())
}

pub(super) fn millis(duration: Duration) -> String {
    duration.as_millis().clamp(1, i32::MAX as u128).to_string()
}

/// A client configuration with the run's `-X` settings, to which the suite's own are added.
pub(super) fn with_user_settings(options: &KafkaOptions) -> ClientConfig {
    let mut config = ClientConfig::new();
    for setting in &options.client {
        config.set(&setting.key, &setting.value);
    }
    config
}

pub(super) fn producer_settings(timeout: Duration, options: &KafkaOptions) -> ClientConfig {
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

pub(super) fn consumer_settings(
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
/// The session timeout a classic member joins a cluster with: `-X session.timeout.ms` if
/// given, else [`CLUSTER_SESSION_TIMEOUT_MS`].
pub(super) fn session_timeout_ms(options: &KafkaOptions) -> u64 {
    let given = options.client.iter().rev().find(|setting| setting.key == "session.timeout.ms");
    given
        .and_then(|setting| setting.value.parse().ok())
        .unwrap_or(CLUSTER_SESSION_TIMEOUT_MS as u64)
}
