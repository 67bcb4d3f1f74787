//! Command-line arguments of `keyed-bench run`: clap-derived raw values, then a
//! `TryFrom` into the validated [`RunConfig`]. Every bad value is named in the error.

use std::path::PathBuf;

use clap::Args;
use strategies::{StrategyConfig, StrategyId, MAX_WINDOW};

use crate::workload::{ScenarioId, Sizes};
use crate::suite::RunConfig;

/// The largest message count of one run.
pub const MAX_MESSAGES: usize = 100_000_000;
/// The largest key count.
pub const MAX_KEYS: usize = 100_000_000;
/// The most repetitions.
pub const MAX_REPEAT: usize = 1_000;
/// The most OS threads `per-type-pool` may start on `many-types` (a pool of `--workers`
/// threads per type): past this a host runs out of threads, and the strategy cannot start.
pub const MAX_PER_TYPE_THREADS: usize = 16_384;
/// The most hash-serial groups (`group-by`, `per-type-pool`) one run may allocate, counted
/// over every pool: about 64 bytes each, so this bounds them at 256 MiB.
pub const MAX_GROUPS: usize = 1 << 22;

/// The range a numeric flag accepts; its help text states it as `[min..=max]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlagRange {
    /// The flag, without its dashes.
    pub flag: &'static str,
    /// The smallest valid value.
    pub min: f64,
    /// The largest valid value.
    pub max: f64,
    /// Whether only whole numbers parse (the flag is an integer type).
    pub integer: bool,
}

impl FlagRange {
    const fn int(flag: &'static str, min: usize, max: usize) -> Self {
        Self { flag, min: min as f64, max: max as f64, integer: true }
    }

    const fn real(flag: &'static str, min: f64, max: f64) -> Self {
        Self { flag, min, max, integer: false }
    }

    /// `min..=max`, as the help text and error messages write it.
    pub fn text(&self) -> String {
        format!("{}..={}", self.min, self.max)
    }

    /// Whether `value` is in the range (NaN never is).
    pub fn contains(&self, value: f64) -> bool {
        value >= self.min && value <= self.max
    }
}

/// Every numeric flag of `keyed-bench run` and the values it accepts (a list flag: each of
/// its values). Durations are whole milliseconds (`-ms`) or nanoseconds (`-ns`).
pub const FLAG_RANGES: &[FlagRange] = &[
    FlagRange::int("workers", 1, StrategyConfig::MAX_WORKERS),
    FlagRange::int("window", 1, MAX_WINDOW),
    FlagRange::int("throughput", 1, 1 << 20),
    FlagRange::int("groups-per-worker", 1, 1 << 16),
    FlagRange::int("repeat", 1, MAX_REPEAT),
    FlagRange::int("messages", 1, MAX_MESSAGES),
    FlagRange::int("paced-messages", 1, MAX_MESSAGES),
    FlagRange::int("keys", 1, MAX_KEYS),
    FlagRange::real("zipf-s", 0.01, 10.0),
    FlagRange::int("spin-ns", 0, 1_000_000_000),
    FlagRange::int("types", 1, 100_000),
    FlagRange::int("keys-per-type", 1, MAX_KEYS),
    FlagRange::int("small-keys", 1, MAX_KEYS),
    FlagRange::real("troubled-pct", 0.0001, 100.0),
    FlagRange::int("backoff-ms", 1, 1_000),
    FlagRange::real("long-pct", 0.0, 100.0),
    FlagRange::int("long-ms", 1, 1_000),
    FlagRange::int("bursts", 1, MAX_MESSAGES),
    FlagRange::int("hot-wait-ms", 1, 1_000),
    FlagRange::int("bystanders", 1, MAX_MESSAGES),
    FlagRange::real("rate", 1.0, 1e9),
    FlagRange::int("async-messages", 1, MAX_MESSAGES),
    FlagRange::int("async-keys", 1, MAX_KEYS),
    FlagRange::int("async-max-wait-ms", 1, 4_000),
    FlagRange::int("async-window", 1, MAX_WINDOW),
    FlagRange::real("loads", 0.01, 2.0),
    FlagRange::int("open-messages", 1, MAX_MESSAGES),
];

/// The range of `flag`.
pub fn range_of(flag: &str) -> Option<FlagRange> {
    FLAG_RANGES.iter().copied().find(|range| range.flag == flag)
}

/// Flags of `keyed-bench run` (and of `keyed-bench` with no subcommand).
#[derive(Args, Clone, Debug, PartialEq)]
pub struct RunArgs {
    /// Scenarios to run, comma-separated, each once, or `all`.
    #[arg(long, default_value = "all", value_name = "a,b|all")]
    pub scenario: String,
    /// Strategies to run, comma-separated, each once, or `all`.
    #[arg(long, default_value = "all", value_name = "x,y|all")]
    pub strategy: String,
    /// Worker threads per pool [1..=4096] [default: available cores].
    #[arg(long)]
    pub workers: Option<usize>,
    /// Admission window: most unfinished messages at once [1..=2097151].
    #[arg(long, default_value_t = StrategyConfig::DEFAULT_MAX_IN_FLIGHT)]
    pub window: usize,
    /// Messages a mailbox runs per turn [1..=1048576].
    #[arg(long, default_value_t = StrategyConfig::DEFAULT_THROUGHPUT)]
    pub throughput: usize,
    /// Hash-serial groups per worker (group-by, per-type-pool) [1..=65536].
    #[arg(long, default_value_t = StrategyConfig::DEFAULT_GROUPS_PER_WORKER)]
    pub groups_per_worker: usize,
    /// Measured repetitions per cell [1..=1000] [default: 3, or 1 with --quick].
    #[arg(long)]
    pub repeat: Option<usize>,
    /// Smaller sizes and one repetition: a smoke run in about a minute.
    #[arg(long)]
    pub quick: bool,
    /// Workload seed: the same seed gives every strategy the same messages.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Output folder (created if missing; must not be a file).
    #[arg(long, default_value = "results/latest")]
    pub out: PathBuf,

    /// Messages per run of uniform, zipf, many-types [1..=100000000].
    #[arg(long, help_heading = "Sizes")]
    pub messages: Option<usize>,
    /// Messages per run of the paced conflict-backoff and long-sync [1..=100000000].
    #[arg(long, help_heading = "Sizes")]
    pub paced_messages: Option<usize>,
    /// Keys of uniform, zipf and open-loop [1..=100000000].
    #[arg(long, help_heading = "Sizes")]
    pub keys: Option<usize>,
    /// Zipf exponent of zipf [0.01..=10].
    #[arg(long, help_heading = "Sizes")]
    pub zipf_s: Option<f64>,
    /// CPU time of an ordinary handler, in nanoseconds [0..=1000000000].
    #[arg(long, help_heading = "Sizes")]
    pub spin_ns: Option<u32>,
    /// Aggregate types of many-types [1..=100000].
    #[arg(long, help_heading = "Sizes")]
    pub types: Option<usize>,
    /// Keys per type of many-types [1..=100000000]; types x keys-per-type at most 100000000.
    #[arg(long, help_heading = "Sizes")]
    pub keys_per_type: Option<usize>,
    /// Keys of conflict-backoff and long-sync; bystander keys of hot-backlog [1..=100000000].
    #[arg(long, help_heading = "Sizes")]
    pub small_keys: Option<usize>,
    /// Percentage of troubled keys in conflict-backoff [0.0001..=100].
    #[arg(long, help_heading = "Sizes")]
    pub troubled_pct: Option<f64>,
    /// First backoff of a troubled message in milliseconds (doubles once) [1..=1000].
    #[arg(long, help_heading = "Sizes")]
    pub backoff_ms: Option<u64>,
    /// Percentage of 2 ms messages in long-sync [0..=100].
    #[arg(long, help_heading = "Sizes")]
    pub long_pct: Option<f64>,
    /// CPU time of a long message in milliseconds [1..=1000].
    #[arg(long, help_heading = "Sizes")]
    pub long_ms: Option<u64>,
    /// Burst sizes of hot-backlog, comma-separated, each once [1..=100000000].
    #[arg(long, value_delimiter = ',', help_heading = "Sizes")]
    pub bursts: Option<Vec<usize>>,
    /// Wait of each hot message in milliseconds [1..=1000].
    #[arg(long, help_heading = "Sizes")]
    pub hot_wait_ms: Option<u64>,
    /// Bystander messages of hot-backlog [1..=100000000].
    #[arg(long, help_heading = "Sizes")]
    pub bystanders: Option<usize>,
    /// Offered rate of the paced scenarios, messages per second [1..=1000000000].
    #[arg(long, help_heading = "Sizes")]
    pub rate: Option<f64>,
    /// Messages per run of async-io [1..=100000000].
    #[arg(long, help_heading = "Sizes")]
    pub async_messages: Option<usize>,
    /// Key counts of the async-io sweep, comma-separated, each once [1..=100000000].
    #[arg(long, value_delimiter = ',', help_heading = "Sizes")]
    pub async_keys: Option<Vec<usize>>,
    /// Longest async-io wait in milliseconds (uniform from 0) [1..=4000].
    #[arg(long, help_heading = "Sizes")]
    pub async_max_wait_ms: Option<u64>,
    /// Window of async-io [1..=2097151].
    #[arg(long, help_heading = "Sizes")]
    pub async_window: Option<usize>,
    /// The published async-io experiment: 10,000 messages, keys 1,2,5,10,20,1000,10000
    /// (not with --async-messages or --async-keys).
    #[arg(long, help_heading = "Sizes")]
    pub published_async_io: bool,
    /// Offered loads of open-loop, fractions of saturation, comma-separated, each once
    /// [0.01..=2].
    #[arg(long, value_delimiter = ',', help_heading = "Sizes")]
    pub loads: Option<Vec<f64>>,
    /// Messages per run of open-loop [1..=100000000].
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
    #[error("--{flag}: {message}")]
    Unknown {
        /// The flag.
        flag: &'static str,
        /// What is wrong, naming the value and the valid ones.
        message: String,
    },
    /// A list with an empty entry (`uniform,,zipf`, a trailing comma, nothing at all).
    #[error("--{flag} `{given}` has an empty entry; give ids separated by single commas")]
    EmptyEntry {
        /// The flag.
        flag: &'static str,
        /// The whole value.
        given: String,
    },
    /// A list that names one value twice.
    #[error("--{flag} names `{value}` twice; give each value once")]
    Duplicate {
        /// The flag.
        flag: &'static str,
        /// The repeated value.
        value: String,
    },
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
    /// Values that are each valid but together ask for more than can run.
    #[error("{what} is {value}, past the limit of {max}: {why}")]
    TooMany {
        /// The flags multiplied (`--types x --workers`).
        what: &'static str,
        /// The product, with its factors.
        value: String,
        /// The limit.
        max: usize,
        /// What the product counts.
        why: &'static str,
    },
    /// Two flags that cannot be given together.
    #[error("--{flag} cannot be combined with --{other}: {why}")]
    Conflict {
        /// The flag.
        flag: &'static str,
        /// The flag it conflicts with.
        other: &'static str,
        /// Why.
        why: &'static str,
    },
    /// A setting recorded in a results file (its `meta`) that the flag would reject.
    #[error("the recorded run settings are not valid ({0})")]
    Recorded(Box<ArgError>),
    /// An output folder that cannot be one.
    #[error("--out `{given}` {why}")]
    Out {
        /// The path given.
        given: String,
        /// What is wrong with it.
        why: &'static str,
    },
}

/// The ids of a comma-separated `--{flag}` list, or every id for `all`.
pub(crate) fn parse_list<T>(flag: &'static str, given: &str, all: &[T]) -> Result<Vec<T>, ArgError>
where
    T: std::str::FromStr + Copy + PartialEq + std::fmt::Display,
    T::Err: std::fmt::Display,
{
    if given.trim() == "all" {
        return Ok(all.to_vec());
    }
    let mut ids: Vec<T> = Vec::new();
    for item in given.split(',').map(str::trim) {
        if item.is_empty() {
            return Err(ArgError::EmptyEntry { flag, given: given.to_owned() });
        }
        if item == "all" {
            return Err(ArgError::Unknown {
                flag,
                message: format!(
                    "`all` selects every id and cannot be listed with others in `{given}`"
                ),
            });
        }
        let id = item
            .parse::<T>()
            .map_err(|error| ArgError::Unknown { flag, message: error.to_string() })?;
        if ids.contains(&id) {
            return Err(ArgError::Duplicate { flag, value: id.to_string() });
        }
        ids.push(id);
    }
    Ok(ids)
}

/// A flag value as a number, to compare with its [`FlagRange`].
pub trait FlagValue: Copy + std::fmt::Display {
    /// The value as `f64` (exact for every value inside any range, and for every value
    /// outside one still outside it).
    fn as_f64(self) -> f64;
}

macro_rules! flag_value {
    ($($type:ty),*) => { $(impl FlagValue for $type { fn as_f64(self) -> f64 { self as f64 } })* };
}
flag_value!(usize, u64, u32, f64);

/// Checks `value` of `--{flag}` against the flag's documented range.
pub fn check<T: FlagValue>(flag: &'static str, value: T) -> Result<(), ArgError> {
    let range = range_of(flag).unwrap_or_else(|| unreachable!("--{flag} has a FlagRange entry"));
    if range.contains(value.as_f64()) {
        Ok(())
    } else {
        Err(ArgError::OutOfRange {
            flag,
            value: value.to_string(),
            expected: format!("in {}", range.text()),
        })
    }
}

/// Checks every value of the list `--{flag}`: at least one, each in range, none twice.
fn check_list<T: FlagValue + PartialEq>(flag: &'static str, values: &[T]) -> Result<(), ArgError> {
    if values.is_empty() {
        return Err(ArgError::OutOfRange {
            flag,
            value: "an empty list".into(),
            expected: "at least one value".into(),
        });
    }
    for (index, &value) in values.iter().enumerate() {
        check(flag, value)?;
        if values[..index].contains(&value) {
            return Err(ArgError::Duplicate { flag, value: value.to_string() });
        }
    }
    Ok(())
}

/// Checks every workload size against its flag's range, and the products of sizes that
/// must stay bounded. Also used on the sizes a results file records (gate confirmation).
pub fn check_sizes(sizes: &Sizes) -> Result<(), ArgError> {
    check("messages", sizes.messages)?;
    check("paced-messages", sizes.paced_messages)?;
    check("keys", sizes.keys)?;
    check("zipf-s", sizes.zipf_s)?;
    check("spin-ns", sizes.spin_ns)?;
    check("types", sizes.types)?;
    check("keys-per-type", sizes.keys_per_type)?;
    check("small-keys", sizes.small_keys)?;
    check("troubled-pct", sizes.troubled_pct)?;
    check("backoff-ms", sizes.backoff_ms)?;
    check("long-pct", sizes.long_pct)?;
    check("long-ms", sizes.long_ms)?;
    check_list("bursts", &sizes.bursts)?;
    check("hot-wait-ms", sizes.hot_wait_ms)?;
    check("bystanders", sizes.bystanders)?;
    check("rate", sizes.rate)?;
    check("async-messages", sizes.async_messages)?;
    check_list("async-keys", &sizes.async_keys)?;
    check("async-max-wait-ms", sizes.async_max_wait_ms)?;
    check("async-window", sizes.async_window)?;
    check_list("loads", &sizes.loads)?;
    check("open-messages", sizes.open_messages)?;
    let total_keys = sizes.types.saturating_mul(sizes.keys_per_type);
    if total_keys > MAX_KEYS {
        return Err(ArgError::TooMany {
            what: "--types x --keys-per-type",
            value: format!("{} x {} = {total_keys}", sizes.types, sizes.keys_per_type),
            max: MAX_KEYS,
            why: "the keys of many-types",
        });
    }
    Ok(())
}

/// Checks the strategy settings, and what they cost with the selected strategies and
/// scenarios (threads and hash-serial groups).
pub fn check_settings(
    config: &StrategyConfig,
    strategies: &[StrategyId],
    scenarios: &[ScenarioId],
    sizes: &Sizes,
) -> Result<(), ArgError> {
    check("workers", config.workers)?;
    check("window", config.max_in_flight)?;
    check("throughput", config.throughput)?;
    check("groups-per-worker", config.groups_per_worker)?;
    let per_type =
        strategies.contains(&StrategyId::PerTypePool) && scenarios.contains(&ScenarioId::ManyTypes);
    if per_type {
        let threads = sizes.types.saturating_mul(config.workers);
        if threads > MAX_PER_TYPE_THREADS {
            return Err(ArgError::TooMany {
                what: "--types x --workers",
                value: format!("{} x {} = {threads}", sizes.types, config.workers),
                max: MAX_PER_TYPE_THREADS,
                why: "per-type-pool starts --workers threads per type on many-types",
            });
        }
    }
    if strategies.iter().any(|id| matches!(id, StrategyId::GroupBy | StrategyId::PerTypePool)) {
        let pools = if per_type { sizes.types } else { 1 };
        let groups = config.workers.saturating_mul(config.groups_per_worker).saturating_mul(pools);
        if groups > MAX_GROUPS {
            return Err(ArgError::TooMany {
                what: "--workers x --groups-per-worker (x --types for per-type-pool)",
                value: format!(
                    "{} x {}{} = {groups}",
                    config.workers,
                    config.groups_per_worker,
                    if per_type { format!(" x {pools}") } else { String::new() }
                ),
                max: MAX_GROUPS,
                why: "the hash-serial groups group-by and per-type-pool allocate",
            });
        }
    }
    Ok(())
}

/// Rejects an output folder that can never be one: an empty path, or an existing file.
fn check_out(out: &std::path::Path) -> Result<(), ArgError> {
    let given = out.display().to_string();
    if out.as_os_str().is_empty() {
        return Err(ArgError::Out { given, why: "is empty; give the folder to write results to" });
    }
    if out.exists() && !out.is_dir() {
        return Err(ArgError::Out { given, why: "is a file; expected a folder for the results" });
    }
    Ok(())
}

impl TryFrom<(RunArgs, String)> for RunConfig {
    type Error = ArgError;

    /// Validates `args`; `command` is the command line, kept in the results.
    fn try_from((args, command): (RunArgs, String)) -> Result<Self, ArgError> {
        let scenarios = parse_list("scenario", &args.scenario, ScenarioId::ALL)?;
        let strategies = parse_list("strategy", &args.strategy, StrategyId::ALL)?;
        let workers = args.workers.unwrap_or_else(crate::measure::system::cores);
        let repeat = args.repeat.unwrap_or(if args.quick { 1 } else { 3 });
        check("repeat", repeat)?;
        if args.published_async_io {
            let why = "--published-async-io sets the published experiment's messages and keys";
            if args.async_messages.is_some() {
                return Err(ArgError::Conflict {
                    flag: "published-async-io",
                    other: "async-messages",
                    why,
                });
            }
            if args.async_keys.is_some() {
                return Err(ArgError::Conflict {
                    flag: "published-async-io",
                    other: "async-keys",
                    why,
                });
            }
        }
        check_out(&args.out)?;

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
        check_sizes(&sizes)?;

        let strategy = StrategyConfig {
            workers,
            max_in_flight: args.window,
            throughput: args.throughput,
            groups_per_worker: args.groups_per_worker,
        };
        check_settings(&strategy, &strategies, &scenarios, &sizes)?;

        Ok(RunConfig {
            scenarios,
            strategies,
            strategy,
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
    fn every_range_is_stated_in_its_flag_help() {
        let command = <RunArgs as clap::Args>::augment_args(clap::Command::new("run"));
        for range in FLAG_RANGES {
            let arg = command
                .get_arguments()
                .find(|arg| arg.get_long() == Some(range.flag))
                .unwrap_or_else(|| panic!("--{} is a flag", range.flag));
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            assert!(help.contains(&format!("[{}]", range.text())), "--{}: {help}", range.flag);
        }
    }

    #[test]
    fn lists_reject_empty_entries_duplicates_and_all_among_others() {
        let cases = [
            (RunArgs { scenario: "".into(), ..args() }, "--scenario `` has an empty entry"),
            (
                RunArgs { scenario: "uniform,".into(), ..args() },
                "--scenario `uniform,` has an empty",
            ),
            (RunArgs { strategy: "inline,,tokio".into(), ..args() }, "--strategy `inline,,tokio`"),
            (RunArgs { scenario: "zipf, zipf".into(), ..args() }, "--scenario names `zipf` twice"),
            (RunArgs { strategy: "all,inline".into(), ..args() }, "--strategy: `all` selects"),
            (RunArgs { bursts: Some(vec![5, 7, 5]), ..args() }, "--bursts names `5` twice"),
            (RunArgs { async_keys: Some(vec![20, 20]), ..args() }, "--async-keys names `20` twice"),
            (RunArgs { loads: Some(vec![0.5, 0.5]), ..args() }, "--loads names `0.5` twice"),
        ];
        for (case, expected) in cases {
            let error = config(case).unwrap_err().to_string();
            assert!(error.starts_with(expected), "{expected}: {error}");
        }
    }

    #[test]
    fn conflicting_flags_are_named() {
        let error =
            config(RunArgs { published_async_io: true, async_keys: Some(vec![3]), ..args() })
                .unwrap_err()
                .to_string();
        assert!(error.starts_with("--published-async-io cannot be combined with --async-keys"));
        let error =
            config(RunArgs { published_async_io: true, async_messages: Some(10), ..args() })
                .unwrap_err()
                .to_string();
        assert!(error.contains("--async-messages"), "{error}");
    }

    #[test]
    fn products_past_what_can_run_are_rejected() {
        let threads = RunArgs {
            scenario: "many-types".into(),
            strategy: "per-type-pool".into(),
            types: Some(100_000),
            workers: Some(2),
            ..args()
        };
        let error = config(threads.clone()).unwrap_err().to_string();
        assert!(error.starts_with("--types x --workers is 100000 x 2 = 200000"), "{error}");
        // The same sizes are fine where per-type-pool does not meet many-types.
        config(RunArgs { strategy: "keyed-mailbox".into(), ..threads }).unwrap();
        let groups = RunArgs {
            strategy: "group-by".into(),
            workers: Some(4096),
            groups_per_worker: 65_536,
            ..args()
        };
        let error = config(groups).unwrap_err().to_string();
        assert!(error.contains("4096 x 65536 = 268435456"), "{error}");
        let keys = RunArgs { types: Some(100_000), keys_per_type: Some(10_000), ..args() };
        let error = config(keys).unwrap_err().to_string();
        assert!(error.starts_with("--types x --keys-per-type is 100000 x 10000"), "{error}");
    }

    #[test]
    fn an_output_that_cannot_be_a_folder_is_rejected() {
        let error = config(RunArgs { out: PathBuf::new(), ..args() }).unwrap_err().to_string();
        assert!(error.starts_with("--out `` is empty"), "{error}");
        let file =
            std::env::temp_dir().join(format!("keyed-bench-out-file-{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        let error = config(RunArgs { out: file.clone(), ..args() }).unwrap_err().to_string();
        std::fs::remove_file(&file).ok();
        assert!(error.contains("is a file"), "{error}");
    }

    #[test]
    fn published_async_io_sets_the_experiment() {
        let config = config(RunArgs { published_async_io: true, ..args() }).unwrap();
        assert_eq!(config.sizes.async_messages, 10_000);
        assert_eq!(config.sizes.async_keys, [1, 2, 5, 10, 20, 1_000, 10_000]);
    }
}
