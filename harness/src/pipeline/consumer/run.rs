//! One incarnation as it runs: steps 1, 2 and 5 of the module docs, and `run_incarnation`,
//! which runs every step in order.

use super::committer::Committer;
use super::config::{Incarnation, Signal, Stop};
use super::error::ConsumerError;
use super::handle::{handle, wait_for_crash};
use super::pauses::Pauses;
use super::pipeline::{since_ns, Pipeline};
use super::shared::{Shared, FROM_RETRY_TOPIC};
use crate::pipeline::log::Record;
use crate::pipeline::transport::{Member, RebalanceListener, TransportError};
use crate::results::{IncarnationReport, RetryPolicy};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use strategies::{Design, Job, Key, Message, Strategy, StrategyConfig};

/// Runs one incarnation of `member` with a new executor: whatever partitions the member
/// owns or the group assigns it while it runs; returns what it did. The steps are the
/// module docs' steps 1 to 5.
pub fn run_incarnation<M: Member + 'static>(
    pipeline: &Pipeline,
    member: &Arc<M>,
    incarnation: Incarnation,
) -> Result<IncarnationReport, ConsumerError> {
    let Incarnation { strategy, strategy_config, config, treat, stop, hold } = incarnation;
    let shared = Arc::new(Shared::new(pipeline, config, treat, &stop));
    let executor = start_executor(strategy, strategy_config, &shared)?;
    let Ok(_enrolled) = pipeline.watch.enrol(&executor) else {
        executor.force_close();
        return Err(ConsumerError::Cancelled);
    };
    let started = Instant::now();
    let report = IncarnationReport {
        member: member.id().0,
        started_at_s: started.duration_since(pipeline.epoch).as_secs_f64(),
        ..IncarnationReport::default()
    };
    let mut run = Run {
        member: member.as_ref(),
        shared: &shared,
        stop: &stop,
        pauses: Pauses::new(pipeline.partitions(), hold),
        report,
        committer: None,
        has_assignment: false,
        ended: false,
        error: None,
    };
    // Step 1 for what the member already owns; a member that owns nothing (new, restarted
    // or just revoked) is assigned its partitions at its first poll.
    let owned = member.assignment();
    if !owned.is_empty() {
        run.assigned(&owned);
    }
    run.committer = Some(Committer::start(&shared, member));
    let stopper = Stopper::start(&stop, &shared, &executor);
    run.poll_loop(executor.as_ref());
    run.wait_for_the_end(executor.as_ref());
    let stopped = stopper.map(Stopper::join);
    run.finish(executor.as_ref(), started, stopped.flatten())
}

/// Under [`Stop::Until`], a thread that waits for the signal and then kills the
/// incarnation and force-closes its executor: from outside the poll loop, since a submit
/// blocked on a full window holds the loop until the forced close fails it.
pub(super) struct Stopper {
    /// Raised once the incarnation has ended otherwise (cancelled, or failed): the thread
    /// then returns without closing anything.
    pub(super) over: Arc<AtomicBool>,
    pub(super) thread: thread::JoinHandle<Option<strategies::ForcedClose>>,
}

impl Stopper {
    /// The stopper of an incarnation that ends by `stop`: none but for [`Stop::Until`].
    pub(super) fn start(
        stop: &Stop,
        shared: &Arc<Shared>,
        executor: &Arc<dyn Strategy>,
    ) -> Option<Self> {
        let Stop::Until { signal } = stop else { return None };
        let over = Arc::new(AtomicBool::new(false));
        let (signal, shared, executor) = (signal.clone(), Arc::clone(shared), Arc::clone(executor));
        let done = Arc::clone(&over);
        let thread = thread::spawn(move || loop {
            if signal.is_raised() {
                shared.die();
                return Some(executor.force_close());
            }
            // Acquire: pairs with the Release store of `join`.
            if done.load(Ordering::Acquire) || shared.watch.is_cancelled() {
                return None;
            }
            thread::sleep(Duration::from_micros(500));
        });
        Some(Self { over, thread })
    }

    /// Ends the thread: what its forced close counted, where it closed the executor.
    pub(super) fn join(self) -> Option<strategies::ForcedClose> {
        // Release: pairs with the thread's Acquire load.
        self.over.store(true, Ordering::Release);
        self.thread.join().ok().flatten()
    }
}

/// One incarnation as it runs: its poll loop (step 2), the waits and the end (step 5), and
/// its member's rebalance listener, which resumes partitions as the group assigns them
/// (step 1) and ends the incarnation, there and then, when the group revokes them.
pub(super) struct Run<'a, M: Member> {
    pub(super) member: &'a M,
    pub(super) shared: &'a Shared,
    pub(super) stop: &'a Stop,
    pub(super) pauses: Pauses,
    pub(super) report: IncarnationReport,
    /// Step 4's thread, until the incarnation ends.
    pub(super) committer: Option<Committer>,
    /// Whether the group has given the member its assignment (possibly empty).
    pub(super) has_assignment: bool,
    /// Whether step 5 ran: in a revocation's callback, or after the poll loop.
    pub(super) ended: bool,
    /// The first failure inside a callback, which cannot return it.
    pub(super) error: Option<ConsumerError>,
}

impl<M: Member> RebalanceListener for Run<'_, M> {
    fn assigned(&mut self, partitions: &[u32]) {
        if !std::mem::replace(&mut self.has_assignment, true) {
            if let Stop::Revoked { signal, .. } = self.stop {
                signal.enter_assigned();
            }
        }
        let taken = self
            .shared
            .resume(self.member, partitions)
            .and_then(|()| self.member.resume(partitions).map_err(ConsumerError::from));
        self.pauses.unpaused(partitions);
        if let Err(error) = taken {
            self.error.get_or_insert(error);
        }
    }

    /// The group takes partitions away (or the member leaves): the incarnation gives up
    /// every partition it runs while it still owns them (step 5), and is over.
    fn revoked(&mut self, _partitions: &[u32]) {
        if let Err(error) = self.end(true) {
            self.error.get_or_insert(error);
        }
    }
}

impl<'a, M: Member> Run<'a, M> {
    /// Whether the poll loop must stop: dead (crashed, or revoked), or cancelled.
    pub(super) fn stopped(&self) -> bool {
        self.shared.is_dead()
            || self.ended
            || self.shared.watch.is_cancelled()
            || matches!(self.stop, Stop::Until { signal } if signal.is_raised())
    }

    /// Whether the member is to leave the group now.
    pub(super) fn leaving(&self) -> bool {
        matches!(self.stop, Stop::Revoked { signal, leave: true } if signal.is_raised())
    }

    /// Whether the member has its assignment and has polled each partition of it to the
    /// partition's high watermark.
    pub(super) fn consumed(&self) -> bool {
        let member = self.member;
        self.has_assignment
            && member.assignment().into_iter().all(|partition| {
                let end = member.high_watermark(partition).unwrap_or(u64::MAX);
                member.position(partition).is_some_and(|position| position >= end)
            })
    }

    /// Step 2: polls and submits until the member's partitions are consumed (and the retry
    /// topic settled), the crash, the revocation or the leave.
    pub(super) fn poll_loop(&mut self, executor: &dyn Strategy) {
        let (member, shared): (&'a M, &'a Shared) = (self.member, self.shared);
        let submit = |record: &Record, tag: u32| {
            let message = Message {
                key: Key::new(0, record.key),
                seq: record.offset,
                intended_ns: record.produce_ns,
                job: Job::Custom(record.partition | tag),
            };
            executor.submit(message).is_ok()
        };
        loop {
            if self.stopped() || self.error.is_some() {
                return;
            }
            if self.leaving() {
                member.leave(self);
                return;
            }
            self.pauses.reconcile(member, shared);
            let due = shared.side.due(since_ns(shared.epoch));
            let failed = shared.side_failure.lock().take();
            let due = match (due, failed) {
                (Ok(due), None) => due,
                (Err(error), _) | (_, Some(error)) => {
                    self.error = Some(error.into());
                    return;
                }
            };
            for (partition, offset) in due {
                let record = shared.records[partition as usize][offset as usize];
                self.report.retry_polls += u64::from(submit(&record, FROM_RETRY_TOPIC));
            }
            let records = match member.poll(shared.config.max_poll_records, self) {
                Ok(records) => records,
                Err(error) => {
                    self.error = Some(error.into());
                    return;
                }
            };
            self.report.calls.poll(records.len());
            if records.is_empty() && self.done() {
                return;
            }
            if records.is_empty() {
                thread::sleep(Duration::from_micros(100)); // paced, paused or retrying: wait
                continue;
            }
            self.submit_polled(records, &submit);
        }
    }

    /// Whether a poll that returned nothing means the loop is over: the member's partitions
    /// are consumed and, under retry-topic, every submitted record is settled or handed off
    /// (a record still running may yet go to the retry topic).
    pub(super) fn done(&self) -> bool {
        let shared = self.shared;
        let retrying = shared.config.retry.policy == RetryPolicy::RetryTopic
            && (shared.completed.load(Ordering::Acquire) < self.report.submitted
                // Acquire: pairs with the Release decrement of a settled retry.
                || shared.retries_outstanding.load(Ordering::Acquire) > 0);
        self.consumed() && !retrying
    }

    /// Step 2 for one poll's `records`: each is marked polled and submitted, unless the
    /// metadata says it completed before; stops early once the incarnation stops or leaves.
    pub(super) fn submit_polled(
        &mut self,
        records: Vec<Record>,
        submit: &dyn Fn(&Record, u32) -> bool,
    ) {
        for record in records {
            if self.stopped() || self.leaving() {
                break;
            }
            self.report.polled += 1;
            let fresh = self.shared.progress[record.partition as usize]
                .lock()
                .as_mut()
                .is_some_and(|progress| progress.polled(record.offset));
            if !fresh {
                self.report.skipped_done += 1;
                continue;
            }
            self.report.submitted += u64::from(submit(&record, 0));
        }
    }

    /// Step 5, once the poll loop has returned: waits for what the way the incarnation ends
    /// waits for (the executor drained, the crash point, or the revocation); at once where
    /// the watch was cancelled (its forced close ends a drain) or the incarnation ended.
    pub(super) fn wait_for_the_end(&mut self, executor: &dyn Strategy) {
        if self.shared.watch.is_cancelled() || self.ended || self.error.is_some() {
            return;
        }
        let stop: &'a Stop = self.stop;
        match stop {
            Stop::AtEnd => executor.drain(),
            Stop::CrashAfter { idle, .. } => wait_for_crash(self.shared, *idle),
            Stop::Until { signal } => {
                while !signal.is_raised() && !self.shared.watch.is_cancelled() {
                    thread::sleep(Duration::from_micros(200));
                }
            }
            Stop::Revoked { signal, leave } => {
                // Consumed before the revocation: settle what is in flight, then wait for it.
                executor.drain();
                signal.enter_idle();
                self.wait_for_revocation(signal, *leave);
            }
        }
    }

    /// Polls for nothing but the group's callbacks, as a member must for the group to reach
    /// it, until the revocation has ended the incarnation, or until `signal` is raised
    /// where the member is to `leave`, and then leaves.
    pub(super) fn wait_for_revocation(&mut self, signal: &Signal, leave: bool) {
        let member: &'a M = self.member;
        while !self.ended && self.error.is_none() && !self.shared.watch.is_cancelled() {
            if leave && signal.is_raised() {
                member.leave(self);
                return;
            }
            if let Err(error) = member.poll(0, self) {
                self.error = Some(error.into());
                return;
            }
            thread::sleep(Duration::from_micros(200));
        }
    }

    /// Step 5's end, once: nothing applies any more (unless the log was consumed to its
    /// end), the committer stops, what completed is committed (unless crashed), and what
    /// the commits do not cover is counted. A `revocation` runs in the group's callback,
    /// while the member still owns its partitions; a cancelled incarnation only dies.
    pub(super) fn end(&mut self, revocation: bool) -> Result<(), ConsumerError> {
        if std::mem::replace(&mut self.ended, true) {
            return Ok(());
        }
        let (member, shared) = (self.member, self.shared);
        let owned = member.assignment();
        let at_end = matches!(self.stop, Stop::AtEnd) && !revocation;
        let cancelled = shared.watch.is_cancelled();
        if !at_end || cancelled {
            shared.die();
            self.report.in_flight_at_end = shared.in_flight(&owned);
        }
        if let Some(committer) = self.committer.take() {
            committer.stop().write_to(&mut self.report);
        }
        if cancelled {
            return Ok(());
        }
        if revocation || !matches!(self.stop, Stop::CrashAfter { .. }) {
            commit_completed(shared, member, &owned, &mut self.report)?;
        } else {
            member.crash();
        }
        if !at_end {
            self.report.uncommitted_at_end = uncommitted(member, &owned);
        }
        Ok(())
    }

    /// The rest of step 5: the executor closed (drained at the end, forced otherwise) and
    /// the report completed; a cancelled incarnation or a failed callback is an error.
    pub(super) fn finish(
        mut self,
        executor: &dyn Strategy,
        started: Instant,
        stopped: Option<strategies::ForcedClose>,
    ) -> Result<IncarnationReport, ConsumerError> {
        let revoked = self.ended;
        if let Err(error) = self.end(false) {
            self.error.get_or_insert(error);
        }
        if let Some(error) = self.shared.side_failure.lock().take() {
            self.error.get_or_insert(error.into());
        }
        if self.shared.watch.is_cancelled() {
            executor.force_close();
            return Err(ConsumerError::Cancelled);
        }
        if let Some(error) = self.error.take() {
            self.shared.die();
            executor.force_close();
            return Err(error);
        }
        let Self { shared, stop, pauses, mut report, .. } = self;
        let (failure_pause, held) = pauses.finish();
        report.failure_pause_s = failure_pause.as_secs_f64();
        report.held_s = held.as_secs_f64();
        if matches!(stop, Stop::AtEnd) && !revoked {
            executor.close();
        } else {
            // A stopper's forced close came first; a second one counts nothing.
            report.forced = stopped.unwrap_or_else(|| executor.force_close()).into();
        }
        report.completed = shared.completed.load(Ordering::Relaxed);
        report.retries = shared.retries.load(Ordering::Relaxed);
        report.dead_lettered = shared.dead_lettered.load(Ordering::Relaxed);
        report.elapsed_s = started.elapsed().as_secs_f64();
        Ok(report)
    }
}

/// Step 5 at the end or a revocation: commits what completed in each of `owned`. A commit
/// the group refuses because the member no longer owns the partition (the group moved on:
/// a session that ended while no coordinator answered) is counted and left: it can only
/// bring records back to the next owner, never skip one. Any other failure ends the
/// incarnation.
pub(super) fn commit_completed<M: Member>(
    shared: &Shared,
    member: &M,
    owned: &[u32],
    report: &mut IncarnationReport,
) -> Result<(), ConsumerError> {
    for &partition in owned {
        let slot = shared.progress.get(partition as usize);
        let Some(commit) = slot.and_then(|slot| slot.lock().as_ref().map(|p| p.commit())) else {
            continue;
        };
        report.max_metadata_bytes = report.max_metadata_bytes.max(commit.metadata.len());
        let called = Instant::now();
        let committed = member.commit(partition, commit.offset, &commit.metadata);
        report.calls.commit(since_ns(called));
        match committed {
            Ok(()) => report.commits += 1,
            Err(error @ (TransportError::NotAssigned { .. } | TransportError::Fenced { .. })) => {
                report.failed.add(&error);
            }
            Err(error) => {
                report.failed.add(&error);
                return Err(error.into());
            }
        }
    }
    Ok(())
}

/// Records the member polled that the group's commits do not cover, summed over `owned`:
/// at most what the next owner runs again.
pub(super) fn uncommitted<M: Member>(member: &M, owned: &[u32]) -> u64 {
    owned
        .iter()
        .map(|&partition| {
            let position = member.position(partition).unwrap_or(0);
            let committed = member.committed(partition).ok().flatten();
            position.saturating_sub(committed.map_or(0, |commit| commit.offset))
        })
        .sum()
}

/// Builds the executor, whose handler runs step 3 on `shared`.
pub(super) fn start_executor(
    strategy: Design,
    strategy_config: StrategyConfig,
    shared: &Arc<Shared>,
) -> Result<Arc<dyn Strategy>, ConsumerError> {
    let handler = {
        let shared = Arc::clone(shared);
        move |message: &Message| handle(&shared, message)
    };
    strategy
        .build(strategy_config, Arc::new(handler))
        .map(Arc::from)
        .map_err(|error| ConsumerError::Build { strategy, reason: error.to_string() })
}
