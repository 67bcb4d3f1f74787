//! `pipeline-rebalance`, one cell per (commit policy, strategy):
//! 1. A consumer group of `--consumers` members, each with an executor of its own, joins
//!    and the group shares the partitions out (the embedded group gives partition `p` to
//!    the `p mod C`th member). The log is a backlog from the start.
//! 2. Once a third of the records were applied, the last member leaves the group; once two
//!    thirds were, a new member joins it. Either way the group rebalances, as its transport
//!    decides: the embedded group eagerly, as Kafka's classic protocol does. Every member is
//!    revoked its partitions at its next poll and gives them up in the callback (stops
//!    polling, lets nothing more apply, commits what completed, abandons what is in
//!    flight); no member is assigned its new share before all have, and each then resumes
//!    its partitions from the group's commits.
//! 3. Measured, per rebalance: the records polled but not covered by the revoking members'
//!    last commits (the most the new owners can run again) and the pause, from the
//!    membership change to the first record the new assignment applied; over the run:
//!    records lost, duplicates (records delivered twice) against that bound, and whether
//!    every key's versions reached the projection in order.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use strategies::Design;

use super::cell::CellContext;
use super::{Bench, Stage, Waits};
use crate::pipeline::consumer::{
    run_incarnation, ConsumerConfig, ConsumerError, Incarnation, Pipeline, Signal, Stop, Treat,
};
use crate::pipeline::log::Topic;
use crate::pipeline::retry::RetryConfig;
use crate::pipeline::transport::{Backend, MemberId, Transport, TransportError};
use crate::results::{IncarnationReport, PipelineRun, RebalanceEvent, RebalanceReport};
use crate::workload::Sizes;

/// One membership of the group, and when it ends.
struct Generation {
    members: Vec<MemberId>,
    /// Applications after which the membership changes (`None`: it runs to the end).
    revoke_after: Option<u64>,
    /// What the membership change that ends it is.
    kind: &'static str,
}

/// A revocation as the driver saw it.
struct Revocation {
    kind: &'static str,
    before: u32,
    after: u32,
    /// When the membership changed, in nanoseconds since the pipeline's epoch.
    revoked_ns: u64,
    /// When every revoked member had stopped.
    gone_ns: u64,
    uncommitted: u64,
    in_flight: u64,
}

/// The clients of the group's members, by id.
type Clients<T> = BTreeMap<MemberId, Arc<<T as Transport>::Member>>;

/// What every generation of a cell shares.
struct Cell<'a, T: Transport> {
    bench: &'a Bench<'a>,
    pipeline: &'a Pipeline,
    transport: &'a T,
    strategy: Design,
    config: ConsumerConfig,
    treat: Treat,
}

/// How a generation went: when its membership changed (`None`: it ran to the end), when
/// every member had stopped, in nanoseconds since the pipeline's epoch, its members'
/// reports, and the clients of the members that joined at its end.
type Generated<T> =
    (Option<u64>, u64, Vec<Result<IncarnationReport, ConsumerError>>, Vec<(MemberId, ClientOf<T>)>);

/// A client that joined, or why it could not.
type ClientOf<T> = Result<Arc<<T as Transport>::Member>, TransportError>;

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

/// One cell: the generations in turn, each ended by a member leaving or joining at its
/// count, then the run summarized with its rebalances.
pub(super) fn cell<B: Backend>(context: &CellContext<'_, B>) -> Result<PipelineRun, ConsumerError> {
    let (sizes, topic) = (context.sizes(), &context.log.topic);
    let (pipeline, transport) = context.open()?;
    let cell = Cell {
        bench: context.bench,
        pipeline: &pipeline,
        transport: &transport,
        strategy: context.strategy,
        config: context.consumer_config(RetryConfig::default())?,
        treat: context.slow_treat(),
    };
    let started = Instant::now();
    let mut incarnations: Vec<IncarnationReport> = Vec::new();
    let mut rebalances: Vec<Revocation> = Vec::new();
    let plan = generations(sizes.consumers, topic.len());
    // The first members all join before any of them polls: the group shares the partitions
    // out once.
    let mut clients: Clients<B::Transport> = BTreeMap::new();
    for &member in &plan[0].members {
        clients.insert(member, transport.join(member)?);
    }
    for (index, generation) in plan.iter().enumerate() {
        let next = plan.get(index + 1);
        let (revoked_ns, gone_ns, reports, joined) =
            run_generation(&cell, &clients, generation, next);
        let reports = reports.into_iter().collect::<Result<Vec<_>, _>>()?;
        if let Some(revoked_ns) = revoked_ns {
            rebalances.push(Revocation::new(generation, next, revoked_ns, gone_ns, &reports));
        }
        incarnations.extend(reports);
        clients.retain(|member, _| next.is_some_and(|next| next.members.contains(member)));
        for (member, client) in joined {
            clients.insert(member, client?);
        }
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let events = rebalance_events(topic, &pipeline, started, rebalances);
    let mut run = context.summarize(&pipeline, &context.log.expected, incarnations, elapsed_s);
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

/// Runs `generation`, each member an incarnation on a thread of its own, and changes the
/// membership into `next`'s when its time comes: the members `next` adds join, and those
/// it drops are told to leave; the group then revokes every member's partitions, which
/// ends their incarnations.
fn run_generation<T: Transport>(
    cell: &Cell<'_, T>,
    clients: &Clients<T>,
    generation: &Generation,
    next: Option<&Generation>,
) -> Generated<T> {
    let signal = Signal::new();
    let change = generation.revoke_after.zip(next);
    let stop = |member: &MemberId| match change {
        Some((_, next)) => {
            Stop::Revoked { signal: signal.clone(), leave: !next.members.contains(member) }
        }
        None => Stop::AtEnd,
    };
    let pipeline = cell.pipeline;
    thread::scope(|scope| {
        let handles: Vec<_> = clients
            .iter()
            .filter(|(member, _)| generation.members.contains(member))
            .map(|(member, client)| {
                let incarnation = Incarnation::new(
                    cell.strategy,
                    cell.bench.strategy_config,
                    cell.config,
                    Arc::clone(&cell.treat),
                    stop(member),
                );
                scope.spawn(move || run_incarnation(pipeline, client, incarnation))
            })
            .collect();
        let members = handles.len() as u32;
        let mut joined = Vec::new();
        let revoked_ns = change.map(|(after, next)| {
            let at = wait_for(pipeline, &signal, after, members);
            for &member in next.members.iter().filter(|m| !generation.members.contains(m)) {
                joined.push((member, cell.transport.join(member)));
            }
            signal.raise();
            at
        });
        let reports: Vec<Result<IncarnationReport, ConsumerError>> = handles
            .into_iter()
            .map(|handle| handle.join().unwrap_or_else(|_| panic!("a member panicked")))
            .collect();
        (revoked_ns, pipeline.now_ns(), reports, joined)
    })
}

/// Waits until all `members` have their assignment, and then until `after` records were
/// applied or all of them have nothing left to do (a policy that skips records may never
/// reach the count), or until the cell is cancelled; returns when, in nanoseconds since the
/// pipeline's epoch.
fn wait_for(pipeline: &Pipeline, signal: &Signal, after: u64, members: u32) -> u64 {
    // A membership change before a member has its assignment would be one it never sees
    // revoked: the group would assign it the new generation's share at once.
    while signal.assigned() < members && !pipeline.watch.is_cancelled() {
        thread::sleep(Duration::from_micros(200));
    }
    while pipeline.tally.applied_total() < after
        && signal.idle() < members
        && !pipeline.watch.is_cancelled()
    {
        thread::sleep(Duration::from_micros(200));
    }
    pipeline.now_ns()
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
    use crate::pipeline::scenario::tests::{ordered, run_embedded, sizes};
    use crate::pipeline::scenario::PipelinePlan;
    use crate::results::CommitPolicy;
    use crate::workload::ScenarioId;
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
        let plan = PipelinePlan { commit_policies: policies.to_vec(), ..PipelinePlan::default() };
        for run in run_embedded(ScenarioId::PipelineRebalance, &bench, &plan, &strategies) {
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
