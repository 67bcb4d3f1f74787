//! What a setting may be: the range of every numeric flag, the limits on products of
//! settings, the checks, and [`SettingError`], the typed error every check returns.
//!
//! This is the floor of the harness: it depends on nothing else in it, so the workload
//! sizes, the run settings and every command can check their values the same way. The
//! ranges of the workload sizes are declared with the sizes themselves
//! (`workload/scenario/sizes.rs`); the ranges of the strategy and run settings are here.

pub mod settings;

use strategies::{StrategyConfig, MAX_WINDOW};

use settings::setting_ranges;
pub use settings::{RunSetting, RUN_SETTINGS};

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

    /// `min..=max`, as the help text and error messages write it.
    pub fn text(&self) -> String {
        format!("{}..={}", self.min, self.max)
    }

    /// Whether `value` is in the range (NaN never is).
    pub fn contains(&self, value: f64) -> bool {
        value >= self.min && value <= self.max
    }
}

// `SETTING_RANGES`: the range of each ranged run setting of the table, then `--revalidate`'s.
settings::run_settings!(all => setting_ranges with FlagRange::int("revalidate", 0, MAX_REVALIDATE));

/// The most times `--revalidate` measures a void cell again.
pub const MAX_REVALIDATE: usize = 10;

/// The most producer threads `--producers` starts.
pub const MAX_PRODUCERS: usize = 64;

/// A value that cannot be used, named by the flag that sets it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SettingError {
    /// An external design's flag or driver is not usable (`--external`).
    #[error("{0}")]
    External(String),
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
    /// A value of a flag that this build cannot run.
    #[error("--{flag} {value} is not in this build: build it with {how}")]
    Unbuilt {
        /// The flag.
        flag: &'static str,
        /// The value.
        value: &'static str,
        /// How to build it.
        how: &'static str,
    },
    /// A command that this build cannot run.
    #[error("`keyed-bench {command}` is not in this build: build it with {how}")]
    UnbuiltCommand {
        /// The subcommand.
        command: &'static str,
        /// How to build it.
        how: &'static str,
    },
    /// A pipeline log whose fullest partition the Kafka mock cluster would not keep whole.
    #[error(
        "--pipeline-records {records} over --partitions {partitions} puts about {bytes} bytes \
         in the fullest partition under --transport kafka, more than the mock cluster keeps of \
         one ({max} bytes): lower --pipeline-records or raise --partitions"
    )]
    MockVolume {
        /// `--pipeline-records`.
        records: usize,
        /// `--partitions`.
        partitions: u32,
        /// The fullest partition's estimated bytes.
        bytes: u64,
        /// What the mock keeps of a partition.
        max: u64,
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
    /// A flag that no longer exists, with what to use instead.
    #[error("--{flag} was removed: {why}; use {instead}")]
    Removed {
        /// The flag.
        flag: &'static str,
        /// Why it went.
        why: &'static str,
        /// What to give instead.
        instead: &'static str,
    },
    /// A Kafka setting that cannot be used, or a cluster that refused the run, in the
    /// broker's or librdkafka's words.
    #[error("{0}")]
    Kafka(String),
    /// A setting recorded in a results file (its `meta`) that the flag would reject.
    #[error("the recorded run settings are not valid ({0})")]
    Recorded(Box<SettingError>),
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
pub fn parse_list<T>(flag: &'static str, given: &str, all: &[T]) -> Result<Vec<T>, SettingError>
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
            return Err(SettingError::EmptyEntry { flag, given: given.to_owned() });
        }
        if item == "all" {
            return Err(SettingError::Unknown {
                flag,
                message: format!(
                    "`all` selects every id and cannot be listed with others in `{given}`"
                ),
            });
        }
        let id = item
            .parse::<T>()
            .map_err(|error| SettingError::Unknown { flag, message: error.to_string() })?;
        if ids.contains(&id) {
            return Err(SettingError::Duplicate { flag, value: id.to_string() });
        }
        ids.push(id);
    }
    Ok(ids)
}

/// A flag value as a number, to compare with its [`FlagRange`].
pub trait FlagValue: Copy + std::fmt::Display {
    /// Whether the type holds whole numbers only.
    const INTEGER: bool;

    /// The value as `f64` (exact for every value inside any range, and for every value
    /// outside one still outside it).
    fn as_f64(self) -> f64;
}

macro_rules! flag_value {
    ($($type:ty: $integer:literal),*) => {
        $(impl FlagValue for $type {
            const INTEGER: bool = $integer;
            fn as_f64(self) -> f64 { self as f64 }
        })*
    };
}
flag_value!(usize: true, u64: true, u32: true, u16: true, f64: false);

/// How clap reads the value of a numeric flag: as `T` where it can; a number `T` cannot
/// hold (a negative count, a fraction of one, one past the type's largest value) is refused
/// as the flag's check refuses a number outside its range, naming the flag and what it
/// accepts. A value that is no number at all gets clap's own message, which names the flag
/// too. Every numeric flag is declared with it and with `allow_negative_numbers` (a list
/// flag with `allow_hyphen_values`, since `-1,2` is no number), so that `--workers -1`
/// reaches it instead of reading as an unknown flag `-1`.
#[derive(Clone, Debug)]
pub struct NumberParser<T> {
    /// The flag, without its dashes.
    flag: &'static str,
    /// What the flag accepts, as its range error states it (`a whole number in 1..=4096`).
    expected: String,
    value: std::marker::PhantomData<fn() -> T>,
}

impl<T> NumberParser<T> {
    /// The parser of the whole-number flag whose range is `range` (every number parses as
    /// a float flag's value, for its check to judge).
    pub fn new(range: FlagRange) -> Self {
        let expected = format!("a whole number in {}", range.text());
        Self { flag: range.flag, expected, value: Default::default() }
    }

    /// The parser of a whole-number flag with no range but its type's, `0..=max`.
    pub fn whole(flag: &'static str, max: u64) -> Self {
        Self { flag, expected: format!("a whole number in 0..={max}"), value: Default::default() }
    }
}

impl<T> clap::builder::TypedValueParser for NumberParser<T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: Into<Box<dyn std::error::Error + Send + Sync + 'static>>,
{
    type Value = T;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<T, clap::Error> {
        let text = value.to_str();
        if let Some(Ok(number)) = text.map(str::parse::<T>) {
            return Ok(number);
        }
        match text {
            Some(text) if text.parse::<f64>().is_ok() => {
                let refused = SettingError::OutOfRange {
                    flag: self.flag,
                    value: text.to_owned(),
                    expected: self.expected.clone(),
                };
                Err(clap::Error::raw(
                    clap::error::ErrorKind::ValueValidation,
                    format!("{refused}\n"),
                )
                .with_cmd(cmd))
            }
            _ => (|text: &str| text.parse::<T>()).parse_ref(cmd, arg, value),
        }
    }
}

/// Checks `value` against `range`.
pub fn check_in<T: FlagValue>(range: &FlagRange, value: T) -> Result<(), SettingError> {
    if range.contains(value.as_f64()) {
        Ok(())
    } else {
        Err(SettingError::OutOfRange {
            flag: range.flag,
            value: value.to_string(),
            expected: format!("in {}", range.text()),
        })
    }
}

/// Checks every value of a list flag against `range`: at least one, each in range, none
/// twice.
pub fn check_list_in<T: FlagValue + PartialEq>(
    range: &FlagRange,
    values: &[T],
) -> Result<(), SettingError> {
    let flag = range.flag;
    if values.is_empty() {
        return Err(SettingError::OutOfRange {
            flag,
            value: "an empty list".into(),
            expected: "at least one value".into(),
        });
    }
    for (index, &value) in values.iter().enumerate() {
        check_in(range, value)?;
        if values[..index].contains(&value) {
            return Err(SettingError::Duplicate { flag, value: value.to_string() });
        }
    }
    Ok(())
}

/// The range of the setting `flag` (one of [`SETTING_RANGES`]).
fn setting_range(flag: &str) -> FlagRange {
    SETTING_RANGES
        .iter()
        .copied()
        .find(|range| range.flag == flag)
        .unwrap_or_else(|| unreachable!("--{flag} has a SETTING_RANGES entry"))
}

/// Checks `value` of the setting `--{flag}` against its documented range.
pub fn check_setting<T: FlagValue>(flag: &'static str, value: T) -> Result<(), SettingError> {
    check_in(&setting_range(flag), value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_contains_its_ends_and_never_nan() {
        let range = FlagRange::int("workers", 1, 4);
        assert!(range.contains(1.0) && range.contains(4.0));
        assert!(!range.contains(0.0) && !range.contains(4.5) && !range.contains(f64::NAN));
        assert_eq!(range.text(), "1..=4");
    }

    #[test]
    fn checks_name_the_flag_and_the_range() {
        let error = check_setting("repeat", 0usize).unwrap_err().to_string();
        assert_eq!(error, "--repeat must be in 1..=1000, got 0");
        let range = FlagRange { flag: "loads", min: 0.01, max: 2.0, integer: false };
        let error = check_list_in(&range, &[0.5, 0.5]).unwrap_err().to_string();
        assert_eq!(error, "--loads names `0.5` twice; give each value once");
        let error = check_list_in::<f64>(&range, &[]).unwrap_err().to_string();
        assert_eq!(error, "--loads must be at least one value, got an empty list");
    }
}
