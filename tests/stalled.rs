//! A completion-driven cell whose handler never finishes one measured command: its sender
//! waits for ever while the hot aggregate's messages keep ending (so the cell never stops
//! making progress). The driver gives up after the cell's timeout, the cell is recorded as
//! failed with the reason, and the run goes on with the next cell.

use std::sync::{mpsc, Arc};
use std::time::Duration;

use harness::cli::RunArgs;
use harness::results::{CellKey, Results};
use harness::workload::SizeArgs;
use strategies::{Descriptor, Design, Family, Handler, Job, Message, Outcome, StrategyId, Threads};

/// cold-command with one slow aggregate: key 0 is the slow one, 1 the hot one, then the
/// commands of the one sender; this is its third.
const FORGOTTEN_KEY: u64 = 4;

/// The longest the run may take: a few seconds once it gives up on the cell.
const RUN_LIMIT: Duration = Duration::from_secs(90);

/// Runs the harness's handler, except for the measured command to [`FORGOTTEN_KEY`], which
/// stays pending for ever (the warm-up's no-op message to it ends).
struct Forgetful(Arc<dyn Handler>);

impl Handler for Forgetful {
    fn handle(&self, message: &Message) -> Outcome {
        if message.key.aggregate_id == FORGOTTEN_KEY && message.job != Job::Noop {
            return Outcome::Pending(Box::pin(std::future::pending()));
        }
        self.0.handle(message)
    }
}

#[test]
fn a_command_never_handled_fails_its_cell_and_the_run_goes_on() {
    let descriptor = Descriptor::custom(
        "forgets-a-command",
        "keyed-mailbox whose handler never finishes one command",
        Family::Mailboxes,
        true,
        Threads::SharedPool,
    );
    Design::register(descriptor, |config, handler| {
        StrategyId::KeyedMailbox.build(config, Arc::new(Forgetful(handler)))
    })
    .expect("the id is free");

    let out = std::env::temp_dir().join(format!("keyed-bench-stalled-{}", std::process::id()));
    let args = RunArgs {
        scenario: "cold-command".into(),
        strategy: "forgets-a-command,keyed-mailbox".into(),
        workers: vec![2],
        sizes: SizeArgs {
            cold_slow: Some(vec![1]),
            cold_senders: Some(vec![1]),
            cold_duration_ms: Some(100),
            ..SizeArgs::default()
        },
        repeat: Some(1),
        no_breakdown: true,
        cell_timeout: Some("2s".into()),
        out: out.clone(),
        ..RunArgs::defaults()
    };
    let config = harness::config::RunConfig::try_from((args, "test".to_owned())).expect("valid");
    // Without a limit on the driver's wait, the run would never end: a guard fails the test.
    let (sent, outcome) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sent.send(harness::bench::run(&config).map(|outcome| outcome.results));
    });
    let results = outcome.recv_timeout(RUN_LIMIT).expect("the run ends").expect("the suite runs");

    let results = Results::read(&results).expect("a valid results file");
    assert!(results.is_complete(), "every cell done: {:?}", results.meta.incomplete);
    assert_eq!(results.failed.len(), 1, "{:?}", results.failed);
    let failed = &results.failed[0];
    let param = "slow=1,senders=1";
    assert_eq!(failed.key(), CellKey::recorded("cold-command", param, "forgets-a-command"));
    assert!(
        failed.reason.starts_with("no measured command handled for 2 s: "),
        "{}",
        failed.reason
    );
    assert_eq!((failed.unit.as_str(), failed.expected, failed.timeout_s), ("messages", None, 2.0));
    assert!(failed.done > 0, "the warm-up and the first commands ended: {failed:?}");
    assert!(!failed.abandoned && failed.elapsed_s >= 2.0, "{failed:?}");
    let strategies: Vec<&str> = results.runs.iter().map(|run| run.strategy.as_str()).collect();
    assert_eq!(strategies, ["keyed-mailbox"], "the run went on");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("no measured command handled for 2 s"), "{summary}");
    std::fs::remove_dir_all(&out).ok();
}
