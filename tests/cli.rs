//! The `keyed-bench` binary end to end: `plot` on good and bad input files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Exit status for bad input (flags, files).
const BAD_INPUT: i32 = 2;

fn keyed_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keyed-bench")).args(args).output().expect("the binary runs")
}

/// A fresh, empty folder under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("keyed-bench-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn plot_of_a_missing_file_exits_2_and_names_it() {
    let dir = scratch("missing");
    let input = dir.join("results.json");
    let output = keyed_bench(&["plot", "--input", input.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(BAD_INPUT), "{}", stderr(&output));
    assert!(stderr(&output).contains("cannot read") && stderr(&output).contains("results.json"));
}

#[test]
fn plot_of_a_malformed_file_exits_2_and_says_why() {
    let dir = scratch("malformed");
    let input = dir.join("results.json");
    std::fs::write(&input, "{ not json").unwrap();
    let output = keyed_bench(&["plot", "--input", input.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(BAD_INPUT), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("is not a valid keyed-bench results file"),
        "{}",
        stderr(&output)
    );
    assert!(!dir.join("report.html").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plot_of_the_reference_run_writes_charts_and_report_next_to_it() {
    let dir = scratch("reference");
    let reference =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("results/2026-11-30-vm/results.json");
    std::fs::copy(&reference, dir.join("results.json")).expect("copy the reference run");
    // A folder is accepted for --input: its results.json is read.
    let output = keyed_bench(&["plot", "--input", dir.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report = std::fs::read_to_string(dir.join("report.html")).expect("report written");
    assert!(report.starts_with("<!DOCTYPE html>") && report.contains("<svg"));
    for chart in ["throughput", "head-of-line", "hot-backlog-cliff", "async-io-elapsed"] {
        for extension in ["png", "svg"] {
            let file = dir.join("plots").join(format!("{chart}.{extension}"));
            assert!(file.is_file(), "{} missing", file.display());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
