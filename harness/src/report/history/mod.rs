//! `keyed-bench history`: every committed run on one page. Reads each `results.json` under
//! a folder (its default output folders,
//! [`DEFAULT_OUTS`](crate::results::fs::DEFAULT_OUTS), left out), and writes one static
//! page: a table of the runs, then per scenario one chart per parameter of the metric the
//! verdict ranks that scenario by ([`ScenarioId::headline`]), each ordered design a line
//! across the runs in date order. Reads results only.
//!
//! The cells come from the verdict's own [`ranked_cells`] and [`contenders`], so a point is
//! the figure the run's summary ranked: the median over repetitions. A point is filled where
//! the cell's interference receipt is clean, unmeasured or absent (older files), hollow
//! where it is disturbed, and not drawn where it is void. Every cell not drawn is listed
//! with why ([`LeftOut`]): a void receipt, a sweep point other than the run's own settings,
//! a design the verdict does not rank, a pipeline cell, no figure of the metric.
//!
//! The page is deterministic: runs sorted by `meta.created`, then folder; nothing of the
//! time it was made; so a test can make it again and compare.

mod page;

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use super::verdict::{contenders, ranked_cells, RankedCell};
use super::view::View;
use crate::limits::settings::FLAGS;
use crate::results::fs::{default_outs_in, write_atomically};
use crate::results::{
    Meta, Metric, ReadError, Results, RunResult, Scenario, SweptSettings, Validity,
};
use crate::sweep::Sweep;
use crate::workload::ScenarioId;

pub use page::render;

/// The results file of a run folder.
const RESULTS_FILE: &str = "results.json";

/// The files a run's link goes to, the first that exists.
const LINKS: [&str; 3] = ["report.html", "summary.md", "README.md"];

/// What `keyed-bench history` reads and writes, validated (`cli/history.rs` builds it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryConfig {
    /// The folder of committed runs.
    pub results: PathBuf,
    /// The page to write.
    pub out: PathBuf,
}

/// Why the page could not be made.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// A folder under the results could not be listed.
    #[error("cannot list {path}: {error}")]
    List {
        /// The folder.
        path: String,
        /// Why.
        error: std::io::Error,
    },
    /// A results file could not be read, or is not one.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// No results file under the folder.
    #[error("no {RESULTS_FILE} under {0} (its default output folders are not read)")]
    Empty(String),
    /// The page could not be written.
    #[error("cannot write {path}: {error}")]
    Write {
        /// The page.
        path: String,
        /// Why.
        error: std::io::Error,
    },
}

/// One run: its folder relative to the results folder, its results, and its page.
#[derive(Clone, Debug)]
pub struct Run {
    /// The folder, relative to the results folder, with `/` between its parts.
    pub folder: String,
    /// The results it holds.
    pub results: Results,
    /// Its report, summary or README, relative to the results folder; none where it has
    /// none of them.
    pub link: Option<String>,
}

/// How a drawn point is marked: by its cell's receipt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mark {
    /// Clean, unmeasured, or no receipt (a file from before receipts).
    Filled,
    /// Disturbed: kept and ranked, but someone else took a share worth naming.
    Hollow,
}

/// One design's figure in one run, as a chart draws it.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    /// The run, an index into [`History::runs`].
    pub run: usize,
    /// The design.
    pub strategy: String,
    /// The ranked figure: the median over repetitions.
    pub value: f64,
    /// The receipt's validity; none in files from before receipts.
    pub validity: Option<Validity>,
    /// The receipt's reasons, where it is not clean.
    pub reasons: Vec<String>,
    /// Whether the design had a correctness violation in the scenario in that run.
    pub violated: bool,
}

impl Point {
    /// Filled or hollow, from the receipt.
    pub fn mark(&self) -> Mark {
        if self.validity == Some(Validity::Disturbed) {
            Mark::Hollow
        } else {
            Mark::Filled
        }
    }
}

/// One chart: a scenario's parameter, its ranked metric, one line per design over the runs
/// that measured it.
#[derive(Clone, Debug, PartialEq)]
pub struct Chart {
    /// The scenario.
    pub scenario: ScenarioId,
    /// The scenario's own parameter (no sweep label); empty where it has none.
    pub param: String,
    /// The metric its verdict ranks on.
    pub metric: Metric,
    /// The runs on its x axis, indices into [`History::runs`] in date order: those that
    /// measured a ranked design in the cell.
    pub runs: Vec<usize>,
    /// The designs, in order of first appearance.
    pub designs: Vec<String>,
    /// The points drawn.
    pub points: Vec<Point>,
}

impl Chart {
    /// Its points by (run, design), the first of each.
    pub fn points_at(&self) -> HashMap<(usize, &str), &Point> {
        let mut at = HashMap::new();
        for point in &self.points {
            at.entry((point.run, point.strategy.as_str())).or_insert(point);
        }
        at
    }
}

/// A cell not drawn, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// The run, an index into [`History::runs`].
    pub run: usize,
    /// The cell: scenario, param, strategy.
    pub cell: String,
    /// Why it is not drawn.
    pub reason: String,
}

/// Everything the page shows.
#[derive(Clone, Debug)]
pub struct History {
    /// The runs, by created date then folder.
    pub runs: Vec<Run>,
    /// The charts, by scenario (the registry's order), then param in order of first
    /// appearance.
    pub charts: Vec<Chart>,
    /// The cells not drawn.
    pub left_out: Vec<LeftOut>,
}

/// What `history` made.
#[derive(Clone, Debug)]
pub struct HistoryOutcome {
    /// Runs read.
    pub runs: usize,
    /// Charts drawn.
    pub charts: usize,
    /// Cells not drawn, with their reasons' counts (reason, count), most first.
    pub left_out: Vec<(String, usize)>,
    /// The page written.
    pub out: PathBuf,
}

/// Reads every run under `config.results` and writes the page.
pub fn write_history(config: &HistoryConfig) -> Result<HistoryOutcome, HistoryError> {
    let runs = read_runs(&config.results)?;
    let history = collect(runs);
    let base = link_base(&config.results, &config.out);
    let html = render(&history, &base);
    let failed = |error| HistoryError::Write { path: config.out.display().to_string(), error };
    if let Some(parent) = config.out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(failed)?;
    }
    write_atomically(&config.out, html.as_bytes()).map_err(failed)?;
    Ok(HistoryOutcome {
        runs: history.runs.len(),
        charts: history.charts.len(),
        left_out: reason_counts(&history.left_out),
        out: config.out.clone(),
    })
}

/// The reasons of `left_out` with how many cells each, most first (then by reason).
fn reason_counts(left_out: &[LeftOut]) -> Vec<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for entry in left_out {
        match counts.iter_mut().find(|(reason, _)| *reason == entry.reason) {
            Some((_, count)) => *count += 1,
            None => counts.push((entry.reason.clone(), 1)),
        }
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    counts
}

/// Every `results.json` under `dir`, recursively, but for those in its default output
/// folders ([`default_outs_in`]: `run`'s and `ab`'s output, never a committed run); sorted
/// by path.
pub fn find_results(dir: &Path) -> Result<Vec<PathBuf>, HistoryError> {
    let skipped = default_outs_in(dir);
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let listed = |error| HistoryError::List { path: folder.display().to_string(), error };
        let entries = std::fs::read_dir(&folder).map_err(listed)?;
        for entry in entries {
            let path = entry.map_err(listed)?.path();
            if path.is_dir() && !skipped.contains(&path) {
                folders.push(path);
            } else if path.file_name() == Some(RESULTS_FILE.as_ref()) && path.is_file() {
                found.push(path);
            }
        }
    }
    found.sort();
    Ok(found)
}

/// `path` relative to `base`, with `/` between its parts.
fn relative(path: &Path, base: &Path) -> String {
    let rest = path.strip_prefix(base).unwrap_or(path);
    let parts: Vec<String> =
        rest.components().map(|part| part.as_os_str().to_string_lossy().into_owned()).collect();
    parts.join("/")
}

/// Reads every run under `dir`: a file that cannot be read is an error that names it.
pub fn read_runs(dir: &Path) -> Result<Vec<Run>, HistoryError> {
    let files = find_results(dir)?;
    if files.is_empty() {
        return Err(HistoryError::Empty(dir.display().to_string()));
    }
    let mut runs = Vec::with_capacity(files.len());
    for file in files {
        let results = Results::read_beside(&file)?;
        let folder_path = file.parent().unwrap_or(dir);
        let folder = relative(folder_path, dir);
        let link = LINKS.iter().find(|name| folder_path.join(name).is_file()).map(|name| {
            if folder.is_empty() {
                (*name).to_owned()
            } else {
                format!("{folder}/{name}")
            }
        });
        runs.push(Run { folder, results, link });
    }
    Ok(runs)
}

/// The prefix of a link from the page's folder to the results folder (`` where the page
/// sits in it, `../results/` where it sits beside it).
fn link_base(results: &Path, out: &Path) -> String {
    let page_dir = out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let absolute = |path: &Path| {
        std::fs::canonicalize(path).unwrap_or_else(|_| {
            std::env::current_dir().map(|cwd| cwd.join(path)).unwrap_or(path.to_path_buf())
        })
    };
    let (from, to) = (absolute(page_dir), absolute(results));
    let from: Vec<Component<'_>> = from.components().collect();
    let to: Vec<Component<'_>> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".to_owned(); from.len() - common];
    parts.extend(to[common..].iter().map(|part| part.as_os_str().to_string_lossy().into_owned()));
    parts.iter().map(|part| format!("{part}/")).collect()
}

/// The history of `runs`: sorted by created date then folder, their charts and the cells
/// left out.
pub fn collect(mut runs: Vec<Run>) -> History {
    runs.sort_by(|a, b| {
        a.results.meta.created.cmp(&b.results.meta.created).then_with(|| a.folder.cmp(&b.folder))
    });
    let mut charts = ChartSet::default();
    let mut left_out = Vec::new();
    for (index, run) in runs.iter().enumerate() {
        collect_run(index, &run.results, &mut charts, &mut left_out);
    }
    let mut charts = charts.charts;
    for chart in &mut charts {
        chart.designs = super::first_seen(chart.points.iter().map(|point| point.strategy.clone()));
    }
    // `ScenarioId` orders as the registry lists its scenarios.
    charts.sort_by_key(|chart| chart.scenario);
    History { runs, charts, left_out }
}

/// Whether a cell ran at the run's own settings (a sweep's first point): no sweep label, or
/// every setting its label names equal to the run's own, or one the run does not record.
fn own_point(row: &RunResult, results: &Results) -> bool {
    let Some(settings) = &row.settings else { return true };
    let own = own_settings(&results.meta);
    settings.sweep.split_whitespace().filter_map(|word| word.split_once('=')).all(
        |(name, value)| {
            own.iter()
                .find(|(setting, _)| *setting == name)
                .and_then(|(_, own)| own.as_deref())
                .is_none_or(|own| own == value)
        },
    )
}

/// The run's own point as a sweep label names it: each swept setting's name and value,
/// those of `meta.sweep`'s first point. A file from before sweeps records one value of
/// `workers`, `throughput`, `window` and (but in files older than that setting)
/// `idle_spin_us` in `meta`: a setting it does not record matches any value (none).
fn own_settings(meta: &Meta) -> Vec<(&'static str, Option<String>)> {
    let first = meta.sweep.as_ref().and_then(Sweep::first_point);
    if let Some(point) = first {
        return point.values().into_iter().map(|(name, value)| (name, Some(value))).collect();
    }
    vec![
        (FLAGS.workers.name, Some(meta.workers.to_string())),
        (FLAGS.throughput.name, Some(meta.throughput.to_string())),
        (FLAGS.window.name, Some(meta.window.to_string())),
        (FLAGS.idle_spin_us.name, meta.idle_spin_us.map(|us| us.to_string())),
    ]
}

/// The name of a cell in the left-out list.
fn cell_of(row: &RunResult) -> String {
    format!("{} {}", super::cell_name(&row.scenario, &row.param), row.strategy)
}

/// Adds one run's points to `charts`, and what it leaves out to `left_out`.
fn collect_run(index: usize, results: &Results, charts: &mut ChartSet, out: &mut Vec<LeftOut>) {
    let view = View::of(results);
    let columns = contenders(results);
    let mut leave = |row: &RunResult, reason: String| {
        out.push(LeftOut { run: index, cell: cell_of(row), reason });
    };
    for row in &results.runs {
        let scenario = Scenario::from(row.scenario.as_str()).known();
        if scenario.is_none() {
            leave(row, "a scenario this build does not know".to_owned());
        } else if scenario.and_then(ScenarioId::headline).is_none() {
            leave(row, "a scenario the verdict ranks on no metric".to_owned());
        } else if !super::is_contender(&row.strategy) {
            leave(row, "not ranked: the reference or an unordered design".to_owned());
        }
    }
    for run in &results.pipelines {
        out.push(LeftOut {
            run: index,
            cell: format!("{} {}", super::cell_name(&run.scenario, &run.param), run.strategy),
            reason: "a pipeline cell: ranked on correctness, no figure to chart".to_owned(),
        });
    }
    for &scenario in ScenarioId::ALL {
        let Some(metric) = scenario.headline() else { continue };
        for cell in ranked_cells(&view, scenario, metric, &columns) {
            collect_cell(index, results, scenario, metric, &cell, charts, out);
        }
    }
}

/// Adds one ranked cell's entries to its chart, or to `out` with why not.
fn collect_cell(
    index: usize,
    results: &Results,
    scenario: ScenarioId,
    metric: Metric,
    cell: &RankedCell<'_>,
    charts: &mut ChartSet,
    out: &mut Vec<LeftOut>,
) {
    let mut points = Vec::new();
    for entry in &cell.entries {
        let Some(row) = cell.rows.on(&entry.strategy) else {
            continue;
        };
        let reason = if !own_point(row, results) {
            Some("a sweep point other than the run's own settings".to_owned())
        } else if entry.void {
            Some("a void receipt: not ranked, not drawn".to_owned())
        } else if entry.value.is_none() {
            Some(format!("no figure of {}", metric.label()))
        } else {
            None
        };
        if let Some(reason) = reason {
            out.push(LeftOut { run: index, cell: cell_of(row), reason });
            continue;
        }
        let receipt = row.interference.as_ref();
        points.push(Point {
            run: index,
            strategy: entry.strategy.clone(),
            value: entry.value.map_or(f64::NAN, |value| value.median),
            validity: receipt.map(|receipt| receipt.validity),
            reasons: receipt.map(|receipt| receipt.reasons.clone()).unwrap_or_default(),
            violated: entry.violated,
        });
    }
    let measured =
        cell.rows.iter().any(|row| own_point(row, results) && cell.entry(&row.strategy).is_some());
    if !measured {
        return;
    }
    let param = cell.rows.first().map(|row| row.own_param().to_owned()).unwrap_or_default();
    let chart = charts.of(scenario, &param, metric);
    if !chart.runs.contains(&index) {
        chart.runs.push(index);
    }
    chart.points.extend(points);
}

/// The charts being collected, each found by its scenario and param.
#[derive(Default)]
struct ChartSet {
    /// The charts, in order of first appearance.
    charts: Vec<Chart>,
    /// Where the chart of each (scenario, param) is in `charts`.
    at: HashMap<(ScenarioId, String), usize>,
}

impl ChartSet {
    /// The chart of `scenario` and `param`, added where it is new.
    fn of(&mut self, scenario: ScenarioId, param: &str, metric: Metric) -> &mut Chart {
        let charts = &mut self.charts;
        let at = *self.at.entry((scenario, param.to_owned())).or_insert_with(|| {
            charts.push(Chart {
                scenario,
                param: param.to_owned(),
                metric,
                runs: Vec::new(),
                designs: Vec::new(),
                points: Vec::new(),
            });
            charts.len() - 1
        });
        &mut self.charts[at]
    }
}

/// The settings a run's row shows: workers, repeat, quick sizes, the swept values.
fn settings_of(results: &Results) -> String {
    let meta = &results.meta;
    let mut text = format!("workers {}, repeat {}", meta.workers, meta.repeat);
    if meta.quick {
        text.push_str(", quick sizes");
    }
    let swept = SweptSettings::of(results);
    let lists: Vec<String> = crate::results::cell::SWEEP_SETTINGS
        .iter()
        .filter_map(|setting| Some(format!("{setting} {}", swept.values(setting)?.join(","))))
        .collect();
    if !lists.is_empty() {
        text.push_str(&format!(", sweep: {}", lists.join(" x ")));
    }
    text
}

/// The receipts a run's cells hold, by validity: `190 clean, 32 unmeasured, ...`, or
/// `no receipts` for a file from before them.
fn receipts_of(results: &Results) -> String {
    let receipts: Vec<Validity> = results
        .runs
        .iter()
        .filter_map(|row| row.interference.as_ref())
        .chain(results.pipelines.iter().filter_map(|run| run.interference.as_ref()))
        .map(|receipt| receipt.validity)
        .collect();
    if receipts.is_empty() {
        return "no receipts".to_owned();
    }
    [Validity::Clean, Validity::Unmeasured, Validity::Disturbed, Validity::Void]
        .iter()
        .map(|validity| {
            let count = receipts.iter().filter(|seen| *seen == validity).count();
            format!("{count} {}", validity.name())
        })
        .collect::<Vec<String>>()
        .join(", ")
}

/// A commit as the page shows it: its first 7 hex digits, `-dirty` kept.
fn short_commit(commit: &str) -> String {
    let short: String = commit.chars().take(7).collect();
    if commit.ends_with("-dirty") {
        format!("{short}-dirty")
    } else {
        short
    }
}

#[cfg(test)]
mod tests;
