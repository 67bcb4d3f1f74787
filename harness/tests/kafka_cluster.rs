//! The Kafka transport on a cluster given by its address (`--bootstrap-servers`, feature
//! `kafka`): what is refused before a run writes anything (no broker, a broker that cannot
//! make topics, settings this build lacks or librdkafka rejects), and a run on a cluster:
//! its topics and groups under the run's prefix, made and deleted, or kept. librdkafka's
//! mock cluster stands in for the cluster; it has no CreateTopics or DeleteTopics, so the
//! run's admin is replaced by one that makes topics through the mock's own API and records
//! deletions. The real admin client's success is untested here.

mod kafka_common;

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness::cli::kafka::{check_cluster, leftovers, KafkaArgs};
use harness::cli::RunArgs;
use harness::config::RunConfig;
use harness::pipeline::transport::kafka::Kafka;
use harness::pipeline::transport::options::TopicAdmin;
use harness::pipeline::{
    Backend, GroupProtocol, Member, MemberId, Topic, Transport, TransportError, TransportKind,
};
use harness::suite::{run_suite_with, Control, Quiet};
use kafka_common::hold;
use rdkafka::bindings as rd;
use rdkafka::producer::{BaseProducer, Producer};
use rdkafka::ClientConfig;

/// librdkafka's mock cluster, run by a producer's client, standing in for a cluster.
struct Cluster {
    producer: BaseProducer,
    bootstrap: String,
}

impl Cluster {
    fn start() -> Self {
        let producer: BaseProducer = ClientConfig::new()
            .set("test.mock.num.brokers", "3")
            .create()
            .expect("a mock cluster starts");
        let bootstrap = producer.client().mock_cluster().expect("a mock").bootstrap_servers();
        let cluster = Self { producer, bootstrap };
        // As each cell's own mock has them: a member hears of its assignment within 100 ms.
        // SAFETY: the mock is live.
        unsafe {
            let mock = cluster.mock() as *mut rd::rd_kafka_mock_cluster_t;
            rd::rd_kafka_mock_set_group_consumer_heartbeat_interval_ms(mock, 100);
            rd::rd_kafka_mock_set_group_consumer_session_timeout_ms(mock, 3_000);
            rd::rd_kafka_mock_group_initial_rebalance_delay_ms(mock, 100);
        }
        cluster
    }

    fn mock(&self) -> usize {
        // SAFETY: the producer's client is live and runs a mock cluster.
        unsafe { rd::rd_kafka_handle_mock_cluster(self.producer.client().native_ptr()) as usize }
    }

    /// Counts the requests of `api_key` the brokers got since the last count.
    fn requests(&self, api_key: i16) -> usize {
        let mock = self.mock() as *mut rd::rd_kafka_mock_cluster_t;
        // SAFETY: the mock is live; the array is read, then destroyed once, and the
        // tracked requests cleared.
        unsafe {
            let mut count = 0;
            let requests = rd::rd_kafka_mock_get_requests(mock, &mut count);
            let of_key = (0..count)
                .filter(|&at| rd::rd_kafka_mock_request_api_key(*requests.add(at)) == api_key)
                .count();
            rd::rd_kafka_mock_request_destroy_array(requests, count);
            rd::rd_kafka_mock_clear_requests(mock);
            of_key
        }
    }

    fn track_requests(&self) {
        // SAFETY: the mock is live.
        unsafe { rd::rd_kafka_mock_start_request_tracking(self.mock() as *mut _) }
    }
}

/// An admin of the mock: topics made through its own API, deletions recorded (the mock
/// cannot delete), optionally refused.
#[derive(Debug, Default)]
struct MockAdmin {
    mock: usize,
    refuse_deletions: bool,
    created: Mutex<Vec<(String, u32, u16)>>,
    deleted_topics: Mutex<Vec<String>>,
    deleted_groups: Mutex<Vec<String>>,
}

impl TopicAdmin for MockAdmin {
    fn create(&self, name: &str, partitions: u32, replicas: u16) -> Result<(), TransportError> {
        let topic = CString::new(name).expect("a topic name");
        // SAFETY: the mock outlives every run of the test; the call copies the name.
        let code = unsafe {
            rd::rd_kafka_mock_topic_create(
                self.mock as *mut _,
                topic.as_ptr(),
                partitions as i32,
                i32::from(replicas),
            )
        };
        if code != rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR {
            return Err(TransportError::Broker(format!("cannot create topic {name}: {code:?}")));
        }
        self.created.lock().unwrap().push((name.to_owned(), partitions, replicas));
        Ok(())
    }

    fn grow(&self, name: &str, _: u32) -> Result<(), TransportError> {
        Err(TransportError::Broker(format!(
            "cannot grow topic {name}: the mock has no CreatePartitions"
        )))
    }

    fn delete_topics(&self, names: &[&str]) -> Result<(), TransportError> {
        if self.refuse_deletions {
            return Err(TransportError::Broker(format!(
                "cannot delete topic {}: Broker: Topic authorization failed",
                names.join(",")
            )));
        }
        self.deleted_topics.lock().unwrap().extend(names.iter().map(|name| (*name).to_owned()));
        Ok(())
    }

    fn delete_group(&self, id: &str) -> Result<(), TransportError> {
        self.deleted_groups.lock().unwrap().push(id.to_owned());
        Ok(())
    }
}

fn out(name: &str) -> PathBuf {
    let out = std::env::temp_dir().join(format!("keyed-bench-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&out).ok();
    out
}

/// pipeline-crash's quick cells for keyed-mailbox under `contiguous`, on `kafka`'s broker.
fn config(kafka: KafkaArgs, out: &Path) -> RunConfig {
    let args = RunArgs {
        scenario: "pipeline-crash".into(),
        strategy: "keyed-mailbox".into(),
        commit_policy: "contiguous".into(),
        quick: true,
        transport: TransportKind::Kafka,
        kafka_timeout_ms: 1_500,
        out: out.to_path_buf(),
        kafka,
        ..RunArgs::defaults()
    };
    RunConfig::try_from((args, "keyed-bench run --transport kafka".to_owned()))
        .expect("valid settings")
}

fn on(bootstrap: &str) -> KafkaArgs {
    KafkaArgs { bootstrap_servers: Some(bootstrap.to_owned()), ..KafkaArgs::default() }
}

#[test]
fn a_cluster_that_refuses_connections_is_refused_before_the_run_within_its_timeout() {
    let out = out("refused");
    // Port 1 on the loopback: nothing listens, every connection is refused.
    let mut config = config(on("127.0.0.1:1"), &out);
    let started = Instant::now();
    let error = check_cluster(&mut config).expect_err("refused").to_string();
    let took = started.elapsed();
    eprintln!("refused: {error}");
    assert!(error.starts_with("--bootstrap-servers 127.0.0.1:1: "), "{error}");
    assert!(error.contains("no broker answered within the timeout"), "{error}");
    assert!(took < Duration::from_millis(1_500 + 3_000), "took {took:?}");
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn a_broker_that_cannot_make_topics_is_refused_with_its_words() {
    let cluster = Cluster::start();
    let out = out("no-create-topics");
    let mut config = config(on(&cluster.bootstrap), &out);
    let prefix = config.kafka.cluster.as_ref().unwrap().prefix.clone();
    let error = check_cluster(&mut config).expect_err("the mock has no CreateTopics").to_string();
    eprintln!("no CreateTopics: {error}");
    assert!(error.contains(&format!("cannot create topic {prefix}-check")), "{error}");
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn settings_this_build_lacks_or_librdkafka_rejects_are_refused_before_the_run() {
    let out = out("settings");
    // Checked with the flags, before any run (a dry run too) and without a broker.
    let with = |setting: &str| {
        let kafka = KafkaArgs { client: vec![setting.parse().unwrap()], ..KafkaArgs::default() };
        let args = RunArgs {
            transport: TransportKind::Kafka,
            out: out.clone(),
            kafka,
            ..RunArgs::defaults()
        };
        RunConfig::try_from((args, String::new()))
            .map(|mut config| check_cluster(&mut config).unwrap())
    };
    let built = harness::pipeline::transport::kafka::builtin_features();
    if !built.iter().any(|feature| feature == "ssl") {
        let error = with("security.protocol=SSL").unwrap_err().to_string();
        assert!(error.contains("build it with --features kafka-ssl"), "{error}");
    }
    let error = with("no.such.property=1").unwrap_err().to_string();
    assert!(error.contains("No such configuration property"), "{error}");
    let error =
        with("ssl.key.password=hunter2").map(|_| String::new()).unwrap_or_else(|e| e.to_string());
    assert!(!error.contains("hunter2"), "a secret is never printed: {error}");
    assert_eq!(with("client.id=bench").unwrap(), Vec::<String>::new(), "a mock run needs no check");
    assert!(!out.exists(), "nothing is written");
}

#[test]
fn a_run_on_a_cluster_makes_its_topics_under_its_prefix_and_deletes_them() {
    let cluster = Cluster::start();
    let admin = Arc::new(MockAdmin { mock: cluster.mock(), ..MockAdmin::default() });
    let out = out("on-a-cluster");
    let kafka = KafkaArgs { replication_factor: Some(2), ..on(&cluster.bootstrap) };
    let mut config = config(kafka, &out);
    config.kafka.hooks.admin = Some(Arc::clone(&admin) as Arc<dyn TopicAdmin>);
    let prefix = config.kafka.cluster.as_ref().unwrap().prefix.clone();

    let outcome = run_suite_with(&config, &mut Quiet, Control::default()).expect("the run");
    let results = outcome.results;
    assert_eq!(results.pipelines.len(), 1);
    assert_eq!(results.pipelines[0].lost, 0, "a safe policy loses nothing");
    let meta = results.meta.transport.as_ref().expect("kafka recorded");
    assert_eq!(meta.broker, "cluster");
    assert_eq!(meta.bootstrap.as_deref(), Some(cluster.bootstrap.as_str()));
    assert_eq!(meta.topic_prefix.as_deref(), Some(prefix.as_str()));
    assert_eq!(meta.replication_factor, Some(2));

    // The log's topic, then its retry and dead-letter topics of one partition each.
    let created = admin.created.lock().unwrap().clone();
    assert_eq!(created.len(), 3, "{created:?}");
    let (topic, partitions, replicas) = &created[0];
    assert!(topic.starts_with(&format!("{prefix}-")), "{topic}");
    assert_eq!((*partitions, *replicas), (config.sizes.partitions, 2));
    let sides = [(format!("{topic}-retry"), 1, 2), (format!("{topic}-dlq"), 1, 2)];
    assert_eq!(created[1..], sides);
    let names: Vec<String> = created.iter().map(|(name, ..)| name.clone()).collect();
    assert_eq!(*admin.deleted_topics.lock().unwrap(), names);
    assert_eq!(*admin.deleted_groups.lock().unwrap(), std::slice::from_ref(topic));
    assert!(leftovers(&config).is_empty());
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn kept_topics_stay_and_failed_deletions_are_named_with_the_prefix() {
    let cluster = Cluster::start();
    for keep in [true, false] {
        let admin = Arc::new(MockAdmin {
            mock: cluster.mock(),
            refuse_deletions: !keep,
            ..MockAdmin::default()
        });
        let out = out(if keep { "kept" } else { "not-deleted" });
        let mut config = config(KafkaArgs { keep_topics: keep, ..on(&cluster.bootstrap) }, &out);
        config.kafka.hooks.admin = Some(Arc::clone(&admin) as Arc<dyn TopicAdmin>);
        run_suite_with(&config, &mut Quiet, Control::default()).expect("the run");
        assert!(admin.deleted_topics.lock().unwrap().is_empty());
        let lines = leftovers(&config);
        if keep {
            assert!(admin.deleted_groups.lock().unwrap().is_empty(), "kept");
            assert!(lines.is_empty(), "{lines:?}");
        } else {
            let prefix = &config.kafka.cluster.as_ref().unwrap().prefix;
            assert!(lines[0].contains(prefix.as_str()), "{lines:?}");
            assert!(lines[1].contains("Topic authorization failed"), "{lines:?}");
        }
        std::fs::remove_dir_all(&out).ok();
    }
}

/// On the classic protocol, whose leave is a request of its own (LeaveGroup): a member that
/// crashes sends none, one that ends otherwise closes and sends one.
#[test]
fn a_crashed_member_leaves_no_leave_and_a_closed_one_does() {
    const LEAVE_GROUP: i16 = 13;
    let cluster = Cluster::start();
    let admin = Arc::new(MockAdmin { mock: cluster.mock(), ..MockAdmin::default() });
    let mut options = config(
        KafkaArgs {
            group_protocol: Some(GroupProtocol::Classic),
            client: vec!["session.timeout.ms=3000".parse().unwrap()],
            ..on(&cluster.bootstrap)
        },
        &out("leave"),
    )
    .kafka;
    options.hooks.admin = Some(admin as Arc<dyn TopicAdmin>);
    let backend = Kafka::new(4_096, Duration::from_secs(5), None, options).expect("a backend");
    let mut log = Topic::new("leave", 2).unwrap();
    for key in 0..20 {
        log.append(key, 1, 64, 0);
    }
    let transport = backend.open(&log, Instant::now()).expect("the topic");
    cluster.track_requests();

    let crashed = transport.join(MemberId(0)).unwrap();
    hold(&crashed);
    crashed.crash();
    drop(crashed);
    assert_eq!(cluster.requests(LEAVE_GROUP), 0, "a crash sends no LeaveGroup");

    let closed = transport.join(MemberId(0)).unwrap();
    hold(&closed);
    drop(closed);
    assert_eq!(cluster.requests(LEAVE_GROUP), 1, "a close sends one");
}

/// Every setting the suite makes is one `-X` refuses, so that no user setting can change
/// it, or race it through an alias.
#[test]
fn every_setting_the_suite_makes_is_refused_from_the_command_line() {
    use harness::pipeline::transport::options::RESERVED;
    let options = config(on("kafka-1:9092"), &out("reserved")).kafka;
    let made = Kafka::client_settings(Duration::from_secs(1), &options);
    let mock = Kafka::client_settings(Duration::from_secs(1), &Default::default());
    for setting in made.iter().chain(&mock) {
        let (_, pair) = setting.split_once(' ').expect("side key=value");
        let (key, _) = pair.split_once('=').expect("key=value");
        assert!(RESERVED.iter().any(|(reserved, _)| *reserved == key), "{key} is not refused");
        assert!(format!("{key}=1").parse::<harness::pipeline::ClientSetting>().is_err(), "{key}");
    }
}

/// pipeline-expand runs on a cluster (skipped only on the mock): its topic is made with the
/// partitions the log had before it grew, the first records are produced, and the topic is
/// grown through the admin (CreatePartitions). The mock cannot grow one, so here the grow is
/// refused and the cell fails with the admin's words; on a cluster it goes on.
#[test]
fn an_expansion_on_a_cluster_makes_the_topic_as_it_stood_and_grows_it() {
    let cluster = Cluster::start();
    let admin = Arc::new(MockAdmin { mock: cluster.mock(), ..MockAdmin::default() });
    let out = out("expand");
    let mut config = config(on(&cluster.bootstrap), &out);
    config.scenarios = vec![harness::workload::ScenarioId::PipelineExpand];
    config.kafka.hooks.admin = Some(Arc::clone(&admin) as Arc<dyn TopicAdmin>);
    let plan = harness::suite::plan(&config, None);
    assert!(plan.cells.iter().all(|cell| cell.skipped.is_none()), "not skipped on a cluster");

    let error = run_suite_with(&config, &mut Quiet, Control::default()).expect_err("no grow");
    assert!(error.to_string().contains("the mock has no CreatePartitions"), "{error}");
    let created = admin.created.lock().unwrap().clone();
    assert_eq!(created[0].1, config.sizes.partitions, "made as it stood: {created:?}");
    assert!(config.sizes.expand_to > config.sizes.partitions);
    std::fs::remove_dir_all(&out).ok();
}
