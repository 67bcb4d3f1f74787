//! `keyed-bench run --dry-run`: lists the cells a run would run and an estimated duration,
//! measures nothing and writes nothing; bad input still exits 2.

use std::path::PathBuf;
use std::process::Command;

/// A folder name of this test's own, absent before each case.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("keyed-bench-dry-run-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_dry_run_lists_every_scenarios_cells_and_a_duration_and_writes_nothing() {
    let out = scratch("quick");
    let output = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["run", "--dry-run", "--quick", "--out"])
        .arg(&out)
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(!out.exists(), "a dry run created {}", out.display());
    for scenario in harness::workload::ScenarioId::ALL {
        let lines = stdout.lines().filter(|line| line.starts_with(&format!("{scenario} "))).count();
        assert!(lines > 0, "no cell of {scenario}:\n{stdout}");
    }
    assert!(
        stdout.lines().any(|line| line.contains(" inline ") && line.contains("skipped: ")),
        "{stdout}"
    );
    assert!(stdout.lines().any(|line| line.ends_with(" skipped") && line.contains(" cells: ")));
    let estimate = stdout
        .lines()
        .find(|line| line.starts_with("estimated duration: about "))
        .unwrap_or_else(|| panic!("no estimate:\n{stdout}"));
    assert!(estimate.contains("ideal bound alone is "), "{estimate}");
    assert!(estimate.chars().any(|c| c.is_ascii_digit()), "{estimate}");
}

#[test]
fn a_dry_run_with_bad_input_still_exits_2_and_writes_nothing() {
    let out = scratch("bad");
    let cases: [&[&str]; 3] = [
        &["run", "--dry-run", "--workers", "0"],
        &["run", "--dry-run", "--quick", "--scenario", "bogus"],
        &["run", "--dry-run", "--repeat", "1001"],
    ];
    for args in cases {
        let output = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
            .args(args)
            .arg("--out")
            .arg(&out)
            .output()
            .expect("the binary runs");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(output.stdout.is_empty(), "{args:?}");
        assert!(!out.exists(), "{args:?} created {}", out.display());
    }
    // An output folder under a file fails as the run would, before anything is listed.
    let file = scratch("file");
    std::fs::write(&file, b"not a folder").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["run", "--dry-run", "--quick", "--out"])
        .arg(file.join("sub"))
        .output()
        .expect("the binary runs");
    std::fs::remove_file(&file).unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("sub"));
}

#[test]
fn a_run_whose_largest_cell_would_not_fit_is_refused_before_generating_anything() {
    let out = scratch("memory");
    let output = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["run", "--messages", "100000000", "--max-memory-mib", "2048", "--out"])
        .arg(&out)
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("the memory of the largest cell is about "), "{stderr}");
    assert!(stderr.contains("past the limit of 2048") && stderr.contains("--max-memory-mib"));
    assert!(!out.exists(), "a refused run created {}", out.display());
}

/// The memory estimate follows what a cell really holds: a uniform cell of a million
/// messages peaks within the estimate plus the process's own memory, and above most of it.
#[test]
fn the_memory_estimate_of_a_measured_cell_is_what_it_holds() {
    let out = scratch("memory-model");
    let messages = 1_000_000;
    let output = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["run", "--scenario", "uniform", "--strategy", "inline", "--keys", "1000"])
        .args(["--messages", &messages.to_string(), "--repeat", "1", "--no-breakdown", "--out"])
        .arg(&out)
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let results = harness::results::Results::read(&out.join("results.json")).expect("results");
    let Some(memory) = results.runs[0].memory else {
        return; // no /proc here: nothing to compare with
    };
    let estimate = harness::suite::measured_bytes(messages, 1_000, 0);
    let peak = memory.peak_bytes;
    const PROCESS_BYTES: u64 = 64 << 20;
    assert!(peak <= estimate + PROCESS_BYTES, "peak {peak} B, estimate {estimate} B");
    assert!(peak * 5 >= estimate * 4, "peak {peak} B, estimate {estimate} B");
    std::fs::remove_dir_all(&out).unwrap();
}

/// The settings `keyed-bench run ARGS` would run with.
fn config_of(args: &[&str]) -> harness::config::RunConfig {
    #[derive(clap::Parser)]
    struct Run {
        #[command(flatten)]
        run: harness::cli::RunArgs,
    }
    let argv = std::iter::once("keyed-bench").chain(args.iter().copied());
    let args = <Run as clap::Parser>::try_parse_from(argv).expect("valid flags").run;
    harness::config::RunConfig::try_from((args, String::new())).expect("valid settings")
}

/// One cell's estimate, without the fixed overhead per cell, against what the cell took:
/// `(estimate, measured)` in seconds.
fn estimate_and_elapsed(name: &str, args: &[&str]) -> (f64, f64) {
    let config = config_of(args);
    let plan = harness::suite::plan(&config, None);
    let cells: Vec<_> = plan.cells.iter().filter(|cell| cell.skipped.is_none()).collect();
    assert_eq!(cells.len(), 1, "{args:?}: one cell");
    let estimate = cells[0].estimate_s - harness::suite::CELL_OVERHEAD_S;
    let out = scratch(name);
    let output = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .arg("run")
        .args(args)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let results = harness::results::Results::read(&out.join("results.json")).expect("results");
    std::fs::remove_dir_all(&out).unwrap();
    let elapsed = match (results.pipelines.first(), results.runs.first()) {
        (Some(pipeline), _) => pipeline.elapsed_s,
        (None, Some(run)) => run.elapsed_s,
        (None, None) => panic!("{args:?}: no cell in the results"),
    };
    (estimate, elapsed)
}

/// A cell that mostly waits is estimated by its waits, read from the same settings its
/// scenario waits on: for a short wait and a long one, the estimate (less the fixed
/// overhead per cell) lies within a broad factor of what the cell took. Ratios only: the
/// machine may be slow or busy, and this is a debug build. (A pipeline cell's estimate
/// once counted its records alone, 10 to 100 times too little here; async-io's ideal bound
/// counts its waits.)
#[test]
fn the_estimate_of_a_cell_that_waits_follows_its_waits() {
    const SMALL: &[&str] = &["--strategy", "keyed-mailbox", "--workers", "2", "--no-breakdown"];
    const PIPELINE: &[&str] = &["--pipeline-records", "1000", "--crash-after", "500"];
    const ASYNC: &[&str] = &["--async-keys", "100", "--async-messages", "200", "--repeat", "1"];
    // Each scenario, the flag of its wait and a short and a long value of it.
    let cases: [(&[&str], &str, [&str; 2]); 4] = [
        (
            &["--scenario=pipeline-crash", "--commit-policy=contiguous"],
            "--pipeline-slow-ms",
            ["100", "600"],
        ),
        (&["--scenario=pipeline-reorder"], "--commit-interval-ms", ["100", "600"]),
        // A poison record waits 7 backoffs (1 + 2 + 4 at --max-attempts 4).
        (
            &["--scenario=pipeline-retry", "--retry-policy=retry-in-place"],
            "--retry-backoff-ms",
            ["15", "90"],
        ),
        (&["--scenario=async-io"], "--async-max-wait-ms", ["100", "600"]),
    ];
    let mut failures = Vec::new();
    for (scenario, flag, values) in cases {
        for ms in values {
            let sizes = if flag == "--async-max-wait-ms" { ASYNC } else { PIPELINE };
            let args: Vec<&str> = [SMALL, scenario, sizes, &[flag, ms]].concat();
            let name = format!("{}{flag}{ms}", scenario[0]).replace('=', "-");
            let (estimate, elapsed) = estimate_and_elapsed(&name, &args);
            if !(0.3..=3.0).contains(&(estimate / elapsed)) {
                failures.push(format!(
                    "{scenario:?} {flag} {ms}: estimated {estimate:.3} s, took {elapsed:.3} s"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
