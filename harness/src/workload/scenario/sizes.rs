//! Every workload size, declared once.
//!
//! One row of the [`sizes!`] table below is everything about a size: the [`Sizes`] field
//! and its doc, the `keyed-bench run` flag with its help text (range, default and `--quick`
//! value stated), the range check, the default and quick values, the value an older results
//! file that lacks the size reads as, and the scenarios whose `keyed-bench list` line shows
//! it. Adding a size is adding a row; nothing else can be forgotten.
//!
//! # Reading older results files
//!
//! [`Sizes`] is read through [`RecordedSizes`], where every size is optional: a size that
//! a file does not record reads as its row's `legacy` value, which must be the value that
//! reproduces what the suite measured before the size existed (so `gate --confirm`
//! re-measures the same experiment). A row without `legacy` reads as its default, which is
//! right when the size only names what was fixed before. A file from before sizes were
//! recorded at all reads as [`Sizes::before_recorded`] where its command line set no size
//! (`results/` decides that), so a default that changes keeps its old value as `legacy`.

use serde::{Deserialize, Serialize};

use super::ScenarioId;
use crate::limits::{
    check_in, check_list_in, FlagRange, FlagValue, NumberParser, SettingError, MAX_KEYS,
    MAX_MESSAGES,
};

/// A size's value: a number, or a list of numbers (a sweep).
pub trait SizeValue: Clone {
    /// Whether only whole numbers parse.
    const INTEGER: bool;

    /// The number the flag's every value is (a list's element type).
    type Item;

    /// Whether the flag takes a comma-separated list, whose first value may start with a
    /// hyphen without being a number (`-1,2`).
    const LIST: bool;

    /// Checks the value (every value of a list, and a list's length and uniqueness).
    fn check(&self, range: &FlagRange) -> Result<(), SettingError>;

    /// The value as a flag takes it (`10000`, `200,240,241`).
    fn show(&self) -> String;

    /// Reads the value as a results file records it. A list also reads from a single
    /// number: a size that became a list (`keys`) reads from files that hold one value.
    fn read<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
}

/// A size as [`RecordedSizes`] reads it ([`SizeValue::read`]).
struct Recorded<T>(T);

impl<'de, T: SizeValue> Deserialize<'de> for Recorded<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::read(deserializer).map(Recorded)
    }
}

macro_rules! size_value {
    ($($type:ty),*) => {$(
        impl SizeValue for $type {
            const INTEGER: bool = <$type as FlagValue>::INTEGER;
            type Item = $type;
            const LIST: bool = false;

            fn check(&self, range: &FlagRange) -> Result<(), SettingError> {
                check_in(range, *self)
            }

            fn show(&self) -> String {
                self.to_string()
            }

            fn read<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                <$type>::deserialize(deserializer)
            }
        }

        impl SizeValue for Vec<$type> {
            const INTEGER: bool = <$type as FlagValue>::INTEGER;
            type Item = $type;
            const LIST: bool = true;

            fn check(&self, range: &FlagRange) -> Result<(), SettingError> {
                check_list_in(range, self)
            }

            fn show(&self) -> String {
                self.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
            }

            fn read<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                #[derive(Deserialize)]
                #[serde(untagged)]
                enum OneOrMany {
                    One($type),
                    Many(Vec<$type>),
                }
                Ok(match OneOrMany::deserialize(deserializer)? {
                    OneOrMany::One(value) => vec![value],
                    OneOrMany::Many(values) => values,
                })
            }
        }
    )*};
}
size_value!(usize, u64, u32, f64);

/// The last expression given: a row's quick (or legacy) value where it has one, else its
/// default.
macro_rules! last_of {
    ($default:expr) => {
        $default
    };
    ($default:expr, $other:expr) => {
        $other
    };
}

/// The table of sizes. A row:
///
/// ```text
/// field: type = default [, quick value] [, legacy value];
///     flag "name" in min => max [, clap_attribute = value ...];
///     shown by [Scenario, ...];
///     "help text, which is also the field's doc" [, "a note after the range"];
/// ```
macro_rules! sizes {
    ($(
        $field:ident: $type:ty = $default:expr $(, quick $quick:expr)? $(, legacy $legacy:expr)?;
            flag $flag:literal in $min:expr => $max:expr $(, $key:ident = $value:expr)*;
            shown by [$($scenario:ident),+];
            $help:literal $(, $note:literal)?;
    )*) => {
        /// Every workload size; each is a flag of `keyed-bench run`.
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(from = "RecordedSizes")]
        pub struct Sizes {
            $(#[doc = $help] pub $field: $type,)*
        }

        /// [`Sizes`] as a results file holds them: a size the file lacks (or holds as
        /// `null`) reads as the value that reproduces what the file measured.
        #[derive(Deserialize)]
        struct RecordedSizes {
            $(#[serde(default)] $field: Option<Recorded<$type>>,)*
        }

        impl From<RecordedSizes> for Sizes {
            fn from(recorded: RecordedSizes) -> Self {
                Self {
                    $($field: recorded
                        .$field
                        .map_or_else(|| last_of!($default $(, $legacy)?), |Recorded(value)| value),)*
                }
            }
        }

        impl Sizes {
            /// The default suite: a few minutes on 2 cores.
            pub fn standard() -> Self {
                Self { $($field: $default,)* }
            }

            /// `--quick`: the same scenarios, smaller.
            pub fn quick() -> Self {
                Self { $($field: last_of!($default $(, $quick)?),)* }
            }

            /// The sizes of a run whose results file records none (it predates recording
            /// them) and whose command line set none: the defaults of then, which are
            /// today's except where a row says `legacy`.
            pub fn before_recorded(quick: bool) -> Self {
                #[allow(unused_mut)] // mutated only by rows with a `legacy` value
                let mut sizes = if quick { Self::quick() } else { Self::standard() };
                $($(sizes.$field = $legacy;)?)*
                sizes
            }

            /// The range of every size's flag, in table order.
            pub const RANGES: &'static [FlagRange] = &[$(
                FlagRange {
                    flag: $flag,
                    min: $min as f64,
                    max: $max as f64,
                    integer: <$type as SizeValue>::INTEGER,
                },
            )*];

            /// Checks every size against its flag's range (one at a time; see
            /// [`Sizes::validate`] for the products).
            fn check_each(&self) -> Result<(), SettingError> {
                $(self.$field.check(&Self::range($flag))?;)*
                Ok(())
            }

            /// The flags and values of the sizes `scenario` uses, in table order, as
            /// `keyed-bench list` shows them.
            pub fn flags_of(&self, scenario: ScenarioId) -> Vec<(&'static str, String)> {
                let mut flags = Vec::new();
                $(if [$(ScenarioId::$scenario),+].contains(&scenario) {
                    flags.push(($flag, self.$field.show()));
                })*
                flags
            }
        }

        /// The size flags of `keyed-bench run`: each one given replaces that size of the
        /// default (or `--quick`) sizes.
        #[derive(clap::Args, Clone, Debug, Default, PartialEq)]
        #[command(next_help_heading = "Sizes")]
        pub struct SizeArgs {
            $(
                #[arg(
                    long = $flag,
                    help = help_text($flag, $help, concat!("" $(, $note)?), |sizes| sizes.$field.show()),
                    value_parser = NumberParser::<<$type as SizeValue>::Item>::new(Sizes::range($flag)),
                    allow_negative_numbers = true,
                    allow_hyphen_values = <$type as SizeValue>::LIST
                    $(, $key = $value)*
                )]
                #[doc = $help]
                pub $field: Option<$type>,
            )*
        }

        impl SizeArgs {
            /// Replaces each size of `sizes` that a flag gave.
            pub fn apply(&self, sizes: &mut Sizes) {
                $(if let Some(value) = &self.$field {
                    sizes.$field = value.clone();
                })*
            }
        }
    };
}

sizes! {
    messages: usize = 200_000, quick 40_000;
        flag "messages" in 1 => MAX_MESSAGES;
        shown by [Uniform, Zipf, ManyTypes];
        "Messages per run of uniform, zipf, many-types";
    paced_messages: usize = 20_000, quick 5_000;
        flag "paced-messages" in 1 => MAX_MESSAGES;
        shown by [ConflictBackoff, LongSync];
        "Messages per run of the paced conflict-backoff and long-sync";
    keys: Vec<usize> = vec![10_000];
        flag "keys" in 1 => MAX_KEYS, value_delimiter = ',';
        shown by [Uniform, Zipf, OpenLoop];
        "Keys of uniform, zipf and open-loop, comma-separated, each once: a list sweeps them \
         (one cell per key count, its param `keys=N`)";
    zipf_s: f64 = 1.1;
        flag "zipf-s" in 0.01 => 10.0;
        shown by [Zipf, AsyncIoZipf];
        "Zipf exponent of zipf and async-io-zipf";
    spin_ns: u32 = 1_000;
        flag "spin-ns" in 0 => 1_000_000_000;
        shown by [Uniform, Zipf, ManyTypes, ConflictBackoff, LongSync, HotBacklog, OpenLoop, Saga];
        "CPU time of an ordinary handler, in nanoseconds";
    types: usize = 20;
        flag "types" in 1 => 100_000;
        shown by [ManyTypes];
        "Aggregate types of many-types";
    keys_per_type: usize = 500;
        flag "keys-per-type" in 1 => MAX_KEYS;
        shown by [ManyTypes];
        "Keys per type of many-types", "; types x keys-per-type at most 100000000";
    small_keys: usize = 1_000;
        flag "small-keys" in 1 => MAX_KEYS;
        shown by [ConflictBackoff, LongSync, HotBacklog];
        "Keys of conflict-backoff and long-sync; bystander keys of hot-backlog";
    troubled_pct: f64 = 1.0;
        flag "troubled-pct" in 0.0001 => 100.0;
        shown by [ConflictBackoff];
        "Percentage of troubled keys in conflict-backoff";
    backoff_ms: u64 = 10;
        flag "backoff-ms" in 1 => 1_000;
        shown by [ConflictBackoff];
        "First backoff of a troubled message in milliseconds (doubles once)";
    long_pct: f64 = 0.2;
        flag "long-pct" in 0.0 => 100.0;
        shown by [LongSync];
        "Percentage of long messages in long-sync";
    long_ms: u64 = 2;
        flag "long-ms" in 1 => 1_000;
        shown by [LongSync];
        "CPU time of a long message in milliseconds";
    bursts: Vec<usize> = vec![200, 240, 241, 300];
        flag "bursts" in 1 => MAX_MESSAGES, value_delimiter = ',';
        shown by [HotBacklog];
        "Burst sizes of hot-backlog, comma-separated, each once";
    hot_wait_ms: u64 = 1;
        flag "hot-wait-ms" in 1 => 1_000;
        shown by [HotBacklog];
        "Wait of each hot message in milliseconds";
    bystanders: usize = 10_000, quick 5_000;
        flag "bystanders" in 1 => MAX_MESSAGES;
        shown by [HotBacklog];
        "Bystander messages of hot-backlog";
    hot_key_messages: usize = 10_000, quick 4_000;
        flag "hot-key-messages" in 1 => MAX_MESSAGES;
        shown by [HotKey];
        "Messages per run of hot-key (20% to its hot key)";
    hot_key_keys: usize = 100;
        flag "hot-key-keys" in 1 => MAX_KEYS;
        shown by [HotKey];
        "Bystander keys of hot-key";
    hot_key_rate: f64 = 50_000.0;
        flag "hot-key-rate" in 1.0 => 1e9;
        shown by [HotKey];
        "Offered rate of hot-key, messages per second";
    hot_key_spin_ns: u32 = 20_000;
        flag "hot-key-spin-ns" in 0 => 1_000_000_000;
        shown by [HotKey];
        "CPU time of each hot-key message, in nanoseconds";
    saga_messages: usize = 5_000, quick 2_000;
        flag "saga-messages" in 1 => MAX_MESSAGES;
        shown by [Saga];
        "Bystander messages per run of saga";
    saga_keys: usize = 16;
        flag "saga-keys" in 1 => 10_000;
        shown by [Saga];
        "Bystander keys of saga, each hashed to the saga key's group";
    saga_rate: f64 = 20_000.0;
        flag "saga-rate" in 1.0 => 1e9;
        shown by [Saga];
        "Offered rate of saga's bystanders, messages per second";
    saga_wait_ms: u64 = 1;
        flag "saga-wait-ms" in 1 => 1_000;
        shown by [Saga];
        "Wait of each saga message in milliseconds";
    rate: f64 = 100_000.0;
        flag "rate" in 1.0 => 1e9;
        shown by [ConflictBackoff, LongSync, HotBacklog];
        "Offered rate of the paced scenarios, messages per second";
    async_messages: usize = 2_000, quick 1_000;
        flag "async-messages" in 1 => MAX_MESSAGES;
        shown by [AsyncIo, AsyncIoZipf];
        "Messages per run of async-io and async-io-zipf";
    async_keys: Vec<usize> = vec![10, 20, 1_000, 10_000], quick vec![20, 1_000];
        flag "async-keys" in 1 => MAX_KEYS, value_delimiter = ',';
        shown by [AsyncIo];
        "Key counts of the async-io sweep, comma-separated, each once";
    async_max_wait_ms: u64 = 5;
        flag "async-max-wait-ms" in 1 => 4_000;
        shown by [AsyncIo, AsyncIoZipf];
        "Longest wait of async-io and async-io-zipf in milliseconds (uniform from 0)";
    async_window: usize = 100;
        flag "async-window" in 1 => strategies::MAX_WINDOW;
        shown by [AsyncIo, AsyncIoZipf];
        "Window of async-io and async-io-zipf";
    async_zipf_keys: Vec<usize> = vec![200];
        flag "async-zipf-keys" in 1 => MAX_KEYS, value_delimiter = ',';
        shown by [AsyncIoZipf];
        "Key counts of async-io-zipf (Zipf over that many keys), comma-separated, each once";
    pc_messages: usize = 2_000, quick 1_000;
        flag "pc-messages" in 1 => MAX_MESSAGES;
        shown by [ParallelConsumer];
        "Messages per run of parallel-consumer (the published experiment: 10000)";
    pc_keys: Vec<usize> = vec![10, 100, 1_000], quick vec![20, 1_000];
        flag "pc-keys" in 1 => MAX_KEYS, value_delimiter = ',';
        shown by [ParallelConsumer];
        "Key counts of the parallel-consumer sweep, comma-separated, each once";
    pc_threads: usize = 16;
        flag "pc-threads" in 1 => strategies::StrategyConfig::MAX_WORKERS;
        shown by [ParallelConsumer];
        "Worker threads of parallel-consumer, whatever --workers says (the published: 16)";
    pc_window: usize = 100;
        flag "pc-window" in 1 => strategies::MAX_WINDOW;
        shown by [ParallelConsumer];
        "Window of parallel-consumer (the published max concurrency: 100)";
    pc_max_block_ms: u64 = 4;
        flag "pc-max-block-ms" in 0 => 4_000;
        shown by [ParallelConsumer];
        "Longest blocking call of parallel-consumer in whole milliseconds (uniform from 0)";
    cold_slow: Vec<usize> = vec![0, 16, 128], quick vec![128];
        flag "cold-slow" in 0 => 100_000, value_delimiter = ',';
        shown by [ColdCommand];
        "Slow aggregates of cold-command, each always waiting on one message, comma-separated, each once";
    cold_senders: Vec<usize> = vec![1, 3], quick vec![1];
        flag "cold-senders" in 1 => 64, value_delimiter = ',';
        shown by [ColdCommand];
        "Cold-command senders, each sending to a new aggregate and waiting until it is handled, comma-separated, each once";
    cold_duration_ms: u64 = 200;
        flag "cold-duration-ms" in 10 => 600_000;
        shown by [ColdCommand];
        "How long the cold-command senders send, in milliseconds";
    cold_wait_ms: u64 = 5;
        flag "cold-wait-ms" in 1 => 1_000;
        shown by [ColdCommand];
        "The non-blocking wait of each slow aggregate's message in cold-command, milliseconds";
    cold_hot_outstanding: usize = 8;
        flag "cold-hot-outstanding" in 0 => 10_000;
        shown by [ColdCommand];
        "Messages the hot aggregate of cold-command always has outstanding (0: no hot aggregate)";
    cold_hot_spin_ns: u32 = 200;
        flag "cold-hot-spin-ns" in 0 => 1_000_000_000;
        shown by [ColdCommand];
        "CPU time of each hot message of cold-command, in nanoseconds";
    stateful_messages: usize = 50_000, quick 10_000;
        flag "stateful-messages" in 1 => MAX_MESSAGES;
        shown by [Stateful];
        "Messages per run of stateful";
    stateful_keys: Vec<usize> = vec![32, 1_024, 32_768], quick vec![32, 32_768];
        flag "stateful-keys" in 1 => 4_194_304, value_delimiter = ',';
        shown by [Stateful];
        "Key counts of stateful (with 4 KiB each: 128 KiB, 4 MiB, 128 MiB of state), comma-separated, each once",
        "; stateful-keys x state-kib at most 4 GiB";
    state_kib: usize = 4;
        flag "state-kib" in 1 => 1_024;
        shown by [Stateful];
        "State of each aggregate of stateful in KiB, all of it read and written by each message",
        "; stateful-keys x state-kib at most 4 GiB";
    loads: Vec<f64> = vec![0.25, 0.5, 0.75, 0.9], quick vec![0.5, 0.9];
        flag "loads" in 0.01 => 2.0, value_delimiter = ',';
        shown by [OpenLoop];
        "Offered loads of open-loop, fractions of saturation, comma-separated, each once";
    open_messages: usize = 100_000, quick 20_000;
        flag "open-messages" in 1 => MAX_MESSAGES;
        shown by [OpenLoop];
        "Messages per run of open-loop";
    pipeline_records: usize = 20_000, quick 5_000;
        flag "pipeline-records" in 1 => MAX_MESSAGES, help_heading = "Pipeline";
        shown by [PipelineCrash, PipelineRetry, PipelineExpand, PipelineReorder, PipelineRebalance];
        "Records produced to the log of a pipeline scenario, each the next version of a random aggregate";
    pipeline_keys: usize = 1_000;
        flag "pipeline-keys" in 1 => MAX_MESSAGES, help_heading = "Pipeline";
        shown by [PipelineCrash, PipelineRetry, PipelineExpand, PipelineReorder, PipelineRebalance];
        "Aggregates (keys) of a pipeline scenario's records";
    partitions: u32 = 4;
        flag "partitions" in 1 => 1_024, help_heading = "Pipeline";
        shown by [PipelineCrash, PipelineRetry, PipelineExpand, PipelineReorder, PipelineRebalance];
        "Partitions of a pipeline scenario's log (records placed by Kafka's default partitioner)";
    crash_after: usize = 10_000, quick 2_500;
        flag "crash-after" in 1 => MAX_MESSAGES, help_heading = "Pipeline";
        shown by [PipelineCrash];
        "Completed records after which pipeline-crash's consumer dies (right after its next periodic commit)";
    pipeline_slow_pct: f64 = 0.5;
        flag "pipeline-slow-pct" in 0.0 => 100.0, help_heading = "Pipeline";
        shown by [PipelineCrash, PipelineRetry, PipelineExpand, PipelineReorder, PipelineRebalance];
        "Percent of a pipeline scenario's records that wait on a slow dependency (pending, no thread held)";
    pipeline_slow_ms: u64 = 20;
        flag "pipeline-slow-ms" in 1 => 60_000, help_heading = "Pipeline";
        shown by [PipelineCrash, PipelineRetry, PipelineExpand, PipelineReorder, PipelineRebalance];
        "How long a slow record of a pipeline scenario waits, in milliseconds";
    commit_interval_ms: u64 = 2, quick 1;
        flag "commit-interval-ms" in 1 => 60_000, help_heading = "Pipeline";
        shown by [PipelineCrash, PipelineRetry, PipelineExpand, PipelineReorder, PipelineRebalance];
        "Time between a pipeline consumer's periodic offset commits, in milliseconds";
    metadata_limit: usize = 4_096;
        flag "metadata-limit" in 3 => 1_048_576, help_heading = "Pipeline";
        shown by [PipelineCrash, PipelineRetry, PipelineExpand, PipelineReorder, PipelineRebalance];
        "Most bytes of offset metadata text one partition's commit may carry under contiguous+metadata (Kafka's offset.metadata.max.bytes; base64, so the encoding gets 3/4 of it; the partition pauses at 75%)";
    pipeline_rate: u64 = 80_000;
        flag "pipeline-rate" in 1 => 100_000_000, help_heading = "Pipeline";
        shown by [PipelineRetry];
        "Records per second the paced producer of pipeline-retry writes (latency counts from each record's produce time)";
    fail_pct: f64 = 0.5;
        flag "fail-pct" in 0.0 => 100.0, help_heading = "Pipeline";
        shown by [PipelineRetry];
        "Percent of pipeline-retry's records whose first 1 or 2 attempts fail (transient failures)";
    poison: usize = 3;
        flag "poison" in 0 => MAX_MESSAGES, help_heading = "Pipeline";
        shown by [PipelineRetry];
        "Records of pipeline-retry whose every attempt fails (poison), spread evenly over the log";
    max_attempts: u32 = 4;
        flag "max-attempts" in 0 => 100, help_heading = "Pipeline";
        shown by [PipelineRetry];
        "Failed attempts after which a record goes to the dead-letter topic, under every retry policy (0: retry for ever; a cell then stops once its bystanders are done or stalled)";
    retry_backoff_ms: u64 = 2;
        flag "retry-backoff-ms" in 1 => 60_000, help_heading = "Pipeline";
        shown by [PipelineRetry];
        "Wait after a record's first failed attempt, in milliseconds; it doubles with each further one";
    expand_to: u32 = 8;
        flag "expand-to" in 2 => 2_048, help_heading = "Pipeline";
        shown by [PipelineExpand];
        "Partitions pipeline-expand's log grows to halfway through: more than --partitions",
        "; when not given and --partitions is 8 or more, twice --partitions";
    producer_jitter: usize = 16;
        flag "producer-jitter" in 1 => MAX_MESSAGES, help_heading = "Pipeline";
        shown by [PipelineReorder];
        "How many records late the second producer of pipeline-reorder may send each of its records (each delay uniform up to this)";
    consumers: usize = 3;
        flag "consumers" in 2 => 64, help_heading = "Pipeline";
        shown by [PipelineRebalance];
        "Members of pipeline-rebalance's consumer group (one leaves a third of the way in, a new one joins at two thirds; members past --partitions get none, as in Kafka)";
}

/// The help text of a size flag: what it sizes, its range, its default and quick values.
fn help_text(flag: &str, help: &str, note: &str, show: fn(&Sizes) -> String) -> String {
    let range = Sizes::range(flag);
    let (default, quick) = (show(&Sizes::standard()), show(&Sizes::quick()));
    let values = if default == quick {
        format!("default: {default}")
    } else {
        format!("default: {default}; --quick: {quick}")
    };
    format!("{help} [{}] [{values}]{note}.", range.text())
}

/// The shortest stall limit of a retry-forever pipeline cell
/// ([`Sizes::forever_stall_limit`]), in milliseconds.
pub const FOREVER_STALL_MIN_MS: u64 = 1_000;
/// A retry-forever cell's stall limit is at least this many first backoffs.
pub const FOREVER_STALL_BACKOFFS: u32 = 100;

impl Sizes {
    /// How long a retry-forever pipeline cell (`--max-attempts 0`) waits with no bystander
    /// record applied, while one waits, before it stops: the longer of
    /// [`FOREVER_STALL_MIN_MS`] and [`FOREVER_STALL_BACKOFFS`] first backoffs of `backoff`.
    pub fn forever_stall_limit(backoff: std::time::Duration) -> std::time::Duration {
        let backoffs = backoff.saturating_mul(FOREVER_STALL_BACKOFFS);
        std::time::Duration::from_millis(FOREVER_STALL_MIN_MS).max(backoffs)
    }

    /// The range of the size flag `flag`.
    fn range(flag: &str) -> FlagRange {
        Self::RANGES
            .iter()
            .copied()
            .find(|range| range.flag == flag)
            .unwrap_or_else(|| unreachable!("--{flag} is a row of the sizes table"))
    }

    /// Checks every size against its flag's range, and the products of sizes that must stay
    /// bounded. Also used on the sizes a results file records (gate confirmation).
    pub fn validate(&self) -> Result<(), SettingError> {
        self.check_each()?;
        let total_keys = self.types.saturating_mul(self.keys_per_type);
        if total_keys > MAX_KEYS {
            return Err(SettingError::TooMany {
                what: "--types x --keys-per-type",
                value: format!("{} x {} = {total_keys}", self.types, self.keys_per_type),
                max: MAX_KEYS,
                why: "the keys of many-types",
            });
        }
        let most_keys = self.stateful_keys.iter().copied().max().unwrap_or(0);
        let state = most_keys.saturating_mul(self.state_kib.saturating_mul(1024));
        if state > MAX_STATE_BYTES {
            return Err(SettingError::TooMany {
                what: "--stateful-keys x --state-kib",
                value: format!("{most_keys} x {} KiB = {state} bytes", self.state_kib),
                max: MAX_STATE_BYTES,
                why: "the state stateful allocates",
            });
        }
        if self.expand_to <= self.partitions {
            return Err(SettingError::OutOfRange {
                flag: "expand-to",
                value: self.expand_to.to_string(),
                expected: format!(
                    "more than --partitions ({}): pipeline-expand grows the log from that many",
                    self.partitions
                ),
            });
        }
        if self.poison > self.pipeline_records {
            return Err(SettingError::TooMany {
                what: "--poison",
                value: self.poison.to_string(),
                max: self.pipeline_records,
                why: "poison records are records of the log (--pipeline-records)",
            });
        }
        if self.crash_after > self.pipeline_records {
            return Err(SettingError::TooMany {
                what: "--crash-after",
                value: self.crash_after.to_string(),
                max: self.pipeline_records,
                why: "pipeline-crash's consumer dies after that many completions, which must \
                      not pass the records the log holds (--pipeline-records)",
            });
        }
        Ok(())
    }
}

/// The most state `stateful` allocates (4 GiB).
pub const MAX_STATE_BYTES: usize = 1 << 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_quick_values_are_valid_and_quick_is_smaller() {
        Sizes::standard().validate().unwrap();
        Sizes::quick().validate().unwrap();
        assert!(Sizes::quick().messages < Sizes::standard().messages);
        let flags: Vec<_> = Sizes::RANGES.iter().map(|range| range.flag).collect();
        let mut unique = flags.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), flags.len(), "a flag is in two rows: {flags:?}");
    }

    #[test]
    fn every_size_is_shown_by_a_scenario() {
        let sizes = Sizes::standard();
        let shown: Vec<&str> = ScenarioId::ALL
            .iter()
            .flat_map(|&scenario| sizes.flags_of(scenario))
            .map(|(flag, _)| flag)
            .collect();
        for range in Sizes::RANGES {
            assert!(shown.contains(&range.flag), "--{} is shown by no scenario", range.flag);
        }
    }

    #[test]
    fn a_size_missing_from_a_file_reads_as_the_value_it_measured_with() {
        let recorded = serde_json::to_value(Sizes::standard()).unwrap();
        for range in Sizes::RANGES {
            let field = range.flag.replace('-', "_");
            let mut doctored = recorded.clone();
            assert!(doctored.as_object_mut().unwrap().remove(&field).is_some(), "{field}");
            let read: Sizes = serde_json::from_value(doctored).unwrap();
            assert_eq!(read, Sizes::standard(), "a file without `{field}`");
            let mut null = recorded.clone();
            null[&field] = serde_json::Value::Null;
            assert_eq!(serde_json::from_value::<Sizes>(null).unwrap(), Sizes::standard());
        }
        assert_eq!(Sizes::before_recorded(false), Sizes::standard());
        assert_eq!(Sizes::before_recorded(true), Sizes::quick());
    }

    #[test]
    fn flags_replace_only_the_sizes_they_give() {
        let mut sizes = Sizes::quick();
        let args = SizeArgs { keys: Some(vec![7]), loads: Some(vec![0.3]), ..SizeArgs::default() };
        args.apply(&mut sizes);
        assert_eq!(
            (sizes.keys.as_slice(), sizes.loads.as_slice()),
            ([7].as_slice(), [0.3].as_slice())
        );
        assert_eq!(Sizes { keys: vec![7], loads: vec![0.3], ..Sizes::quick() }, sizes);
    }
}
