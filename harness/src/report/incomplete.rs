//! The line that opens `summary.md` and `report.html` of an incomplete run (a results file
//! with `meta.incomplete`): what follows covers only the cells done.

use super::table::{Cell, Style};
use crate::results::Results;

/// The sentence as spans, or `None` for a complete run.
pub fn line(results: &Results) -> Option<Cell> {
    let incomplete = results.meta.incomplete.as_ref()?;
    let done = format!(" {}; everything below covers the cells done. ", incomplete.describe());
    Some(
        Cell::strong("Incomplete run:")
            .then(Style::Plain, done)
            .then(Style::Code, "keyed-bench run --resume")
            .then(Style::Plain, " on the run's folder runs the others."),
    )
}

/// The sentence, in Markdown, or `None` for a complete run.
pub fn markdown_line(results: &Results) -> Option<String> {
    line(results).map(|line| line.prose_markdown())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::incomplete::Incomplete;
    use crate::results::CellKey;

    #[test]
    fn only_an_incomplete_run_says_so() {
        let reference = include_str!("../../../results/2026-11-30-vm/results.json");
        let mut results = Results::parse(reference.as_bytes(), "r.json".as_ref()).unwrap();
        assert_eq!(markdown_line(&results), None);
        assert_eq!(line(&results), None);
        results.meta.incomplete = Some(Incomplete {
            cells_planned: 9,
            cells_done: 8,
            missing: vec![CellKey::recorded("zipf", "", "tokio")],
            stopped_by: Some("SIGTERM".into()),
        });
        let line = markdown_line(&results).unwrap();
        assert!(line
            .starts_with("**Incomplete run:** 8 of 9 cells done, 1 missing (stopped by SIGTERM)"));
        assert!(line.ends_with(
            "everything below covers the cells done. `keyed-bench run --resume` on the run's \
             folder runs the others."
        ));
        let html = super::line(&results).unwrap().html();
        assert!(html.starts_with("<strong>Incomplete run:</strong> 8 of 9"), "{html}");
    }
}
