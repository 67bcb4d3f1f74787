//! `keyed-bench ab`: clap-derived raw values, then a `TryFrom` into the validated
//! [`AbConfig`]. The run flags after BASE are checked here as `keyed-bench run` would check
//! them, so that a bad one is refused before anything is built or measured.

use std::path::PathBuf;

use super::compare::in_range;
use super::run::RunArgs;
use crate::ab::{AbConfig, DEFAULT_OUT, DEFAULT_ROUNDS, OWN_RUN_FLAGS, ROUNDS_RANGE};
use crate::compare::{
    Correction, Options, ALPHA_RANGE, DEFAULT_ALPHA, DEFAULT_METRICS, DEFAULT_THRESHOLD_PCT,
    REGRESSION_RANGE, THRESHOLD_RANGE,
};
use crate::config::RunConfig;
use crate::limits::{parse_list, SettingError};
use crate::results::Metric;

/// Flags of `keyed-bench ab`.
#[derive(clap::Args, Clone, Debug)]
pub struct AbArgs {
    /// The base build: a commit of the repository of the working directory (a hash, a
    /// branch, a tag, HEAD~1), built in a cached worktree with this binary's profile,
    /// features and rustc. With --base-binary, only the name of what that binary was built
    /// from.
    #[arg(value_name = "BASE")]
    pub base: String,
    /// Rounds, each of which runs the cells once with the base binary, then once with this
    /// one [3..=100]. While void rounds leave a cell fewer than 3 valid samples on a side,
    /// more rounds run, up to twice this.
    #[arg(long, default_value_t = DEFAULT_ROUNDS)]
    pub rounds: usize,
    /// Metrics to compare, comma-separated, each once: throughput (messages/s), elapsed
    /// (seconds per round), p99 (each round's 99th-percentile latency) and bystander_p99
    /// (its bystanders', in cells with troubled keys), or `all`. Every
    /// cell and metric compared counts in the Holm correction.
    #[arg(long, default_value = "throughput", value_name = "m,n|all")]
    pub metric: String,
    /// Significance level of the whole comparison: the two-sided Welch's t-test's
    /// p-values are Holm-corrected for the cells and metrics compared [0.0001..=0.5].
    #[arg(long, default_value_t = DEFAULT_ALPHA)]
    pub alpha: f64,
    /// The least change of the median, in percent, that reads as faster or slower
    /// [0..=100].
    #[arg(long, default_value_t = DEFAULT_THRESHOLD_PCT, value_name = "PCT")]
    pub threshold: f64,
    /// Exit 1 when some cell's verdict is slower by more than PCT percent [0..=1000].
    /// Otherwise exit 3 (inconclusive) when some cell has fewer than 3 valid samples on a
    /// side after every round (void rounds: the machine was busy), which it cannot judge.
    #[arg(long, value_name = "PCT")]
    pub fail_on_regression: Option<f64>,
    /// Output folder: the report, each side's merged results and every round's run. A
    /// folder an earlier comparison wrote is replaced; one with other files is refused.
    #[arg(long, default_value = DEFAULT_OUT)]
    pub out: PathBuf,
    /// A prebuilt base binary (a keyed-bench of the same rustc and profile): nothing is
    /// built, and BASE only names it in the report.
    #[arg(long, value_name = "PATH")]
    pub base_binary: Option<PathBuf>,
    /// Where BASE's worktree, the shared build folder and the built binaries are kept
    /// [default: target/ab under the repository's root].
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Flags of `keyed-bench run` that select and size the cells (--scenario, --strategy,
    /// --quick, sizes...), after BASE and ab's own flags, given to both binaries as they
    /// are. Not --out, --repeat, --resume, --dry-run or --overwrite: each round sets them.
    #[arg(value_name = "RUN FLAGS", trailing_var_arg = true, allow_hyphen_values = true)]
    pub run: Vec<String>,
}

/// ab's own flags, which a run does not know.
const AB_FLAGS: [&str; 7] =
    ["rounds", "metric", "alpha", "threshold", "fail-on-regression", "base-binary", "cache"];

/// `keyed-bench ab` arguments that cannot work.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum AbArgsError {
    /// A flag out of its range, a bad `--metric` list, or a run flag's bad value.
    #[error(transparent)]
    Setting(#[from] SettingError),
    /// A run flag `keyed-bench run` does not accept.
    #[error("run flags: {0} (`keyed-bench run --help` lists them)")]
    RunFlag(String),
    /// A run flag that each round sets itself.
    #[error(
        "--{0} is not a run flag ab passes on: each round runs --repeat 1 into \
         OUT/rounds/<side>-<round>; give ab's own --out before BASE to move the output"
    )]
    OwnFlag(String),
    /// One of ab's own flags after the run flags.
    #[error("--{0} is a flag of ab, not of run: give it before the run flags")]
    Late(String),
    /// BASE given as an empty string.
    #[error("BASE is empty; give a commit (a hash, a branch, a tag)")]
    EmptyBase,
}

/// The flag names a list of words gives (`--workers 4` and `--workers=4` give `workers`).
fn flag_names(words: &[String]) -> impl Iterator<Item = &str> {
    words
        .iter()
        .filter_map(|word| word.strip_prefix("--"))
        .map(|flag| flag.split_once('=').map_or(flag, |(name, _)| name))
}

/// Checks the run flags as `keyed-bench run` would, after refusing those each round sets
/// and ab's own given too late.
fn check_run_flags(words: &[String]) -> Result<(), AbArgsError> {
    for name in flag_names(words) {
        if OWN_RUN_FLAGS.contains(&name) {
            return Err(AbArgsError::OwnFlag(name.to_owned()));
        }
        if AB_FLAGS.contains(&name) {
            return Err(AbArgsError::Late(name.to_owned()));
        }
    }
    #[derive(clap::Parser)]
    #[command(name = "keyed-bench run")]
    struct Run {
        #[command(flatten)]
        run: RunArgs,
    }
    let program = std::iter::once("keyed-bench run");
    let parsed =
        <Run as clap::Parser>::try_parse_from(program.chain(words.iter().map(String::as_str)))
            .map_err(|error| {
                let text = error.render().to_string();
                let first = text.lines().next().unwrap_or_default();
                AbArgsError::RunFlag(first.trim_start_matches("error: ").to_owned())
            })?;
    let command = crate::suite::command_line(words.iter().map(String::as_str));
    RunConfig::try_from((parsed.run, command))?;
    Ok(())
}

/// The `--metric` list: metrics each round samples (throughput, elapsed, p99,
/// bystander_p99) only.
fn sampled_metrics(given: &str) -> Result<Vec<Metric>, SettingError> {
    let metrics = parse_list("metric", given, &DEFAULT_METRICS)?;
    match metrics.iter().find(|metric| !DEFAULT_METRICS.contains(metric)) {
        Some(other) => Err(SettingError::Unknown {
            flag: "metric",
            message: format!(
                "`{other}` is not a figure each round samples; expected throughput, elapsed, \
                 p99, bystander_p99 or all"
            ),
        }),
        None => Ok(metrics),
    }
}

impl TryFrom<AbArgs> for AbConfig {
    type Error = AbArgsError;

    fn try_from(args: AbArgs) -> Result<Self, AbArgsError> {
        if args.base.is_empty() {
            return Err(AbArgsError::EmptyBase);
        }
        let (low, high) = ROUNDS_RANGE;
        if !(low..=high).contains(&args.rounds) {
            return Err(SettingError::OutOfRange {
                flag: "rounds",
                value: args.rounds.to_string(),
                expected: format!("in {low}..={high}"),
            }
            .into());
        }
        let options = Options {
            alpha: in_range("alpha", args.alpha, ALPHA_RANGE)?,
            threshold_pct: in_range("threshold", args.threshold, THRESHOLD_RANGE)?,
            metrics: sampled_metrics(&args.metric)?,
            correction: Correction::Holm,
        };
        let fail_on_regression = args
            .fail_on_regression
            .map(|pct| in_range("fail-on-regression", pct, REGRESSION_RANGE))
            .transpose()?;
        check_run_flags(&args.run)?;
        Ok(Self {
            base: args.base,
            base_binary: args.base_binary,
            run_flags: args.run,
            rounds: args.rounds,
            options,
            fail_on_regression,
            out: args.out,
            cache: args.cache,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `keyed-bench ab WORDS` as clap parses it.
    fn parse(words: &[&str]) -> Result<AbArgs, clap::Error> {
        #[derive(clap::Parser)]
        struct Ab {
            #[command(flatten)]
            ab: AbArgs,
        }
        let program = std::iter::once("keyed-bench ab");
        <Ab as clap::Parser>::try_parse_from(program.chain(words.iter().copied())).map(|p| p.ab)
    }

    fn config(words: &[&str]) -> Result<AbConfig, AbArgsError> {
        AbConfig::try_from(parse(words).expect("clap accepts the words"))
    }

    #[test]
    fn defaults_and_run_flags_after_base() {
        let config = config(&["main"]).unwrap();
        assert_eq!((config.base.as_str(), config.rounds), ("main", DEFAULT_ROUNDS));
        assert_eq!(config.options.metrics, [Metric::Throughput]);
        assert_eq!(config.options.correction, Correction::Holm);
        assert_eq!(config.out, PathBuf::from("results/ab"));
        assert!(config.run_flags.is_empty() && config.base_binary.is_none());
        let words =
            ["main", "--rounds", "8", "--fail-on-regression", "10", "--scenario", "uniform,zipf"];
        let config = super::tests::config(&words).unwrap();
        assert_eq!((config.rounds, config.fail_on_regression), (8, Some(10.0)));
        assert_eq!(config.run_flags, ["--scenario", "uniform,zipf"]);
        // ab's flags before BASE, run flags with `=`, and `--` before them work too.
        let words =
            ["--metric", "throughput,p99", "HEAD~1", "--", "--strategy=keyed-mailbox", "--quick"];
        let config = super::tests::config(&words).unwrap();
        assert_eq!(config.options.metrics, [Metric::Throughput, Metric::P99]);
        assert_eq!(config.run_flags, ["--strategy=keyed-mailbox", "--quick"]);
    }

    #[test]
    fn bad_input_names_the_flag() {
        let error = |words: &[&str]| config(words).unwrap_err().to_string();
        assert_eq!(error(&["main", "--rounds", "2"]), "--rounds must be in 3..=100, got 2");
        assert_eq!(error(&["main", "--alpha", "0.9"]), "--alpha must be in 0.0001..=0.5, got 0.9");
        let metric = error(&["main", "--metric", "efficiency"]);
        assert!(metric.starts_with("--metric: `efficiency` is not a figure"), "{metric}");
        assert!(error(&["main", "--metric", "p95"]).contains("`p95`"));
        assert_eq!(error(&[""]), "BASE is empty; give a commit (a hash, a branch, a tag)");
        let own = error(&["main", "--scenario", "uniform", "--repeat", "5"]);
        assert!(own.starts_with("--repeat is not a run flag ab passes on"), "{own}");
        assert!(error(&["main", "--quick", "--out=x"]).starts_with("--out is not a run flag"));
        // Before any run flag, --out is ab's own.
        assert_eq!(config(&["main", "--out=x"]).unwrap().out, PathBuf::from("x"));
        let late = error(&["main", "--scenario", "uniform", "--rounds", "8"]);
        assert_eq!(late, "--rounds is a flag of ab, not of run: give it before the run flags");
        let unknown = error(&["main", "--scenario", "uniform", "--bogus"]);
        assert!(unknown.starts_with("run flags: unexpected argument '--bogus'"), "{unknown}");
        assert!(unknown.ends_with("(`keyed-bench run --help` lists them)"), "{unknown}");
        let value = error(&["main", "--scenario", "nope"]);
        assert!(value.starts_with("--scenario") && value.contains("`nope`"), "{value}");
        let value = error(&["main", "--workers", "0"]);
        assert!(value.contains("--workers"), "{value}");
    }
}
