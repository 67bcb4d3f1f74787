//! The commands that read results on an incomplete file (a run stopped before its last
//! cell): `gate` refuses it unless `--allow-incomplete`, and then says what is missing;
//! `compare` lists the cells either side misses; `plot` draws it and its report says first
//! that the run is incomplete.
//!
//! The incomplete file is the committed reference run with some cells taken out and listed
//! in `meta.incomplete`, as a stopped run leaves them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A folder of this test's own, empty.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("keyed-bench-incomplete-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn keyed_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keyed-bench")).args(args).output().expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn reference_json() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/2026-11-30-vm/results.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The reference run stopped by SIGINT before `uniform keyed-mailbox` and all of `zipf`:
/// those cells are listed as missing. Written to `dir/results.json`.
fn incomplete(dir: &Path) -> PathBuf {
    let mut json = reference_json();
    let runs = json["runs"].as_array_mut().unwrap();
    let planned = runs.len();
    let gone = |run: &serde_json::Value| {
        (run["scenario"] == "uniform" && run["strategy"] == "keyed-mailbox")
            || run["scenario"] == "zipf"
    };
    let missing: Vec<serde_json::Value> = runs
        .iter()
        .filter(|run| gone(run))
        .map(|run| {
            serde_json::json!({
                "scenario": run["scenario"],
                "param": run["param"],
                "strategy": run["strategy"],
            })
        })
        .collect();
    runs.retain(|run| !gone(run));
    json["meta"]["incomplete"] = serde_json::json!({
        "cells_planned": planned,
        "cells_done": planned - missing.len(),
        "missing": missing,
        "stopped_by": "SIGINT",
    });
    let path = dir.join("results.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
    path
}

fn rules_path() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("gates.toml").display().to_string()
}

#[test]
fn gate_refuses_an_incomplete_file_unless_allowed_and_then_says_what_is_missing() {
    let dir = scratch("gate");
    let results = incomplete(&dir);
    let results = results.to_str().unwrap();
    let gate = ["gate", "--results", results, "--rules", &rules_path(), "--confirm", "0"];
    let refused = keyed_bench(&gate);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused.stderr));
    let why = text(&refused.stderr);
    assert!(why.contains("is incomplete: "), "{why}");
    assert!(why.contains(" cells are missing (stopped by SIGINT)"), "{why}");
    assert!(why.contains("--allow-incomplete"), "{why}");
    assert!(refused.stdout.is_empty());

    let allowed = keyed_bench(&[&gate[..], &["--allow-incomplete"]].concat());
    let report = text(&allowed.stdout);
    assert_eq!(allowed.status.code(), Some(0), "{report}{}", text(&allowed.stderr));
    let first = report.lines().next().unwrap_or_default();
    assert!(first.starts_with("note: incomplete results, "), "{report}");
    assert!(first.contains(" missing (stopped by SIGINT)"), "{first}");
    assert!(report.contains(" passed, 0 failed"), "{report}");
    assert!(!report.contains(" zipf "), "no zipf cell is judged: {report}");

    let written = dir.join("baseline.json");
    let update =
        ["--allow-incomplete", "--update-baseline", "--baseline", written.to_str().unwrap()];
    let baseline = keyed_bench(&[&gate[..], &update].concat());
    assert_eq!(baseline.status.code(), Some(2), "a baseline needs a complete run");
    assert!(!written.exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn compare_lists_the_cells_an_incomplete_side_misses_in_every_format() {
    let dir = scratch("compare");
    let b = incomplete(&dir);
    let a = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/2026-11-30-vm/results.json");
    let (a, b) = (a.to_str().unwrap(), b.to_str().unwrap());
    let run = |format: &str| {
        let output = keyed_bench(&["compare", a, b, "--format", format]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        text(&output.stdout)
    };
    let plain = run("text");
    assert!(plain.contains("note: B's run is incomplete: "), "{plain}");
    let listed = plain.split("missing from B (its run is incomplete; not compared):\n").nth(1);
    let listed = listed.unwrap_or_else(|| panic!("no list of missing cells:\n{plain}"));
    assert!(listed.lines().any(|line| line == "  uniform keyed-mailbox"), "{plain}");
    assert!(listed.lines().any(|line| line.starts_with("  zipf ")), "{plain}");
    assert!(!plain.contains("only in A"), "a missing cell is not `only in A`:\n{plain}");
    let markdown = run("markdown");
    assert!(markdown.contains("**Missing from B** (its run is incomplete; not compared): "));
    assert!(markdown.contains("`uniform keyed-mailbox`"), "{markdown}");
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let missing = json["missing_in_b"].as_array().expect("missing_in_b");
    assert!(missing
        .iter()
        .any(|cell| cell["scenario"] == "uniform" && cell["strategy"] == "keyed-mailbox"));
    assert_eq!(json["missing_in_a"].as_array().map(Vec::len), Some(0));
    assert!(json["only_in_a"].as_array().is_some_and(Vec::is_empty));
    assert_eq!(json["b"]["incomplete"]["stopped_by"], "SIGINT");
    assert!(json["a"]["incomplete"].is_null());
    // Either side: the other way round, A's missing cells are listed.
    let reversed = keyed_bench(&["compare", b, a]);
    let reversed = text(&reversed.stdout);
    assert!(reversed.contains("missing from A (its run is incomplete; not compared):"));
    assert!(!reversed.contains("only in B"), "{reversed}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn plot_of_an_incomplete_file_draws_and_says_so_at_the_top_of_its_report() {
    let dir = scratch("plot");
    let results = incomplete(&dir);
    let output = keyed_bench(&["plot", "--input", results.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html written");
    let body = &html[html.find("<body>").expect("a body")..];
    let banner = body.find("<p class=\"incomplete\"><strong>Incomplete run:</strong> ");
    let banner = banner.unwrap_or_else(|| panic!("no incomplete line:\n{body}"));
    let first_section = body.find("<h2").expect("a section");
    assert!(banner < first_section, "the line comes before every section");
    assert_eq!(body.matches("Incomplete run:").count(), 1, "one line");
    assert!(body[banner..].contains(" missing (stopped by SIGINT)"));
    assert!(dir.join("plots").read_dir().unwrap().count() > 0, "charts drawn");
    std::fs::remove_dir_all(&dir).ok();
}
