//! The watchdog when a strategy deadlocks for good: a design whose `drain` never returns,
//! whatever a forced close does. Its cell makes no progress, is cancelled, does not return
//! within the grace, and is abandoned: the run records it as failed, saves, and ends with
//! an error, the cells after it missing.

use std::path::Path;
use std::sync::{mpsc, Arc};
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
        cell_timeout: Some(Duration::from_millis(500)),
        cancel_grace: Duration::from_secs(1),
        ..Watchdog::default()
    };
    config
}

#[test]
fn a_cell_that_will_not_stop_is_recorded_as_failed_and_ends_the_run() {
    let design = deadlocked();
    let out = std::env::temp_dir().join(format!("keyed-bench-watchdog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let config = config(&out, design);
    let (sent, outcome) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = sent.send(run_suite_with(&config, &mut Quiet, Control::default()).map(|_| ()));
    });
    let outcome = outcome.recv_timeout(DEADLINE).expect("the run ends");
    let error = outcome.expect_err("the run ends at the cell that would not stop");
    let SuiteError::Abandoned { cell, reason, grace_s } = &error else { panic!("{error:?}") };
    assert_eq!(cell, "uniform deadlocked");
    assert!(reason.starts_with("no progress for 0.5 s: "), "{reason}");
    assert_eq!(*grace_s, 1);
    assert!(!error.is_bad_input(), "a failure of the run: exit 1");

    let results = Results::read(&out.join("results.json")).expect("a valid results file");
    assert_eq!(results.runs.len(), 1, "the cell before it was kept");
    assert_eq!(results.runs[0].strategy, "keyed-mailbox");
    assert_eq!(results.failed.len(), 1);
    let failed = &results.failed[0];
    assert_eq!(failed.key(), CellKey::recorded("uniform", "", "deadlocked"));
    assert!(failed.abandoned);
    assert_eq!((failed.unit.as_str(), failed.timeout_s), ("messages", 0.5));
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
    assert!(summary.contains("`uniform deadlocked` (no progress for 0.5 s"), "{summary}");
    std::fs::remove_dir_all(&out).ok();
}
