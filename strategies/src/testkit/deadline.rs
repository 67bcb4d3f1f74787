//! The deadline: work on a thread of its own, waited for at most a limit.

use std::fmt;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Why [`run_within`] has no value to return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Missed {
    /// The work did not return within the deadline; its thread is left running.
    Deadline(Duration),
    /// The work panicked, with this message.
    Panicked(String),
    /// No thread could be started for it.
    NoThread(String),
}

impl fmt::Display for Missed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Missed::Deadline(limit) => write!(f, "did not finish within {}", seconds(*limit)),
            Missed::Panicked(text) => write!(f, "panicked: {text}"),
            Missed::NoThread(error) => write!(f, "cannot start a thread: {error}"),
        }
    }
}

/// `limit` as a report writes it: `15 s`, `2.5 s`.
fn seconds(limit: Duration) -> String {
    if limit.subsec_nanos() == 0 {
        format!("{} s", limit.as_secs())
    } else {
        format!("{:.1} s", limit.as_secs_f64())
    }
}

/// Runs `work` on a thread named `name` and waits at most `limit` for what it returns.
/// Past the deadline the thread is left behind, with whatever it holds.
pub fn run_within<T: Send + 'static>(
    name: &str,
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Missed> {
    let (sender, receiver) = mpsc::channel();
    let spawned = thread::Builder::new().name(name.to_owned()).spawn(move || {
        let _ = sender.send(work());
    });
    let thread = spawned.map_err(|error| Missed::NoThread(error.to_string()))?;
    match receiver.recv_timeout(limit) {
        Ok(value) => {
            let _ = thread.join();
            Ok(value)
        }
        Err(mpsc::RecvTimeoutError::Timeout) => Err(Missed::Deadline(limit)),
        Err(mpsc::RecvTimeoutError::Disconnected) => match thread.join() {
            Err(payload) => Err(Missed::Panicked(panic_text(&*payload))),
            Ok(()) => Err(Missed::Panicked("the work ended without a value".to_owned())),
        },
    }
}

/// [`run_within`] for a test: panics naming `what` when the work does not return in
/// time, and passes a panic of the work on, with its message.
#[track_caller]
pub fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    run_within(what, limit, work).unwrap_or_else(|missed| panic!("{what}: {missed}"))
}

/// The message of a panic's payload.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(text), _) => (*text).to_owned(),
        (_, Some(text)) => text.clone(),
        _ => "a panic with no message".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_past_its_deadline_is_missed_and_a_panic_is_passed_on() {
        let limit = Duration::from_millis(20);
        assert_eq!(run_within("quick", limit, || 7), Ok(7));
        let late = run_within("late", limit, || thread::sleep(Duration::from_secs(2)));
        assert_eq!(late, Err(Missed::Deadline(limit)));
        let boom = || -> () { std::panic::resume_unwind(Box::new("boom")) };
        let panicked = run_within("panics", Duration::from_secs(5), boom);
        assert_eq!(panicked, Err(Missed::Panicked("boom".to_owned())));
    }
}
