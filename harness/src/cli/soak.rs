//! `keyed-bench soak`: clap-derived raw values, then a `TryFrom` into the validated
//! [`SoakConfig`].

use clap::Args;
use strategies::StrategyConfig;

use super::flags::{number, parse_duration};
use super::parse_strategies;
use crate::config::{range_of, SettingError};
use crate::limits::{check_in, check_setting, NumberParser};
use crate::soak::{SoakConfig, DEFAULT_ROUND_MESSAGES, DEFAULT_STRATEGIES};

/// Flags of `keyed-bench soak`.
#[derive(Args, Clone, Debug, PartialEq)]
pub struct SoakArgs {
    /// Strategy to soak; repeat the flag (or separate ids with commas) for several, or
    /// `all` [default: keyed-mailbox and work-stealing].
    #[arg(long = "strategy", value_name = "ID", value_delimiter = ',')]
    pub strategies: Vec<String>,
    /// Distinct keys of the churn phase; each gets 3 messages, so its mailbox is created
    /// and retired.
    #[arg(long, default_value_t = 1_000_000, value_parser = number::<usize>("keys"),
          allow_negative_numbers = true)]
    pub keys: usize,
    /// Length of the mixed soak of each strategy: numbers with units, from 1ms to 24h
    /// (`30s`, `2m`, `1.5h`, `1h 30m`).
    #[arg(long, default_value = "30s")]
    pub duration: String,
    /// Worker threads per pool [default: available cores].
    #[arg(long, value_parser = number::<usize>("workers"), allow_negative_numbers = true)]
    pub workers: Option<usize>,
    /// Admission window: most unfinished messages at once, so also the most mailboxes
    /// alive at once during the churn [1..=2097151].
    #[arg(long, default_value_t = StrategyConfig::DEFAULT_MAX_IN_FLIGHT,
          value_parser = number::<usize>("window"), allow_negative_numbers = true)]
    pub window: usize,
    /// Seed of the mixed soak's key order and jobs (the same for every strategy).
    #[arg(long, default_value_t = 42, value_parser = NumberParser::<u64>::whole("seed", u64::MAX),
          allow_negative_numbers = true)]
    pub seed: u64,
}

impl TryFrom<SoakArgs> for SoakConfig {
    type Error = SettingError;

    fn try_from(args: SoakArgs) -> Result<Self, SettingError> {
        let mut strategies = parse_strategies(&args.strategies)?;
        if strategies.is_empty() {
            strategies = DEFAULT_STRATEGIES.to_vec();
        }
        check_in(&range_of("keys").expect("--keys has a range"), args.keys)?;
        let workers = args.workers.unwrap_or_else(crate::measure::system::cores);
        check_setting("workers", workers)?;
        check_setting("window", args.window)?;
        let duration = parse_duration(&args.duration).ok_or_else(|| SettingError::OutOfRange {
            flag: "duration",
            value: format!("`{}`", args.duration),
            expected: "numbers with units (ms, s, m, h) from 1ms to 24h, e.g. 30s or 1h 30m".into(),
        })?;
        Ok(Self {
            strategies,
            keys: args.keys,
            duration,
            workers,
            window: args.window,
            seed: args.seed,
            round_messages: DEFAULT_ROUND_MESSAGES,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use strategies::StrategyId;

    fn args() -> SoakArgs {
        SoakArgs {
            strategies: Vec::new(),
            keys: 1_000_000,
            duration: "30s".into(),
            workers: Some(2),
            window: 256,
            seed: 42,
        }
    }

    #[test]
    fn defaults_and_repeated_strategies() {
        let config = SoakConfig::try_from(args()).unwrap();
        assert_eq!(config.strategies, DEFAULT_STRATEGIES);
        assert_eq!(config.duration, Duration::from_secs(30));
        let strategies = vec!["tokio".into(), "rayon".into()];
        let config = SoakConfig::try_from(SoakArgs { strategies, ..args() }).unwrap();
        assert_eq!(config.strategies, [StrategyId::Tokio, StrategyId::Rayon]);
        let strategies = vec!["tokio".into(), "rayon,tokio".into()];
        let error = SoakConfig::try_from(SoakArgs { strategies, ..args() }).unwrap_err();
        assert!(error.to_string().contains("`tokio` twice"), "{error}");
    }

    #[test]
    fn bad_values_are_named() {
        let cases = [
            (SoakArgs { keys: 0, ..args() }, "--keys "),
            (SoakArgs { workers: Some(0), ..args() }, "--workers "),
            (SoakArgs { window: 0, ..args() }, "--window "),
            (SoakArgs { duration: "soon".into(), ..args() }, "--duration "),
            (SoakArgs { strategies: vec!["keyed".into()], ..args() }, "unknown strategy `keyed`"),
        ];
        for (case, expected) in cases {
            let error = SoakConfig::try_from(case).unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }
}
