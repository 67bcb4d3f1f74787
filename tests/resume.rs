//! `keyed-bench run --resume DIR` on the binary: it runs only the cells an incomplete file
//! lists as missing, refuses (exit 2, before measuring) a run whose flags, commit or output
//! folder differ, and leaves a complete file alone.
//!
//! The incomplete file is a tiny complete run with its last cell taken out and marked
//! missing, as a run stopped before that cell leaves it: no signal, no timing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use harness::results::incomplete::Incomplete;
use harness::results::CellKey;
use harness::results::Results;

/// A folder name of this test's own, absent before each case.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("keyed-bench-resume-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn keyed_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keyed-bench")).args(args).output().expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Three tiny cells of uniform into `out`, complete.
fn tiny_run(out: &Path) -> Results {
    let output = keyed_bench(&[
        "run",
        "--scenario",
        "uniform",
        "--strategy",
        "inline,keyed-mailbox,group-by",
        "--workers",
        "2",
        "--messages",
        "2000",
        "--keys",
        "100",
        "--repeat",
        "1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    Results::read(&out.join("results.json")).expect("a complete results file")
}

/// `results` without its last cell, marked as a run stopped before it leaves it.
fn stopped_before_the_last(results: &Results) -> Results {
    let mut stopped = results.clone();
    let last = stopped.runs.pop().expect("a cell");
    stopped.meta.incomplete = Some(Incomplete {
        cells_planned: results.runs.len(),
        cells_done: stopped.runs.len(),
        missing: vec![CellKey::recorded(&last.scenario, &last.param, &last.strategy)],
        stopped_by: Some("SIGINT".into()),
    });
    stopped
}

fn write(out: &Path, results: &Results) {
    let json = serde_json::to_vec_pretty(results).unwrap();
    std::fs::write(out.join("results.json"), json).unwrap();
}

fn cells(results: &Results) -> Vec<(String, String, String)> {
    let cell =
        |r: &harness::results::RunResult| (r.scenario.clone(), r.param.clone(), r.strategy.clone());
    results.runs.iter().map(cell).collect()
}

#[test]
fn resume_runs_only_the_missing_cell_and_refuses_other_settings_before_measuring() {
    let out = scratch("missing");
    let complete = tiny_run(&out);
    let stopped = stopped_before_the_last(&complete);
    write(&out, &stopped);
    let dir = out.to_str().unwrap();
    let before = std::fs::read(out.join("results.json")).unwrap();

    // Other settings, another output folder, another commit: exit 2, nothing measured.
    let differing = keyed_bench(&["run", "--resume", dir, "--workers", "3", "--keys", "7"]);
    assert_eq!(differing.status.code(), Some(2), "{}", stderr(&differing));
    let text = stderr(&differing);
    assert!(text.contains("--workers: recorded 2, given 3"), "{text}");
    assert!(text.contains("--keys: recorded 100, given 7"), "{text}");
    assert!(text.contains(&format!("the run was started with: {}", complete.meta.command)));
    let elsewhere = scratch("elsewhere");
    let other = keyed_bench(&["run", "--resume", dir, "--out", elsewhere.to_str().unwrap()]);
    assert_eq!(other.status.code(), Some(2), "{}", stderr(&other));
    assert!(stderr(&other).contains("--out names another folder"), "{}", stderr(&other));
    assert!(!elsewhere.exists());
    let mut foreign = stopped.clone();
    foreign.meta.git_commit = "0123456789abcdef0123456789abcdef01234567".into();
    write(&out, &foreign);
    let commit = keyed_bench(&["run", "--resume", dir]);
    assert_eq!(commit.status.code(), Some(2), "{}", stderr(&commit));
    assert!(stderr(&commit).contains("commit: recorded 0123456789abcdef"), "{}", stderr(&commit));
    write(&out, &stopped);
    assert_eq!(std::fs::read(out.join("results.json")).unwrap(), before, "nothing was measured");

    // A dry run lists the missing cell alone.
    let dry = keyed_bench(&["run", "--resume", dir, "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", stderr(&dry));
    let listed = String::from_utf8_lossy(&dry.stdout).into_owned();
    assert!(listed.contains("1 cells: 1 to run"), "{listed}");

    // The same flags as recorded, and a tree whose only difference is its -dirty mark,
    // resume: the missing cell runs, the others are kept as they were.
    let mut dirty = stopped.clone();
    let now = harness::measure::system::git_commit();
    dirty.meta.git_commit = match now.strip_suffix("-dirty") {
        Some(hash) => hash.to_owned(),
        None => format!("{now}-dirty"),
    };
    write(&out, &dirty);
    let resumed = keyed_bench(&["run", "--resume", dir, "--workers", "2", "--out", dir]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let merged = Results::read(&out.join("results.json")).unwrap();
    assert!(merged.is_complete(), "{:?}", merged.meta.incomplete);
    assert_eq!(cells(&merged), cells(&complete), "the cells of a run from scratch, in order");
    assert_eq!(merged.runs[..stopped.runs.len()], stopped.runs);
    assert!(merged.meta.git_commit.ends_with("-dirty"), "{}", merged.meta.git_commit);
    assert_eq!(merged.meta.resumed.len(), 1);
    assert_eq!(merged.meta.created, complete.meta.created);

    // A complete file: exit 0, nothing run, nothing written.
    let complete_bytes = std::fs::read(out.join("results.json")).unwrap();
    let again = keyed_bench(&["run", "--resume", dir]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(stderr(&again).contains("is complete"), "{}", stderr(&again));
    assert!(again.stdout.is_empty());
    assert_eq!(std::fs::read(out.join("results.json")).unwrap(), complete_bytes);
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn resume_of_a_folder_without_results_is_bad_input() {
    let out = scratch("none");
    std::fs::create_dir_all(&out).unwrap();
    let output = keyed_bench(&["run", "--resume", out.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("results.json"), "{}", stderr(&output));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0, "nothing written");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn a_resumed_sweep_runs_its_missing_point_with_the_recorded_settings() {
    let out = scratch("sweep");
    let dir = out.to_str().unwrap();
    let output = keyed_bench(&[
        "run",
        "--scenario",
        "uniform",
        "--strategy",
        "keyed-mailbox",
        "--workers",
        "1,2",
        "--throughput",
        "1,16",
        "--messages",
        "2000",
        "--keys",
        "100",
        "--repeat",
        "1",
        "--out",
        dir,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let complete = Results::read(&out.join("results.json")).unwrap();
    assert_eq!(complete.runs.len(), 4);
    write(&out, &stopped_before_the_last(&complete));

    // No flag but --resume: the recorded lists give the same points.
    let resumed = keyed_bench(&["run", "--resume", dir]);
    assert_eq!(resumed.status.code(), Some(0), "{}", stderr(&resumed));
    let after = Results::read(&out.join("results.json")).unwrap();
    assert!(after.meta.incomplete.is_none());
    assert_eq!(cells(&after), cells(&complete));
    let last = after.runs.last().unwrap();
    assert_eq!(last.param, "workers=2 throughput=16");
    let settings = last.settings.as_ref().unwrap();
    assert_eq!((settings.workers, settings.throughput), (2, 16));

    // A different list is a different run.
    let stopped = stopped_before_the_last(&complete);
    write(&out, &stopped);
    let differing = keyed_bench(&["run", "--resume", dir, "--workers", "1,2,4"]);
    assert_eq!(differing.status.code(), Some(2), "{}", stderr(&differing));
    assert!(stderr(&differing).contains("--workers: recorded 1,2, given 1,2,4"));
    std::fs::remove_dir_all(&out).unwrap();
}

/// A file whose cells disagree with the settings it records (hand-edited, or pieced
/// together from two runs) cannot be resumed: cells measured now from those settings would
/// sit beside cells of another experiment. Exit 2, naming the cell and the field, before
/// measuring or writing anything.
#[test]
fn resume_refuses_a_file_whose_cells_disagree_with_its_settings() {
    let out = scratch("disagree");
    let complete = tiny_run(&out);
    let stopped = stopped_before_the_last(&complete);
    let dir = out.to_str().unwrap();
    type Doctor = fn(&mut Results);
    let cases: [(Doctor, &str); 3] = [
        (
            |results| results.runs[0].messages = 5,
            "cell `uniform inline`: messages is 5, but the recorded settings give 2000",
        ),
        (
            |results| results.runs[1].workers = Some(3),
            "cell `uniform keyed-mailbox`: workers is 3, but the recorded settings \
             give 2",
        ),
        (
            |results| results.runs[0].scenario = "zipf".into(),
            "cell `zipf inline`: scenario `zipf` is not in the recorded selection \
             (--scenario uniform)",
        ),
    ];
    for (doctor, names) in cases {
        let mut doctored = stopped.clone();
        doctor(&mut doctored);
        write(&out, &doctored);
        let before = std::fs::read(out.join("results.json")).unwrap();
        for args in [&["run", "--resume", dir][..], &["run", "--resume", dir, "--dry-run"]] {
            let output = keyed_bench(args);
            let text = stderr(&output);
            assert_eq!(output.status.code(), Some(2), "{args:?}: {text}");
            assert!(text.starts_with("error: cannot resume "), "{text}");
            assert!(text.contains(names), "{args:?}: expected {names:?} in\n{text}");
        }
        assert_eq!(std::fs::read(out.join("results.json")).unwrap(), before, "nothing written");
    }
    std::fs::remove_dir_all(&out).ok();
}
