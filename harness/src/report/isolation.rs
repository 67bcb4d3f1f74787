//! The summary's isolation table: per design and stressor, the bystanders' p99 under the
//! stress over the same design's p99 in the unstressed twin (`isolation[]`), marked met or
//! missed against the scenario's bound.

use std::collections::HashMap;

use super::document::Document;
use super::format::format_short_ratio;
use super::prose::prose;
use super::table::{Cell, Declared, Style, Table};
use super::{cell_name, first_seen, validity_mark};
use crate::results::{CellKey, IsolationCell, PipelineRun, Results, RetryForever, RetryPolicy};

/// One entry: the ratio, `met` or `MISSED`, and the receipt where it was not clean.
fn entry(cell: &IsolationCell) -> Cell {
    let verdict = if cell.met == Some(true) { "met" } else { "MISSED" };
    let ratio = |value| format!("{} {verdict}", format_short_ratio(value));
    let mut text = cell.ratio.map_or_else(|| "-".to_owned(), ratio);
    if let Some(median) = cell.median_ratio {
        text.push_str(&format!(" (median {})", format_short_ratio(median)));
    }
    text.push_str(&validity_mark(cell.validity));
    Cell::strong_if(text, cell.met == Some(false))
}

/// The first column of a table with a row per design: its name.
fn design_column<'a>() -> Declared<'a, str> {
    Declared::left("design", |design: &str| Cell::plain(design))
}

/// The entry of a design in a column where it has no figure.
fn not_available() -> Cell {
    Cell::plain("n/a")
}

/// One row per design, one column per stressed cell (scenario and param).
fn table(cells: &[IsolationCell]) -> Table {
    let mut at: HashMap<CellKey, &IsolationCell> = HashMap::new();
    for cell in cells {
        let key = CellKey::recorded(&cell.scenario, &cell.param, &cell.strategy);
        at.entry(key).or_insert(cell);
    }
    let at = &at;
    let stressors =
        first_seen(cells.iter().map(|cell| (cell.scenario.as_str(), cell.param.as_str())));
    let mut columns = vec![design_column()];
    columns.extend(stressors.into_iter().map(|(scenario, param)| {
        Declared::right(cell_name(scenario, param), move |design: &str| {
            let cell = at.get(&CellKey::recorded(scenario, param, design));
            cell.map_or_else(not_available, |cell| entry(cell))
        })
    }));
    let designs = first_seen(cells.iter().map(|cell| cell.strategy.as_str()));
    Table::declared(&columns, designs)
}

/// The retry-forever cells of `pipeline-retry` (`--max-attempts 0`): design, policy and
/// figures.
fn forever_cells(results: &Results) -> Vec<(&str, RetryPolicy, &RetryForever)> {
    results
        .pipelines
        .iter()
        .filter_map(|run: &PipelineRun| {
            let report = run.retry.as_ref()?;
            Some((run.strategy.as_str(), report.policy, report.forever.as_ref()?))
        })
        .collect()
}

/// `12 ms`, `1.03 s`.
fn seconds(value: f64) -> String {
    if value < 1.0 {
        format!("{:.0} ms", value * 1e3)
    } else {
        format!("{value:.2} s")
    }
}

/// One entry of the stall table: the stall detector's figure, `STALLED` with the
/// bystanders stranded where the stall limit cut the cell off.
fn stall_entry(figures: &RetryForever) -> Cell {
    if figures.cut_off {
        let text = format!("{} STALLED ({} stranded)", seconds(figures.stall_s), figures.stranded);
        Cell::strong_if(text, true)
    } else {
        Cell::plain(seconds(figures.stall_s))
    }
}

/// One row per design, one column per retry policy: the stall detector under retry for
/// ever.
fn stall_table(cells: &[(&str, RetryPolicy, &RetryForever)]) -> Table {
    let mut at: HashMap<(&str, RetryPolicy), &RetryForever> = HashMap::new();
    for &(design, policy, figures) in cells {
        at.entry((design, policy)).or_insert(figures);
    }
    let at = &at;
    let policies = first_seen(cells.iter().map(|&(_, policy, _)| policy));
    let mut columns = vec![design_column()];
    columns.extend(policies.into_iter().map(|policy| {
        Declared::right(format!("retry forever, {policy}"), move |design: &str| {
            let figures = at.get(&(design, policy));
            figures.map_or_else(not_available, |figures| stall_entry(figures))
        })
    }));
    let designs = first_seen(cells.iter().map(|&(design, _, _)| design));
    Table::declared(&columns, designs)
}

/// Beside the isolation table: whether intake stalls behind a record retried for ever, per
/// retry policy and design (the `cells` of [`forever_cells`]); nothing where none ran.
fn stall_section(out: &mut Document, cells: &[(&str, RetryPolicy, &RetryForever)]) {
    let Some(&(_, _, first)) = cells.first() else { return };
    out.prose(&prose!("isolation", "stall", limit = seconds(first.stall_limit_s)));
    out.table(stall_table(cells));
}

/// The section, or nothing where no stressor ran beside its twin and no retry-forever
/// cell ran.
pub fn section(out: &mut Document, results: &Results) {
    let forever = forever_cells(results);
    if results.isolation.is_empty() && forever.is_empty() {
        return;
    }
    out.blank();
    out.heading(2, "Isolation");
    if !results.isolation.is_empty() {
        let bounds = first_seen(results.isolation.iter().map(|cell| cell.bound.to_string()));
        out.paragraph(
            Cell::plain(prose!("isolation", "lead"))
                .then(Style::Code, crate::workload::UNSTRESSED)
                .then(Style::Plain, prose!("isolation", "bound", bounds = bounds.join("x or "))),
        );
        out.blank();
        out.table(table(&results.isolation));
        if !forever.is_empty() {
            out.blank();
        }
    }
    stall_section(out, &forever);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::reference::receipts;

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
            stressed_p50_ns: None,
            unstressed_p50_ns: None,
            median_ratio: None,
            validity: None,
        }
    }

    #[test]
    fn a_table_of_design_by_stressor_marks_each_cell_met_or_missed() {
        let mut results = receipts();
        results.isolation = vec![
            cell("keyed-mailbox", "hot-key", Some(1.2)),
            IsolationCell { median_ratio: Some(21.5), ..cell("group-by", "hot-key", Some(35.0)) },
            cell("group-by", "saga", None),
        ];
        let mut out = Document::default();
        section(&mut out, &results);
        let text = out.markdown();
        assert!(text.contains("## Isolation"), "{text}");
        assert!(text.contains("| design | hot-key stress=on | saga stress=on |"), "{text}");
        assert!(text.contains("| keyed-mailbox | 1.2 met | n/a |"), "{text}");
        assert!(text.contains("35 MISSED (median 22)"), "{text}");
        assert!(text.contains("at most 2x"), "{text}");
    }

    /// A pipeline-retry cell run with `--max-attempts 0` whose stall detector read
    /// `stall_s`, cut off by the stall limit where `cut_off`.
    fn forever(strategy: &str, policy: RetryPolicy, stall_s: f64, cut_off: bool) -> PipelineRun {
        let results = receipts();
        let view = crate::report::view::View::of(&results);
        let retry = "pipeline-retry".parse::<crate::workload::ScenarioId>().unwrap();
        let mut run = view
            .pipelines(retry)
            .first()
            .map(|run| (*run).clone())
            .expect("the reference run has pipeline-retry cells");
        run.strategy = strategy.to_owned();
        let retry = run.retry.as_mut().unwrap();
        retry.policy = policy;
        retry.max_attempts = 0;
        retry.forever = Some(RetryForever {
            stall_s,
            stall_from_s: 0.1,
            stall_limit_s: 1.0,
            cut_off,
            stranded: if cut_off { 812 } else { 0 },
            still_retrying: 3,
            unsettled: 0,
        });
        run
    }

    #[test]
    fn retry_forever_cells_get_a_stall_table_per_design_and_policy() {
        let mut results = receipts();
        let mut out = Document::default();
        section(&mut out, &results);
        assert!(!out.markdown().contains("retry forever"), "no retry-forever cell, no table");
        results.isolation.clear();
        results.pipelines = vec![
            forever("keyed-mailbox", RetryPolicy::RetryInPlace, 0.012, false),
            forever("keyed-mailbox", RetryPolicy::PausePartition, 1.004, true),
            forever("group-by", RetryPolicy::RetryInPlace, 1.2, true),
        ];
        let mut out = Document::default();
        section(&mut out, &results);
        let text = out.markdown();
        assert!(text.contains("## Isolation"), "{text}");
        assert!(
            text.contains(
                "| design | retry forever, retry-in-place | retry forever, pause-partition |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| keyed-mailbox | 12 ms | **1.00 s STALLED (812 stranded)** |"),
            "{text}"
        );
        assert!(text.contains("| group-by | **1.20 s STALLED (812 stranded)** | n/a |"), "{text}");
        assert!(text.contains("none was for 1.00 s"), "{text}");
    }

    #[test]
    fn no_figure_no_section() {
        let mut results = receipts();
        results.isolation.clear();
        let mut out = Document::default();
        section(&mut out, &results);
        assert_eq!(out.markdown(), "");
    }
}
