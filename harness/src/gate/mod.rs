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
//! - `metric`: the value of a rule's metric on one run (a results field or a derived metric);
//! - `baseline`: the committed baseline file, read, checked and written;
//! - `evaluate`: every rule on every cell it matches, confirming failures by measuring again;
//! - `render`: the verdicts as text, Markdown or JSON.
//!
//! This module holds the command itself: its flags ([`GateArgs`]) and [`run_gate`].

mod baseline;
mod evaluate;
mod metric;
mod render;
mod rules;
#[cfg(test)]
mod testing;

use std::path::Path;

use strategies::StrategyId;

use crate::results::Results;
use crate::workload::ScenarioId;

pub use baseline::{baseline_from, parse_baseline, read_baseline, Baseline, BASELINE_SCHEMA};
pub use evaluate::{evaluate, Rerun, Verdict};
pub use render::{render, Format};
pub use rules::{parse_rules, read_rules, Kind, Limit, Op, Rule, Selection};

/// A gate input that cannot be used (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GateInputError(pub String);

fn bad(message: impl Into<String>) -> GateInputError {
    GateInputError(message.into())
}

/// The most confirmation re-measurements `--confirm` may ask for.
pub const MAX_CONFIRM: usize = 10;

/// Flags of `keyed-bench gate`.
#[derive(clap::Args, Clone, Debug)]
pub struct GateArgs {
    /// The results file to judge.
    #[arg(long)]
    pub results: std::path::PathBuf,
    /// The rules file.
    #[arg(long, default_value = "gates.toml")]
    pub rules: std::path::PathBuf,
    /// The baseline file of the baseline rules [default: gates-baseline.json beside the rules].
    #[arg(long)]
    pub baseline: Option<std::path::PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Re-measurements of a failing wall-clock rule before it fails [0..=10] (0: none).
    #[arg(long, default_value_t = 2)]
    pub confirm: usize,
    /// Write the baseline file from these results instead of judging them.
    #[arg(long)]
    pub update_baseline: bool,
}

/// What `keyed-bench gate` concluded.
#[derive(Debug)]
pub struct GateOutcome {
    /// The report in the chosen format (or a line about the written baseline).
    pub report: String,
    /// Whether every rule holds.
    pub pass: bool,
}

/// Runs `keyed-bench gate`: reads everything (bad input is a [`GateInputError`]), judges,
/// confirms failing wall-clock rules by measuring their cells again.
pub fn run_gate(args: &GateArgs) -> Result<GateOutcome, GateInputError> {
    if args.confirm > MAX_CONFIRM {
        return Err(bad(format!("--confirm must be in 0..={MAX_CONFIRM}, got {}", args.confirm)));
    }
    let results = Results::read(&args.results).map_err(|error| bad(error.to_string()))?;
    if args.confirm > 0 && !args.update_baseline {
        // A confirmation measures cells again with the settings the file records: check
        // them as the command line's would be, before anything runs on them.
        let strategies: Vec<StrategyId> =
            results.runs.iter().filter_map(|run| run.strategy.parse().ok()).collect();
        let scenarios: Vec<ScenarioId> =
            results.runs.iter().filter_map(|run| run.scenario.parse().ok()).collect();
        crate::suite::check_recorded(&results.meta, &strategies, &scenarios).map_err(|error| {
            bad(format!(
                "{}: {error}; judge it without re-measuring with --confirm 0",
                args.results.display()
            ))
        })?;
    }
    let rules = read_rules(&args.rules, &results)?;
    let baseline_path = args.baseline.clone().unwrap_or_else(|| {
        args.rules.parent().unwrap_or_else(|| Path::new(".")).join("gates-baseline.json")
    });
    if args.update_baseline {
        let baseline = baseline_from(&results, &rules);
        let json = serde_json::to_vec_pretty(&baseline).expect("baseline serialises");
        crate::results::write_atomically(&baseline_path, &json)
            .map_err(|error| bad(format!("cannot write {}: {error}", baseline_path.display())))?;
        return Ok(GateOutcome {
            report: format!(
                "wrote {} values to {}\n",
                baseline.values.len(),
                baseline_path.display()
            ),
            pass: true,
        });
    }
    let needs_baseline = rules.iter().any(|rule| rule.kind == Kind::Baseline);
    let baseline = needs_baseline.then(|| read_baseline(&baseline_path)).transpose()?;
    let meta = results.meta.clone();
    let mut rerun = |scenario: &str, param: &str, strategies: &[StrategyId]| {
        let cell = format!("{scenario} {param}");
        eprintln!(
            "gate: confirming by measuring {} again ({} strategies)",
            cell.trim_end(),
            strategies.len()
        );
        match crate::suite::remeasure(&meta, scenario, param, strategies) {
            Ok(runs) => Some(runs),
            Err(error) => {
                eprintln!("gate: {error}");
                None
            }
        }
    };
    let verdicts = evaluate(&results, &rules, baseline.as_ref(), args.confirm, &mut rerun)?;
    Ok(GateOutcome {
        report: render(&verdicts, args.format),
        pass: verdicts.iter().all(|v| v.pass),
    })
}

#[cfg(test)]
mod tests {
    use super::testing::reference;
    use super::*;

    #[test]
    fn recorded_settings_are_checked_before_measuring_again() {
        let mut results = reference();
        results.meta.sizes = Some(crate::workload::Sizes::standard());
        let all = (StrategyId::ALL, ScenarioId::ALL);
        crate::suite::check_recorded(&results.meta, all.0, all.1).unwrap();
        results.meta.sizes.as_mut().unwrap().keys = 0;
        let error = crate::suite::check_recorded(&results.meta, all.0, all.1).unwrap_err();
        assert!(error.to_string().contains("--keys must be in 1..=100000000, got 0"), "{error}");
        let error = crate::suite::remeasure(&results.meta, "uniform", "", &[StrategyId::Inline])
            .unwrap_err()
            .to_string();
        assert!(error.contains("got 0"), "{error}");
        let mut results = reference();
        results.meta.repeat = 1_000_000;
        let error = crate::suite::check_recorded(&results.meta, all.0, all.1).unwrap_err();
        assert!(error.to_string().contains("--repeat must be in 1..=1000"), "{error}");
    }
}
