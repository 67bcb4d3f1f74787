//! What an incarnation's poll loop, handlers and committer share (steps 1 and 3's state).

use super::config::{ConsumerConfig, Stop, Treat};
use super::error::ConsumerError;
use super::pipeline::{since_ns, Pipeline};
use super::tally::DeliveryTally;
use crate::measure::timer::Timer;
use crate::pipeline::commit::PartitionProgress;
use crate::pipeline::log::{LogError, Record};
use crate::pipeline::projection::Projection;
use crate::pipeline::transport::{Member, SideTopics, TransportError};
use crate::results::RetryPolicy;
use crate::watch::Watch;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use strategies::{Job, Message};

/// Marks a message's `Job::Custom` partition as a record polled from the retry topic (a
/// partition number is at most 1,024, far below it).
pub(super) const FROM_RETRY_TOPIC: u32 = 1 << 31;
/// What a settled attempt does to the business state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Effect {
    /// Apply the record to the projection.
    Apply,
    /// Send it to the dead-letter topic (settled without an effect).
    DeadLetter,
    /// Nothing yet: it went to the retry topic.
    Handoff,
}

/// Where a delivered record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Origin {
    /// Its partition: settling it completes its offset.
    Log,
    /// The retry topic: its offset was completed at the handoff.
    RetryTopic,
}

/// What the consumer and its handler and committer share.
pub(super) struct Shared {
    /// Per partition of the log: its progress (`None` for a partition not assigned).
    pub(super) progress: Vec<Mutex<Option<PartitionProgress>>>,
    /// Every record, by partition and offset: the pipeline's log.
    pub(super) records: Arc<Vec<Vec<Record>>>,
    /// Per record: attempts so far, under retry-topic (empty under the other policies,
    /// whose attempts live in the retrying step).
    pub(super) attempts: Vec<Vec<AtomicU32>>,
    /// Per partition: records failing in place under pause-partition.
    pub(super) failing: Vec<AtomicU32>,
    /// Per partition: the commit metadata would pass 75% of its limit.
    pub(super) metadata_full: Vec<AtomicBool>,
    /// The retry and dead-letter topics (the pipeline's).
    pub(super) side: Arc<dyn SideTopics>,
    /// The first write to them that failed: the poll loop ends the incarnation with it.
    pub(super) side_failure: Mutex<Option<TransportError>>,
    /// Records handed to the retry topic and not yet applied or dead-lettered.
    pub(super) retries_outstanding: AtomicU64,
    pub(super) retries: AtomicU64,
    pub(super) dead_lettered: AtomicU64,
    pub(super) completed: AtomicU64,
    /// Raised at a crash point or a revocation: from then on nothing applies or completes.
    pub(super) dead: AtomicBool,
    /// Held (read) by every settling handler around its check of `dead` and its effects;
    /// taken (write) once `dead` is raised, so that none is halfway through after it.
    pub(super) finishing: parking_lot::RwLock<()>,
    pub(super) timer: Timer,
    /// The pipeline's: counts every record settled, and says when to stop.
    pub(super) watch: Watch,
    pub(super) epoch: Instant,
    pub(super) crash_after: Option<u64>,
    pub(super) config: ConsumerConfig,
    pub(super) treat: Treat,
    pub(super) projection: Arc<Projection>,
    pub(super) tally: Arc<DeliveryTally>,
}

impl Shared {
    /// The state of an incarnation that owns no partition yet: the group assigns them
    /// (step 1, at [`Shared::resume`]).
    pub(super) fn new(
        pipeline: &Pipeline,
        config: ConsumerConfig,
        treat: Treat,
        stop: &Stop,
    ) -> Self {
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
    pub(super) fn resume<M: Member>(
        &self,
        member: &M,
        partitions: &[u32],
    ) -> Result<(), ConsumerError> {
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

    pub(super) fn record_of(&self, message: &Message) -> Option<(Record, Origin)> {
        let Job::Custom(tagged) = message.job else {
            return None;
        };
        let origin = if tagged & FROM_RETRY_TOPIC == 0 { Origin::Log } else { Origin::RetryTopic };
        let partition = tagged & !FROM_RETRY_TOPIC;
        let records = self.records.get(partition as usize)?;
        Some((*records.get(usize::try_from(message.seq).ok()?)?, origin))
    }

    pub(super) fn is_dead(&self) -> bool {
        // Acquire: pairs with the Release store at the crash point or revocation.
        self.dead.load(Ordering::Acquire)
    }

    /// The end of an attempt that settles `record` (or hands it to the retry topic): its
    /// effect, then its offset's completion (in that order, so that no commit covers an
    /// effect that has not happened), unless the consumer died meanwhile.
    pub(super) fn finish(&self, record: Record, effect: Effect, origin: Origin) {
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
    pub(super) fn die(&self) {
        self.dead.store(true, Ordering::Release);
        drop(self.finishing.write());
    }

    /// Records polled and not completed in the assigned partitions.
    pub(super) fn in_flight(&self, assigned: &[u32]) -> u64 {
        assigned
            .iter()
            .filter_map(|&partition| self.progress.get(partition as usize))
            .filter_map(|slot| slot.lock().as_ref().map(|progress| progress.in_flight() as u64))
            .sum()
    }
}
