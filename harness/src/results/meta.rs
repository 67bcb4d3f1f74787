//! `meta`: how, where and when a run was made, and the settings it recorded.

use serde::{Deserialize, Serialize};
use strategies::{Binding, StrategyId, WindowScope};

use super::{
    designs, incomplete, CommitPolicy, Interference, RetryPolicy, SweptSettings, TransportKind,
};
use crate::limits::settings::{run_settings, settings_lines};
use crate::workload::Sizes;

/// How, where and when the run was made.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Meta {
    /// RFC 3339 UTC time the run started.
    pub created: String,
    /// The commit of the working directory (`-dirty` with local changes).
    pub git_commit: String,
    /// `rustc -V`.
    pub rustc: String,
    /// From `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Logical cores available.
    pub cores: usize,
    /// Worker threads per pool.
    pub workers: usize,
    /// The default admission window.
    pub window: usize,
    /// Messages per mailbox turn.
    pub throughput: usize,
    /// The command line.
    pub command: String,
    /// The workload seed.
    pub seed: u64,
    /// Measured repetitions per cell.
    pub repeat: usize,
    /// Whether `--quick` sizes were used.
    pub quick: bool,
    /// The recorder's own cost per message, measured with `inline` and a no-op handler.
    pub recorder_overhead_ns: Option<f64>,
    /// Saturation throughput of `inline` x workers on `uniform`, the base of `open-loop`
    /// loads (messages per second).
    pub saturation_per_s: Option<f64>,
    /// Wall time of the whole suite.
    pub suite_elapsed_s: f64,
    /// Anything a reader must know to interpret the numbers (scaled sweeps, ...).
    pub notes: Vec<String>,
    /// Hash-serial groups per worker (absent in files written before it was recorded).
    #[serde(default)]
    pub groups_per_worker: Option<usize>,
    /// Threads of the harness timer that completes pending steps (absent in older files,
    /// which had one).
    #[serde(default)]
    pub timer_threads: Option<usize>,
    /// Times a void cell was measured again (`--revalidate`); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revalidate: Option<usize>,
    /// What the rest of the machine did while the run calibrated itself (the recorder's
    /// cost, open-loop's saturation); absent in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calibrations: Vec<Calibration>,
    /// Microseconds an idle mailbox worker spins before it parks (absent in files written
    /// before it was a setting, which spun a fixed exponential backoff).
    #[serde(default)]
    pub idle_spin_us: Option<u32>,
    /// Producer threads (`--producers`); absent in files from before the setting, which
    /// had one.
    #[serde(default)]
    pub producers: Option<usize>,
    /// The `--window-scope` the run was given (`default`: each strategy's own). Absent in
    /// files from before it was a setting, where every strategy had one window.
    #[serde(default)]
    pub window_scope: Option<WindowScopeSetting>,
    /// `keyed-mailbox`'s binding rule (`--binding`); absent in files from before the
    /// setting, which used the reference rule.
    #[serde(default, with = "by_name")]
    pub binding: Option<Binding>,
    /// The pipeline scenarios' commit policies (`--commit-policy`); absent in files from
    /// before the setting, which ran all three.
    #[serde(default)]
    pub commit_policies: Option<Vec<CommitPolicy>>,
    /// pipeline-retry's retry policies (`--retry-policy`); absent in files from before
    /// the scenario.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_policies: Option<Vec<RetryPolicy>>,
    /// The workload sizes, so that a cell can be measured again (gate confirmation).
    /// Absent in files from before they were recorded; reading such a file fills them in
    /// where its command line shows what they were.
    #[serde(default)]
    pub sizes: Option<Sizes>,
    /// The designs measured that are not built in (a user's executor), with their
    /// descriptors; absent when every design was built in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub designs: Vec<designs::DesignRecord>,
    /// The list-valued settings and the cell limit (`--workers`, `--throughput`,
    /// `--window`, `--idle-spin-us`, `--max-cells`), so that a resumed or re-measured run
    /// has the same points; absent in files from before sweeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<crate::sweep::Sweep>,
    /// The scenarios selected (`--scenario`), in the order they ran; absent in files from
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenarios: Option<Vec<String>>,
    /// The strategies selected (`--strategy`), in the order they ran; absent in files from
    /// before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategies: Option<Vec<String>>,
    /// Whether each cell ran the untimed breakdown repetition (not `--no-breakdown`);
    /// absent in files from before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breakdown: Option<bool>,
    /// How far a run that has not finished got; absent once every cell is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<incomplete::Incomplete>,
    /// The later sessions that resumed the run (`run --resume`), in order; absent when it
    /// ran in one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumed: Vec<incomplete::Resumed>,
    /// The transport the pipeline scenarios consumed through, where it is not the embedded
    /// log (absent: the embedded log, as in every older file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<TransportMeta>,
}

/// A run's transport other than the embedded log, and its broker and client.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransportMeta {
    /// `kafka`.
    pub kind: TransportKind,
    /// What the broker was: `mock` (librdkafka's in-process mock cluster, one per cell) or
    /// `cluster` (the user's, `--bootstrap-servers`).
    pub broker: String,
    /// Brokers per cluster (0 for a cluster the run never asked: a library run without the
    /// command line's check).
    pub brokers: u32,
    /// The client library and its version (`librdkafka 2.12.1`).
    pub client: String,
    /// The consumer group protocol (`consumer`: KIP-848).
    pub group_protocol: String,
    /// `--kafka-timeout-ms`.
    pub timeout_ms: u64,
    /// Every client setting that is not librdkafka's default, `CLIENT key=value` for the
    /// clients `producer`, `consumer`, `side-producer` and `retry-reader` (a secret's value
    /// written `<secret>`).
    pub client_settings: Vec<String>,
    /// The user's cluster (`--bootstrap-servers`); absent on the mock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bootstrap: Option<String>,
    /// Replicas of each topic (`--replication-factor`); absent in older files (1, on the
    /// mock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication_factor: Option<u16>,
    /// What the run's topics and group ids on the cluster began with (its first session's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_prefix: Option<String>,
    /// Whether the run kept its topics and groups on the cluster (`--keep-topics`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_topics: bool,
    /// The `-X key=value` settings, in the order given (a secret's value written
    /// `<secret>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub user_settings: Vec<String>,
}

/// An optional setting in JSON by its command-line name (a window scope: `strategy`,
/// `type`; a binding: `reference`, `round-robin`), or null.
pub(super) mod by_name {
    use std::fmt::Display;
    use std::str::FromStr;

    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<T: Display, S: Serializer>(
        value: &Option<T>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            Some(value) => serializer.collect_str(value),
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, T, D>(deserializer: D) -> Result<Option<T>, D::Error>
    where
        T: FromStr,
        T::Err: Display,
        D: Deserializer<'de>,
    {
        Option::<String>::deserialize(deserializer)?
            .map(|name| name.parse().map_err(D::Error::custom))
            .transpose()
    }
}

/// The `--window-scope` a run was given, as recorded.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WindowScopeSetting {
    /// No flag: each strategy's default (per type for `per-type-pool`, else per strategy).
    Default,
    /// `--window-scope strategy`.
    Strategy,
    /// `--window-scope type`.
    Type,
}

impl WindowScopeSetting {
    /// How a run's `--window-scope` reads in the settings line.
    pub fn line(setting: Option<Self>) -> String {
        match setting {
            Some(Self::Default) => {
                let per_type: Vec<&str> = StrategyId::ALL
                    .iter()
                    .filter(|id| id.descriptor().window_scope == WindowScope::Type)
                    .map(|id| id.as_str())
                    .collect();
                format!(
                    "one per aggregate type for {}, one per strategy for the others",
                    per_type.join(", ")
                )
            }
            Some(Self::Type) => "one per aggregate type for every strategy".to_owned(),
            Some(Self::Strategy) => "one per strategy for every strategy".to_owned(),
            None => "one per strategy: recorded before the window scope was a setting".to_owned(),
        }
    }
}

// `Meta::settings_line` and `Meta::brief_settings`, from the run settings table.
run_settings!(all => settings_lines);

impl From<Option<WindowScope>> for WindowScopeSetting {
    fn from(scope: Option<WindowScope>) -> Self {
        match scope {
            None => Self::Default,
            Some(WindowScope::Strategy) => Self::Strategy,
            Some(WindowScope::Type) => Self::Type,
        }
    }
}

impl Meta {
    /// The window scope to measure this file's cells again with: the one it was given
    /// (`None`: each strategy's default), or one window per strategy for a file from
    /// before the setting, since that is what every strategy ran with then.
    pub fn window_scope(&self) -> Option<WindowScope> {
        match self.window_scope {
            None | Some(WindowScopeSetting::Strategy) => Some(WindowScope::Strategy),
            Some(WindowScopeSetting::Type) => Some(WindowScope::Type),
            Some(WindowScopeSetting::Default) => None,
        }
    }

    /// Fills in the sizes of a file from before sizes were recorded, where they can be
    /// known: a command line that set no size ran [`Sizes::before_recorded`]. Where the
    /// command line set a size (or a preset of sizes), they stay unknown.
    pub(super) fn recover_sizes(&mut self) {
        if self.sizes.is_some() {
            return;
        }
        let words: Vec<&str> = self.command.split_whitespace().collect();
        let sets = |flag: &str| {
            let long = format!("--{flag}");
            words.iter().any(|word| {
                word.strip_prefix(long.as_str())
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with('='))
            })
        };
        let set_a_size = Sizes::RANGES.iter().any(|range| sets(range.flag))
            || ["published-async-io", "published-parallel-consumer"].into_iter().any(sets);
        if !set_a_size {
            self.sizes = Some(Sizes::before_recorded(self.quick));
        }
    }
}

/// A calibration a run made before its cells, with its interference receipt.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Calibration {
    /// What was measured: `recorder overhead`, `saturation`.
    pub what: String,
    /// What the rest of the machine did meanwhile.
    pub interference: Interference,
}
