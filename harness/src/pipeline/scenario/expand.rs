//! `pipeline-expand`, one cell per (mitigation, strategy):
//! 1. The producer writes the first half of the log over `--partitions` partitions, the
//!    topic grows to `--expand-to`, and it writes the second half over the new count. A key
//!    whose `hash mod P` changes (a *moved* key) has its older records in an old partition
//!    and its newer ones in a new partition. The log is a backlog from the start, as for a
//!    consumer catching up when the expansion happens.
//! 2. One consumer owns every partition and polls them round-robin, so a moved key's new
//!    records can run while its old ones still wait in the old partition's backlog.
//! 3. Mitigations: `none` (consume everything at once; the version-aware projection stashes
//!    what arrives early, and the naive projection beside it shows the state without that
//!    check) and `drain-then-expand` (the new partitions stay paused until the group has
//!    committed every old partition up to where it stood at the expansion).
//! 4. Measured: moved keys, keys and records that reached the projection out of order,
//!    the stash, how long the new partitions were held (the drain's stall), the longest
//!    commit freeze, and the timeline of applications in old and new partitions.

use std::collections::BTreeSet;

use super::cell::CellContext;
use super::{Stage, Waits};
use crate::pipeline::consumer::{ConsumerError, Hold, Pipeline};
use crate::pipeline::log::{partition_for, Topic};
use crate::pipeline::retry::RetryConfig;
use crate::pipeline::transport::Backend;
use crate::results::{ExpansionReport, Mitigation, PipelineRun, TimelineBin};
use crate::workload::Sizes;

/// Bins of the expansion timeline.
const TIMELINE_BINS: usize = 40;

/// The stages of a cell, for its estimate (module `waits`). `none`: one consumer runs the
/// log to its end, waiting out every slow record. `drain-then-expand`: first the old
/// partitions (the first half of the log, and their share of the second), to the commit
/// that lifts the hold on the new ones, waiting out their slow records; then the new
/// partitions, waiting out theirs.
pub(super) fn stages(sizes: &Sizes, mitigation: Mitigation) -> Vec<Stage> {
    let waits = Waits::of(sizes);
    let records = sizes.pipeline_records as f64;
    let stage =
        |records: f64| Stage { records, slow_records: waits.slow_among(records), floor_s: 0.0 };
    match mitigation {
        Mitigation::None => vec![stage(records)],
        Mitigation::DrainThenExpand => {
            let kept = f64::from(sizes.partitions) / f64::from(sizes.expand_to.max(1));
            let old = records / 2.0 + records / 2.0 * kept.min(1.0);
            vec![stage(old), stage(records - old)]
        }
    }
}

/// The hold drain-then-expand puts on the partitions past `marks`.
fn drain_hold(topic: &Topic, marks: &[(u32, u64)]) -> Hold {
    Hold {
        partitions: (marks.len() as u32..topic.partitions()).collect(),
        until_committed: marks.to_vec(),
    }
}

/// One cell: one consumer runs the expanded log to its end, holding the new partitions
/// under drain-then-expand.
pub(super) fn cell<B: Backend>(cell: &CellContext<'_, B>) -> Result<PipelineRun, ConsumerError> {
    let (sizes, topic, mitigation) = (cell.sizes(), &cell.log.topic, cell.param.mitigation());
    let config = cell.consumer_config(RetryConfig::default())?;
    let hold =
        (mitigation == Mitigation::DrainThenExpand).then(|| drain_hold(topic, &cell.log.marks));
    let (pipeline, report) = cell.consume_to_end(config, cell.slow_treat(), hold)?;
    let held_s = report.held_s;
    let mut run = cell.summarize_single(&pipeline, &cell.log.expected, report);
    run.expansion = Some(ExpansionReport {
        mitigation,
        from_partitions: sizes.partitions,
        to_partitions: topic.partitions(),
        keys_moved: moved_keys(topic, sizes.partitions).len() as u64,
        keys_reordered: run.projection.keys_reordered,
        records_reordered: run.projection.gaps,
        held_s,
        timeline: timeline(&pipeline, topic, sizes.partitions, run.incarnations[0].started_at_s),
    });
    Ok(run)
}

/// Keys with records in both an old partition and a new one.
fn moved_keys(topic: &Topic, old_partitions: u32) -> BTreeSet<u64> {
    let keys_in = |partitions: std::ops::Range<u32>| -> BTreeSet<u64> {
        partitions
            .filter_map(|partition| topic.partition(partition).ok())
            .flat_map(|partition| partition.records().iter().map(|record| record.key))
            .collect()
    };
    let old = keys_in(0..old_partitions);
    let new = keys_in(old_partitions..topic.partitions());
    old.intersection(&new).copied().collect()
}

/// The first applications of the cell in [`TIMELINE_BINS`] slices of its time.
fn timeline(
    pipeline: &Pipeline,
    topic: &Topic,
    old_partitions: u32,
    started_at_s: f64,
) -> Vec<TimelineBin> {
    let start_ns = (started_at_s * 1e9) as u64;
    let mut applied: Vec<(u64, bool)> = Vec::new();
    for record in topic.records() {
        if let Some(at) = pipeline.tally.first_applied_ns(record.partition, record.offset) {
            applied.push((at.saturating_sub(start_ns), record.partition >= old_partitions));
        }
    }
    let last = applied.iter().map(|&(at, _)| at).max().unwrap_or(0);
    let width = (last / TIMELINE_BINS as u64).max(1);
    let mut bins: Vec<TimelineBin> = (0..TIMELINE_BINS)
        .map(|bin| TimelineBin {
            at_s: (bin as u64 * width) as f64 / 1e9,
            ..TimelineBin::default()
        })
        .collect();
    for (at, new) in applied {
        let bin = &mut bins[((at / width) as usize).min(TIMELINE_BINS - 1)];
        if new {
            bin.new_partitions += 1;
        } else {
            bin.old_partitions += 1;
        }
    }
    bins
}

/// Whether `key` moves when a topic grows from `from` to `to` partitions.
pub fn moves(key: u64, from: u32, to: u32) -> bool {
    partition_for(key, from) != partition_for(key, to)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::timer::Timer;
    use std::collections::BTreeMap;

    use crate::pipeline::consumer::{run_incarnation, Incarnation, Stop, Treat, Treatment};
    use crate::pipeline::log::Record;
    use crate::pipeline::scenario::cell::consumer_config;
    use crate::pipeline::scenario::produce::PAYLOAD_BYTES;
    use crate::pipeline::scenario::tests::{ordered, run_embedded, sizes};
    use crate::pipeline::scenario::Bench;
    use crate::pipeline::transport::{EmbeddedTransport, MemberId, Transport};
    use crate::results::CommitPolicy;
    use crate::workload::ScenarioId;
    use std::sync::Arc;
    use strategies::{Design, StrategyConfig, StrategyId};

    /// A topic of one partition grown to two, with 20 keys that move to the new one, each
    /// with versions 1-5 before the expansion and 6-10 after; the old partition's end at
    /// the expansion.
    fn expanded() -> (Topic, BTreeMap<u64, u64>, Vec<(u32, u64)>) {
        let keys: Vec<u64> = (0..).filter(|&key| moves(key, 1, 2)).take(20).collect();
        let mut topic = Topic::new("events", 1).unwrap();
        for version in 1..=5 {
            for &key in &keys {
                topic.append(key, version, PAYLOAD_BYTES, 0);
            }
        }
        let marks = vec![(0, topic.end_offset(0).unwrap())];
        topic.expand_to(2).unwrap();
        for version in 6..=10 {
            for &key in &keys {
                topic.append(key, version, PAYLOAD_BYTES, 0);
            }
        }
        assert_eq!(topic.end_offset(1).unwrap(), 100, "every later record moved");
        (topic, keys.iter().map(|&key| (key, 10)).collect(), marks)
    }

    /// The old partition's member A and the new partition's member B; B runs `first`.
    fn consume(strategy: Design, drain: bool) -> crate::results::ProjectionReport {
        let (topic, expected, marks) = expanded();
        let transport = EmbeddedTransport::new(topic.clone());
        // Both join before either polls: the group gives A the old partition and B the new.
        let (a, b) = (transport.join(MemberId(1)).unwrap(), transport.join(MemberId(2)).unwrap());
        let pipeline = Pipeline::new(&topic, Timer::start());
        let config =
            consumer_config(&sizes(), CommitPolicy::Contiguous, RetryConfig::default()).unwrap();
        let run: Treat = Arc::new(|_: &Record| Treatment::Run);
        let incarnation = || {
            let settings = StrategyConfig::with_workers(2);
            Incarnation::new(strategy, settings, config, Arc::clone(&run), Stop::AtEnd)
        };
        if drain {
            // B starts first but holds its partition until A has committed the backlog.
            let mut held = incarnation();
            held.hold = Some(drain_hold(&topic, &marks));
            std::thread::scope(|scope| {
                let (pipeline, b) = (&pipeline, &b);
                let b = scope.spawn(move || run_incarnation(pipeline, b, held).unwrap());
                std::thread::sleep(std::time::Duration::from_millis(30));
                run_incarnation(pipeline, &a, incarnation()).unwrap();
                assert!(b.join().unwrap().held_s > 0.0, "{strategy}: B waited");
            });
        } else {
            // The old partition's consumer is held (not started) while the new one runs.
            run_incarnation(&pipeline, &b, incarnation()).unwrap();
            run_incarnation(&pipeline, &a, incarnation()).unwrap();
        }
        assert_eq!(pipeline.tally.lost_and_redelivered(), (0, 0), "{strategy}");
        pipeline.projection.report(&expected)
    }

    #[test]
    fn expansion_without_draining_reorders_and_draining_first_reorders_nothing() {
        for strategy in ordered() {
            let none = consume(strategy, false);
            assert_eq!(none.keys_reordered, 20, "{strategy}: every moved key");
            assert_eq!(none.gaps, 100, "{strategy}: v6-v10 of each key came first");
            assert!(none.final_state_correct, "{strategy}: the version check absorbs it");
            assert!(!none.naive_final_state_correct, "{strategy}: without it the state is wrong");
            let drained = consume(strategy, true);
            assert_eq!((drained.gaps, drained.keys_reordered), (0, 0), "{strategy}");
            assert!(drained.final_state_correct && drained.naive_final_state_correct);
        }
    }

    #[test]
    fn the_suite_cells_measure_both_mitigations() {
        let sizes = Sizes { partitions: 2, expand_to: 4, ..sizes() };
        let timer = Timer::start();
        let bench = Bench {
            sizes: &sizes,
            seed: 3,
            timer: &timer,
            strategy_config: StrategyConfig::with_workers(2),
            watch: Default::default(),
        };
        let strategies = [StrategyId::KeyedMailbox.into()];
        let runs =
            run_embedded(ScenarioId::PipelineExpand, &bench, &Default::default(), &strategies);
        assert_eq!(runs.len(), 2);
        for run in &runs {
            let expansion = run.expansion.as_ref().unwrap();
            assert_eq!((expansion.from_partitions, expansion.to_partitions), (2, 4));
            assert!(expansion.keys_moved > 0);
            assert!(run.projection.final_state_correct, "{}", run.param);
            let applied: u64 =
                expansion.timeline.iter().map(|bin| bin.old_partitions + bin.new_partitions).sum();
            assert_eq!(applied, run.records, "every record in the timeline once");
            if expansion.mitigation == Mitigation::DrainThenExpand {
                assert_eq!(expansion.records_reordered, 0);
                assert!(expansion.held_s > 0.0);
            }
        }
    }
}
