//! The ledger: where every submitted message went, counted from what the handler recorded
//! and from the strategy's counters, which must agree.

use strategies::testkit::Report;

/// Where the submitted messages went, counted twice: message by message from what the
/// handler recorded, and by the strategy's counters. Nothing is lost silently when both
/// agree and every submitted message is in exactly one column (see
/// [`Ledger::assert_balanced`]).
#[derive(Debug)]
pub struct Ledger {
    /// Every `submit` call, accepted or not.
    pub submitted: u64,
    /// Submissions refused with `SubmitError::Closed` (the message handed back).
    pub handed_back: u64,
    /// Accepted messages that ran to the end without panicking.
    pub completed: u64,
    /// Accepted messages whose handler or step panicked, as the handler recorded them.
    pub handler_failures: u64,
    /// Accepted messages that never started (the log's `lost`).
    pub never_started: u64,
    /// Accepted messages that started and never ended (the log's `unfinished`).
    pub never_ended: u64,
    /// `Stats::failed`.
    pub failed: u64,
    /// `Stats::discarded`.
    pub discarded: u64,
    /// `Stats::abandoned`.
    pub abandoned: u64,
    /// The order log's full report (order, duplicates, strays).
    pub report: Report,
}

impl Ledger {
    /// The counters agree with what ran: `failed` = handler failures, `discarded` = never
    /// started, `abandoned` = started and never ended; nothing ran twice, nothing handed
    /// back ran; and completed + failed + discarded + abandoned + handed back = submitted.
    #[track_caller]
    pub fn assert_balanced(&self, context: &str) {
        let report = &self.report;
        let extra =
            report.duplicated + report.ran_handed_back + report.unexpected + report.stray_ends;
        assert_eq!(extra, 0, "{context}: ran twice, after a hand-back or unasked: {report}");
        assert_eq!(self.failed, self.handler_failures, "{context}: failed vs panics that ran");
        assert_eq!(self.discarded, self.never_started, "{context}: discarded vs never started");
        assert_eq!(self.abandoned, self.never_ended, "{context}: abandoned vs never ended");
        let accounted =
            self.completed + self.failed + self.discarded + self.abandoned + self.handed_back;
        assert_eq!(accounted, self.submitted, "{context}: unaccounted messages: {self:?}");
    }
}
