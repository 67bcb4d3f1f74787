//! `keyed-bench ab` end to end: this binary against itself as a prebuilt base (nothing is
//! built), and the bad input it refuses before building or measuring anything.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BAD_INPUT: i32 = 2;

fn keyed_bench(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A fresh, empty folder under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("keyed-bench-ab-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// The repository this test runs in.
fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Small cells: a round takes a second or two.
const SMALL: [&str; 11] = [
    "--quick",
    "--scenario",
    "uniform",
    "--strategy",
    "inline,keyed-mailbox",
    "--messages",
    "2000",
    "--keys",
    "100",
    "--workers",
    "1",
];

#[test]
fn this_binary_against_itself_runs_interleaved_rounds_and_writes_both_sides() {
    let dir = scratch("itself");
    let out = dir.join("ab");
    let binary = env!("CARGO_BIN_EXE_keyed-bench");
    let mut args = vec!["ab", "HEAD", "--base-binary", binary, "--rounds", "5"];
    args.extend(["--out", out.to_str().unwrap()]);
    args.extend(SMALL);
    let output = keyed_bench(&dir, &args);
    let said = stderr(&output);
    assert!(output.status.success(), "{said}");
    assert!(said.contains("ab: round 1 of 5: base\n"), "{said}");
    assert!(said.contains("ab: round 5 of 5: head"), "{said}");
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(report.starts_with("base: HEAD, prebuilt binary "), "{report}");
    assert!(report.contains("uniform keyed-mailbox  throughput"), "{report}");
    let ab: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("ab.json")).unwrap()).unwrap();
    let rounds = ab["rounds"]["run"].as_u64().unwrap();
    assert!((5..=10).contains(&rounds), "{ab}");
    assert_eq!(ab["comparison"]["correction"], "holm");
    assert_eq!(ab["cells"].as_array().unwrap().len(), 2);
    for round in 1..=rounds {
        for side in ["base", "head"] {
            let folder = out.join("rounds").join(format!("{side}-{round:02}"));
            assert!(folder.join("results.json").is_file(), "{}", folder.display());
        }
    }
    // Each side's merged file holds one sample per valid round, and compare reads it.
    for side in ["base", "head"] {
        let merged: serde_json::Value =
            serde_json::from_slice(&std::fs::read(out.join(side).join("results.json")).unwrap())
                .unwrap();
        let cell = &merged["runs"][1];
        let valid = ab["cells"][1]["valid"][side].as_u64().unwrap();
        let void = ab["cells"][1]["void_rounds"][side].as_array().unwrap().len() as u64;
        assert_eq!(valid + void, rounds, "{ab}");
        let samples = cell["samples"]["throughput_per_s"].as_array().unwrap();
        assert_eq!(samples.len() as u64, valid);
    }
    let (base, head) = (out.join("base"), out.join("head"));
    let compared = keyed_bench(&dir, &["compare", base.to_str().unwrap(), head.to_str().unwrap()]);
    assert!(compared.status.success(), "{}", stderr(&compared));
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.starts_with("### keyed-bench ab: "), "{summary}");
    // A second comparison into the same folder replaces the first.
    let output = keyed_bench(&dir, &args);
    assert!(output.status.success(), "{}", stderr(&output));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every file under `dir`, for checking that nothing was written.
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path.clone());
            }
            found.push(path);
        }
    }
    found.sort();
    found
}

#[test]
fn bad_input_exits_2_naming_it_and_writes_nothing() {
    let dir = scratch("bad");
    std::fs::create_dir_all(dir.join("others")).unwrap();
    std::fs::write(dir.join("others/notes.txt"), "mine").unwrap();
    let out = dir.join("ab").display().to_string();
    let others = dir.join("others").display().to_string();
    let binary = env!("CARGO_BIN_EXE_keyed-bench");
    let cases: [(&Path, Vec<&str>, &str); 7] = [
        (
            repository(),
            vec!["ab", "no-such-commit-here", "--out", &out],
            "BASE no-such-commit-here is not a commit",
        ),
        (&dir, vec!["ab", "HEAD", "--out", &out], "not in a git repository"),
        (
            repository(),
            vec!["ab", "HEAD", "--rounds", "2", "--out", &out],
            "--rounds must be in 3..=100, got 2",
        ),
        (
            repository(),
            vec!["ab", "HEAD", "--out", &out, "--quick", "--repeat", "3"],
            "--repeat is not a run flag ab passes on",
        ),
        (repository(), vec!["ab", "HEAD", "--out", &out, "--scenario", "nope"], "`nope`"),
        (
            repository(),
            vec!["ab", "HEAD", "--base-binary", "/no/such/binary", "--out", &out],
            "--base-binary /no/such/binary",
        ),
        (
            repository(),
            vec!["ab", "HEAD", "--base-binary", binary, "--out", &others],
            "did not write",
        ),
    ];
    let before = listing(&dir);
    let mut failures = Vec::new();
    for (cwd, args, names) in &cases {
        let output = keyed_bench(cwd, args);
        let said = stderr(&output);
        if output.status.code() != Some(BAD_INPUT) || !said.contains(names) {
            failures.push(format!("{args:?}: {:?}: {said}", output.status.code()));
        }
    }
    assert_eq!(listing(&dir), before, "something was written");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One tiny cell: a round takes well under a second.
const TINY: [&str; 9] = [
    "--quick",
    "--scenario",
    "uniform",
    "--strategy",
    "inline",
    "--messages",
    "500",
    "--keys",
    "10",
];

#[test]
fn a_cell_too_few_samples_to_judge_makes_fail_on_regression_inconclusive() {
    let dir = scratch("unjudged");
    // One real run, its receipts then marked void: what the base gives in every round.
    let template = dir.join("template");
    let mut args = vec!["run", "--repeat", "1", "--no-breakdown", "--out"];
    args.push(template.to_str().unwrap());
    args.extend(TINY);
    let made = keyed_bench(&dir, &args);
    assert!(made.status.success(), "{}", stderr(&made));
    let mut results: serde_json::Value =
        serde_json::from_slice(&std::fs::read(template.join("results.json")).unwrap()).unwrap();
    for run in results["runs"].as_array_mut().unwrap() {
        assert!(run["interference"].is_object(), "a receipt to mark: {run}");
        run["interference"]["validity"] = "void".into();
    }
    let void = dir.join("void.json");
    std::fs::write(&void, serde_json::to_vec_pretty(&results).unwrap()).unwrap();
    // A base "binary" that writes that file into its round's --out folder.
    let script = dir.join("void-base.sh");
    let text = format!(
        "#!/bin/sh\nwhile [ \"$1\" != --out ]; do shift; done\nmkdir -p \"$2\"\ncp '{}' \"$2/results.json\"\n",
        void.display()
    );
    std::fs::write(&script, text).unwrap();
    let mut permissions = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
    std::fs::set_permissions(&script, permissions).unwrap();

    let out = dir.join("ab");
    let mut args = vec!["ab", "HEAD", "--base-binary", script.to_str().unwrap()];
    args.extend(["--rounds", "5", "--fail-on-regression", "10", "--out", out.to_str().unwrap()]);
    args.extend(TINY);
    let output = keyed_bench(&dir, &args);
    let said = stderr(&output);
    assert_eq!(output.status.code(), Some(3), "inconclusive, not a pass: {said}");
    assert!(said.contains("ab: round 10 of 10: head"), "extra rounds up to twice --rounds: {said}");
    assert!(
        said.contains(
            "ab: inconclusive (exit 3): --fail-on-regression cannot judge uniform inline"
        ),
        "{said}"
    );
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(report.contains("no judged cell is slower by more than 10%"), "{report}");
    assert!(
        report.contains("1 cell(s) unjudged, fewer than 3 valid samples on a side"),
        "{report}"
    );
    assert!(report.contains("\n  uniform inline: 0 base, "), "{report}");
    let ab: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("ab.json")).unwrap()).unwrap();
    let verdict = &ab["fail_on_regression"];
    assert_eq!((&verdict["failed"], &verdict["inconclusive"]), (&false.into(), &true.into()));
    assert_eq!(verdict["unjudged"][0]["valid"]["base"], 0, "{verdict}");
    let _ = std::fs::remove_dir_all(&dir);
}
