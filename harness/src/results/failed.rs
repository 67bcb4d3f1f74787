//! The cells a run stopped because they made no progress (`failed[]`).
//!
//! A watchdog supervises every cell of a run: a cell that finishes no unit of work (a
//! message, a record) for its timeout (`--cell-timeout`) is cancelled, recorded here with
//! the reason, and the run goes on with the next cell. So is a completion-driven cell whose
//! measured senders get no answer to a command for that timeout (its hot aggregate's
//! messages may keep ending meanwhile): its driver gives up by itself. A failed cell counts as done for the
//! run's progress (`meta.incomplete.cells_done`), but it measured nothing: `run` exits 1,
//! `summary.md`, `report.html` and `gate` name it, and `run --resume` runs it again.

use serde::{Deserialize, Serialize};

use super::{CellKey, Results};

/// A cell the watchdog stopped (`failed[]`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct FailedCell {
    /// Scenario id.
    pub scenario: String,
    /// Its parameter, as `runs[].param` or `pipelines[].param` would hold it (the sweep
    /// point's label included); empty where the scenario has none.
    pub param: String,
    /// Strategy id.
    pub strategy: String,
    /// Why it failed, for a reader: `no progress for 60 s: 1,234 of 20,000 messages done`,
    /// or, for a completion-driven cell whose senders got no answer,
    /// `no measured command handled for 60 s: 1,234 messages done`.
    pub reason: String,
    /// What the cell counts as progress: `messages` that ended (a measured cell) or
    /// `records` settled (a pipeline cell).
    pub unit: String,
    /// Units of work it finished before it was stopped.
    pub done: u64,
    /// Units of work it expected to finish in all; null where it cannot know (a pipeline
    /// redelivers, a completion-driven cell sends for a time).
    pub expected: Option<u64>,
    /// The no-progress timeout it was held to (a completion-driven cell's senders too), in
    /// seconds.
    pub timeout_s: f64,
    /// Seconds from its start to its cancel.
    pub elapsed_s: f64,
    /// Whether its code did not return within the grace after the cancel (a strategy that
    /// ignores a forced close): the run left its thread behind and ended there, with the
    /// cells after it missing (`meta.incomplete`).
    pub abandoned: bool,
}

impl FailedCell {
    /// Its cell.
    pub fn key(&self) -> CellKey {
        CellKey::recorded(&self.scenario, &self.param, &self.strategy)
    }
}

impl Results {
    /// The cells the file records as failed, in file order.
    pub fn failed_cells(&self) -> Vec<CellKey> {
        self.failed.iter().map(FailedCell::key).collect()
    }

    /// Whether every cell the run planned was done and none failed: nothing for
    /// `run --resume` to run.
    pub fn is_finished(&self) -> bool {
        self.is_complete() && self.failed.is_empty()
    }
}

/// `no progress for 60 s: 1,234 of 20,000 messages done`: the reason a failed cell is given.
pub fn no_progress_reason(timeout_s: f64, done: u64, expected: Option<u64>, unit: &str) -> String {
    let timeout = seconds(timeout_s);
    match expected {
        Some(expected) => format!(
            "no progress for {timeout}: {} of {} {unit} done",
            thousands(done),
            thousands(expected)
        ),
        None => format!("no progress for {timeout}: {} {unit} done", thousands(done)),
    }
}

/// `no measured command handled for 60 s: 1,234 messages done`: the reason a
/// completion-driven cell whose measured senders got no answer is given.
pub fn unanswered_reason(timeout_s: f64, done: u64, unit: &str) -> String {
    format!(
        "no measured command handled for {}: {} {unit} done",
        seconds(timeout_s),
        thousands(done)
    )
}

/// `60 s`, `0.5 s`: seconds to the millisecond, without trailing zeros.
fn seconds(value: f64) -> String {
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text} s")
}

/// `20,000`: a count with its thousands grouped.
fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_counts_what_was_done() {
        assert_eq!(
            no_progress_reason(60.0, 1_234, Some(20_000), "messages"),
            "no progress for 60 s: 1,234 of 20,000 messages done"
        );
        assert_eq!(
            no_progress_reason(2.0, 7, None, "records"),
            "no progress for 2 s: 7 records done"
        );
        assert_eq!(
            no_progress_reason(0.5, 0, None, "records"),
            "no progress for 0.5 s: 0 records done"
        );
        assert_eq!(
            unanswered_reason(2.0, 12_345, "messages"),
            "no measured command handled for 2 s: 12,345 messages done"
        );
    }
}
