//! Confluent Parallel Consumer 0.5.3.3 itself as an external design
//! (`peers/parallel-consumer/`, a driver of docs/external.md's protocol on a Kafka
//! `MockConsumer`), under the suite's `parallel-consumer` workload and checker: its KEY
//! mode keeps every key in order, and its UNORDERED mode is caught reordering keys, as
//! the `thread-pool` control is.
//!
//! Then its consumer driver (`PcConsumer`, on a real `KafkaConsumer` with PC's own commits)
//! in pipeline-crash on Apache Kafka: KEY mode reorders no key through the crash unless it
//! lost records (which PC 0.5.3.3 sometimes does), UNORDERED is caught reordering keys, and
//! a consumer driver that writes what cannot be true fails its own cell with its words.
//!
//! Runs where `KEYED_BENCH_PC_CLASSPATH` names the drivers' classpath (`.ci/run` builds it
//! with Maven: `peers/parallel-consumer/target/classes:peers/parallel-consumer/target/lib/*`),
//! the consumer test where `KEYED_BENCH_KAFKA_BOOTSTRAP` also names a broker (such as
//! `scripts/kafka.sh start DIR`'s); unset, each says it is skipped and passes.

use std::process::Command;

use harness::results::{PipelineRun, Results};

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

/// A consumer driver that says its hello, reads its cell and then applies a record it
/// never started: what cannot be true.
const LIAR: &str = r#"read header
printf 'keyed-bench-external 1\nname a consumer that applies what it never started\nversion 1\nfamily mailboxes\nordered true\nthreads shared-pool\narrivals\nconsumes kafka contiguous\nwait none\nsource tests/parallel_consumer.rs\nready\n'
read line || exit 0
while [ "$line" != go ]; do read line || exit 1; done
echo 'the liar applied 0/0 without starting it' >&2
echo 'a 0 0 1 1'
sleep 30
"#;

#[test]
fn parallel_consumer_on_kafka_through_a_crash_and_a_lying_consumer_fails_its_cell() {
    let (Ok(classpath), Ok(bootstrap)) =
        (std::env::var("KEYED_BENCH_PC_CLASSPATH"), std::env::var("KEYED_BENCH_KAFKA_BOOTSTRAP"))
    else {
        eprintln!(
            "skipped: KEYED_BENCH_PC_CLASSPATH and KEYED_BENCH_KAFKA_BOOTSTRAP are not both set \
             (see peers/parallel-consumer/README.md and scripts/kafka.sh)"
        );
        return;
    };
    let out = std::env::temp_dir().join(format!("keyed-bench-pc-kafka-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let driver = |name: &str, ordering: &str| {
        format!("{name}=java -Xms256m -Xmx256m -cp {classpath} PcConsumer --ordering {ordering}")
    };
    let (key, unordered) = (driver("kafka-key", "KEY"), driver("kafka-unordered", "UNORDERED"));
    let script = out.with_extension("liar.sh");
    std::fs::write(&script, LIAR).expect("the liar's script");
    let liar = format!("liar=sh {}", script.display());
    let run = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["run", "--quick", "--transport", "kafka", "--bootstrap-servers", &bootstrap])
        .args(["--replication-factor", "1", "--group-protocol", "classic"])
        .args(["--scenario", "pipeline-crash", "--commit-policy", "contiguous,contiguous+metadata"])
        .args(["--strategy", "keyed-mailbox,kafka-key,kafka-unordered,liar"])
        .args(["--external", &key, "--external", &unordered, "--external", &liar])
        .arg("--out")
        .arg(&out)
        .output()
        .expect("keyed-bench runs");
    let said = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "the liar's cell failed, the others ran: {said}");
    let results = Results::read(&out.join("results.json")).expect("results.json");
    // Every cell at policy=contiguous+metadata (a consumer driver's is there alone).
    let cell = |strategy: &str| {
        let at = |run: &&PipelineRun| run.param == "policy=contiguous+metadata";
        let found = results.pipelines.iter().filter(at).find(|run| run.strategy == strategy);
        found.unwrap_or_else(|| panic!("{strategy}'s crash cell: {said}"))
    };
    let ours = cell("keyed-mailbox");
    assert_eq!((ours.lost, ours.projection.keys_reordered), (0, 0), "{:?}", ours.projection);
    assert!(ours.projection.final_state_correct, "{:?}", ours.projection);
    let pc = cell("kafka-key");
    assert!(pc.redelivered > 0, "the crash redelivered nothing");
    // PC 0.5.3.3 sometimes commits, in its offset metadata, records it never ran, and the
    // restarted PC skips them (docs/design.md, section 5.1): lost, with their keys' later
    // versions stashed behind the gap. Without a loss, KEY mode reorders no key.
    if pc.lost == 0 {
        assert_eq!(pc.projection.keys_reordered, 0, "{:?}", pc.projection);
        assert!(pc.projection.final_state_correct, "{:?}", pc.projection);
    } else {
        assert!(!pc.projection.final_state_correct, "a loss leaves the state wrong");
        eprintln!("note: PC KEY lost {} records through the crash", pc.lost);
    }
    assert_eq!(pc.incarnations.len(), 2, "killed, then restarted");
    assert!(pc.transport_calls.is_none(), "its calls into the broker are its own");
    assert!(!pc.incarnations[1].lag_timeline.is_empty(), "its commits were read");
    let unordered = cell("kafka-unordered");
    assert!(
        unordered.projection.keys_reordered > 0,
        "UNORDERED runs a key's records at once, and a slow one is overtaken: {:?}",
        unordered.projection
    );
    let failed = results.failed.iter().find(|failed| failed.strategy == "liar");
    let failed = failed.unwrap_or_else(|| panic!("the liar's cell failed: {:?}", results.failed));
    assert!(failed.reason.contains("which it had not started"), "{}", failed.reason);
    assert!(failed.reason.contains("the liar applied 0/0"), "its last words: {}", failed.reason);
    let _ = std::fs::remove_file(&script);
    // A consumer driver's cell is in the policy its hello names, and nowhere else (the
    // names differ from the first test's: one process knows one descriptor per name).
    let skipped = results.skipped.iter().filter(|skipped| skipped.strategy == "kafka-key").count();
    assert_eq!(skipped, 1, "kafka-key has no cell at policy=contiguous: {:?}", results.skipped);
    let _ = std::fs::remove_dir_all(&out);
}
