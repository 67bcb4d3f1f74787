//! `keyed-bench compare`: clap-derived raw values, then a `TryFrom` into the validated
//! [`CompareConfig`].

use std::path::PathBuf;

use crate::compare::{
    CompareConfig, Correction, Format, Options, ALPHA_RANGE, DEFAULT_ALPHA, DEFAULT_METRICS,
    DEFAULT_THRESHOLD_PCT, REGRESSION_RANGE, THRESHOLD_RANGE,
};
use crate::limits::{parse_list, SettingError};

/// The results file a folder holds.
const RESULTS_FILE: &str = "results.json";

/// Flags of `keyed-bench compare`.
#[derive(clap::Args, Clone, Debug)]
pub struct CompareArgs {
    /// The baseline run: its results file (`DIR/results.json`) or the folder that holds it.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The run judged against A: its results file or the folder that holds it.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Metrics to compare, comma-separated, each once, or `all`: throughput (messages/s,
    /// higher is better), elapsed (seconds per repetition) and p99 (each repetition's
    /// 99th-percentile latency), both lower is better. Any other metric of docs/results.md
    /// by name (efficiency, bystander_p99, ...). Pipeline cells paired across the
    /// transport (an embedded run against a Kafka run) show their own figures whatever it
    /// says.
    #[arg(long, default_value = "all", value_name = "m,n|all")]
    pub metric: String,
    /// Significance level of the two-sided Welch's t-test on the samples' logarithms
    /// [0.0001..=0.5].
    #[arg(long, default_value_t = DEFAULT_ALPHA, allow_negative_numbers = true)]
    pub alpha: f64,
    /// Correct the p-values for the number of rows judged: `holm` (Holm's step-down
    /// method: the chance that any unchanged row reads as changed stays at most --alpha) or
    /// `none` (each row at --alpha on its own).
    #[arg(long, value_enum, default_value_t = Correction::None)]
    pub correction: Correction,
    /// The least change of the median, in percent, that reads as faster or slower; a
    /// significant change within it reads as within noise [0..=100].
    #[arg(long, default_value_t = DEFAULT_THRESHOLD_PCT, value_name = "PCT", allow_negative_numbers = true)]
    pub threshold: f64,
    /// Exit 1 when some cell's verdict is slower by more than PCT percent (the fall in
    /// throughput, the rise in elapsed time or p99) [0..=1000]. Without it, slower cells
    /// still exit 0.
    #[arg(long, value_name = "PCT", allow_negative_numbers = true)]
    pub fail_on_regression: Option<f64>,
}

/// `value` of `--{flag}` if it lies in `range`, else the error naming it.
pub(crate) fn in_range(
    flag: &'static str,
    value: f64,
    range: (f64, f64),
) -> Result<f64, SettingError> {
    if value >= range.0 && value <= range.1 {
        Ok(value)
    } else {
        Err(SettingError::OutOfRange {
            flag,
            value: value.to_string(),
            expected: format!("in {}..={}", range.0, range.1),
        })
    }
}

/// Compare arguments that cannot work.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum CompareArgsError {
    /// A flag out of its range, or a bad `--metric` list.
    #[error(transparent)]
    Setting(#[from] SettingError),
    /// A results path given as an empty string.
    #[error("the path of {0} is empty; give a results file or the folder that holds it")]
    Empty(&'static str),
}

/// A results path as given, or the results file of a folder; an empty one is rejected.
fn results_path(which: &'static str, given: PathBuf) -> Result<PathBuf, CompareArgsError> {
    if given.as_os_str().is_empty() {
        return Err(CompareArgsError::Empty(which));
    }
    Ok(if given.is_dir() { given.join(RESULTS_FILE) } else { given })
}

impl TryFrom<CompareArgs> for CompareConfig {
    type Error = CompareArgsError;

    fn try_from(args: CompareArgs) -> Result<Self, CompareArgsError> {
        let options = Options {
            alpha: in_range("alpha", args.alpha, ALPHA_RANGE)?,
            threshold_pct: in_range("threshold", args.threshold, THRESHOLD_RANGE)?,
            metrics: parse_list("metric", &args.metric, &DEFAULT_METRICS)?,
            correction: args.correction,
        };
        let fail_on_regression = args
            .fail_on_regression
            .map(|pct| in_range("fail-on-regression", pct, REGRESSION_RANGE))
            .transpose()?;
        Ok(Self {
            a: results_path("A", args.a)?,
            b: results_path("B", args.b)?,
            options,
            format: args.format,
            fail_on_regression,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Metric;

    fn args() -> CompareArgs {
        CompareArgs {
            a: "a.json".into(),
            b: "b.json".into(),
            format: Format::Text,
            metric: "all".into(),
            alpha: DEFAULT_ALPHA,
            correction: Correction::None,
            threshold: DEFAULT_THRESHOLD_PCT,
            fail_on_regression: None,
        }
    }

    #[test]
    fn defaults_and_ranges() {
        let config = CompareConfig::try_from(args()).unwrap();
        assert_eq!(config.options, Options::default());
        assert_eq!((config.a, config.fail_on_regression), (PathBuf::from("a.json"), None));
        let error = |args: CompareArgs| CompareConfig::try_from(args).unwrap_err().to_string();
        assert_eq!(
            error(CompareArgs { fail_on_regression: Some(-1.0), ..args() }),
            "--fail-on-regression must be in 0..=1000, got -1"
        );
        assert_eq!(
            error(CompareArgs { fail_on_regression: Some(f64::NAN), ..args() }),
            "--fail-on-regression must be in 0..=1000, got NaN"
        );
        assert_eq!(
            error(CompareArgs { alpha: 0.7, ..args() }),
            "--alpha must be in 0.0001..=0.5, got 0.7"
        );
        assert_eq!(
            error(CompareArgs { threshold: 101.0, ..args() }),
            "--threshold must be in 0..=100, got 101"
        );
        assert!(error(CompareArgs { metric: "p99,p99".into(), ..args() }).contains("twice"));
        assert!(error(CompareArgs { metric: "p95".into(), ..args() }).contains("`p95`"));
        assert!(error(CompareArgs { a: "".into(), ..args() }).contains("path of A is empty"));
        let some = CompareConfig::try_from(CompareArgs {
            metric: "p99,throughput".into(),
            fail_on_regression: Some(10.0),
            ..args()
        })
        .unwrap();
        assert_eq!(some.options.metrics, [Metric::P99, Metric::Throughput]);
        assert_eq!(some.fail_on_regression, Some(10.0));
        let holm = CompareConfig::try_from(CompareArgs { correction: Correction::Holm, ..args() })
            .unwrap();
        assert_eq!(holm.options.correction, Correction::Holm);
    }
}
