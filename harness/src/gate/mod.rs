//! Performance gates: rules from a committed TOML file, evaluated on one run's results.
//!
//! Three kinds of rule:
//! - **absolute**: a metric against a number, or against `workers` x `factor`
//!   (correctness counts are zero; shared pools start exactly `workers` threads);
//! - **relative**: a metric of one strategy against `factor` x the same metric of another
//!   strategy *from the same run* (the default on shared runners: both sides see the same
//!   machine, load and noise);
//! - **baseline**: a machine-independent metric (efficiency, or `throughput_vs_inline`)
//!   against a committed baseline file, within a tolerance.
//!
//! A failing wall-clock rule is measured again, up to `confirm` more times, by re-running
//! just the cells involved; it fails only if every measurement fails, and every measurement
//! is reported. Correctness and thread rules fail at once.
//!
//! # Layout
//!
//! - `rules`: the rules file, parsed and checked against the results it will judge;
//! - `metric`: the value of a rule's metric on one run (a metric of the registry, or a results
//!   field);
//! - `baseline`: the committed baseline file, read, checked and written;
//! - `evaluate`: every rule on every cell it matches, confirming failures by measuring again,
//!   after setting apart the rules about a scenario the results did not run;
//! - `render`: the checks (and the rules set apart) as text, Markdown or JSON;
//! - `incomplete`: an incomplete results file, refused or (`--allow-incomplete`) judged on
//!   the cells it has;
//! - `failed`: a results file with failed cells (`failed[]`): the gate fails, naming each.
//!
//! This module holds the command itself, [`run_gate`], over a validated [`GateConfig`]. It
//! only reads results: measuring a cell again is a closure its caller passes in.

mod baseline;
mod evaluate;
mod failed;
mod incomplete;
mod metric;
mod render;
mod rules;
#[cfg(test)]
mod testing;

use std::path::{Path, PathBuf};

use strategies::Design;

use crate::config::{RecordedError, RunConfig};
use crate::limits::SettingError;
use crate::results::{CellKey, ReadError, Results, RunResult};
use crate::workload::ScenarioId;

pub use baseline::{baseline_from, parse_baseline, read_baseline, Baseline, BASELINE_SCHEMA};
pub use evaluate::{evaluate, only_void, split_not_run, split_unbaselined, Check, NotRun, Rerun};
pub use render::{render, Format};
pub use rules::{parse_rules, read_rules, Kind, Limit, Op, Rule, Selection};

/// A gate input that cannot be used (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum GateInputError {
    /// The results file cannot be read or is not a results file.
    #[error(transparent)]
    Results(#[from] ReadError),
    /// The settings the results file records cannot be measured again.
    #[error("{path}: {error}; judge it without re-measuring with --confirm 0")]
    Recorded {
        /// The results file.
        path: String,
        /// What is wrong with its settings.
        error: SettingError,
    },
    /// The rules file cannot be read, or a rule cannot judge these results.
    #[error("{0}")]
    Rules(String),
    /// The baseline file cannot be read, or lacks a value a rule needs.
    #[error("{0}")]
    Baseline(String),
    /// The results file is incomplete (a run stopped before its last cell), and
    /// `--allow-incomplete` was not given (or `--update-baseline` was).
    #[error(
        "{path} is incomplete: {missing} of {planned} cells are missing ({}); finish the run \
         with `keyed-bench run --resume {folder}`, or judge the cells it has with \
         --allow-incomplete (a baseline is made only from a complete run)",
        stopped_by.as_ref().map_or_else(|| "the run did not say why it stopped".to_owned(), |by| format!("stopped by {by}"))
    )]
    Incomplete {
        /// The results file.
        path: String,
        /// The folder that holds it.
        folder: String,
        /// The cells missing.
        missing: usize,
        /// The cells the run planned.
        planned: usize,
        /// What stopped it (`meta.incomplete.stopped_by`).
        stopped_by: Option<String>,
    },
    /// `--update-baseline` on a results file with failed cells.
    #[error(
        "{path} holds failed cells ({}); a baseline is made only from a run whose every cell \
         ran: run them again with `keyed-bench run --resume {folder}`",
        cells.join(", ")
    )]
    Failed {
        /// The results file.
        path: String,
        /// The folder that holds it.
        folder: String,
        /// The failed cells.
        cells: Vec<String>,
    },
    /// The baseline file cannot be written (`--update-baseline`).
    #[error("cannot write {path}: {error}")]
    Write {
        /// The baseline file.
        path: String,
        /// Why (part of the message, so that every way of printing it says why).
        error: std::io::Error,
    },
}

fn rules_error(message: impl Into<String>) -> GateInputError {
    GateInputError::Rules(message.into())
}

fn baseline_error(message: impl Into<String>) -> GateInputError {
    GateInputError::Baseline(message.into())
}

/// The folder that holds the results file `path` (`.` for a bare file name): what
/// `keyed-bench run --resume` takes.
fn folder_of(path: &Path) -> String {
    let folder = path.parent().filter(|parent| !parent.as_os_str().is_empty());
    folder.unwrap_or(Path::new(".")).display().to_string()
}

/// Exit status of a gate whose rules held but where a wall-clock rule had only void
/// cells: inconclusive, measure again.
pub const ONLY_VOID: u8 = 3;

/// What a gate says where wall-clock `rules` had only void cells.
pub fn only_void_note(rules: &[String]) -> String {
    format!(
        "gate: inconclusive (exit {ONLY_VOID}): every cell of {} was void (the machine was \
         busy: see each cell's interference receipt); run again on a quieter machine",
        rules.iter().map(|rule| format!("`{rule}`")).collect::<Vec<_>>().join(", ")
    )
}

/// The most confirmation re-measurements `--confirm` may ask for.
pub const MAX_CONFIRM: usize = 10;

/// Re-measurements of a failing wall-clock rule unless `--confirm` says otherwise.
pub const DEFAULT_CONFIRM: usize = 2;

/// A validated `keyed-bench gate`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateConfig {
    /// The results file to judge.
    pub results: PathBuf,
    /// The rules and the baseline of the baseline rules.
    pub rules: Rules,
    /// Output format.
    pub format: Format,
    /// Re-measurements of a failing wall-clock rule before it fails (at most
    /// [`MAX_CONFIRM`]).
    pub confirm: usize,
    /// Write the baseline file from these results instead of judging them.
    pub update_baseline: bool,
    /// Judge an incomplete results file on the cells it has, instead of refusing it.
    pub allow_incomplete: bool,
}

/// The project's rules (`gates.toml`) and their baseline (`gates-baseline.json`), built into
/// the binary so that a design benchmarked from a crate of its own is judged as the
/// project's are.
pub const BUILT_IN_RULES: &str = include_str!("../../../gates.toml");
/// The baseline of [`BUILT_IN_RULES`].
pub const BUILT_IN_BASELINE: &str = include_str!("../../../gates-baseline.json");

/// Where a gate's rules and baseline come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rules {
    /// A rules file, and the baseline file of its baseline rules.
    File {
        /// The rules file.
        rules: PathBuf,
        /// The baseline file.
        baseline: PathBuf,
    },
    /// The project's rules and baseline, built in ([`BUILT_IN_RULES`]).
    BuiltIn,
}

impl Rules {
    /// The rules a gate uses when none are named: `gates.toml` (and the baseline beside
    /// it) in the working directory if there is one, as in this repository; else the
    /// built-in ones.
    pub fn default_here() -> Self {
        let rules = PathBuf::from("gates.toml");
        if rules.exists() {
            Self::File { rules, baseline: PathBuf::from("gates-baseline.json") }
        } else {
            Self::BuiltIn
        }
    }

    fn read(&self, results: &Results) -> Result<Vec<Rule>, GateInputError> {
        match self {
            Self::File { rules, .. } => read_rules(rules, results),
            Self::BuiltIn => {
                parse_rules(BUILT_IN_RULES, Path::new("(built-in gates.toml)"), results)
            }
        }
    }

    fn read_baseline(&self) -> Result<Baseline, GateInputError> {
        match self {
            Self::File { baseline, .. } => read_baseline(baseline),
            Self::BuiltIn => parse_baseline(
                BUILT_IN_BASELINE.as_bytes(),
                Path::new("(built-in gates-baseline.json)"),
            ),
        }
    }
}

/// What `keyed-bench gate` concluded.
#[derive(Debug)]
pub struct GateOutcome {
    /// The report in the chosen format (or a line about the written baseline).
    pub report: String,
    /// Whether every rule holds.
    pub pass: bool,
    /// The wall-clock rules whose every cell was void (their receipts say the machine was
    /// too busy): nothing of theirs was judged, so a pass is no pass (exit 3).
    pub only_void: Vec<String>,
}

/// Measures a cell's scenario parameter and sweep point again for the given strategies,
/// with the settings a run recorded: fresh results, or why it could not.
pub type Remeasure<'a> =
    dyn FnMut(&RunConfig, &Results, &CellKey, &[Design]) -> Result<Vec<RunResult>, String> + 'a;

/// Runs `keyed-bench gate`: reads everything (bad input is a [`GateInputError`]), judges,
/// and confirms a failing wall-clock rule with `remeasure`, which the caller supplies: the
/// gate itself only reads results. `on_rerun` hears of every confirmation, before it runs.
pub fn run_gate(
    config: &GateConfig,
    remeasure: &mut Remeasure<'_>,
    on_rerun: &mut dyn FnMut(&str),
) -> Result<GateOutcome, GateInputError> {
    let results = Results::read(&config.results)?;
    if !config.allow_incomplete || config.update_baseline {
        if let Some(refusal) = incomplete::refusal(&config.results, &results) {
            return Err(refusal);
        }
    }
    let unfinished = failed::refusal(&config.results, &results);
    if let Some(refusal) = unfinished.filter(|_| config.update_baseline) {
        return Err(refusal);
    }
    let recorded = recorded_config(config, &results)?;
    let rules = config.rules.read(&results)?;
    if config.update_baseline {
        let Rules::File { baseline: path, .. } = &config.rules else {
            return Err(rules_error(
                "--update-baseline writes the baseline of a rules file: give --rules",
            ));
        };
        let baseline = baseline_from(&results, &rules);
        let json = serde_json::to_vec_pretty(&baseline).expect("baseline serialises");
        crate::results::fs::write_atomically(path, &json)
            .map_err(|error| GateInputError::Write { path: path.display().to_string(), error })?;
        return Ok(GateOutcome {
            report: format!("wrote {} values to {}\n", baseline.values.len(), path.display()),
            pass: true,
            only_void: Vec::new(),
        });
    }
    let needs_baseline = rules.iter().any(|rule| rule.kind == Kind::Baseline);
    let baseline = needs_baseline.then(|| config.rules.read_baseline()).transpose()?;
    let mut rerun = |key: &CellKey, strategies: &[Design]| {
        let cell = format!("{} {}", key.scenario, key.full_param()).trim_end().to_owned();
        let Some(recorded) = &recorded else {
            on_rerun(&format!("cannot measure {cell} again: the results do not record sizes"));
            return None;
        };
        on_rerun(&format!(
            "confirming by measuring {cell} again ({} strategies)",
            strategies.len()
        ));
        match remeasure(recorded, &results, key, strategies) {
            Ok(runs) => Some(runs),
            Err(error) => {
                on_rerun(&format!("cannot measure {cell} again: {error}"));
                None
            }
        }
    };
    // The rules are judged on the cells there: a failed cell is as good as missing.
    let judged = failed::as_missing(&results);
    let (rules, mut not_judged) = incomplete::split_missing(rules, &judged);
    let (rules, mut not_run) = split_not_run(rules, &judged);
    let (rules, unbaselined) = split_unbaselined(rules, &judged, baseline.as_ref());
    not_run.extend(unbaselined);
    let checks = incomplete::evaluate_incomplete(
        &judged,
        &rules,
        baseline.as_ref(),
        config.confirm,
        &mut rerun,
        &mut not_judged,
    )?;
    let report = render(&checks, &not_run, config.format);
    let report = incomplete::with_note(report, config.format, &results, &not_judged);
    Ok(GateOutcome {
        report: failed::with_failures(report, config.format, &results, &not_judged),
        pass: checks.iter().all(|v| v.pass) && results.failed.is_empty(),
        only_void: only_void(&checks),
    })
}

/// The settings a confirmation measures cells again with: those the results file records,
/// checked as the command line's would be before anything runs on them; `None` where no
/// confirmation will run, or the file records no sizes.
fn recorded_config(
    config: &GateConfig,
    results: &Results,
) -> Result<Option<RunConfig>, GateInputError> {
    if config.confirm == 0 || config.update_baseline {
        return Ok(None);
    }
    let strategies = distinct(results.runs.iter().filter_map(|run| run.strategy.parse().ok()));
    let scenarios: Vec<ScenarioId> =
        distinct(results.runs.iter().filter_map(|run| run.scenario.parse().ok()));
    match RunConfig::from_recorded(&results.meta, scenarios, strategies) {
        Ok(config) => Ok(Some(config)),
        Err(RecordedError::NoSizes) => Ok(None),
        Err(RecordedError::Invalid(error)) => {
            let path = config.results.display().to_string();
            Err(GateInputError::Recorded { path, error })
        }
    }
}

/// The distinct values of `values`, in first-seen order.
fn distinct<T: PartialEq>(values: impl Iterator<Item = T>) -> Vec<T> {
    let mut seen = Vec::new();
    for value in values {
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::testing::{reference, rules};
    use super::*;

    #[test]
    fn inconclusive_is_one_exit_status_for_the_gate_and_compare() {
        assert_eq!(crate::compare::UNJUDGED, ONLY_VOID);
    }

    #[test]
    fn a_rule_about_a_scenario_not_run_does_not_apply_and_is_listed() {
        let results = reference();
        assert!(results.runs.iter().all(|run| run.scenario != "cold-command"));
        let text = r#"
            [[rule]]
            name = "cold commands"
            kind = "relative"
            metric = "throughput_per_s.median"
            scenario = "cold-command"
            strategies = ["keyed-mailbox"]
            of = "per-type-pool"
            op = ">="
            factor = 10

            [[rule]]
            name = "uniform runs"
            kind = "absolute"
            metric = "correctness"
            scenario = "uniform"
            strategies = "ordered"
            op = "=="
            value = 0
        "#;
        let (applicable, not_run) = split_not_run(rules(text, &results).unwrap(), &results);
        let names: Vec<&str> = applicable.iter().map(|rule| rule.name.as_str()).collect();
        assert_eq!(names, ["uniform runs"]);
        assert_eq!(
            not_run,
            [NotRun { rule: "cold commands".into(), scenario: "cold-command".into(), why: None }]
        );
        // A scenario that ran, skipped cells included, still applies.
        let mut skipped_only = reference();
        skipped_only.runs.retain(|run| run.scenario != "uniform");
        skipped_only.skipped.push(crate::results::Skipped {
            scenario: "uniform".into(),
            strategy: "inline".into(),
            reason: "test".into(),
        });
        let (applicable, not_run) = split_not_run(rules(text, &results).unwrap(), &skipped_only);
        assert_eq!((applicable.len(), not_run.len()), (1, 1));
    }

    #[test]
    fn recorded_settings_are_checked_before_measuring_again() {
        let mut results = reference();
        results.meta.sizes = Some(crate::workload::Sizes::standard());
        let all = || (ScenarioId::ALL.to_vec(), Design::built_ins().collect::<Vec<_>>());
        let recorded = |results: &Results| {
            let (scenarios, strategies) = all();
            RunConfig::from_recorded(&results.meta, scenarios, strategies)
        };
        recorded(&results).unwrap();
        results.meta.sizes.as_mut().unwrap().keys = vec![0];
        let error = recorded(&results).unwrap_err();
        assert!(error.to_string().contains("--keys must be in 1..=100000000, got 0"), "{error}");
        let mut results = reference();
        results.meta.repeat = 1_000_000;
        let error = recorded(&results).unwrap_err();
        assert!(error.to_string().contains("--repeat must be in 1..=1000"), "{error}");
        let mut results = reference();
        results.meta.sizes = None;
        assert!(matches!(recorded(&results), Err(RecordedError::NoSizes)));
    }
}
