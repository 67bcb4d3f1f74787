//! `pipeline-reorder`, one cell per strategy:
//! 1. Each event gets its aggregate's next version when it commits, and one of two
//!    producers (chosen at random per event, so a key's events go through both) sends it.
//!    The first producer sends at once; the second sends each record up to
//!    `--producer-jitter` records late (uniformly). The log therefore holds some of a key's
//!    versions out of order within its partition, as an outbox relay or two service
//!    instances racing on one aggregate would write them.
//! 2. One consumer runs the log (a backlog from the start) on the strategy and commits
//!    `contiguous`.
//! 3. Measured: records the producers appended after a higher version of their key, what
//!    reached the projection before a predecessor, the stash it needed, and both
//!    projections' final state: an ordered executor keeps the log's order, so only the
//!    version check can put the versions back.

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strategies::Design;

use super::{
    consume_to_end, consumer_config, events, last_versions, run_cells, slow_treat,
    summarize_single, Bench, PipelineError, Stage, Waits, Wanted, PAYLOAD_BYTES,
};
use crate::pipeline::consumer::ConsumerError;
use crate::pipeline::log::Topic;
use crate::pipeline::retry::RetryConfig;
use crate::pipeline::transport::Backend;
use crate::results::{CommitPolicy, PipelineRun, ReorderReport};
use crate::workload::{ScenarioId, Sizes};

/// Producers racing.
const PRODUCERS: u32 = 2;

/// The log the racing producers write, each key's last version, and the records appended
/// after a higher version of their key.
fn produce(sizes: &Sizes, seed: u64) -> Result<(Topic, BTreeMap<u64, u64>, u64), PipelineError> {
    let events = events(sizes, seed, ScenarioId::PipelineReorder);
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x0005_eed0_f0de);
    // Each event's send time, in events: the first producer's at once, the second's late.
    let mut sends: Vec<(usize, usize)> = (0..events.len())
        .map(|index| {
            let late = if rng.gen_range(0..PRODUCERS) == 0 {
                0
            } else {
                rng.gen_range(0..=sizes.producer_jitter)
            };
            (index + late, index)
        })
        .collect();
    sends.sort_unstable();
    let mut topic = Topic::new("events", sizes.partitions)?;
    let mut highest: BTreeMap<u64, u64> = BTreeMap::new();
    let mut out_of_order = 0;
    for (_, index) in sends {
        let (key, version) = events[index];
        let seen = highest.entry(key).or_insert(0);
        out_of_order += u64::from(version < *seen);
        *seen = version.max(*seen);
        topic.append(key, version, PAYLOAD_BYTES, 0);
    }
    Ok((topic, last_versions(&events), out_of_order))
}

/// The stages of a cell, for its estimate (module `waits`): one consumer runs the log to
/// its end, waiting out every slow record.
pub(super) fn stages(sizes: &Sizes) -> Vec<Stage> {
    let records = sizes.pipeline_records as f64;
    let slow_records = Waits::of(sizes).slow_among(records);
    vec![Stage { records, slow_records, floor_s: 0.0 }]
}

/// The `param` of the scenario's one cell.
pub(super) fn param() -> String {
    format!("producers={PRODUCERS}")
}

/// Runs the cells of `pipeline-reorder` for `strategies`.
pub fn run<B: Backend>(
    bench: &Bench<'_>,
    backend: &B,
    strategies: &[Design],
    wanted: &mut Wanted<'_>,
    each: impl FnMut(&PipelineRun),
) -> Result<Vec<PipelineRun>, PipelineError> {
    let (topic, expected, out_of_order) = produce(bench.sizes, bench.seed)?;
    let name = |_| param();
    let id = ScenarioId::PipelineReorder;
    run_cells(id, &[PRODUCERS], strategies, wanted, each, name, |_, param, s| {
        cell(bench, backend, &topic, &expected, out_of_order, param, s)
    })
}

fn cell<B: Backend>(
    bench: &Bench<'_>,
    backend: &B,
    topic: &Topic,
    expected: &BTreeMap<u64, u64>,
    appended_out_of_order: u64,
    param: String,
    strategy: Design,
) -> Result<PipelineRun, ConsumerError> {
    let sizes = bench.sizes;
    let config = consumer_config(sizes, CommitPolicy::Contiguous, RetryConfig::default())?;
    let (pipeline, report) =
        consume_to_end(bench, backend, topic, config, slow_treat(sizes), strategy, None)?;
    let mut run = summarize_single(
        ScenarioId::PipelineReorder,
        param,
        strategy,
        sizes,
        &pipeline,
        expected,
        report,
    );
    run.reorder = Some(ReorderReport {
        producers: PRODUCERS,
        jitter: sizes.producer_jitter as u64,
        appended_out_of_order,
        reached_out_of_order: run.projection.gaps,
        keys_reordered: run.projection.keys_reordered,
        max_stash: run.projection.max_stash,
    });
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::timer::Timer;
    use crate::pipeline::scenario::tests::{ordered, sizes};
    use crate::pipeline::transport::Embedded;
    use strategies::StrategyConfig;
    use strategies::StrategyId;

    #[test]
    fn racing_producers_reorder_the_log_and_the_version_check_puts_it_back() {
        let sizes = Sizes { pipeline_keys: 50, producer_jitter: 8, ..sizes() };
        let (_, _, out_of_order) = produce(&sizes, 7).unwrap();
        assert!(out_of_order > 0, "the log holds versions out of order");
        let timer = Timer::start();
        let bench = Bench {
            sizes: &sizes,
            seed: 7,
            timer: &timer,
            strategy_config: StrategyConfig::with_workers(2),
            watch: Default::default(),
        };
        let strategies: Vec<Design> =
            ordered().into_iter().filter(|&id| id != StrategyId::Inline).collect();
        let backend = Embedded::default();
        for run in run(&bench, &backend, &strategies, &mut |_, _| true, |_| {}).unwrap() {
            let reorder = run.reorder.as_ref().unwrap();
            assert_eq!(reorder.appended_out_of_order, out_of_order);
            assert!(
                reorder.reached_out_of_order > 0,
                "{}: in order in, out of order",
                run.strategy
            );
            assert!(run.projection.final_state_correct, "{}", run.strategy);
            assert!(!run.projection.naive_final_state_correct, "{}", run.strategy);
            assert_eq!(run.lost, 0, "{}", run.strategy);
        }
    }
}
