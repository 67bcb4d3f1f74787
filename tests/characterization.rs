//! Characterization: what a run plans and what its results hold, pinned to the files under
//! `tests/characterization/` (written from 9f6db06), so that restructuring the harness
//! cannot move a cell, a repetition or a schema key unseen.
//!
//! - the cells of three plans (`--quick`, the default suite, a sweep), in order, each with
//!   its repetitions and breakdown or its skip, as `--dry-run` lists them;
//! - `--dry-run` and the cell count generate no workload: a dry run of 100,000,000
//!   messages per workload (5 GB of messages) runs within 1 GB of address space;
//! - a seeded quick run's results (`KEYED_BENCH_QUICK_RESULTS`, the release run that
//!   `.ci/run` makes for the gate): every schema key of 9f6db06's quick run, every ordered
//!   strategy clean, nothing lost and the final state right under the safe commit policies,
//!   and the unordered control caught where contention is heavy.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// The folder of the pinned files.
fn pinned(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/characterization").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The standard output of a command that must have exited 0 (its output shown if not).
fn succeeded(output: &std::process::Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The cells `keyed-bench run --dry-run ARGS` lists: `scenario param strategy | what`, with
/// `what` the repetitions (and breakdown) or `skipped`, the estimate left out.
fn planned_cells(args: &[&str]) -> Vec<String> {
    let output = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["run", "--dry-run"])
        .args(args)
        .output()
        .expect("the binary runs");
    succeeded(&output)
        .lines()
        // A cell's line ends with its estimate (`, ~0.20 s`) or its skip.
        .filter(|line| line.contains(", ~") || line.contains(" skipped: "))
        .filter_map(|line| {
            let at = ["skipped: ", "1 run", " repetition"]
                .iter()
                .filter_map(|mark| line.find(mark))
                .min()?;
            // The repetitions' count is the word before " repetition".
            let at =
                if line[at..].starts_with(" repetition") { line[..at].rfind(' ')? + 1 } else { at };
            let cell = line[..at].split_whitespace().collect::<Vec<_>>().join(" ");
            let what = &line[at..];
            let what = if what.starts_with("skipped") {
                "skipped"
            } else {
                what.split(", ~").next().unwrap_or(what)
            };
            Some(format!("{cell} | {what}"))
        })
        .collect()
}

fn assert_plan(args: &[&str], file: &str) {
    let expected: Vec<String> = pinned(file).lines().map(str::to_owned).collect();
    let planned = planned_cells(args);
    for (index, (planned, expected)) in planned.iter().zip(&expected).enumerate() {
        assert_eq!(planned, expected, "cell {index} of `run --dry-run {}`", args.join(" "));
    }
    assert_eq!(planned.len(), expected.len(), "cells of `run --dry-run {}`", args.join(" "));
}

#[test]
fn the_quick_plan_is_the_pinned_one() {
    assert_plan(&["--quick"], "quick-cells.txt");
}

#[test]
fn the_default_plan_is_the_pinned_one() {
    assert_plan(&[], "default-cells.txt");
}

#[test]
fn a_sweeps_plan_is_the_pinned_one() {
    let args = [
        "--quick",
        "--workers",
        "1,2",
        "--throughput",
        "1,16",
        "--scenario",
        "uniform,async-io,parallel-consumer,pipeline-crash",
        "--strategy",
        "keyed-mailbox,inline,tokio",
    ];
    assert_plan(&args, "sweep-cells.txt");
}

/// Generating the workloads of this dry run would take over 5 GB (100,000,000 messages
/// each for uniform, zipf and many-types); planning it takes none of that.
#[test]
fn a_dry_run_and_its_cell_count_generate_no_workload() {
    let output = Command::new("sh")
        .args(["-c", "ulimit -v 1000000 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["run", "--dry-run", "--messages", "100000000", "--scenario", "uniform,zipf"])
        .output()
        .expect("sh runs");
    let stdout = succeeded(&output);
    assert!(stdout.contains("20 cells: 20 to run, 0 skipped"), "{stdout}");
}

/// Every key path of a results file, arrays written `[]`.
fn key_paths(value: &serde_json::Value, path: &str, paths: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                let path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                paths.insert(path.clone());
                key_paths(value, &path, paths);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                key_paths(item, &format!("{path}[]"), paths);
            }
        }
        _ => {}
    }
}

#[test]
#[ignore = "reads a release quick run: `.ci/run` gives it scripts/gate.sh's"]
fn a_quick_runs_results_keep_their_keys_and_correctness() {
    let path = std::env::var("KEYED_BENCH_QUICK_RESULTS")
        .expect("KEYED_BENCH_QUICK_RESULTS names the results.json of a `run --quick`");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let results: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");

    let mut paths = BTreeSet::new();
    key_paths(&results, "", &mut paths);
    let pinned_keys = pinned("quick-schema.txt");
    let lost: Vec<&str> = pinned_keys.lines().filter(|key| !paths.contains(*key)).collect();
    assert!(lost.is_empty(), "keys of 9f6db06's quick run missing now: {lost:#?}");

    let ordered = |strategy: &str| strategy != "thread-pool";
    let mut caught = BTreeSet::new();
    for run in results["runs"].as_array().expect("runs") {
        let (scenario, param, strategy) = (&run["scenario"], &run["param"], &run["strategy"]);
        let strategy = strategy.as_str().unwrap();
        let faults: u64 = ["order_violations", "overlaps", "lost", "duplicates"]
            .iter()
            .map(|field| run["correctness"][field].as_u64().expect("a count"))
            .sum();
        if ordered(strategy) {
            assert_eq!(faults, 0, "{scenario} {param} {strategy}: {}", run["correctness"]);
        } else if faults > 0 {
            let cell = format!("{} {}", scenario.as_str().unwrap(), param.as_str().unwrap());
            caught.insert(cell.trim().to_owned());
        }
    }
    for line in pinned("quick-caught.txt").lines().filter(|line| !line.starts_with('#')) {
        let cell = line.split(" #").next().unwrap().trim();
        assert!(caught.contains(cell), "thread-pool not caught in {cell}; caught in {caught:?}");
    }
    for run in results["pipelines"].as_array().expect("pipelines") {
        let policy = run["policy"].as_str().unwrap_or("");
        if policy == "contiguous" || policy == "contiguous+metadata" {
            let what = format!("{} {} {}", run["scenario"], run["param"], run["strategy"]);
            assert_eq!(run["lost"], 0, "{what}");
            assert_eq!(run["projection"]["final_state_correct"], true, "{what}");
        }
    }
}
