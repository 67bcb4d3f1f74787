//! `keyed-bench compare`: two runs' results, cell by cell, with their noise.
//!
//! Cells of A and B are matched by their [`CellKey`] (scenario, param and strategy), and by
//! worker count where both record it ([`ListedCell`]). For each matched cell and metric (of
//! the registry, [`Metric`]; a metric a cell does not have is left out) the verdict weighs
//! the per-repetition samples (`runs[].samples`) of both runs:
//!
//! - **too few samples to judge**: either side has fewer than [`MIN_SAMPLES`] (3, the
//!   default run's repetitions; a file written before samples were recorded has none);
//! - **faster** or **slower**: the samples differ as [`crate::results::noise`] defines it (Welch's t-test
//!   on their logarithms rejects "one distribution" at `alpha`, *and* the medians differ
//!   by more than `threshold_pct` percent), in the metric's better or worse direction: the
//!   notion the summary's verdict uses between designs;
//! - **within noise** otherwise: no significant difference, or a significant but negligible
//!   one.
//!
//! With [`Correction::Holm`] the p-values of every judged row (each cell and metric with
//! enough samples) are adjusted together by Holm's step-down method before the verdicts
//! are taken: a comparison of many cells then reads some unchanged one as changed with a
//! chance of at most `alpha` in all, instead of `alpha` per row.
//!
//! Cells present in one file only are listed, never dropped; so are the cells an
//! incomplete file (a run stopped before its last cell) lists as missing, apart from those,
//! as not yet run. Pipeline cells
//! (`pipelines[]`) run once each: they are listed beside their change, not judged. Settings
//! that differ between the runs are listed as a note.
//!
//! Where one run's pipeline cells consumed through the embedded log and the other's through
//! Kafka, the note says so, and the pipeline cells, paired across the transport, list what
//! the broker changes instead of their metrics (`transport`).
//!
//! # Layout
//!
//! - `judge`: one metric of one cell judged, B's samples against A's ([`judge`]);
//! - `settings`: the settings the two files record that differ;
//! - `render`: a comparison as text, Markdown or JSON;
//! - `transport`: pipeline cells paired across the transport, where the runs' differ.
//!
//! This module holds the comparison itself ([`compare`], [`judge`]: pure functions of two
//! results), and the command, [`run_compare`], which reads the files.

mod judge;
mod render;
mod settings;
pub mod transport;

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use crate::results::noise;
use crate::results::{CellKey, Metric, PipelineRun, ReadError, Results, RunResult};

use judge::{change_pct, verdict};
pub use judge::{
    judge, Change, Correction, Judgement, Options, DEFAULT_ALPHA, DEFAULT_METRICS,
    DEFAULT_THRESHOLD_PCT,
};
pub(crate) use render::{fail_on_regression_json, judged_table, regression_line};
pub use render::{render, Format, Inputs, Regressions};
use settings::setting_differences;
pub use settings::SettingDifference;
pub use transport::{BrokerFigure, FigureUnit, TransportPair, Transports};

/// The fewest samples on each side that a verdict other than "too few samples to judge"
/// needs.
pub const MIN_SAMPLES: usize = noise::MIN_SAMPLES;
/// The range of `--alpha`.
pub const ALPHA_RANGE: (f64, f64) = (0.0001, 0.5);
/// The range of `--threshold`, in percent.
pub const THRESHOLD_RANGE: (f64, f64) = (0.0, 100.0);
/// The range of `--fail-on-regression`, in percent.
pub const REGRESSION_RANGE: (f64, f64) = (0.0, 1000.0);
/// Exit status of `--fail-on-regression` where no row is slower past it but some cell has
/// too few samples on a side to judge: inconclusive, not a pass. `ab`'s status for the same
/// cause, and the gate's for rules with only void cells (`gate::ONLY_VOID`, which a test
/// there keeps equal).
pub const UNJUDGED: u8 = 3;
/// How many unjudged cells [`unjudged_note`] names before it counts the rest.
const NOTE_CELLS: usize = 5;

/// What `compare` says where `--fail-on-regression` could not judge `cells`.
pub fn unjudged_note(cells: &[String]) -> String {
    if cells == [NO_CELL_IN_BOTH] {
        return format!(
            "compare: inconclusive (exit {UNJUDGED}): --fail-on-regression judged nothing: no \
             cell ran in both files"
        );
    }
    let mut named = cells.iter().take(NOTE_CELLS).cloned().collect::<Vec<_>>().join(", ");
    if cells.len() > NOTE_CELLS {
        named.push_str(&format!(" and {} more", cells.len() - NOTE_CELLS));
    }
    format!(
        "compare: inconclusive (exit {UNJUDGED}): --fail-on-regression cannot judge {named}, \
         with fewer than {MIN_SAMPLES} samples on a side; run both with `run --repeat \
         {MIN_SAMPLES}` or more"
    )
}

/// Adjusts the p-values of every judged row of `cells` together by Holm's method and takes
/// each verdict again on its adjusted p-value; rows with too few samples are no test and
/// are left out of the count.
fn correct_by_holm(cells: &mut [CellComparison], options: &Options) {
    let mut rows: Vec<&mut MetricRow> = cells
        .iter_mut()
        .flat_map(|cell| cell.metrics.iter_mut())
        .filter(|row| row.judgement.p_value.is_some())
        .collect();
    let raw: Vec<f64> = rows.iter().filter_map(|row| row.judgement.p_value).collect();
    for (row, p) in rows.iter_mut().zip(noise::holm(&raw)) {
        row.judgement.p_adjusted = Some(p);
        row.judgement.verdict = verdict(&row.judgement, p, row.higher_is_better, options);
    }
}

/// A cell as a comparison lists it: its key, and the worker count its file records.
///
/// The key is the cell's identity. The worker count is one more thing two cells must agree
/// on to pair, where both files record one: outside a sweep a key does not name the workers
/// (the run's `--workers`, or the scenario's own), so two runs with different `--workers`
/// hold cells of one key that measured different things.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ListedCell {
    /// The cell.
    #[serde(flatten)]
    pub key: CellKey,
    /// Its worker threads, where its file records them (`runs[].workers`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workers: Option<usize>,
}

impl ListedCell {
    fn of_run(run: &RunResult) -> Self {
        Self { key: CellKey::of_run(run), workers: run.workers }
    }

    fn of_pipeline(run: &PipelineRun) -> Self {
        Self { key: CellKey::of_pipeline(run), workers: None }
    }

    /// Whether `other` is the same cell: the same key, and the same worker count where both
    /// record one.
    fn pairs_with(&self, other: &Self) -> bool {
        self.key == other.key
            && (self.workers.is_none() || other.workers.is_none() || self.workers == other.workers)
    }
}

impl fmt::Display for ListedCell {
    /// The key: `scenario [param] strategy`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.key.fmt(f)
    }
}

/// One metric of one matched cell.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricRow {
    /// The metric.
    pub metric: Metric,
    /// Whether higher is better.
    pub higher_is_better: bool,
    /// The judgement.
    #[serde(flatten)]
    pub judgement: Judgement,
}

/// A cell present in both runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CellComparison {
    /// The cell (with A's worker count).
    pub cell: ListedCell,
    /// One row per compared metric.
    pub metrics: Vec<MetricRow>,
}

/// A pipeline cell present in both runs: one sample each, shown, not judged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PipelineComparison {
    /// The cell.
    pub cell: CellKey,
    /// The metric (one that pipeline cells have: throughput or elapsed).
    pub metric: Metric,
    /// A's value.
    pub a: f64,
    /// B's value.
    pub b: f64,
    /// `(B - A) / A` in percent.
    pub change_pct: Option<f64>,
}

/// Two runs compared.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// The test's significance level.
    pub alpha: f64,
    /// How the p-values were corrected for the number of rows judged.
    pub correction: Correction,
    /// The least change of the median, in percent, that a verdict needs.
    pub threshold_pct: f64,
    /// The fewest samples per side that a verdict needs.
    pub min_samples: usize,
    /// Settings that differ between A and B.
    pub settings: Vec<SettingDifference>,
    /// Cells in both, in A's order.
    pub cells: Vec<CellComparison>,
    /// Cells (runs and pipelines) only A has.
    pub only_in_a: Vec<ListedCell>,
    /// Cells (runs and pipelines) only B has.
    pub only_in_b: Vec<ListedCell>,
    /// The cells A's run had not done when its file was written (`meta.incomplete`): not
    /// compared, and not in `only_in_b`.
    pub missing_in_a: Vec<CellKey>,
    /// The same of B's run: not compared, and not in `only_in_a`.
    pub missing_in_b: Vec<CellKey>,
    /// Pipeline cells in both, in A's order: single-shot, not judged. Empty where the
    /// runs' transports differ: `across_transports` holds them then.
    pub pipelines: Vec<PipelineComparison>,
    /// The runs' transports, where they differ (one on the embedded log, one on Kafka);
    /// absent where they are the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transports: Option<Transports>,
    /// Where the transports differ, the pipeline cells in both, in A's order, paired
    /// across the transport: single-shot, not judged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub across_transports: Vec<TransportPair>,
}

impl Comparison {
    /// Every judged row with the cell it belongs to.
    pub fn rows(&self) -> impl Iterator<Item = (&ListedCell, &MetricRow)> {
        self.cells.iter().flat_map(|cell| cell.metrics.iter().map(move |row| (&cell.cell, row)))
    }

    /// The rows whose verdict is slower by more than `pct` percent.
    pub fn regressions(&self, pct: f64) -> Vec<(&ListedCell, &MetricRow)> {
        self.rows()
            .filter(|(_, row)| {
                row.judgement.regression_pct(row.higher_is_better).is_some_and(|worse| worse > pct)
            })
            .collect()
    }

    /// The cells with a row too few samples to judge (fewer than [`MIN_SAMPLES`] on a
    /// side), each once, in order.
    pub fn unjudged(&self) -> Vec<&ListedCell> {
        let short = |cell: &&CellComparison| {
            cell.metrics.iter().any(|row| row.judgement.verdict == Change::TooFewSamples)
        };
        self.cells.iter().filter(short).map(|cell| &cell.cell).collect()
    }

    /// [`Comparison::unjudged`], each cell with its `(A, B)` samples: the fewest of its
    /// rows too few to judge.
    pub fn unjudged_samples(&self) -> Vec<(&ListedCell, (usize, usize))> {
        self.cells
            .iter()
            .filter_map(|cell| {
                let short = cell
                    .metrics
                    .iter()
                    .filter(|row| row.judgement.verdict == Change::TooFewSamples);
                let fewest = short.fold(None, |fewest: Option<(usize, usize)>, row| {
                    let (a, b) = (row.judgement.a_samples, row.judgement.b_samples);
                    Some(fewest.map_or((a, b), |(fa, fb)| (fa.min(a), fb.min(b))))
                })?;
                Some((&cell.cell, fewest))
            })
            .collect()
    }

    /// How many rows reached each verdict, in [`Change`] order.
    pub fn counts(&self) -> [(Change, usize); 4] {
        [Change::Faster, Change::Slower, Change::WithinNoise, Change::TooFewSamples].map(
            |verdict| {
                (verdict, self.rows().filter(|(_, r)| r.judgement.verdict == verdict).count())
            },
        )
    }
}

/// Pairs each of `a` with the first unpaired of `b` that it pairs with; returns the pairs
/// and the indices left on each side.
fn pair(a: &[ListedCell], b: &[ListedCell]) -> (Vec<(usize, usize)>, Vec<usize>, Vec<usize>) {
    let mut taken = vec![false; b.len()];
    let (mut pairs, mut only_a) = (Vec::new(), Vec::new());
    for (i, left) in a.iter().enumerate() {
        let found = (0..b.len()).find(|&j| !taken[j] && left.pairs_with(&b[j]));
        match found {
            Some(j) => {
                taken[j] = true;
                pairs.push((i, j));
            }
            None => only_a.push(i),
        }
    }
    let only_b = (0..b.len()).filter(|&j| !taken[j]).collect();
    (pairs, only_a, only_b)
}

/// Each of `options.metrics` of a cell present in both runs (`left` of A's `runs`, `right`
/// of B's), B's run judged against A's; a metric either cell lacks is left out.
fn metric_rows(
    (left, right): (&RunResult, &RunResult),
    (runs_a, runs_b): (&[RunResult], &[RunResult]),
    options: &Options,
) -> Vec<MetricRow> {
    options
        .metrics
        .iter()
        .filter_map(|&metric| {
            let recorded = (metric.value(left, runs_a)?, metric.value(right, runs_b)?);
            let (a, b) = (metric.samples(left), metric.samples(right));
            let higher_is_better = metric.higher_is_better();
            let judgement = judge(&a, &b, recorded, higher_is_better, options);
            Some(MetricRow { metric, higher_is_better, judgement })
        })
        .collect()
}

/// Each of `options.metrics` that pipeline cells have, A's value beside B's.
fn pipeline_rows(
    left: &PipelineRun,
    right: &PipelineRun,
    options: &Options,
) -> Vec<PipelineComparison> {
    let cell = CellKey::of_pipeline(left);
    options
        .metrics
        .iter()
        .filter_map(|&metric| {
            let (a, b) = (metric.pipeline_value(left)?, metric.pipeline_value(right)?);
            let change_pct = change_pct(a, b);
            Some(PipelineComparison { cell: cell.clone(), metric, a, b, change_pct })
        })
        .collect()
}

/// Compares run `b` against run `a` (see the module docs).
pub fn compare(a: &Results, b: &Results, options: &Options) -> Comparison {
    let runs = |results: &Results| results.runs.iter().map(ListedCell::of_run).collect::<Vec<_>>();
    let (runs_a, runs_b) = (runs(a), runs(b));
    let (pairs, only_a, only_b) = pair(&runs_a, &runs_b);
    let mut cells: Vec<CellComparison> = pairs
        .into_iter()
        .map(|(i, j)| CellComparison {
            cell: runs_a[i].clone(),
            metrics: metric_rows((&a.runs[i], &b.runs[j]), (&a.runs, &b.runs), options),
        })
        .collect();
    if options.correction == Correction::Holm {
        correct_by_holm(&mut cells, options);
    }
    let mut only_in_a: Vec<ListedCell> = only_a.into_iter().map(|i| runs_a[i].clone()).collect();
    let mut only_in_b: Vec<ListedCell> = only_b.into_iter().map(|j| runs_b[j].clone()).collect();
    let pipelines = |results: &Results| {
        results.pipelines.iter().map(ListedCell::of_pipeline).collect::<Vec<_>>()
    };
    let (pipelines_a, pipelines_b) = (pipelines(a), pipelines(b));
    let (pairs, only_a, only_b) = pair(&pipelines_a, &pipelines_b);
    only_in_a.extend(only_a.into_iter().map(|i| pipelines_a[i].clone()));
    only_in_b.extend(only_b.into_iter().map(|j| pipelines_b[j].clone()));
    let (missing_in_a, missing_in_b) = (a.missing_cells().to_vec(), b.missing_cells().to_vec());
    only_in_a.retain(|cell| !missing_in_b.contains(&cell.key));
    only_in_b.retain(|cell| !missing_in_a.contains(&cell.key));
    let transports = Transports::differing(a, b);
    let (pipelines, across_transports) = match transports {
        None => (
            pairs
                .into_iter()
                .flat_map(|(i, j)| pipeline_rows(&a.pipelines[i], &b.pipelines[j], options))
                .collect(),
            Vec::new(),
        ),
        Some(kinds) => (
            Vec::new(),
            pairs
                .into_iter()
                .map(|(i, j)| TransportPair::of(kinds, &a.pipelines[i], &b.pipelines[j]))
                .collect(),
        ),
    };
    Comparison {
        alpha: options.alpha,
        correction: options.correction,
        threshold_pct: options.threshold_pct,
        min_samples: MIN_SAMPLES,
        settings: setting_differences(a, b),
        cells,
        only_in_a,
        only_in_b,
        missing_in_a,
        missing_in_b,
        pipelines,
        transports,
        across_transports,
    }
}

/// A validated `keyed-bench compare`.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareConfig {
    /// The baseline results file.
    pub a: PathBuf,
    /// The results file judged against it.
    pub b: PathBuf,
    /// How verdicts are reached.
    pub options: Options,
    /// Output format.
    pub format: Format,
    /// Fail (exit 1) when a verdict is slower by more than this many percent.
    pub fail_on_regression: Option<f64>,
}

/// What `--fail-on-regression` cannot judge when the two files have no cell in common.
pub const NO_CELL_IN_BOTH: &str = "any cell (none ran in both files)";

/// What `keyed-bench compare` concluded.
#[derive(Debug)]
pub struct CompareOutcome {
    /// The report in the chosen format.
    pub report: String,
    /// False when `--fail-on-regression` was given and some cell regressed past it.
    pub pass: bool,
    /// The cells `--fail-on-regression` could not judge (too few samples on a side), by
    /// name: where it was given and they are some, a pass is only inconclusive
    /// ([`UNJUDGED`]). Empty without it.
    pub unjudged: Vec<String>,
}

/// What `--fail-on-regression` cannot judge in `comparison`, by name: its cells too few
/// samples to judge, or [`NO_CELL_IN_BOTH`] where the files have no cell in common (no
/// regression found, and none could have been).
fn unjudged_cells(comparison: &Comparison) -> Vec<String> {
    if comparison.cells.is_empty() {
        return vec![NO_CELL_IN_BOTH.to_owned()];
    }
    comparison.unjudged().iter().map(ToString::to_string).collect()
}

/// Runs `keyed-bench compare`: reads both files (an unreadable one is a [`ReadError`]),
/// compares and renders.
pub fn run_compare(config: &CompareConfig) -> Result<CompareOutcome, ReadError> {
    let a = Results::read(&config.a)?;
    let b = Results::read(&config.b)?;
    let comparison = compare(&a, &b, &config.options);
    let regressions = config.fail_on_regression.map(|pct| (pct, comparison.regressions(pct)));
    let pass = regressions.as_ref().is_none_or(|(_, found)| found.is_empty());
    let unjudged = if regressions.is_some() { unjudged_cells(&comparison) } else { Vec::new() };
    let report = render(
        &comparison,
        &Inputs { a: &config.a, b: &config.b, results: (&a, &b) },
        regressions.as_ref().map(|(pct, found)| (*pct, found.as_slice())),
        config.format,
    );
    Ok(CompareOutcome { report, pass, unjudged })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Options {
        Options::default()
    }

    /// `n` samples around `centre`, spread by +-1%, deterministic.
    fn around(centre: f64, n: usize) -> Vec<f64> {
        (0..n).map(|i| centre * (1.0 + 0.02 * (i as f64 / (n - 1).max(1) as f64 - 0.5))).collect()
    }

    #[test]
    fn identical_distributions_are_within_noise() {
        let a = around(1000.0, 7);
        let mut b = a.clone();
        b.reverse();
        for higher in [true, false] {
            let judgement = judge(&a, &b, (0.0, 0.0), higher, &options());
            assert_eq!(judgement.verdict, Change::WithinNoise);
            assert_eq!(judgement.change_pct, Some(0.0));
            assert_eq!(judgement.p_value, Some(1.0));
        }
        // Interleaved draws of one distribution: no significance.
        let a = [100.0, 102.0, 104.0, 106.0, 108.0];
        let b = [101.0, 103.0, 105.0, 107.0, 109.0];
        let judgement = judge(&a, &b, (0.0, 0.0), true, &options());
        assert_eq!(judgement.verdict, Change::WithinNoise, "{judgement:?}");
        assert!(judgement.p_value.unwrap() > 0.3);
    }

    #[test]
    fn a_thirty_percent_shift_with_five_and_five_is_judged() {
        let a = around(1000.0, 5);
        let b = around(700.0, 5);
        // Throughput fell 30%: slower; elapsed fell 30%: faster.
        let throughput = judge(&a, &b, (0.0, 0.0), true, &options());
        assert_eq!(throughput.verdict, Change::Slower);
        assert!((throughput.change_pct.unwrap() + 30.0).abs() < 1e-9);
        assert!(throughput.p_value.unwrap() < 1e-6, "{throughput:?}");
        assert!((throughput.regression_pct(true).unwrap() - 30.0).abs() < 1e-9);
        let elapsed = judge(&a, &b, (0.0, 0.0), false, &options());
        assert_eq!(elapsed.verdict, Change::Faster);
        assert_eq!(elapsed.regression_pct(false), None);
        // The other way round.
        assert_eq!(judge(&b, &a, (0.0, 0.0), true, &options()).verdict, Change::Faster);
        let worse = judge(&b, &a, (0.0, 0.0), false, &options());
        assert_eq!(worse.verdict, Change::Slower);
        assert!((worse.regression_pct(false).unwrap() - 100.0 * 3.0 / 7.0).abs() < 1e-9);
    }

    #[test]
    fn two_files_without_a_common_cell_are_inconclusive_not_a_pass() {
        let results = reference();
        let mut other = results.clone();
        for run in &mut other.runs {
            run.scenario = format!("{}-elsewhere", run.scenario);
        }
        let comparison = compare(&results, &other, &options());
        assert!(comparison.cells.is_empty());
        assert!(comparison.regressions(5.0).is_empty(), "nothing regressed: nothing compared");
        assert_eq!(unjudged_cells(&comparison), [NO_CELL_IN_BOTH]);
        assert!(unjudged_cells(&compare(&results, &results, &options()))
            .iter()
            .all(|cell| cell != NO_CELL_IN_BOTH));
        let note = unjudged_note(&[NO_CELL_IN_BOTH.to_owned()]);
        assert!(note.contains("judged nothing: no cell ran in both files"), "{note}");
    }

    #[test]
    fn the_inconclusive_note_names_a_few_cells_and_counts_the_rest() {
        let cells: Vec<String> = (0..7).map(|i| format!("uniform s{i}")).collect();
        let note = unjudged_note(&cells);
        assert!(
            note.starts_with(
                "compare: inconclusive (exit 3): --fail-on-regression cannot judge uniform s0, \
                 uniform s1, uniform s2, uniform s3, uniform s4 and 2 more, with fewer than 3 \
                 samples on a side"
            ),
            "{note}"
        );
        let one = unjudged_note(&cells[..1]);
        assert!(one.contains("cannot judge uniform s0, with fewer"), "{one}");
    }

    #[test]
    fn fewer_than_three_samples_are_too_few_to_judge() {
        let a = around(1000.0, 2);
        let b = around(500.0, 20);
        for (a, b) in [(&a, &b), (&b, &a), (&a, &a)] {
            let judgement = judge(a, b, (0.0, 0.0), true, &options());
            assert_eq!(judgement.verdict, Change::TooFewSamples);
            assert_eq!(judgement.p_value, None);
            assert!(judgement.change_pct.is_some());
        }
        // No samples at all (an older file): the recorded medians are shown.
        let judgement = judge(&[], &b, (400.0, 0.0), true, &options());
        assert_eq!(judgement.verdict, Change::TooFewSamples);
        assert_eq!((judgement.a_median, judgement.a_samples), (400.0, 0));
    }

    #[test]
    fn ties_are_ranked_together() {
        // Every value tied: nothing to tell apart.
        let same = [5.0; 6];
        assert_eq!(judge(&same, &same, (0.0, 0.0), true, &options()).verdict, Change::WithinNoise);
        // Ties across the samples, but B clearly lower: still slower for throughput.
        let a = [10.0, 10.0, 11.0, 11.0, 12.0];
        let b = [8.0, 8.0, 9.0, 9.0, 10.0];
        let judgement = judge(&a, &b, (0.0, 0.0), true, &options());
        assert_eq!(judgement.verdict, Change::Slower, "{judgement:?}");
        assert!(judgement.p_value.unwrap() < 0.05);
        // Heavy ties that leave the medians equal: within noise.
        let a = [1.0, 1.0, 1.0, 2.0, 2.0];
        let b = [1.0, 1.0, 1.0, 1.0, 2.0];
        assert_eq!(judge(&a, &b, (0.0, 0.0), true, &options()).verdict, Change::WithinNoise);
    }

    #[test]
    fn a_significant_but_negligible_change_is_within_noise() {
        // 1% apart, no overlap: significant at 0.05, but under the 2% threshold.
        let a: Vec<f64> = (0..6).map(|i| 1000.0 + f64::from(i)).collect();
        let b: Vec<f64> = a.iter().map(|v| v * 1.01).collect();
        let judgement = judge(&a, &b, (0.0, 0.0), true, &options());
        assert!(judgement.p_value.unwrap() < 0.05);
        assert_eq!(judgement.verdict, Change::WithinNoise);
        let lower = Options { threshold_pct: 0.5, ..options() };
        assert_eq!(judge(&a, &b, (0.0, 0.0), true, &lower).verdict, Change::Faster);
        // 10% apart with 3% noise, 3 + 3 samples: faster at 0.05, not at a stricter alpha.
        let (a, b) = ([100.0, 103.0, 97.0], [110.0, 113.3, 106.7]);
        let judgement = judge(&a, &b, (0.0, 0.0), true, &options());
        let p = judgement.p_value.unwrap();
        assert!(p > 0.005 && judgement.verdict == Change::Faster, "{judgement:?}");
        let strict = Options { alpha: 0.005, ..options() };
        assert_eq!(judge(&a, &b, (0.0, 0.0), true, &strict).verdict, Change::WithinNoise);
    }

    #[test]
    fn a_zero_baseline_has_no_percentage() {
        let zeros = [0.0; 5];
        let ones = [1.0; 5];
        let judgement = judge(&zeros, &ones, (0.0, 0.0), false, &options());
        assert_eq!(judgement.change_pct, None);
        assert_eq!(judgement.verdict, Change::Slower);
        assert_eq!(judgement.regression_pct(false), Some(f64::INFINITY));
        assert_eq!(judge(&zeros, &zeros, (0.0, 0.0), false, &options()).change_pct, Some(0.0));
    }

    fn reference() -> Results {
        let text = include_str!("../../../results/2026-11-30-vm/results.json");
        Results::parse(text.as_bytes(), std::path::Path::new("reference.json")).unwrap()
    }

    /// `run` with `n` samples of each metric, scaled by `scale`.
    fn with_samples(run: &mut RunResult, n: usize, scale: f64) {
        let throughput = around(run.throughput_per_s.median * scale, n);
        run.samples = Some(crate::results::Samples {
            bystander_p99_ns: Vec::new(),
            elapsed_s: throughput.iter().map(|t| run.messages as f64 / t).collect(),
            latency_p99_ns: throughput.iter().map(|t| (1e12 / t) as u64).collect(),
            interference: Vec::new(),
            cpu_s: Vec::new(),
            throughput_per_s: throughput,
        });
    }

    #[test]
    fn cells_are_matched_and_the_unmatched_listed() {
        let mut a = reference();
        a.runs.retain(|run| run.scenario == "uniform");
        for run in &mut a.runs {
            run.workers = Some(2);
        }
        let mut b = a.clone();
        for run in &mut a.runs {
            with_samples(run, 5, 1.0);
        }
        for run in &mut b.runs {
            let scale = if run.strategy == "keyed-mailbox" { 0.7 } else { 1.0 };
            with_samples(run, 5, scale);
        }
        let gone = a.runs[0].strategy.clone();
        b.runs.retain(|run| run.strategy != gone);
        b.runs.reverse();
        let mut extra = b.runs[0].clone();
        extra.param = "keys=7".into();
        b.runs.push(extra);
        let comparison = compare(&a, &b, &options());
        assert_eq!(comparison.cells.len(), a.runs.len() - 1);
        assert_eq!(comparison.only_in_a.len(), 1);
        assert_eq!(comparison.only_in_a[0].key.strategy, gone);
        assert_eq!(comparison.only_in_b.len(), 1);
        assert_eq!(comparison.only_in_b[0].key.param, "keys=7");
        for cell in &comparison.cells {
            let verdicts: Vec<Change> = cell.metrics.iter().map(|m| m.judgement.verdict).collect();
            if cell.cell.key.strategy == "keyed-mailbox" {
                assert_eq!(verdicts, [Change::Slower; 3], "{}", cell.cell);
            } else {
                assert_eq!(verdicts, [Change::WithinNoise; 3], "{}", cell.cell);
            }
        }
        let regressions = comparison.regressions(10.0);
        assert_eq!(regressions.len(), 3);
        assert!(comparison.regressions(50.0).is_empty());
        assert!(comparison.settings.is_empty(), "{:?}", comparison.settings);
        // Other worker counts are other cells.
        for run in &mut b.runs {
            run.workers = Some(99);
        }
        let comparison = compare(&a, &b, &options());
        assert!(comparison.cells.is_empty());
        // Restricted to one metric.
        let only = Options { metrics: vec![Metric::P99], ..options() };
        let comparison = compare(&a, &a, &only);
        assert!(comparison.rows().all(|(_, row)| row.metric == Metric::P99));
    }

    /// The uniform cells of the reference run with `n` samples each, and the same with
    /// keyed-mailbox 30% slower.
    fn slowed_keyed_mailbox(n: usize) -> (Results, Results) {
        let mut a = reference();
        a.runs.retain(|run| run.scenario == "uniform");
        let mut b = a.clone();
        for run in &mut a.runs {
            with_samples(run, n, 1.0);
        }
        for run in &mut b.runs {
            with_samples(run, n, if run.strategy == "keyed-mailbox" { 0.7 } else { 1.0 });
        }
        (a, b)
    }

    #[test]
    fn holm_corrects_for_every_judged_row() {
        let holm = Options { correction: Correction::Holm, ..options() };
        let slower = |comparison: &Comparison| {
            comparison.rows().filter(|(_, row)| row.judgement.verdict == Change::Slower).count()
        };
        // 30% slower in 1% noise: slower with or without the correction, and only there.
        let (a, b) = slowed_keyed_mailbox(3);
        let rows = compare(&a, &b, &options()).rows().count();
        assert!(rows > 7, "{rows} rows");
        assert_eq!(slower(&compare(&a, &b, &options())), 3);
        let corrected = compare(&a, &b, &holm);
        assert_eq!(corrected.correction, Correction::Holm);
        for (cell, row) in corrected.rows() {
            let (raw, adjusted) = (row.judgement.p_value.unwrap(), row.judgement.p_adjusted);
            assert!(adjusted.unwrap() >= raw, "{row:?}");
            let slowed = cell.key.strategy == "keyed-mailbox";
            assert_eq!(row.judgement.verdict == Change::Slower, slowed, "{cell} {row:?}");
        }
        assert!(compare(&a, &b, &options()).rows().all(|(_, r)| r.judgement.p_adjusted.is_none()));
        // 3% slower in the same noise: p about 0.02 alone, past 0.05 once multiplied by the
        // rows judged.
        let (a, mut b) = slowed_keyed_mailbox(3);
        for run in b.runs.iter_mut().filter(|run| run.strategy == "keyed-mailbox") {
            let median = a.runs.iter().find(|other| other.strategy == run.strategy).unwrap();
            with_samples(
                run,
                3,
                0.97 * median.throughput_per_s.median / run.throughput_per_s.median,
            );
        }
        assert_eq!(slower(&compare(&a, &b, &options())), 3);
        assert_eq!(slower(&compare(&a, &b, &holm)), 0);
        // Rows with too few samples are no test: they do not count.
        let (mut a, b) = slowed_keyed_mailbox(3);
        for run in a.runs.iter_mut().filter(|run| run.strategy != "keyed-mailbox") {
            run.samples = None;
        }
        let corrected = compare(&a, &b, &holm);
        let judged: Vec<(f64, f64)> = corrected
            .rows()
            .filter_map(|(_, row)| Some((row.judgement.p_value?, row.judgement.p_adjusted?)))
            .collect();
        assert_eq!(judged.len(), 3);
        let largest = judged.iter().map(|(raw, _)| *raw).fold(0.0, f64::max);
        assert!(judged
            .iter()
            .all(|(raw, adjusted)| *adjusted <= 3.0 * largest && *adjusted >= *raw));
    }

    #[test]
    fn any_metric_of_the_registry_compares_and_one_a_cell_lacks_is_left_out() {
        let a = reference();
        let only = |metric| Options { metrics: vec![metric], ..options() };
        let efficiency = compare(&a, &a, &only(Metric::Efficiency));
        assert_eq!(efficiency.rows().count(), a.runs.len());
        let bystander = compare(&a, &a, &only(Metric::BystanderP99));
        let troubled = a.runs.iter().filter(|run| run.bystander_latency_ns.is_some()).count();
        assert!(troubled > 0 && troubled < a.runs.len());
        assert_eq!(bystander.rows().count(), troubled);
        assert_eq!(bystander.cells.len(), a.runs.len(), "every cell is still matched");
    }

    #[test]
    fn a_file_without_samples_is_too_few_to_judge_and_settings_differences_are_named() {
        let a = reference();
        let mut b = reference();
        b.meta.seed = 7;
        b.meta.git_commit = "other".into();
        if let Some(sizes) = b.meta.sizes.as_mut() {
            sizes.spin_ns += 1;
        }
        let comparison = compare(&a, &b, &options());
        assert!(comparison.rows().all(|(_, row)| row.judgement.verdict == Change::TooFewSamples));
        assert!(comparison.only_in_a.is_empty() && comparison.only_in_b.is_empty());
        let fields: Vec<&str> = comparison.settings.iter().map(|d| d.field.as_str()).collect();
        assert_eq!(fields, ["meta.git_commit", "meta.seed", "meta.sizes.spin_ns"]);
        assert_eq!(comparison.settings[1].b, "7");
    }
}
