//! Interference receipts end to end: a run beside processes that take the CPUs records them
//! on every cell, measures a void cell again, and says so at the top of its summary.

use std::path::PathBuf;
use std::process::{Child, Command};

/// One spinning shell per CPU, and one more: whatever else runs, they take most of the
/// machine from a run of one thread.
struct Spinners(Vec<Child>);

impl Spinners {
    fn start() -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let spin = || Command::new("sh").args(["-c", "while :; do :; done"]).spawn().unwrap();
        Self((0..=cpus).map(|_| spin()).collect())
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("keyed-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_run_beside_busy_processes_marks_and_remeasures_its_void_cells() {
    let out = scratch("interference");
    let spinners = Spinners::start();
    let output = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["run", "--quick", "--scenario", "uniform", "--strategy", "inline"])
        .args(["--messages", "200000", "--revalidate", "1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    drop(spinners);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let text = std::fs::read_to_string(out.join("results.json")).unwrap();
    let results: serde_json::Value = serde_json::from_str(&text).unwrap();
    let receipt = &results["runs"][0]["interference"];
    assert_eq!(receipt["validity"], "void", "{receipt}");
    assert_eq!(receipt["remeasured"], 1, "{receipt}");
    assert!(receipt["reasons"][0].as_str().unwrap().starts_with("other processes"), "{receipt}");
    let repetitions = results["runs"][0]["samples"]["interference"].as_array().unwrap();
    assert_eq!(repetitions.len(), 1, "one receipt per repetition");
    assert!(stderr.contains("void") && stderr.contains("measuring again (1 of 1)"), "{stderr}");
    for calibration in results["meta"]["calibrations"].as_array().unwrap() {
        assert!(calibration["interference"]["validity"].is_string(), "{calibration}");
    }
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    let machine = summary.lines().find(|line| line.starts_with("**Machine:**")).unwrap();
    assert!(machine.contains("busy") && machine.contains("1 void"), "{machine}");
    assert!(summary.contains("inline [void]"), "{summary}");
    let _ = std::fs::remove_dir_all(&out);
}
