//! Step 4: the committer thread and what it saw.

use super::pipeline::since_ns;
use super::shared::Shared;
use crate::pipeline::transport::{Commit, Member};
use crate::results::{CallSamples, FailedCommits, IncarnationReport, LagPoint};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// What the committer saw over an incarnation.
#[derive(Debug, Default)]
pub(super) struct Ticks {
    pub(super) commits: u64,
    pub(super) failed: FailedCommits,
    pub(super) lag_timeline: Vec<LagPoint>,
    pub(super) longest_freeze: Duration,
    pub(super) max_metadata_bytes: usize,
    pub(super) paused_ticks: u64,
    pub(super) calls: CallSamples,
}

impl Ticks {
    /// Copies what the committer saw into the incarnation's report.
    pub(super) fn write_to(self, report: &mut IncarnationReport) {
        report.commits += self.commits;
        report.failed.merge(self.failed);
        report.lag_timeline = self.lag_timeline;
        report.longest_freeze_s = self.longest_freeze.as_secs_f64();
        report.max_metadata_bytes = self.max_metadata_bytes;
        report.paused_ticks = self.paused_ticks;
        report.calls.merge(&self.calls);
    }
}

/// Step 4's thread, and the flag that stops it.
pub(super) struct Committer {
    pub(super) thread: thread::JoinHandle<Ticks>,
    /// Raised once the incarnation ends: the committer makes no commit after its current
    /// tick.
    pub(super) stop: Arc<AtomicBool>,
}

impl Committer {
    /// Starts committing, every `commit_interval`, each partition the incarnation resumed.
    pub(super) fn start<M: Member + 'static>(shared: &Arc<Shared>, member: &Arc<M>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let shared = Arc::clone(shared);
            let member = Arc::clone(member);
            let stop = Arc::clone(&stop);
            thread::Builder::new()
                .name("pipeline-committer".into())
                .spawn(move || commit_loop(&shared, member.as_ref(), &stop))
                .unwrap_or_else(|error| panic!("cannot start the committer: {error}"))
        };
        Self { thread, stop }
    }

    /// Stops it and returns what it saw.
    pub(super) fn stop(self) -> Ticks {
        // Release: pairs with the committer's Acquire load in `commit_loop`.
        self.stop.store(true, Ordering::Release);
        self.thread.join().unwrap_or_else(|_| panic!("the committer panicked"))
    }
}

/// Step 4: commits every `commit_interval` until told to stop; a partition only when its
/// commit (offset or metadata) changed since the member's last one of it, as a Kafka
/// client's commit of its consumed offsets does.
pub(super) fn commit_loop<M: Member>(shared: &Shared, member: &M, stop: &AtomicBool) -> Ticks {
    let mut ticks = Ticks::default();
    // Per partition of the log: the committed offset last seen, when it last moved, and
    // the highest completed offset at that time.
    let mut last: Vec<(u64, Instant, Option<u64>)> =
        shared.progress.iter().map(|_| (u64::MAX, Instant::now(), None)).collect();
    // Per partition: the member's last commit the group took, while it owns the partition.
    let mut stored: Vec<Option<(u64, String)>> = vec![None; shared.progress.len()];
    // Acquire: pairs with the Release store in `Committer::stop`; a dead consumer commits
    // nothing.
    while !stop.load(Ordering::Acquire) && !shared.is_dead() {
        thread::sleep(shared.config.commit_interval);
        let now = Instant::now();
        let mut lag = 0;
        let mut paused = false;
        for (index, slot) in shared.progress.iter().enumerate() {
            if shared.is_dead() {
                return ticks;
            }
            let state = slot.lock().as_ref().map(|progress| {
                (
                    progress.commit(),
                    progress.lag(),
                    progress.needs_pause(),
                    progress.highest_completed(),
                )
            });
            let Some((commit, partition_lag, pause, highest)) = state else {
                stored[index] = None;
                continue;
            };
            let (last_offset, since, last_highest) = &mut last[index];
            if commit.offset != *last_offset {
                (*last_offset, *since, *last_highest) = (commit.offset, now, highest);
            } else if highest != *last_highest {
                ticks.longest_freeze = ticks.longest_freeze.max(now - *since);
            }
            ticks.max_metadata_bytes = ticks.max_metadata_bytes.max(commit.metadata.len());
            commit_if_moved(member, index as u32, commit, &mut stored[index], &mut ticks);
            lag += partition_lag;
            paused |= pause;
            // Release: pairs with the poll loop's Acquire load in `Pauses::reconcile`.
            shared.metadata_full[index].store(pause, Ordering::Release);
        }
        let at_s = now.duration_since(shared.epoch).as_secs_f64();
        ticks.lag_timeline.push(LagPoint { at_s, lag });
        ticks.paused_ticks += u64::from(paused);
    }
    ticks
}

/// Commits `partition` unless `commit` is what the member last stored of it.
pub(super) fn commit_if_moved<M: Member>(
    member: &M,
    partition: u32,
    commit: Commit,
    stored: &mut Option<(u64, String)>,
    ticks: &mut Ticks,
) {
    if stored
        .as_ref()
        .is_some_and(|(offset, text)| *offset == commit.offset && *text == commit.metadata)
    {
        return;
    }
    let called = Instant::now();
    let committed = member.commit(partition, commit.offset, &commit.metadata);
    ticks.calls.commit(since_ns(called));
    match committed {
        Ok(()) => {
            ticks.commits += 1;
            *stored = Some((commit.offset, commit.metadata));
        }
        // Tried again at the next tick.
        Err(error) => ticks.failed.add(&error),
    }
}
