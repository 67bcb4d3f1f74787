//! A comparison as an aligned text table, a Markdown table for a pull-request comment, or
//! JSON. Only reads the comparison (and the two files' identities for the heading).

use std::fmt::Write as _;
use std::path::Path;

use super::transport::PAIRED_NOTE;
use super::{
    BrokerFigure, Change, Comparison, Correction, FigureUnit, ListedCell, MetricRow, Transports,
    UNJUDGED,
};
use crate::report::format::format_compact;
use crate::report::table::{Align, Cell, Table};
use crate::results::{Metric, Results, TransportKind};

/// How to print a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned tables.
    Text,
    /// Tables for a pull-request comment.
    Markdown,
    /// Machine-readable.
    Json,
}

/// The two files compared, for the heading.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// A's path.
    pub a: &'a Path,
    /// B's path.
    pub b: &'a Path,
    /// What each holds.
    pub results: (&'a Results, &'a Results),
}

/// The regressions past `--fail-on-regression`, with its percentage.
pub type Regressions<'a, 'c> = (f64, &'a [(&'c ListedCell, &'c MetricRow)]);

/// A metric's value as people read it.
fn value(metric: Metric, value: f64) -> String {
    format_compact(metric.unit(), value)
}

fn change(change: Option<f64>) -> String {
    change.map_or_else(|| "n/a".to_owned(), |change| format!("{change:+.1}%"))
}

fn p_value(p: Option<f64>) -> String {
    match p {
        None => "-".to_owned(),
        Some(p) if p < 0.001 => "<0.001".to_owned(),
        Some(p) => format!("{p:.3}"),
    }
}

/// `(created, commit, N repetitions)`, after a file's path.
fn details(results: &Results) -> String {
    let meta = &results.meta;
    format!(
        "({}, commit {}, {} repetition{})",
        meta.created,
        meta.git_commit,
        meta.repeat,
        if meta.repeat == 1 { "" } else { "s" }
    )
}

/// How verdicts were reached, in one sentence.
fn method(comparison: &Comparison) -> String {
    let corrected = match comparison.correction {
        Correction::None => String::new(),
        Correction::Holm => {
            let judged = comparison.rows().filter(|(_, row)| row.judgement.p_value.is_some());
            format!(" (p-values Holm-corrected for the {} rows judged)", judged.count())
        }
    };
    format!(
        "verdicts: two-sided Welch's t-test at alpha {}{corrected} on the logarithms of the \
         repetitions' samples, and medians more than {}% apart; fewer than {} samples on a side: too few \
         samples to judge",
        comparison.alpha, comparison.threshold_pct, comparison.min_samples
    )
}

/// The header of the p-value column: the corrected p-values where they were corrected.
fn p_header(correction: Correction) -> &'static str {
    match correction {
        Correction::None => "p",
        Correction::Holm => "p (Holm)",
    }
}

/// The verdict counts, `2 faster, 1 slower, ...`.
fn counts(comparison: &Comparison) -> String {
    comparison
        .counts()
        .iter()
        .map(|(verdict, count)| format!("{count} {verdict}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether some compared cell lacks samples on a side (a file from before they were
/// recorded).
fn lacks_samples(comparison: &Comparison) -> bool {
    comparison.rows().any(|(_, row)| row.judgement.a_samples == 0 || row.judgement.b_samples == 0)
}

const NO_SAMPLES: &str = "cells without per-repetition samples (`runs[].samples`, absent from \
                          files written before they were recorded) are too few to judge";

/// The headers of the two sides' medians.
const SIDES: [&str; 2] = ["A median", "B median"];

const PIPELINES: &str = "pipeline cells (single-shot: one sample each, not judged)";

/// A cell's label with its worker count, for the lists of unmatched cells.
fn unmatched(cell: &ListedCell) -> String {
    match cell.workers {
        Some(workers) => format!("{cell} (workers {workers})"),
        None => cell.to_string(),
    }
}

/// A column a report adds to the judged rows after the samples: its header, and its value
/// for a cell.
pub(crate) type ExtraColumn<'a> = (&'a str, &'a dyn Fn(&ListedCell) -> String);

/// The judged rows: one per (cell, metric), the cell named on each, the two sides' medians
/// under `sides`, then `extra` where given after the samples; a slower verdict is
/// emphasised. `compare`'s table, and `ab`'s with its void rounds.
pub(crate) fn judged_table(
    comparison: &Comparison,
    sides: [&str; 2],
    extra: Option<ExtraColumn<'_>>,
) -> Table {
    let mut columns = vec![
        ("cell", Align::Left),
        ("metric", Align::Left),
        (sides[0], Align::Right),
        (sides[1], Align::Right),
        ("change", Align::Right),
        ("samples", Align::Right),
    ];
    columns.extend(extra.map(|(header, _)| (header, Align::Right)));
    columns.extend([(p_header(comparison.correction), Align::Right), ("verdict", Align::Left)]);
    let mut table = Table::new(columns);
    for (cell, row) in comparison.rows() {
        let judgement = &row.judgement;
        let mut cells = vec![
            Cell::plain(cell.to_string()),
            Cell::plain(row.metric.to_string()),
            Cell::plain(value(row.metric, judgement.a_median)),
            Cell::plain(value(row.metric, judgement.b_median)),
            Cell::plain(change(judgement.change_pct)),
            Cell::plain(format!("{}/{}", judgement.a_samples, judgement.b_samples)),
        ];
        cells.extend(extra.map(|(_, of)| Cell::plain(of(cell))));
        cells.push(Cell::plain(p_value(judgement.p_adjusted.or(judgement.p_value))));
        cells
            .push(Cell::strong_if(judgement.verdict.as_str(), judgement.verdict == Change::Slower));
        table.push(cells);
    }
    table
}

/// `uniform keyed-mailbox throughput: slower by 30.0%`: a row past `--fail-on-regression`.
pub(crate) fn regression_line(cell: &ListedCell, row: &MetricRow) -> String {
    let worse = row.judgement.regression_pct(row.higher_is_better).unwrap_or(f64::NAN);
    format!("{cell} {}: slower by {worse:.1}%", row.metric)
}

/// The verdict on `--fail-on-regression` as JSON: its percentage, whether it failed, and
/// the rows past it.
pub(crate) fn fail_on_regression_json((pct, found): Regressions<'_, '_>) -> serde_json::Value {
    let rows: Vec<serde_json::Value> = found
        .iter()
        .map(|(cell, row)| {
            serde_json::json!({
                "cell": cell,
                "metric": row.metric,
                "slower_by_pct": row.judgement.regression_pct(row.higher_is_better),
            })
        })
        .collect();
    serde_json::json!({ "pct": pct, "failed": !rows.is_empty(), "regressions": rows })
}

/// The verdict on `--fail-on-regression` as Markdown: the rows past it, then the cells it
/// cannot judge.
fn verdict_markdown(comparison: &Comparison, (pct, found): Regressions<'_, '_>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n**{} slower by more than {pct}%** (`--fail-on-regression`){}",
        found.len(),
        if found.is_empty() { "" } else { ":" }
    );
    for (cell, row) in found {
        let worse = row.judgement.regression_pct(row.higher_is_better).unwrap_or(f64::NAN);
        let _ = writeln!(out, "- `{cell}` {}: slower by {worse:.1}%", row.metric);
    }
    let unjudged = comparison.unjudged_samples();
    if !unjudged.is_empty() {
        let _ = writeln!(out, "\n**{}:**", unjudged_heading(comparison));
        for line in unjudged_lines(&unjudged) {
            let _ = writeln!(out, "- {line}");
        }
    }
    out
}

/// The pipeline cells, single-shot: values and change, no verdict.
fn pipelines(comparison: &Comparison) -> Table {
    let mut table = Table::new([
        ("cell", Align::Left),
        ("metric", Align::Left),
        ("A", Align::Right),
        ("B", Align::Right),
        ("change", Align::Right),
    ]);
    for row in &comparison.pipelines {
        table.push([
            row.cell.to_string(),
            row.metric.to_string(),
            value(row.metric, row.a),
            value(row.metric, row.b),
            change(row.change_pct),
        ]);
    }
    table
}

/// The heading of the pipeline cells paired across the transport.
fn across_heading(transports: Transports) -> String {
    let (embedded, kafka) = (TransportKind::Embedded, TransportKind::Kafka);
    format!(
        "pipeline cells across transports ({embedded} in {}, {kafka} in {}; single-shot: one \
         sample each, not judged; change: {kafka} against {embedded})",
        transports.side(embedded),
        transports.side(kafka)
    )
}

/// A figure's value as people read it; `-` where its cell lacks it.
fn figure_value(unit: FigureUnit, value: Option<f64>) -> String {
    match (unit, value) {
        (_, None) => "-".to_owned(),
        (FigureUnit::Rate, Some(rate)) => self::value(Metric::Throughput, rate),
        (FigureUnit::Records, Some(records)) => format!("{records:.0}"),
        (FigureUnit::Seconds, Some(seconds)) => format!("{:.1} ms", seconds * 1e3),
    }
}

/// The pipeline cells paired across the transport, single-shot: each figure on the
/// embedded log and on Kafka, and the change, no verdict.
fn across_transports(comparison: &Comparison) -> Table {
    let mut table = Table::new([
        ("cell", Align::Left),
        ("figure", Align::Left),
        (TransportKind::Embedded.as_str(), Align::Right),
        (TransportKind::Kafka.as_str(), Align::Right),
        ("change", Align::Right),
    ]);
    for pair in &comparison.across_transports {
        for BrokerFigure { figure, unit, embedded, kafka, change_pct } in &pair.figures {
            table.push([
                pair.cell.to_string(),
                figure.clone(),
                figure_value(*unit, *embedded),
                figure_value(*unit, *kafka),
                change(*change_pct),
            ]);
        }
    }
    table
}

/// The comparison in `format`; `regressions` lists the rows past `--fail-on-regression`
/// where it was given.
pub fn render(
    comparison: &Comparison,
    inputs: &Inputs<'_>,
    regressions: Option<Regressions<'_, '_>>,
    format: Format,
) -> String {
    match format {
        Format::Json => json(comparison, inputs, regressions),
        Format::Markdown => markdown(comparison, inputs, regressions),
        Format::Text => text(comparison, inputs, regressions),
    }
}

/// The note on each incomplete side: `B's run is incomplete: 3 of 4 cells done, ...`; and
/// on each side with failed cells: `B's run has failed cells: ...`.
fn incomplete_notes(inputs: &Inputs<'_>) -> Vec<String> {
    let (a, b) = inputs.results;
    let incomplete = [("A", a), ("B", b)].into_iter().filter_map(|(side, results)| {
        let incomplete = results.meta.incomplete.as_ref()?;
        Some(format!(
            "{side}'s run is incomplete: {}; its missing cells are listed, not compared",
            incomplete.describe()
        ))
    });
    let failed = [("A", a), ("B", b)].into_iter().filter(|(_, r)| !r.failed.is_empty()).map(
        |(side, results)| {
            let cells: Vec<String> =
                results.failed_cells().iter().map(ToString::to_string).collect();
            format!(
                "{side}'s run has failed cells, which measured nothing: {}; the other side's \
                 are listed as only in it",
                cells.join(", ")
            )
        },
    );
    incomplete.chain(failed).collect()
}

fn json(
    comparison: &Comparison,
    inputs: &Inputs<'_>,
    regressions: Option<Regressions<'_, '_>>,
) -> String {
    let file = |path: &Path, results: &Results| {
        serde_json::json!({
            "path": path.display().to_string(),
            "created": results.meta.created,
            "git_commit": results.meta.git_commit,
            "repeat": results.meta.repeat,
            "incomplete": results.meta.incomplete,
            "failed": results.failed,
        })
    };
    let mut value = serde_json::to_value(comparison).expect("a comparison serialises");
    let object = value.as_object_mut().expect("a comparison is an object");
    object.insert("a".into(), file(inputs.a, inputs.results.0));
    object.insert("b".into(), file(inputs.b, inputs.results.1));
    object.insert(
        "test".into(),
        "two-sided Welch's t-test on the samples' logarithms (on their values where one is \
         not positive)"
            .into(),
    );
    let summary: serde_json::Map<String, serde_json::Value> = comparison
        .counts()
        .iter()
        .map(|(verdict, count)| (verdict.as_str().to_owned(), (*count).into()))
        .collect();
    object.insert("summary".into(), summary.into());
    if let Some(transports) = object.get_mut("transports") {
        transports["note"] = PAIRED_NOTE.into();
    }
    if let Some(regressions) = regressions {
        let unjudged: Vec<serde_json::Value> = comparison
            .unjudged_samples()
            .iter()
            .map(
                |(cell, (a, b))| serde_json::json!({ "cell": cell, "samples": { "a": a, "b": b } }),
            )
            .collect();
        let mut verdict = fail_on_regression_json(regressions);
        verdict["inconclusive"] = (regressions.1.is_empty() && !unjudged.is_empty()).into();
        verdict["unjudged"] = unjudged.into();
        object.insert("fail_on_regression".into(), verdict);
    }
    let mut out = serde_json::to_string_pretty(&value).expect("a comparison serialises");
    out.push('\n');
    out
}

fn text(
    comparison: &Comparison,
    inputs: &Inputs<'_>,
    regressions: Option<Regressions<'_, '_>>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "A: {} {}", inputs.a.display(), details(inputs.results.0));
    let _ = writeln!(out, "B: {} {}", inputs.b.display(), details(inputs.results.1));
    if !comparison.settings.is_empty() {
        out.push_str("note: the runs' settings differ (A -> B):\n");
        let mut settings = Table::new([("", Align::Left), ("", Align::Left)]);
        for d in &comparison.settings {
            settings.push([d.field.clone(), format!("{} -> {}", d.a, d.b)]);
        }
        out.push_str(&settings.text("  "));
        if comparison.transports.is_some() {
            let _ = writeln!(out, "  {PAIRED_NOTE}");
        }
    }
    let _ = writeln!(out, "{}", method(comparison));
    if lacks_samples(comparison) {
        let _ = writeln!(out, "note: {NO_SAMPLES}");
    }
    for note in incomplete_notes(inputs) {
        let _ = writeln!(out, "note: {note}");
    }
    out.push('\n');
    if comparison.cells.is_empty() {
        out.push_str("no cell is in both runs\n");
    } else {
        // A cell's name once, on its first metric's row.
        let mut table = judged_table(comparison, SIDES, None);
        let firsts =
            comparison.cells.iter().flat_map(|cell| (0..cell.metrics.len()).map(|i| i == 0));
        for (row, first) in table.rows.iter_mut().zip(firsts) {
            if !first {
                row[0] = Cell::default();
            }
        }
        out.push_str(&table.text(""));
    }
    for (side, cells) in [("A", &comparison.only_in_a), ("B", &comparison.only_in_b)] {
        if !cells.is_empty() {
            let _ = writeln!(out, "\nonly in {side} (not compared):");
            for cell in cells {
                let _ = writeln!(out, "  {}", unmatched(cell));
            }
        }
    }
    for (side, cells) in [("A", &comparison.missing_in_a), ("B", &comparison.missing_in_b)] {
        if !cells.is_empty() {
            let _ = writeln!(out, "\nmissing from {side} (its run is incomplete; not compared):");
            for cell in cells {
                let _ = writeln!(out, "  {cell}");
            }
        }
    }
    if !comparison.pipelines.is_empty() {
        let _ = writeln!(out, "\n{PIPELINES}:");
        out.push_str(&pipelines(comparison).text("  "));
    }
    if let Some(transports) = comparison.transports.filter(|_| has_pairs(comparison)) {
        let _ = writeln!(out, "\n{}:", across_heading(transports));
        out.push_str(&across_transports(comparison).text("  "));
    }
    let _ = writeln!(out, "\n{}", counts(comparison));
    if let Some(regressions) = regressions {
        out.push_str(&verdict_text(comparison, regressions));
    }
    out
}

/// The verdict on `--fail-on-regression` as text: the rows past it, then the cells it
/// cannot judge.
fn verdict_text(comparison: &Comparison, (pct, found): Regressions<'_, '_>) -> String {
    let mut out = String::new();
    let unjudged = comparison.unjudged_samples();
    if found.is_empty() {
        let cell = if unjudged.is_empty() { "cell" } else { "judged cell" };
        let _ = writeln!(out, "no {cell} is slower by more than {pct}% (--fail-on-regression)");
    } else {
        let _ = writeln!(out, "{} slower by more than {pct}% (--fail-on-regression):", found.len());
        for (cell, row) in found {
            let _ = writeln!(out, "  {}", regression_line(cell, row));
        }
    }
    if !unjudged.is_empty() {
        let _ = writeln!(out, "{}:", unjudged_heading(comparison));
        for line in unjudged_lines(&unjudged) {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}

/// The heading above the cells `--fail-on-regression` cannot judge.
fn unjudged_heading(comparison: &Comparison) -> String {
    format!(
        "{} cell(s) unjudged, fewer than {} samples on a side: --fail-on-regression cannot \
         pass them (exit {UNJUDGED} unless a regression fails it)",
        comparison.unjudged().len(),
        comparison.min_samples
    )
}

/// `uniform inline: 1 A, 1 B samples`, one per cell `--fail-on-regression` cannot judge.
fn unjudged_lines(unjudged: &[(&ListedCell, (usize, usize))]) -> Vec<String> {
    unjudged.iter().map(|(cell, (a, b))| format!("{cell}: {a} A, {b} B samples")).collect()
}

fn markdown(
    comparison: &Comparison,
    inputs: &Inputs<'_>,
    regressions: Option<Regressions<'_, '_>>,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### keyed-bench compare: {}\n", counts(comparison));
    let _ = writeln!(out, "- A: `{}` {}", inputs.a.display(), details(inputs.results.0));
    let _ = writeln!(out, "- B: `{}` {}", inputs.b.display(), details(inputs.results.1));
    let _ = writeln!(out, "- {}", method(comparison));
    if lacks_samples(comparison) {
        let _ = writeln!(out, "- {NO_SAMPLES}");
    }
    for note in incomplete_notes(inputs) {
        let _ = writeln!(out, "- **{note}**");
    }
    if !comparison.settings.is_empty() {
        out.push_str("\n> **Note:** the runs' settings differ (A -> B): ");
        let listed: Vec<String> = comparison
            .settings
            .iter()
            .map(|d| format!("`{}` {} -> {}", d.field, d.a, d.b))
            .collect();
        out.push_str(&listed.join("; "));
        if comparison.transports.is_some() {
            let _ = write!(out, ". {}{}", PAIRED_NOTE[..1].to_ascii_uppercase(), &PAIRED_NOTE[1..]);
        }
        out.push('\n');
    }
    if let Some(regressions) = regressions {
        out.push_str(&verdict_markdown(comparison, regressions));
    }
    if !comparison.cells.is_empty() {
        out.push('\n');
        out.push_str(&judged_table(comparison, SIDES, None).markdown());
    } else {
        out.push_str("\nNo cell is in both runs.\n");
    }
    for (side, cells) in [("A", &comparison.only_in_a), ("B", &comparison.only_in_b)] {
        if !cells.is_empty() {
            let listed: Vec<String> = cells.iter().map(|c| format!("`{}`", unmatched(c))).collect();
            let _ = writeln!(out, "\n**Only in {side}** (not compared): {}", listed.join(", "));
        }
    }
    for (side, cells) in [("A", &comparison.missing_in_a), ("B", &comparison.missing_in_b)] {
        if !cells.is_empty() {
            let listed: Vec<String> = cells.iter().map(|c| format!("`{c}`")).collect();
            let _ = writeln!(
                out,
                "\n**Missing from {side}** (its run is incomplete; not compared): {}",
                listed.join(", ")
            );
        }
    }
    if !comparison.pipelines.is_empty() {
        let mut heading = PIPELINES.to_owned();
        heading[..1].make_ascii_uppercase();
        let _ = writeln!(out, "\n{heading}:\n");
        out.push_str(&pipelines(comparison).markdown());
    }
    if let Some(transports) = comparison.transports.filter(|_| has_pairs(comparison)) {
        let mut heading = across_heading(transports);
        heading[..1].make_ascii_uppercase();
        let _ = writeln!(out, "\n{heading}:\n");
        out.push_str(&across_transports(comparison).markdown());
    }
    out
}

/// Whether some pipeline cell is paired across the transport.
fn has_pairs(comparison: &Comparison) -> bool {
    !comparison.across_transports.is_empty()
}

#[cfg(test)]
mod tests {
    use super::super::{compare, Options};
    use super::*;

    fn reference() -> Results {
        let text = include_str!("../../../results/2026-11-30-vm/results.json");
        Results::parse(text.as_bytes(), Path::new("reference.json")).unwrap()
    }

    /// A (the uniform cells, 5 samples each) against B (keyed-mailbox 30% slower, one cell
    /// gone, the seed changed).
    fn planted() -> (Results, Results) {
        let mut a = reference();
        a.runs.retain(|run| run.scenario == "uniform");
        for run in &mut a.runs {
            let t = run.throughput_per_s.median;
            run.samples = Some(crate::results::Samples {
                bystander_p99_ns: Vec::new(),
                throughput_per_s: (0..5).map(|i| t * (1.0 + 0.001 * f64::from(i))).collect(),
                elapsed_s: (0..5).map(|i| 0.1 + 0.0001 * f64::from(i)).collect(),
                latency_p99_ns: (0..5).map(|i| 50_000 + i).collect(),
                interference: Vec::new(),
                cpu_s: Vec::new(),
            });
        }
        let mut b = a.clone();
        b.meta.seed = 9;
        b.runs.retain(|run| run.strategy != "thread-pool");
        for run in b.runs.iter_mut().filter(|run| run.strategy == "keyed-mailbox") {
            let samples = run.samples.as_mut().unwrap();
            samples.throughput_per_s.iter_mut().for_each(|t| *t *= 0.7);
            samples.elapsed_s.iter_mut().for_each(|e| *e /= 0.7);
        }
        (a, b)
    }

    #[test]
    fn every_format_reports_verdicts_unmatched_cells_and_settings() {
        let (a, b) = planted();
        let comparison = compare(&a, &b, &Options::default());
        let inputs = Inputs { a: Path::new("a.json"), b: Path::new("b.json"), results: (&a, &b) };
        let regressions = comparison.regressions(10.0);
        let found = Some((10.0, regressions.as_slice()));
        let text = render(&comparison, &inputs, found, Format::Text);
        assert!(text.contains("meta.seed") && text.contains("42 -> 9"), "{text}");
        let line = text.lines().find(|l| l.starts_with("uniform keyed-mailbox")).unwrap();
        assert!(line.contains("throughput") && line.contains("-30.0%"), "{line}");
        assert!(line.ends_with("slower") && line.contains("<0.001"), "{line}");
        assert!(text.contains("only in B") || text.contains("only in A"), "{text}");
        assert!(text.contains("only in A (not compared):\n  uniform thread-pool"), "{text}");
        assert!(text.contains("2 slower by more than 10% (--fail-on-regression)"), "{text}");
        assert!(text.contains("uniform keyed-mailbox throughput: slower by 30.0%"), "{text}");
        let markdown = render(&comparison, &inputs, found, Format::Markdown);
        assert!(markdown.contains("| uniform keyed-mailbox | throughput |"), "{markdown}");
        assert!(markdown.contains("-30.0% | 5/5 | <0.001 | **slower** |"), "{markdown}");
        assert!(markdown.contains("**Only in A** (not compared): `uniform thread-pool`"));
        assert!(markdown.contains("`meta.seed` 42 -> 9"), "{markdown}");
        let json: serde_json::Value =
            serde_json::from_str(&render(&comparison, &inputs, found, Format::Json)).unwrap();
        assert_eq!(json["summary"]["slower"], 2);
        assert_eq!(json["fail_on_regression"]["failed"], true);
        assert_eq!(json["only_in_a"][0]["strategy"], "thread-pool");
        assert_eq!(json["settings"][0]["field"], "meta.seed");
        let row = &json["cells"]
            .as_array()
            .unwrap()
            .iter()
            .find(|cell| cell["cell"]["strategy"] == "keyed-mailbox")
            .unwrap()["metrics"][0];
        assert_eq!(row["metric"], "throughput");
        assert_eq!(row["verdict"], "slower");
        assert_eq!(row["higher_is_better"], true);
        assert_eq!(row["a_samples"], 5);
    }

    #[test]
    fn cells_with_too_few_samples_leave_the_regression_check_inconclusive() {
        let (a, mut b) = planted();
        // B's inline cell kept 2 repetitions: too few to judge.
        for run in b.runs.iter_mut().filter(|run| run.strategy == "inline") {
            let samples = run.samples.as_mut().unwrap();
            samples.throughput_per_s.truncate(2);
            samples.elapsed_s.truncate(2);
            samples.latency_p99_ns.truncate(2);
        }
        let comparison = compare(&a, &b, &Options::default());
        let inputs = Inputs { a: Path::new("a.json"), b: Path::new("b.json"), results: (&a, &b) };
        let unjudged: Vec<String> = comparison.unjudged().iter().map(ToString::to_string).collect();
        assert_eq!(unjudged, ["uniform inline"]);
        // Past 50% nothing regressed: the judged cells pass, the unjudged one cannot.
        let none = comparison.regressions(50.0);
        let found = Some((50.0, none.as_slice()));
        let text = render(&comparison, &inputs, found, Format::Text);
        assert!(text.contains("no judged cell is slower by more than 50%"), "{text}");
        assert!(
            text.contains(
                "1 cell(s) unjudged, fewer than 3 samples on a side: \
                 --fail-on-regression cannot pass them (exit 3 unless a regression fails it):\n  \
                 uniform inline: 5 A, 2 B samples"
            ),
            "{text}"
        );
        let markdown = render(&comparison, &inputs, found, Format::Markdown);
        assert!(markdown.contains("- uniform inline: 5 A, 2 B samples"), "{markdown}");
        let json: serde_json::Value =
            serde_json::from_str(&render(&comparison, &inputs, found, Format::Json)).unwrap();
        let verdict = &json["fail_on_regression"];
        assert_eq!((&verdict["failed"], &verdict["inconclusive"]), (&false.into(), &true.into()));
        assert_eq!(verdict["unjudged"][0]["cell"]["strategy"], "inline");
        assert_eq!(verdict["unjudged"][0]["samples"], serde_json::json!({ "a": 5, "b": 2 }));
        // A regression past 10% fails the check whatever else could not be judged.
        let slower = comparison.regressions(10.0);
        let found = Some((10.0, slower.as_slice()));
        let json: serde_json::Value =
            serde_json::from_str(&render(&comparison, &inputs, found, Format::Json)).unwrap();
        let verdict = &json["fail_on_regression"];
        assert_eq!((&verdict["failed"], &verdict["inconclusive"]), (&true.into(), &false.into()));
        assert_eq!(verdict["unjudged"].as_array().map(Vec::len), Some(1));
        // Without the check, nothing is said of it.
        let text = render(&comparison, &inputs, None, Format::Text);
        assert!(!text.contains("unjudged"), "{text}");
    }

    #[test]
    fn a_corrected_comparison_says_so_and_shows_the_corrected_p() {
        let (a, b) = planted();
        let holm = Options { correction: Correction::Holm, ..Options::default() };
        let comparison = compare(&a, &b, &holm);
        let inputs = Inputs { a: Path::new("a.json"), b: Path::new("b.json"), results: (&a, &b) };
        let text = render(&comparison, &inputs, None, Format::Text);
        let judged = comparison.rows().count();
        assert!(text.contains(&format!("Holm-corrected for the {judged} rows judged")), "{text}");
        assert!(text.contains("p (Holm)"), "{text}");
        let line = text.lines().find(|l| l.starts_with("uniform keyed-mailbox")).unwrap();
        // The p shown is the corrected one: the rows judged times the raw, at least.
        let row = comparison.rows().find(|(cell, _)| cell.key.strategy == "keyed-mailbox");
        let judgement = row.unwrap().1.judgement;
        assert!(judgement.p_adjusted.unwrap() >= judgement.p_value.unwrap(), "{judgement:?}");
        assert!(line.ends_with("slower"), "a 30% fall in 0.1% noise survives: {line}");
        let json: serde_json::Value =
            serde_json::from_str(&render(&comparison, &inputs, None, Format::Json)).unwrap();
        assert_eq!(json["correction"], "holm");
        assert!(json["cells"][0]["metrics"][0]["p_adjusted"].is_number());
        let plain = compare(&a, &b, &Options::default());
        let json: serde_json::Value =
            serde_json::from_str(&render(&plain, &inputs, None, Format::Json)).unwrap();
        assert_eq!(json["correction"], "none");
        assert!(json["cells"][0]["metrics"][0].get("p_adjusted").is_none());
    }

    /// One small pipeline-crash cell.
    fn pipeline_cell() -> crate::results::PipelineRun {
        use crate::pipeline::{run_scenario, Bench, PipelinePlan};
        let sizes = crate::workload::Sizes {
            pipeline_records: 600,
            pipeline_keys: 50,
            partitions: 2,
            crash_after: 200,
            commit_interval_ms: 1,
            ..crate::workload::Sizes::quick()
        };
        let timer = crate::measure::timer::Timer::start();
        let bench = Bench {
            sizes: &sizes,
            seed: 1,
            timer: &timer,
            strategy_config: strategies::StrategyConfig::with_workers(2),
            watch: Default::default(),
        };
        let strategy = [strategies::StrategyId::KeyedMailbox.into()];
        let scenario = crate::workload::ScenarioId::PipelineCrash;
        let runs = run_scenario(scenario, &bench, &PipelinePlan::default(), &strategy, |_| {});
        runs.expect("a small pipeline cell runs").remove(0)
    }

    #[test]
    fn pipeline_cells_are_listed_as_single_shot_and_old_files_noted() {
        let mut a = reference();
        a.runs.truncate(3);
        a.pipelines = vec![pipeline_cell()];
        let mut b = a.clone();
        b.pipelines[0].elapsed_s *= 2.0;
        b.pipelines[0].throughput_per_s /= 2.0;
        let comparison = compare(&a, &b, &Options::default());
        assert_eq!(comparison.pipelines.len(), 2);
        assert!(comparison.only_in_a.is_empty() && comparison.only_in_b.is_empty());
        let inputs = Inputs { a: Path::new("a.json"), b: Path::new("b.json"), results: (&a, &b) };
        let text = render(&comparison, &inputs, None, Format::Text);
        assert!(text.contains("note: cells without per-repetition samples"), "{text}");
        assert!(text.contains(&format!("{PIPELINES}:")), "{text}");
        let elapsed = text.lines().find(|l| l.contains("pipeline-crash") && l.contains("elapsed"));
        assert!(elapsed.is_some_and(|line| line.ends_with("+100.0%")), "{text}");
        assert!(!text.contains("note: the runs' settings differ"), "{text}");
        assert!(text.ends_with("0 faster, 0 slower, 0 within noise, 9 too few samples to judge\n"));
        let markdown = render(&comparison, &inputs, None, Format::Markdown);
        assert!(markdown.contains("Pipeline cells (single-shot"), "{markdown}");
        b.pipelines.clear();
        let comparison = compare(&a, &b, &Options::default());
        assert_eq!(comparison.only_in_a.len(), 1);
        assert_eq!(
            comparison.only_in_a[0].key.scenario,
            crate::workload::ScenarioId::PipelineCrash
        );
    }
}
