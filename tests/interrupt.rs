//! `keyed-bench run` stopped by a real signal: the first SIGINT or SIGTERM lets the cell in
//! progress finish (or stops it, stuck, after its grace), saves every finished cell marked
//! incomplete and exits 130 or 143 with a line on how to resume, even when nobody reads
//! that line any more; a second exits at once, leaving the last save whole.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use harness::results::Results;

/// Long enough, on any machine, for a run not to finish between its first saved cell and
/// the signal that follows it: the test waits for the file, not for a time.
const DEADLINE: Duration = Duration::from_secs(300);

/// A folder name of this test's own, absent before each case.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("keyed-bench-interrupt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A run of 30 small cells into `out`, its output captured.
fn spawn_run(out: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["run", "--scenario", "uniform,zipf,many-types", "--strategy", "all"])
        .args(["--workers", "2", "--messages", "20000", "--keys", "1000", "--repeat", "2"])
        .args(["--types", "4", "--keys-per-type", "100", "--no-breakdown", "--out"])
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

/// Waits until `out/results.json` holds at least one measured cell.
fn wait_for_a_saved_cell(out: &Path, child: &mut Child) {
    let file = out.join("results.json");
    let began = Instant::now();
    loop {
        let saved = std::fs::read(&file).ok().and_then(|bytes| Results::parse(&bytes, &file).ok());
        if saved.is_some_and(|results| !results.runs.is_empty()) {
            return;
        }
        if let Some(status) = child.try_wait().expect("the run can be waited for") {
            panic!("the run ended ({status}) before a cell was saved");
        }
        assert!(began.elapsed() < DEADLINE, "no cell saved in {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A run of one pipeline cell that is stuck for good: every record waits 60 s on its slow
/// dependency, 256 at a time (the window), and no `--cell-timeout` shorter than that.
fn spawn_stuck_run(out: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["run", "--scenario", "pipeline-reorder", "--strategy", "keyed-mailbox"])
        .args(["--workers", "2", "--pipeline-records", "2000", "--crash-after", "100"])
        .args(["--pipeline-slow-pct", "100", "--pipeline-slow-ms", "60000", "--out"])
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts")
}

/// Waits until `out/results.json` exists: the run saves it before its first cell.
fn wait_for_the_first_save(out: &Path, child: &mut Child) {
    let began = Instant::now();
    while !out.join("results.json").is_file() {
        if let Some(status) = child.try_wait().expect("the run can be waited for") {
            panic!("the run ended ({status}) before it saved");
        }
        assert!(began.elapsed() < DEADLINE, "nothing saved in {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(child: &Child, signal: i32) {
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // SAFETY: kill(2) only sends a signal; `pid` is our own child, still unreaped.
    let sent = unsafe { libc::kill(pid, signal) };
    assert_eq!(sent, 0, "kill failed");
}

/// Waits for the run to exit (the cell in progress must finish first).
fn wait(child: Child) -> (ExitStatus, String) {
    let began = Instant::now();
    let mut child = child;
    while child.try_wait().expect("the run can be waited for").is_none() {
        assert!(began.elapsed() < DEADLINE, "the run did not stop in {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("the run's output");
    (output.status, String::from_utf8_lossy(&output.stderr).into_owned())
}

#[test]
fn sigint_stops_after_the_cell_in_progress_saves_and_exits_130() {
    let out = scratch("int");
    let mut child = spawn_run(&out);
    wait_for_a_saved_cell(&out, &mut child);
    signal(&child, libc::SIGINT);
    let (status, stderr) = wait(child);
    assert_eq!(status.code(), Some(130), "{stderr}");
    let results = Results::read(&out.join("results.json")).expect("a valid results file");
    let incomplete = results.meta.incomplete.as_ref().expect("marked incomplete");
    assert_eq!(incomplete.stopped_by.as_deref(), Some("SIGINT"));
    assert_eq!(incomplete.cells_planned, 30);
    assert_eq!(incomplete.cells_done, results.runs.len() + results.skipped.len());
    assert_eq!(incomplete.cells_done + incomplete.missing.len(), 30);
    assert!(!results.runs.is_empty());
    for run in &results.runs {
        let stem = format!("{}-{}", run.scenario, run.strategy);
        let histogram = out.join("histograms").join(format!("{stem}.latency.hgrm"));
        assert!(histogram.is_file(), "{}", histogram.display());
    }
    assert!(out.join("summary.md").is_file());
    assert!(stderr.contains("stopped by SIGINT"), "{stderr}");
    let hint = format!("keyed-bench run --resume {}", out.display());
    assert!(stderr.contains(&hint), "{stderr}");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn a_second_sigterm_exits_143_at_once_leaving_a_valid_file() {
    let out = scratch("term");
    let mut child = spawn_run(&out);
    wait_for_a_saved_cell(&out, &mut child);
    signal(&child, libc::SIGTERM);
    signal(&child, libc::SIGTERM);
    let (status, stderr) = wait(child);
    assert_eq!(status.code(), Some(143), "{stderr}");
    let results = Results::read(&out.join("results.json")).expect("a valid results file");
    let incomplete = results.meta.incomplete.as_ref().expect("marked incomplete");
    // At once; or after the cell, where the two signals arrived together as one.
    assert!(matches!(incomplete.stopped_by.as_deref(), None | Some("SIGTERM")), "{stderr}");
    assert!(!results.runs.is_empty());
    let leftovers: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    std::fs::remove_dir_all(&out).ok();
}

/// A cell that is stuck does not hold the first SIGINT up: after its grace it is stopped,
/// recorded as not done (not failed), and the run saves and exits 130.
#[test]
fn sigint_stops_a_stuck_cell_after_its_grace_and_exits_130() {
    let out = scratch("stuck");
    let mut child = spawn_stuck_run(&out);
    wait_for_the_first_save(&out, &mut child);
    // The cell starts right after that save and then waits 60 s for its first record.
    std::thread::sleep(Duration::from_secs(1));
    signal(&child, libc::SIGINT);
    let (status, stderr) = wait(child);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr
            .contains("pipeline-reorder producers=2 keyed-mailbox: still running 3 s after SIGINT"),
        "{stderr}"
    );
    let results = Results::read(&out.join("results.json")).expect("a valid results file");
    let incomplete = results.meta.incomplete.as_ref().expect("marked incomplete");
    assert_eq!(incomplete.stopped_by.as_deref(), Some("SIGINT"));
    assert_eq!((incomplete.cells_planned, incomplete.cells_done), (1, 0), "not done");
    assert!(results.failed.is_empty() && results.pipelines.is_empty(), "nor failed");
    let hint = format!("keyed-bench run --resume {}", out.display());
    assert!(stderr.contains(&hint), "{stderr}");
    std::fs::remove_dir_all(&out).ok();
}

/// Ctrl-C in a terminal also ends the reader of a pipe the run writes to (`2>&1 | tee`):
/// the run must still save, say what it can, and exit 130.
#[test]
fn sigint_stops_cleanly_when_the_reader_of_its_output_is_gone() {
    let out = scratch("tee");
    let mut child = spawn_run(&out);
    drop(child.stderr.take());
    drop(child.stdout.take());
    wait_for_a_saved_cell(&out, &mut child);
    signal(&child, libc::SIGINT);
    let (status, _) = wait(child);
    assert_eq!(status.code(), Some(130));
    let results = Results::read(&out.join("results.json")).expect("a valid results file");
    let incomplete = results.meta.incomplete.as_ref().expect("marked incomplete");
    assert_eq!(incomplete.stopped_by.as_deref(), Some("SIGINT"));
    assert_eq!(incomplete.cells_done, results.runs.len());
    std::fs::remove_dir_all(&out).ok();
}
