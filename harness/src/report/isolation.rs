//! The summary's isolation table: per design and stressor, the bystanders' p99 under the
//! stress over the same design's p99 in the unstressed twin (`isolation[]`), marked met or
//! missed against the scenario's bound.

use super::document::Document;
use super::format::format_short_ratio;
use super::table::{Cell, Style, Table};
use super::{cell_name, first_seen, validity_mark};
use crate::results::{IsolationCell, Results};

/// One entry: the ratio, `met` or `MISSED`, and the receipt where it was not clean.
fn entry(cell: &IsolationCell) -> Cell {
    let verdict = if cell.met == Some(true) { "met" } else { "MISSED" };
    let ratio = |value| format!("{} {verdict}", format_short_ratio(value));
    let mut text = cell.ratio.map_or_else(|| "-".to_owned(), ratio);
    text.push_str(&validity_mark(cell.validity));
    Cell::strong_if(text, cell.met == Some(false))
}

/// One row per design, one column per stressed cell (scenario and param).
fn table(cells: &[IsolationCell]) -> Table {
    let stressors =
        first_seen(cells.iter().map(|cell| (cell.scenario.as_str(), cell.param.as_str())));
    let mut table = Table::of("design")
        .numbers(stressors.iter().map(|(scenario, param)| cell_name(scenario, param)));
    for design in first_seen(cells.iter().map(|cell| cell.strategy.as_str())) {
        let mut row = vec![Cell::plain(design)];
        for (scenario, param) in &stressors {
            let found = cells.iter().find(|cell| {
                (cell.strategy.as_str(), cell.scenario.as_str(), cell.param.as_str())
                    == (design, *scenario, *param)
            });
            row.push(found.map_or_else(|| Cell::plain("n/a"), entry));
        }
        table.push(row);
    }
    table
}

/// The section, or nothing where no stressor ran beside its twin.
pub fn section(out: &mut Document, results: &Results) {
    if results.isolation.is_empty() {
        return;
    }
    let bounds = first_seen(results.isolation.iter().map(|cell| cell.bound.to_string()));
    out.blank();
    out.heading(2, "Isolation");
    out.blank();
    out.paragraph(
        Cell::plain(
            "Does one troubled key hurt the others: each design's bystanders' p99 under a \
             stressor over its own bystanders' p99 in the unstressed twin (",
        )
        .then(Style::Code, crate::workload::UNSTRESSED)
        .then(
            Style::Plain,
            format!(
                ": the same bystanders at the same times without the stress), measured in \
                     the same run. 1 means the stress did not reach them. The bound is at most \
                     {}x, stated by each stressor; `met` is within it, `MISSED` above it; a \
                     void side is not to be judged.",
                bounds.join("x or ")
            ),
        ),
    );
    out.blank();
    out.table(table(&results.isolation));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(strategy: &str, scenario: &str, value: Option<f64>) -> IsolationCell {
        IsolationCell {
            scenario: scenario.to_owned(),
            param: "stress=on".to_owned(),
            strategy: strategy.to_owned(),
            stressed_p99_ns: 0,
            unstressed_p99_ns: 0,
            ratio: value,
            bound: 2.0,
            met: value.map(|value| value <= 2.0),
            validity: None,
        }
    }

    #[test]
    fn a_table_of_design_by_stressor_marks_each_cell_met_or_missed() {
        let mut results: Results =
            serde_json::from_str(include_str!("../../../results/2026-12-02-vm/results.json"))
                .unwrap();
        results.isolation = vec![
            cell("keyed-mailbox", "hot-key", Some(1.2)),
            cell("group-by", "hot-key", Some(35.0)),
            cell("group-by", "saga", None),
        ];
        let mut out = Document::default();
        section(&mut out, &results);
        let text = out.markdown();
        assert!(text.contains("## Isolation"), "{text}");
        assert!(text.contains("| design | hot-key stress=on | saga stress=on |"), "{text}");
        assert!(text.contains("| keyed-mailbox | 1.2 met | n/a |"), "{text}");
        assert!(text.contains("35 MISSED"), "{text}");
        assert!(text.contains("at most 2x"), "{text}");
    }

    #[test]
    fn no_figure_no_section() {
        let mut results: Results =
            serde_json::from_str(include_str!("../../../results/2026-12-02-vm/results.json"))
                .unwrap();
        results.isolation.clear();
        let mut out = Document::default();
        section(&mut out, &results);
        assert_eq!(out.markdown(), "");
    }
}
