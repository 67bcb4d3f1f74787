//! One run per output folder, and no run destroys another's work: a second run into a
//! folder in use is refused naming the holder, a fresh run into an interrupted run's folder
//! is refused with the command that resumes it, and one into a folder of others' files is
//! refused; `--overwrite` starts afresh and keeps the others' files. Each refusal exits 2
//! and leaves the folder as it was.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use harness::results::incomplete::Incomplete;
use harness::results::Results;
use harness::suite::output::LOCK_FILE;

/// Long enough, on any machine, for the first run to take its lock: the test waits for the
/// lock file, not for a time.
const DEADLINE: Duration = Duration::from_secs(300);

/// A folder name of this test's own, absent before each case.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("keyed-bench-output-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn keyed_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keyed-bench")).args(args).output().expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The flags of three tiny cells of uniform into `out`.
fn tiny(out: &Path) -> Vec<String> {
    let flags = "run --scenario uniform --strategy inline,keyed-mailbox,group-by --workers 2 \
                 --messages 2000 --keys 100 --repeat 1 --no-breakdown --out";
    let mut args: Vec<String> = flags.split(' ').map(str::to_owned).collect();
    args.push(out.display().to_string());
    args
}

fn run_tiny(out: &Path, more: &[&str]) -> Output {
    let mut args = tiny(out);
    args.extend(more.iter().map(|flag| (*flag).to_owned()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    keyed_bench(&args)
}

/// Everything under `dir`, file by file, to show that a refused run changed nothing.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).expect("a folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                folders.push(path);
            } else {
                let bytes = std::fs::read(&path).expect("a file");
                files.push((path, bytes));
            }
        }
    }
    files.sort();
    files
}

/// A run of 27 small cells into `out`, long enough to be running when the next one starts.
fn spawn_long_run(out: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["run", "--scenario", "uniform,zipf,many-types", "--strategy", "all"])
        .args(["--workers", "2", "--messages", "20000", "--keys", "1000", "--repeat", "2"])
        .args(["--types", "4", "--keys-per-type", "100", "--no-breakdown", "--out"])
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the binary starts")
}

#[test]
fn a_second_run_into_a_folder_in_use_is_refused_naming_the_holder() {
    let out = scratch("locked");
    let mut first = spawn_long_run(&out);
    let began = Instant::now();
    while !out.join(LOCK_FILE).exists() || !out.join("results.json").exists() {
        assert!(first.try_wait().unwrap().is_none(), "the first run ended before its lock");
        assert!(began.elapsed() < DEADLINE, "no lock taken in {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(10));
    }
    let second = run_tiny(&out, &[]);
    let resumed = keyed_bench(&["run", "--resume", out.to_str().unwrap()]);
    let _ = first.kill();
    let _ = first.wait();
    for refused in [second, resumed] {
        assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
        let text = stderr(&refused);
        let holder = format!("is in use by another run (pid {}, `", first.id());
        assert!(text.contains(&holder), "{text}");
    }
    // The killed run's lock file is taken over by the next run, with a note.
    let after = run_tiny(&out, &["--overwrite"]);
    assert_eq!(after.status.code(), Some(0), "{}", stderr(&after));
    let text = stderr(&after);
    assert!(text.contains("took over the lock"), "{text}");
    assert!(!out.join(LOCK_FILE).exists(), "a finished run left its lock file");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_fresh_run_into_an_interrupted_runs_folder_is_refused_with_the_resume_command() {
    let out = scratch("interrupted");
    let done = run_tiny(&out, &[]);
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
    // A complete run of the suite's own files is replaced by the next.
    let again = run_tiny(&out, &[]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));

    let file = out.join("results.json");
    let mut results = Results::read(&file).expect("a complete results file");
    let last = results.runs.pop().expect("a cell");
    results.meta.incomplete = Some(Incomplete {
        cells_planned: results.runs.len() + 1,
        cells_done: results.runs.len(),
        missing: vec![harness::results::CellKey::recorded(
            &last.scenario,
            &last.param,
            &last.strategy,
        )],
        stopped_by: Some("SIGINT".into()),
    });
    std::fs::write(&file, serde_json::to_vec_pretty(&results).unwrap()).unwrap();
    let before = snapshot(&out);

    for refused in [run_tiny(&out, &[]), run_tiny(&out, &["--dry-run"])] {
        assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
        let text = stderr(&refused);
        assert!(text.contains("holds an incomplete run (2 of 3 cells done)"), "{text}");
        let resume = format!("keyed-bench run --resume {}", out.display());
        assert!(text.contains(&resume), "{text}");
    }
    assert_eq!(snapshot(&out), before, "a refused run changed the folder");

    let both = run_tiny(&out, &["--overwrite", "--resume", out.to_str().unwrap()]);
    assert_eq!(both.status.code(), Some(2), "{}", stderr(&both));
    let overwritten = run_tiny(&out, &["--overwrite"]);
    assert_eq!(overwritten.status.code(), Some(0), "{}", stderr(&overwritten));
    let fresh = Results::read(&file).expect("a complete results file");
    assert!(fresh.meta.incomplete.is_none() && fresh.runs.len() == 3);
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_folder_of_others_files_is_refused_and_overwrite_keeps_them() {
    let out = scratch("foreign");
    std::fs::create_dir_all(out.join("histograms")).unwrap();
    std::fs::write(out.join("README.md"), "a committed run's own notes").unwrap();
    std::fs::write(out.join("histograms/zipf-rayon.latency.hgrm"), "earlier").unwrap();
    let before = snapshot(&out);
    let refused = run_tiny(&out, &[]);
    assert_eq!(refused.status.code(), Some(2), "{}", stderr(&refused));
    let text = stderr(&refused);
    assert!(text.contains("1 file(s) the suite did not write (README.md)"), "{text}");
    assert_eq!(snapshot(&out), before, "a refused run changed the folder");

    let overwritten = run_tiny(&out, &["--overwrite"]);
    assert_eq!(overwritten.status.code(), Some(0), "{}", stderr(&overwritten));
    let readme = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert_eq!(readme, "a committed run's own notes");
    assert!(!out.join("histograms/zipf-rayon.latency.hgrm").exists());
    std::fs::remove_dir_all(&out).unwrap();
}
