//! The whole pipeline on tiny sizes: workloads -> runner -> metrics -> files.

use harness::cli::RunArgs;
use harness::config::RunConfig;
use harness::results::Results;
use harness::suite::{run_suite, Quiet};
use harness::workload::SizeArgs;

/// The suites of this file run one at a time: the thread sampler counts the process's
/// threads, so a suite running beside another would count its threads too.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn tiny(out: &std::path::Path, scenarios: &str, strategies: &str) -> RunConfig {
    let args = RunArgs {
        scenario: scenarios.into(),
        strategy: strategies.into(),
        workers: vec![2],
        sizes: SizeArgs {
            messages: Some(20_000),
            paced_messages: Some(1_000),
            keys: Some(vec![200]),
            bursts: Some(vec![4]),
            bystanders: Some(500),
            async_messages: Some(200),
            async_keys: Some(vec![20]),
            loads: Some(vec![0.5]),
            open_messages: Some(1_000),
            ..SizeArgs::default()
        },
        repeat: Some(2),
        out: out.to_path_buf(),
        ..RunArgs::defaults()
    };
    RunConfig::try_from((args, "test".to_owned())).expect("valid tiny settings")
}

#[test]
fn a_tiny_suite_writes_every_output_and_catches_the_control() {
    let _serial = one_at_a_time();
    let out = std::env::temp_dir().join(format!("keyed-bench-suite-{}", std::process::id()));
    let config = tiny(&out, "zipf,hot-backlog", "keyed-mailbox,group-by,inline,thread-pool");
    let (results, summary) = run_suite(&config, &mut Quiet).expect("the suite runs");

    let read = Results::read(&out.join("results.json")).expect("results.json is valid");
    assert_eq!(read.runs.len(), results.runs.len());
    assert!(out.join("summary.md").is_file());
    assert!(summary.contains("## zipf") && summary.contains("### hot-backlog burst=4"));
    let histograms = std::fs::read_dir(out.join("histograms")).unwrap().count();
    assert!(histograms >= results.runs.len(), "{histograms} histogram files");

    // inline does not run where handlers wait, and says why.
    assert!(read.skipped.iter().any(|s| s.strategy == "inline" && s.scenario == "hot-backlog"));
    for run in &read.runs {
        assert!(run.messages > 0);
        if run.strategy == "thread-pool" {
            continue;
        }
        assert!(
            run.correctness.is_clean(),
            "{} on {}: {:?}",
            run.strategy,
            run.scenario,
            run.correctness
        );
        assert!(run.efficiency > 0.0 && run.ideal_s > 0.0, "{run:?}");
        if run.strategy != "inline" {
            assert_eq!(run.threads.reported, 2, "{run:?}");
            assert_eq!(run.threads.observed, 2, "{run:?}");
        }
    }
    let control =
        read.runs.iter().find(|r| r.strategy == "thread-pool" && r.scenario == "zipf").unwrap();
    assert!(
        control.correctness.order_violations + control.correctness.overlaps > 0,
        "the checker must catch the unordered control on hot keys: {:?}",
        control.correctness
    );
    let hot = read.runs.iter().find(|r| r.scenario == "hot-backlog").unwrap();
    assert!(hot.bystander_latency_ns.is_some() && hot.offered_per_s.is_some());
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn an_unwritable_output_fails_before_measuring() {
    let config = tiny(std::path::Path::new("/proc/keyed-bench-cannot-write"), "uniform", "inline");
    let error = run_suite(&config, &mut Quiet).unwrap_err().to_string();
    assert!(error.contains("cannot write"), "{error}");
}

/// Two producers, keys partitioned between them: every ordered strategy stays clean, the
/// control is still caught, the producer threads are not counted as the strategy's, and
/// the breakdown repetition counts every message.
#[test]
fn two_producers_keep_every_key_in_order_and_are_not_counted_as_strategy_threads() {
    let _serial = one_at_a_time();
    let out = std::env::temp_dir().join(format!("keyed-bench-producers-{}", std::process::id()));
    let mut config = tiny(&out, "zipf,hot-backlog", "keyed-mailbox,tokio-actors,thread-pool");
    config.producers = 2;
    let (results, _) = run_suite(&config, &mut Quiet).expect("the suite runs");
    assert_eq!(results.meta.producers, Some(2));
    for run in &results.runs {
        assert_eq!(run.threads.observed, 2, "{} on {}", run.strategy, run.scenario);
        let events = run.events_per_message.expect("the breakdown runs by default");
        let counted = harness::measure::runner::breakdown_messages(run.messages);
        assert_eq!(events.messages as usize, counted, "{}", run.strategy);
        if run.strategy != "thread-pool" {
            assert!(
                run.correctness.is_clean(),
                "{} on {}: {:?}",
                run.strategy,
                run.scenario,
                run.correctness
            );
        }
    }
    let control =
        results.runs.iter().find(|r| r.strategy == "thread-pool" && r.scenario == "zipf").unwrap();
    assert!(control.correctness.order_violations + control.correctness.overlaps > 0);
    std::fs::remove_dir_all(&out).ok();
}
