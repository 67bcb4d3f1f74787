//! The Kafka transport over librdkafka's mock cluster (feature `kafka`): commit metadata
//! through the broker byte for byte, the metadata cap, polls, the mock's volume limit, the
//! pipeline scenarios losing nothing over it, and the standalone broker (`keyed-bench
//! broker`) serving other clients. An integration test, so that CI builds it against the
//! release library the binary's build made, not the whole crate's unit tests.

mod kafka_common;

use std::collections::BTreeMap;
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use harness::cli::RunArgs;
use harness::config::RunConfig;
use harness::measure::timer::Timer;
use harness::pipeline::transport::broker::{BrokerConfig, BrokerError, BrokerTopic, MockBroker};
use harness::pipeline::transport::kafka::{Kafka, KafkaMember, MOCK_PARTITION_BYTES, RECORD_BYTES};
use harness::pipeline::{
    run_scenario, Backend, Bench, BrokerFault, Member, MemberId, PipelinePlan, RebalanceListener,
    Record, Topic, Transport, TransportError, TransportKind, DEFAULT_METADATA_LIMIT_BYTES,
};
use harness::results::{CommitPolicy, Results};
use harness::suite::{run_suite_with, Control, Quiet, SuiteError};
use harness::workload::{ScenarioId, Sizes};
use kafka_common::{resume_missing, Ignore};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{ClientConfig, Message, Offset, TopicPartitionList};
use strategies::{Design, StrategyConfig, StrategyId};

/// The sizes of the pipeline scenarios' own tests.
fn sizes() -> Sizes {
    Sizes {
        pipeline_records: 3_000,
        pipeline_keys: 200,
        partitions: 3,
        crash_after: 1_000,
        commit_interval_ms: 1,
        ..Sizes::quick()
    }
}

/// The ordered strategies but `inline`.
fn ordered() -> Vec<Design> {
    Design::built_ins().filter(|id| id.descriptor().ordered && *id != StrategyId::Inline).collect()
}

/// Polls `member` until the group has given it its partitions; the listener's record.
fn assigned(member: &KafkaMember) -> Vec<u32> {
    #[derive(Default)]
    struct Seen(Option<Vec<u32>>);
    impl RebalanceListener for Seen {
        fn assigned(&mut self, partitions: &[u32]) {
            self.0 = Some(partitions.to_vec());
        }
        fn revoked(&mut self, _: &[u32]) {}
    }
    let mut seen = Seen::default();
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.0.is_none() {
        assert!(Instant::now() < deadline, "no assignment within 30 s");
        member.poll(0, &mut seen).unwrap();
    }
    seen.0.unwrap_or_default()
}

/// A log of 100 records over 2 partitions by Kafka's partitioner, every record
/// produced at 0.
fn small_log() -> Topic {
    let mut topic = Topic::new("events", 2).unwrap();
    for index in 0..100_u64 {
        topic.append(index % 7, index / 7 + 1, 64, 0);
    }
    topic
}

/// Base64-looking text of `len` characters, every position different from its
/// neighbours so that a dropped or moved byte shows.
fn text(len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    (0..len).map(|at| ALPHABET[(at * 7 + at / 64) % 64] as char).collect()
}

#[test]
fn commit_metadata_reads_back_byte_for_byte_through_the_broker() {
    let mut backend = Kafka::default();
    backend.metadata_limit = 64 * 1024;
    let transport = backend.open(&small_log(), Instant::now()).unwrap();
    let member = transport.join(MemberId(0)).unwrap();
    assert_eq!(assigned(&member), [0, 1]);
    let written = [(0, 4_096), (1, 64 * 1024)];
    for (partition, len) in written {
        member.commit(partition, 17 + u64::from(partition), &text(len)).unwrap();
    }
    // A client of its own reads them: what the broker stored, not a client's cache.
    let reader = transport.join(MemberId(1)).unwrap();
    for (partition, len) in written {
        let commit = reader.committed(partition).unwrap().expect("a commit");
        assert_eq!(commit.offset, 17 + u64::from(partition));
        assert_eq!(commit.metadata.len(), len);
        assert!(commit.metadata == text(len), "partition {partition}: not byte for byte");
    }
}

#[test]
fn a_commit_above_the_cap_is_refused_and_the_broker_keeps_the_last() {
    let transport = Kafka::default().open(&small_log(), Instant::now()).unwrap();
    let member = transport.join(MemberId(0)).unwrap();
    assigned(&member);
    member.commit(0, 5, &text(DEFAULT_METADATA_LIMIT_BYTES)).unwrap();
    let refused = member.commit(0, 9, &text(DEFAULT_METADATA_LIMIT_BYTES + 1)).unwrap_err();
    assert_eq!(
        refused,
        TransportError::MetadataTooLarge {
            partition: 0,
            bytes: DEFAULT_METADATA_LIMIT_BYTES + 1,
            limit: DEFAULT_METADATA_LIMIT_BYTES,
        }
    );
    let kept = member.committed(0).unwrap().unwrap();
    assert_eq!((kept.offset, kept.metadata.len()), (5, DEFAULT_METADATA_LIMIT_BYTES));
}

#[test]
fn polls_return_every_record_of_the_log_in_offset_order_once() {
    let log = small_log();
    let transport = Kafka::default().open(&log, Instant::now()).unwrap();
    let member = transport.join(MemberId(0)).unwrap();
    let partitions = assigned(&member);
    for &partition in &partitions {
        member.seek(partition, 0).unwrap();
    }
    // As the consumer does once it has positioned them.
    member.resume(&partitions).unwrap();
    let mut polled: Vec<Record> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while polled.len() < 100 && Instant::now() < deadline {
        polled.extend(member.poll(16, &mut Ignore).unwrap());
    }
    polled.sort_by_key(|record| (record.partition, record.offset));
    let expected: Vec<Record> = log.records().copied().collect();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort_by_key(|record| (record.partition, record.offset));
    assert_eq!(polled, expected_sorted);
}

#[test]
fn a_volume_past_the_mock_is_refused_before_anything_starts() {
    let mut topic = Topic::new("events", 1).unwrap();
    let records = MOCK_PARTITION_BYTES / RECORD_BYTES + 1;
    for version in 1..=records {
        topic.append(1, version, 64, 0);
    }
    let error = Kafka::default().open(&topic, Instant::now()).unwrap_err();
    assert!(error.to_string().contains("more than the mock cluster keeps"), "{error}");
}

/// The four scenarios the mock runs, quick, over Kafka: nothing lost under a safe
/// policy, every final state correct.
#[test]
fn the_pipeline_scenarios_lose_nothing_over_the_mock() {
    let sizes = Sizes { pipeline_rate: 200_000, fail_pct: 3.0, poison: 2, ..sizes() };
    let timer = Timer::start();
    let bench = Bench {
        sizes: &sizes,
        seed: 7,
        timer: &timer,
        strategy_config: StrategyConfig::with_workers(2),
        watch: Default::default(),
    };
    let plan = PipelinePlan {
        commit_policies: vec![CommitPolicy::Contiguous, CommitPolicy::ContiguousMetadata],
        transport: TransportKind::Kafka,
        ..PipelinePlan::default()
    };
    let strategies = ordered();
    for scenario in [
        ScenarioId::PipelineCrash,
        ScenarioId::PipelineRetry,
        ScenarioId::PipelineReorder,
        ScenarioId::PipelineRebalance,
    ] {
        let runs = run_scenario(scenario, &bench, &plan, &strategies, |_| {}).unwrap();
        assert!(!runs.is_empty(), "{scenario}");
        for run in &runs {
            let what = format!("{scenario} {} {}", run.strategy, run.param);
            assert_eq!(run.transport, Some(TransportKind::Kafka), "{what}");
            assert_eq!(run.lost, 0, "{what}");
            assert!(run.projection.final_state_correct, "{what}");
        }
    }
    let expand = run_scenario(ScenarioId::PipelineExpand, &bench, &plan, &strategies, |_| {});
    assert!(expand.unwrap().is_empty(), "no expansion on the mock");
}

/// pipeline-crash over the mock, quick, keyed-mailbox, group-by and tokio under
/// `contiguous`: the second cell's brokers go down 300 ms after its log is produced. The
/// cell fails within the broker timeout with the broker's words, the run stops there (exit
/// 1 in the binary) keeping the first cell, and a resumed run completes it.
#[test]
fn a_broker_that_dies_mid_cell_fails_the_cell_and_the_run_resumes() {
    let out = std::env::temp_dir().join(format!("keyed-bench-broker-dies-{}", std::process::id()));
    std::fs::remove_dir_all(&out).ok();
    let args = RunArgs {
        scenario: "pipeline-crash".into(),
        strategy: "keyed-mailbox,group-by,tokio".into(),
        commit_policy: "contiguous".into(),
        quick: true,
        transport: TransportKind::Kafka,
        kafka_timeout_ms: 2_000,
        out: out.clone(),
        ..RunArgs::defaults()
    };
    let command = "keyed-bench run --scenario pipeline-crash --transport kafka".to_owned();
    let mut config = RunConfig::try_from((args.clone(), command.clone())).expect("valid settings");
    config.broker_fault = Some(BrokerFault::new(1, Duration::from_millis(300)));

    let started = Instant::now();
    let error = run_suite_with(&config, &mut Quiet, Control::default()).expect_err("fails");
    let took = started.elapsed();
    assert!(matches!(error, SuiteError::Pipeline(_)), "{error}");
    assert!(error.to_string().contains("no broker answered for 2000 ms"), "{error}");
    assert!(took < Duration::from_secs(60), "the run took {took:?}");

    let stopped = Results::read(&out.join("results.json")).expect("the run saved its file");
    let ran: Vec<&str> = stopped.pipelines.iter().map(|run| run.strategy.as_str()).collect();
    assert_eq!(ran, ["keyed-mailbox"], "the cell before the broker died is kept");
    assert_eq!(stopped.failed.len(), 1, "{:?}", stopped.failed);
    let failed = &stopped.failed[0];
    assert_eq!(failed.strategy, "group-by");
    assert!(failed.reason.contains("no broker answered"), "{}", failed.reason);
    assert!(failed.elapsed_s < 30.0, "failed after {} s", failed.elapsed_s);
    let incomplete = stopped.meta.incomplete.as_ref().expect("marked incomplete");
    let stopped_by = incomplete.stopped_by.as_deref().unwrap_or_default();
    assert!(stopped_by.starts_with("error: "), "{stopped_by}");
    assert_eq!(incomplete.missing.len(), 1, "tokio's cell is left: {:?}", incomplete.missing);

    let (config, control) = resume_missing(&out, args, &command);
    let resumed = run_suite_with(&config, &mut Quiet, control).expect("the resumed run completes");
    let results = resumed.results;
    assert!(results.meta.incomplete.is_none(), "{:?}", results.meta.incomplete);
    assert!(results.failed.is_empty(), "the failed cell ran again: {:?}", results.failed);
    let mut ran: Vec<&str> = results.pipelines.iter().map(|run| run.strategy.as_str()).collect();
    ran.sort_unstable();
    assert_eq!(ran, ["group-by", "keyed-mailbox", "tokio"]);
    assert!(results.pipelines.iter().all(|run| run.lost == 0), "a safe policy loses nothing");
    std::fs::remove_dir_all(&out).ok();
}

/// Produces `count` records, `k<i>` to `v<i>`, to `topic` through `bootstrap` with a
/// plain client, as another program would.
fn produce(bootstrap: &str, topic: &str, count: usize) {
    let producer: BaseProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("message.timeout.ms", "20000")
        .create()
        .expect("a producer");
    for index in 0..count {
        let (key, value) = (format!("k{index}"), format!("v{index}"));
        producer.send(BaseRecord::to(topic).key(&key).payload(&value)).expect("queued");
    }
    producer.flush(Duration::from_secs(30)).expect("every record delivered");
}

/// Reads `topic` through `bootstrap` from the start of every partition until `count`
/// records came (or 30 s passed): its partition count and each key's values in order.
fn consume(bootstrap: &str, topic: &str, count: usize) -> (usize, BTreeMap<String, Vec<String>>) {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "keyed-bench-broker-test")
        .set("enable.auto.commit", "false")
        .create()
        .expect("a consumer");
    let metadata = consumer.fetch_metadata(Some(topic), Duration::from_secs(10)).unwrap();
    let partitions = metadata.topics()[0].partitions().len();
    let mut tpl = TopicPartitionList::new();
    for partition in 0..partitions {
        tpl.add_partition_offset(topic, partition as i32, Offset::Beginning).unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let mut read: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut seen = 0;
    while seen < count && Instant::now() < deadline {
        let Some(message) = consumer.poll(Duration::from_millis(100)) else { continue };
        let message = message.expect("no consume error");
        let text =
            |bytes: Option<&[u8]>| String::from_utf8_lossy(bytes.unwrap_or_default()).into_owned();
        read.entry(text(message.key())).or_default().push(text(message.payload()));
        seen += 1;
    }
    (partitions, read)
}

/// What [`produce`] wrote, as [`consume`] returns it.
fn produced(count: usize) -> BTreeMap<String, Vec<String>> {
    (0..count).map(|index| (format!("k{index}"), vec![format!("v{index}")])).collect()
}

#[test]
fn the_standalone_broker_serves_a_topic_it_created_to_other_clients() {
    let config = BrokerConfig {
        brokers: 3,
        port: None,
        topics: vec![BrokerTopic { name: "demo".into(), partitions: 3 }],
    };
    let broker = MockBroker::start(&config).unwrap();
    let bootstrap = broker.bootstrap_servers().to_owned();
    assert_eq!(bootstrap, broker.broker_addresses());
    assert_eq!(bootstrap.split(',').count(), 3, "{bootstrap}");
    assert!(bootstrap.split(',').all(|address| address.starts_with("127.0.0.1:")), "{bootstrap}");
    produce(&bootstrap, "demo", 200);
    let (partitions, read) = consume(&bootstrap, "demo", 200);
    assert_eq!(partitions, 3);
    assert_eq!(read, produced(200));
}

#[test]
fn a_chosen_port_relays_to_the_brokers_and_a_producer_creates_its_topic() {
    let port = {
        let free = TcpListener::bind("127.0.0.1:0").unwrap();
        free.local_addr().unwrap().port()
    };
    let config = BrokerConfig { brokers: 2, port: Some(port), topics: Vec::new() };
    let broker = MockBroker::start(&config).unwrap();
    assert_eq!(broker.bootstrap_servers(), format!("127.0.0.1:{port}"));
    assert!(!broker.broker_addresses().contains(&format!(":{port}")));
    // No topic was created: the producer's metadata request creates it, as the help says.
    produce(broker.bootstrap_servers(), "made-by-a-producer", 50);
    let (partitions, read) = consume(broker.bootstrap_servers(), "made-by-a-producer", 50);
    assert_eq!(partitions, 4, "the mock's default for a topic it creates");
    assert_eq!(read, produced(50));
    drop(broker);
    // Stopped: nothing listens on the port any more.
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err(), "port {port} still open");
}

#[test]
fn a_port_in_use_is_refused_before_anything_starts() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let config = BrokerConfig { port: Some(port), ..BrokerConfig::default() };
    let error = MockBroker::start(&config).unwrap_err();
    assert!(matches!(error, BrokerError::Port { port: p, .. } if p == port), "{error}");
    assert!(error.is_bad_input());
    assert!(error.to_string().starts_with(&format!("--port {port}: cannot listen")), "{error}");
}

/// The retry and dead-letter topics are topics on the broker: a record sent to the retry
/// topic comes back once due, not before, and only once; the dead-letter topic counts what
/// it was sent, and a plain client reads both back.
#[test]
fn the_retry_and_dead_letter_topics_live_on_the_broker() {
    let log = small_log();
    let transport = Kafka::default().open(&log, Instant::now()).unwrap();
    let side = transport.side_topics().unwrap();
    let record = |partition: u32, offset: u64| Record {
        partition,
        offset,
        key: 3,
        version: 1,
        payload_bytes: 64,
        produce_ns: 0,
    };
    side.retry(&record(0, 4), 50_000_000_000).unwrap();
    side.retry(&record(1, 2), 1).unwrap();
    side.dead_letter(&record(1, 7)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut due = Vec::new();
    while due.is_empty() && Instant::now() < deadline {
        due = side.due(1_000).unwrap();
    }
    assert_eq!(due, [(1, 2)], "only the record due by then");
    assert!(side.due(1_000).unwrap().is_empty(), "each record once");
    assert_eq!(side.due(50_000_000_000).unwrap(), [(0, 4)]);
    assert_eq!(side.dead_letters().unwrap(), 1);
    let bootstrap = transport.bootstrap_servers();
    let (_, read) = consume(bootstrap, &format!("{}-retry", log.name()), 2);
    let held: usize = read.values().map(Vec::len).sum();
    assert_eq!(held, 2, "the retry topic holds both records");
}
