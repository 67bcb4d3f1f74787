//! The watchdog on designs of this test's own that stall: one whose `drain` waits until a
//! forced close, whose cells are cancelled, recorded as failed while the run goes on; and
//! one whose `drain` never returns, whatever a forced close does, whose cell does not
//! return within the grace and is abandoned: the run records it as failed, saves, and ends
//! with an error, the cells after it missing.

use std::path::Path;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::Duration;

use harness::cli::RunArgs;
use harness::config::RunConfig;
use harness::results::{CellKey, Results};
use harness::suite::{run_suite_with, Control, Quiet, SuiteError};
use harness::watch::Watchdog;
use harness::workload::SizeArgs;
use strategies::{
    Descriptor, Design, Family, ForcedClose, Handler, Message, Stats, Strategy, StrategyConfig,
    StrategyId, SubmitError, Threads,
};

/// Far longer than the run takes; past it, the run waits for the deadlocked cell for ever.
const DEADLINE: Duration = Duration::from_secs(120);

/// The runs of this file run one at a time: a run counts the process's threads, and the
/// deadlocked one leaves threads behind.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// `keyed-mailbox`, but its drain never returns: a deadlocked executor.
#[derive(Debug)]
struct Deadlocked(Box<dyn Strategy>);

impl Strategy for Deadlocked {
    fn id(&self) -> &str {
        "deadlocked"
    }

    fn submit(&self, message: Message) -> Result<(), SubmitError> {
        self.0.submit(message)
    }

    fn drain(&self) {
        loop {
            std::thread::park();
        }
    }

    fn close(&self) {
        self.0.close();
    }

    fn force_close(&self) -> ForcedClose {
        self.0.force_close()
    }

    fn threads_started(&self) -> usize {
        self.0.threads_started()
    }

    fn stats(&self) -> Stats {
        self.0.stats()
    }
}

/// `keyed-mailbox`, but its drain waits until the strategy is force-closed: a stall that a
/// cancel breaks.
#[derive(Debug)]
struct StallsUntilClosed {
    inner: Box<dyn Strategy>,
    closed: Mutex<bool>,
    wake: Condvar,
}

impl Strategy for StallsUntilClosed {
    fn id(&self) -> &str {
        "stalls-until-closed"
    }

    fn submit(&self, message: Message) -> Result<(), SubmitError> {
        self.inner.submit(message)
    }

    fn drain(&self) {
        let closed = self.closed.lock().unwrap();
        drop(self.wake.wait_while(closed, |closed| !*closed).unwrap());
    }

    fn close(&self) {
        self.inner.close();
    }

    fn force_close(&self) -> ForcedClose {
        *self.closed.lock().unwrap() = true;
        self.wake.notify_all();
        self.inner.force_close()
    }

    fn threads_started(&self) -> usize {
        self.inner.threads_started()
    }

    fn stats(&self) -> Stats {
        self.inner.stats()
    }
}

fn stalls_until_closed() -> Design {
    let descriptor = Descriptor::custom(
        "stalls-until-closed",
        "keyed-mailbox whose drain waits for a forced close",
        Family::Mailboxes,
        true,
        Threads::SharedPool,
    );
    Design::register(descriptor, |config: StrategyConfig, handler: Arc<dyn Handler>| {
        let inner = StrategyId::KeyedMailbox.build(config, handler)?;
        let stalls = StallsUntilClosed { inner, closed: Mutex::new(false), wake: Condvar::new() };
        Ok(Box::new(stalls) as Box<dyn Strategy>)
    })
    .expect("the id is free")
}

fn deadlocked() -> Design {
    let descriptor = Descriptor::custom(
        "deadlocked",
        "keyed-mailbox whose drain never returns",
        Family::Mailboxes,
        true,
        Threads::SharedPool,
    );
    Design::register(descriptor, |config: StrategyConfig, handler: Arc<dyn Handler>| {
        let inner = StrategyId::KeyedMailbox.build(config, handler)?;
        Ok(Box::new(Deadlocked(inner)) as Box<dyn Strategy>)
    })
    .expect("the id is free")
}

/// Runs `config` on a thread of its own, failing past [`DEADLINE`].
fn run(config: RunConfig) -> Result<(), SuiteError> {
    let (sent, outcome) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sent.send(run_suite_with(&config, &mut Quiet, Control::default()).map(|_| ()));
    });
    outcome.recv_timeout(DEADLINE).expect("the run ends")
}

fn scratch(name: &str) -> std::path::PathBuf {
    let out =
        std::env::temp_dir().join(format!("keyed-bench-watchdog-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    out
}

#[test]
fn a_cell_that_stalls_is_cancelled_recorded_as_failed_and_the_run_goes_on() {
    let _serial = one_at_a_time();
    let design = stalls_until_closed();
    let out = scratch("stall");
    run(config(&out, design)).expect("the run goes on past its failed cells");
    let results = Results::read(&out.join("results.json")).expect("a valid results file");
    assert!(results.is_complete(), "{:?}", results.meta.incomplete);
    let measured: Vec<String> =
        results.runs.iter().map(|run| format!("{} {}", run.scenario, run.strategy)).collect();
    assert_eq!(measured, ["uniform keyed-mailbox", "zipf keyed-mailbox"]);
    let failed: Vec<String> = results.failed_cells().iter().map(ToString::to_string).collect();
    assert_eq!(failed, ["uniform stalls-until-closed", "zipf stalls-until-closed"]);
    for cell in &results.failed {
        // The warm-up's 200 messages ended; its drain then waited for the cancel.
        assert_eq!((cell.done, cell.expected), (200, Some(2_200)), "{cell:?}");
        assert_eq!(cell.reason, "no progress for 1 s: 200 of 2,200 messages done");
        assert!(!cell.abandoned);
    }
    std::fs::remove_dir_all(&out).ok();
}

/// uniform and zipf, small, on keyed-mailbox and then `design`: 4 cells.
fn config(out: &Path, design: Design) -> RunConfig {
    let args = RunArgs {
        scenario: "uniform,zipf".into(),
        strategy: format!("keyed-mailbox,{design}"),
        workers: vec![2],
        sizes: SizeArgs { messages: Some(2_000), keys: Some(vec![100]), ..SizeArgs::default() },
        repeat: Some(1),
        no_breakdown: true,
        out: out.to_path_buf(),
        ..RunArgs::defaults()
    };
    let mut config = RunConfig::try_from((args, "test".to_owned())).expect("valid settings");
    config.watchdog = Watchdog {
        cell_timeout: Some(Duration::from_secs(1)),
        cancel_grace: Duration::from_secs(1),
        ..Watchdog::default()
    };
    config
}

#[test]
fn a_cell_that_will_not_stop_is_recorded_as_failed_and_ends_the_run() {
    let _serial = one_at_a_time();
    let design = deadlocked();
    let out = scratch("deadlock");
    let error =
        run(config(&out, design)).expect_err("the run ends at the cell that would not stop");
    let SuiteError::Abandoned { cell, reason, grace_s } = &error else { panic!("{error:?}") };
    assert_eq!(cell, "uniform deadlocked");
    assert!(reason.starts_with("no progress for 1 s: "), "{reason}");
    assert_eq!(*grace_s, 1);
    assert!(!error.is_bad_input(), "a failure of the run: exit 1");

    let results = Results::read(&out.join("results.json")).expect("a valid results file");
    assert_eq!(results.runs.len(), 1, "the cell before it was kept");
    assert_eq!(results.runs[0].strategy, "keyed-mailbox");
    assert_eq!(results.failed.len(), 1);
    let failed = &results.failed[0];
    assert_eq!(failed.key(), CellKey::recorded("uniform", "", "deadlocked"));
    assert!(failed.abandoned);
    assert_eq!((failed.unit.as_str(), failed.timeout_s), ("messages", 1.0));
    assert!(failed.expected.is_some_and(|expected| failed.done < expected), "{failed:?}");
    let incomplete = results.meta.incomplete.as_ref().expect("the cells after it are missing");
    assert_eq!((incomplete.cells_planned, incomplete.cells_done), (4, 2));
    assert_eq!(
        incomplete.missing,
        [
            CellKey::recorded("zipf", "", "keyed-mailbox"),
            CellKey::recorded("zipf", "", "deadlocked")
        ]
    );
    let stopped_by = incomplete.stopped_by.as_deref().unwrap_or_default();
    assert!(stopped_by.starts_with("error: uniform deadlocked: no progress"), "{stopped_by}");
    let summary = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(summary.contains("`uniform deadlocked` (no progress for 1 s"), "{summary}");
    std::fs::remove_dir_all(&out).ok();
}
