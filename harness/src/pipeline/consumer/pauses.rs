//! Which of a member's partitions stand paused, and why (step 2's pauses).

use super::config::Hold;
use super::shared::Shared;
use crate::pipeline::transport::Member;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Which of a member's partitions stand paused, and why: held (drain-then-expand), a
/// record failing in place (pause-partition), or commit metadata near its limit.
pub(super) struct Pauses {
    /// Per partition of the log: whether the member paused it in the transport.
    pub(super) paused: Vec<bool>,
    pub(super) hold: Option<Hold>,
    pub(super) held_since: Instant,
    pub(super) held: Duration,
    /// Per partition of the log: since when a record of it has been failing in place.
    pub(super) failing_since: Vec<Option<Instant>>,
    pub(super) failure_pause: Duration,
}

impl Pauses {
    /// The pauses of an incarnation over a log of `partitions` partitions, none paused yet.
    pub(super) fn new(partitions: u32, hold: Option<Hold>) -> Self {
        Self {
            paused: vec![false; partitions as usize],
            hold,
            held_since: Instant::now(),
            held: Duration::ZERO,
            failing_since: vec![None; partitions as usize],
            failure_pause: Duration::ZERO,
        }
    }

    /// Partitions that start unpaused: newly assigned, or resumed at the start of an
    /// incarnation (a pause left by the member's earlier incarnation would otherwise stand
    /// for ever, since this one would never see a reason to lift it).
    pub(super) fn unpaused(&mut self, partitions: &[u32]) {
        for &partition in partitions {
            if let Some(paused) = self.paused.get_mut(partition as usize) {
                *paused = false;
            }
        }
    }

    /// Pauses and resumes the member's partitions as their reasons come and go.
    pub(super) fn reconcile<M: Member>(&mut self, member: &M, shared: &Shared) {
        self.lift_hold_once_drained(member);
        for partition in member.assignment() {
            let index = partition as usize;
            if index >= self.paused.len() {
                continue;
            }
            let failing = shared.failing[index].load(Ordering::Acquire) > 0;
            self.failure_pause += Self::time_failing(&mut self.failing_since[index], failing);
            let held = self.hold.as_ref().is_some_and(|hold| hold.partitions.contains(&partition));
            // Acquire: pairs with the committer's Release store in `commit_loop`.
            let full = shared.metadata_full[index].load(Ordering::Acquire);
            let wanted = failing || held || full;
            Self::pause_or_resume(&mut self.paused[index], wanted, member, partition);
        }
    }

    /// Lifts the hold once every partition it waits on is committed up to its offset.
    pub(super) fn lift_hold_once_drained<M: Member>(&mut self, member: &M) {
        let Some(hold) = &self.hold else {
            return;
        };
        let drained = hold.until_committed.iter().all(|&(partition, offset)| {
            member.committed(partition).ok().flatten().is_some_and(|commit| commit.offset >= offset)
        });
        if drained {
            self.held = self.held_since.elapsed();
            self.hold = None;
        }
    }

    /// Starts a partition's failure pause clock when a record of it starts failing, and
    /// stops it once none does; returns the length of a pause that ended (zero otherwise).
    pub(super) fn time_failing(failing_since: &mut Option<Instant>, failing: bool) -> Duration {
        match (failing, *failing_since) {
            (true, None) => {
                *failing_since = Some(Instant::now());
                Duration::ZERO
            }
            (false, Some(since)) => {
                *failing_since = None;
                since.elapsed()
            }
            _ => Duration::ZERO,
        }
    }

    /// Pauses or resumes `partition` when `wanted` differs from `paused`; `paused` follows
    /// only a change the transport made, so a refused one is tried again next time.
    pub(super) fn pause_or_resume<M: Member>(
        paused: &mut bool,
        wanted: bool,
        member: &M,
        partition: u32,
    ) {
        if wanted == *paused {
            return;
        }
        let changed = if wanted { member.pause(&[partition]) } else { member.resume(&[partition]) };
        if changed.is_ok() {
            *paused = wanted;
        }
    }

    /// The time spent paused by failures, and held.
    pub(super) fn finish(self) -> (Duration, Duration) {
        let still_failing: Duration =
            self.failing_since.iter().flatten().map(|since| since.elapsed()).sum();
        let held = if self.hold.is_some() { self.held_since.elapsed() } else { self.held };
        (self.failure_pause + still_failing, held)
    }
}
