//! `keyed-bench run --external`: designs run by a driver process (docs/external.md).
//!
//! - the reference driver's cells pass the checker, with every arrival kind, and results
//!   record what ran them;
//! - a deliberately wrong driver (a lost message, two messages swapped) is caught;
//! - a malformed, truncated, impossible, dying or hanging driver fails its own cell with
//!   its last words in `failed[]`, and the run goes on;
//! - a bad flag is refused before anything is written (exit 2).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use harness::results::Results;

const DRIVER: &str = env!("CARGO_BIN_EXE_keyed-bench-driver");

/// A folder of this test's own, absent before each case.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("keyed-bench-external-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn keyed_bench(args: &[&str]) -> Output {
    // The driver's sources are named relative to the project's root.
    Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Small sizes: every scenario's cell in a second or two, measured twice.
const SMALL: &[&str] = &["--quick", "--workers", "2", "--repeat", "2", "--no-breakdown"];

fn run_with(out: &Path, args: &[&str]) -> (Output, Option<Results>) {
    let mut all = vec!["run", "--out", out.to_str().unwrap()];
    all.extend_from_slice(SMALL);
    all.extend_from_slice(args);
    let output = keyed_bench(&all);
    let results = Results::read(&out.join("results.json")).ok();
    (output, results)
}

#[test]
fn the_reference_driver_passes_the_checker_on_every_arrival_kind() {
    let out = scratch("reference");
    let external = format!("ref={DRIVER}");
    let (output, results) = run_with(
        &out,
        &[
            "--external",
            &external,
            "--strategy",
            "ref",
            "--scenario",
            "uniform,conflict-backoff,cold-command,saga,pipeline-crash",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = results.expect("results.json");
    // uniform is closed, conflict-backoff paced, cold-command completion-driven, saga has
    // its re-entrant chain; each is measured twice and checked.
    let scenarios: Vec<&str> = results.runs.iter().map(|run| run.scenario.as_str()).collect();
    for scenario in ["uniform", "conflict-backoff", "cold-command", "saga"] {
        assert!(scenarios.contains(&scenario), "{scenario} ran: {scenarios:?}");
    }
    for run in &results.runs {
        assert_eq!(run.strategy, "ref");
        assert!(
            run.correctness.is_clean(),
            "{} {}: {:?}",
            run.scenario,
            run.param,
            run.correctness
        );
        assert!(run.throughput_per_s.median > 0.0, "{} measured", run.scenario);
    }
    let uniform = results.runs.iter().find(|run| run.scenario == "uniform").unwrap();
    assert!(uniform.latency_ns.p50 > 0, "latency measured: {:?}", uniform.latency_ns);
    assert!(uniform.threads.observed >= 3, "the driver's threads: {:?}", uniform.threads);
    assert_eq!(uniform.threads.reported, 2, "two workers ran handlers");
    // The pipeline is not run, and says why.
    let said = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        said.contains(
            "`ref` on `pipeline-crash`: an external executor runs the measured scenarios"
        ),
        "{said}"
    );
    // The gate judges it by its descriptor, but not its threads by a shared pool's count:
    // the driver process has threads of its own.
    let results_file = out.join("results.json");
    let gate = keyed_bench(&["gate", "--results", results_file.to_str().unwrap()]);
    let judged = String::from_utf8_lossy(&gate.stdout);
    assert!(
        judged.contains("ordered strategies")
            && !judged.contains("shared pools start exactly `workers` threads uniform ref"),
        "{judged}"
    );
    // What ran it is recorded.
    let design = &results.meta.designs[0];
    let record = design.external.as_ref().expect("an external record");
    assert_eq!(record.command, DRIVER);
    assert_eq!(record.protocol, 1);
    assert_eq!(record.source_sha256.len(), 64);
    let hash = harness::measure::external::hash_sources(&record.sources);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let here = std::env::current_dir().unwrap();
    std::env::set_current_dir(root).unwrap();
    let hash_here = harness::measure::external::hash_sources(&record.sources);
    std::env::set_current_dir(here).unwrap();
    assert_eq!(hash_here.as_ref(), Ok(&record.source_sha256), "{hash:?}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_wrong_driver_is_caught_by_the_checker() {
    let out = scratch("wrong");
    let (lose, reorder) =
        (format!("lose={DRIVER} --fault lose"), format!("reorder={DRIVER} --fault reorder"));
    let (output, results) = run_with(
        &out,
        &[
            "--external",
            &lose,
            "--external",
            &reorder,
            "--strategy",
            "lose,reorder",
            "--scenario",
            "uniform",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let results = results.expect("results.json");
    let cell = |strategy: &str| results.runs.iter().find(|run| run.strategy == strategy).unwrap();
    let lost = cell("lose").correctness;
    assert_eq!(lost.lost, 2, "one message never sent in each of 2 repetitions: {lost:?}");
    assert_eq!((lost.order_violations, lost.overlaps, lost.duplicates), (0, 0, 0), "{lost:?}");
    let swapped = cell("reorder").correctness;
    assert!(swapped.order_violations >= 1, "two messages of a key swapped: {swapped:?}");
    assert_eq!(swapped.lost, 0, "{swapped:?}");
    let _ = std::fs::remove_dir_all(&out);
}

/// A driver in `sh` that gives a valid hello, then (asked for a cell) writes `body`.
fn fake_driver(dir: &Path, name: &str, body: &str) -> String {
    let path = dir.join(format!("{name}.sh"));
    let script = format!(
        "#!/bin/sh\nread -r header\ncat <<'HELLO'\nkeyed-bench-external 1\nname a fake driver, {name}\n\
         version 0\nfamily mailboxes\nordered true\nthreads shared-pool\narrivals closed\n\
         wait none\nsource {}\nready\nHELLO\nread -r word || exit 0\n{body}\n",
        path.display()
    );
    std::fs::write(&path, script).unwrap();
    format!("{name}=sh {}", path.display())
}

#[test]
fn a_malformed_impossible_dying_or_hanging_driver_fails_its_cell_with_its_last_words() {
    let out = scratch("malformed");
    let drivers = scratch("malformed-drivers");
    std::fs::create_dir_all(&drivers).unwrap();
    let cases = [
        (
            "ends-first",
            "echo 'rep 0'; echo 'r 0 0 0 10 50 20 1'; echo 'end 0 60 60'; echo done",
            "ends at 20 ns, before its start at 50 ns",
        ),
        (
            "unknown-key",
            "echo 'rep 0'; echo 'r 0 999999 0 0 1 2 1'",
            "a record of key 999999, not in the workload",
        ),
        (
            "starts-early",
            "echo 'rep 0'; echo 'r 0 0 0 30 20 40 1'",
            "starts at 20 ns, before its submission at 30 ns",
        ),
        (
            "dies",
            "echo 'rep 0'; echo 'r 0 0 0 0 1 2 1'; echo 'pretend it ran out of memory' >&2; exit 3",
            "its last words: pretend it ran out of memory",
        ),
        ("truncated", "printf 'rep 0\\nr 0 0 0'", "ends in the middle of a line"),
        ("garbage", "echo 'rep 0'; echo 'hello there'", "unknown line `hello there`"),
        ("late-send", "echo 'rep 0'; echo 'end 0 5 1'", "its last send is after its end"),
        ("early-done", "echo done", "`done` out of place"),
        ("hangs", "echo 'rep 0'; echo 'still thinking' >&2; sleep 600", "wrote nothing for"),
    ];
    let mut args = vec!["--scenario", "uniform", "--cell-timeout", "3s"];
    let flags: Vec<String> =
        cases.iter().map(|(name, body, _)| fake_driver(&drivers, name, body)).collect();
    for flag in &flags {
        args.push("--external");
        args.push(flag);
    }
    let names: Vec<&str> = cases.iter().map(|(name, _, _)| *name).collect();
    let strategies = names.join(",");
    args.extend(["--strategy", &strategies]);
    let started = std::time::Instant::now();
    let (output, results) = run_with(&out, &args);
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "a run with failed cells fails: {said}");
    assert!(started.elapsed().as_secs() < 60, "no driver held the run: {:?}", started.elapsed());
    let results = results.expect("results.json");
    assert!(results.runs.is_empty(), "no figure from a bad driver: {:?}", results.runs.len());
    for (name, _, why) in cases {
        let failed = results.failed.iter().find(|failed| failed.strategy == name);
        let failed = failed.unwrap_or_else(|| panic!("{name} failed: {said}"));
        assert!(failed.reason.contains(why), "{name}: {}", failed.reason);
        assert!(failed.reason.starts_with("driver: "), "{name}: {}", failed.reason);
    }
    let hung = results.failed.iter().find(|failed| failed.strategy == "hangs").unwrap();
    assert!(hung.reason.contains("its last words: still thinking"), "{}", hung.reason);
    let dead = results.failed.iter().find(|failed| failed.strategy == "dies").unwrap();
    assert!(dead.reason.contains("exit status: 3"), "{}", dead.reason);
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&drivers);
}

#[test]
fn a_bad_external_flag_is_refused_before_anything_is_written() {
    let out = scratch("bad-flag");
    let drivers = scratch("bad-flag-drivers");
    std::fs::create_dir_all(&drivers).unwrap();
    let no_source = drivers.join("no-source.sh");
    std::fs::write(
        &no_source,
        "#!/bin/sh\nread -r h\nprintf 'keyed-bench-external 1\\nname x\\nversion 0\\nfamily mailboxes\\n\
         ordered true\\nthreads shared-pool\\narrivals closed\\nwait none\\nsource /no/such/file\\nready\\n'\n",
    )
    .unwrap();
    let no_source = format!("x=sh {}", no_source.display());
    let built_in = format!("keyed-mailbox={DRIVER}");
    let bad_id = format!("Bad={DRIVER}");
    for (flag, why) in [
        ("no-equals-sign", "expected NAME=COMMAND"),
        ("x=", "expected NAME=COMMAND"),
        ("x=/no/such/driver", "cannot start `/no/such/driver`"),
        ("x=echo not a driver", "its first line is `not a driver`"),
        (no_source.as_str(), "its source /no/such/file"),
        (built_in.as_str(), "`keyed-mailbox` is the id of a built-in strategy"),
        (bad_id.as_str(), "is not a valid design id"),
    ] {
        let output =
            keyed_bench(&["run", "--quick", "--out", out.to_str().unwrap(), "--external", flag]);
        assert_eq!(output.status.code(), Some(2), "{flag}: {}", stderr(&output));
        assert!(stderr(&output).contains(why), "{flag}: {}", stderr(&output));
        assert!(!out.exists(), "{flag}: nothing written");
    }
    let _ = std::fs::remove_dir_all(&drivers);
}

#[test]
fn a_resumed_run_takes_its_drivers_from_the_flags_given_again_never_from_the_file() {
    let out = scratch("resume");
    let drivers = scratch("resume-drivers");
    std::fs::create_dir_all(&drivers).unwrap();
    let flag = fake_driver(&drivers, "dies", "echo 'rep 0'; echo 'gone' >&2; exit 3");
    let (output, results) =
        run_with(&out, &["--scenario", "uniform", "--external", &flag, "--strategy", "dies"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert_eq!(
        results.expect("results.json").failed.len(),
        1,
        "the failed cell makes the run resumable"
    );
    let dir = out.to_str().unwrap();
    let resume = |extra: &[&str]| {
        let mut args = vec!["run", "--resume", dir];
        args.extend_from_slice(extra);
        keyed_bench(&args)
    };
    let without = resume(&[]);
    assert_eq!(without.status.code(), Some(2), "{}", stderr(&without));
    assert!(
        stderr(&without).contains(
            "never runs a command read from its results: give it again with --external 'dies=sh "
        ),
        "{}",
        stderr(&without)
    );
    let other = format!("dies={DRIVER}");
    let changed = resume(&["--external", &other]);
    assert_eq!(changed.status.code(), Some(2), "{}", stderr(&changed));
    assert!(stderr(&changed).contains("--external dies: recorded sh "), "{}", stderr(&changed));
    // The driver's source changed since: the run it would resume is not the same design.
    let script = drivers.join("dies.sh");
    let mut text = std::fs::read_to_string(&script).unwrap();
    text.push_str("# changed\n");
    std::fs::write(&script, &text).unwrap();
    let edited = resume(&["--external", &flag]);
    assert_eq!(edited.status.code(), Some(2), "{}", stderr(&edited));
    assert!(stderr(&edited).contains("dies's source SHA-256: recorded "), "{}", stderr(&edited));
    // The same driver given again: the run resumes, and its cell fails again.
    std::fs::write(&script, text.trim_end_matches("# changed\n")).unwrap();
    let again = resume(&["--external", &flag]);
    assert_eq!(again.status.code(), Some(1), "{}", stderr(&again));
    assert!(stderr(&again).contains("driver: its output ended"), "{}", stderr(&again));
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_dir_all(&drivers);
}
