//! A run stopped after some cells saves exactly those, marked incomplete, and the sessions
//! that resume it add the missing ones: the merged file holds what a run from scratch
//! holds, in the same order, each cell once.

use std::path::Path;

use harness::cli::RunArgs;
use harness::config::RunConfig;
use harness::results::CellKey;
use harness::results::Results;
use harness::suite::{plan, run_suite_with, Cell, Control, Observer, StopSignal};
use harness::workload::SizeArgs;

/// Measured, skipped and pipeline cells, all tiny: 12 in all.
fn tiny(out: &Path) -> RunConfig {
    let args = RunArgs {
        scenario: "uniform,async-io,pipeline-crash".into(),
        strategy: "inline,keyed-mailbox,group-by".into(),
        commit_policy: "contiguous,highest-completed".into(),
        workers: vec![2],
        sizes: SizeArgs {
            messages: Some(2_000),
            keys: Some(vec![100]),
            async_messages: Some(100),
            async_keys: Some(vec![20]),
            pipeline_records: Some(600),
            pipeline_keys: Some(50),
            partitions: Some(2),
            crash_after: Some(200),
            commit_interval_ms: Some(1),
            ..SizeArgs::default()
        },
        repeat: Some(1),
        out: out.to_path_buf(),
        ..RunArgs::defaults()
    };
    RunConfig::try_from((args, "test".to_owned())).expect("valid tiny settings")
}

/// Raises `stop` once `left` more cells have finished.
struct StopAfter<'a> {
    left: usize,
    stop: &'a StopSignal,
    heard: Vec<String>,
}

impl Observer for StopAfter<'_> {
    fn note(&mut self, _line: &str) {}

    fn finished(&mut self, cell: &Cell, _outcome: &str) {
        self.heard.push(cell.key.to_string());
        self.left = self.left.saturating_sub(1);
        if self.left == 0 {
            self.stop.request("test");
        }
    }
}

/// Runs `config` until `cells` more cells have finished (or to its end); returns what the
/// session saved, read back from the folder, and the cells it ran.
fn session(config: &RunConfig, cells: usize) -> (Results, Vec<String>) {
    let stop = StopSignal::new();
    let mut observer = StopAfter { left: cells, stop: &stop, heard: Vec::new() };
    let earlier = Results::read(&config.out.join("results.json")).ok();
    let control = Control { stop: Some(&stop), earlier };
    let outcome = run_suite_with(config, &mut observer, control).expect("the run goes");
    let read = Results::read(&config.out.join("results.json")).expect("a valid results file");
    assert_eq!(
        outcome.stopped_by,
        read.meta.incomplete.as_ref().and_then(|i| i.stopped_by.clone())
    );
    (read, observer.heard)
}

/// Every cell of a file in file order: measured, then pipeline, then skipped entries.
fn cells(results: &Results) -> Vec<String> {
    let runs =
        results.runs.iter().map(|r| format!("run {} {} {}", r.scenario, r.param, r.strategy));
    let pipelines = results
        .pipelines
        .iter()
        .map(|r| format!("pipeline {} {} {}", r.scenario, r.param, r.strategy));
    let skipped = results.skipped.iter().map(|s| format!("skipped {} {}", s.scenario, s.strategy));
    runs.chain(pipelines).chain(skipped).collect()
}

#[test]
fn a_stopped_run_saves_its_cells_and_resuming_it_completes_the_same_file() {
    let out = std::env::temp_dir().join(format!("keyed-bench-interrupt-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let config = tiny(&out);
    let planned: Vec<CellKey> =
        plan(&config, None).cells.into_iter().map(|cell| cell.key).collect();
    assert_eq!(planned.len(), 12);

    // The first session stops after 5 cells: uniform's 3, async-io's skipped inline and
    // its keyed-mailbox.
    let (first, heard) = session(&config, 5);
    assert_eq!(heard.len(), 5, "{heard:?}");
    let incomplete = first.meta.incomplete.clone().expect("marked incomplete");
    assert_eq!((incomplete.cells_planned, incomplete.cells_done), (12, 5));
    assert_eq!(incomplete.missing, planned[5..], "the missing cells, in plan order");
    assert_eq!(incomplete.stopped_by.as_deref(), Some("test"));
    let measured: Vec<String> =
        first.runs.iter().map(|r| format!("{} {}", r.scenario, r.strategy)).collect();
    assert_eq!(
        measured,
        ["uniform inline", "uniform keyed-mailbox", "uniform group-by", "async-io keyed-mailbox"]
    );
    assert_eq!(first.skipped.len(), 1);
    assert!(first.pipelines.is_empty());
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary
        .lines()
        .nth(2)
        .is_some_and(|line| line.starts_with("**Incomplete run:** 5 of 12")));
    for stem in ["uniform-inline", "uniform-group-by", "async-io-keys20-keyed-mailbox"] {
        let histogram = out.join("histograms").join(format!("{stem}.latency.hgrm"));
        assert!(histogram.is_file(), "{}", histogram.display());
    }

    // The second session resumes and stops inside pipeline-crash: async-io's group-by,
    // pipeline-crash's two skipped inline cells, then one pipeline cell.
    let (second, heard) = session(&config, 4);
    assert_eq!(heard.len(), 4, "{heard:?}");
    assert_eq!(heard[0], "async-io keys=20 group-by");
    let incomplete = second.meta.incomplete.clone().expect("still incomplete");
    assert_eq!(incomplete.cells_done, 9);
    assert_eq!(incomplete.missing, planned[9..]);
    assert_eq!(second.pipelines.len(), 1);
    assert_eq!(second.skipped.len(), 2);
    assert_eq!(second.runs[..4], first.runs, "the earlier cells are kept as they were");
    assert_eq!(second.meta.created, first.meta.created);
    assert_eq!(second.meta.resumed.len(), 1);

    // The third runs the rest and ends complete.
    let (merged, heard) = session(&config, usize::MAX);
    assert_eq!(heard.len(), 3, "{heard:?}");
    assert!(merged.is_complete(), "{:?}", merged.meta.incomplete);
    assert_eq!(merged.meta.resumed.len(), 2);
    assert_eq!(merged.runs[..first.runs.len()], first.runs);
    assert!(merged.meta.suite_elapsed_s >= second.meta.suite_elapsed_s);
    let merged_cells = cells(&merged);
    let mut unique = merged_cells.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), merged_cells.len(), "no cell twice: {merged_cells:?}");

    // A run from scratch holds the same cells in the same order.
    let scratch = out.join("scratch");
    let (whole, _) = session(&tiny(&scratch), usize::MAX);
    assert!(whole.is_complete());
    assert_eq!(merged_cells, cells(&whole));
    assert!(whole.meta.resumed.is_empty());
    std::fs::remove_dir_all(&out).ok();
}
