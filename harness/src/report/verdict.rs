//! The verdict: the table that `summary.md` and `report.html` open with. One row per
//! measured cell (scenario and parameter), so no parameter is picked to stand for its
//! scenario. Each row ranks the ordered designs on the one metric its scenario exists to
//! show (its spec's headline, a [`Metric`] of the registry), gives every ordered design's ratio
//! to the best with its spread
//! over repetitions, and a one-line reading assembled from those numbers by a few
//! templates ([`reading`], [`pipeline_reading`]). Reads results only.
//!
//! Rules: only ordered designs are ranked (`inline`, the reference, and unordered controls
//! such as `thread-pool` are not; an unordered control is named when it beats the best);
//! a design with any correctness violation in the scenario is never best and is marked ✗;
//! a ratio with no data on either side, or a zero best, reads n/a; designs whose
//! repetitions do not differ read "within noise" rather than a winner: by the test
//! `compare` uses between runs ([`crate::results::noise`]: Welch's t-test on the
//! repetitions' logarithms at 5%, and medians more than 2% apart), or, for a figure with
//! no per-repetition samples, by overlapping min-max spreads.

use std::collections::HashMap;

use super::document::Document;
use super::format::format_value;
use super::or_dash;
use super::prose::prose;
use super::table::{Cell, Declared, Style, Table};
use super::view::{Rows, View};
use crate::results::noise::{self, Moments};
use crate::results::{Metric, Results, RunResult};
use crate::workload::ScenarioId;

/// Where neither side has a spread (one repetition, or a percentile of one merged
/// histogram), medians this close (relative to the larger) read as within noise.
pub const NOISE_WITHOUT_SPREAD: f64 = 0.05;

/// The column of the best design's price of order, where the run has one.
const PRICE_COLUMN: &str = "price of order";

/// The metric column of a pipeline row, which ranks nothing and reads correctness first.
const PIPELINE_COLUMN: &str = "lost / final state (correctness first)";

/// The metric column of a ranked row: the metric and which way is better.
fn column(metric: Metric) -> String {
    let better = if metric.higher_is_better() { "higher" } else { "lower" };
    format!("{} ({better})", metric.label())
}

/// One design's value of a metric: the median and, where the repetitions give one, the
/// min-max spread and the moments the test reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Value {
    /// The median (or the merged figure).
    pub median: f64,
    /// Lowest and highest over repetitions; none where not recorded or of zero width.
    pub spread: Option<(f64, f64)>,
    /// The repetitions' samples as the test reads them; none with fewer than
    /// [`noise::MIN_SAMPLES`] or where the metric records no samples.
    pub moments: Option<Moments>,
}

impl Value {
    fn new(median: f64, spread: Option<(f64, f64)>, samples: &[f64]) -> Option<Self> {
        let spread = spread
            .filter(|(low, high)| low.is_finite() && high.is_finite() && high > low)
            .map(|(low, high)| (low.min(median), high.max(median)));
        let moments = Moments::of(samples);
        median.is_finite().then_some(Self { median, spread, moments })
    }

    /// A value with no spread and no samples (a figure of one merged histogram).
    pub fn single(median: f64) -> Self {
        Self { median, spread: None, moments: None }
    }
}

/// The value of `metric` for one cell's row, of the results' `runs`; none where the row has
/// no such figure.
pub fn value(metric: Metric, row: &RunResult, runs: &[RunResult]) -> Option<Value> {
    Value::new(metric.value(row, runs)?, metric.spread(row), &metric.samples(row))
}

/// Whether two values are within each other's noise: where both have samples, unless they
/// differ as `compare` judges ([`noise::differs`]); else where their spreads overlap, or,
/// where either has none, their medians are within [`NOISE_WITHOUT_SPREAD`].
pub fn within_noise(a: Value, b: Value) -> bool {
    if let (Some(first), Some(second)) = (a.moments, b.moments) {
        if first.log == second.log {
            let p = noise::moments_p(&first, &second);
            return !noise::differs(p, a.median, b.median, noise::ALPHA, noise::THRESHOLD_PCT);
        }
    }
    match (a.spread, b.spread) {
        (Some((a_low, a_high)), Some((b_low, b_high))) => a_low <= b_high && b_low <= a_high,
        _ => {
            let larger = a.median.abs().max(b.median.abs());
            larger == 0.0 || (a.median - b.median).abs() <= NOISE_WITHOUT_SPREAD * larger
        }
    }
}

/// One design in one cell.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Strategy id.
    pub strategy: String,
    /// Its value of the headline metric; none where it has no data.
    pub value: Option<Value>,
    /// Whether it had a correctness violation anywhere in the scenario.
    pub violated: bool,
    /// Whether its cell's receipt says `void`: shown, never ranked.
    pub void: bool,
}

/// The best eligible entry: data, no violation, highest (or lowest) median; the first on
/// a tie.
pub fn best(entries: &[Entry], higher: bool) -> Option<&Entry> {
    let eligible = entries.iter().filter(|entry| !entry.violated && !entry.void);
    let medians = eligible.filter_map(|entry| Some((entry, entry.value?.median)));
    let better = |held: f64, value: f64| (higher && value > held) || (!higher && value < held);
    let best = medians.reduce(|held, next| if better(held.1, next.1) { next } else { held });
    best.map(|(entry, _)| entry)
}

/// `value / best`, none where either is missing or not a finite ratio.
pub(super) fn ratio(value: f64, best: f64) -> Option<f64> {
    (best != 0.0).then(|| value / best).filter(|ratio| ratio.is_finite())
}

/// How much better `best` is than `other`, as a factor of at least 1; none where a side
/// is zero.
fn factor(best: f64, other: f64, higher: bool) -> Option<f64> {
    let (top, bottom) = if higher { (best, other) } else { (other, best) };
    ratio(top, bottom)
}

/// A ratio as it reads: three decimals below 0.1, two below 10, one below 100, then whole
/// with thousands separators.
pub fn format_ratio(ratio: f64) -> String {
    if ratio < 0.1 {
        format!("{ratio:.3}")
    } else if ratio < 10.0 {
        format!("{ratio:.2}")
    } else if ratio < 100.0 {
        format!("{ratio:.1}")
    } else {
        let digits = format!("{:.0}", ratio);
        let mut out = String::new();
        for (index, digit) in digits.chars().enumerate() {
            if index > 0 && (digits.len() - index) % 3 == 0 {
                out.push(',');
            }
            out.push(digit);
        }
        out
    }
}

/// One entry's cell: its ratio to the best with the spread, ✗ where it had a violation.
pub fn ratio_cell(entry: &Entry, best: Option<&Entry>) -> String {
    let best = best.and_then(|best| best.value).map(|value| value.median);
    let of = |value: f64| Some(format_ratio(ratio(value, best?)?));
    let spread = |(low, high)| Some(format!(" ({}-{})", of(low)?, of(high)?));
    let text = entry.value.and_then(|value| {
        Some(format!("{}{}", of(value.median)?, value.spread.and_then(spread).unwrap_or_default()))
    });
    let void = if entry.void { " [void]" } else { "" };
    let violated = if entry.violated { " ✗" } else { "" };
    format!("{}{void}{violated}", text.as_deref().unwrap_or("n/a"))
}

/// `a`, `a and b`, `a, b and c`.
fn list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// The reading of one ranked cell, from its entries and the unordered controls' values.
///
/// Templates: no eligible data; a single eligible design; "A, B within noise on M";
/// "A has Fx higher M than B"; then, when not yet named, "farthest: C at Fx lower";
/// designs excluded for violations; an unordered control that beats the best.
pub fn reading(metric: Metric, entries: &[Entry], controls: &[(&str, Value)]) -> String {
    let higher = metric.higher_is_better();
    let label = metric.label();
    let (better, worse) = if higher { ("higher", "lower") } else { ("lower", "higher") };
    let mut eligible: Vec<(&str, Value)> = entries
        .iter()
        .filter(|entry| !entry.violated)
        .filter_map(|entry| Some((entry.strategy.as_str(), entry.value?)))
        .collect();
    // Best first; a stable sort keeps the column order among equals.
    eligible.sort_by(|(_, a), (_, b)| {
        let order = a.median.partial_cmp(&b.median).unwrap_or(std::cmp::Ordering::Equal);
        if higher {
            order.reverse()
        } else {
            order
        }
    });
    let mut parts = Vec::new();
    match eligible.as_slice() {
        [] => parts.push(prose!("verdict", "no_data", label = label)),
        [(only, _)] => parts.push(prose!("verdict", "only", name = *only)),
        [(best_name, best), rest @ ..] => {
            let tied: Vec<&str> = rest
                .iter()
                .filter(|(_, value)| within_noise(*best, *value))
                .map(|(name, _)| *name)
                .collect();
            let mut named = vec![*best_name];
            if tied.is_empty() {
                let (runner, value) = rest[0];
                let lead = factor(best.median, value.median, higher);
                parts.push(leads(best_name, runner, lead, better, label));
                named.push(runner);
            } else {
                named.extend(&tied);
                parts.push(prose!(
                    "verdict",
                    "tied",
                    all = tied.len() == rest.len(),
                    names = list(&named),
                    label = label,
                ));
            }
            if let Some((farthest, value)) = rest.last().filter(|(name, _)| !named.contains(name)) {
                parts.push(match factor(best.median, value.median, higher) {
                    Some(f) => prose!(
                        "verdict",
                        "farthest",
                        name = *farthest,
                        ratio = format_ratio(f),
                        worse = worse,
                    ),
                    None => prose!("verdict", "farthest_unrated", name = *farthest),
                });
            }
            for (control, value) in controls {
                let ahead = factor(value.median, best.median, higher).filter(|f| *f > 1.0);
                if let Some(f) = ahead.filter(|_| !within_noise(*best, *value)) {
                    parts.push(prose!(
                        "verdict",
                        "control_ahead",
                        control = *control,
                        ratio = format_ratio(f),
                        better = better,
                    ));
                }
            }
        }
    }
    let excluded: Vec<&str> = entries
        .iter()
        .filter(|entry| entry.violated)
        .map(|entry| entry.strategy.as_str())
        .collect();
    if !excluded.is_empty() {
        parts.push(prose!("verdict", "excluded", names = list(&excluded)));
    }
    parts.join("; ")
}

/// The reading's part where `best` leads `runner`, the next design, by `factor` on the
/// metric `label` (`better`: "higher" or "lower").
fn leads(best: &str, runner: &str, factor: Option<f64>, better: &str, label: &str) -> String {
    match factor {
        Some(f) => prose!(
            "verdict",
            "leads",
            best = best,
            ratio = format_ratio(f),
            better = better,
            label = label,
            runner = runner,
        ),
        None => prose!("verdict", "leads_unrated", best = best, runner = runner, label = label),
    }
}

/// One ordered design's pipeline cell: records lost, redelivered, and whether the
/// version-aware projection's final state came out right.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PipelineCell {
    /// Records never applied.
    pub lost: u64,
    /// Records delivered twice.
    pub redelivered: u64,
    /// Whether the final state matched a sequential replay; none where it is not judged (a
    /// retry-forever cell, whose poison records never settle).
    pub correct: Option<bool>,
}

/// How many of `total` designs end wrong, and how many are not judged.
fn final_states(wrong: usize, unjudged: usize, total: usize) -> String {
    match (wrong, unjudged) {
        (0, 0) => prose!("verdict", "all_correct"),
        (0, unjudged) if unjudged == total => prose!("verdict", "none_judged"),
        (0, unjudged) => prose!(
            "verdict",
            "correct_unjudged",
            correct = total - unjudged,
            total = total,
            unjudged = unjudged,
        ),
        (wrong, _) if wrong == total => prose!("verdict", "all_wrong"),
        (wrong, 0) => prose!("verdict", "wrong", wrong = wrong, total = total),
        (wrong, unjudged) => {
            prose!("verdict", "wrong_unjudged", wrong = wrong, total = total, unjudged = unjudged)
        }
    }
}

/// `n`, or `low-high` where they differ.
fn range(values: impl Iterator<Item = u64> + Clone) -> String {
    match (values.clone().min(), values.max()) {
        (Some(low), Some(high)) if low == high => low.to_string(),
        (Some(low), Some(high)) => format!("{low}-{high}"),
        _ => "n/a".to_owned(),
    }
}

/// The correctness-first reading of one pipeline cell over the ordered designs.
pub fn pipeline_reading(cells: &[PipelineCell]) -> String {
    let total = cells.len();
    if total == 0 {
        return prose!("verdict", "no_design");
    }
    let losing: Vec<&PipelineCell> = cells.iter().filter(|cell| cell.lost > 0).collect();
    let wrong = cells.iter().filter(|cell| cell.correct == Some(false)).count();
    let unjudged = cells.iter().filter(|cell| cell.correct.is_none()).count();
    let mut parts = Vec::new();
    if losing.is_empty() && wrong == 0 && unjudged == 0 {
        parts.push(prose!("verdict", "all_clean", total = total));
    } else {
        if losing.is_empty() {
            parts.push(prose!("verdict", "none_lost", total = total));
        } else {
            let lost = range(losing.iter().map(|cell| cell.lost));
            parts.push(if losing.len() == total {
                prose!("verdict", "all_lose", total = total, lost = lost)
            } else {
                prose!("verdict", "some_lose", losing = losing.len(), total = total, lost = lost)
            });
        }
        parts.push(final_states(wrong, unjudged, total));
    }
    if cells.iter().any(|cell| cell.redelivered > 0) {
        let redelivered = range(cells.iter().map(|cell| cell.redelivered));
        parts.push(prose!("verdict", "redelivered", range = redelivered));
    }
    parts.join("; ")
}

/// The ordered designs the verdict ranks, in the order the results first name them.
pub(super) fn contenders(results: &Results) -> Vec<&str> {
    let all = results
        .runs
        .iter()
        .map(|run| run.strategy.as_str())
        .chain(results.pipelines.iter().map(|run| run.strategy.as_str()));
    super::first_seen(all.filter(|name| super::is_contender(name)))
}

/// Whether `strategy` is an unordered control (`thread-pool`): not ordered, and not a
/// strategy this build does not know.
fn is_unordered_control(strategy: &str) -> bool {
    strategies::descriptor_of(strategy).is_some_and(|descriptor| !descriptor.ordered)
}

/// The verdict's data: the sentences that say how to read it, and the table; `None` where
/// the results hold no cell.
pub fn verdict(results: &Results) -> Option<(Cell, Table)> {
    verdict_of(&View::of(results))
}

/// The verdict of the results `view` holds ([`verdict`]).
pub(super) fn verdict_of(view: &View<'_>) -> Option<(Cell, Table)> {
    let results = view.results();
    if results.runs.is_empty() && results.pipelines.is_empty() {
        return None;
    }
    let designs = contenders(results);
    let mut rows = Vec::new();
    for &scenario in ScenarioId::ALL {
        match scenario.headline() {
            Some(metric) => rows.extend(ranked_rows(view, scenario, metric, &designs)),
            None => rows.extend(pipeline_rows(view, scenario, &designs)),
        }
    }
    // Files from before the price of order keep their table as it was.
    let priced = !results.price_of_order.is_empty();
    let table = Table::declared(&verdict_columns(&designs, priced), &rows);
    let mut guide = intro(results, designs.len());
    if priced {
        guide = guide.then(Style::Plain, format!(" {}", prose!("verdict", "price")));
    }
    Some((guide, table))
}

/// One row of the verdict: a cell of a scenario, what each ordered design did in it, the
/// price of order of its best design and the reading.
struct VerdictRow<'a> {
    /// The cell: its scenario and parameter.
    scenario: ScenarioId,
    param: &'a str,
    /// What the row compares: the ranked metric, or lost records and the final state.
    metric: String,
    /// The best design and its figure; `-` where the row ranks none.
    best: Cell,
    /// One cell per ordered design, in the columns' order.
    designs: Vec<Cell>,
    /// The price of order of the best design; `-` where the row ranks none.
    price: Cell,
    /// The sentence that reads the row.
    reading: String,
}

/// The verdict's columns: the cell, the metric, the best design, one column per ordered
/// design of `designs`, the price of order where the results are `priced`, the reading.
fn verdict_columns<'r>(designs: &[&str], priced: bool) -> Vec<Declared<'static, VerdictRow<'r>>> {
    let mut columns = vec![
        Declared::left("scenario", |row: &VerdictRow<'r>| row.scenario.as_str()),
        Declared::left("param", |row: &VerdictRow<'r>| or_dash(row.param)),
        Declared::left("metric", |row: &VerdictRow<'r>| row.metric.clone()),
        Declared::left("best", |row: &VerdictRow<'r>| row.best.clone()),
    ];
    columns.extend(designs.iter().enumerate().map(|(at, &design)| {
        Declared::right(design, move |row: &VerdictRow<'r>| row.designs[at].clone())
    }));
    if priced {
        columns.push(Declared::right(PRICE_COLUMN, |row: &VerdictRow<'r>| row.price.clone()));
    }
    columns.push(Declared::left("reading", |row: &VerdictRow<'r>| row.reading.clone()));
    columns
}

/// The sentences that say how to read the verdict of `contenders` ordered designs.
fn intro(results: &Results, contenders: usize) -> Cell {
    let meta = &results.meta;
    Cell::inline(&prose!(
        "verdict",
        "intro",
        contenders = contenders,
        cores = meta.cores,
        workers = meta.workers,
        repeat = meta.repeat,
        noise = format!("{:.0}", NOISE_WITHOUT_SPREAD * 100.0),
    ))
}

/// One measured cell of a ranked scenario: its param, its rows, and an entry per contender.
pub(super) struct RankedCell<'a> {
    /// The cell's parameter.
    pub param: &'a str,
    /// Every row measured in the cell, contenders and controls alike.
    pub rows: Rows<'a>,
    /// One entry per contender, in the columns' order.
    pub entries: Vec<Entry>,
    /// Where each contender's entry is in `entries`.
    at: HashMap<String, usize>,
}

impl RankedCell<'_> {
    /// The entry of `strategy`, if it is a column.
    pub fn entry(&self, strategy: &str) -> Option<&Entry> {
        self.at.get(strategy).map(|&at| &self.entries[at])
    }
}

/// The cells of `scenario`, one per param in first-seen order, with the `columns` designs'
/// entries on `metric`.
pub(super) fn ranked_cells<'a>(
    view: &View<'a>,
    scenario: ScenarioId,
    metric: Metric,
    columns: &[&str],
) -> Vec<RankedCell<'a>> {
    let runs = &view.results().runs;
    let rows = view.rows(scenario);
    let violated =
        |strategy: &str| rows.of_strategy(strategy).iter().any(|row| !row.correctness.is_clean());
    rows.params()
        .into_iter()
        .map(|param| {
            let cell = Rows::new(rows.cell(param));
            let entries = columns
                .iter()
                .map(|&strategy| {
                    let row = cell.on(strategy);
                    Entry {
                        strategy: strategy.to_owned(),
                        value: row.and_then(|row| value(metric, row, runs)),
                        violated: violated(strategy),
                        void: row.is_some_and(RunResult::is_void),
                    }
                })
                .collect();
            let at = columns.iter().enumerate().map(|(at, name)| ((*name).to_owned(), at));
            RankedCell { param, rows: cell, entries, at: at.collect() }
        })
        .collect()
}

/// The rows of a measured scenario, one per param: the `designs` ranked on `metric`.
fn ranked_rows<'a>(
    view: &View<'a>,
    scenario: ScenarioId,
    metric: Metric,
    designs: &[&str],
) -> Vec<VerdictRow<'a>> {
    let results = view.results();
    let value_of = |row: &RunResult| value(metric, row, &results.runs);
    let mut out = Vec::new();
    for RankedCell { param, rows: cell, entries, .. } in
        ranked_cells(view, scenario, metric, designs)
    {
        let ranked: Vec<Entry> = entries.iter().filter(|entry| !entry.void).cloned().collect();
        let controls: Vec<(&str, Value)> = cell
            .iter()
            .filter(|row| is_unordered_control(&row.strategy))
            .filter_map(|row| Some((row.strategy.as_str(), value_of(row)?)))
            .collect();
        let top = best(&entries, metric.higher_is_better());
        let best = top.map_or(Cell::plain("n/a"), |entry| {
            let median = entry.value.map_or(f64::NAN, |value| value.median);
            Cell::strong(entry.strategy.as_str())
                .then(Style::Plain, format!(" {}", format_value(metric.unit(), median)))
        });
        out.push(VerdictRow {
            scenario,
            param,
            metric: column(metric),
            best,
            designs: entries.iter().map(|entry| Cell::plain(ratio_cell(entry, top))).collect(),
            price: best_price(view, scenario, param, top),
            reading: reading(metric, &ranked, &controls),
        });
    }
    out
}

/// The price of order of the row's best design: `n/a` where there is no best or the
/// control did not run in the cell.
fn best_price(view: &View<'_>, scenario: ScenarioId, param: &str, top: Option<&Entry>) -> Cell {
    let price = top.and_then(|top| view.price(scenario, param, &top.strategy));
    price.map_or_else(|| Cell::plain("n/a"), super::price::cell)
}

/// The rows of a pipeline scenario, one per param: per ordered design in `designs`, lost
/// records and the final state.
fn pipeline_rows<'a>(
    view: &View<'a>,
    scenario: ScenarioId,
    designs: &[&str],
) -> Vec<VerdictRow<'a>> {
    let runs = view.pipelines(scenario);
    let mut out = Vec::new();
    for param in super::first_seen(runs.iter().map(|run| run.param.as_str())) {
        let (mut measured, mut cells) = (Vec::new(), Vec::new());
        for &strategy in designs {
            let Some(run) = view.pipeline(scenario, param, strategy) else {
                cells.push(Cell::plain("n/a"));
                continue;
            };
            let correct = run.state_judged().then_some(run.projection.final_state_correct);
            measured.push(PipelineCell { lost: run.lost, redelivered: run.redelivered, correct });
            let state = match correct {
                Some(true) => "correct",
                Some(false) => "wrong ✗",
                None => "state not judged",
            };
            cells.push(Cell::plain(format!("{} lost, {state}", run.lost)));
        }
        let (metric, reading) = (PIPELINE_COLUMN.to_owned(), pipeline_reading(&measured));
        let (best, price) = (Cell::plain("-"), Cell::plain("-"));
        out.push(VerdictRow { scenario, param, metric, best, designs: cells, price, reading });
    }
    out
}

/// The verdict section of `summary.md`: a heading, the sentences that say how to read it,
/// the table. Empty where the results hold no cell.
pub fn render_verdict(results: &Results) -> String {
    let mut doc = Document::default();
    section(&mut doc, &View::of(results));
    doc.markdown()
}

/// Appends the verdict section to `doc`: a heading, the intro, the table. Nothing where the
/// results hold no cell.
pub(super) fn section(doc: &mut Document, view: &View<'_>) {
    let Some((intro, table)) = verdict_of(view) else { return };
    doc.heading(2, "Verdict");
    doc.paragraph(intro);
    doc.blank();
    doc.table(table);
    doc.blank();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Correctness, Spread, Tail};

    /// The committed reference run, whose meta and cells the tests below take and doctor.
    use crate::report::reference::first as reference;

    /// A cell with the given throughput spread and bystander p99, clean, without samples.
    fn cell(
        scenario: &str,
        strategy: &str,
        throughput: (f64, f64, f64),
        bystander_p99: Option<u64>,
    ) -> RunResult {
        let (median, min, max) = throughput;
        let tail = |p99| Tail { p50: 10, p99, p999: p99, max: p99 };
        RunResult {
            scenario: scenario.into(),
            param: String::new(),
            strategy: strategy.into(),
            throughput_per_s: Spread { median, min, max },
            bystander_latency_ns: bystander_p99.map(tail),
            correctness: Correctness::default(),
            samples: None,
            ..reference().runs.swap_remove(0)
        }
    }

    /// A clean, ranked entry of `median` without a spread.
    fn entry(strategy: &str, median: Option<f64>) -> Entry {
        let value = median.map(Value::single);
        Entry { strategy: strategy.into(), value, violated: false, void: false }
    }

    /// `runs` with the reference run's meta.
    fn results(runs: Vec<RunResult>) -> Results {
        Results { runs, skipped: Vec::new(), pipelines: Vec::new(), ..reference() }
    }

    /// The verdict row of `scenario`.
    fn row_of(verdict: &str, scenario: &str) -> String {
        verdict
            .lines()
            .find(|line| line.starts_with(&format!("| {scenario} |")))
            .unwrap_or_else(|| panic!("no {scenario} row in\n{verdict}"))
            .to_owned()
    }

    #[test]
    fn a_pipeline_scenario_and_only_one_ranks_on_correctness() {
        for &scenario in ScenarioId::ALL {
            assert_eq!(scenario.headline().is_none(), scenario.is_pipeline(), "{scenario}");
        }
    }

    #[test]
    fn the_best_is_the_highest_throughput_ordered_design() {
        let runs = vec![
            cell("uniform", "keyed-mailbox", (100.0, 96.0, 104.0), None),
            cell("uniform", "work-stealing", (200.0, 190.0, 210.0), None),
            cell("uniform", "group-by", (150.0, 140.0, 160.0), None),
            // Controls are faster but never ranked.
            cell("uniform", "inline", (900.0, 890.0, 910.0), None),
            cell("uniform", "thread-pool", (800.0, 790.0, 810.0), None),
        ];
        let verdict = render_verdict(&results(runs));
        let row = row_of(&verdict, "uniform");
        assert!(row.contains("| **work-stealing** 200 msg/s |"), "{row}");
        assert!(row.contains("| 0.50 (0.48-0.52) |"), "keyed-mailbox's ratio: {row}");
        assert!(row.contains("| 1.00 (0.95-1.05) |"), "the best's own ratio: {row}");
        assert!(row.contains("work-stealing has 1.33x higher throughput than group-by"), "{row}");
        assert!(row.contains("farthest: keyed-mailbox at 2.00x lower"), "{row}");
        assert!(row.contains("the unordered control thread-pool is 4.00x higher"), "{row}");
        let header = verdict.lines().find(|line| line.starts_with("| scenario")).unwrap();
        assert!(!header.contains("inline") && !header.contains("thread-pool"), "{header}");
    }

    #[test]
    fn a_void_cell_is_shown_but_never_best() {
        let mut fastest = cell("uniform", "keyed-mailbox", (300.0, 290.0, 310.0), None);
        fastest.interference = Some(crate::results::Interference::judged(
            10.0,
            2,
            0.01,
            Some(8.0),
            Some(0.0),
            None,
            None,
        ));
        let runs = vec![fastest, cell("uniform", "group-by", (100.0, 96.0, 104.0), None)];
        let row = row_of(&render_verdict(&results(runs)), "uniform");
        assert!(row.contains("**group-by**"), "{row}");
        assert!(row.contains("[void]"), "{row}");
    }

    #[test]
    fn a_lower_is_better_metric_picks_the_lowest() {
        let runs = vec![
            cell("hot-backlog", "group-by", (100.0, 90.0, 110.0), Some(10_000_000)),
            cell("hot-backlog", "keyed-mailbox", (90.0, 80.0, 100.0), Some(1_000)),
            cell("hot-backlog", "work-stealing", (95.0, 85.0, 105.0), Some(2_000)),
        ];
        let row = row_of(&render_verdict(&results(runs)), "hot-backlog");
        assert!(row.contains("| **keyed-mailbox** 1.0 us |"), "{row}");
        assert!(row.contains("| bystander p99 (lower) |"), "{row}");
        assert!(row.contains("| 10,000 |"), "group-by's ratio, no spread: {row}");
        assert!(
            row.contains("keyed-mailbox has 2.00x lower bystander p99 than work-stealing"),
            "{row}"
        );
        assert!(row.contains("farthest: group-by at 10,000x higher"), "{row}");
    }

    #[test]
    fn a_design_with_a_violation_is_never_best() {
        let mut broken = cell("zipf", "rayon", (500.0, 490.0, 510.0), None);
        broken.correctness.order_violations = 1;
        let runs = vec![cell("zipf", "keyed-mailbox", (100.0, 95.0, 105.0), None), broken];
        let row = row_of(&render_verdict(&results(runs)), "zipf");
        assert!(row.contains("| **keyed-mailbox** 100 msg/s |"), "{row}");
        assert!(row.contains("5.00 (4.90-5.10) ✗"), "marked: {row}");
        assert!(row.contains("keyed-mailbox is the only eligible ordered design"), "{row}");
        assert!(row.contains("rayon not eligible (correctness violations)"), "{row}");
    }

    #[test]
    fn overlapping_spreads_read_within_noise() {
        let runs = vec![
            cell("long-sync", "keyed-mailbox", (100.0, 90.0, 110.0), Some(1_000)),
            cell("long-sync", "work-stealing", (105.0, 95.0, 115.0), Some(1_000)),
            cell("long-sync", "group-by", (50.0, 45.0, 55.0), Some(1_000)),
        ];
        let row = row_of(&render_verdict(&results(runs)), "long-sync");
        assert!(
            row.contains("work-stealing and keyed-mailbox within noise on throughput"),
            "{row}"
        );
        assert!(row.contains("farthest: group-by at 2.10x lower"), "{row}");
        assert!(!row.contains("has 1.05x"), "no winner named inside the noise: {row}");
        // Without a spread, a 5% margin stands in for it.
        let a = Value::single(100.0);
        assert!(within_noise(a, Value::single(104.0)));
        assert!(!within_noise(a, Value::single(120.0)));
        let all = vec![entry("a", Some(100.0)), entry("b", Some(101.0))];
        assert_eq!(
            reading(Metric::BystanderP99, &all, &[]),
            "all a and b within noise on bystander p99"
        );
    }

    #[test]
    fn repetitions_are_judged_by_compares_test() {
        let of = |samples: &[f64]| {
            let low = samples.iter().copied().fold(f64::INFINITY, f64::min);
            let high = samples.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let spread = Some((low, high));
            Value::new(crate::results::median(samples), spread, samples).unwrap()
        };
        // 10% apart with 3% noise: a difference, as `compare` would read it.
        let (a, b) = (of(&[100.0, 103.0, 97.0]), of(&[110.0, 113.3, 106.7]));
        assert!(!within_noise(a, b));
        // Ranges apart, but one side too unsteady to tell: within noise.
        assert!(within_noise(of(&[100.0, 101.0, 102.0]), of(&[102.5, 130.0, 160.0])));
        // A figure without samples falls back on the spreads.
        assert!(within_noise(Value::single(100.0), Value::single(103.0)));
    }

    #[test]
    fn missing_data_and_zero_bests_read_n_a() {
        // conflict-backoff ranks on bystander p99, which one design lacks.
        let runs = vec![
            cell("conflict-backoff", "keyed-mailbox", (100.0, 90.0, 110.0), Some(1_000)),
            cell("conflict-backoff", "group-by", (100.0, 90.0, 110.0), None),
        ];
        let row = row_of(&render_verdict(&results(runs)), "conflict-backoff");
        assert!(row.contains("| 1.00 | n/a |"), "{row}");
        // A best of zero divides nothing.
        let (zero, other) = (entry("a", Some(0.0)), entry("b", Some(5.0)));
        assert_eq!(ratio_cell(&other, Some(&zero)), "n/a");
        assert_eq!(ratio_cell(&other, None), "n/a");
        let text = reading(Metric::P99, &[zero.clone(), other], &[]);
        assert!(text.contains("(ratio n/a)"), "{text}");
        assert!(!text.contains("inf") && !text.contains("NaN"), "{text}");
        // No design with data at all.
        assert_eq!(
            reading(Metric::Throughput, &[entry("a", None)], &[]),
            "no eligible ordered design has data on throughput"
        );
    }

    #[test]
    fn pipelines_read_correctness_first() {
        let clean = PipelineCell { lost: 0, redelivered: 0, correct: Some(true) };
        assert_eq!(
            pipeline_reading(&[clean, clean]),
            "all 2 ordered designs lose nothing and end correct"
        );
        let lossy = PipelineCell { lost: 7, redelivered: 3, correct: Some(false) };
        let worse = PipelineCell { lost: 9, redelivered: 0, correct: Some(false) };
        assert_eq!(
            pipeline_reading(&[lossy, worse, clean]),
            "2 of 3 ordered designs lose records (7-9); 2 of 3 end wrong; 0-3 redelivered"
        );
        assert_eq!(
            pipeline_reading(&[lossy, worse]),
            "all 2 ordered designs lose records (7-9); all end wrong; 0-3 redelivered"
        );
        assert_eq!(pipeline_reading(&[]), "no ordered design measured");
    }

    #[test]
    fn ratios_read_well() {
        assert_eq!(format_ratio(0.754), "0.75");
        assert_eq!(format_ratio(0.0091), "0.009");
        assert_eq!(format_ratio(12.34), "12.3");
        assert_eq!(format_ratio(10_000.0), "10,000");
        assert_eq!(format_ratio(1_234_567.0), "1,234,567");
        assert_eq!(format_ratio(100.0), "100");
    }

    #[test]
    fn summary_md_starts_with_the_verdict() {
        let runs = vec![
            cell("uniform", "keyed-mailbox", (100.0, 95.0, 105.0), None),
            cell("uniform", "group-by", (150.0, 140.0, 160.0), None),
        ];
        let summary = super::super::summary::render_summary(&results(runs));
        assert!(summary.starts_with("# keyed-bench summary\n\n## Verdict\n\n"), "{summary}");
        let verdict = summary.find("## Verdict").unwrap();
        let first_section = summary.find("\n## uniform").unwrap();
        assert!(verdict < first_section);
        let table = summary.find("| scenario | param | metric | best |").unwrap();
        assert!(table < summary.find("Settings:").unwrap(), "the table comes before the header");
    }
}
