//! The gate on an incomplete results file (`meta.incomplete`): refused unless
//! `--allow-incomplete`, and then judged on the cells it has.
//!
//! With `--allow-incomplete`, a rule about a scenario none of whose cells were done yet is
//! not judged (it is listed as such); a rule that compares cells (relative, or
//! `throughput_vs_inline`) and fails for want of the other cell is judged on the
//! (scenario, param) groups that have every cell; any other rule is judged as usual. The
//! report says first that the run is incomplete and which rules were not judged.

use std::path::Path;

use super::evaluate::{evaluate, Check, Rerun};
use super::render::Preface;
use super::{folder_of, Baseline, Format, GateInputError, Rule};
use crate::results::incomplete::Incomplete;
use crate::results::{CellKey, Results};

/// Why the gate refuses `results` (from `path`) without `--allow-incomplete`, if it does.
pub(super) fn refusal(path: &Path, results: &Results) -> Option<GateInputError> {
    let incomplete = results.meta.incomplete.as_ref()?;
    Some(GateInputError::Incomplete {
        path: path.display().to_string(),
        folder: folder_of(path),
        missing: incomplete.missing.len(),
        planned: incomplete.cells_planned,
        stopped_by: incomplete.stopped_by.clone(),
    })
}

/// Whether a cell of `incomplete`'s missing ones is of `rule`'s scenario and param.
fn touches_missing(rule: &Rule, incomplete: &Incomplete) -> bool {
    incomplete.missing.iter().any(|cell| {
        rule.scenario.as_ref().is_none_or(|scenario| scenario == cell.scenario.as_str())
            && rule.param.as_ref().is_none_or(|param| *param == cell.full_param())
    })
}

/// `results` with only the measured cells of the (scenario, param) groups that miss none.
fn complete_groups(results: &Results, incomplete: &Incomplete) -> Results {
    let mut kept = results.clone();
    kept.runs.retain(|run| {
        let cell = CellKey::of_run(run);
        !incomplete.missing.iter().any(|missing| missing.on(&cell.strategy) == cell)
    });
    kept
}

/// Sets apart the rules about a scenario none of whose cells is done, though the run
/// planned some: they cannot be judged yet. Returns the others and the names of those.
pub(super) fn split_missing(rules: Vec<Rule>, results: &Results) -> (Vec<Rule>, Vec<String>) {
    let Some(incomplete) = &results.meta.incomplete else { return (rules, Vec::new()) };
    let done = |scenario: &str| {
        results.runs.iter().any(|run| run.scenario == scenario)
            || results.pipelines.iter().any(|run| run.scenario == scenario)
            || results.skipped.iter().any(|skipped| skipped.scenario == scenario)
    };
    let (mut kept, mut not_judged) = (Vec::new(), Vec::new());
    for rule in rules {
        match &rule.scenario {
            Some(scenario) if !done(scenario) && touches_missing(&rule, incomplete) => {
                not_judged.push(rule.name);
            }
            _ => kept.push(rule),
        }
    }
    (kept, not_judged)
}

/// Every rule on the cells an incomplete `results` has (see the module docs): the checks,
/// in rule order, and the names of the rules not judged for want of their cells, added to
/// `not_judged`.
pub(super) fn evaluate_incomplete(
    results: &Results,
    rules: &[Rule],
    baseline: Option<&Baseline>,
    confirm: usize,
    rerun: &mut Rerun<'_>,
    not_judged: &mut Vec<String>,
) -> Result<Vec<Check>, GateInputError> {
    let Some(incomplete) = &results.meta.incomplete else {
        return evaluate(results, rules, baseline, confirm, rerun);
    };
    let groups = complete_groups(results, incomplete);
    let mut checks = Vec::new();
    for rule in rules {
        let one = std::slice::from_ref(rule);
        match evaluate(results, one, baseline, confirm, rerun) {
            Ok(judged) => checks.extend(judged),
            Err(GateInputError::Rules(_)) if touches_missing(rule, incomplete) => {
                match evaluate(&groups, one, baseline, confirm, rerun) {
                    Ok(judged) if !judged.is_empty() => checks.extend(judged),
                    Ok(_) | Err(GateInputError::Rules(_)) => not_judged.push(rule.name.clone()),
                    Err(error) => return Err(error),
                }
            }
            Err(error) => return Err(error),
        }
    }
    Ok(checks)
}

/// `report` (in `format`) with what the gate must say first about an incomplete file: how
/// many cells are missing, and the rules not judged for want of their cells.
pub(super) fn with_note(
    report: String,
    format: Format,
    results: &Results,
    not_judged: &[String],
) -> String {
    let Some(incomplete) = &results.meta.incomplete else { return report };
    let state = incomplete.describe();
    let skipped = if not_judged.is_empty() {
        String::new()
    } else {
        format!("; not judged, their cells missing: {}", not_judged.join(", "))
    };
    let mut note = serde_json::to_value(incomplete).expect("incomplete serialises");
    note["not_judged"] = serde_json::json!(not_judged);
    let preface = Preface {
        text: format!(
            "note: incomplete results, {state}: judged on the cells there \
             (--allow-incomplete){skipped}\n"
        ),
        markdown: format!(
            "> **Incomplete results:** {state}; judged on the cells there \
             (`--allow-incomplete`){skipped}.\n"
        ),
        json: vec![("incomplete", note)],
        ..Preface::default()
    };
    preface.around(report, format)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{no_rerun, reference, rules, CORRECT, UNIFORM_KEEPS_UP};
    use super::super::{render, split_not_run};
    use super::*;

    /// The reference run with its `uniform keyed-mailbox` cell and all of `zipf` missing.
    fn incomplete() -> Results {
        let mut results = reference();
        let mut missing = Vec::new();
        results.runs.retain(|run| {
            let gone = (run.scenario == "uniform" && run.strategy == "keyed-mailbox")
                || run.scenario == "zipf";
            if gone {
                missing.push(CellKey::recorded(&run.scenario, &run.param, &run.strategy));
            }
            !gone
        });
        results.meta.incomplete = Some(Incomplete {
            cells_planned: results.runs.len() + missing.len(),
            cells_done: results.runs.len(),
            missing,
            stopped_by: Some("SIGINT".into()),
        });
        results
    }

    /// Rules about zipf and hot-backlog, between [`UNIFORM_KEEPS_UP`] and [`CORRECT`].
    const MIDDLE: &str = r#"
        [[rule]]
        name = "zipf keeps up"
        kind = "relative"
        metric = "throughput_per_s.median"
        scenario = "zipf"
        strategies = ["keyed-mailbox"]
        of = "group-by"
        op = ">="
        factor = 0.01

        [[rule]]
        name = "hot-backlog vs group-by"
        kind = "relative"
        metric = "throughput_per_s.median"
        scenario = "hot-backlog"
        strategies = ["keyed-mailbox"]
        of = "group-by"
        op = ">="
        factor = 0.01
    "#;

    #[test]
    fn the_cells_there_are_judged_and_the_rules_without_cells_listed() {
        let results = incomplete();
        let rules = rules(&format!("{UNIFORM_KEEPS_UP}{MIDDLE}{CORRECT}"), &results).unwrap();
        let (rules, mut not_judged) = split_missing(rules, &results);
        assert_eq!(not_judged, ["zipf keeps up"]);
        let (rules, not_run) = split_not_run(rules, &results);
        assert!(not_run.is_empty(), "{not_run:?}");
        let checks =
            evaluate_incomplete(&results, &rules, None, 0, &mut no_rerun(), &mut not_judged)
                .unwrap();
        assert_eq!(not_judged, ["zipf keeps up", "uniform keeps up"]);
        assert!(checks.iter().any(|v| v.rule == "hot-backlog vs group-by"));
        assert!(checks.iter().any(|v| v.rule == "ordered strategies are correct"));
        assert!(checks.iter().all(|v| !v.cell.starts_with("zipf")));
        let text =
            with_note(render(&checks, &[], Format::Text), Format::Text, &results, &not_judged);
        let first = text.lines().next().unwrap();
        assert!(first.starts_with("note: incomplete results, "), "{first}");
        assert!(first.contains("missing (stopped by SIGINT)"), "{first}");
        assert!(first.ends_with("not judged, their cells missing: zipf keeps up, uniform keeps up"));
        let markdown =
            with_note(render(&checks, &[], Format::Markdown), Format::Markdown, &results, &[]);
        assert!(markdown.starts_with("> **Incomplete results:** "), "{markdown}");
        let json =
            with_note(render(&checks, &[], Format::Json), Format::Json, &results, &not_judged);
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(json["incomplete"]["stopped_by"], "SIGINT");
        assert_eq!(json["incomplete"]["not_judged"][1], "uniform keeps up");
        assert!(json["verdicts"].as_array().is_some_and(|v| !v.is_empty()));
    }

    #[test]
    fn an_incomplete_file_is_refused_naming_what_is_missing() {
        let results = incomplete();
        let error = refusal(Path::new("run/r.json"), &results).unwrap().to_string();
        assert!(error.starts_with("run/r.json is incomplete: "), "{error}");
        assert!(error.contains("keyed-bench run --resume run`"), "{error}");
        assert!(error.contains("cells are missing (stopped by SIGINT)"), "{error}");
        assert!(error.contains("--allow-incomplete"), "{error}");
        assert!(refusal(Path::new("r.json"), &reference()).is_none());
    }
}
