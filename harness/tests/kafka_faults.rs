//! The pipeline on a three-broker Apache Kafka cluster that loses brokers mid-cell (feature
//! `kafka`): the cluster that `scripts/kafka.sh start --brokers 3 DIR` runs in the folder
//! `KEYED_BENCH_KAFKA_CLUSTER_DIR` names (unset: each test says it was skipped and passes).
//! Topics have 3 replicas, the brokers `min.insync.replicas` 2, the producers `acks=all`.
//! The tests kill and stop the brokers through `scripts/kafka.sh signal`, one test at a
//! time, and leave every broker running. `scripts/kafka-faults.sh` starts the cluster and
//! runs them.
//!
//! - One broker killed (SIGKILL) once a set number of records is committed: the cell goes
//!   on and completes, losing nothing; the broker is started again, the partitions' replicas
//!   all back in sync, then another broker killed in a second cell, the same.
//! - The whole cluster killed (SIGKILL), or stopped (SIGSTOP: it accepts connections and
//!   never answers), in the second cell of a run: the cell fails within about
//!   `--kafka-timeout-ms`, the first cell is kept, and once the cluster is back on the same
//!   ports `--resume` completes the run.

mod kafka_common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use harness::cli::kafka::KafkaArgs;
use harness::cli::RunArgs;
use harness::pipeline::transport::kafka::admin::ClusterAdmin;
use harness::pipeline::transport::options::{CommitObserver, TopicAdmin};
use harness::results::{PipelineRun, Results};
use harness::suite::{run_suite_with, Control, Quiet};
use harness::workload::SizeArgs;
use kafka_common::{args_on, checked, from_env, resume_missing, safe, Sweep, COMMAND, TIMEOUT};
use rdkafka::consumer::Consumer;

/// One test at a time: they share the cluster and take its brokers down.
static CLUSTER: Mutex<()> = Mutex::new(());

/// The three-broker cluster of `scripts/kafka.sh` in a folder.
struct Cluster {
    dir: PathBuf,
    bootstrap: String,
}

impl Cluster {
    /// The cluster `KEYED_BENCH_KAFKA_CLUSTER_DIR` names, every broker up, or `None` after
    /// saying the test is skipped.
    fn from_env() -> Option<Self> {
        let dir = from_env(
            "KEYED_BENCH_KAFKA_CLUSTER_DIR",
            "folder of a three-broker cluster (`scripts/kafka-faults.sh` starts one)",
        )?;
        let mut cluster = Self { dir: PathBuf::from(dir), bootstrap: String::new() };
        cluster.bootstrap = cluster.start();
        cluster.wait_for_full_isr();
        cluster.wait_until_serving(TIMEOUT);
        Some(cluster)
    }

    fn script(&self, args: &[&str]) -> (bool, String) {
        let output =
            Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/kafka.sh"))
                .args(args)
                .arg(&self.dir)
                .output()
                .expect("scripts/kafka.sh runs");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), said)
    }

    /// Starts every node that is down and waits until all three answer; the bootstrap.
    fn start(&self) -> String {
        let (started, said) = self.script(&["start"]);
        assert!(started, "the cluster starts: {said}");
        let line = said.lines().find_map(|line| line.strip_prefix("bootstrap="));
        let bootstrap = line.expect("the bootstrap line").to_owned();
        assert_eq!(bootstrap.split(',').count(), 3, "three brokers: {bootstrap}");
        bootstrap
    }

    /// Sends `signal` to broker `node`, or to every broker.
    fn signal(&self, signal: &str, node: Option<i32>) {
        let node = node.map(|node| node.to_string());
        let mut args = vec!["signal", signal];
        if let Some(node) = &node {
            args.extend(["--node", node.as_str()]);
        }
        let (sent, said) = self.script(&args);
        assert!(sent, "SIG{signal}: {said}");
    }

    /// The cluster's topics (none while it does not answer).
    fn topics(&self) -> Vec<String> {
        let metadata = kafka_common::client(&self.bootstrap).fetch_metadata(None, TIMEOUT);
        metadata.map_or_else(
            |_| Vec::new(),
            |metadata| metadata.topics().iter().map(|topic| topic.name().to_owned()).collect(),
        )
    }

    /// The broker leading each partition of `topic`.
    fn leaders(&self, topic: &str) -> Vec<i32> {
        let metadata = kafka_common::client(&self.bootstrap)
            .fetch_metadata(Some(topic), TIMEOUT)
            .expect("the topic's metadata");
        metadata.topics()[0].partitions().iter().map(|partition| partition.leader()).collect()
    }

    /// Waits until the cluster serves a client within `within` again: a record produced
    /// with `acks=all` to a probe topic of 3 replicas (made once, left for the cluster's
    /// life) and a group's commits read. A cluster just started again lists its brokers,
    /// and their replicas in sync, before its group coordinators have loaded their
    /// partitions: a run started then meets requests slower than its timeout.
    fn wait_until_serving(&self, within: Duration) {
        use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
        use rdkafka::{ClientConfig, TopicPartitionList};
        const PROBE: &str = "keyed-bench-faults-probe";
        let made = self.topics().iter().any(|name| name == PROBE);
        if !made {
            let admin = ClusterAdmin::connect(&self.bootstrap, &[], TIMEOUT).expect("an admin");
            admin.create(PROBE, 1, 3).expect("the probe topic");
        }
        let started = Instant::now();
        let serves = || {
            let producer: BaseProducer = ClientConfig::new()
                .set("bootstrap.servers", &self.bootstrap)
                .set("acks", "all")
                .set("message.timeout.ms", within.as_millis().to_string())
                .create()
                .ok()?;
            producer.send(BaseRecord::to(PROBE).key("probe").payload("probe")).ok()?;
            producer.flush(within).ok()?;
            let mut partitions = TopicPartitionList::new();
            partitions.add_partition(PROBE, 0);
            let consumer = kafka_common::client(&self.bootstrap);
            consumer.committed_offsets(partitions, within).ok()
        };
        while serves().is_none() {
            assert!(started.elapsed() < Duration::from_secs(180), "the cluster serves no client");
            thread::sleep(Duration::from_millis(250));
        }
        eprintln!(
            "the cluster served a client again {:.1} s later",
            started.elapsed().as_secs_f64()
        );
    }

    /// Waits until every partition of every topic has all its replicas in sync.
    fn wait_for_full_isr(&self) {
        let started = Instant::now();
        loop {
            let metadata = kafka_common::client(&self.bootstrap).fetch_metadata(None, TIMEOUT);
            let lagging = metadata.map_or(usize::MAX, |metadata| {
                metadata
                    .topics()
                    .iter()
                    .flat_map(|topic| topic.partitions())
                    .filter(|partition| partition.isr().len() < partition.replicas().len())
                    .count()
            });
            if lagging == 0 {
                eprintln!("every replica in sync after {:.1} s", started.elapsed().as_secs_f64());
                return;
            }
            assert!(started.elapsed() < Duration::from_secs(120), "{lagging} partitions lag");
            thread::sleep(Duration::from_millis(250));
        }
    }
}

/// A fault made from inside a run: once the group has taken commits covering `after`
/// records of the `cell`-th log topic the run made (counting from 0), `strike` runs on a
/// thread of its own with that topic's name; commits taken after it returned are counted.
#[derive(Clone)]
struct Fault(Arc<Strike>);

struct Strike {
    cell: usize,
    after: u64,
    strike: Box<dyn Fn(&str) + Send + Sync>,
    state: Mutex<FaultState>,
    commits_after: AtomicU64,
}

#[derive(Default)]
struct FaultState {
    /// Log topics in the order their first commit came.
    topics: Vec<String>,
    /// The next offset committed per partition of the `cell`-th topic.
    committed: BTreeMap<u32, u64>,
    /// When the strike began, and when it returned.
    struck: Option<Instant>,
    done: Option<Instant>,
}

impl std::fmt::Debug for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fault").field("cell", &self.0.cell).field("after", &self.0.after).finish()
    }
}

impl CommitObserver for Fault {
    fn committed(&self, topic: &str, partition: u32, offset: u64) {
        let mut state = self.0.state.lock().unwrap();
        if !state.topics.iter().any(|seen| seen == topic) {
            state.topics.push(topic.to_owned());
        }
        if state.topics.get(self.0.cell).map(String::as_str) != Some(topic) {
            return;
        }
        if state.done.is_some() {
            self.0.commits_after.fetch_add(1, Ordering::Relaxed);
        }
        state.committed.insert(partition, offset);
        if state.struck.is_some() || state.committed.values().sum::<u64>() < self.0.after {
            return;
        }
        state.struck = Some(Instant::now());
        let (strike, topic) = (Arc::clone(&self.0), topic.to_owned());
        thread::spawn(move || {
            (strike.strike)(&topic);
            strike.state.lock().unwrap().done = Some(Instant::now());
        });
    }
}

impl Fault {
    fn new(cell: usize, after: u64, strike: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self(Arc::new(Strike {
            cell,
            after,
            strike: Box::new(strike),
            state: Mutex::default(),
            commits_after: AtomicU64::new(0),
        }))
    }

    /// Waits until the strike, if it began, returned; when it began and returned.
    fn wait(&self) -> Option<(Instant, Instant)> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let state = self.0.state.lock().unwrap();
            match (state.struck, state.done) {
                (None, _) => return None,
                (Some(struck), Some(done)) => return Some((struck, done)),
                (Some(_), None) => assert!(Instant::now() < deadline, "the strike hangs"),
            }
            drop(state);
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Commits the group took after the strike returned.
    fn commits_after(&self) -> u64 {
        self.0.commits_after.load(Ordering::Relaxed)
    }

    /// The observer a run's hooks hold.
    fn observer(&self) -> Arc<dyn CommitObserver> {
        Arc::new(self.clone())
    }
}

/// A cell's figures: what the fault cost.
fn figures(run: &PipelineRun) -> String {
    let failed = run.failed_commits();
    format!(
        "{} {}: {:.1} s, lost {}, redelivered {}, longest commit freeze {:.1} s, commits {} \
         (failed {}: {}), final state {}, clients saw {:?}",
        run.scenario,
        run.param,
        run.elapsed_s,
        run.lost,
        run.redelivered,
        run.longest_freeze_s,
        run.incarnations.iter().map(|report| report.commits).sum::<u64>(),
        failed.count,
        failed.first.as_deref().unwrap_or("-"),
        if run.projection.final_state_correct { "correct" } else { "WRONG" },
        run.client_events.unwrap_or_default(),
    )
}

/// pipeline-retry's `retry=retry-topic` cell, the paced producer writing 20,000 records at
/// 4,000 a second (5 s), on 3 replicas: the producer, the retry topic's producer and
/// reader, and the member all meet the fault.
fn paced(cluster: &Cluster, name: &str, retry: &str, timeout_ms: u64) -> RunArgs {
    let sizes = SizeArgs {
        pipeline_records: Some(20_000),
        pipeline_rate: Some(4_000),
        ..SizeArgs::default()
    };
    let args = RunArgs {
        retry_policy: retry.into(),
        kafka_timeout_ms: timeout_ms,
        sizes,
        ..RunArgs::defaults()
    };
    let kafka = KafkaArgs { replication_factor: Some(3), ..KafkaArgs::default() };
    args_on(&cluster.bootstrap, name, "pipeline-retry", args, kafka)
}

#[test]
fn a_broker_killed_mid_cell_costs_a_stall_and_the_cell_loses_nothing() {
    let _one = CLUSTER.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let Some(cluster) = Cluster::from_env() else { return };
    let mut killed = BTreeSet::new();
    for round in 0..2 {
        // A broker's partitions stall until the controller fences it (broker.session.
        // timeout.ms, 9 s by default, after a new controller is elected if it was the
        // active one): the requests' timeout outlasts that.
        let name = format!("kill-{round}");
        let (mut config, _sweep) = checked(paced(&cluster, &name, "retry-topic", 30_000), &name);
        let victim = Arc::new(Mutex::new(None));
        let fault = {
            let (victim, dir, bootstrap) =
                (Arc::clone(&victim), cluster.dir.clone(), cluster.bootstrap.clone());
            let spared = killed.clone();
            Fault::new(0, 5_000, move |topic| {
                let cluster = Cluster { dir: dir.clone(), bootstrap: bootstrap.clone() };
                // The leader of the log's partition 0, or of another partition where that
                // broker was killed in an earlier round.
                let leaders = cluster.leaders(topic);
                let node = leaders.iter().copied().find(|node| !spared.contains(node));
                let node = node.expect("a leader not killed before");
                cluster.signal("KILL", Some(node));
                *victim.lock().unwrap() = Some(node);
            })
        };
        config.kafka.hooks.commits = Some(fault.observer());
        let results = kafka_common::run(&mut config, None);
        let (struck, done) = fault.wait().expect("the broker was killed mid-cell");
        let node = victim.lock().unwrap().expect("a broker killed");
        let cell = &results.pipelines[0];
        eprintln!(
            "round {round}: broker {node} killed once 5,000 records were committed (the kill \
             took {} ms); {}",
            (done - struck).as_millis(),
            figures(cell)
        );
        safe(&results.pipelines);
        let after = fault.commits_after();
        assert!(after > 0, "the kill landed before the cell's last commit: {after} commits after");
        let events = cell.client_events.expect("the clients' events");
        assert!(events.leader_changes > 0, "the clients saw the leaders move: {events:?}");
        killed.insert(node);
        cluster.start();
        cluster.wait_for_full_isr();
        cluster.wait_until_serving(TIMEOUT);
    }
}

/// Brings every broker of the cluster back when dropped: SIGCONT to a stopped one, a start
/// of one that is down.
struct Restore<'a>(&'a Cluster);

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        let _ = self.0.script(&["signal", "CONT"]);
        let _ = self.0.script(&["start"]);
    }
}

/// A run of pipeline-retry's three cells whose second cell loses every broker to `signal`;
/// `back` brings them back on the same ports. The cell fails within `timeouts` request
/// timeouts of the strike, the first cell is kept, and the resumed run completes.
fn whole_cluster(signal: &'static str, timeouts: u64, back: impl Fn(&Cluster)) {
    let _one = CLUSTER.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let Some(cluster) = Cluster::from_env() else { return };
    const TIMEOUT_MS: u64 = 5_000;
    let name = format!("whole-{}", signal.to_ascii_lowercase());
    let args = paced(&cluster, &name, "all", TIMEOUT_MS);
    let (mut config, _sweep) = checked(args.clone(), &name);
    let fault = {
        let (dir, bootstrap) = (cluster.dir.clone(), cluster.bootstrap.clone());
        Fault::new(1, 5_000, move |_| {
            Cluster { dir: dir.clone(), bootstrap: bootstrap.clone() }.signal(signal, None)
        })
    };
    config.kafka.hooks.commits = Some(fault.observer());

    // Whatever fails from here, the cluster is brought back for the tests after this one
    // (dropped before the sweep, which needs it).
    let _back = Restore(&cluster);
    let outcome = run_suite_with(&config, &mut Quiet, Control::default());
    let returned = Instant::now();
    let struck = fault.wait().map(|(struck, _)| struck);
    let error = match (outcome, struck) {
        (Err(error), Some(_)) => error,
        (outcome, _) => {
            let how = outcome.map(|done| format!("{} cells ran", done.results.pipelines.len()));
            panic!("the strike (began: {}) and the run ({how:?})", struck.is_some())
        }
    };
    let struck = struck.expect("struck");
    let failed_after = returned - struck;
    eprintln!("SIG{signal}: the run returned {failed_after:?} after the strike: {error}");
    let stopped = Results::read(&config.out.join("results.json")).expect("the run saved its file");
    assert_eq!(stopped.pipelines.len(), 1, "the cell before the fault is kept");
    assert_eq!(stopped.failed.len(), 1, "{:?}", stopped.failed);
    let reason = &stopped.failed[0].reason;
    eprintln!("failed cell: {reason} after {:.1} s", stopped.failed[0].elapsed_s);
    assert!(reason.contains("the broker failed"), "{reason}");
    // The first request that finds no broker waits out the timeout; every later one of the
    // cell fails at once, and its end waits for no broker. Killed brokers refuse
    // connections at once; stopped ones are noticed only when a request times out (one
    // timeout), then the member's poll gives them the timeout again, and a write already
    // waiting on them may take a third: `timeouts` of them, and 5 s for the strike itself.
    let bound = Duration::from_millis(timeouts * TIMEOUT_MS + 5_000);
    assert!(failed_after < bound, "failed {failed_after:?} after the strike");
    let missing = &stopped.meta.incomplete.as_ref().expect("marked incomplete").missing;
    assert_eq!(missing.len(), 1, "{missing:?}");

    back(&cluster);
    cluster.wait_for_full_isr();
    cluster.wait_until_serving(Duration::from_millis(TIMEOUT_MS));
    let (resumed, control) = resume_missing(&config.out, args, COMMAND);
    let _resumed_sweep = Sweep {
        bootstrap: cluster.bootstrap.clone(),
        prefix: resumed.kafka.cluster.as_ref().unwrap().prefix.clone(),
    };
    let resumed = run_suite_with(&resumed, &mut Quiet, control).expect("the resumed run completes");
    let results = resumed.results;
    assert!(results.meta.incomplete.is_none(), "{:?}", results.meta.incomplete);
    assert!(results.failed.is_empty(), "{:?}", results.failed);
    assert_eq!(results.pipelines.len(), 3);
    safe(&results.pipelines);
    for run in &results.pipelines {
        eprintln!("resumed: {}", figures(run));
    }
    std::fs::remove_dir_all(&config.out).ok();
}

#[test]
fn the_whole_cluster_killed_mid_cell_fails_the_cell_in_time_and_the_run_resumes() {
    whole_cluster("KILL", 2, |cluster| {
        cluster.start();
    });
}

#[test]
fn the_whole_cluster_stopped_mid_cell_fails_the_cell_in_time_and_the_run_resumes() {
    whole_cluster("STOP", 4, |cluster| {
        cluster.signal("CONT", None);
        cluster.start();
    });
}
