//! What a results file of a run that has not finished says about itself: `meta.incomplete`
//! (the cells planned, those done, those missing and what stopped the run), and
//! `meta.resumed` (each later session that ran some of its missing cells).
//!
//! A run saves `results.json` after every cell it finishes, marked incomplete, and drops the
//! mark once its last cell is done; `keyed-bench run --resume DIR` runs the missing cells of
//! such a file and merges them in.

use serde::{Deserialize, Serialize};

use super::{CellKey, Results};

/// How far an unfinished run got (`meta.incomplete`); absent from a complete file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incomplete {
    /// Every cell the run planned, skipped ones included.
    pub cells_planned: usize,
    /// The cells done: measured, run (pipeline cells), skipped or failed (stopped by the
    /// watchdog).
    pub cells_done: usize,
    /// The cells not done, in the order the run would run them.
    pub missing: Vec<CellKey>,
    /// What stopped the run: `SIGINT` or `SIGTERM`, `error: ...` when a cell could not be
    /// measured or would not stop (`failed[]` then holds it), the reason a caller of the
    /// library gave; null while the run was still going when the file was written (a run
    /// killed outright leaves it so).
    pub stopped_by: Option<String>,
}

/// A later session of a run, one that resumed it (`meta.resumed[]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resumed {
    /// RFC 3339 UTC time the session started.
    pub created: String,
    /// Its command line.
    pub command: String,
    /// The commit of its working directory (`-dirty` with local changes).
    pub git_commit: String,
}

impl Incomplete {
    /// `16 of 104 cells done, 88 missing (stopped by SIGINT)`.
    pub fn describe(&self) -> String {
        let missing = self.missing.len();
        let stopped = match &self.stopped_by {
            Some(by) => format!("stopped by {by}"),
            None => "the run did not say why it stopped".to_owned(),
        };
        format!(
            "{} of {} cells done, {missing} missing ({stopped})",
            self.cells_done, self.cells_planned
        )
    }
}

impl Results {
    /// Whether every cell the run planned is in the file (no `meta.incomplete`).
    pub fn is_complete(&self) -> bool {
        self.meta.incomplete.is_none()
    }

    /// The cells the file lists as missing (none for a complete file).
    pub fn missing_cells(&self) -> &[CellKey] {
        self.meta.incomplete.as_ref().map_or(&[], |incomplete| incomplete.missing.as_slice())
    }
}

/// The commit hash of a `git_commit` value, without its `-dirty` mark.
pub fn commit_hash(git_commit: &str) -> &str {
    git_commit.strip_suffix("-dirty").unwrap_or(git_commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_named_as_the_progress_names_them() {
        assert_eq!(CellKey::recorded("uniform", "", "inline").to_string(), "uniform inline");
        let cell = CellKey::recorded("hot-backlog", "burst=240", "keyed-mailbox");
        assert_eq!(cell.to_string(), "hot-backlog burst=240 keyed-mailbox");
    }

    #[test]
    fn the_description_counts_and_says_why() {
        let incomplete = Incomplete {
            cells_planned: 4,
            cells_done: 3,
            missing: vec![CellKey::recorded("zipf", "", "tokio")],
            stopped_by: Some("SIGINT".into()),
        };
        assert_eq!(incomplete.describe(), "3 of 4 cells done, 1 missing (stopped by SIGINT)");
        let running = Incomplete { stopped_by: None, ..incomplete };
        assert!(running.describe().ends_with("(the run did not say why it stopped)"));
    }

    #[test]
    fn a_dirty_mark_is_not_part_of_the_hash() {
        assert_eq!(commit_hash("abc123-dirty"), "abc123");
        assert_eq!(commit_hash("abc123"), "abc123");
        assert_eq!(commit_hash("unknown"), "unknown");
    }
}
