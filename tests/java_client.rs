//! Apache Kafka's Java client (kafka-clients, pinned by peers/kafka/pom.xml) against the
//! brokers the suite runs on: `scripts/kafka.sh client-check` produces, consumes in a group,
//! commits and resumes from the commits (peers/kafka/ClientCheck.java). Against Apache
//! Kafka (`KEYED_BENCH_KAFKA_BOOTSTRAP`) every check holds on both group protocols; against
//! `keyed-bench broker` (librdkafka's mock) the Java client never gets past its first
//! request, and the test pins that, as docs/transport.md explains. Without Java and Maven,
//! or without the broker, each test prints that it was skipped and why.

use std::path::Path;
use std::process::{Command, Output};

/// Whether `java` and `mvn` run here; if not, says the test is skipped.
fn jvm() -> bool {
    let runs = |tool: &str| Command::new(tool).arg("-version").output().is_ok();
    let found = runs("java") && runs("mvn");
    if !found {
        eprintln!("skipped: Java and Maven are not installed (apt-get install -y openjdk-17-jre-headless maven)");
    }
    found
}

/// `scripts/kafka.sh client-check` against `bootstrap`.
fn client_check(bootstrap: &str, args: &[&str]) -> Output {
    Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/kafka.sh"))
        .arg("client-check")
        .args(args)
        .arg(bootstrap)
        .output()
        .expect("scripts/kafka.sh runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn the_java_client_produces_consumes_in_a_group_and_commits_on_apache_kafka() {
    let bootstrap = std::env::var("KEYED_BENCH_KAFKA_BOOTSTRAP").unwrap_or_default();
    if bootstrap.trim().is_empty() {
        eprintln!("skipped: KEYED_BENCH_KAFKA_BOOTSTRAP names no Apache Kafka broker (`scripts/kafka.sh start DIR` starts one)");
        return;
    }
    if !jvm() {
        return;
    }
    for protocol in ["consumer", "classic"] {
        let output = client_check(&bootstrap, &["--group-protocol", protocol]);
        let said = text(&output);
        eprintln!("{protocol}:\n{said}");
        assert_eq!(output.status.code(), Some(0), "{protocol}: {said}");
        assert!(said.contains(&format!("({protocol}), each key in order")), "{said}");
        assert!(said.contains("consumed exactly the 50 records produced since"), "{said}");
        assert!(said.contains("deleted the topic and the group"), "{said}");
    }
}

#[cfg(feature = "kafka")]
mod mock {
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};

    use super::{client_check, jvm, text};

    /// The broker's process, killed when dropped (after a failed assertion too).
    struct Broker(Child);

    impl Drop for Broker {
        fn drop(&mut self) {
            self.0.kill().ok();
            self.0.wait().ok();
        }
    }

    /// librdkafka's mock serves ApiVersions up to version 2, and answers the Java client's
    /// version 4 with UNSUPPORTED_VERSION in the flexible encoding, where a broker answers
    /// it in version 0's: the Java client misreads the answer (as a throttle of 1,179,648
    /// ms) and its admin times out waiting for a broker. If this test fails, the mock has
    /// learned the handshake: turn it into the Apache Kafka test's checks.
    #[test]
    fn the_java_client_fails_the_handshake_of_keyed_bench_broker() {
        if !jvm() {
            return;
        }
        let mut broker = Broker(
            Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
                .args(["broker", "--topic", "java-client:3"])
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("the broker starts"),
        );
        let mut line = String::new();
        BufReader::new(broker.0.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let bootstrap = line.trim().strip_prefix("bootstrap=").expect("the bootstrap line");
        let output = client_check(bootstrap, &["--topic", "java-client"]);
        drop(broker);
        let said = text(&output);
        eprintln!("{said}");
        assert_ne!(output.status.code(), Some(0), "{said}");
        assert!(said.contains("is throttled for 1179648 ms"), "{said}");
        // The admin's own timeout or the check's wait on it, whichever ends first.
        let timed_out =
            ["Timed out waiting for a node assignment", "java.util.concurrent.TimeoutException"];
        assert!(timed_out.iter().any(|words| said.contains(words)), "{said}");
    }
}
