//! SIGINT and SIGTERM during `keyed-bench run`. The first stops the run after the cell in
//! progress, which gets a few seconds to finish ([`STOP_GRACE_S`]) before the watchdog
//! cancels it (it is then not done, and a resumed run runs it): the run saves every
//! finished cell (marked incomplete) and exits with 128 + the signal's number, 130 or 143.
//! A second exits at once with that status, as soon as no save is under way, so what was
//! saved stays whole. `keyed-bench broker` stops the same way: the first signal stops the
//! broker and exits with 130 or 143, a second exits at once.

use std::path::Path;
use std::sync::Arc;

pub use harness::suite::resume_hint;
use harness::suite::StopSignal;
use harness::watch::STOP_GRACE_S;
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;

/// The signals that stop a run, by the name `meta.incomplete.stopped_by` records.
const HANDLED: [(i32, &str); 2] = [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")];

/// The exit status of a run stopped by the signal named `name`: 128 + its number; 1 for a
/// stop that no signal asked for.
pub fn status(name: &str) -> u8 {
    HANDLED
        .iter()
        .find(|(_, handled)| *handled == name)
        .and_then(|(number, _)| u8::try_from(128 + number).ok())
        .unwrap_or(1)
}

/// Prints `line` on standard error, ignoring a failure: a Ctrl-C also ends a reader of a
/// pipe (`| tee`), and the run must still stop cleanly when nobody reads what it says.
pub fn say(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Raises `stop` on the first SIGINT or SIGTERM and ends the process on the second, from a
/// thread of its own; the run writing into `out` is told nothing else.
pub fn stop_on_signals(stop: Arc<StopSignal>, out: &Path) -> std::io::Result<()> {
    let mut signals = Signals::new(HANDLED.map(|(number, _)| number))?;
    let hint = resume_hint(out);
    let results = out.join("results.json");
    std::thread::Builder::new().name("keyed-bench-signals".into()).spawn(move || {
        for number in signals.forever() {
            let name = HANDLED.iter().find(|(n, _)| *n == number).map_or("a signal", |(_, n)| n);
            if stop.request(name) {
                say(&format!(
                    "{name}: stopping after the cell in progress (stopped itself if it runs \
                     {STOP_GRACE_S} s more), then saving; {name} again stops at once"
                ));
            } else {
                say(&format!(
                    "{name} again: stopping now; {} holds every cell finished \
                     so far; {hint}",
                    results.display()
                ));
                stop.exit_now(i32::from(status(name)));
            }
        }
    })?;
    Ok(())
}

/// For `keyed-bench broker`: the name of the first SIGINT or SIGTERM comes through the
/// receiver, from a thread of its own; a second ends the process at once with its status.
/// Call it before the broker starts, so that a signal during the start is not lost.
#[cfg(feature = "kafka")]
pub fn stop_broker_on_signals() -> std::io::Result<std::sync::mpsc::Receiver<&'static str>> {
    let mut signals = Signals::new(HANDLED.map(|(number, _)| number))?;
    let (first, stopped) = std::sync::mpsc::channel();
    std::thread::Builder::new().name("keyed-bench-signals".into()).spawn(move || {
        let mut seen = false;
        for number in signals.forever() {
            let name = HANDLED.iter().find(|(n, _)| *n == number).map_or("a signal", |(_, n)| n);
            if seen {
                say(&format!("{name} again: stopping now"));
                std::process::exit(i32::from(status(name)));
            }
            seen = true;
            let _ = first.send(name);
        }
    })?;
    Ok(stopped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_by_signal_exits_with_128_plus_its_number() {
        assert_eq!(status("SIGINT"), 130);
        assert_eq!(status("SIGTERM"), 143);
        assert_eq!(status("test"), 1);
    }
}
