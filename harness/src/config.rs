//! The validated settings of a suite run, whether they come from the command line
//! (`cli/run.rs` builds them) or from a results file that is measured again
//! ([`RunConfig::from_recorded`]). Either way they pass the same checks, so nothing can run
//! on settings the command line would refuse.
//!
//! The flag ranges, the limits and the checks themselves live in [`crate::limits`] (the
//! floor of the harness, which the workload sizes use too); they are re-exported here.

use std::path::PathBuf;

use strategies::{Design, Family, StrategyConfig, Threads};

pub use crate::limits::{
    check_setting, parse_list, FlagRange, SettingError, MAX_GROUPS, MAX_KEYS, MAX_MESSAGES,
    MAX_PER_TYPE_THREADS, MAX_REPEAT, SETTING_RANGES,
};
use crate::measure::runner::Repetitions;
use crate::measure::timer::DEFAULT_TIMER_THREADS;

/// Times a void cell is measured again unless `--revalidate` says otherwise.
pub const DEFAULT_REVALIDATE: usize = 2;
use crate::limits::settings::{read_recorded, run_settings};
use crate::pipeline::DEFAULT_KAFKA_TIMEOUT;
use crate::results::Meta;
use crate::results::{CommitPolicy, RetryPolicy};
use crate::sweep::{Point, Sweep};
use crate::watch::Watchdog;
use crate::workload::{ScenarioId, Sizes};

/// A validated run of the suite.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Scenarios, in presentation order.
    pub scenarios: Vec<ScenarioId>,
    /// Strategies, in presentation order.
    pub strategies: Vec<Design>,
    /// Workers, window, throughput, groups: the first point of [`RunConfig::sweep`].
    pub strategy: StrategyConfig,
    /// The list-valued settings (one value each outside a sweep) and the cell limit.
    pub sweep: Sweep,
    /// The commit policies pipeline-crash and pipeline-rebalance run, one cell each.
    pub commit_policies: Vec<CommitPolicy>,
    /// The retry policies pipeline-retry runs, one cell each.
    pub retry_policies: Vec<RetryPolicy>,
    /// Measured repetitions per cell.
    pub repeat: usize,
    /// Threads that submit the workload, keys partitioned among them (completion-driven
    /// scenarios keep their one driver).
    pub producers: usize,
    /// Whether each cell runs one more, untimed, repetition that counts the strategy's
    /// events (the per-message cost breakdown).
    pub breakdown: bool,
    /// Threads of the harness timer that completes pending steps.
    pub timer_threads: usize,
    /// Times a measured cell whose receipt says `void` is measured again.
    pub revalidate: usize,
    /// Whether `--quick` sizes are in use (recorded in the results).
    pub quick: bool,
    /// Workload seed.
    pub seed: u64,
    /// Output folder.
    pub out: PathBuf,
    /// Whether a fresh run may replace an incomplete run in `out`, or write beside files
    /// the suite did not write there (`--overwrite`).
    pub overwrite: bool,
    /// Workload sizes.
    pub sizes: Sizes,
    /// The command line, for the results' meta.
    pub command: String,
    /// How long a cell may make no progress before it is stopped, and the graces of a stop
    /// (`--cell-timeout`; not recorded: a resumed run takes its own).
    pub watchdog: Watchdog,
    /// The transport the pipeline scenarios consume through (`--transport`).
    pub transport: crate::pipeline::TransportKind,
    /// How long one request to a broker may take (`--kafka-timeout-ms`).
    pub kafka_timeout: std::time::Duration,
    /// The brokers of one pipeline cell taken down on purpose, to see how a run fails (a
    /// library setting for tests; no flag sets it, and it is not recorded).
    pub broker_fault: Option<crate::pipeline::BrokerFault>,
    /// The Kafka broker and its clients' settings (`--bootstrap-servers`,
    /// `--replication-factor`, `--keep-topics`, `--group-protocol`, `-X`).
    pub kafka: crate::pipeline::KafkaOptions,
}

/// Why the settings a results file records cannot be measured again.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RecordedError {
    /// A recorded setting that the command line would reject.
    #[error(transparent)]
    Invalid(SettingError),
    /// The file records no sizes (it predates recording them, and its command line set
    /// some), so its workloads cannot be generated again.
    #[error("the results do not record sizes")]
    NoSizes,
}

run_settings!(all => read_recorded);

/// The Kafka options a results file records, for its resumption: the same cluster, protocol,
/// replication and `-X` settings, under a new prefix. A secret setting, which the file does
/// not hold, is left out (`run --resume` refuses such a run).
fn kafka_options(
    meta: &crate::results::TransportMeta,
) -> Result<crate::pipeline::KafkaOptions, RecordedError> {
    use crate::pipeline::transport::options::{self, GroupProtocol};
    use crate::pipeline::{ClientSetting, Cluster, KafkaOptions};
    let client = meta
        .user_settings
        .iter()
        .map(|recorded| recorded.parse::<ClientSetting>())
        .filter(|setting| setting.as_ref().map_or(true, |setting| !setting.is_secret()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| {
            RecordedError::Invalid(SettingError::Recorded(Box::new(SettingError::Kafka(error))))
        })?;
    let group_protocol = <GroupProtocol as clap::ValueEnum>::from_str(&meta.group_protocol, false)
        .map_err(|message| {
            let error = SettingError::Unknown { flag: "group-protocol", message };
            RecordedError::Invalid(SettingError::Recorded(Box::new(error)))
        })?;
    let cluster = meta.bootstrap.as_ref().map(|bootstrap| Cluster {
        bootstrap: bootstrap.clone(),
        keep_topics: meta.keep_topics,
        prefix: options::prefix(),
        brokers: None,
    });
    Ok(KafkaOptions {
        cluster,
        replication_factor: meta.replication_factor.unwrap_or(options::DEFAULT_MOCK_REPLICATION),
        group_protocol,
        client,
        hooks: Default::default(),
    })
}

/// Every numeric flag of `keyed-bench run` and the values it accepts (a list flag: each of
/// its values): the settings, then the sizes in table order.
pub fn flag_ranges() -> impl Iterator<Item = FlagRange> {
    SETTING_RANGES.iter().chain(Sizes::RANGES).copied()
}

/// The range of the numeric flag `flag` of `keyed-bench run`.
pub fn range_of(flag: &str) -> Option<FlagRange> {
    flag_ranges().find(|range| range.flag == flag)
}

impl RunConfig {
    /// How each cell of this run is measured.
    pub fn repetitions(&self) -> Repetitions {
        Repetitions { repeat: self.repeat, count_events: self.breakdown, producers: self.producers }
    }

    /// How a cell is measured again to confirm a gate: as recorded, with no breakdown.
    pub fn confirmation(&self) -> Repetitions {
        Repetitions { count_events: false, ..self.repetitions() }
    }

    /// Checks every setting and size, and what they cost together with the selected
    /// strategies and scenarios (threads and hash-serial groups).
    pub fn validate(&self) -> Result<(), SettingError> {
        check_setting("repeat", self.repeat)?;
        check_setting("timer-threads", self.timer_threads)?;
        check_setting("producers", self.producers)?;
        check_setting("revalidate", self.revalidate)?;
        self.sizes.validate()?;
        check_strategy_settings(&self.strategy, &self.strategies, &self.scenarios, &self.sizes)?;
        for point in self.sweep.points(crate::sweep::Uses::ALL) {
            let strategy = point.apply(self.strategy);
            check_strategy_settings(&strategy, &self.strategies, &self.scenarios, &self.sizes)?;
        }
        Ok(())
    }

    /// This run at one point of its sweep: the point's settings, and a sweep of that
    /// point alone.
    pub fn at(&self, point: &Point) -> Self {
        let strategy = point.apply(self.strategy);
        Self {
            strategy,
            sweep: Sweep { window_given: self.sweep.window_given, ..Sweep::single(&strategy) },
            ..self.clone()
        }
    }

    /// The settings a results file recorded, for measuring `scenarios` x `strategies` of
    /// it again, checked as the command line's would be (a hand-edited or corrupt file
    /// cannot make a re-measurement panic or run away). Each run setting is its row's
    /// `read` (limits/settings.rs); a file from before a setting was recorded gets its
    /// default.
    pub fn from_recorded(
        meta: &Meta,
        scenarios: Vec<ScenarioId>,
        strategies: Vec<Design>,
    ) -> Result<Self, RecordedError> {
        let in_file = |error| RecordedError::Invalid(SettingError::Recorded(Box::new(error)));
        check_setting("repeat", meta.repeat).map_err(in_file)?;
        let sizes = meta.sizes.clone().ok_or(RecordedError::NoSizes)?;
        let mut config = Self::unset(scenarios, strategies, sizes, meta.command.clone());
        config.revalidate = meta.revalidate.unwrap_or(DEFAULT_REVALIDATE);
        read_settings(meta, &mut config)?;
        config.sweep = meta.sweep.clone().unwrap_or_else(|| Sweep::single(&config.strategy));
        config.validate().map_err(in_file)?;
        Ok(config)
    }

    /// A config of `scenarios` x `strategies` on `sizes` whose run settings are not yet set
    /// (each its type's empty value, not a valid run), for [`RunConfig::from_recorded`] to
    /// set them as the file recorded them.
    fn unset(
        scenarios: Vec<ScenarioId>,
        strategies: Vec<Design>,
        sizes: Sizes,
        command: String,
    ) -> Self {
        Self {
            scenarios,
            strategies,
            strategy: StrategyConfig::default(),
            sweep: Sweep::single(&StrategyConfig::default()),
            commit_policies: Vec::new(),
            retry_policies: Vec::new(),
            repeat: 0,
            producers: 0,
            breakdown: false,
            timer_threads: 0,
            revalidate: 0,
            quick: false,
            seed: 0,
            out: PathBuf::new(),
            overwrite: false,
            sizes,
            command,
            watchdog: Watchdog::default(),
            transport: crate::pipeline::TransportKind::default(),
            kafka_timeout: std::time::Duration::ZERO,
            broker_fault: None,
            kafka: crate::pipeline::KafkaOptions::default(),
        }
    }
}

/// Checks the strategy settings, and what they cost with the selected strategies and
/// scenarios: a strategy with a pool per aggregate type starts `workers` threads per type,
/// and hash-group strategies allocate `workers x groups_per_worker` groups per pool.
fn check_strategy_settings(
    config: &StrategyConfig,
    strategies: &[Design],
    scenarios: &[ScenarioId],
    sizes: &Sizes,
) -> Result<(), SettingError> {
    check_setting("workers", config.workers)?;
    check_setting("window", config.max_in_flight)?;
    check_setting("throughput", config.throughput)?;
    check_setting("groups-per-worker", config.groups_per_worker)?;
    check_setting("idle-spin-us", config.idle_spin_us)?;
    let types = scenarios.iter().map(|scenario| scenario.aggregate_types(sizes)).max();
    let pool_per_type = strategies.iter().any(|id| id.descriptor().threads == Threads::PoolPerType);
    let pools = match types {
        Some(types) if pool_per_type && types > 1 => types,
        _ => 1,
    };
    if pools > 1 {
        let threads = pools.saturating_mul(config.workers);
        if threads > MAX_PER_TYPE_THREADS {
            return Err(SettingError::TooMany {
                what: "--types x --workers",
                value: format!("{pools} x {} = {threads}", config.workers),
                max: MAX_PER_TYPE_THREADS,
                why: "per-type-pool starts --workers threads per type on many-types",
            });
        }
    }
    if strategies.iter().any(|id| id.descriptor().family == Family::HashGroups) {
        // A scenario that fixes its own workers (parallel-consumer) may need more groups.
        let workers = scenarios
            .iter()
            .filter_map(|scenario| scenario.workers(sizes))
            .fold(config.workers, usize::max);
        let groups = workers.saturating_mul(config.groups_per_worker).saturating_mul(pools);
        if groups > MAX_GROUPS {
            return Err(SettingError::TooMany {
                what: "--workers x --groups-per-worker (x --types for per-type-pool)",
                value: format!(
                    "{workers} x {}{} = {groups}",
                    config.groups_per_worker,
                    if pools > 1 { format!(" x {pools}") } else { String::new() }
                ),
                max: MAX_GROUPS,
                why: "the hash-serial groups group-by and per-type-pool allocate",
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use strategies::StrategyId;

    #[test]
    fn a_recorded_group_protocol_is_read_back_or_refused() {
        use crate::pipeline::transport::options::GroupProtocol;
        let recorded = |protocol: &str| crate::results::TransportMeta {
            group_protocol: protocol.into(),
            ..crate::results::TransportMeta::default()
        };
        for protocol in [GroupProtocol::Classic, GroupProtocol::Consumer] {
            let options = kafka_options(&recorded(protocol.as_str())).unwrap();
            assert_eq!(options.group_protocol, protocol);
        }
        let refused = kafka_options(&recorded("eager")).unwrap_err().to_string();
        assert!(refused.contains("--group-protocol") && refused.contains("eager"), "{refused}");
    }

    fn config(strategies: Vec<Design>, scenarios: Vec<ScenarioId>) -> RunConfig {
        RunConfig {
            scenarios,
            strategies,
            commit_policies: CommitPolicy::ALL.to_vec(),
            retry_policies: RetryPolicy::ALL.to_vec(),
            strategy: StrategyConfig::with_workers(2),
            sweep: Sweep::single(&StrategyConfig::with_workers(2)),
            repeat: 1,
            breakdown: false,
            producers: 1,
            timer_threads: 1,
            revalidate: 0,
            quick: true,
            seed: 1,
            out: PathBuf::from("unused"),
            overwrite: false,
            sizes: Sizes::quick(),
            command: String::new(),
            watchdog: Watchdog::default(),
            transport: Default::default(),
            kafka_timeout: crate::pipeline::DEFAULT_KAFKA_TIMEOUT,
            broker_fault: None,
            kafka: crate::pipeline::KafkaOptions::default(),
        }
    }

    #[test]
    fn products_count_only_where_the_strategy_meets_the_scenario() {
        let mut many = config(vec![StrategyId::PerTypePool.into()], vec![ScenarioId::ManyTypes]);
        many.sizes.types = 100_000;
        let error = many.validate().unwrap_err().to_string();
        assert!(error.starts_with("--types x --workers is 100000 x 2 = 200000"), "{error}");
        let elsewhere = RunConfig { scenarios: vec![ScenarioId::Uniform], ..many.clone() };
        elsewhere.validate().unwrap();
        let other = RunConfig { strategies: vec![StrategyId::KeyedMailbox.into()], ..many };
        other.validate().unwrap();
    }

    #[test]
    fn every_flag_has_one_range() {
        let flags: Vec<_> = flag_ranges().map(|range| range.flag).collect();
        let mut unique = flags.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), flags.len(), "{flags:?}");
    }
}
