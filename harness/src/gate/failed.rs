//! The gate on a results file with failed cells (`failed[]`): it fails, naming each.
//!
//! A failed cell measured nothing, so the rules cannot hold on it: the gate fails whatever
//! the rules say, and lists the failed cells first in its report. The rules are judged on
//! the cells there as on an incomplete file's ([`as_missing`]): a rule whose cells all
//! failed is not judged, a rule that compares a failed cell with another is judged on the
//! groups that have every cell.

use std::fmt::Write as _;
use std::path::Path;

use super::render::Preface;
use super::{folder_of, Format, GateInputError};
use crate::results::incomplete::Incomplete;
use crate::results::Results;

/// Why `--update-baseline` refuses `results` (from `path`), if it does: a baseline is made
/// only from a run whose every cell ran.
pub(super) fn refusal(path: &Path, results: &Results) -> Option<GateInputError> {
    if results.failed.is_empty() {
        return None;
    }
    Some(GateInputError::Failed {
        path: path.display().to_string(),
        folder: folder_of(path),
        cells: results.failed_cells().iter().map(ToString::to_string).collect(),
    })
}

/// `results` with its failed cells listed as missing, for judging the rules on the cells
/// there; `results` itself where none failed.
pub(super) fn as_missing(results: &Results) -> Results {
    let mut judged = results.clone();
    if results.failed.is_empty() {
        return judged;
    }
    let failed = results.failed_cells();
    let incomplete = judged.meta.incomplete.get_or_insert_with(|| {
        let done = results.runs.len() + results.pipelines.len() + results.failed.len();
        Incomplete { cells_planned: done, cells_done: done, missing: Vec::new(), stopped_by: None }
    });
    incomplete.cells_done -= failed.len().min(incomplete.cells_done);
    incomplete.missing.extend(failed);
    judged
}

/// `report` (in `format`) with the failed cells of `results` first, each with its reason,
/// and, for a file that is otherwise complete, the rules not judged for want of them.
pub(super) fn with_failures(
    report: String,
    format: Format,
    results: &Results,
    not_judged: &[String],
) -> String {
    if results.failed.is_empty() {
        return report;
    }
    let not_judged = if results.is_complete() { not_judged } else { &[] };
    let unjudged = if not_judged.is_empty() {
        String::new()
    } else {
        format!("not judged, their cells failed: {}", not_judged.join(", "))
    };
    let mut preface = Preface {
        markdown: String::from("> **Failed cells** (the gate fails on each):\n"),
        text_after: Some(format!("{} cell(s) failed: the gate fails", results.failed.len())),
        ..Preface::default()
    };
    for cell in &results.failed {
        let _ = writeln!(preface.text, "FAIL  cell failed: {}: {}", cell.key(), cell.reason);
        let _ = writeln!(preface.markdown, "> - `{}`: {}", cell.key(), cell.reason);
    }
    if !unjudged.is_empty() {
        let _ = writeln!(preface.text, "note: {unjudged}");
        let _ = writeln!(preface.markdown, ">\n> {unjudged}.");
    }
    let cells: Vec<serde_json::Value> = (results.failed.iter())
        .map(|cell| serde_json::json!({ "cell": cell.key().to_string(), "reason": cell.reason }))
        .collect();
    preface.json.push(("failed_cells", serde_json::json!(cells)));
    if !not_judged.is_empty() {
        preface.json.push(("not_judged_failed", serde_json::json!(not_judged)));
    }
    preface.around(report, format)
}

#[cfg(test)]
mod tests {
    use super::super::testing::{no_rerun, reference, rules, CORRECT, UNIFORM_KEEPS_UP};
    use super::super::{incomplete, render, split_not_run};
    use super::*;
    use crate::results::{CellKey, FailedCell};

    /// The reference run with its `uniform keyed-mailbox` cell failed.
    fn with_a_failed_cell() -> Results {
        let mut results = reference();
        let at = results
            .runs
            .iter()
            .position(|run| run.scenario == "uniform" && run.strategy == "keyed-mailbox")
            .unwrap();
        let run = results.runs.remove(at);
        results.failed.push(FailedCell {
            scenario: run.scenario,
            param: run.param,
            strategy: run.strategy,
            reason: "no progress for 60 s: 5 of 600,000 messages done".into(),
            unit: "messages".into(),
            done: 5,
            expected: Some(600_000),
            timeout_s: 60.0,
            elapsed_s: 61.0,
            abandoned: false,
        });
        results
    }

    #[test]
    fn a_failed_cell_is_named_and_its_rules_set_apart() {
        let results = with_a_failed_cell();
        let judged = as_missing(&results);
        let missing = &judged.meta.incomplete.as_ref().unwrap().missing;
        assert_eq!(missing, &[CellKey::recorded("uniform", "", "keyed-mailbox")]);
        assert!(results.is_complete(), "the file itself stays complete");
        let rules = rules(&format!("{UNIFORM_KEEPS_UP}{CORRECT}"), &results).unwrap();
        let (rules, mut not_judged) = incomplete::split_missing(rules, &judged);
        let (rules, _) = split_not_run(rules, &judged);
        let checks = incomplete::evaluate_incomplete(
            &judged,
            &rules,
            None,
            0,
            &mut no_rerun(),
            &mut not_judged,
        )
        .unwrap();
        assert_eq!(not_judged, ["uniform keeps up"]);
        assert!(checks.iter().all(|check| check.pass && !check.cell.contains("uniform keyed")));
        let text =
            with_failures(render(&checks, &[], Format::Text), Format::Text, &results, &not_judged);
        let mut lines = text.lines();
        assert_eq!(
            lines.next(),
            Some("FAIL  cell failed: uniform keyed-mailbox: no progress for 60 s: 5 of 600,000 messages done")
        );
        assert_eq!(lines.next(), Some("note: not judged, their cells failed: uniform keeps up"));
        assert_eq!(text.lines().last(), Some("1 cell(s) failed: the gate fails"));
        let markdown =
            with_failures(render(&checks, &[], Format::Markdown), Format::Markdown, &results, &[]);
        assert!(markdown.starts_with("> **Failed cells** (the gate fails on each):\n> - `uniform keyed-mailbox`: no progress"), "{markdown}");
        let json =
            with_failures(render(&checks, &[], Format::Json), Format::Json, &results, &not_judged);
        let json: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(json["failed_cells"][0]["cell"], "uniform keyed-mailbox");
        assert_eq!(json["not_judged_failed"][0], "uniform keeps up");
        assert!(with_failures("report".into(), Format::Text, &reference(), &[]) == "report");
    }
}
