//! `meta`: how, where and when a run was made, written before its first cell. Each run
//! setting's fields are its row's `record` (limits/settings.rs); the rest are below.

use crate::config::RunConfig;
use crate::limits::settings::{meta_record, run_settings};
use crate::measure::system;
use crate::results::{Meta, WindowScopeSetting};

/// The meta of a run of `config`, before its first cell: the run settings as their rows
/// record them, and the facts of the machine, the build and the run beside them.
pub(crate) fn suite_meta(
    config: &RunConfig,
    created: String,
    recorder_overhead_ns: Option<f64>,
    saturation_per_s: Option<f64>,
    notes: Vec<String>,
) -> Meta {
    run_settings!(all => meta_record with config, {
        created,
        git_commit: system::git_commit(),
        rustc: system::rustc_version(),
        cpu_model: system::cpu_model(),
        cores: system::cores(),
        command: config.command.clone(),
        recorder_overhead_ns,
        saturation_per_s,
        suite_elapsed_s: 0.0,
        notes,
        revalidate: Some(config.revalidate),
        calibrations: Vec::new(),
        sizes: Some(config.sizes.clone()),
        sweep: Some(config.sweep.clone()),
        incomplete: None,
        resumed: Vec::new(),
    })
}

/// What meta records of `config`'s transport: nothing for the embedded log.
#[cfg(feature = "kafka")]
fn transport_meta(config: &RunConfig) -> Option<crate::results::TransportMeta> {
    use crate::pipeline::transport::kafka::{self, Kafka};
    let options = &config.kafka;
    (config.transport == crate::pipeline::TransportKind::Kafka).then(|| {
        crate::results::TransportMeta {
            kind: config.transport,
            broker: if options.is_mock() { "mock" } else { "cluster" }.into(),
            brokers: options
                .cluster
                .as_ref()
                .map_or(Some(kafka::BROKERS as u32), |cluster| cluster.brokers)
                .unwrap_or_default(),
            client: format!("librdkafka {}", Kafka::client_version()),
            group_protocol: options.group_protocol.as_str().into(),
            timeout_ms: u64::try_from(config.kafka_timeout.as_millis()).unwrap_or(u64::MAX),
            client_settings: Kafka::client_settings(config.kafka_timeout, options),
            bootstrap: options.cluster.as_ref().map(|cluster| cluster.bootstrap.clone()),
            replication_factor: Some(options.replication_factor),
            topic_prefix: options.cluster.as_ref().map(|cluster| cluster.prefix.clone()),
            keep_topics: options.cluster.as_ref().is_some_and(|cluster| cluster.keep_topics),
            user_settings: options.recorded_client(),
        }
    })
}

/// What meta records of `config`'s transport: nothing (only the embedded log is built).
#[cfg(not(feature = "kafka"))]
fn transport_meta(_: &RunConfig) -> Option<crate::results::TransportMeta> {
    None
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// The records of the designs among `designs` that are not built in, each external one
/// with what ran it.
fn designs_of(designs: &[strategies::Design]) -> Vec<crate::results::designs::DesignRecord> {
    let mut records = crate::results::designs::records(designs);
    for record in &mut records {
        record.external = crate::measure::external::record_of(&record.id);
    }
    records
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_has_the_right_shape_and_year() {
        let now = now_rfc3339();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
        assert!(now.as_str() >= "2024-01-01", "{now}");
    }
}
