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
//!
//! By job: what an incarnation runs with (`config`), the deliveries' tally (`tally`), what
//! outlives every consumer (`pipeline`), its failures (`error`), what its threads share
//! (`shared`), steps 1, 2 and 5 (`run`), step 3 (`handle`), step 2's pauses (`pauses`) and
//! step 4 (`committer`).
//!
//! [`Commit`]: crate::pipeline::transport::Commit
//! [`Member`]: crate::pipeline::transport::Member
//! [`PartitionProgress`]: crate::pipeline::commit::PartitionProgress
//! [`PartitionProgress::commit`]: crate::pipeline::commit::PartitionProgress::commit
//! [`Projection`]: crate::pipeline::projection::Projection
//! [`RebalanceListener`]: crate::pipeline::transport::RebalanceListener
//! [`Transport`]: crate::pipeline::transport::Transport
//! [`Watch`]: crate::watch::Watch

mod committer;
mod config;
mod error;
mod handle;
mod pauses;
mod pipeline;
mod run;
mod shared;
mod tally;

pub use config::{
    ConsumerConfig, Hold, Incarnation, Signal, Stop, Treat, Treatment, DEFAULT_MAX_POLL_RECORDS,
};
pub use error::ConsumerError;
pub use pipeline::Pipeline;
pub use run::run_incarnation;
pub use tally::{Delivery, DeliveryTally};

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::thread;
    use std::time::Duration;

    use strategies::{Design, StrategyConfig};

    use super::*;
    use crate::measure::timer::Timer;
    use crate::pipeline::commit::MetadataLimit;
    use crate::pipeline::log::{Record, Topic};
    use crate::pipeline::projection::Projection;
    use crate::pipeline::retry::RetryConfig;
    use crate::pipeline::transport::{
        Commit, EmbeddedTransport, Member, MemberId, RebalanceListener, Transport, TransportError,
    };
    use crate::results::{CommitPolicy, IncarnationReport};
    use crate::watch::Watch;
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
