//! `pipeline-rebalance`, one cell per (commit policy, strategy):
//! 1. A consumer group of `--consumers` members, each with an executor of its own, shares
//!    the partitions (partition `p` goes to the `p mod C`th member). The log is a backlog
//!    from the start.
//! 2. Once a third of the records were applied, the last member leaves; once two thirds
//!    were, a new member joins. Each rebalance is eager, as Kafka's classic protocol is:
//!    every member gives its partitions up (stops polling, lets nothing more apply, commits
//!    what completed, abandons what is in flight), then the new assignment starts, each
//!    member resuming its partitions from the group's commits.
//! 3. Measured, per rebalance: the records polled but not covered by the revoking members'
//!    last commits (the most the new owners can run again) and the pause, from the
//!    revocation to the first record the new assignment applied; over the run: records
//!    lost, duplicates (records delivered twice) against that bound, and whether every
//!    key's versions reached the projection in order.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use strategies::Design;

use super::{
    backlog, consumer_config, events, last_versions, run_cells, slow_treat, summarize, Bench,
    PipelineError, Stage, Waits, Wanted,
};
use crate::pipeline::consumer::{
    run_incarnation, ConsumerConfig, ConsumerError, Incarnation, Pipeline, Signal, Stop, Treat,
};
use crate::pipeline::log::Topic;
use crate::pipeline::retry::RetryConfig;
use crate::pipeline::transport::{EmbeddedTransport, MemberId, Transport};
use crate::results::{
    CommitPolicy, IncarnationReport, PipelineRun, RebalanceEvent, RebalanceReport,
};
use crate::workload::{ScenarioId, Sizes};

/// One assignment of the partitions, and when it ends.
struct Generation {
    members: Vec<MemberId>,
    /// Applications after which its partitions are revoked (`None`: it runs to the end).
    revoke_after: Option<u64>,
    /// What the rebalance that ends it is.
    kind: &'static str,
}

/// A revocation as the driver saw it.
struct Revocation {
    kind: &'static str,
    before: u32,
    after: u32,
    /// When the signal was raised, in nanoseconds since the pipeline's epoch.
    revoked_ns: u64,
    /// When every revoked member had stopped.
    gone_ns: u64,
    uncommitted: u64,
    in_flight: u64,
}

/// The three generations: all members; one left; one joined.
fn generations(consumers: usize, records: u64) -> Vec<Generation> {
    let all: Vec<MemberId> = (0..consumers as u32).map(MemberId).collect();
    let left = all[..all.len() - 1].to_vec();
    let mut joined = left.clone();
    joined.push(MemberId(consumers as u32));
    vec![
        Generation { members: all, revoke_after: Some(records / 3), kind: "leave" },
        Generation { members: left, revoke_after: Some(records * 2 / 3), kind: "join" },
        Generation { members: joined, revoke_after: None, kind: "" },
    ]
}

/// The stages of a cell, for its estimate (module `waits`): the three generations of
/// [`generations`], one after another, each a third of the log. The first two are revoked
/// and abandon their slow records; the last runs to the end, waiting out every slow record
/// left, its own and those the revocations abandoned.
pub(super) fn stages(sizes: &Sizes) -> Vec<Stage> {
    let records = sizes.pipeline_records as f64;
    let revoked = Stage { records: records / 3.0, ..Stage::default() };
    let last = Stage {
        records: records / 3.0,
        slow_records: Waits::of(sizes).slow_among(records),
        floor_s: 0.0,
    };
    vec![revoked, revoked, last]
}

/// Runs the cells of `pipeline-rebalance` for `policies` x `strategies`.
pub fn run(
    bench: &Bench<'_>,
    policies: &[CommitPolicy],
    strategies: &[Design],
    wanted: &mut Wanted<'_>,
    each: impl FnMut(&PipelineRun),
) -> Result<Vec<PipelineRun>, PipelineError> {
    let events = events(bench.sizes, bench.seed, ScenarioId::PipelineRebalance);
    let topic = backlog(&events, bench.sizes.partitions)?;
    let expected = last_versions(&events);
    let name = super::policy_param;
    run_cells(
        ScenarioId::PipelineRebalance,
        policies,
        strategies,
        wanted,
        each,
        name,
        |policy, param, s| cell(bench, &topic, &expected, policy, param, s),
    )
}

/// Gives partition `p` to the `p mod len`th of `members`, and nothing to `leaving`.
fn assign(
    transport: &EmbeddedTransport,
    members: &[MemberId],
    leaving: &[MemberId],
) -> Result<(), ConsumerError> {
    for &member in leaving {
        transport.assign(member, &[])?;
    }
    for (index, &member) in members.iter().enumerate() {
        let partitions: Vec<u32> = (0..transport.partitions())
            .filter(|partition| *partition as usize % members.len() == index)
            .collect();
        transport.assign(member, &partitions)?;
    }
    Ok(())
}

/// One cell: the generations in turn, each assigned the partitions and revoked at its
/// count, then the run summarized with its rebalances.
fn cell(
    bench: &Bench<'_>,
    topic: &Topic,
    expected: &BTreeMap<u64, u64>,
    policy: CommitPolicy,
    param: String,
    strategy: Design,
) -> Result<PipelineRun, ConsumerError> {
    let sizes: &Sizes = bench.sizes;
    let transport =
        Arc::new(EmbeddedTransport::new(topic.clone()).with_metadata_limit(sizes.metadata_limit));
    let config = consumer_config(sizes, policy, RetryConfig::default())?;
    let treat = slow_treat(sizes);
    let pipeline =
        Pipeline::new(Arc::clone(&transport), bench.timer.clone()).watched(bench.watch.clone());
    let started = Instant::now();
    let mut incarnations: Vec<IncarnationReport> = Vec::new();
    let mut rebalances: Vec<Revocation> = Vec::new();
    let plan = generations(sizes.consumers, topic.len());
    let mut previous: Vec<MemberId> = Vec::new();
    for (index, generation) in plan.iter().enumerate() {
        let leaving: Vec<MemberId> =
            previous.iter().copied().filter(|m| !generation.members.contains(m)).collect();
        assign(&transport, &generation.members, &leaving)?;
        let (revoked_ns, gone_ns, reports) =
            run_generation(bench, &pipeline, generation, strategy, config, &treat);
        let reports = reports.into_iter().collect::<Result<Vec<_>, _>>()?;
        if let Some(revoked_ns) = revoked_ns {
            let next = plan.get(index + 1);
            rebalances.push(Revocation::new(generation, next, revoked_ns, gone_ns, &reports));
        }
        incarnations.extend(reports);
        previous = generation.members.clone();
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let events = rebalance_events(topic, &pipeline, started, rebalances);
    let mut run = summarize(
        ScenarioId::PipelineRebalance,
        param,
        strategy,
        policy,
        sizes,
        &pipeline,
        expected,
        incarnations,
        elapsed_s,
    );
    let duplicates_bound = events.iter().map(|event| event.uncommitted).sum();
    let in_flight = events.iter().map(|event| event.in_flight).sum();
    let duplicate_pct = 100.0 * run.redelivered as f64 / run.records.max(1) as f64;
    run.rebalance = Some(RebalanceReport {
        consumers: sizes.consumers as u32,
        events,
        duplicates_bound,
        duplicates_within_bound: run.redelivered <= duplicates_bound,
        in_flight,
        duplicate_pct,
    });
    Ok(run)
}

/// Runs `generation`, each member an incarnation on a thread of its own, and revokes its
/// partitions when its time comes. Returns when the revocation was signalled (`None`: it
/// ran to the end) and when every member had stopped, in nanoseconds since the pipeline's
/// epoch, and the members' reports.
fn run_generation(
    bench: &Bench<'_>,
    pipeline: &Pipeline,
    generation: &Generation,
    strategy: Design,
    config: ConsumerConfig,
    treat: &Treat,
) -> (Option<u64>, u64, Vec<Result<IncarnationReport, ConsumerError>>) {
    let signal = Signal::new();
    let stop = match generation.revoke_after {
        Some(_) => Stop::Revoke(signal.clone()),
        None => Stop::AtEnd,
    };
    thread::scope(|scope| {
        let handles: Vec<_> = generation
            .members
            .iter()
            .map(|&member| {
                let incarnation = Incarnation::new(
                    member,
                    strategy,
                    bench.strategy_config,
                    config,
                    Arc::clone(treat),
                    stop.clone(),
                );
                scope.spawn(move || run_incarnation(pipeline, incarnation))
            })
            .collect();
        let members = generation.members.len() as u32;
        let revoked_ns =
            generation.revoke_after.map(|after| revoke(pipeline, &signal, after, members));
        let reports: Vec<Result<IncarnationReport, ConsumerError>> = handles
            .into_iter()
            .map(|handle| handle.join().unwrap_or_else(|_| panic!("a member panicked")))
            .collect();
        (revoked_ns, pipeline.now_ns(), reports)
    })
}

/// Raises `signal` once `after` records were applied, or once all `members` have nothing
/// left to do (a policy that skips records may never reach the count), or at once when the
/// cell is cancelled; returns when, in nanoseconds since the pipeline's epoch.
fn revoke(pipeline: &Pipeline, signal: &Signal, after: u64, members: u32) -> u64 {
    while pipeline.tally.applied_total() < after
        && signal.idle() < members
        && !pipeline.watch.is_cancelled()
    {
        thread::sleep(Duration::from_micros(200));
    }
    let revoked_ns = pipeline.now_ns();
    signal.raise();
    revoked_ns
}

impl Revocation {
    /// The revocation that ended `generation` (`next` follows it), from its members'
    /// reports.
    fn new(
        generation: &Generation,
        next: Option<&Generation>,
        revoked_ns: u64,
        gone_ns: u64,
        reports: &[IncarnationReport],
    ) -> Self {
        Self {
            kind: generation.kind,
            before: generation.members.len() as u32,
            after: next.map_or(0, |next| next.members.len() as u32),
            revoked_ns,
            gone_ns,
            uncommitted: reports.iter().map(|report| report.uncommitted_at_end).sum(),
            in_flight: reports.iter().map(|report| report.in_flight_at_end).sum(),
        }
    }
}

/// The revocations as the report shows them: each one's pause runs from the revocation to
/// the first record applied once every revoked member had stopped.
fn rebalance_events(
    topic: &Topic,
    pipeline: &Pipeline,
    started: Instant,
    rebalances: Vec<Revocation>,
) -> Vec<RebalanceEvent> {
    let tally = &pipeline.tally;
    let applied_at: Vec<u64> = topic
        .records()
        .filter_map(|record| tally.first_applied_ns(record.partition, record.offset))
        .collect();
    let first_applied_after =
        |ns: u64| -> Option<u64> { applied_at.iter().copied().filter(|&at| at >= ns).min() };
    let epoch_to_start = started.duration_since(pipeline.epoch).as_secs_f64();
    rebalances
        .into_iter()
        .map(|revocation| {
            let resumed = first_applied_after(revocation.gone_ns).unwrap_or(revocation.gone_ns);
            RebalanceEvent {
                kind: revocation.kind.into(),
                members_before: revocation.before,
                members_after: revocation.after,
                revoked_at_s: revocation.revoked_ns as f64 / 1e9 - epoch_to_start,
                pause_s: resumed.saturating_sub(revocation.revoked_ns) as f64 / 1e9,
                uncommitted: revocation.uncommitted,
                in_flight: revocation.in_flight,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::timer::Timer;
    use crate::pipeline::scenario::tests::{ordered, sizes};
    use strategies::StrategyConfig;
    use strategies::StrategyId;

    #[test]
    fn a_rebalance_with_an_ordered_strategy_loses_nothing_and_keeps_every_key_in_order() {
        let sizes = Sizes { partitions: 4, consumers: 3, ..sizes() };
        let timer = Timer::start();
        let bench = Bench {
            sizes: &sizes,
            seed: 11,
            timer: &timer,
            strategy_config: StrategyConfig::with_workers(2),
            watch: Default::default(),
        };
        let strategies: Vec<Design> =
            ordered().into_iter().filter(|&id| id != StrategyId::Inline).collect();
        let policies = [CommitPolicy::Contiguous, CommitPolicy::ContiguousMetadata];
        for run in run(&bench, &policies, &strategies, &mut |_, _| true, |_| {}).unwrap() {
            let what = format!("{} {}", run.strategy, run.param);
            let rebalance = run.rebalance.as_ref().unwrap();
            assert_eq!(rebalance.events.len(), 2, "{what}");
            assert_eq!(
                [rebalance.events[0].members_after, rebalance.events[1].members_after],
                [2, 3],
                "{what}"
            );
            assert_eq!(run.incarnations.len(), 3 + 2 + 3, "{what}");
            assert_eq!(run.lost, 0, "{what}");
            assert_eq!(run.projection.gaps, 0, "{what}: every key's versions in order");
            assert!(run.projection.final_state_correct, "{what}");
            assert!(
                rebalance.duplicates_within_bound,
                "{what}: {} > {}",
                run.redelivered, rebalance.duplicates_bound
            );
            if run.policy == CommitPolicy::ContiguousMetadata {
                assert!(
                    run.redelivered <= rebalance.in_flight,
                    "{what}: only what was in flight comes back, {} > {}",
                    run.redelivered,
                    rebalance.in_flight
                );
            }
        }
    }
}
