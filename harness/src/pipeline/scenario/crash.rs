//! `pipeline-crash`, one cell per (commit policy, strategy):
//! 1. The log is a backlog from the start (every record produced at 0).
//! 2. A consumer (one member, every partition) runs it on the strategy and commits every
//!    `--commit-interval-ms` by the cell's policy.
//! 3. After `--crash-after` completions it dies at once: no record starts or applies any
//!    more, no final commit; the executor is force-closed.
//! 4. A new consumer, on a new executor, resumes from the committed offsets (and metadata)
//!    and consumes to the end.
//! 5. Measured: what every pipeline cell measures (module `scenario`); lost and
//!    redelivered are the crash's.
//!
//! A consumer driver's cell (module `outside`) runs the same log in another process, which
//! is killed at the crash point and started again.

use std::sync::Arc;
use std::time::Duration;

use strategies::{Design, StrategyConfig};

use super::cell::CellContext;
use super::{run_on, Bench, PipelineError, PipelinePlan, Stage, Waits};
use crate::measure::timer::Timer;
use crate::pipeline::consumer::{run_incarnation, ConsumerError, Incarnation, Pipeline, Stop};
use crate::pipeline::retry::RetryConfig;
use crate::pipeline::transport::{Backend, Embedded, MemberId, Transport};
use crate::results::{CommitPolicy, IncarnationReport, PipelineRun};
use crate::workload::{ScenarioId, Sizes};

/// How long a crashing consumer waits for its crash point once the log is consumed before
/// it dies anyway (records that never complete can keep the count from being reached).
const CRASH_IDLE: Duration = Duration::from_millis(200);

/// The stages of a cell, for its estimate (module `waits`): the first incarnation runs
/// until `--crash-after` records completed, waiting on slow records only where the others
/// fall short of that count, and abandons what is still waiting at the crash; the second
/// runs the rest and what the crash abandoned to the end, waiting out every slow record
/// among them. [`CRASH_IDLE`] does not count: every record of the backlog completes, so the
/// crash point is always reached.
pub(super) fn stages(sizes: &Sizes) -> Vec<Stage> {
    let waits = Waits::of(sizes);
    let records = sizes.pipeline_records as f64;
    let crash_after = (sizes.crash_after as f64).min(records);
    let others = records - waits.slow_among(records);
    vec![
        Stage { records: crash_after, slow_records: (crash_after - others).max(0.0), floor_s: 0.0 },
        Stage {
            records: records - crash_after,
            slow_records: waits.slow_among(records),
            floor_s: 0.0,
        },
    ]
}

/// Runs the cells of `pipeline-crash` for `policies` x `strategies`, calling `each` after
/// every cell with its result.
pub fn run_crash(
    sizes: &Sizes,
    seed: u64,
    timer: &Timer,
    strategy_config: StrategyConfig,
    policies: &[CommitPolicy],
    strategies: &[Design],
    each: impl FnMut(&PipelineRun),
) -> Result<Vec<PipelineRun>, PipelineError> {
    let bench = Bench { sizes, seed, timer, strategy_config, watch: Default::default() };
    let backend = Embedded { metadata_limit: sizes.metadata_limit };
    let plan = PipelinePlan { commit_policies: policies.to_vec(), ..PipelinePlan::default() };
    let id = ScenarioId::PipelineCrash;
    run_on(id, &bench, &backend, &plan, strategies, &mut |_, _| true, each)
}

/// One cell: a consumer that crashes after `--crash-after` completions, then one that
/// resumes from its commits and runs to the end; a consumer driver's (module `outside`),
/// planned in the row of the policy it follows, runs in another process.
pub(super) fn cell<B: Backend>(cell: &CellContext<'_, B>) -> Result<PipelineRun, ConsumerError> {
    if let Some(external) = crate::measure::external::find(cell.strategy) {
        let (pipeline, incarnations) = super::outside::crash_cell(cell, &external)?;
        let mut run = crash_run(cell, &pipeline, incarnations);
        // Its calls into the broker are its own, unseen here.
        run.transport_calls = None;
        return Ok(run);
    }
    let sizes = cell.sizes();
    let (pipeline, transport) = cell.open()?;
    let config = cell.consumer_config(RetryConfig::default())?;
    let treat = cell.slow_treat();
    let crash = Stop::CrashAfter { completions: sizes.crash_after as u64, idle: CRASH_IDLE };
    let strategy_config = cell.bench.strategy_config;
    let mut incarnations = Vec::new();
    for stop in [crash, Stop::AtEnd] {
        // Each incarnation is a process of its own: the restarted one joins under the
        // crashed one's id and takes its partitions over from the commits.
        let member = transport.join(MemberId(0))?;
        let incarnation =
            Incarnation::new(cell.strategy, strategy_config, config, Arc::clone(&treat), stop);
        incarnations.push(run_incarnation(&pipeline, &member, incarnation)?);
    }
    Ok(crash_run(cell, &pipeline, incarnations))
}

/// A crash cell's result from its incarnations (the crashed one, then the one that
/// resumed), whatever ran them: this process's consumer or a consumer driver's.
fn crash_run<B: Backend>(
    cell: &CellContext<'_, B>,
    pipeline: &Pipeline,
    incarnations: Vec<IncarnationReport>,
) -> PipelineRun {
    let elapsed_s = incarnations.iter().map(|report| report.elapsed_s).sum();
    let mut run = cell.summarize(pipeline, &cell.log.expected, incarnations, elapsed_s);
    run.crash_after = Some(cell.sizes().crash_after as u64);
    run
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::pipeline::scenario::produce::Log;
    use crate::pipeline::scenario::tests::{ordered, sizes};
    use crate::workload::scenario::pipeline::Produce;

    #[test]
    fn the_log_is_the_same_for_a_seed_and_holds_every_version_once() {
        let produce = |seed| Log::of(ScenarioId::PipelineCrash, Produce::Backlog, &sizes(), seed);
        let (first, second) = (produce(7).unwrap(), produce(7).unwrap());
        assert_eq!(first.topic, second.topic);
        assert_eq!(first.topic.len(), 3_000);
        assert_eq!(first.expected.values().sum::<u64>(), 3_000);
    }

    #[test]
    fn safe_policies_lose_nothing_and_end_correct_for_every_ordered_strategy() {
        let ordered = ordered();
        let runs = run_crash(
            &sizes(),
            7,
            &Timer::start(),
            StrategyConfig::with_workers(2),
            &CommitPolicy::ALL,
            &ordered,
            |_| {},
        )
        .unwrap();
        assert_eq!(runs.len(), 3 * ordered.len());
        for run in &runs {
            let what = format!("{} {}", run.strategy, run.param);
            assert!(run.incarnations[0].completed >= 1_000, "{what}: crashed too early");
            if !run.policy.is_safe() {
                continue;
            }
            assert_eq!(run.lost, 0, "{what}");
            assert!(run.projection.final_state_correct, "{what}");
            // An ordered strategy applies each key's versions in order within a consumer:
            // what reaches the naive projection out of order is the first redelivered
            // version of a key, itself a double apply.
            assert!(
                run.projection.naive_out_of_order <= run.projection.naive_double_applies,
                "{what}: only redeliveries reach the naive projection out of order"
            );
            assert!(run.redelivered > 0, "{what}: the crash redelivered nothing");
        }
    }
}
