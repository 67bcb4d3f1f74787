//! The lines that open `summary.md` and `report.html` of an incomplete run (a results file
//! with `meta.incomplete`): what follows covers only the cells done; and of a run with
//! failed cells (`failed[]`): which, and why.

use minijinja::context;
use minijinja::value::Value;

use super::prose::prose_cell;
use super::table::Cell;
use crate::results::Results;

/// The sentence as spans, or `None` for a complete run.
pub fn line(results: &Results) -> Option<Cell> {
    let incomplete = results.meta.incomplete.as_ref()?;
    Some(prose_cell!("incomplete", "incomplete", done = incomplete.describe()))
}

/// The sentence that names the failed cells and why each failed, or `None` where none did.
pub fn failed_line(results: &Results) -> Option<Cell> {
    if results.failed.is_empty() {
        return None;
    }
    let cells: Vec<Value> = results
        .failed
        .iter()
        .map(|cell| {
            context! { key => cell.key().to_string(), reason => cell.reason, abandoned => cell.abandoned }
        })
        .collect();
    Some(prose_cell!("incomplete", "failed", count = results.failed.len(), cells = cells))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::incomplete::Incomplete;
    use crate::results::{CellKey, FailedCell};

    #[test]
    fn only_an_incomplete_run_says_so() {
        let mut results = crate::report::reference::first();
        assert_eq!(line(&results), None);
        results.meta.incomplete = Some(Incomplete {
            cells_planned: 9,
            cells_done: 8,
            missing: vec![CellKey::recorded("zipf", "", "tokio")],
            stopped_by: Some("SIGTERM".into()),
        });
        let line = line(&results).unwrap().prose_markdown();
        assert!(line
            .starts_with("**Incomplete run:** 8 of 9 cells done, 1 missing (stopped by SIGTERM)"));
        assert!(line.ends_with(
            "everything below covers the cells done. `keyed-bench run --resume` on the run's \
             folder runs the others."
        ));
        let html = super::line(&results).unwrap().html();
        assert!(html.starts_with("<strong>Incomplete run:</strong> 8 of 9"), "{html}");
    }

    #[test]
    fn only_a_run_with_failed_cells_names_them() {
        let mut results = crate::report::reference::first();
        assert_eq!(failed_line(&results), None);
        let failed = |strategy: &str, abandoned| FailedCell {
            scenario: "pipeline-reorder".into(),
            param: "producers=2".into(),
            strategy: strategy.into(),
            reason: "no progress for 2 s: 0 records done".into(),
            unit: "records".into(),
            done: 0,
            expected: None,
            timeout_s: 2.0,
            elapsed_s: 2.1,
            abandoned,
        };
        results.failed = vec![failed("tokio", false), failed("rayon", true)];
        let line = failed_line(&results).unwrap().prose_markdown();
        assert!(
            line.starts_with(
                "**Failed cells:** the watchdog stopped 2 cells that made no progress: \
                 `pipeline-reorder producers=2 tokio` (no progress for 2 s: 0 records done); \
                 `pipeline-reorder producers=2 rayon` (no progress for 2 s: 0 records done, \
                 did not stop, and ended the run)."
            ),
            "{line}"
        );
        assert!(line.ends_with("on the run's folder runs them again."), "{line}");
    }
}
