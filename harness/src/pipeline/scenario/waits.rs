//! What a pipeline cell waits on, and about how long that makes it: one source for the
//! scenarios, which wait on these settings, and for the plan's estimate (`suite::plan`,
//! `--dry-run`), which counts them.
//!
//! [`Waits::of`] reads every wait from the sizes: the commit interval, the slow records'
//! share and wait, the retries' backoff and attempts. The scenarios build their consumers
//! and handlers from it, and each scenario states next to its code the [`Stage`]s a cell
//! runs (`crash::stages`, `rebalance::stages`, ...): its consumers, one stage after
//! another, each with the records it runs and the waits it meets. A stage then takes
//! ([`Waits::cell_s`]):
//!
//! 1. its work: its records at a time per record (calibrated on the reference run), or the
//!    paced producer's span and what a failing record adds past it ([`Stage::floor_s`]),
//!    whichever is longer;
//! 2. plus its slow records' waits, where it waits them out (a stage that runs to its end
//!    does; a revoked or crashed one abandons them): in waves, as many at once as the
//!    window admits, and one after another on one key, or on one hash-serial group;
//! 3. rounded up to whole commit intervals: the committer sleeps a whole interval between
//!    commits, and a stage ends only once its committer wakes (so a stage lasts at least
//!    one interval).

use std::sync::Arc;
use std::time::Duration;

use super::super::consumer::{Treat, Treatment};
use super::super::log::Record;
use super::super::retry::RetryConfig;
use crate::results::RetryPolicy;
use crate::workload::Sizes;

/// Every wait of a pipeline cell, from its sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Waits {
    /// Time between a consumer's periodic commits (`--commit-interval-ms`).
    pub commit_interval: Duration,
    /// Percent of the records that wait on a slow dependency (`--pipeline-slow-pct`).
    pub slow_pct: f64,
    /// How long each of them waits (`--pipeline-slow-ms`).
    pub slow: Duration,
    /// Failed attempts after which a record is dead-lettered (`--max-attempts`).
    pub max_attempts: u32,
    /// The wait after a first failed attempt, doubling after each later one
    /// (`--retry-backoff-ms`).
    pub backoff: Duration,
}

/// What the estimate knows of the executor a cell runs on.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Executor {
    /// The most records unfinished at once (`--window`): slow records wait in waves of it.
    pub window: usize,
    /// The records that can wait at once without one waiting behind another: one per key,
    /// or one per group where a hash-serial design runs many keys' records in one group.
    pub lanes: usize,
}

/// One stage of a cell: consumers that run side by side, after the stage before them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stage {
    /// Records its consumers run.
    pub records: f64,
    /// Seconds it takes whatever the executor: a paced producer's span, and a failing
    /// record's backoffs past it (0 for a backlog).
    pub floor_s: f64,
    /// Slow records whose wait it waits out.
    pub slow_records: f64,
}

impl Waits {
    /// The waits the sizes give every pipeline scenario.
    pub fn of(sizes: &Sizes) -> Self {
        Self {
            commit_interval: Duration::from_millis(sizes.commit_interval_ms),
            slow_pct: sizes.pipeline_slow_pct,
            slow: Duration::from_millis(sizes.pipeline_slow_ms),
            max_attempts: sizes.max_attempts,
            backoff: Duration::from_millis(sizes.retry_backoff_ms),
        }
    }

    /// How a consumer retries under `policy`.
    pub fn retry(&self, policy: RetryPolicy) -> RetryConfig {
        RetryConfig { policy, max_attempts: self.max_attempts, backoff: self.backoff }
    }

    /// Whether `record` is one of the slow ones: a fixed share, chosen by a hash of its
    /// place in the log (the same records for every cell).
    pub fn is_slow(&self, record: &Record) -> bool {
        let slow_per_million = (self.slow_pct * 10_000.0).round() as u64;
        super::produce::place_hash(record) % 1_000_000 < slow_per_million
    }

    /// The treatment of every scenario without failures: the slow records wait on a slow
    /// dependency without holding a thread, the others run.
    pub fn slow_treat(&self) -> Treat {
        let waits = *self;
        Arc::new(
            move |record: &Record| {
                if waits.is_slow(record) {
                    Treatment::Wait(waits.slow)
                } else {
                    Treatment::Run
                }
            },
        )
    }

    /// How long a retry-forever cell (`max_attempts` 0) waits for a bystander record to
    /// be applied while one waits before it stops (module `forever`): the longer of
    /// 1 s and 100 first backoffs ([`Sizes::forever_stall_limit`]), far past any wait a
    /// bystander meets where intake goes on (a transient failure's backoffs, a commit
    /// interval).
    pub fn stall_limit(&self) -> Duration {
        Sizes::forever_stall_limit(self.backoff)
    }

    /// The slow records among `records`, expected.
    pub fn slow_among(&self, records: f64) -> f64 {
        records * self.slow_pct / 100.0
    }

    /// The backoffs a record waits out whose first `failures` attempts fail
    /// (`u32::MAX`: a poison record, dead-lettered after `max_attempts`), in seconds. A
    /// poison record retried for ever (`max_attempts` 0) waits until its cell stops: none
    /// are counted here (the cell's stages count its stall limit instead).
    pub fn backoffs_s(&self, failures: u32) -> f64 {
        let retry = self.retry(RetryPolicy::RetryInPlace);
        let waited = match (retry.forever(), failures) {
            (true, u32::MAX) => 0,
            (true, failures) => failures,
            (false, failures) => failures.min(self.max_attempts.saturating_sub(1)),
        };
        (1..=waited).map(|attempt| retry.backoff_after(attempt).as_secs_f64()).sum()
    }

    /// About how long a cell of `stages` takes on `executor`, at `record_s` seconds per
    /// record of work (the module docs' steps).
    pub fn cell_s(&self, stages: &[Stage], executor: Executor, record_s: f64) -> f64 {
        let interval = self.commit_interval.as_secs_f64();
        let stage_s = |stage: &Stage| {
            let waves = slow_waves(stage.slow_records, executor);
            let busy =
                (stage.records * record_s).max(stage.floor_s) + waves * self.slow.as_secs_f64();
            (busy / interval).ceil().max(1.0) * interval
        };
        stages.iter().map(stage_s).sum()
    }
}

/// The waits, one after another, that `slow` slow records take: as many at once as the
/// window admits and the lanes hold apart. Fewer than one expected: the chance that there
/// is one.
fn slow_waves(slow: f64, executor: Executor) -> f64 {
    if slow < 1.0 {
        return 1.0 - (-slow.max(0.0)).exp();
    }
    let by_window = (slow / executor.window.max(1) as f64).ceil();
    let by_lane = (slow / executor.lanes.max(1) as f64).ceil();
    by_window.max(by_lane)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waits() -> Waits {
        Waits::of(&Sizes {
            commit_interval_ms: 10,
            pipeline_slow_pct: 1.0,
            pipeline_slow_ms: 100,
            max_attempts: 4,
            retry_backoff_ms: 2,
            ..Sizes::quick()
        })
    }

    const WIDE: Executor = Executor { window: 256, lanes: 1_000 };

    #[test]
    fn a_poison_record_waits_every_backoff_but_the_last_attempts() {
        let waits = waits();
        assert!((waits.backoffs_s(u32::MAX) - 0.014).abs() < 1e-9, "2 + 4 + 8 ms");
        assert!((waits.backoffs_s(2) - 0.006).abs() < 1e-9, "2 + 4 ms");
        assert_eq!(waits.backoffs_s(0), 0.0);
    }

    #[test]
    fn a_stage_lasts_its_work_and_slow_waves_rounded_up_to_commit_intervals() {
        let waits = waits();
        // 1,000 records of 1 us and 10 slow ones, all at once: 1 ms + 100 ms -> 110 ms.
        let stage = Stage { records: 1_000.0, slow_records: 10.0, ..Stage::default() };
        assert!((waits.cell_s(&[stage], WIDE, 1e-6) - 0.110).abs() < 1e-9);
        // A window of 4 runs them in 3 waves; 2 lanes in 5.
        let narrow = Executor { window: 4, lanes: 1_000 };
        assert!((waits.cell_s(&[stage], narrow, 1e-6) - 0.310).abs() < 1e-9);
        let grouped = Executor { window: 256, lanes: 2 };
        assert!((waits.cell_s(&[stage], grouped, 1e-6) - 0.510).abs() < 1e-9);
        // A stage that abandons its slow records still lasts a commit interval.
        let revoked = Stage { records: 10.0, ..Stage::default() };
        assert!((waits.cell_s(&[revoked, revoked], WIDE, 1e-6) - 0.020).abs() < 1e-9);
        // A paced floor counts instead of the work when it is longer.
        let paced = Stage { records: 10.0, floor_s: 0.5, slow_records: 0.0 };
        assert!((waits.cell_s(&[paced], WIDE, 1e-6) - 0.5).abs() < 1e-9);
    }
}
