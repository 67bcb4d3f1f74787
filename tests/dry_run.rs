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
