//! Confluent Parallel Consumer 0.5.3.3 itself as an external design
//! (`peers/parallel-consumer/`, a driver of docs/external.md's protocol on a Kafka
//! `MockConsumer`), under the suite's `parallel-consumer` workload and checker: its KEY
//! mode keeps every key in order, and its UNORDERED mode is caught reordering keys, as
//! the `thread-pool` control is.
//!
//! Runs where `KEYED_BENCH_PC_CLASSPATH` names the driver's classpath (`.ci/run` builds it
//! with Maven: `peers/parallel-consumer/target/classes:peers/parallel-consumer/target/lib/*`);
//! unset, it says it is skipped and passes.

use std::process::Command;

use harness::results::Results;

#[test]
fn parallel_consumers_key_mode_keeps_order_and_its_unordered_mode_is_caught() {
    let Ok(classpath) = std::env::var("KEYED_BENCH_PC_CLASSPATH") else {
        eprintln!(
            "skipped: KEYED_BENCH_PC_CLASSPATH is not set (see peers/parallel-consumer/README.md)"
        );
        return;
    };
    let out = std::env::temp_dir().join(format!("keyed-bench-pc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let driver = |name: &str, ordering: &str| {
        format!("{name}=java -Xms256m -Xmx256m -cp {classpath} PcDriver --ordering {ordering}")
    };
    let (key, unordered) = (driver("pc-key", "KEY"), driver("pc-unordered", "UNORDERED"));
    let run = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "--quick", "--scenario", "parallel-consumer", "--strategy"])
        .args(["pc-key,pc-unordered", "--external", &key, "--external", &unordered])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("keyed-bench runs");
    let said = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{said}");
    let results = Results::read(&out.join("results.json")).expect("results.json");
    assert!(results.failed.is_empty(), "{:?}", results.failed);
    let cells =
        |strategy: &'static str| results.runs.iter().filter(move |run| run.strategy == strategy);
    assert!(cells("pc-key").count() >= 2, "a cell per key count");
    for cell in cells("pc-key") {
        assert!(cell.correctness.is_clean(), "KEY mode, {}: {:?}", cell.param, cell.correctness);
        assert!(cell.driver_gc.is_some(), "the driver reports its collections");
    }
    let caught: u64 = cells("pc-unordered")
        .map(|cell| cell.correctness.order_violations + cell.correctness.overlaps)
        .sum();
    assert!(caught > 0, "UNORDERED mode runs a key's messages out of order or at once");
    let record = results.meta.designs.iter().find(|design| design.id == "pc-key");
    let record = record.and_then(|design| design.external.as_ref()).expect("recorded");
    assert_eq!(record.version, "0.5.3.3");
    let _ = std::fs::remove_dir_all(&out);
}
