//! `keyed-bench run` with a cell that makes no progress (every pipeline record waits 60 s on
//! its slow dependency): `--cell-timeout` stops it, records it as failed with the reason,
//! and the run goes on and ends with exit 1; `gate` fails naming it, `plot` draws the rest,
//! and `run --resume` runs it again.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use harness::results::{CellKey, Results};

/// A folder name of this test's own, absent before each case.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("keyed-bench-watchdog-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn keyed_bench(args: &[&str], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(args)
        .arg(out)
        .output()
        .expect("the binary runs")
}

/// uniform, then pipeline-reorder stuck for good, on keyed-mailbox, small.
const STUCK: &[&str] = &[
    "run",
    "--scenario",
    "uniform,pipeline-reorder",
    "--strategy",
    "keyed-mailbox",
    "--workers",
    "2",
    "--messages",
    "2000",
    "--keys",
    "100",
    "--repeat",
    "1",
    "--no-breakdown",
    "--pipeline-records",
    "600",
    "--crash-after",
    "100",
    "--pipeline-slow-pct",
    "100",
    "--pipeline-slow-ms",
    "60000",
    "--cell-timeout",
    "2s",
    "--out",
];

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_cell_that_makes_no_progress_fails_with_its_reason_and_the_run_goes_on() {
    let out = scratch("stuck");
    let run = keyed_bench(STUCK, &out);
    let said = stderr(&run);
    assert_eq!(run.status.code(), Some(1), "a run with a failed cell fails: {said}");
    let stuck = "pipeline-reorder producers=2 keyed-mailbox";
    assert!(
        said.contains(&format!("{stuck}: FAILED: no progress for 2 s: 0 records done")),
        "{said}"
    );
    assert!(said.contains(&format!("keyed-bench run --resume {}", out.display())), "{said}");

    let results = Results::read(&out.join("results.json")).expect("a valid results file");
    assert!(results.is_complete(), "every cell done: {:?}", results.meta.incomplete);
    assert_eq!(results.runs.len(), 1, "the other cell ran");
    assert!(results.pipelines.is_empty());
    assert_eq!(results.failed.len(), 1);
    let failed = &results.failed[0];
    assert_eq!(failed.key(), CellKey::recorded("pipeline-reorder", "producers=2", "keyed-mailbox"));
    assert_eq!(failed.reason, "no progress for 2 s: 0 records done");
    assert_eq!((failed.unit.as_str(), failed.done, failed.timeout_s), ("records", 0, 2.0));
    assert!(!failed.abandoned && failed.elapsed_s >= 2.0, "{failed:?}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("**Failed cells:** the watchdog stopped 1 cell"), "{summary}");

    let results_file = out.join("results.json");
    let gate = keyed_bench(&["gate", "--confirm", "0", "--results"], &results_file);
    let report = String::from_utf8_lossy(&gate.stdout);
    assert_eq!(gate.status.code(), Some(1), "the gate fails on a failed cell: {report}");
    assert!(report.starts_with(&format!("FAIL  cell failed: {stuck}: no progress")), "{report}");
    let plot = keyed_bench(&["plot", "--input"], &results_file);
    assert_eq!(plot.status.code(), Some(0), "{}", stderr(&plot));

    // Resumed, the failed cell runs again (and fails again: the sizes are the recorded ones).
    let resumed = keyed_bench(&["run", "--cell-timeout", "1s", "--resume"], &out);
    let said = stderr(&resumed);
    assert_eq!(resumed.status.code(), Some(1), "{said}");
    assert!(said.contains(&format!("{stuck}: FAILED: no progress for 1 s")), "{said}");
    assert!(!said.contains("uniform keyed-mailbox:"), "the measured cell is kept: {said}");
    let again = Results::read(&results_file).expect("a valid results file");
    assert_eq!(again.meta.resumed.len(), 1);
    assert_eq!(again.runs, results.runs);
    assert_eq!(again.failed.len(), 1, "the earlier failure is replaced, not added to");
    assert_eq!(again.failed[0].timeout_s, 1.0);
    std::fs::remove_dir_all(&out).ok();
}
