//! The line that opens `summary.md` and `report.html` of an incomplete run (a results file
//! with `meta.incomplete`): what follows covers only the cells done.

use crate::results::Results;

/// The sentence, in Markdown, or `None` for a complete run.
pub fn markdown_line(results: &Results) -> Option<String> {
    let incomplete = results.meta.incomplete.as_ref()?;
    Some(format!(
        "**Incomplete run:** {}; everything below covers the cells done. `keyed-bench run \
         --resume` on the run's folder runs the others.",
        incomplete.describe()
    ))
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
        assert_eq!(crate::report::html::incomplete_line(&results), "");
        results.meta.incomplete = Some(Incomplete {
            cells_planned: 9,
            cells_done: 8,
            missing: vec![CellKey::recorded("zipf", "", "tokio")],
            stopped_by: Some("SIGTERM".into()),
        });
        let line = markdown_line(&results).unwrap();
        assert!(line
            .starts_with("**Incomplete run:** 8 of 9 cells done, 1 missing (stopped by SIGTERM)"));
        let html = crate::report::html::incomplete_line(&results);
        assert!(html.starts_with("<p class=\"incomplete\"><strong>Incomplete run:</strong> 8 of 9"));
        assert_eq!(html.lines().count(), 1, "{html}");
    }
}
