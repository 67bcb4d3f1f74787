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

use super::cell::CellContext;
use super::produce::PRODUCERS;
use super::{Stage, Waits};
use crate::pipeline::consumer::ConsumerError;
use crate::pipeline::retry::RetryConfig;
use crate::pipeline::transport::Backend;
use crate::results::{PipelineRun, ReorderReport};
use crate::workload::Sizes;

/// The stages of a cell, for its estimate (module `waits`): one consumer runs the log to
/// its end, waiting out every slow record.
pub(super) fn stages(sizes: &Sizes) -> Vec<Stage> {
    let records = sizes.pipeline_records as f64;
    let slow_records = Waits::of(sizes).slow_among(records);
    vec![Stage { records, slow_records, floor_s: 0.0 }]
}

/// One cell: one consumer runs the log the racing producers wrote to its end.
pub(super) fn cell<B: Backend>(cell: &CellContext<'_, B>) -> Result<PipelineRun, ConsumerError> {
    let config = cell.consumer_config(RetryConfig::default())?;
    let (pipeline, report) = cell.consume_to_end(config, cell.slow_treat(), None)?;
    let mut run = cell.summarize_single(&pipeline, &cell.log.expected, report);
    run.reorder = Some(ReorderReport {
        producers: PRODUCERS,
        jitter: cell.sizes().producer_jitter as u64,
        appended_out_of_order: cell.log.appended_out_of_order,
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
    use crate::pipeline::scenario::produce::Log;
    use crate::pipeline::scenario::tests::{ordered, run_embedded, sizes};
    use crate::pipeline::scenario::Bench;
    use crate::workload::scenario::pipeline::{Cells, Produce};
    use crate::workload::ScenarioId;
    use strategies::StrategyId;
    use strategies::{Design, StrategyConfig};

    #[test]
    fn the_spec_names_the_one_cell_by_its_producers() {
        let spec = ScenarioId::PipelineReorder.pipeline().unwrap();
        assert_eq!(spec.cells, Cells::One("producers=2"));
        assert_eq!(PRODUCERS, 2);
    }

    #[test]
    fn racing_producers_reorder_the_log_and_the_version_check_puts_it_back() {
        let sizes = Sizes { pipeline_keys: 50, producer_jitter: 8, ..sizes() };
        let out_of_order = Log::of(ScenarioId::PipelineReorder, Produce::Racing, &sizes, 7)
            .unwrap()
            .appended_out_of_order;
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
        for run in
            run_embedded(ScenarioId::PipelineReorder, &bench, &Default::default(), &strategies)
        {
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
