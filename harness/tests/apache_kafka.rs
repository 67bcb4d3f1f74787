//! The Kafka transport against Apache Kafka itself (feature `kafka`): the broker that
//! `KEYED_BENCH_KAFKA_BOOTSTRAP` names, such as the one `scripts/kafka.sh start DIR` starts
//! (its test settings: docs/transport.md, "Test settings"). Unset, each test prints that it
//! was skipped and why, and passes; `.ci/run` sets it.
//!
//! What librdkafka's mock cannot show: the admin client's CreateTopics, CreatePartitions,
//! DeleteTopics and DeleteGroups succeeding, leaders appearing, a crashed member kept in
//! the group for the broker's session, the broker's own cap on commit metadata, and both
//! group protocols on a broker that has both. Each test runs under a prefix of its own,
//! and sweeps whatever is left under it, a failing test too.

mod kafka_common;

use std::ffi::CString;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use harness::cli::kafka::{leftovers, KafkaArgs};
use harness::cli::RunArgs;
use harness::pipeline::transport::kafka::admin::ClusterAdmin;
use harness::pipeline::transport::kafka::Kafka;
use harness::pipeline::transport::options::TopicAdmin;
use harness::pipeline::{
    Backend, GroupProtocol, Member, MemberId, Topic, Transport, TransportError,
};
use harness::workload::SizeArgs;
use kafka_common::{broker, client, hold, on_broker, run, safe, under, TIMEOUT};
use rdkafka::admin::AdminClient;
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::Consumer;
use rdkafka::ClientConfig;

/// The members the broker's description of `group` lists (none once it is empty or
/// gone): the admin API's DescribeConsumerGroups, which librdkafka sends as
/// ConsumerGroupDescribe for a KIP-848 group and DescribeGroups for a classic one
/// (rust-rdkafka does not wrap it; the classic request alone lists no KIP-848 member).
fn members(bootstrap: &str, group: &str) -> usize {
    use rdkafka::bindings as rd;
    let admin: AdminClient<DefaultClientContext> =
        ClientConfig::new().set("bootstrap.servers", bootstrap).create().expect("an admin");
    let rk = admin.inner().native_ptr();
    let name = CString::new(group).expect("a group id");
    let mut groups = [name.as_ptr()];
    // SAFETY: `rk` is the live admin client, borrowed for the block. The queue and options
    // are made, used and destroyed here; the request copies the group's name. The event,
    // its result and the descriptions it owns are read before the event is destroyed.
    unsafe {
        let queue = rd::rd_kafka_queue_new(rk);
        let options = rd::rd_kafka_AdminOptions_new(
            rk,
            rd::rd_kafka_admin_op_t::RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS,
        );
        rd::rd_kafka_DescribeConsumerGroups(rk, groups.as_mut_ptr(), 1, options, queue);
        let event = rd::rd_kafka_queue_poll(queue, TIMEOUT.as_millis() as i32);
        assert!(!event.is_null(), "no description of {group} within {TIMEOUT:?}");
        let code = rd::rd_kafka_event_error(event);
        assert_eq!(code, rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_NO_ERROR, "{group}");
        let result = rd::rd_kafka_event_DescribeConsumerGroups_result(event);
        let mut count = 0;
        let descriptions = rd::rd_kafka_DescribeConsumerGroups_result_groups(result, &mut count);
        assert_eq!(count, 1, "one description of {group}");
        let description = *descriptions;
        let error = rd::rd_kafka_ConsumerGroupDescription_error(description);
        let members = if error.is_null() {
            rd::rd_kafka_ConsumerGroupDescription_member_count(description)
        } else {
            let code = rd::rd_kafka_error_code(error);
            assert_eq!(code, rd::rd_kafka_resp_err_t::RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND);
            0
        };
        rd::rd_kafka_event_destroy(event);
        rd::rd_kafka_AdminOptions_destroy(options);
        rd::rd_kafka_queue_destroy(queue);
        members
    }
}

/// A topic as its metadata read just after it was made.
#[derive(Clone, Debug, PartialEq)]
struct Made {
    name: String,
    partitions: usize,
    /// Replicas of each partition.
    replicas: Vec<usize>,
    /// Whether every partition had a leader.
    led: bool,
}

/// The real admin client, each call recorded, and each topic's metadata read once made.
#[derive(Debug)]
struct Recorded {
    admin: ClusterAdmin,
    bootstrap: String,
    made: Mutex<Vec<Made>>,
    grown: Mutex<Vec<(String, u32)>>,
    deleted_topics: Mutex<Vec<String>>,
    deleted_groups: Mutex<Vec<String>>,
}

impl Recorded {
    fn new(bootstrap: &str) -> Self {
        Self {
            admin: ClusterAdmin::connect(bootstrap, &[], TIMEOUT).expect("an admin client"),
            bootstrap: bootstrap.to_owned(),
            made: Mutex::default(),
            grown: Mutex::default(),
            deleted_topics: Mutex::default(),
            deleted_groups: Mutex::default(),
        }
    }
}

impl TopicAdmin for Recorded {
    fn create(&self, name: &str, partitions: u32, replicas: u16) -> Result<(), TransportError> {
        self.admin.create(name, partitions, replicas)?;
        let metadata = client(&self.bootstrap).fetch_metadata(Some(name), TIMEOUT).unwrap();
        let topic = &metadata.topics()[0];
        self.made.lock().unwrap().push(Made {
            name: name.to_owned(),
            partitions: topic.partitions().len(),
            replicas: topic.partitions().iter().map(|p| p.replicas().len()).collect(),
            led: topic.partitions().iter().all(|p| p.leader() >= 0),
        });
        Ok(())
    }

    fn grow(&self, name: &str, partitions: u32) -> Result<(), TransportError> {
        self.admin.grow(name, partitions)?;
        self.grown.lock().unwrap().push((name.to_owned(), partitions));
        Ok(())
    }

    fn delete_topics(&self, names: &[&str]) -> Result<(), TransportError> {
        self.admin.delete_topics(names)?;
        self.deleted_topics.lock().unwrap().extend(names.iter().map(|name| (*name).to_owned()));
        Ok(())
    }

    fn delete_group(&self, id: &str) -> Result<(), TransportError> {
        self.admin.delete_group(id)?;
        self.deleted_groups.lock().unwrap().push(id.to_owned());
        Ok(())
    }
}

#[test]
fn a_run_makes_its_topics_on_the_broker_and_deletes_them_with_its_group_after_a_crash() {
    let Some(bootstrap) = broker() else { return };
    let args = RunArgs { commit_policy: "contiguous".into(), ..RunArgs::defaults() };
    let (mut config, sweep) =
        on_broker(&bootstrap, "crash", "pipeline-crash", args, KafkaArgs::default());
    let admin = Arc::new(Recorded::new(&bootstrap));
    let results = run(&mut config, Some(Arc::clone(&admin) as Arc<dyn TopicAdmin>));
    safe(&results.pipelines);
    let cell = &results.pipelines[0];
    let meta = results.meta.transport.as_ref().expect("kafka recorded");
    assert_eq!((meta.broker.as_str(), meta.replication_factor), ("cluster", Some(1)));

    // The log's topic, its retry and dead-letter topics: made with their partitions and
    // replicas, every partition led, all deleted with the group.
    let made = admin.made.lock().unwrap().clone();
    let names: Vec<String> = made.iter().map(|topic| topic.name.clone()).collect();
    assert_eq!(names.len(), 3, "{made:?}");
    assert_eq!(made[0].partitions, config.sizes.partitions as usize, "{made:?}");
    assert!(made.iter().all(|topic| topic.led && topic.replicas.iter().all(|r| *r == 1)));
    assert_eq!(*admin.deleted_topics.lock().unwrap(), names);
    assert_eq!(*admin.deleted_groups.lock().unwrap(), [names[0].clone()]);
    assert!(leftovers(&config).is_empty(), "{:?}", leftovers(&config));
    assert_eq!(under(&bootstrap, &sweep.prefix), (vec![], vec![]), "nothing left");

    // The successor waited out the crashed member's session on the broker (6 s on the
    // test broker, its heartbeat 1 s) before it was given the partitions.
    assert_eq!(cell.incarnations.len(), 2);
    let successor = &cell.incarnations[1];
    assert!(successor.elapsed_s > 4.0, "the successor took {} s", successor.elapsed_s);
    let events = cell.client_events.expect("the clients' events are recorded");
    assert_eq!(events.leader_changes, 0, "{events:?}");
}

#[test]
fn kept_topics_stay_on_the_broker() {
    let Some(bootstrap) = broker() else { return };
    let kafka = KafkaArgs { keep_topics: true, ..KafkaArgs::default() };
    let (mut config, sweep) =
        on_broker(&bootstrap, "kept", "pipeline-reorder", RunArgs::defaults(), kafka);
    let results = run(&mut config, None);
    safe(&results.pipelines);
    let (topics, groups) = under(&bootstrap, &sweep.prefix);
    assert_eq!(topics.len(), 3, "the log's topic and its side topics stay: {topics:?}");
    assert_eq!(groups.len(), 1, "{groups:?}");
    drop(sweep);
    let prefix = config.kafka.cluster.as_ref().unwrap().prefix.clone();
    assert_eq!(under(&bootstrap, &prefix), (vec![], vec![]), "swept");
}

#[test]
fn an_expansion_grows_the_topic_through_create_partitions_and_loses_nothing() {
    let Some(bootstrap) = broker() else { return };
    let (mut config, sweep) = on_broker(
        &bootstrap,
        "expand",
        "pipeline-expand",
        RunArgs::defaults(),
        KafkaArgs::default(),
    );
    let admin = Arc::new(Recorded::new(&bootstrap));
    let results = run(&mut config, Some(Arc::clone(&admin) as Arc<dyn TopicAdmin>));
    assert!(results.skipped.is_empty(), "run on a broker: {:?}", results.skipped);
    assert_eq!(results.pipelines.len(), 2, "both mitigations");
    safe(&results.pipelines);
    let (from, to) = (config.sizes.partitions, config.sizes.expand_to);
    let made = admin.made.lock().unwrap().clone();
    let grown = admin.grown.lock().unwrap().clone();
    for run in &results.pipelines {
        assert_eq!(run.partitions, to, "{}", run.param);
        assert_eq!(run.lost, 0, "{}", run.param);
        let expansion = run.expansion.as_ref().expect("the expansion's report");
        assert_eq!((expansion.from_partitions, expansion.to_partitions), (from, to));
    }
    // Each log made as it stood before it grew, then grown by CreatePartitions.
    let side = |name: &str| name.ends_with("-retry") || name.ends_with("-dlq");
    let logs: Vec<&Made> = made.iter().filter(|topic| !side(&topic.name)).collect();
    assert_eq!(logs.len(), 2, "{made:?}");
    for log in logs {
        assert_eq!(log.partitions, from as usize, "{} made as it stood", log.name);
        assert!(grown.contains(&(log.name.clone(), to)), "{} grown to {to}: {grown:?}", log.name);
    }
    assert_eq!(under(&bootstrap, &sweep.prefix), (vec![], vec![]), "nothing left");
}

/// A crash sends no leave: the broker lists the crashed member in its group until the
/// member's session ends (6 s on the test broker); a member that closes leaves at once. The
/// cell's end deletes the group once the crashed member is gone. Both group protocols.
#[test]
fn a_crashed_member_stays_in_the_group_until_its_session_ends_and_a_closed_one_leaves() {
    let Some(bootstrap) = broker() else { return };
    for protocol in [GroupProtocol::Consumer, GroupProtocol::Classic] {
        let name = format!("leave-{protocol}");
        let kafka = KafkaArgs { group_protocol: Some(protocol), ..KafkaArgs::default() };
        let (config, sweep) =
            on_broker(&bootstrap, &name, "pipeline-crash", RunArgs::defaults(), kafka);
        let backend = Kafka::new(4_096, TIMEOUT, None, config.kafka.clone()).expect("a backend");
        let mut log = Topic::new("leave", 2).unwrap();
        for key in 0..20 {
            log.append(key, 1, 64, 0);
        }
        let transport = backend.open(&log, Instant::now()).expect("the topic");
        let (topics, _) = under(&bootstrap, &sweep.prefix);
        let group = topics.iter().find(|t| !t.ends_with("-retry") && !t.ends_with("-dlq"));
        let group = group.expect("the cell's topic, which names its group").clone();

        let closed = transport.join(MemberId(0)).unwrap();
        hold(&closed);
        assert_eq!(members(&bootstrap, &group), 1, "{protocol}: the member is listed");
        drop(closed);
        let left = Instant::now();
        while members(&bootstrap, &group) > 0 {
            // Well under the session (6 s) a member that sent no leave stays for.
            let waited = left.elapsed();
            assert!(waited < Duration::from_secs(4), "{protocol}: a close leaves at once");
            std::thread::sleep(Duration::from_millis(50));
        }

        let crashed = transport.join(MemberId(0)).unwrap();
        hold(&crashed);
        crashed.crash();
        drop(crashed);
        let crashed_at = Instant::now();
        std::thread::sleep(Duration::from_secs(2));
        assert_eq!(members(&bootstrap, &group), 1, "{protocol}: a crash sends no leave");

        // The cell's end deletes its topics, then its group, which the broker refuses
        // (not empty) until the crashed member's session has ended.
        drop(transport);
        let waited = crashed_at.elapsed();
        eprintln!("{protocol}: the group was deleted {waited:?} after the crash");
        assert!(waited >= Duration::from_secs(4), "{protocol}: after its session: {waited:?}");
        assert_eq!(members(&bootstrap, &group), 0);
        assert_eq!(under(&bootstrap, &sweep.prefix), (vec![], vec![]), "{protocol}: deleted");
        assert!(leftovers(&config).is_empty(), "{:?}", leftovers(&config));
    }
}

/// The broker's own `offset.metadata.max.bytes` (4,096, the default): a commit past it is
/// refused by the broker, not by the suite, when `--metadata-limit` is set above it; a cell
/// whose metadata grows past it keeps going, loses nothing, and names the refusal.
#[test]
fn the_brokers_own_metadata_cap_refuses_a_longer_commit_and_the_cell_names_it() {
    let Some(bootstrap) = broker() else { return };
    // A cell whose metadata outgrows the broker's cap: one partition, every record in
    // flight at once, a third of them waiting a second, so that the completed offsets above
    // the lowest incomplete one span tens of thousands.
    let sizes = SizeArgs {
        metadata_limit: Some(65_536),
        partitions: Some(1),
        pipeline_records: Some(30_000),
        crash_after: Some(25_000),
        pipeline_slow_pct: Some(30.0),
        pipeline_slow_ms: Some(1_000),
        ..SizeArgs::default()
    };
    let args = RunArgs {
        commit_policy: "contiguous+metadata".into(),
        window: vec![100_000],
        sizes,
        ..RunArgs::defaults()
    };
    let (mut config, sweep) =
        on_broker(&bootstrap, "cap", "pipeline-crash", args, KafkaArgs::default());

    // One commit, straight through a member.
    let backend = Kafka::new(65_536, TIMEOUT, None, config.kafka.clone()).expect("a backend");
    let mut log = Topic::new("cap", 1).unwrap();
    log.append(1, 1, 64, 0);
    let transport = backend.open(&log, Instant::now()).expect("the topic");
    let member = transport.join(MemberId(0)).unwrap();
    hold(&member);
    member.commit(0, 0, &"A".repeat(4_096)).expect("4,096 characters are stored");
    let refused = member.commit(0, 0, &"A".repeat(4_097)).expect_err("4,097 are not");
    assert!(
        matches!(refused, TransportError::MetadataRefused { partition: 0, bytes: 4_097, .. }),
        "{refused}"
    );
    drop(member);
    drop(transport);

    // The cell.
    let started = Instant::now();
    let results = run(&mut config, None);
    eprintln!("the cell took {:?}", started.elapsed());
    safe(&results.pipelines);
    let cell = &results.pipelines[0];
    assert!(cell.max_metadata_bytes > 4_096, "metadata reached {}", cell.max_metadata_bytes);
    let failed = cell.failed_commits();
    assert!(failed.count > 0, "the broker refused some commits");
    let first = failed.first.unwrap_or_default();
    assert!(first.contains("OFFSET_METADATA_TOO_LARGE"), "{first}");
    drop(sweep);
}

/// The classic protocol on a broker that speaks both: a crash and a rebalance cell.
#[test]
fn the_classic_protocol_runs_the_crash_and_rebalance_cells() {
    let Some(bootstrap) = broker() else { return };
    let args = RunArgs { commit_policy: "contiguous".into(), ..RunArgs::defaults() };
    let kafka = KafkaArgs { group_protocol: Some(GroupProtocol::Classic), ..KafkaArgs::default() };
    let (mut config, sweep) =
        on_broker(&bootstrap, "classic", "pipeline-crash,pipeline-rebalance", args, kafka);
    let results = run(&mut config, None);
    assert_eq!(results.pipelines.len(), 2);
    safe(&results.pipelines);
    let meta = results.meta.transport.as_ref().unwrap();
    assert_eq!(meta.group_protocol, "classic");
    assert!(meta.client_settings.iter().any(|s| s == "consumer session.timeout.ms=6000"));
    assert_eq!(under(&bootstrap, &sweep.prefix), (vec![], vec![]), "nothing left");
}
