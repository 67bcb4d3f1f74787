//! Running work on helper threads: one check for every strategy at once, and a call that
//! must return in time instead of hanging the test.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use strategies::StrategyId;

/// Runs `check` for every strategy in `ids` at once, each on its own thread (for checks
/// that mostly wait), then fails naming every strategy whose check failed.
pub fn check_concurrently(
    ids: impl IntoIterator<Item = StrategyId>,
    check: impl Fn(StrategyId) + Sync,
) {
    let check = &check;
    let failures: Vec<String> = thread::scope(|scope| {
        let running: Vec<_> =
            ids.into_iter().map(|id| (id, scope.spawn(move || check(id)))).collect();
        running
            .into_iter()
            .filter_map(|(id, run)| {
                run.join().err().map(|payload| format!("{id}: {}", panic_text(&*payload)))
            })
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(text), _) => (*text).to_owned(),
        (_, Some(text)) => text.clone(),
        _ => "panicked".to_owned(),
    }
}

/// Runs `work` on a helper thread and waits at most `limit` for it, so that a call that
/// never returns fails the test (naming `what`) instead of hanging it. A panic in `work`
/// is passed on, with its message.
#[track_caller]
pub fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (sender, receiver) = mpsc::channel();
    let worker = thread::spawn(move || {
        let _ = sender.send(work());
    });
    match receiver.recv_timeout(limit) {
        Ok(value) => value,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} did not return within {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(payload) => panic!("{what} panicked: {}", panic_text(&*payload)),
            Ok(()) => panic!("{what} returned nothing"),
        },
    }
}
