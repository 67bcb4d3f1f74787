//! A consumer group member: it polls its partitions through a [`Transport`], hands every
//! record to an executor (any `strategies::Strategy`), applies it to the projection in the
//! handler, tracks completions per partition and commits them by policy; and it can die
//! without a final commit, so that a new one resumes where the commits say.
//!
//! # One incarnation, step by step
//!
//! 1. **Resume.** For each assigned partition, a [`PartitionProgress`] is built from the
//!    group's committed [`Commit`] (and its metadata, under `contiguous+metadata`), and the
//!    member's positions go back to the committed offsets.
//! 2. **Poll and submit** (the calling thread, the executor's producer). Up to
//!    `max_poll_records` records per poll, each partition in offset order. A record the
//!    metadata says completed before the restart is skipped; every other one is marked
//!    polled and submitted as a message: the aggregate id is the key, the offset the
//!    sequence number, the partition in `Job::Custom` (a partition's offsets are
//!    increasing, so each key's messages are submitted in offset order). A full window
//!    blocks the poll loop, as an executor's back-pressure stops a real consumer's polls.
//! 3. **Handle** (an executor thread). The handler counts the delivery in the [`Ledger`],
//!    asks the incarnation's [`Treat`] what to do (run it, or leave it pending for ever, a
//!    record stuck on a lock or a dead dependency), spins the record's CPU, applies it to
//!    the [`Projection`] and only then marks it completed in its partition's progress: a
//!    commit never covers an effect that has not happened.
//! 4. **Commit** (a committer thread, every `commit_interval`). For each partition, the
//!    progress's [`PartitionProgress::commit`] goes to the transport; a partition whose
//!    metadata would pass 75% of its limit is paused, and resumed once it falls back.
//!    Every tick samples the committed-offset lag (summed over the partitions) and how
//!    long each partition's committed offset has stood still while records completed.
//! 5. **End.** Either the log is consumed: the poll loop stops at the end offsets, drains
//!    the executor, stops the committer and commits a last time. Or the incarnation
//!    crashes ([`Stop::CrashAfter`]): the moment the crash point is reached, the process is
//!    as good as dead: no record starts or applies any more, no commit is made (the last
//!    one is the previous periodic commit), the poll loop stops and the executor is
//!    force-closed (queued records discarded, stuck ones abandoned). Effects applied
//!    before the crash point stay applied; the next incarnation redelivers what the last
//!    commit did not cover.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use strategies::{ForcedClose, Job, Key, Message, Outcome, Strategy, StrategyConfig, StrategyId};

use super::commit::{CommitError, CommitPolicy, MetadataLimit, PartitionProgress};
use super::lock;
use super::log::Record;
use super::projection::Projection;
use super::transport::{EmbeddedTransport, MemberId, Transport, TransportError};
use crate::measure::handler::spin;
use crate::measure::timer::Timer;

/// Kafka's default `max.poll.records`.
pub const DEFAULT_MAX_POLL_RECORDS: usize = 500;

/// How a consumer polls, commits and handles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerConfig {
    /// Which offset each commit names, and what rides in its metadata.
    pub policy: CommitPolicy,
    /// Time between two periodic commits.
    pub commit_interval: Duration,
    /// The most metadata bytes one partition's commit may carry.
    pub metadata_limit: MetadataLimit,
    /// The most records one poll returns.
    pub max_poll_records: usize,
    /// CPU each record's handler burns before it applies the record, in nanoseconds.
    pub spin_ns: u64,
}

/// What the handler does with a record, decided per incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Treatment {
    /// Run it: spin, apply, complete.
    Run,
    /// Spin, then wait this long without a thread (a slow dependency, pending on the
    /// harness timer), then apply and complete.
    Wait(Duration),
    /// Leave it pending for ever: it never applies nor completes (until a forced close
    /// abandons it).
    Stall,
}

/// Decides each record's [`Treatment`].
pub type Treat = Arc<dyn Fn(&Record) -> Treatment + Send + Sync>;

/// How an incarnation ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// Consume to the end offsets, drain, commit a last time.
    AtEnd,
    /// Die the moment this many records completed, or once the log is consumed and nothing
    /// completed for `idle` (records stuck, or waiting behind stuck ones, may keep the
    /// count from ever being reached), without a final commit (module docs, step 5).
    CrashAfter {
        /// Completions, in this incarnation, after which it dies.
        completions: u64,
        /// How long a consumed log may see no completion before the consumer dies anyway.
        idle: Duration,
    },
}

/// How often each record of the log reached a handler and was applied, over every
/// incarnation: what was lost (never applied) and what was redelivered (delivered more
/// than once).
#[derive(Debug)]
pub struct Ledger {
    /// Per partition, per offset: handler calls.
    deliveries: Vec<Vec<AtomicU32>>,
    /// Per partition, per offset: applications to the projection.
    applications: Vec<Vec<AtomicU32>>,
}

/// A record's counters in a [`Ledger`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Handler calls.
    pub delivered: u32,
    /// Applications to the projection.
    pub applied: u32,
}

impl Ledger {
    /// A ledger for a log whose partitions end at `end_offsets` (the log is produced
    /// before it is consumed).
    pub fn new(end_offsets: &[u64]) -> Self {
        let counters = || -> Vec<Vec<AtomicU32>> {
            end_offsets.iter().map(|&end| (0..end).map(|_| AtomicU32::new(0)).collect()).collect()
        };
        Self { deliveries: counters(), applications: counters() }
    }

    /// A record's counter in `counters`; `None` for a record outside the ledger.
    fn slot(counters: &[Vec<AtomicU32>], partition: u32, offset: u64) -> Option<&AtomicU32> {
        counters.get(partition as usize)?.get(usize::try_from(offset).ok()?)
    }

    fn count(counters: &[Vec<AtomicU32>], partition: u32, offset: u64) {
        if let Some(count) = Self::slot(counters, partition, offset) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One record's counters (zero for a record outside the ledger).
    pub fn of(&self, partition: u32, offset: u64) -> Delivery {
        let read = |counters: &[Vec<AtomicU32>]| {
            Self::slot(counters, partition, offset).map_or(0, |count| count.load(Ordering::Relaxed))
        };
        Delivery { delivered: read(&self.deliveries), applied: read(&self.applications) }
    }

    /// Records never applied (lost), and records delivered more than once (redelivered).
    pub fn lost_and_redelivered(&self) -> (u64, u64) {
        let lost =
            self.applications.iter().flatten().filter(|count| count.load(Ordering::Relaxed) == 0);
        let redelivered =
            self.deliveries.iter().flatten().filter(|count| count.load(Ordering::Relaxed) > 1);
        (lost.count() as u64, redelivered.count() as u64)
    }
}

/// What outlives every consumer of a run: the log and the group's commits, the business
/// state, the ledger of deliveries, and the timer that ends the slow records' waits.
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// The log and the consumer group's commits.
    pub transport: Arc<EmbeddedTransport>,
    /// The business state the handlers build.
    pub projection: Arc<Projection>,
    /// How often each record was delivered and applied.
    pub ledger: Arc<Ledger>,
    /// Completes the waits of [`Treatment::Wait`].
    pub timer: Timer,
}

impl Pipeline {
    /// A pipeline over `transport`'s log as it stands (produced before it is consumed),
    /// with an empty projection and ledger.
    pub fn new(transport: Arc<EmbeddedTransport>, timer: Timer) -> Self {
        let ledger = Arc::new(Ledger::new(&transport.end_offsets()));
        Self { transport, projection: Arc::new(Projection::new()), ledger, timer }
    }
}

/// What one incarnation of a consumer did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IncarnationReport {
    /// Records polled.
    pub polled: u64,
    /// Records skipped because the commit metadata says they completed before.
    pub skipped_done: u64,
    /// Records submitted to the executor.
    pub submitted: u64,
    /// Records completed (applied and marked in their partition's progress).
    pub completed: u64,
    /// Periodic and final commits (one per partition each).
    pub commits: u64,
    /// The committed-offset lag at each commit tick, summed over the partitions: records
    /// completed above each partition's committed offset.
    pub lag_samples: Vec<u64>,
    /// The longest time one partition's committed offset stood still while records of it
    /// completed, in seconds.
    pub longest_freeze_s: f64,
    /// The most metadata bytes one commit carried.
    pub max_metadata_bytes: usize,
    /// Ticks at which some partition was paused by the metadata back-pressure.
    pub paused_ticks: u64,
    /// What the forced close of a crash discarded and abandoned (zero when it ran to the
    /// end).
    pub forced: ForcedCloseCounts,
    /// From the first poll to the end (the drain and the last commit, or the crash).
    pub elapsed_s: f64,
}

/// [`ForcedClose`], serializable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForcedCloseCounts {
    /// Queued messages discarded.
    pub discarded: u64,
    /// Pending steps abandoned.
    pub abandoned: u64,
}

impl From<ForcedClose> for ForcedCloseCounts {
    fn from(forced: ForcedClose) -> Self {
        Self { discarded: forced.discarded, abandoned: forced.abandoned }
    }
}

/// Why an incarnation could not run.
#[derive(Debug, thiserror::Error)]
pub enum ConsumerError {
    /// The executor could not be built with these settings.
    #[error("cannot build {strategy}: {reason}")]
    Build {
        /// The strategy.
        strategy: StrategyId,
        /// What was wrong.
        reason: String,
    },
    /// A committed offset's metadata could not be resumed from.
    #[error("partition {partition}: {source}")]
    Resume {
        /// The partition.
        partition: u32,
        /// What was wrong.
        source: CommitError,
    },
    /// The transport refused a commit.
    #[error(transparent)]
    Transport(#[from] TransportError),
}

/// What the consumer and its handler and committer share.
struct Shared {
    /// Per partition of the topic: its progress (`None` for a partition not assigned).
    progress: Vec<Mutex<Option<PartitionProgress>>>,
    /// Every record, by partition and offset (the log is produced before it is consumed).
    records: Vec<Vec<Record>>,
    completed: AtomicU64,
    /// Raised by the handler once the crash point is reached.
    crash: AtomicBool,
    /// Completes the waits of [`Treatment::Wait`].
    timer: Timer,
    crash_after: Option<u64>,
}

/// Runs one incarnation of `member` over its current assignment in the pipeline's
/// transport, with a new `strategy` executor built from `strategy_config`; returns what it
/// did.
pub fn run_incarnation(
    pipeline: &Pipeline,
    member: MemberId,
    strategy: StrategyId,
    strategy_config: StrategyConfig,
    config: ConsumerConfig,
    treat: Treat,
    stop: Stop,
) -> Result<IncarnationReport, ConsumerError> {
    let Pipeline { transport, projection, ledger, timer } = pipeline;
    let assigned = transport.assignment(member);
    let partitions = transport.partitions();
    let mut progress = Vec::with_capacity(partitions as usize);
    for partition in 0..partitions {
        let resumed = if assigned.contains(&partition) {
            let committed = transport.committed(partition);
            let resumed =
                PartitionProgress::resume(committed.as_ref(), config.policy, config.metadata_limit)
                    .map_err(|source| ConsumerError::Resume { partition, source })?;
            Some(resumed)
        } else {
            None
        };
        progress.push(Mutex::new(resumed));
    }
    transport.seek_to_committed(member);
    let records = transport.with_topic(|topic| {
        (0..partitions)
            .map(|partition| topic.partition(partition).map(|p| p.records().to_vec()))
            .collect::<Result<Vec<_>, _>>()
    });
    let records = records.map_err(TransportError::Log)?;
    let shared = Arc::new(Shared {
        progress,
        records,
        completed: AtomicU64::new(0),
        crash: AtomicBool::new(false),
        timer: timer.clone(),
        crash_after: match stop {
            Stop::AtEnd => None,
            Stop::CrashAfter { completions, .. } => Some(completions),
        },
    });

    let handler = {
        let shared = Arc::clone(&shared);
        let projection = Arc::clone(projection);
        let ledger = Arc::clone(ledger);
        move |message: &Message| handle(&shared, &projection, &ledger, &treat, config, message)
    };
    let executor = strategy
        .build(strategy_config, Arc::new(handler))
        .map_err(|error| ConsumerError::Build { strategy, reason: error.to_string() })?;

    let started = Instant::now();
    let mut report = IncarnationReport::default();
    let committer_stop = Arc::new(AtomicBool::new(false));
    let committer = {
        let shared = Arc::clone(&shared);
        let transport = Arc::clone(transport);
        let committer_stop = Arc::clone(&committer_stop);
        let assigned = assigned.clone();
        thread::Builder::new()
            .name("pipeline-committer".into())
            .spawn(move || {
                commit_loop(&shared, &transport, member, &assigned, config, &committer_stop)
            })
            .unwrap_or_else(|error| panic!("cannot start the committer: {error}"))
    };

    poll_loop(
        transport.as_ref(),
        member,
        &assigned,
        &shared,
        executor.as_ref(),
        config,
        &mut report,
    );

    if let Stop::CrashAfter { idle, .. } = stop {
        wait_for_crash(&shared, idle);
    }
    let crashed = shared.crash.load(Ordering::Acquire);
    if !crashed {
        executor.drain();
    }
    // Release: pairs with the committer's Acquire load.
    committer_stop.store(true, Ordering::Release);
    let ticks = committer.join().unwrap_or_else(|_| panic!("the committer panicked"));
    report.commits += ticks.commits;
    report.lag_samples = ticks.lag_samples;
    report.longest_freeze_s = ticks.longest_freeze.as_secs_f64();
    report.max_metadata_bytes = ticks.max_metadata_bytes;
    report.paused_ticks = ticks.paused_ticks;
    if crashed {
        report.forced = executor.force_close().into();
    } else {
        for &partition in &assigned {
            let commit = lock(&shared.progress[partition as usize]).as_ref().map(|p| p.commit());
            if let Some(commit) = commit {
                report.max_metadata_bytes = report.max_metadata_bytes.max(commit.metadata.len());
                transport.commit(member, partition, commit)?;
                report.commits += 1;
            }
        }
        executor.close();
    }
    report.completed = shared.completed.load(Ordering::Relaxed);
    report.elapsed_s = started.elapsed().as_secs_f64();
    Ok(report)
}

/// The log is consumed but the crash point was not reached: waits until it is, or until no
/// record completed for `idle`, and then crashes.
fn wait_for_crash(shared: &Shared, idle: Duration) {
    let mut seen = shared.completed.load(Ordering::Relaxed);
    let mut since = Instant::now();
    // Acquire: pairs with the handler's Release store.
    while !shared.crash.load(Ordering::Acquire) {
        thread::sleep(Duration::from_micros(500));
        let now = shared.completed.load(Ordering::Relaxed);
        if now != seen {
            (seen, since) = (now, Instant::now());
        } else if since.elapsed() >= idle {
            shared.crash.store(true, Ordering::Release);
        }
    }
}

/// Step 3: one record in the handler.
fn handle(
    shared: &Arc<Shared>,
    projection: &Arc<Projection>,
    ledger: &Arc<Ledger>,
    treat: &Treat,
    config: ConsumerConfig,
    message: &Message,
) -> Outcome {
    // Acquire: pairs with the Release store of the completion that reached the crash
    // point: after it the consumer is dead, and nothing it would still run happens.
    if shared.crash.load(Ordering::Acquire) {
        return Outcome::Done;
    }
    let Job::Custom(partition) = message.job else {
        return Outcome::Done;
    };
    let Some(&record) = shared
        .records
        .get(partition as usize)
        .and_then(|records| records.get(usize::try_from(message.seq).ok()?))
    else {
        return Outcome::Done;
    };
    Ledger::count(&ledger.deliveries, record.partition, record.offset);
    match treat(&record) {
        Treatment::Stall => Outcome::Pending(Box::pin(std::future::pending())),
        Treatment::Run => {
            spin(config.spin_ns);
            finish(shared, projection, ledger, record);
            Outcome::Done
        }
        Treatment::Wait(after) => {
            spin(config.spin_ns);
            let sleep = shared.timer.sleep(after);
            let (shared, projection, ledger) =
                (Arc::clone(shared), Arc::clone(projection), Arc::clone(ledger));
            Outcome::Pending(Box::pin(async move {
                sleep.await;
                finish(&shared, &projection, &ledger, record);
            }))
        }
    }
}

/// The end of a record's handling: its effect, then its completion (in that order, so that
/// no commit covers an effect that has not happened), unless the consumer died meanwhile.
fn finish(shared: &Shared, projection: &Projection, ledger: &Ledger, record: Record) {
    if shared.crash.load(Ordering::Acquire) {
        return; // died while this record ran: its effect never happened
    }
    projection.apply(record);
    Ledger::count(&ledger.applications, record.partition, record.offset);
    if let Some(progress) = lock(&shared.progress[record.partition as usize]).as_mut() {
        progress.completed(record.offset);
    }
    let completed = shared.completed.fetch_add(1, Ordering::Relaxed) + 1;
    if shared.crash_after.is_some_and(|after| completed >= after) {
        // Release: pairs with the Acquire loads of the poll loop, the committer and the
        // handlers.
        shared.crash.store(true, Ordering::Release);
    }
}

/// Step 2: polls and submits until the assigned partitions are consumed or the crash.
fn poll_loop(
    transport: &EmbeddedTransport,
    member: MemberId,
    assigned: &[u32],
    shared: &Shared,
    executor: &dyn Strategy,
    config: ConsumerConfig,
    report: &mut IncarnationReport,
) {
    let ends: Vec<(u32, u64)> = assigned
        .iter()
        .map(|&partition| (partition, shared.records[partition as usize].len() as u64))
        .collect();
    loop {
        // Acquire: pairs with the handler's Release store.
        if shared.crash.load(Ordering::Acquire) {
            return;
        }
        let records = transport.poll(member, config.max_poll_records);
        if records.is_empty() {
            let consumed = ends.iter().all(|&(partition, end)| {
                transport.position(member, partition).is_some_and(|position| position >= end)
            });
            if consumed {
                return;
            }
            thread::sleep(Duration::from_micros(100)); // paused partitions: wait for commits
            continue;
        }
        for record in records {
            if shared.crash.load(Ordering::Acquire) {
                return;
            }
            report.polled += 1;
            let fresh = lock(&shared.progress[record.partition as usize])
                .as_mut()
                .is_some_and(|progress| progress.polled(record.offset));
            if !fresh {
                report.skipped_done += 1;
                continue;
            }
            let message = Message {
                key: Key::new(0, record.key),
                seq: record.offset,
                intended_ns: record.produce_ns,
                job: Job::Custom(record.partition),
            };
            if executor.submit(message).is_ok() {
                report.submitted += 1;
            }
        }
    }
}

/// What the committer saw over an incarnation.
#[derive(Debug, Default)]
struct Ticks {
    commits: u64,
    lag_samples: Vec<u64>,
    longest_freeze: Duration,
    max_metadata_bytes: usize,
    paused_ticks: u64,
}

/// Step 4: commits every `commit_interval` until told to stop.
fn commit_loop(
    shared: &Shared,
    transport: &EmbeddedTransport,
    member: MemberId,
    assigned: &[u32],
    config: ConsumerConfig,
    stop: &AtomicBool,
) -> Ticks {
    let mut ticks = Ticks::default();
    // Per assigned partition: the committed offset last seen, when it last moved, and the
    // highest completed offset at that time.
    let mut last: Vec<(u64, Instant, Option<u64>)> =
        assigned.iter().map(|_| (u64::MAX, Instant::now(), None)).collect();
    // Acquire (both): pairs with the Release store in `run_incarnation`, and with the
    // handler's at the crash point (a dead consumer commits nothing).
    while !stop.load(Ordering::Acquire) && !shared.crash.load(Ordering::Acquire) {
        thread::sleep(config.commit_interval);
        let now = Instant::now();
        let mut lag = 0;
        let mut paused = false;
        for (index, &partition) in assigned.iter().enumerate() {
            if shared.crash.load(Ordering::Acquire) {
                return ticks;
            }
            let state = lock(&shared.progress[partition as usize]).as_ref().map(|progress| {
                (
                    progress.commit(),
                    progress.lag(),
                    progress.needs_pause(),
                    progress.highest_completed(),
                )
            });
            let Some((commit, partition_lag, pause, highest)) = state else {
                continue;
            };
            let (last_offset, since, last_highest) = &mut last[index];
            if commit.offset != *last_offset {
                (*last_offset, *since, *last_highest) = (commit.offset, now, highest);
            } else if highest != *last_highest {
                ticks.longest_freeze = ticks.longest_freeze.max(now - *since);
            }
            ticks.max_metadata_bytes = ticks.max_metadata_bytes.max(commit.metadata.len());
            if transport.commit(member, partition, commit).is_ok() {
                ticks.commits += 1;
            }
            lag += partition_lag;
            let _ = if pause {
                paused = true;
                transport.pause(member, &[partition])
            } else {
                transport.resume(member, &[partition])
            };
        }
        ticks.lag_samples.push(lag);
        ticks.paused_ticks += u64::from(paused);
    }
    ticks
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::log::Topic;

    /// One partition of ten records, one key each, version 1.
    fn ten_records() -> Arc<EmbeddedTransport> {
        let transport = EmbeddedTransport::new(Topic::new("events", 1).unwrap());
        for key in 0..10 {
            transport.append_to(0, key, 1, 64, 0).unwrap();
        }
        let transport = Arc::new(transport);
        transport.assign(MemberId(0), &[0]).unwrap();
        transport
    }

    fn config(policy: CommitPolicy) -> ConsumerConfig {
        ConsumerConfig {
            policy,
            commit_interval: Duration::from_millis(1),
            metadata_limit: MetadataLimit::default(),
            max_poll_records: DEFAULT_MAX_POLL_RECORDS,
            spin_ns: 0,
        }
    }

    fn stall_two_and_four() -> Treat {
        Arc::new(
            |record: &Record| {
                if matches!(record.offset, 2 | 4) {
                    Treatment::Stall
                } else {
                    Treatment::Run
                }
            },
        )
    }

    fn run_all() -> Treat {
        Arc::new(|_: &Record| Treatment::Run)
    }

    /// Offsets 2 and 4 never complete, every other one does and is committed (the crash
    /// comes 50 ms after the last completion, 50 commit intervals), then the consumer
    /// crashes; the second incarnation runs to the end. Returns the ledger, the
    /// projection and the second incarnation's report.
    fn crash_with_two_stuck(
        strategy: StrategyId,
        policy: CommitPolicy,
    ) -> (Arc<Ledger>, Arc<Projection>, IncarnationReport) {
        let pipeline = Pipeline::new(ten_records(), Timer::start());
        let incarnation = |treat: Treat, stop: Stop| {
            let settings = StrategyConfig::with_workers(2);
            run_incarnation(&pipeline, MemberId(0), strategy, settings, config(policy), treat, stop)
                .unwrap()
        };
        // Crash once nothing more completes: every completion has been committed.
        let idle = Duration::from_millis(50);
        let first =
            incarnation(stall_two_and_four(), Stop::CrashAfter { completions: u64::MAX, idle });
        if holds_only_its_key(strategy) {
            assert_eq!(first.completed, 8, "{strategy} {policy}: the first incarnation");
        }
        assert!(first.forced.abandoned >= 2, "{strategy} {policy}: the stuck records");
        let second = incarnation(run_all(), Stop::AtEnd);
        (Arc::clone(&pipeline.ledger), Arc::clone(&pipeline.projection), second)
    }

    /// Strategies that can run a stuck record at all: `inline` would wait for it on the
    /// consumer's own thread, for ever.
    fn can_hold_a_stuck_record() -> impl Iterator<Item = StrategyId> {
        StrategyId::ALL.iter().copied().filter(|&id| id != StrategyId::Inline)
    }

    /// Whether a stuck record holds only its own key: hash-serial groups make every key of
    /// its group wait behind it.
    fn holds_only_its_key(strategy: StrategyId) -> bool {
        !matches!(strategy, StrategyId::GroupBy | StrategyId::PerTypePool)
    }

    fn expected_versions() -> std::collections::BTreeMap<u64, u64> {
        (0..10).map(|key| (key, 1)).collect()
    }

    #[test]
    fn metadata_commits_redeliver_exactly_the_incomplete_records() {
        for strategy in can_hold_a_stuck_record() {
            let (ledger, projection, second) =
                crash_with_two_stuck(strategy, CommitPolicy::ContiguousMetadata);
            assert!(projection.report(&expected_versions()).final_state_correct, "{strategy}");
            let (lost, redelivered) = ledger.lost_and_redelivered();
            assert_eq!(lost, 0, "{strategy}");
            assert_eq!(redelivered, second.submitted, "{strategy}: only what never completed");
            if !holds_only_its_key(strategy) {
                // The keys hashed to the stuck records' groups waited too, and come back.
                assert!(redelivered >= 2, "{strategy}");
                continue;
            }
            assert_eq!(second.submitted, 2, "{strategy}: only offsets 2 and 4 come back");
            assert_eq!(second.skipped_done, 6, "{strategy}: 3 and 5-9 are skipped by metadata");
            for offset in 0..10 {
                let times = if matches!(offset, 2 | 4) { 2 } else { 1 };
                assert_eq!(ledger.of(0, offset).delivered, times, "{strategy}: offset {offset}");
                assert_eq!(ledger.of(0, offset).applied, 1, "{strategy}: offset {offset}");
            }
        }
    }

    #[test]
    fn contiguous_commits_redeliver_everything_above_the_first_incomplete_record() {
        for strategy in can_hold_a_stuck_record() {
            let (ledger, projection, second) =
                crash_with_two_stuck(strategy, CommitPolicy::Contiguous);
            assert_eq!(second.submitted, 8, "{strategy}: offsets 2-9 come back");
            assert_eq!(ledger.lost_and_redelivered(), (0, 8), "{strategy}");
            let report = projection.report(&expected_versions());
            assert!(report.final_state_correct, "{strategy}: the version check absorbs them");
            assert_eq!(report.duplicates, 6, "{strategy}: 3 and 5-9 arrive twice");
            assert_eq!(report.naive_double_applies, 6, "{strategy}");
        }
    }

    #[test]
    fn highest_completed_commits_lose_the_incomplete_records() {
        for strategy in can_hold_a_stuck_record() {
            let (ledger, projection, _) =
                crash_with_two_stuck(strategy, CommitPolicy::HighestCompleted);
            let (lost, _) = ledger.lost_and_redelivered();
            let report = projection.report(&expected_versions());
            assert!(!report.final_state_correct, "{strategy}: stuck keys never applied");
            assert_eq!(report.keys_wrong, lost, "{strategy}");
            if holds_only_its_key(strategy) {
                assert_eq!(lost, 2, "{strategy}: 2 and 4 are lost");
                assert_eq!(
                    ledger.lost_and_redelivered().1,
                    0,
                    "{strategy}: the commit was the end"
                );
            } else {
                assert!(lost >= 2, "{strategy}: 2 and 4, and what waited behind them, are lost");
            }
        }
    }

    #[test]
    fn a_run_to_the_end_applies_every_record_once_and_commits_the_end() {
        let transport = EmbeddedTransport::new(Topic::new("events", 4).unwrap());
        let mut expected = std::collections::BTreeMap::new();
        for version in 1..=20 {
            for key in 0..50 {
                transport.append(key, version, 64, 0);
                expected.insert(key, version);
            }
        }
        let transport = Arc::new(transport);
        transport.assign(MemberId(0), &[0, 1, 2, 3]).unwrap();
        for &strategy in StrategyId::ALL.iter().filter(|id| id.descriptor().ordered) {
            for policy in CommitPolicy::ALL {
                let transport =
                    Arc::new(EmbeddedTransport::new(transport.with_topic(Clone::clone)));
                transport.assign(MemberId(0), &[0, 1, 2, 3]).unwrap();
                let pipeline = Pipeline::new(Arc::clone(&transport), Timer::start());
                let Pipeline { ledger, projection, .. } = &pipeline;
                let report = run_incarnation(
                    &pipeline,
                    MemberId(0),
                    strategy,
                    StrategyConfig::with_workers(2),
                    config(policy),
                    run_all(),
                    Stop::AtEnd,
                )
                .unwrap();
                assert_eq!(report.completed, 1_000, "{strategy} {policy}");
                assert_eq!(ledger.lost_and_redelivered(), (0, 0), "{strategy} {policy}");
                let state = projection.report(&expected);
                assert!(state.final_state_correct, "{strategy} {policy}");
                assert_eq!(state.naive_out_of_order, 0, "{strategy} {policy}: ordered");
                for (partition, end) in transport.end_offsets().into_iter().enumerate() {
                    let committed = transport.committed(partition as u32).map(|c| c.offset);
                    assert_eq!(committed, Some(end), "{strategy} {policy}: partition {partition}");
                }
            }
        }
    }
}
