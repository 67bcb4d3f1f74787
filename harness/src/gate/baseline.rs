//! The baseline file: a committed value per baseline rule and cell, read and checked
//! (schema, finite numbers), and written from a run with `--update-baseline`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::metric::metric_of;
use super::rules::{matching_runs, Kind, Rule};
use super::{baseline_error, GateInputError};
use crate::results::{CellKey, Results};

/// The schema id of a baseline file.
pub const BASELINE_SCHEMA: &str = "keyed-bench.baseline.v1";

/// Baseline values by `rule|scenario|param|strategy`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Baseline {
    /// Always [`BASELINE_SCHEMA`].
    pub schema: String,
    /// Where the values came from.
    #[serde(default)]
    pub source: String,
    /// The values.
    pub values: BTreeMap<String, f64>,
}

/// The key of `rule`'s value for `cell` in a baseline file: `rule|scenario|param|strategy`.
pub(super) fn baseline_key(rule: &Rule, cell: &CellKey) -> String {
    format!("{}|{}|{}|{}", rule.name, cell.scenario, cell.full_param(), cell.strategy)
}

/// Reads a baseline file.
pub fn read_baseline(path: &Path) -> Result<Baseline, GateInputError> {
    let bytes = std::fs::read(path).map_err(|error| {
        baseline_error(format!("cannot read baseline {}: {error}", path.display()))
    })?;
    parse_baseline(&bytes, path)
}

/// Parses and checks the bytes of a baseline file; `path` names it in errors. Any bytes at
/// all give a baseline or an error, never a panic.
pub fn parse_baseline(bytes: &[u8], path: &Path) -> Result<Baseline, GateInputError> {
    let invalid = |reason: String| {
        baseline_error(format!("invalid baseline file {}: {reason}", path.display()))
    };
    let baseline: Baseline =
        serde_json::from_slice(bytes).map_err(|error| invalid(error.to_string()))?;
    if baseline.schema != BASELINE_SCHEMA {
        return Err(invalid(format!("schema `{}`, expected `{BASELINE_SCHEMA}`", baseline.schema)));
    }
    if let Some((key, value)) = baseline.values.iter().find(|(_, value)| !value.is_finite()) {
        return Err(invalid(format!("`{key}` is {value}, not a finite number")));
    }
    Ok(baseline)
}

/// A baseline holding, for every baseline rule, the values of `results`.
pub fn baseline_from(results: &Results, rules: &[Rule]) -> Baseline {
    let mut values = BTreeMap::new();
    for rule in rules.iter().filter(|rule| rule.kind == Kind::Baseline) {
        for run in matching_runs(rule, &results.runs) {
            if let Some(value) = metric_of(&rule.metric, run, &results.runs) {
                values.insert(baseline_key(rule, &CellKey::of_run(run)), value);
            }
        }
    }
    Baseline {
        schema: BASELINE_SCHEMA.into(),
        source: format!(
            "{} at {} ({} cores, {})",
            results.meta.created,
            results.meta.git_commit,
            results.meta.cores,
            results.meta.cpu_model
        ),
        values,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::evaluate;
    use crate::gate::testing::*;

    #[test]
    fn a_baseline_regression_fails() {
        let results = reference();
        let rule = r#"
            [[rule]]
            name = "vs inline"
            kind = "baseline"
            metric = "throughput_vs_inline"
            scenario = "uniform"
            strategies = ["keyed-mailbox"]
            op = ">="
            tolerance = 0.2
        "#;
        let rules = rules(rule, &results).unwrap();
        let mut baseline = baseline_from(&results, &rules);
        assert!(evaluate(&results, &rules, Some(&baseline), 0, &mut no_rerun()).unwrap()[0].pass);
        for value in baseline.values.values_mut() {
            *value *= 2.0; // the committed baseline was twice as fast
        }
        let checks = evaluate(&results, &rules, Some(&baseline), 0, &mut no_rerun()).unwrap();
        assert!(!checks[0].pass, "{checks:?}");
        let empty = Baseline { schema: BASELINE_SCHEMA.into(), ..Baseline::default() };
        let missing = evaluate(&results, &rules, Some(&empty), 0, &mut no_rerun()).unwrap_err();
        assert!(missing.to_string().contains("--update-baseline"), "{missing}");
    }

    #[test]
    fn bad_tolerances_and_baselines_are_named() {
        let results = reference();
        let rule = |tolerance: &str| {
            format!(
                "[[rule]]\nname = 'b'\nkind = 'baseline'\nmetric = 'efficiency'\n\
                 strategies = 'all'\nop = '>='\n{tolerance}"
            )
        };
        for (tolerance, expected) in [
            ("tolerance = 1.5", "got 1.5"),
            ("tolerance = -0.1", "got -0.1"),
            ("tolerance = nan", "got NaN"),
            ("", "needs `tolerance`"),
            ("tolerance = '0.2'", "invalid type: string"),
        ] {
            let error = rules(&rule(tolerance), &results).unwrap_err().to_string();
            assert!(error.contains(expected), "{tolerance}: {error}");
        }
        let path = Path::new("base.json");
        let cases: [(&[u8], &str); 5] = [
            (b"", "EOF while parsing"),
            (b"[1, 2]", "invalid type: integer `1`"),
            (br#"{"schema": "other", "values": {}}"#, "schema `other`"),
            (br#"{"schema": "keyed-bench.baseline.v1", "values": {"a": "x"}}"#, "invalid type"),
            (br#"{"schema": "keyed-bench.baseline.v1", "values": {"a": 1e999}}"#, "out of range"),
        ];
        for (bytes, expected) in cases {
            let error = parse_baseline(bytes, path).unwrap_err().to_string();
            assert!(error.starts_with("invalid baseline file base.json: "), "{error}");
            assert!(error.contains(expected), "{expected}: {error}");
        }
        let good = br#"{"schema": "keyed-bench.baseline.v1", "values": {"a": 1.5}}"#;
        assert_eq!(parse_baseline(good, path).unwrap().values["a"], 1.5);
    }
}
