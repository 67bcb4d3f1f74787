//! Command-line arguments of `keyed-bench run`: clap-derived raw values, then a
//! `TryFrom` into the validated [`RunConfig`]. Every bad value is named in the error.

use std::path::PathBuf;

use clap::Args;
use strategies::{StrategyConfig, StrategyId, MAX_WINDOW};

use crate::scenario::{ScenarioId, Sizes};
use crate::suite::RunConfig;

/// The largest message count of one run.
const MAX_MESSAGES: usize = 100_000_000;
/// The largest key count.
const MAX_KEYS: usize = 100_000_000;
/// The most repetitions.
const MAX_REPEAT: usize = 1_000;

/// Flags of `keyed-bench run` (and of `keyed-bench` with no subcommand).
#[derive(Args, Clone, Debug, PartialEq)]
pub struct RunArgs {
    /// Scenarios to run, comma-separated, or `all`.
    #[arg(long, default_value = "all", value_name = "a,b|all")]
    pub scenario: String,
    /// Strategies to run, comma-separated, or `all`.
    #[arg(long, default_value = "all", value_name = "x,y|all")]
    pub strategy: String,
    /// Worker threads per pool [default: available cores].
    #[arg(long)]
    pub workers: Option<usize>,
    /// Admission window: most unfinished messages at once.
    #[arg(long, default_value_t = StrategyConfig::DEFAULT_MAX_IN_FLIGHT)]
    pub window: usize,
    /// Messages a mailbox runs per turn.
    #[arg(long, default_value_t = StrategyConfig::DEFAULT_THROUGHPUT)]
    pub throughput: usize,
    /// Hash-serial groups per worker (group-by, per-type-pool).
    #[arg(long, default_value_t = StrategyConfig::DEFAULT_GROUPS_PER_WORKER)]
    pub groups_per_worker: usize,
    /// Measured repetitions per cell [default: 3, or 1 with --quick].
    #[arg(long)]
    pub repeat: Option<usize>,
    /// Smaller sizes and one repetition: a smoke run in about a minute.
    #[arg(long)]
    pub quick: bool,
    /// Workload seed: the same seed gives every strategy the same messages.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Output folder.
    #[arg(long, default_value = "results/latest")]
    pub out: PathBuf,

    /// Messages per run of uniform, zipf, many-types.
    #[arg(long, help_heading = "Sizes")]
    pub messages: Option<usize>,
    /// Messages per run of the paced conflict-backoff and long-sync.
    #[arg(long, help_heading = "Sizes")]
    pub paced_messages: Option<usize>,
    /// Keys of uniform, zipf and open-loop.
    #[arg(long, help_heading = "Sizes")]
    pub keys: Option<usize>,
    /// Zipf exponent of zipf.
    #[arg(long, help_heading = "Sizes")]
    pub zipf_s: Option<f64>,
    /// CPU time of an ordinary handler, in nanoseconds.
    #[arg(long, help_heading = "Sizes")]
    pub spin_ns: Option<u32>,
    /// Aggregate types of many-types.
    #[arg(long, help_heading = "Sizes")]
    pub types: Option<usize>,
    /// Keys per type of many-types.
    #[arg(long, help_heading = "Sizes")]
    pub keys_per_type: Option<usize>,
    /// Keys of conflict-backoff and long-sync; bystander keys of hot-backlog.
    #[arg(long, help_heading = "Sizes")]
    pub small_keys: Option<usize>,
    /// Percentage of troubled keys in conflict-backoff.
    #[arg(long, help_heading = "Sizes")]
    pub troubled_pct: Option<f64>,
    /// First backoff of a troubled message in milliseconds (doubles once).
    #[arg(long, help_heading = "Sizes")]
    pub backoff_ms: Option<u64>,
    /// Percentage of 2 ms messages in long-sync.
    #[arg(long, help_heading = "Sizes")]
    pub long_pct: Option<f64>,
    /// CPU time of a long message in milliseconds.
    #[arg(long, help_heading = "Sizes")]
    pub long_ms: Option<u64>,
    /// Burst sizes of hot-backlog, comma-separated.
    #[arg(long, value_delimiter = ',', help_heading = "Sizes")]
    pub bursts: Option<Vec<usize>>,
    /// Wait of each hot message in milliseconds.
    #[arg(long, help_heading = "Sizes")]
    pub hot_wait_ms: Option<u64>,
    /// Bystander messages of hot-backlog.
    #[arg(long, help_heading = "Sizes")]
    pub bystanders: Option<usize>,
    /// Offered rate of the paced scenarios, messages per second.
    #[arg(long, help_heading = "Sizes")]
    pub rate: Option<f64>,
    /// Messages per run of async-io.
    #[arg(long, help_heading = "Sizes")]
    pub async_messages: Option<usize>,
    /// Key counts of the async-io sweep, comma-separated.
    #[arg(long, value_delimiter = ',', help_heading = "Sizes")]
    pub async_keys: Option<Vec<usize>>,
    /// Longest async-io wait in milliseconds (uniform from 0).
    #[arg(long, help_heading = "Sizes")]
    pub async_max_wait_ms: Option<u64>,
    /// Window of async-io.
    #[arg(long, help_heading = "Sizes")]
    pub async_window: Option<usize>,
    /// The published async-io experiment: 10,000 messages, keys 1,2,5,10,20,1000,10000.
    #[arg(long, help_heading = "Sizes")]
    pub published_async_io: bool,
    /// Offered loads of open-loop, fractions of saturation, comma-separated.
    #[arg(long, value_delimiter = ',', help_heading = "Sizes")]
    pub loads: Option<Vec<f64>>,
    /// Messages per run of open-loop.
    #[arg(long, help_heading = "Sizes")]
    pub open_messages: Option<usize>,
}

impl RunArgs {
    /// The values of `keyed-bench run` with no flags: the default suite.
    pub fn defaults() -> Self {
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            run: RunArgs,
        }
        <Defaults as clap::Parser>::parse_from(["keyed-bench"]).run
    }
}

/// A command-line value that cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ArgError {
    /// Not a known scenario or strategy.
    #[error("{0}")]
    Unknown(String),
    /// A number outside its range.
    #[error("--{flag} must be {expected}, got {value}")]
    OutOfRange {
        /// The flag.
        flag: &'static str,
        /// What was given.
        value: String,
        /// The valid range.
        expected: String,
    },
}

pub(crate) fn parse_list<T: std::str::FromStr + Copy>(
    given: &str,
    all: &[T],
) -> Result<Vec<T>, ArgError>
where
    T::Err: std::fmt::Display,
{
    if given.trim() == "all" {
        return Ok(all.to_vec());
    }
    given
        .split(',')
        .map(|item| item.trim().parse::<T>().map_err(|error| ArgError::Unknown(error.to_string())))
        .collect()
}

pub(crate) fn check<T: PartialOrd + std::fmt::Display + Copy>(
    flag: &'static str,
    value: T,
    min: T,
    max: T,
) -> Result<(), ArgError> {
    if value >= min && value <= max {
        Ok(())
    } else {
        Err(ArgError::OutOfRange {
            flag,
            value: value.to_string(),
            expected: format!("in {min}..={max}"),
        })
    }
}

fn check_list<T: PartialOrd + std::fmt::Display + Copy>(
    flag: &'static str,
    values: &[T],
    min: T,
    max: T,
) -> Result<(), ArgError> {
    if values.is_empty() {
        return Err(ArgError::OutOfRange {
            flag,
            value: "an empty list".into(),
            expected: "at least one value".into(),
        });
    }
    values.iter().try_for_each(|&value| check(flag, value, min, max))
}

impl TryFrom<(RunArgs, String)> for RunConfig {
    type Error = ArgError;

    /// Validates `args`; `command` is the command line, kept in the results.
    fn try_from((args, command): (RunArgs, String)) -> Result<Self, ArgError> {
        let scenarios = parse_list(&args.scenario, ScenarioId::ALL)?;
        let strategies = parse_list(&args.strategy, StrategyId::ALL)?;
        let workers = args.workers.unwrap_or_else(crate::system::cores);
        check("workers", workers, 1, StrategyConfig::MAX_WORKERS)?;
        check("window", args.window, 1, MAX_WINDOW)?;
        check("throughput", args.throughput, 1, 1 << 20)?;
        check("groups-per-worker", args.groups_per_worker, 1, 1 << 16)?;
        let repeat = args.repeat.unwrap_or(if args.quick { 1 } else { 3 });
        check("repeat", repeat, 1, MAX_REPEAT)?;

        let mut sizes = if args.quick { Sizes::quick() } else { Sizes::standard() };
        if args.published_async_io {
            (sizes.async_messages, sizes.async_keys) = Sizes::published_async_io();
        }
        macro_rules! take {
            ($($field:ident),*) => { $(if let Some(value) = args.$field.clone() { sizes.$field = value; })* };
        }
        take!(messages, paced_messages, keys, zipf_s, spin_ns, types, keys_per_type, small_keys);
        take!(troubled_pct, backoff_ms, long_pct, long_ms, bursts, hot_wait_ms, bystanders, rate);
        take!(async_messages, async_keys, async_max_wait_ms, async_window, loads, open_messages);

        check("messages", sizes.messages, 1, MAX_MESSAGES)?;
        check("paced-messages", sizes.paced_messages, 1, MAX_MESSAGES)?;
        check("keys", sizes.keys, 1, MAX_KEYS)?;
        check("zipf-s", sizes.zipf_s, 0.01, 10.0)?;
        check("spin-ns", sizes.spin_ns, 0, 1_000_000_000)?;
        check("types", sizes.types, 1, 100_000)?;
        check("keys-per-type", sizes.keys_per_type, 1, MAX_KEYS)?;
        check("small-keys", sizes.small_keys, 1, MAX_KEYS)?;
        check("troubled-pct", sizes.troubled_pct, 0.0001, 100.0)?;
        check("backoff-ms", sizes.backoff_ms, 1, 1_000)?;
        check("long-pct", sizes.long_pct, 0.0, 100.0)?;
        check("long-ms", sizes.long_ms, 1, 1_000)?;
        check_list("bursts", &sizes.bursts, 1, MAX_MESSAGES)?;
        check("hot-wait-ms", sizes.hot_wait_ms, 1, 1_000)?;
        check("bystanders", sizes.bystanders, 1, MAX_MESSAGES)?;
        check("rate", sizes.rate, 1.0, 1e9)?;
        check("async-messages", sizes.async_messages, 1, MAX_MESSAGES)?;
        check_list("async-keys", &sizes.async_keys, 1, MAX_KEYS)?;
        check("async-max-wait-ms", sizes.async_max_wait_ms, 1, 4_000)?;
        check("async-window", sizes.async_window, 1, MAX_WINDOW)?;
        check_list("loads", &sizes.loads, 0.01, 2.0)?;
        check("open-messages", sizes.open_messages, 1, MAX_MESSAGES)?;
        let total_keys = sizes.types.saturating_mul(sizes.keys_per_type);
        check("types x keys-per-type", total_keys, 1, MAX_KEYS)?;

        Ok(RunConfig {
            scenarios,
            strategies,
            strategy: StrategyConfig {
                workers,
                max_in_flight: args.window,
                throughput: args.throughput,
                groups_per_worker: args.groups_per_worker,
            },
            repeat,
            quick: args.quick,
            seed: args.seed,
            out: args.out,
            sizes,
            command,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> RunArgs {
        RunArgs::defaults()
    }

    fn config(args: RunArgs) -> Result<RunConfig, ArgError> {
        RunConfig::try_from((args, "test".into()))
    }

    #[test]
    fn defaults_select_everything() {
        let config = config(args()).unwrap();
        assert_eq!(config.scenarios.len(), ScenarioId::ALL.len());
        assert_eq!(config.strategies.len(), StrategyId::ALL.len());
        assert_eq!(config.repeat, 3);
    }

    #[test]
    fn quick_means_one_repeat_and_smaller_sizes() {
        let config = config(RunArgs { quick: true, ..args() }).unwrap();
        assert_eq!(config.repeat, 1);
        assert!(config.sizes.messages < Sizes::standard().messages);
    }

    #[test]
    fn unknown_ids_name_the_valid_ones() {
        let error = config(RunArgs { scenario: "uniform,bogus".into(), ..args() }).unwrap_err();
        assert!(
            error.to_string().contains("`bogus`") && error.to_string().contains("zipf"),
            "{error}"
        );
        let error = config(RunArgs { strategy: "keyed".into(), ..args() }).unwrap_err();
        assert!(error.to_string().contains("keyed-mailbox"), "{error}");
    }

    #[test]
    fn zero_and_absurd_sizes_are_rejected_by_name() {
        let cases = [
            RunArgs { workers: Some(0), ..args() },
            RunArgs { window: 0, ..args() },
            RunArgs { repeat: Some(0), ..args() },
            RunArgs { messages: Some(0), ..args() },
            RunArgs { keys: Some(MAX_KEYS + 1), ..args() },
            RunArgs { loads: Some(vec![]), ..args() },
            RunArgs { bursts: Some(vec![0]), ..args() },
            RunArgs { rate: Some(f64::NAN), ..args() },
        ];
        let flags = ["workers", "window", "repeat", "messages", "keys", "loads", "bursts", "rate"];
        for (case, flag) in cases.into_iter().zip(flags) {
            let error = config(case).unwrap_err().to_string();
            assert!(error.starts_with(&format!("--{flag} ")), "{error}");
        }
    }

    #[test]
    fn published_async_io_sets_the_experiment() {
        let config = config(RunArgs { published_async_io: true, ..args() }).unwrap();
        assert_eq!(config.sizes.async_messages, 10_000);
        assert_eq!(config.sizes.async_keys, [1, 2, 5, 10, 20, 1_000, 10_000]);
    }
}
