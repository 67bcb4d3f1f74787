//! `pipeline-retry`, one cell per (retry policy, strategy):
//! 1. A paced producer writes the log at `--pipeline-rate` records per second: a record is
//!    visible to the consumer from its produce time on, and its latency counts from then.
//! 2. No record waits on a slow dependency here (`--pipeline-slow-pct` is not used): the
//!    failures' backoffs are this scenario's waits. `--fail-pct` of the records fail transiently (their first 1 or 2 attempts fail, by a
//!    hash of their place in the log) and `--poison` records, spread evenly over the log,
//!    fail every attempt. The keys with such a record are *troubled*; the others are
//!    *bystanders*.
//! 3. One consumer runs the log on the strategy, commits `contiguous`, and retries by the
//!    cell's policy (module `pipeline::retry`): a failed attempt waits
//!    `--retry-backoff-ms`, doubling, and after `--max-attempts` failed attempts the record
//!    goes to the dead-letter topic. With `--max-attempts 0` a record is retried for ever:
//!    the poison records never settle, and the cell stops once every bystander record is
//!    applied, or once none was applied for the stall limit (module `forever`).
//! 4. Measured: bystander and troubled produce-to-apply latency (p50, p99, max),
//!    throughput, retries, dead letters, the records that reached the projection before a
//!    predecessor (overtaken: the retry topic's doing) and the stash they needed, the time
//!    partitions stood paused, and whether the final state is right; under retry for ever
//!    also the stall detector (the longest interval in which a bystander record waited and
//!    none was applied) and what the stop left unsettled.

use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use super::cell::{CellContext, ScenarioRun};
use super::produce::place_hash;
use super::{forever, PipelineError, Stage, Waits, Wanted};
use crate::pipeline::consumer::{
    run_incarnation, ConsumerConfig, ConsumerError, Incarnation, Pipeline, Signal, Stop, Treat,
    Treatment,
};
use crate::pipeline::log::{Record, Topic};
use crate::pipeline::transport::{Backend, MemberId, Transport};
use crate::results::{
    IncarnationReport, LatencySummary, PipelineRun, RetryForever, RetryPolicy, RetryReport,
};
use crate::workload::Sizes;

/// Which records fail, and how often.
#[derive(Clone, Debug, Default)]
struct Failures {
    /// `(partition, offset)` of the poison records.
    poison: HashSet<(u32, u64)>,
    /// Failing records per million.
    fail_per_million: u64,
}

impl Failures {
    /// `--poison` records spread evenly over the log in produce order, and the share
    /// `--fail-pct` by a hash of each record's place.
    fn of(sizes: &Sizes, topic: &Topic) -> Self {
        let mut in_order: Vec<Record> = topic.records().copied().collect();
        in_order.sort_by_key(|record| record.produce_ns);
        let count = in_order.len();
        let poison = (0..sizes.poison)
            .map(|k| &in_order[(k + 1) * count / (sizes.poison + 1)])
            .map(|record| (record.partition, record.offset))
            .collect();
        Self { poison, fail_per_million: (sizes.fail_pct * 10_000.0).round() as u64 }
    }

    /// Attempts of `record` that fail (0: none).
    fn failures(&self, record: &Record) -> u32 {
        if self.poison.contains(&(record.partition, record.offset)) {
            return u32::MAX;
        }
        let hash = place_hash(record) / 1_000_000;
        if hash % 1_000_000 < self.fail_per_million {
            1 + (hash / 1_000_000 % 2) as u32
        } else {
            0
        }
    }
}

/// The stage of a cell, for its estimate (module `waits`): one consumer runs the paced log
/// to its end. It lasts the producer's span, or longer where the last failing record's
/// backoffs end past it: the poison records, spread evenly, wait every backoff
/// ([`Waits::backoffs_s`]); a transient record (`--fail-pct`) fails once or twice. Under
/// pause-partition a partition polls nothing new while one of its records fails, so its
/// failing records wait one after another: their backoffs spread over the partitions.
pub(super) fn stages(sizes: &Sizes, policy: RetryPolicy) -> Vec<Stage> {
    let waits = Waits::of(sizes);
    let records = sizes.pipeline_records as f64;
    let paced_s = records / sizes.pipeline_rate as f64;
    let poison = (sizes.poison as f64).min(records);
    let transient = records * sizes.fail_pct / 100.0;
    // The last of `count` failing records, spread over the span, and its backoffs.
    let last_ends = |count: f64, backoffs_s: f64| {
        if count < 1.0 {
            0.0
        } else {
            paced_s * count / (count + 1.0) + backoffs_s
        }
    };
    let mut floor_s = paced_s
        .max(last_ends(poison, waits.backoffs_s(u32::MAX)))
        .max(last_ends(transient, waits.backoffs_s(2)));
    if sizes.max_attempts == 0 && poison >= 1.0 {
        // Retry for ever (module `forever`): a cell whose intake stalls behind the poison
        // record (pause-partition; in place, a hash-serial design) stops once no bystander
        // record was applied for the stall limit. Counted for every policy and design.
        let stalled_s = paced_s + waits.stall_limit().as_secs_f64();
        return vec![Stage { records, floor_s: floor_s.max(stalled_s), slow_records: 0.0 }];
    }
    if policy == RetryPolicy::PausePartition {
        let transient_s = (waits.backoffs_s(1) + waits.backoffs_s(2)) / 2.0;
        let serial_s = poison * waits.backoffs_s(u32::MAX) + transient * transient_s;
        floor_s = floor_s.max(serial_s / f64::from(sizes.partitions.max(1)));
    }
    vec![Stage { records, floor_s, slow_records: 0.0 }]
}

/// Runs the cells of `pipeline-retry` (one per retry policy x strategy): which records
/// fail is chosen once, for every cell.
pub(super) fn run<B: Backend>(
    run: &ScenarioRun<'_, B>,
    wanted: &mut Wanted<'_>,
    each: &mut dyn FnMut(&PipelineRun),
) -> Result<Vec<PipelineRun>, PipelineError> {
    let failures = Arc::new(Failures::of(run.bench.sizes, &run.log.topic));
    run.cells(wanted, each, |context| cell(context, &failures))
}

/// One cell: a consumer runs the log, retrying by the cell's policy, to its end (or, under
/// retry for ever, until the watcher beside it stops it).
fn cell<B: Backend>(
    context: &CellContext<'_, B>,
    failures: &Arc<Failures>,
) -> Result<PipelineRun, ConsumerError> {
    let (sizes, topic, policy) =
        (context.sizes(), &context.log.topic, context.param.retry_policy());
    let retry = Waits::of(sizes).retry(policy);
    let config = context.consumer_config(retry)?;
    let treat: Treat = {
        let failures = Arc::clone(failures);
        // No slow records here: the failures' backoffs are this scenario's waits.
        Arc::new(move |record: &Record| match failures.failures(record) {
            0 => Treatment::Run,
            failures => Treatment::Fail { failures },
        })
    };
    let troubled: BTreeSet<u64> = topic
        .records()
        .filter(|record| failures.failures(record) > 0)
        .map(|record| record.key)
        .collect();
    let (pipeline, report, forever) = if retry.forever() {
        let cell = Forever { topic, troubled: &troubled, failures, policy };
        let (pipeline, report, figures) = cell.consume(context, config, treat)?;
        (pipeline, report, Some(figures))
    } else {
        let (pipeline, report) = context.consume_to_end(config, treat, None)?;
        (pipeline, report, None)
    };
    let (retries, dead_lettered, failure_pause_s) =
        (report.retries, report.dead_lettered, report.failure_pause_s);
    let expected = match forever {
        Some(_) => forever::expected_before_poison(&context.log.expected, topic, &failures.poison),
        None => context.log.expected.clone(),
    };
    let mut run = context.summarize_single(&pipeline, &expected, report);
    let (bystanders, troubled_latency) = latencies(topic, &pipeline, &troubled);
    let count = |wanted: fn(u32) -> bool| {
        topic.records().filter(|record| wanted(failures.failures(record))).count() as u64
    };
    let forever = forever.map(|(figures, lost)| {
        run.lost = lost;
        figures
    });
    run.retry = Some(RetryReport {
        policy,
        rate_per_s: sizes.pipeline_rate,
        max_attempts: sizes.max_attempts,
        backoff_ms: sizes.retry_backoff_ms,
        failing_records: count(|failures| failures > 0 && failures < u32::MAX),
        poison_records: count(|failures| failures == u32::MAX),
        troubled_keys: troubled.len() as u64,
        retries,
        dead_lettered,
        overtaken: run.projection.gaps,
        max_stash: run.projection.max_stash,
        bystander_latency: LatencySummary::of(bystanders),
        troubled_latency: LatencySummary::of(troubled_latency),
        failure_pause_s,
        forever,
    });
    Ok(run)
}

/// Produce-to-apply latencies of the records applied: the bystanders' and the troubled
/// keys', in nanoseconds.
fn latencies(topic: &Topic, pipeline: &Pipeline, troubled: &BTreeSet<u64>) -> (Vec<u64>, Vec<u64>) {
    let (mut bystanders, mut troubled_latency) = (Vec::new(), Vec::new());
    for record in topic.records() {
        let Some(applied) = pipeline.tally.first_applied_ns(record.partition, record.offset) else {
            continue;
        };
        let latency = applied.saturating_sub(record.produce_ns);
        if troubled.contains(&record.key) {
            troubled_latency.push(latency);
        } else {
            bystanders.push(latency);
        }
    }
    (bystanders, troubled_latency)
}

/// A retry-forever cell (module `forever`): its log, troubled keys, failing records and
/// retry policy.
struct Forever<'c> {
    topic: &'c Topic,
    troubled: &'c BTreeSet<u64>,
    failures: &'c Failures,
    policy: RetryPolicy,
}

impl Forever<'_> {
    /// One consumer runs the log until the watcher beside it stops it: the pipeline it
    /// leaves, its report, and the cell's figures with the records lost below its last
    /// commit.
    fn consume<B: Backend>(
        &self,
        context: &CellContext<'_, B>,
        config: ConsumerConfig,
        treat: Treat,
    ) -> Result<(Pipeline, IncarnationReport, (RetryForever, u64)), ConsumerError> {
        let (bench, strategy) = (context.bench, context.strategy);
        let (pipeline, transport) = context.open()?;
        let member = transport.join(MemberId(0))?;
        let signal = Signal::new();
        let stop = Stop::Until { signal: signal.clone() };
        let incarnation = Incarnation::new(strategy, bench.strategy_config, config, treat, stop);
        let limit = Waits::of(bench.sizes).stall_limit();
        let poison = &self.failures.poison;
        let watched = forever::watched_of(self.topic, poison);
        let ended = AtomicBool::new(false);
        let (report, stopped) = thread::scope(|scope| {
            let watcher =
                scope.spawn(|| forever::watch(&pipeline, &watched, limit, &signal, &ended));
            let report = run_incarnation(&pipeline, &member, incarnation);
            // Release: pairs with the watcher's Acquire load.
            ended.store(true, Ordering::Release);
            let stopped = watcher
                .join()
                .unwrap_or(forever::Stopped { at_ns: pipeline.now_ns(), cut_off: false });
            (report, stopped)
        });
        let report = report?;
        let figures =
            forever::figures(&pipeline, self.topic, self.troubled, poison, limit, stopped);
        // Under retry-topic a failing record's offset completes as it goes to the topic.
        let handed_off = |record: &Record| {
            self.policy == RetryPolicy::RetryTopic && self.failures.failures(record) > 0
        };
        let lost = forever::lost_below_commits(&pipeline, member.as_ref(), handed_off);
        Ok((pipeline, report, (figures, lost)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::timer::Timer;
    use crate::pipeline::consumer::{run_incarnation, Incarnation, Pipeline, Stop};
    use crate::pipeline::retry::RetryConfig;
    use crate::pipeline::scenario::tests::{ordered, run_embedded, sizes};
    use crate::pipeline::scenario::Bench;
    use crate::workload::ScenarioId;
    use std::collections::BTreeMap;

    use crate::pipeline::scenario::cell::consumer_config;
    use crate::pipeline::scenario::produce::PAYLOAD_BYTES;
    use crate::pipeline::transport::{EmbeddedTransport, MemberId, Transport};
    use crate::results::CommitPolicy;
    use std::time::Duration;
    use strategies::Design;
    use strategies::StrategyConfig;
    use strategies::StrategyId;

    fn retry_sizes() -> Sizes {
        Sizes { pipeline_rate: 200_000, fail_pct: 3.0, poison: 2, ..sizes() }
    }

    #[test]
    fn every_policy_settles_every_record_and_dead_letters_the_poison() {
        let sizes = retry_sizes();
        let timer = Timer::start();
        let bench = Bench {
            sizes: &sizes,
            seed: 7,
            timer: &timer,
            strategy_config: StrategyConfig::with_workers(2),
            watch: Default::default(),
        };
        let strategies =
            [StrategyId::KeyedMailbox, StrategyId::GroupBy, StrategyId::Tokio].map(Design::from);
        let runs =
            run_embedded(ScenarioId::PipelineRetry, &bench, &Default::default(), &strategies);
        assert_eq!(runs.len(), 9);
        for run in &runs {
            let what = format!("{} {}", run.strategy, run.param);
            let retry = run.retry.as_ref().unwrap();
            assert_eq!((run.lost, run.redelivered), (0, 0), "{what}: retries are no redeliveries");
            assert_eq!(retry.poison_records, 2, "{what}");
            assert_eq!(retry.dead_lettered, 2, "{what}: only the poison");
            assert!(retry.failing_records > 0, "{what}");
            assert!(retry.retries >= retry.failing_records, "{what}");
            assert!(run.projection.final_state_correct, "{what}");
            if retry.policy == RetryPolicy::RetryTopic {
                continue;
            }
            // In place, a key's later versions wait for the failing one.
            assert_eq!(retry.overtaken, 0, "{what}: order kept in place");
        }
    }

    /// Retry for ever with one poison record. Pausing its partition stops intake behind it
    /// for every design; retrying in place holds a hash-serial design's group behind it
    /// (group-by) but only its own key in a per-key design (keyed-mailbox); the retry topic
    /// holds nothing. The stall detector fires (the stall limit cuts the cell off) for the
    /// first kind and stays small for the second.
    #[test]
    fn retry_forever_stalls_intake_only_where_the_policy_blocks_behind_the_poison_record() {
        let sizes = Sizes { max_attempts: 0, poison: 1, fail_pct: 1.0, ..retry_sizes() };
        let timer = Timer::start();
        let bench = Bench {
            sizes: &sizes,
            seed: 7,
            timer: &timer,
            strategy_config: StrategyConfig::with_workers(2),
            watch: Default::default(),
        };
        let strategies = [StrategyId::KeyedMailbox, StrategyId::GroupBy].map(Design::from);
        let runs =
            run_embedded(ScenarioId::PipelineRetry, &bench, &Default::default(), &strategies);
        let figures = |policy: RetryPolicy, strategy: StrategyId| {
            let run = runs
                .iter()
                .find(|run| {
                    run.strategy == strategy.as_str() && run.param == format!("retry={policy}")
                })
                .unwrap();
            let retry = run.retry.as_ref().unwrap();
            let what = format!("{strategy} {policy}");
            assert_eq!((retry.max_attempts, retry.dead_lettered), (0, 0), "{what}");
            assert_eq!(run.lost, 0, "{what}: nothing below the last commit is lost");
            let forever = retry.forever.clone().unwrap();
            assert_eq!(forever.still_retrying, 1, "{what}");
            (what, forever)
        };
        use RetryPolicy::{PausePartition, RetryInPlace, RetryTopic};
        use StrategyId::{GroupBy, KeyedMailbox};
        let blocked =
            [(PausePartition, KeyedMailbox), (PausePartition, GroupBy), (RetryInPlace, GroupBy)];
        let free =
            [(RetryTopic, KeyedMailbox), (RetryTopic, GroupBy), (RetryInPlace, KeyedMailbox)];
        let mut shortest_blocked = f64::MAX;
        for (what, forever) in blocked.map(|(policy, strategy)| figures(policy, strategy)) {
            assert!(forever.cut_off && forever.stranded > 0, "{what}: {forever:?}");
            assert!(forever.stall_s >= forever.stall_limit_s * 0.99, "{what}: {forever:?}");
            shortest_blocked = shortest_blocked.min(forever.stall_s);
        }
        let mut longest_free = 0.0_f64;
        for (what, forever) in free.map(|(policy, strategy)| figures(policy, strategy)) {
            assert!(!forever.cut_off && forever.stranded == 0, "{what}: {forever:?}");
            longest_free = longest_free.max(forever.stall_s);
        }
        assert!(
            shortest_blocked > 5.0 * longest_free,
            "stalled {shortest_blocked} s against {longest_free} s where intake goes on"
        );
    }

    /// Version 2's first attempt fails; every other record runs.
    fn version_two_fails_once() -> Treat {
        Arc::new(
            |record: &Record| {
                if record.version == 2 {
                    Treatment::Fail { failures: 1 }
                } else {
                    Treatment::Run
                }
            },
        )
    }

    /// One key: v1, v2 (fails once) and v3, .. v9; under `retry-topic` the later versions
    /// reach the projection while v2 waits in the retry topic.
    #[test]
    fn retry_topic_lets_later_versions_overtake_and_only_the_version_check_absorbs_it() {
        for strategy in ordered().into_iter().filter(|&id| id != StrategyId::Inline) {
            let mut topic = Topic::new("events", 1).unwrap();
            for version in 1..=9 {
                topic.append_to(0, 5, version, PAYLOAD_BYTES, 0).unwrap();
            }
            let expected: BTreeMap<u64, u64> = [(5, 9)].into();
            let pipeline = Pipeline::new(&topic, Timer::start());
            let member = EmbeddedTransport::new(topic).join(MemberId(0)).unwrap();
            let mut config = consumer_config(
                &sizes(),
                CommitPolicy::Contiguous,
                RetryConfig {
                    policy: RetryPolicy::RetryTopic,
                    max_attempts: 4,
                    backoff: Duration::from_millis(100),
                },
            )
            .unwrap();
            config.spin_ns = 0;
            let incarnation = Incarnation::new(
                strategy,
                StrategyConfig::with_workers(2),
                config,
                version_two_fails_once(),
                Stop::AtEnd,
            );
            let report = run_incarnation(&pipeline, &member, incarnation).unwrap();
            assert_eq!((report.retries, report.retry_polls), (1, 1), "{strategy}");
            let state = pipeline.projection.report(&expected);
            assert_eq!(state.gaps, 7, "{strategy}: v3..v9 arrived before v2");
            assert!(state.final_state_correct, "{strategy}: stashed until v2 came back");
            assert!(!state.naive_final_state_correct, "{strategy}: applied v3..v9 before v2");
            assert!(state.naive_out_of_order > 0, "{strategy}");
        }
    }
}
