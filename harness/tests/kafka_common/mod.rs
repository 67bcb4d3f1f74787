//! What the Kafka transport's tests share: a listener that ignores the group, a member held
//! until it has partitions, a stopped run resumed (`kafka.rs` and `kafka_cluster.rs` on the
//! mock); and for Apache Kafka (`apache_kafka.rs`, one broker; `kafka_faults.rs`, three) the
//! broker's address from the environment, listings and sweeps of a test's prefix, and a
//! quick run checked as the binary checks it.

// Each test file uses a part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::cli::kafka::{check_cluster, KafkaArgs};
use harness::cli::resume::{resume, Resume};
use harness::cli::RunArgs;
use harness::config::RunConfig;
use harness::pipeline::transport::kafka::admin::ClusterAdmin;
use harness::pipeline::transport::kafka::KafkaMember;
use harness::pipeline::transport::options::TopicAdmin;
use harness::pipeline::{Member, RebalanceListener, TransportKind};
use harness::results::{PipelineRun, Results};
use harness::suite::{run_suite_with, Control, Quiet};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaResult;
use rdkafka::ClientConfig;

/// How long a request to the broker may take, in the tests' runs and their own clients.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The value of `variable`, or `None` after saying the test is skipped and why (an empty
/// value is none).
pub fn from_env(variable: &str, what: &str) -> Option<String> {
    match std::env::var(variable) {
        Ok(value) if !value.trim().is_empty() => Some(value),
        _ => {
            eprintln!("skipped: {variable} names no {what}");
            None
        }
    }
}

/// The broker's address (`KEYED_BENCH_KAFKA_BOOTSTRAP`), or `None` with the reason the test
/// is skipped.
pub fn broker() -> Option<String> {
    from_env(
        "KEYED_BENCH_KAFKA_BOOTSTRAP",
        "Apache Kafka broker (`scripts/kafka.sh start DIR` starts one and prints its address)",
    )
}

/// A client of the broker that only reads metadata and group lists.
pub fn client(bootstrap: &str) -> BaseConsumer {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "keyed-bench-apache-kafka-test")
        .create()
        .expect("a client")
}

/// The topics and the groups on the broker whose names begin with `prefix-`.
pub fn under(bootstrap: &str, prefix: &str) -> (Vec<String>, Vec<String>) {
    listed(bootstrap, prefix).expect("the broker lists its topics and groups")
}

fn listed(bootstrap: &str, prefix: &str) -> KafkaResult<(Vec<String>, Vec<String>)> {
    let client = client(bootstrap);
    let ours = |name: &str| name.starts_with(&format!("{prefix}-"));
    let metadata = client.fetch_metadata(None, TIMEOUT)?;
    let topics = metadata.topics().iter().map(|t| t.name().to_owned()).filter(|n| ours(n));
    let groups = client.fetch_group_list(None, TIMEOUT)?;
    let groups = groups.groups().iter().map(|g| g.name().to_owned()).filter(|n| ours(n));
    Ok((topics.collect(), groups.collect()))
}

/// Deletes every topic and group under a test's prefix when dropped, after a panic too; a
/// broker that does not answer (a fault test's cluster still down) is left as it is.
pub struct Sweep {
    pub bootstrap: String,
    pub prefix: String,
}

impl Drop for Sweep {
    fn drop(&mut self) {
        let Ok((topics, groups)) = listed(&self.bootstrap, &self.prefix) else {
            return;
        };
        if topics.is_empty() && groups.is_empty() {
            return;
        }
        let Ok(admin) = ClusterAdmin::connect(&self.bootstrap, &[], TIMEOUT) else {
            return;
        };
        let names: Vec<&str> = topics.iter().map(String::as_str).collect();
        if !names.is_empty() {
            let _ = admin.delete_topics(&names);
        }
        for group in &groups {
            let _ = admin.delete_group(group);
        }
    }
}

/// A results folder of the test's own, empty.
pub fn out(name: &str) -> PathBuf {
    let out = std::env::temp_dir().join(format!("keyed-bench-kafka-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&out).ok();
    out
}

/// A quick run of `scenario` for keyed-mailbox on the broker (replication factor 1 unless
/// `kafka` gives one), checked as the binary checks it, under a prefix of the test's own
/// (`name`), with the sweep of that prefix.
pub fn on_broker(
    bootstrap: &str,
    name: &str,
    scenario: &str,
    args: RunArgs,
    kafka: KafkaArgs,
) -> (RunConfig, Sweep) {
    checked(args_on(bootstrap, name, scenario, args, kafka), name)
}

/// The arguments of a quick run of `scenario` for keyed-mailbox on the broker at
/// `bootstrap` (replication factor 1 unless `kafka` gives one), into the test's folder.
pub fn args_on(
    bootstrap: &str,
    name: &str,
    scenario: &str,
    args: RunArgs,
    kafka: KafkaArgs,
) -> RunArgs {
    let kafka = KafkaArgs {
        bootstrap_servers: Some(bootstrap.to_owned()),
        replication_factor: kafka.replication_factor.or(Some(1)),
        ..kafka
    };
    RunArgs {
        scenario: scenario.into(),
        strategy: "keyed-mailbox".into(),
        quick: true,
        transport: TransportKind::Kafka,
        out: out(name),
        kafka,
        ..args
    }
}

/// The run of `args`, checked as the binary checks it, under a prefix of the test's own
/// (`name`), with the sweep of that prefix.
pub fn checked(args: RunArgs, name: &str) -> (RunConfig, Sweep) {
    let bootstrap = args.kafka.bootstrap_servers.clone().expect("a cluster's address");
    let mut config = RunConfig::try_from((args, COMMAND.to_owned())).expect("valid settings");
    let cluster = config.kafka.cluster.as_mut().expect("a cluster");
    cluster.prefix = format!("{}-{name}", cluster.prefix);
    let sweep = Sweep { bootstrap, prefix: cluster.prefix.clone() };
    let said = check_cluster(&mut config).expect("the broker answers and makes a topic");
    assert!(said[0].contains("answered"), "{said:?}");
    (config, sweep)
}

/// The command line the tests' runs record.
pub const COMMAND: &str = "keyed-bench run --transport kafka";

/// Runs `config`, with `admin` in the admin client's place if given; its results.
pub fn run(config: &mut RunConfig, admin: Option<Arc<dyn TopicAdmin>>) -> Results {
    config.kafka.hooks.admin = admin;
    let results = run_suite_with(config, &mut Quiet, Control::default()).expect("the run").results;
    std::fs::remove_dir_all(&config.out).ok();
    results
}

/// Nothing lost and the version-aware state right in every cell under a safe policy.
pub fn safe(runs: &[PipelineRun]) {
    assert!(!runs.is_empty());
    for run in runs.iter().filter(|run| run.policy.is_safe()) {
        let cell = format!("{} {} {}", run.scenario, run.param, run.strategy);
        assert_eq!(run.lost, 0, "{cell}: a safe policy loses nothing");
        assert!(run.projection.final_state_correct, "{cell}: the final state");
    }
}

/// A listener that does nothing.
pub struct Ignore;

impl RebalanceListener for Ignore {
    fn assigned(&mut self, _: &[u32]) {}
    fn revoked(&mut self, _: &[u32]) {}
}

/// Polls `member` until it holds a partition (30 s at most).
pub fn hold(member: &KafkaMember) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while member.assignment().is_empty() {
        assert!(Instant::now() < deadline, "no assignment");
        member.poll(10, &mut Ignore).expect("a poll");
    }
}

/// The run of `args` stopped in `out`, resumed (`keyed-bench run --resume OUT`): the
/// configuration and control of the cells it left missing.
pub fn resume_missing(out: &Path, args: RunArgs, command: &str) -> (RunConfig, Control<'static>) {
    match resume(out, RunArgs { resume: Some(out.to_path_buf()), ..args }, command.to_owned()) {
        Ok(Resume::Missing { config, earlier }) => {
            (*config, Control { stop: None, earlier: Some(*earlier) })
        }
        Ok(_) => panic!("nothing left to resume"),
        Err(error) => panic!("cannot resume: {error}"),
    }
}
