//! A consumer group member: it polls the partitions the group assigns it through its
//! [`Member`] client (of any [`Transport`]), hands every record to an executor (any
//! `strategies::Strategy`), applies it to the projection in the handler, retries what
//! fails, tracks completions per partition and commits them by policy; and it can die
//! without a final commit, or give its partitions up when the group revokes them, so that
//! a new one resumes where the commits say.
//!
//! # One incarnation, step by step
//!
//! 1. **Resume.** The group decides what the member owns: the partitions it already owns
//!    when the incarnation starts, and those the transport's [`RebalanceListener`] callback
//!    assigns it at a poll. For each, a [`PartitionProgress`] is built from the group's
//!    committed [`Commit`] (and its metadata, under `contiguous+metadata`), the member's
//!    position goes to the committed offset, and the partition starts unpaused.
//! 2. **Poll and submit** (the calling thread, the executor's producer). First the
//!    partitions are paused or resumed as their reasons come and go: a [`Hold`]
//!    (drain-then-expand), a record failing in place under `pause-partition`, or commit
//!    metadata past 75% of its limit. Then the retry topic's records whose delay is over
//!    are submitted again, then one poll returns up to `max_poll_records` records of the
//!    log, each partition in offset order (a paced log shows each record from its produce
//!    time on), or runs a rebalance callback instead.
//!    A record the metadata says completed before the restart is skipped; every other one
//!    is marked polled and submitted as a message: the aggregate id is the key, the offset
//!    the sequence number, the partition in `Job::Custom` (a partition's offsets are
//!    increasing, so each key's messages are submitted in offset order). A full window
//!    blocks the poll loop, as an executor's back-pressure stops a real consumer's polls.
//! 3. **Handle** (an executor thread). The handler counts the delivery in the
//!    [`DeliveryTally`], asks the incarnation's [`Treat`] what to do (run it, wait on a
//!    slow dependency, fail some attempts, or stay pending for ever), spins the record's
//!    CPU, applies it to the [`Projection`] and only then marks it completed in its
//!    partition's progress: a commit never covers an effect that has not happened. A failed
//!    attempt goes by the retry policy (module `retry`): wait the backoff on the key, or go
//!    to the retry topic (its offset completes at once), and after `max_attempts` failures
//!    to the dead-letter topic (settled without an effect).
//! 4. **Commit** (a committer thread, every `commit_interval`). For each partition, the
//!    progress's [`PartitionProgress::commit`] goes to the transport when it differs from
//!    the member's last stored commit of the partition, and the metadata back-pressure is
//!    set. Every tick samples the committed-offset lag (summed over the
//!    partitions, with its time) and how long each partition's committed offset has stood
//!    still while records completed.
//! 5. **End.** [`Stop::AtEnd`]: the log is consumed and the retry topic settled; the poll
//!    loop stops, drains the executor, stops the committer and commits a last time.
//!    [`Stop::CrashAfter`]: the moment the crash point is reached the process is as good
//!    as dead: no record starts or applies any more, no commit is made (the last one is
//!    the previous periodic commit), the poll loop stops and the executor is force-closed
//!    (queued records discarded, stuck ones abandoned). [`Stop::Revoked`]: when the group
//!    revokes the member's partitions (another member joined or left; the transport
//!    decides when), or the member leaves, the same happens inside the revocation's
//!    callback, while the member still owns them, except that it first commits what
//!    completed. [`Stop::Until`]: once its signal is raised (the incarnation's own
//!    `Stopper` thread watches it) the incarnation dies and its executor is force-closed
//!    at once, which fails a submit blocked on a full window and abandons what still runs
//!    (a record retried for ever, and what waits behind it); then, as at a revocation,
//!    what completed is committed. Effects applied before the end stay applied; the next
//!    incarnation redelivers what the last commit did not cover.
//!
//! In the code, step 1 is `Shared::resume` (from `Run`'s `assigned` callback), step 2
//! `Run::poll_loop` (with `Pauses` for the pauses), step 3 `handle` and
//! `attempt_failing`, step 4 `Committer` and `commit_loop`, step 5 `Run::end` (from the
//! `revoked` callback, or after the poll loop), and `run_incarnation` runs them in order.
//!
//! The pipeline's [`Watch`] (its cell's, where a watchdog supervises it) counts every record
//! settled (step 3) and holds the executor. Once it is cancelled, the poll loop and every
//! wait of step 5 return, the incarnation dies as at a crash (nothing applies or commits
//! after) and returns [`ConsumerError::Cancelled`]; the cancel's forced close has already
//! failed a blocked `submit` and ended a `drain`.
//!
//! Dying is one protocol: raise `dead`, then take the write side of a lock whose read
//! side every handler holds while it checks `dead` and applies. Once the write lock is
//! held no handler is halfway through an apply, and none starts one.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use strategies::{Design, Job, Key, Message, Outcome, Strategy, StrategyConfig};

use super::commit::{CommitError, MetadataLimit, PartitionProgress};
use super::log::{LogError, Record, Topic};
use super::projection::Projection;
use super::retry::{RetryConfig, RetryTopic};
use super::transport::{
    ClientCounts, Commit, Member, RebalanceListener, SideTopics, Transport, TransportError,
};
use crate::measure::handler::spin;
use crate::measure::timer::Timer;
use crate::results::{
    CallSamples, CommitPolicy, FailedCommits, IncarnationReport, LagPoint, RetryPolicy,
};
use crate::watch::Watch;

/// Kafka's default `max.poll.records`.
pub const DEFAULT_MAX_POLL_RECORDS: usize = 500;

/// Marks a message's `Job::Custom` partition as a record polled from the retry topic (a
/// partition number is at most 1,024, far below it).
const FROM_RETRY_TOPIC: u32 = 1 << 31;

/// How a consumer polls, commits, handles and retries.
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
    /// CPU each record's handler burns before it applies the record (and each attempt of
    /// a failing one), in nanoseconds.
    pub spin_ns: u64,
    /// What a failed attempt leads to.
    pub retry: RetryConfig,
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
    /// Its first `failures` attempts fail (`u32::MAX`: poison, every attempt fails); what
    /// then happens is the consumer's retry policy.
    Fail {
        /// Attempts that fail before one succeeds.
        failures: u32,
    },
}

/// Decides each record's [`Treatment`].
pub type Treat = Arc<dyn Fn(&Record) -> Treatment + Send + Sync>;

/// A flag one thread raises and others watch: the cue for a member to leave the group. It
/// also counts the watchers that have their assignment, and those that have run out of
/// work and only wait for a revocation.
#[derive(Clone, Debug, Default)]
pub struct Signal(Arc<(AtomicBool, AtomicU32, AtomicU32)>);

impl Signal {
    /// A signal not yet raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises it.
    pub fn raise(&self) {
        // Release: pairs with the Acquire load of `is_raised`.
        self.0 .0.store(true, Ordering::Release);
    }

    /// Whether it was raised.
    pub fn is_raised(&self) -> bool {
        self.0 .0.load(Ordering::Acquire)
    }

    /// Incarnations that consumed everything assigned to them and only wait for the end.
    pub fn idle(&self) -> u32 {
        self.0 .1.load(Ordering::Acquire)
    }

    /// Counts one more incarnation among the idle.
    fn enter_idle(&self) {
        self.0 .1.fetch_add(1, Ordering::AcqRel);
    }

    /// Incarnations the group has given their assignment (possibly empty): a membership
    /// change before every one has would be one they never see revoked.
    pub fn assigned(&self) -> u32 {
        self.0 .2.load(Ordering::Acquire)
    }

    /// Counts one more incarnation among those with their assignment.
    fn enter_assigned(&self) {
        self.0 .2.fetch_add(1, Ordering::AcqRel);
    }
}

/// How an incarnation ends.
#[derive(Clone, Debug)]
pub enum Stop {
    /// Consume to the end offsets (and settle the retry topic), drain, commit a last time.
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
    /// Consume until the group revokes the member's partitions (the transport decides
    /// when), and then give them up in the revocation's callback: stop polling, let nothing
    /// more apply, commit what completed, abandon what is in flight. With `leave`, the
    /// member leaves the group once `signal` is raised, which revokes its partitions the
    /// same way. Every such incarnation that consumed what it owns counts itself idle in
    /// `signal`.
    Revoked {
        /// The cue to leave, and the count of idle incarnations.
        signal: Signal,
        /// Whether this member leaves when `signal` is raised (the others wait for the
        /// revocation its leaving causes).
        leave: bool,
    },
    /// Consume until `signal` is raised (by whoever runs the consumer, once what it
    /// measures is over), then stop at once: nothing applies any more, the executor is
    /// force-closed (what still runs or waits is abandoned: a record retried for ever, and
    /// what waits behind it), and what completed is committed. The member stays in the
    /// group. Raised or not, it never drains: a record retried for ever would hold a drain
    /// for ever.
    Until {
        /// The cue to stop.
        signal: Signal,
    },
}

/// Partitions an incarnation keeps paused until the group has committed other partitions
/// up to given offsets: drain-then-expand holds a topic's new partitions until its old
/// ones are consumed up to the expansion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hold {
    /// The partitions held.
    pub partitions: Vec<u32>,
    /// `(partition, offset)`: the hold lifts once every such partition's committed offset
    /// has reached its offset.
    pub until_committed: Vec<(u32, u64)>,
}

/// One incarnation of a consumer group member (one process's life, on the member's
/// client): what it runs the records on, how it consumes and how it ends.
#[derive(Clone)]
pub struct Incarnation {
    /// The executor it builds.
    pub strategy: Design,
    /// The executor's settings.
    pub strategy_config: StrategyConfig,
    /// How it polls, commits and retries.
    pub config: ConsumerConfig,
    /// What its handler does with each record.
    pub treat: Treat,
    /// How it ends.
    pub stop: Stop,
    /// Partitions it keeps paused for a while (none by default).
    pub hold: Option<Hold>,
}

impl std::fmt::Debug for Incarnation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incarnation")
            .field("strategy", &self.strategy)
            .field("config", &self.config)
            .field("stop", &self.stop)
            .field("hold", &self.hold)
            .finish_non_exhaustive()
    }
}

impl Incarnation {
    /// An incarnation with no hold.
    pub fn new(
        strategy: Design,
        strategy_config: StrategyConfig,
        config: ConsumerConfig,
        treat: Treat,
        stop: Stop,
    ) -> Self {
        Self { strategy, strategy_config, config, treat, stop, hold: None }
    }
}

/// How often each record of the log reached a handler, was applied or dead-lettered, and
/// when it was first applied, over every incarnation: what was lost (neither applied nor
/// dead-lettered) and what was redelivered (delivered more than once).
#[derive(Debug)]
pub struct DeliveryTally {
    /// Per partition, per offset: handler calls for the record polled from its partition
    /// (the retry topic's deliveries are retries, counted by the consumer).
    deliveries: Vec<Vec<AtomicU32>>,
    /// Per partition, per offset: applications to the projection.
    applications: Vec<Vec<AtomicU32>>,
    /// Per partition, per offset: sends to the dead-letter topic.
    dead_letters: Vec<Vec<AtomicU32>>,
    /// Per partition, per offset: nanoseconds since the pipeline's epoch, plus one, of the
    /// first application (0: never applied).
    first_applied: Vec<Vec<AtomicU64>>,
    /// Applications of any record.
    applied_total: AtomicU64,
}

/// A record's counters in a [`DeliveryTally`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Handler calls.
    pub delivered: u32,
    /// Applications to the projection.
    pub applied: u32,
    /// Sends to the dead-letter topic.
    pub dead_lettered: u32,
}

impl DeliveryTally {
    /// A tally for a log whose partitions end at `end_offsets` (the log is produced
    /// before it is consumed).
    pub fn new(end_offsets: &[u64]) -> Self {
        let counters = || -> Vec<Vec<AtomicU32>> {
            end_offsets.iter().map(|&end| (0..end).map(|_| AtomicU32::new(0)).collect()).collect()
        };
        let first_applied =
            end_offsets.iter().map(|&end| (0..end).map(|_| AtomicU64::new(0)).collect()).collect();
        Self {
            deliveries: counters(),
            applications: counters(),
            dead_letters: counters(),
            first_applied,
            applied_total: AtomicU64::new(0),
        }
    }

    /// A record's slot in `counters`; `None` for a record outside the tally.
    fn slot<T>(counters: &[Vec<T>], partition: u32, offset: u64) -> Option<&T> {
        counters.get(partition as usize)?.get(usize::try_from(offset).ok()?)
    }

    fn count(counters: &[Vec<AtomicU32>], partition: u32, offset: u64) {
        if let Some(count) = Self::slot(counters, partition, offset) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a delivery of `record` from the log to a handler (a consumer in another
    /// process reports its deliveries; this process's consumer counts its own).
    pub fn delivered(&self, record: &Record) {
        Self::count(&self.deliveries, record.partition, record.offset);
    }

    /// Counts an application of `record`, `at_ns` after the pipeline's epoch; whether it
    /// was the record's first.
    pub fn applied(&self, record: &Record, at_ns: u64) -> bool {
        Self::count(&self.applications, record.partition, record.offset);
        let first =
            Self::slot(&self.first_applied, record.partition, record.offset).is_some_and(|first| {
                first.compare_exchange(0, at_ns + 1, Ordering::Relaxed, Ordering::Relaxed).is_ok()
            });
        self.applied_total.fetch_add(1, Ordering::Relaxed);
        first
    }

    /// One record's counters (zero for a record outside the tally).
    pub fn of(&self, partition: u32, offset: u64) -> Delivery {
        let read = |counters: &[Vec<AtomicU32>]| {
            Self::slot(counters, partition, offset).map_or(0, |count| count.load(Ordering::Relaxed))
        };
        Delivery {
            delivered: read(&self.deliveries),
            applied: read(&self.applications),
            dead_lettered: read(&self.dead_letters),
        }
    }

    /// When the record was first applied, in nanoseconds since the pipeline's epoch.
    pub fn first_applied_ns(&self, partition: u32, offset: u64) -> Option<u64> {
        let at = Self::slot(&self.first_applied, partition, offset)?.load(Ordering::Relaxed);
        at.checked_sub(1)
    }

    /// Applications so far, of every record (a redelivered one counts each time).
    pub fn applied_total(&self) -> u64 {
        self.applied_total.load(Ordering::Relaxed)
    }

    /// Records neither applied nor dead-lettered (lost), and records delivered more than
    /// once (redelivered).
    pub fn lost_and_redelivered(&self) -> (u64, u64) {
        let settled = |(applied, dead): (&AtomicU32, &AtomicU32)| {
            applied.load(Ordering::Relaxed) > 0 || dead.load(Ordering::Relaxed) > 0
        };
        let lost = self
            .applications
            .iter()
            .flatten()
            .zip(self.dead_letters.iter().flatten())
            .filter(|&pair| !settled(pair))
            .count();
        let redelivered =
            self.deliveries.iter().flatten().filter(|count| count.load(Ordering::Relaxed) > 1);
        (lost as u64, redelivered.count() as u64)
    }

    /// Records sent to the dead-letter topic.
    pub fn dead_lettered(&self) -> u64 {
        let sent = self.dead_letters.iter().flatten();
        sent.filter(|count| count.load(Ordering::Relaxed) > 0).count() as u64
    }
}

/// What outlives every consumer of a run: the log as produced, the business state, the
/// tally of deliveries, the timer that ends the handlers' waits, and the epoch that produce
/// times and timelines count from. The group and its commits are the transport's.
#[derive(Clone, Debug)]
pub struct Pipeline {
    /// Every record produced, by partition and offset: a submitted message carries only a
    /// record's place, and the handler reads the record here.
    pub log: Arc<Vec<Vec<Record>>>,
    /// The business state the handlers build.
    pub projection: Arc<Projection>,
    /// How often each record was delivered and applied.
    pub tally: Arc<DeliveryTally>,
    /// Completes the waits of [`Treatment::Wait`] and the retries' backoffs.
    pub timer: Timer,
    /// When the pipeline started: a record becomes visible its produce time after it.
    pub epoch: Instant,
    /// Counts every record settled, holds the executors, and stops the consumers once
    /// cancelled (the module docs); one nobody cancels unless [`Pipeline::watched`].
    pub watch: Watch,
    /// The retry and dead-letter topics every incarnation writes to: in-process unless
    /// [`Pipeline::over`] gives the transport's.
    pub side: Arc<dyn SideTopics>,
    /// What the transport's broker clients saw of the cluster ([`Pipeline::over`]); none
    /// without a broker.
    pub clients: Option<Arc<ClientCounts>>,
}

impl Pipeline {
    /// A pipeline over `log` as it stands (produced before it is consumed), with an empty
    /// projection and tally; its epoch is now.
    pub fn new(log: &Topic, timer: Timer) -> Self {
        let log: Vec<Vec<Record>> = (0..log.partitions())
            .map(|partition| log.partition(partition).map(|p| p.records().to_vec()))
            .collect::<Result<_, _>>()
            .unwrap_or_default();
        let ends: Vec<u64> = log.iter().map(|records| records.len() as u64).collect();
        let tally = Arc::new(DeliveryTally::new(&ends));
        let projection = Arc::new(Projection::new());
        let (log, epoch) = (Arc::new(log), Instant::now());
        let side: Arc<dyn SideTopics> = Arc::new(RetryTopic::new());
        Self { log, projection, tally, timer, epoch, watch: Watch::default(), side, clients: None }
    }

    /// The same pipeline over `transport`: writing to its retry and dead-letter topics, and
    /// counting what its clients see of the broker.
    pub fn over<T: Transport>(self, transport: &T) -> Result<Self, TransportError> {
        Ok(Self { side: transport.side_topics()?, clients: transport.client_counts(), ..self })
    }

    /// The same pipeline under `watch`, its cell's.
    pub fn watched(self, watch: Watch) -> Self {
        Self { watch, ..self }
    }

    /// The log's partitions.
    pub fn partitions(&self) -> u32 {
        self.log.len() as u32
    }

    /// The log's records, over every partition.
    pub fn records(&self) -> u64 {
        self.log.iter().map(|records| records.len() as u64).sum()
    }

    /// Nanoseconds since the epoch.
    pub fn now_ns(&self) -> u64 {
        since_ns(self.epoch)
    }
}

fn since_ns(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// Why an incarnation could not run.
#[derive(Debug, thiserror::Error)]
pub enum ConsumerError {
    /// The executor could not be built with these settings.
    #[error("cannot build {strategy}: {reason}")]
    Build {
        /// The strategy.
        strategy: Design,
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
    /// The pipeline's watch was cancelled (by the watchdog that supervises its cell).
    #[error("the cell was cancelled")]
    Cancelled,
    /// A consumer driver (docs/external.md, "Consumers") failed or wrote what cannot be
    /// true: the reason, with its last words.
    #[error("{0}")]
    External(String),
}

/// What a settled attempt does to the business state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    /// Apply the record to the projection.
    Apply,
    /// Send it to the dead-letter topic (settled without an effect).
    DeadLetter,
    /// Nothing yet: it went to the retry topic.
    Handoff,
}

/// Where a delivered record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// Its partition: settling it completes its offset.
    Log,
    /// The retry topic: its offset was completed at the handoff.
    RetryTopic,
}

/// What the consumer and its handler and committer share.
struct Shared {
    /// Per partition of the log: its progress (`None` for a partition not assigned).
    progress: Vec<Mutex<Option<PartitionProgress>>>,
    /// Every record, by partition and offset: the pipeline's log.
    records: Arc<Vec<Vec<Record>>>,
    /// Per record: attempts so far, under retry-topic (empty under the other policies,
    /// whose attempts live in the retrying step).
    attempts: Vec<Vec<AtomicU32>>,
    /// Per partition: records failing in place under pause-partition.
    failing: Vec<AtomicU32>,
    /// Per partition: the commit metadata would pass 75% of its limit.
    metadata_full: Vec<AtomicBool>,
    /// The retry and dead-letter topics (the pipeline's).
    side: Arc<dyn SideTopics>,
    /// The first write to them that failed: the poll loop ends the incarnation with it.
    side_failure: Mutex<Option<TransportError>>,
    /// Records handed to the retry topic and not yet applied or dead-lettered.
    retries_outstanding: AtomicU64,
    retries: AtomicU64,
    dead_lettered: AtomicU64,
    completed: AtomicU64,
    /// Raised at a crash point or a revocation: from then on nothing applies or completes.
    dead: AtomicBool,
    /// Held (read) by every settling handler around its check of `dead` and its effects;
    /// taken (write) once `dead` is raised, so that none is halfway through after it.
    finishing: parking_lot::RwLock<()>,
    timer: Timer,
    /// The pipeline's: counts every record settled, and says when to stop.
    watch: Watch,
    epoch: Instant,
    crash_after: Option<u64>,
    config: ConsumerConfig,
    treat: Treat,
    projection: Arc<Projection>,
    tally: Arc<DeliveryTally>,
}

impl Shared {
    /// The state of an incarnation that owns no partition yet: the group assigns them
    /// (step 1, at [`Shared::resume`]).
    fn new(pipeline: &Pipeline, config: ConsumerConfig, treat: Treat, stop: &Stop) -> Self {
        let records = Arc::clone(&pipeline.log);
        let partitions = records.len();
        // Only the retry topic counts a record's attempts across its deliveries.
        let attempts = if config.retry.policy == RetryPolicy::RetryTopic {
            records
                .iter()
                .map(|records| records.iter().map(|_| AtomicU32::new(0)).collect())
                .collect()
        } else {
            Vec::new()
        };
        Self {
            progress: (0..partitions).map(|_| Mutex::new(None)).collect(),
            records,
            attempts,
            failing: (0..partitions).map(|_| AtomicU32::new(0)).collect(),
            metadata_full: (0..partitions).map(|_| AtomicBool::new(false)).collect(),
            side: Arc::clone(&pipeline.side),
            side_failure: Mutex::new(None),
            retries_outstanding: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            dead_lettered: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            dead: AtomicBool::new(false),
            finishing: parking_lot::RwLock::new(()),
            timer: pipeline.timer.clone(),
            watch: pipeline.watch.clone(),
            epoch: pipeline.epoch,
            crash_after: match stop {
                Stop::CrashAfter { completions, .. } => Some(*completions),
                Stop::AtEnd | Stop::Revoked { .. } | Stop::Until { .. } => None,
            },
            config,
            treat,
            projection: Arc::clone(&pipeline.projection),
            tally: Arc::clone(&pipeline.tally),
        }
    }

    /// Step 1 for `partitions`, newly the member's: each one's progress resumed from the
    /// group's commit, and the member's position moved to where the progress resumes.
    fn resume<M: Member>(&self, member: &M, partitions: &[u32]) -> Result<(), ConsumerError> {
        for &partition in partitions {
            let committed = member.committed(partition)?;
            let progress = PartitionProgress::resume(
                committed.as_ref(),
                self.config.policy,
                self.config.metadata_limit,
            )
            .map_err(|source| ConsumerError::Resume { partition, source })?;
            member.seek(partition, progress.resume_offset())?;
            let Some(slot) = self.progress.get(partition as usize) else {
                return Err(TransportError::Log(LogError::NoSuchPartition {
                    partition,
                    partitions: self.progress.len() as u32,
                })
                .into());
            };
            *slot.lock() = Some(progress);
        }
        Ok(())
    }

    fn record_of(&self, message: &Message) -> Option<(Record, Origin)> {
        let Job::Custom(tagged) = message.job else {
            return None;
        };
        let origin = if tagged & FROM_RETRY_TOPIC == 0 { Origin::Log } else { Origin::RetryTopic };
        let partition = tagged & !FROM_RETRY_TOPIC;
        let records = self.records.get(partition as usize)?;
        Some((*records.get(usize::try_from(message.seq).ok()?)?, origin))
    }

    fn is_dead(&self) -> bool {
        // Acquire: pairs with the Release store at the crash point or revocation.
        self.dead.load(Ordering::Acquire)
    }

    /// The end of an attempt that settles `record` (or hands it to the retry topic): its
    /// effect, then its offset's completion (in that order, so that no commit covers an
    /// effect that has not happened), unless the consumer died meanwhile.
    fn finish(&self, record: Record, effect: Effect, origin: Origin) {
        let _alive = self.finishing.read();
        if self.is_dead() {
            return; // died while this record ran: its effect never happened
        }
        self.watch.advance();
        match effect {
            Effect::Apply => {
                self.projection.apply(record);
                self.tally.applied(&record, since_ns(self.epoch));
            }
            Effect::DeadLetter => {
                if let Err(error) = self.side.dead_letter(&record) {
                    self.side_failure.lock().get_or_insert(error);
                }
                self.projection.dead_letter(record);
                DeliveryTally::count(&self.tally.dead_letters, record.partition, record.offset);
                self.dead_lettered.fetch_add(1, Ordering::Relaxed);
            }
            Effect::Handoff => {}
        }
        if origin == Origin::RetryTopic {
            self.retries_outstanding.fetch_sub(1, Ordering::Release);
            return;
        }
        if let Some(progress) = self.progress[record.partition as usize].lock().as_mut() {
            progress.completed(record.offset);
        }
        // Release: pairs with the poll loop's Acquire load (the handoff's retry-topic send
        // comes before it).
        let completed = self.completed.fetch_add(1, Ordering::Release) + 1;
        if self.crash_after.is_some_and(|after| completed >= after) {
            // Release: pairs with the Acquire loads of `is_dead`.
            self.dead.store(true, Ordering::Release);
        }
    }

    /// Kills the incarnation: raises `dead` and waits until no handler is halfway through
    /// settling a record. Nothing applies or completes after it returns.
    fn die(&self) {
        self.dead.store(true, Ordering::Release);
        drop(self.finishing.write());
    }

    /// Records polled and not completed in the assigned partitions.
    fn in_flight(&self, assigned: &[u32]) -> u64 {
        assigned
            .iter()
            .filter_map(|&partition| self.progress.get(partition as usize))
            .filter_map(|slot| slot.lock().as_ref().map(|progress| progress.in_flight() as u64))
            .sum()
    }
}

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
struct Stopper {
    /// Raised once the incarnation has ended otherwise (cancelled, or failed): the thread
    /// then returns without closing anything.
    over: Arc<AtomicBool>,
    thread: thread::JoinHandle<Option<strategies::ForcedClose>>,
}

impl Stopper {
    /// The stopper of an incarnation that ends by `stop`: none but for [`Stop::Until`].
    fn start(stop: &Stop, shared: &Arc<Shared>, executor: &Arc<dyn Strategy>) -> Option<Self> {
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
    fn join(self) -> Option<strategies::ForcedClose> {
        // Release: pairs with the thread's Acquire load.
        self.over.store(true, Ordering::Release);
        self.thread.join().ok().flatten()
    }
}

/// One incarnation as it runs: its poll loop (step 2), the waits and the end (step 5), and
/// its member's rebalance listener, which resumes partitions as the group assigns them
/// (step 1) and ends the incarnation, there and then, when the group revokes them.
struct Run<'a, M: Member> {
    member: &'a M,
    shared: &'a Shared,
    stop: &'a Stop,
    pauses: Pauses,
    report: IncarnationReport,
    /// Step 4's thread, until the incarnation ends.
    committer: Option<Committer>,
    /// Whether the group has given the member its assignment (possibly empty).
    has_assignment: bool,
    /// Whether step 5 ran: in a revocation's callback, or after the poll loop.
    ended: bool,
    /// The first failure inside a callback, which cannot return it.
    error: Option<ConsumerError>,
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
    fn stopped(&self) -> bool {
        self.shared.is_dead()
            || self.ended
            || self.shared.watch.is_cancelled()
            || matches!(self.stop, Stop::Until { signal } if signal.is_raised())
    }

    /// Whether the member is to leave the group now.
    fn leaving(&self) -> bool {
        matches!(self.stop, Stop::Revoked { signal, leave: true } if signal.is_raised())
    }

    /// Whether the member has its assignment and has polled each partition of it to the
    /// partition's high watermark.
    fn consumed(&self) -> bool {
        let member = self.member;
        self.has_assignment
            && member.assignment().into_iter().all(|partition| {
                let end = member.high_watermark(partition).unwrap_or(u64::MAX);
                member.position(partition).is_some_and(|position| position >= end)
            })
    }

    /// Step 2: polls and submits until the member's partitions are consumed (and the retry
    /// topic settled), the crash, the revocation or the leave.
    fn poll_loop(&mut self, executor: &dyn Strategy) {
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
    fn done(&self) -> bool {
        let shared = self.shared;
        let retrying = shared.config.retry.policy == RetryPolicy::RetryTopic
            && (shared.completed.load(Ordering::Acquire) < self.report.submitted
                // Acquire: pairs with the Release decrement of a settled retry.
                || shared.retries_outstanding.load(Ordering::Acquire) > 0);
        self.consumed() && !retrying
    }

    /// Step 2 for one poll's `records`: each is marked polled and submitted, unless the
    /// metadata says it completed before; stops early once the incarnation stops or leaves.
    fn submit_polled(&mut self, records: Vec<Record>, submit: &dyn Fn(&Record, u32) -> bool) {
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
    fn wait_for_the_end(&mut self, executor: &dyn Strategy) {
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
    fn wait_for_revocation(&mut self, signal: &Signal, leave: bool) {
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
    fn end(&mut self, revocation: bool) -> Result<(), ConsumerError> {
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
    fn finish(
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
fn commit_completed<M: Member>(
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
fn uncommitted<M: Member>(member: &M, owned: &[u32]) -> u64 {
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
fn start_executor(
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

/// The log is consumed but the crash point was not reached: waits until it is, or until no
/// record completed for `idle`, and then crashes.
fn wait_for_crash(shared: &Shared, idle: Duration) {
    let mut seen = shared.completed.load(Ordering::Relaxed);
    let mut since = Instant::now();
    while !shared.is_dead() && !shared.watch.is_cancelled() {
        thread::sleep(Duration::from_micros(500));
        let now = shared.completed.load(Ordering::Relaxed);
        if now != seen {
            (seen, since) = (now, Instant::now());
        } else if since.elapsed() >= idle {
            return;
        }
    }
}

/// Step 3: one record in the handler.
fn handle(shared: &Arc<Shared>, message: &Message) -> Outcome {
    if shared.is_dead() {
        return Outcome::Done; // the consumer is dead: nothing it would still run happens
    }
    let Some((record, origin)) = shared.record_of(message) else {
        return Outcome::Done;
    };
    if origin == Origin::Log {
        // A delivery from the log; the retry topic's are retries, not redeliveries.
        DeliveryTally::count(&shared.tally.deliveries, record.partition, record.offset);
    }
    let spin_ns = shared.config.spin_ns;
    match (shared.treat)(&record) {
        Treatment::Stall => Outcome::Pending(Box::pin(std::future::pending())),
        Treatment::Run => {
            spin(spin_ns);
            shared.finish(record, Effect::Apply, origin);
            Outcome::Done
        }
        Treatment::Wait(after) => {
            spin(spin_ns);
            let sleep = shared.timer.sleep(after);
            let shared = Arc::clone(shared);
            Outcome::Pending(Box::pin(async move {
                sleep.await;
                shared.finish(record, Effect::Apply, origin);
            }))
        }
        Treatment::Fail { failures } => attempt_failing(shared, record, failures, origin),
    }
}

/// Step 3 for a record whose first `failures` attempts fail, by the retry policy (see
/// `retry`).
fn attempt_failing(shared: &Arc<Shared>, record: Record, failures: u32, origin: Origin) -> Outcome {
    let retry = shared.config.retry;
    spin(shared.config.spin_ns);
    let (partition, offset) = (record.partition as usize, record.offset as usize);
    if retry.policy == RetryPolicy::RetryTopic {
        let attempt = shared.attempts[partition][offset].fetch_add(1, Ordering::Relaxed) + 1;
        if attempt > 1 {
            shared.retries.fetch_add(1, Ordering::Relaxed);
        }
        if attempt > failures {
            shared.finish(record, Effect::Apply, origin);
        } else if retry.gives_up_after(attempt) {
            shared.finish(record, Effect::DeadLetter, origin);
        } else {
            if origin == Origin::Log {
                shared.retries_outstanding.fetch_add(1, Ordering::Relaxed);
            }
            // In the retry topic before its offset is done: a commit never skips it.
            let due = since_ns(shared.epoch).saturating_add(
                u64::try_from(retry.backoff_after(attempt).as_nanos()).unwrap_or(u64::MAX),
            );
            if let Err(error) = shared.side.retry(&record, due) {
                shared.side_failure.lock().get_or_insert(error);
            }
            if origin == Origin::Log {
                shared.finish(record, Effect::Handoff, origin);
            }
        }
        return Outcome::Done;
    }
    let pause = retry.policy == RetryPolicy::PausePartition;
    if pause {
        shared.failing[partition].fetch_add(1, Ordering::AcqRel);
    }
    let shared = Arc::clone(shared);
    Outcome::Pending(Box::pin(async move {
        let mut attempt = 1; // the one that just failed
        let effect = loop {
            if retry.gives_up_after(attempt) {
                break Effect::DeadLetter;
            }
            shared.timer.sleep(retry.backoff_after(attempt)).await;
            if shared.is_dead() {
                break Effect::Handoff; // nothing happens: `finish` sees the death
            }
            attempt += 1;
            shared.retries.fetch_add(1, Ordering::Relaxed);
            spin(shared.config.spin_ns);
            if attempt > failures {
                break Effect::Apply;
            }
        };
        shared.finish(record, effect, origin);
        if pause {
            shared.failing[partition].fetch_sub(1, Ordering::AcqRel);
        }
    }))
}

/// Which of a member's partitions stand paused, and why: held (drain-then-expand), a
/// record failing in place (pause-partition), or commit metadata near its limit.
struct Pauses {
    /// Per partition of the log: whether the member paused it in the transport.
    paused: Vec<bool>,
    hold: Option<Hold>,
    held_since: Instant,
    held: Duration,
    /// Per partition of the log: since when a record of it has been failing in place.
    failing_since: Vec<Option<Instant>>,
    failure_pause: Duration,
}

impl Pauses {
    /// The pauses of an incarnation over a log of `partitions` partitions, none paused yet.
    fn new(partitions: u32, hold: Option<Hold>) -> Self {
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
    fn unpaused(&mut self, partitions: &[u32]) {
        for &partition in partitions {
            if let Some(paused) = self.paused.get_mut(partition as usize) {
                *paused = false;
            }
        }
    }

    /// Pauses and resumes the member's partitions as their reasons come and go.
    fn reconcile<M: Member>(&mut self, member: &M, shared: &Shared) {
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
    fn lift_hold_once_drained<M: Member>(&mut self, member: &M) {
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
    fn time_failing(failing_since: &mut Option<Instant>, failing: bool) -> Duration {
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
    fn pause_or_resume<M: Member>(paused: &mut bool, wanted: bool, member: &M, partition: u32) {
        if wanted == *paused {
            return;
        }
        let changed = if wanted { member.pause(&[partition]) } else { member.resume(&[partition]) };
        if changed.is_ok() {
            *paused = wanted;
        }
    }

    /// The time spent paused by failures, and held.
    fn finish(self) -> (Duration, Duration) {
        let still_failing: Duration =
            self.failing_since.iter().flatten().map(|since| since.elapsed()).sum();
        let held = if self.hold.is_some() { self.held_since.elapsed() } else { self.held };
        (self.failure_pause + still_failing, held)
    }
}

/// What the committer saw over an incarnation.
#[derive(Debug, Default)]
struct Ticks {
    commits: u64,
    failed: FailedCommits,
    lag_timeline: Vec<LagPoint>,
    longest_freeze: Duration,
    max_metadata_bytes: usize,
    paused_ticks: u64,
    calls: CallSamples,
}

impl Ticks {
    /// Copies what the committer saw into the incarnation's report.
    fn write_to(self, report: &mut IncarnationReport) {
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
struct Committer {
    thread: thread::JoinHandle<Ticks>,
    /// Raised once the incarnation ends: the committer makes no commit after its current
    /// tick.
    stop: Arc<AtomicBool>,
}

impl Committer {
    /// Starts committing, every `commit_interval`, each partition the incarnation resumed.
    fn start<M: Member + 'static>(shared: &Arc<Shared>, member: &Arc<M>) -> Self {
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
    fn stop(self) -> Ticks {
        // Release: pairs with the committer's Acquire load in `commit_loop`.
        self.stop.store(true, Ordering::Release);
        self.thread.join().unwrap_or_else(|_| panic!("the committer panicked"))
    }
}

/// Step 4: commits every `commit_interval` until told to stop; a partition only when its
/// commit (offset or metadata) changed since the member's last one of it, as a Kafka
/// client's commit of its consumed offsets does.
fn commit_loop<M: Member>(shared: &Shared, member: &M, stop: &AtomicBool) -> Ticks {
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
fn commit_if_moved<M: Member>(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pipeline::transport::{EmbeddedTransport, MemberId, Transport};
    use strategies::StrategyId;

    /// One partition of ten records, one key each, version 1.
    fn ten_records() -> Topic {
        let mut topic = Topic::new("events", 1).unwrap();
        for key in 0..10 {
            topic.append_to(0, key, 1, 64, 0).unwrap();
        }
        topic
    }

    fn config(policy: CommitPolicy) -> ConsumerConfig {
        ConsumerConfig {
            policy,
            commit_interval: Duration::from_millis(1),
            metadata_limit: MetadataLimit::default(),
            max_poll_records: DEFAULT_MAX_POLL_RECORDS,
            spin_ns: 0,
            retry: RetryConfig::default(),
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
    /// comes 250 ms after the last completion, 250 commit intervals), then the consumer
    /// crashes; the second incarnation runs to the end. Returns the tally, the
    /// projection and the second incarnation's report.
    fn crash_with_two_stuck(
        strategy: Design,
        policy: CommitPolicy,
    ) -> (Arc<DeliveryTally>, Arc<Projection>, IncarnationReport) {
        let pipeline = Pipeline::new(&ten_records(), Timer::start());
        let transport = EmbeddedTransport::new(ten_records());
        let incarnation = |treat: Treat, stop: Stop| {
            let settings = StrategyConfig::with_workers(2);
            let incarnation = Incarnation::new(strategy, settings, config(policy), treat, stop);
            // Each incarnation is a process of its own, joining under the member's id.
            let member = transport.join(MemberId(0)).unwrap();
            run_incarnation(&pipeline, &member, incarnation).unwrap()
        };
        // Crash once nothing more completes: every completion has been committed (250
        // commit intervals, time enough for the committing thread on a busy machine).
        let idle = Duration::from_millis(250);
        let first =
            incarnation(stall_two_and_four(), Stop::CrashAfter { completions: u64::MAX, idle });
        if holds_only_its_key(strategy) {
            assert_eq!(first.completed, 8, "{strategy} {policy}: the first incarnation");
        }
        assert!(first.forced.abandoned >= 2, "{strategy} {policy}: the stuck records");
        let second = incarnation(run_all(), Stop::AtEnd);
        (Arc::clone(&pipeline.tally), Arc::clone(&pipeline.projection), second)
    }

    /// Strategies that can run a stuck record at all: `inline` would wait for it on the
    /// consumer's own thread, for ever.
    fn can_hold_a_stuck_record() -> impl Iterator<Item = Design> {
        Design::built_ins().filter(|&id| id != StrategyId::Inline)
    }

    /// Whether a stuck record holds only its own key: hash-serial groups make every key of
    /// its group wait behind it.
    fn holds_only_its_key(strategy: Design) -> bool {
        !matches!(strategy.strategy_id(), Some(StrategyId::GroupBy | StrategyId::PerTypePool))
    }

    fn expected_versions() -> std::collections::BTreeMap<u64, u64> {
        (0..10).map(|key| (key, 1)).collect()
    }

    #[test]
    fn metadata_commits_redeliver_exactly_the_incomplete_records() {
        for strategy in can_hold_a_stuck_record() {
            let (tally, projection, second) =
                crash_with_two_stuck(strategy, CommitPolicy::ContiguousMetadata);
            assert!(projection.report(&expected_versions()).final_state_correct, "{strategy}");
            let (lost, redelivered) = tally.lost_and_redelivered();
            assert_eq!(lost, 0, "{strategy}");
            assert_eq!(redelivered, second.submitted, "{strategy}: only what never completed");
            if !holds_only_its_key(strategy) {
                // The keys hashed to the stuck records' groups waited too, and come back.
                assert!(redelivered >= 2, "{strategy}");
                continue;
            }
            assert_eq!(second.submitted, 2, "{strategy}: only offsets 2 and 4 come back");
            assert_eq!(second.skipped_done, 6, "{strategy}: 3 and 5-9 are skipped by metadata");
            assert_only_the_stuck_records_came_back(&tally, strategy);
        }
    }

    /// An embedded member whose every commit is refused with `refusal`.
    struct Refusing {
        member: Arc<crate::pipeline::transport::EmbeddedMember>,
        refusal: TransportError,
    }

    impl Member for Refusing {
        fn id(&self) -> MemberId {
            self.member.id()
        }
        fn poll(
            &self,
            max_records: usize,
            listener: &mut dyn RebalanceListener,
        ) -> Result<Vec<Record>, TransportError> {
            self.member.poll(max_records, listener)
        }
        fn assignment(&self) -> Vec<u32> {
            self.member.assignment()
        }
        fn position(&self, partition: u32) -> Option<u64> {
            self.member.position(partition)
        }
        fn seek(&self, partition: u32, offset: u64) -> Result<(), TransportError> {
            self.member.seek(partition, offset)
        }
        fn commit(&self, _: u32, _: u64, _: &str) -> Result<(), TransportError> {
            Err(self.refusal.clone())
        }
        fn committed(&self, partition: u32) -> Result<Option<Commit>, TransportError> {
            self.member.committed(partition)
        }
        fn high_watermark(&self, partition: u32) -> Result<u64, TransportError> {
            self.member.high_watermark(partition)
        }
        fn pause(&self, partitions: &[u32]) -> Result<(), TransportError> {
            self.member.pause(partitions)
        }
        fn resume(&self, partitions: &[u32]) -> Result<(), TransportError> {
            self.member.resume(partitions)
        }
        fn leave(&self, listener: &mut dyn RebalanceListener) {
            self.member.leave(listener);
        }
    }

    /// A group that no longer counts the member as the partition's owner (its session
    /// ended while no coordinator answered) refuses its final commit: counted, and the
    /// incarnation ends with every record applied. A broker that failed ends it.
    #[test]
    fn a_final_commit_refused_as_not_owned_is_counted_and_a_broker_failure_ends_the_run() {
        let strategy = Design::from(StrategyId::KeyedMailbox);
        let run = |refusal: TransportError| {
            let pipeline = Pipeline::new(&ten_records(), Timer::start());
            let transport = EmbeddedTransport::new(ten_records());
            let member =
                Arc::new(Refusing { member: transport.join(MemberId(0)).unwrap(), refusal });
            let settings = StrategyConfig::with_workers(2);
            let policy = CommitPolicy::Contiguous;
            let incarnation =
                Incarnation::new(strategy, settings, config(policy), run_all(), Stop::AtEnd);
            (run_incarnation(&pipeline, &member, incarnation), pipeline)
        };
        let not_owned = TransportError::NotAssigned { member: MemberId(0), partition: 0 };
        let (report, pipeline) = run(not_owned);
        let report = report.expect("the incarnation ends");
        assert_eq!(report.commits, 0);
        assert!(report.failed.count >= 1, "{:?}", report.failed);
        assert!(report.failed.first.unwrap().contains("is not assigned partition 0"));
        assert_eq!(pipeline.tally.lost_and_redelivered(), (0, 0), "every record applied once");

        let (report, _) = run(TransportError::Broker("no answer".into()));
        let error = report.expect_err("a broker that failed ends the incarnation").to_string();
        assert!(error.contains("no answer"), "{error}");
    }

    /// Offsets 2 and 4 were delivered twice, every other one once, and each applied once.
    fn assert_only_the_stuck_records_came_back(tally: &DeliveryTally, strategy: Design) {
        for offset in 0..10 {
            let times = if matches!(offset, 2 | 4) { 2 } else { 1 };
            assert_eq!(tally.of(0, offset).delivered, times, "{strategy}: offset {offset}");
            assert_eq!(tally.of(0, offset).applied, 1, "{strategy}: offset {offset}");
        }
    }

    #[test]
    fn contiguous_commits_redeliver_everything_above_the_first_incomplete_record() {
        for strategy in can_hold_a_stuck_record() {
            let (tally, projection, second) =
                crash_with_two_stuck(strategy, CommitPolicy::Contiguous);
            assert_eq!(second.submitted, 8, "{strategy}: offsets 2-9 come back");
            assert_eq!(tally.lost_and_redelivered(), (0, 8), "{strategy}");
            let report = projection.report(&expected_versions());
            assert!(report.final_state_correct, "{strategy}: the version check absorbs them");
            assert_eq!(report.duplicates, 6, "{strategy}: 3 and 5-9 arrive twice");
            assert_eq!(report.naive_double_applies, 6, "{strategy}");
        }
    }

    #[test]
    fn highest_completed_commits_lose_the_incomplete_records() {
        for strategy in can_hold_a_stuck_record() {
            let (tally, projection, _) =
                crash_with_two_stuck(strategy, CommitPolicy::HighestCompleted);
            let (lost, _) = tally.lost_and_redelivered();
            let report = projection.report(&expected_versions());
            assert!(!report.final_state_correct, "{strategy}: stuck keys never applied");
            assert_eq!(report.keys_wrong, lost, "{strategy}");
            if holds_only_its_key(strategy) {
                assert_eq!(lost, 2, "{strategy}: 2 and 4 are lost");
                assert_eq!(tally.lost_and_redelivered().1, 0, "{strategy}: the commit was the end");
            } else {
                assert!(lost >= 2, "{strategy}: 2 and 4, and what waited behind them, are lost");
            }
        }
    }

    #[test]
    fn a_run_to_the_end_applies_every_record_once_and_commits_the_end() {
        let mut topic = Topic::new("events", 4).unwrap();
        let mut expected = std::collections::BTreeMap::new();
        for version in 1..=20 {
            for key in 0..50 {
                topic.append(key, version, 64, 0);
                expected.insert(key, version);
            }
        }
        for strategy in Design::built_ins().filter(|id| id.is_ordered()) {
            for policy in CommitPolicy::ALL {
                let transport = EmbeddedTransport::new(topic.clone());
                let member = transport.join(MemberId(0)).unwrap();
                let pipeline = Pipeline::new(&topic, Timer::start());
                let Pipeline { tally, projection, .. } = &pipeline;
                let incarnation = Incarnation::new(
                    strategy,
                    StrategyConfig::with_workers(2),
                    config(policy),
                    run_all(),
                    Stop::AtEnd,
                );
                let report = run_incarnation(&pipeline, &member, incarnation).unwrap();
                assert_eq!(report.completed, 1_000, "{strategy} {policy}");
                assert_eq!(tally.lost_and_redelivered(), (0, 0), "{strategy} {policy}");
                let state = projection.report(&expected);
                assert!(state.final_state_correct, "{strategy} {policy}");
                assert_eq!(state.naive_out_of_order, 0, "{strategy} {policy}: ordered");
                assert_committed_the_end(&transport, strategy, policy);
            }
        }
    }

    /// Runs offsets 0 to 3 and leaves every later one pending for ever.
    fn stall_after_four() -> Treat {
        Arc::new(|record: &Record| match record.offset {
            0..4 => Treatment::Run,
            _ => Treatment::Stall,
        })
    }

    /// Cancels `watch`, from a thread of its own, once `done` units of work are done.
    fn cancel_once(watch: &Watch, done: u64) -> thread::JoinHandle<()> {
        let watch = watch.clone();
        thread::spawn(move || {
            while watch.done() < done {
                thread::sleep(Duration::from_millis(1));
            }
            if let Some(closing) = watch.cancel() {
                closing.join().unwrap();
            }
        })
    }

    #[test]
    fn a_cancelled_consumer_stops_waiting_for_stuck_records_and_says_so() {
        for strategy in [StrategyId::KeyedMailbox, StrategyId::GroupBy].map(Design::from) {
            let watch = Watch::default();
            let pipeline = Pipeline::new(&ten_records(), Timer::start()).watched(watch.clone());
            let member = EmbeddedTransport::new(ten_records()).join(MemberId(0)).unwrap();
            let settings = StrategyConfig::with_workers(2);
            let policy = config(CommitPolicy::Contiguous);
            let treat = stall_after_four();
            let incarnation = Incarnation::new(strategy, settings, policy, treat, Stop::AtEnd);
            let cancel = cancel_once(&watch, 4);
            // Without the cancel, the drain would wait for the stuck records for ever.
            let result = run_incarnation(&pipeline, &member, incarnation);
            assert!(matches!(result, Err(ConsumerError::Cancelled)), "{strategy}: {result:?}");
            cancel.join().unwrap();
            assert_eq!(watch.done(), 4, "{strategy}: the records that ran");
        }
    }

    /// Raises `signal`, from a thread of its own, 20 ms after `applied` records were applied.
    fn raise_once_applied(
        pipeline: &Pipeline,
        applied: u64,
        signal: Signal,
    ) -> thread::JoinHandle<()> {
        let tally = Arc::clone(&pipeline.tally);
        thread::spawn(move || {
            while tally.applied_total() < applied {
                thread::sleep(Duration::from_millis(1));
            }
            thread::sleep(Duration::from_millis(20)); // the poll loop blocks meanwhile
            signal.raise();
        })
    }

    /// Stop::Until with a window of 2 and every record from offset 4 on pending for ever:
    /// the poll loop blocks in a submit on the full window, the drain would wait for ever,
    /// and only the stopper's forced close ends the incarnation, which then commits what
    /// completed and counts what it abandoned.
    #[test]
    fn a_consumer_until_a_signal_stops_even_blocked_on_a_full_window() {
        for strategy in [StrategyId::KeyedMailbox, StrategyId::GroupBy].map(Design::from) {
            let pipeline = Pipeline::new(&ten_records(), Timer::start());
            let transport = EmbeddedTransport::new(ten_records());
            let member = transport.join(MemberId(0)).unwrap();
            let settings = StrategyConfig { max_in_flight: 2, ..StrategyConfig::with_workers(2) };
            let policy = config(CommitPolicy::Contiguous);
            let signal = Signal::new();
            let stop = Stop::Until { signal: signal.clone() };
            let incarnation =
                Incarnation::new(strategy, settings, policy, stall_after_four(), stop);
            let raise = raise_once_applied(&pipeline, 4, signal);
            let report = run_incarnation(&pipeline, &member, incarnation).unwrap();
            raise.join().unwrap();
            assert_eq!(pipeline.tally.applied_total(), 4, "{strategy}");
            assert_eq!(transport.committed(0).map(|c| c.offset), Some(4), "{strategy}");
            assert!(report.forced.abandoned > 0, "{strategy}: {:?}", report.forced);
            assert!(report.submitted < 10, "{strategy}: the window held the rest back");
        }
    }

    /// Every partition's committed offset is its end offset.
    fn assert_committed_the_end(
        transport: &EmbeddedTransport,
        strategy: Design,
        policy: CommitPolicy,
    ) {
        for (partition, end) in transport.end_offsets().into_iter().enumerate() {
            let committed = transport.committed(partition as u32).map(|c| c.offset);
            assert_eq!(committed, Some(end), "{strategy} {policy}: partition {partition}");
        }
    }
}
