//! The cells of a run as they finish, and `results.json` saved after each one.
//!
//! The ledger holds the run's plan and the results of every cell done so far, kept in the
//! plan's order whatever order they arrive in (a resumed run starts with the cells of its
//! earlier sessions). After every cell it replaces `results.json` with everything done,
//! marked incomplete (`meta.incomplete`); the last write drops the mark when every planned
//! cell is done. Each save is a whole, valid results file, written to a temporary file and
//! renamed into place: a run stopped at any moment, even killed, leaves every cell finished
//! before its last save.
//!
//! A cell the watchdog stopped is done too, as a `failed[]` entry. The failed cells of an
//! earlier session are not kept: a resumed run runs them again.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::stop::StopSignal;
use super::{Cell, SuiteError};
use crate::report::summary::render_summary;
use crate::results::fs::{replace_atomically, write_atomically};
use crate::results::incomplete::{commit_hash, Incomplete, Resumed};
use crate::results::PipelineRun;
use crate::results::{CellKey, FailedCell, Meta, Results, RunResult, Skipped, SCHEMA};

/// The cells of an earlier session's file matched to a plan.
#[derive(Debug, Default)]
pub(crate) struct Matched {
    /// Measured cells, each with its place in the plan.
    pub runs: Vec<(usize, RunResult)>,
    /// Pipeline cells, each with its place in the plan.
    pub pipelines: Vec<(usize, PipelineRun)>,
    /// Skipped cells the earlier session reached, by their place in the plan.
    pub skipped: Vec<usize>,
    /// The earlier session's `skipped[]` entries, in order.
    pub skip_entries: Vec<Skipped>,
    /// The earlier cells the plan has no place for (another run's), in file order.
    pub strays: Vec<CellKey>,
}

/// Where each cell of `earlier` goes in `cells` (a plan): a measured or pipeline cell in the
/// planned cell of its scenario, param and strategy (once: a second copy is a stray); a
/// skipped cell is done where the earlier file has its scenario's skip entry and does not
/// list it as missing.
pub(crate) fn match_earlier(cells: &[Cell], earlier: &Results) -> Matched {
    let mut taken = vec![false; cells.len()];
    let mut matched = Matched::default();
    let mut place = |scenario: &str, param: &str, strategy: &str, pipeline: bool| {
        let found = cells.iter().enumerate().position(|(index, cell)| {
            !taken[index]
                && cell.skipped.is_none()
                && cell.scenario.is_pipeline() == pipeline
                && cell.key.is(scenario, param, strategy)
        });
        if let Some(index) = found {
            taken[index] = true;
        }
        found
    };
    for run in &earlier.runs {
        match place(&run.scenario, &run.param, &run.strategy, false) {
            Some(index) => matched.runs.push((index, run.clone())),
            None => {
                matched.strays.push(CellKey::recorded(&run.scenario, &run.param, &run.strategy))
            }
        }
    }
    for run in &earlier.pipelines {
        match place(&run.scenario, &run.param, &run.strategy, true) {
            Some(index) => matched.pipelines.push((index, run.clone())),
            None => {
                matched.strays.push(CellKey::recorded(&run.scenario, &run.param, &run.strategy))
            }
        }
    }
    let missing = earlier.missing_cells();
    for (index, cell) in cells.iter().enumerate() {
        let entry = earlier.skipped.iter().any(|entry| {
            entry.scenario == cell.scenario.as_str() && entry.strategy == cell.strategy.as_str()
        });
        if cell.skipped.is_some() && entry && !missing.contains(&cell.key) {
            matched.skipped.push(index);
        }
    }
    matched.skip_entries = earlier.skipped.clone();
    matched
}

/// The meta of a resumed run: the earlier session's identity (when it began, its command
/// line, its commit, `-dirty` if either session's tree was) with this session appended to
/// `resumed`; everything else is this session's, recorded as the earlier one recorded it.
fn resumed_meta(mut meta: Meta, earlier: &Meta) -> Meta {
    meta.resumed = earlier.resumed.clone();
    meta.resumed.push(Resumed {
        created: meta.created.clone(),
        command: meta.command.clone(),
        git_commit: meta.git_commit.clone(),
    });
    let dirty = [&earlier.git_commit, &meta.git_commit].iter().any(|c| c.ends_with("-dirty"));
    let hash = commit_hash(&earlier.git_commit);
    meta.git_commit = if dirty { format!("{hash}-dirty") } else { hash.to_owned() };
    meta.created = earlier.created.clone();
    meta.command = earlier.command.clone();
    meta
}

/// Every cell of a run, done or to do, and the results of those done.
#[derive(Debug)]
pub(crate) struct Ledger<'a> {
    out: &'a Path,
    cells: &'a [Cell],
    done: Vec<bool>,
    /// The plan index of each entry of `results.runs`, `results.pipelines`,
    /// `results.skipped` (of the first of its cells) and `results.failed`, in order.
    runs_at: Vec<usize>,
    pipelines_at: Vec<usize>,
    skipped_at: Vec<usize>,
    failed_at: Vec<usize>,
    results: Results,
    stop: Option<&'a StopSignal>,
    /// When this session began, and the seconds the earlier ones took.
    began: Instant,
    earlier_s: f64,
    /// Saves made while the run went, and the seconds they took.
    saves: usize,
    save_s: f64,
}

impl<'a> Ledger<'a> {
    /// The ledger of a run of `cells` (the plan) writing into `out`, starting with the cells
    /// of `earlier`, an earlier session's file of the same run. Fails naming the earlier
    /// cells the plan has no place for.
    pub fn new(
        out: &'a Path,
        cells: &'a [Cell],
        meta: Meta,
        earlier: Option<Results>,
        stop: Option<&'a StopSignal>,
        began: Instant,
    ) -> Result<Self, SuiteError> {
        let mut ledger = Self {
            out,
            done: vec![false; cells.len()],
            cells,
            runs_at: Vec::new(),
            pipelines_at: Vec::new(),
            skipped_at: Vec::new(),
            failed_at: Vec::new(),
            results: Results {
                schema: SCHEMA.into(),
                meta,
                runs: Vec::new(),
                skipped: Vec::new(),
                pipelines: Vec::new(),
                failed: Vec::new(),
                price_of_order: Vec::new(),
                isolation: Vec::new(),
            },
            stop,
            began,
            earlier_s: 0.0,
            saves: 0,
            save_s: 0.0,
        };
        let Some(earlier) = earlier else { return Ok(ledger) };
        let matched = match_earlier(ledger.cells, &earlier);
        if !matched.strays.is_empty() {
            let cells = matched.strays.iter().map(ToString::to_string).collect();
            return Err(SuiteError::NotPlanned { cells });
        }
        ledger.earlier_s = earlier.meta.suite_elapsed_s;
        ledger.results.meta = resumed_meta(ledger.results.meta, &earlier.meta);
        for (index, run) in matched.runs {
            ledger.add_run(index, run);
        }
        for (index, run) in matched.pipelines {
            ledger.add_pipeline(index, run);
        }
        for index in matched.skipped {
            let cell = &ledger.cells[index];
            let entry = matched.skip_entries.iter().find(|entry| {
                entry.scenario == cell.scenario.as_str() && entry.strategy == cell.strategy.as_str()
            });
            if let Some(entry) = entry.cloned() {
                ledger.add_skipped(index, entry);
            }
        }
        Ok(ledger)
    }

    /// Whether cell `index` of the plan is done.
    pub fn is_done(&self, index: usize) -> bool {
        self.done[index]
    }

    /// The cells not done yet, in the order they run.
    pub fn to_run(&self) -> Vec<Cell> {
        self.cells
            .iter()
            .zip(&self.done)
            .filter(|(_, done)| !**done)
            .map(|(c, _)| c.clone())
            .collect()
    }

    fn add_run(&mut self, index: usize, run: RunResult) {
        let at = self.runs_at.partition_point(|&other| other < index);
        self.runs_at.insert(at, index);
        self.results.runs.insert(at, run);
        self.done[index] = true;
    }

    fn add_pipeline(&mut self, index: usize, run: PipelineRun) {
        let at = self.pipelines_at.partition_point(|&other| other < index);
        self.pipelines_at.insert(at, index);
        self.results.pipelines.insert(at, run);
        self.done[index] = true;
    }

    /// One `skipped[]` entry per scenario and strategy, however many of its cells.
    fn add_skipped(&mut self, index: usize, entry: Skipped) {
        self.done[index] = true;
        let known = self
            .results
            .skipped
            .iter()
            .any(|known| known.scenario == entry.scenario && known.strategy == entry.strategy);
        if !known {
            let at = self.skipped_at.partition_point(|&other| other < index);
            self.skipped_at.insert(at, index);
            self.results.skipped.insert(at, entry);
        }
    }

    /// Records skipped cell `index`, and saves.
    pub fn skipped(&mut self, index: usize, entry: Skipped) -> Result<(), SuiteError> {
        self.add_skipped(index, entry);
        self.save()
    }

    /// Records measured cell `index`: writes its histogram files, then saves. If either
    /// fails, the cell is taken out again and its histogram files removed, so that the
    /// folder never holds a histogram its results file does not list.
    pub fn measured(
        &mut self,
        index: usize,
        run: RunResult,
        histograms: &[(String, String)],
    ) -> Result<(), SuiteError> {
        let paths: Vec<PathBuf> =
            histograms.iter().map(|(name, _)| self.out.join("histograms").join(name)).collect();
        let written = paths.iter().zip(histograms).try_for_each(|(path, (_, text))| {
            write_atomically(path, text.as_bytes()).map_err(|source| write_error(path, source))
        });
        let saved = written.and_then(|()| {
            self.add_run(index, run);
            self.save().inspect_err(|_| self.remove_run(index))
        });
        if saved.is_err() {
            for path in &paths {
                let _ = std::fs::remove_file(path);
            }
        }
        saved
    }

    /// Takes measured cell `index` out again (its save failed).
    fn remove_run(&mut self, index: usize) {
        if let Some(at) = self.runs_at.iter().position(|&other| other == index) {
            self.runs_at.remove(at);
            self.results.runs.remove(at);
            self.done[index] = false;
        }
    }

    /// Records pipeline cell `index`, and saves.
    pub fn pipeline(&mut self, index: usize, run: PipelineRun) -> Result<(), SuiteError> {
        self.add_pipeline(index, run);
        self.save()
    }

    /// Records cell `index` as failed (the watchdog stopped it), and saves.
    pub fn failed(&mut self, index: usize, cell: FailedCell) -> Result<(), SuiteError> {
        let at = self.failed_at.partition_point(|&other| other < index);
        self.failed_at.insert(at, index);
        self.results.failed.insert(at, cell);
        self.done[index] = true;
        self.save()
    }

    /// Sets `meta.incomplete` (none once every cell is done) and the time so far.
    fn update_meta(&mut self, stopped_by: Option<String>) {
        let missing: Vec<CellKey> = self
            .cells
            .iter()
            .zip(&self.done)
            .filter(|(_, done)| !**done)
            .map(|(cell, _)| cell.key.clone())
            .collect();
        let meta = &mut self.results.meta;
        meta.incomplete = (!missing.is_empty()).then(|| Incomplete {
            cells_planned: self.cells.len(),
            cells_done: self.cells.len() - missing.len(),
            missing,
            stopped_by,
        });
        meta.suite_elapsed_s = self.earlier_s + self.began.elapsed().as_secs_f64();
        self.results.price_order();
        self.results.isolate();
    }

    /// Replaces `results.json` with every cell done so far, marked incomplete while a cell
    /// is missing. Does not wait for the disk: the file survives the process, whatever ends
    /// it, and the last write of a run ([`Ledger::finish`]) does wait.
    pub fn save(&mut self) -> Result<(), SuiteError> {
        let started = Instant::now();
        self.update_meta(None);
        let json = serde_json::to_vec_pretty(&self.results).expect("results serialise");
        let path = self.out.join("results.json");
        {
            let _saving = self.stop.map(StopSignal::saving);
            replace_atomically(&path, &json).map_err(|source| write_error(&path, source))?;
        }
        self.saves += 1;
        self.save_s += started.elapsed().as_secs_f64();
        Ok(())
    }

    /// Saves after every cell so far: how many, and the seconds they took.
    pub fn saves(&self) -> (usize, f64) {
        (self.saves, self.save_s)
    }

    /// Writes the run's last `summary.md` and `results.json` (complete once every cell is
    /// done, else incomplete with `stopped_by`), waiting for the disk, and returns them.
    pub fn finish(mut self, stopped_by: Option<String>) -> Result<(Results, String), SuiteError> {
        self.update_meta(stopped_by);
        let summary = render_summary(&self.results);
        let write = |path: &Path, contents: &[u8]| {
            write_atomically(path, contents).map_err(|source| write_error(path, source))
        };
        write(&self.out.join("summary.md"), summary.as_bytes())?;
        // Last: a results.json is whole only once everything it refers to is.
        let json = serde_json::to_vec_pretty(&self.results).expect("results serialise");
        {
            let _saving = self.stop.map(StopSignal::saving);
            write(&self.out.join("results.json"), &json)?;
        }
        Ok((self.results, summary))
    }
}

/// A save that failed while the run went: a failure of the run (exit 1), not bad input.
fn write_error(path: &Path, source: std::io::Error) -> SuiteError {
    SuiteError::Save { path: path.display().to_string(), source }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::ScenarioId;
    use strategies::StrategyId;

    fn cell(scenario: ScenarioId, param: &str, strategy: StrategyId, skip: bool) -> Cell {
        Cell {
            key: CellKey::new(scenario, param, "", strategy.as_str()),
            scenario,
            strategy: strategy.into(),
            point: 0,
            workload: Some(0),
            settings: crate::results::CellSettings {
                workers: 2,
                throughput: 16,
                window: 256,
                idle_spin_us: 0,
                sweep: String::new(),
            },
            skipped: skip.then_some("skipped"),
            repetitions: 1,
            breakdown: false,
            bound_s: 0.0,
            estimate_s: 0.0,
        }
    }

    #[test]
    fn earlier_cells_find_their_place_once_and_others_are_strays() {
        let reference = include_str!("../../../results/2026-11-30-vm/results.json");
        let mut earlier = Results::parse(reference.as_bytes(), Path::new("r.json")).unwrap();
        let uniform = |strategy| {
            earlier.runs.iter().find(|r| r.scenario == "uniform" && r.strategy == strategy).cloned()
        };
        let (inline, mailbox) = (uniform("inline").unwrap(), uniform("keyed-mailbox").unwrap());
        earlier.runs = vec![mailbox.clone(), inline.clone(), mailbox];
        earlier.skipped = vec![Skipped {
            scenario: "async-io".into(),
            strategy: "inline".into(),
            reason: "waits".into(),
        }];
        earlier.meta.incomplete = Some(Incomplete {
            missing: vec![CellKey::recorded("async-io", "keys=20", "inline")],
            ..Incomplete::default()
        });
        let cells = [
            cell(ScenarioId::Uniform, "", StrategyId::Inline, false),
            cell(ScenarioId::Uniform, "", StrategyId::KeyedMailbox, false),
            cell(ScenarioId::AsyncIo, "keys=10", StrategyId::Inline, true),
            cell(ScenarioId::AsyncIo, "keys=20", StrategyId::Inline, true),
        ];
        let matched = match_earlier(&cells, &earlier);
        let places: Vec<usize> = matched.runs.iter().map(|(index, _)| *index).collect();
        assert_eq!(places, [1, 0]);
        assert_eq!(matched.skipped, [2]);
        assert_eq!(matched.strays, [CellKey::recorded("uniform", "", "keyed-mailbox")]);
    }

    #[test]
    fn a_cell_whose_save_fails_leaves_no_histogram_and_is_a_failure_not_bad_input() {
        let out = std::env::temp_dir().join(format!("keyed-bench-ledger-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(out.join("histograms")).unwrap();
        let reference = include_str!("../../../results/2026-11-30-vm/results.json");
        let results = Results::parse(reference.as_bytes(), Path::new("r.json")).unwrap();
        let cells = [cell(ScenarioId::Uniform, "", StrategyId::Inline, false)];
        let began = Instant::now();
        let mut ledger = Ledger::new(&out, &cells, results.meta, None, None, began).unwrap();
        // A folder where results.json should be: every save of it fails, as on a full disk.
        std::fs::create_dir_all(out.join("results.json")).unwrap();
        let histograms = [("uniform-inline.latency.hgrm".to_owned(), "text".to_owned())];
        let error = ledger.measured(0, results.runs[0].clone(), &histograms).unwrap_err();
        assert!(matches!(error, SuiteError::Save { .. }), "{error:?}");
        assert!(!error.is_bad_input());
        assert!(!out.join("histograms/uniform-inline.latency.hgrm").exists(), "an orphan");
        assert!(!ledger.is_done(0) && ledger.results.runs.is_empty());
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn a_resumed_meta_keeps_the_first_sessions_identity_and_lists_this_one() {
        let reference = include_str!("../../../results/2026-11-30-vm/results.json");
        let earlier = Results::parse(reference.as_bytes(), Path::new("r.json")).unwrap().meta;
        let mut now = earlier.clone();
        now.created = "2030-01-01T00:00:00Z".into();
        now.command = "keyed-bench run --resume x".into();
        now.git_commit = format!("{}-dirty", commit_hash(&earlier.git_commit));
        let meta = resumed_meta(now, &earlier);
        assert_eq!((&meta.created, &meta.command), (&earlier.created, &earlier.command));
        assert_eq!(meta.git_commit, format!("{}-dirty", commit_hash(&earlier.git_commit)));
        assert_eq!(meta.resumed.len(), 1);
        assert_eq!(meta.resumed[0].command, "keyed-bench run --resume x");
        assert_eq!(resumed_meta(meta.clone(), &meta).resumed.len(), 2);
    }
}
