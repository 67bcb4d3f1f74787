//! A request to stop a suite run, shared between the run and whoever may ask for it (the
//! binary's signal handler, a test). The suite installs no signal handler of its own.

use std::path::PathBuf;
use std::sync::OnceLock;

use parking_lot::{Mutex, MutexGuard};

/// Asks a suite run to stop after the cell in progress (which the watchdog cancels if it
/// runs past its stop grace): the run then saves what it has, marked incomplete, and
/// returns. Shared by reference (or in an `Arc`) with the run.
#[derive(Debug, Default)]
pub struct StopSignal {
    /// Why the run was asked to stop: the first request's reason.
    reason: OnceLock<String>,
    /// Held while the run writes `results.json`, so that exiting at once never cuts a
    /// write short ([`StopSignal::exit_now`]).
    saving: Mutex<()>,
    /// The lock file of the output folder while the run holds its lock: exiting at once
    /// removes it, as the lock's drop would have.
    lock_file: Mutex<Option<PathBuf>>,
}

impl StopSignal {
    /// A signal that has not been raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the run to stop after the cell in progress, for `reason` (`SIGINT`, ...), which
    /// the saved file records in `meta.incomplete.stopped_by`. Returns whether this was the
    /// first request; a later one changes nothing.
    pub fn request(&self, reason: &str) -> bool {
        self.reason.set(reason.to_owned()).is_ok()
    }

    /// The first request's reason, once the run has been asked to stop.
    pub fn requested(&self) -> Option<&str> {
        self.reason.get().map(String::as_str)
    }

    /// Ends the process with `code` as soon as no write of `results.json` is under way:
    /// what the run saved stays whole (every cell finished before its last save).
    pub fn exit_now(&self, code: i32) -> ! {
        let _no_write_under_way = self.saving();
        if let Some(path) = self.lock_file.lock().take() {
            let _ = std::fs::remove_file(path);
        }
        std::process::exit(code)
    }

    /// Records the lock file the run holds (`Some`) or has released (`None`), for
    /// [`StopSignal::exit_now`].
    pub(crate) fn holding(&self, lock_file: Option<PathBuf>) {
        *self.lock_file.lock() = lock_file;
    }

    /// Held by the run while it writes its results.
    pub(crate) fn saving(&self) -> MutexGuard<'_, ()> {
        self.saving.lock()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_request_gives_the_reason() {
        let stop = StopSignal::new();
        assert_eq!(stop.requested(), None);
        assert!(stop.request("SIGTERM"));
        assert!(!stop.request("SIGINT"));
        assert_eq!(stop.requested(), Some("SIGTERM"));
    }
}
