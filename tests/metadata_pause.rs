//! Under `contiguous+metadata`, a partition whose commit metadata is near its limit pauses
//! until the gap closes. A consumer that restarts (pipeline-crash) or takes partitions over
//! (pipeline-rebalance) from such a commit must still poll the record at the gap: the pause
//! costs time and duplicates, never progress or a record. Every strategy, at metadata limits
//! of 3, 16 and 64 bytes (quick sizes) and 4,096 (a log whose slow records hold gaps open
//! long enough to fill it), must finish with the pause seen, nothing lost and the final
//! state correct.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Far more than any of these runs takes (seconds each); one that hangs is killed and
/// fails instead of blocking the test run.
const DEADLINE: Duration = Duration::from_secs(600);

/// Of the 16 cells of a run, how many at least must pause for their metadata for the run to
/// test the pause at the small limits. Whether a cell's gaps stay open long enough to fill
/// the limit depends on how fast the records above them complete, and so on the machine;
/// at 3, 16 and 64 bytes most cells fill it on any machine.
const MOST: usize = 8;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("keyed-bench-pause-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Runs pipeline-crash and pipeline-rebalance under `contiguous+metadata` with `flags`,
/// killing the run past [`DEADLINE`]; returns its `pipelines[]`.
fn run_pipelines(name: &str, flags: &[&str]) -> Vec<serde_json::Value> {
    let out = scratch(name);
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["run", "--scenario", "pipeline-crash,pipeline-rebalance"])
        .args(["--commit-policy", "contiguous+metadata", "--strategy", "all"])
        .args(flags)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let began = Instant::now();
    while child.try_wait().expect("the run can be waited for").is_none() {
        if began.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("{name}: no end in {DEADLINE:?}: a consumer waits for ever");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().expect("the run's output");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{name}: {stderr}");
    let text = std::fs::read_to_string(out.join("results.json")).expect("results");
    let results: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    std::fs::remove_dir_all(&out).unwrap();
    results["pipelines"].as_array().expect("pipelines[]").clone()
}

/// Every cell lost nothing and built the right final state; returns the cells in which
/// some partition paused for its metadata.
fn check(name: &str, cells: &[serde_json::Value]) -> Vec<String> {
    assert_eq!(cells.len(), 18, "{name}: 9 strategies x 2 scenarios (inline skips)");
    let mut paused_cells = Vec::new();
    for cell in cells {
        let what = format!(
            "{} {}",
            cell["scenario"].as_str().unwrap_or("?"),
            cell["strategy"].as_str().unwrap_or("?")
        );
        assert_eq!(cell["lost"], 0, "{name}: {what}");
        assert_eq!(cell["projection"]["final_state_correct"], true, "{name}: {what}");
        let paused: u64 = cell["incarnations"]
            .as_array()
            .expect("incarnations")
            .iter()
            .map(|incarnation| incarnation["paused_ticks"].as_u64().expect("paused_ticks"))
            .sum();
        if paused > 0 {
            paused_cells.push(what);
        }
    }
    paused_cells
}

#[test]
fn small_metadata_limits_pause_and_finish_for_every_strategy() {
    for limit in ["3", "16", "64"] {
        let name = format!("limit-{limit}");
        let paused = check(&name, &run_pipelines(&name, &["--quick", "--metadata-limit", limit]));
        assert!(paused.len() >= MOST, "{name}: the metadata filled in only {paused:?}");
    }
}

#[test]
fn the_default_metadata_limit_fills_pauses_and_finishes_for_every_strategy() {
    // One partition, a key per record and 3% of records waiting 200 ms: while a slow record
    // holds the gap, tens of thousands complete above it.
    let flags = [
        "--metadata-limit",
        "4096",
        "--pipeline-records",
        "40000",
        "--pipeline-keys",
        "40000",
        "--crash-after",
        "20000",
        "--partitions",
        "1",
        "--pipeline-slow-pct",
        "3",
        "--pipeline-slow-ms",
        "200",
        "--window",
        "100000",
        "--repeat",
        "1",
    ];
    let paused = check("limit-4096", &run_pipelines("limit-4096", &flags));
    // 4,096 bytes fill only while slow records hold gaps open long enough, which a machine
    // busy with other work (other tests) may not give every cell: some cells must pause.
    assert!(paused.len() >= 2, "limit-4096: the metadata filled in only {paused:?}");
}
