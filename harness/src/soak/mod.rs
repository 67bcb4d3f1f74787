//! `keyed-bench soak`: does a strategy hold up over a million keys and over time? Two
//! phases per strategy, each ending in checks that hold or fail the run.
//!
//! # Churn (`churn.rs`)
//!
//! 1. Build the strategy (its threads start) and the checker (one byte per key, written
//!    now), then read the resident set size: *before*.
//! 2. Two submitting threads (keys split by parity) send [`CHURN_PER_KEY`] messages to each
//!    of `keys` distinct keys in a diagonal order: step `i` sends message 0 of key `i`,
//!    message 1 of key `i - 1` and message 2 of key `i - 2`. A key's messages are a step
//!    apart, so its mailbox is created, may retire and come back between them, and retires
//!    after the last; only the keys of the window's few hundred unfinished messages are
//!    active at once. A sampler keeps the *peak* resident size.
//! 3. Drain (a runner retires an emptied mailbox before `drain` can return, so the count
//!    is exact); read *after*; close.
//! 4. Checks: every message ran once, in key order (ordered strategies); no mailbox is left
//!    (`Stats::live_mailboxes` is `Some(0)`; strategies without mailboxes report `None`);
//!    `after - before` is at most [`MEMORY_TOLERANCE_MIB`].
//!
//! # Mixed soak (`mixed.rs`)
//!
//! Rounds until `duration` has passed (a round is always finished, never cut): each round
//! sends [`SoakConfig::round_messages`] messages from two threads (keys split by parity),
//! 20% to 4 hot keys and the rest to cold keys, 2 messages each, over 4 aggregate types.
//! Jobs: no-ops, CPU spins, pending waits, synchronous panics and panics inside a pending
//! step. Each round is drained and checked by the harness's recorder (order violations,
//! overlaps, lost and duplicated messages). Checks: none of those for an ordered strategy
//! (lost and duplicated only for the unordered control); `Stats::failed` equals the panics
//! injected; no mailbox is left.
//!
//! # The memory tolerance
//!
//! With the default window of 256, at most a few hundred mailboxes exist at once, so the
//! churn's legitimate growth is small: the map, a few hundred mailboxes, the threads'
//! allocator arenas, and what the allocator keeps cached after frees (glibc keeps freed
//! memory in per-thread arenas and trims only the top of each). Clean runs of every
//! strategy over a million keys grow by less than 1 MiB. A leak that scales with the keys
//! is large: a mailbox left behind costs well over 100 bytes (the `Mailbox`, its `Arc`, its
//! map entry), about 100 MiB per million keys. [`MEMORY_TOLERANCE_MIB`] (16 MiB) leaves
//! room for allocator caching an order of magnitude above what clean runs show, and still
//! catches a leak of 17 bytes per key at the default million keys. With far fewer keys
//! (the tests) only the mailbox count can catch a leak.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use strategies::{Design, Handler, Strategy, StrategyConfig, StrategyId};

use crate::measure::handler::quiet_workload_panics;
use crate::results::Correctness;

mod churn;
mod mixed;

/// Messages each churned key receives.
pub const CHURN_PER_KEY: u8 = 3;
/// The most resident memory the churn may leave behind (`after - before`), in MiB; see
/// the module docs for why.
pub const MEMORY_TOLERANCE_MIB: f64 = 16.0;
/// Messages of one mixed-soak round unless the config says otherwise.
pub const DEFAULT_ROUND_MESSAGES: usize = 50_000;
/// Strategies soaked when none is named.
pub const DEFAULT_STRATEGIES: [Design; 2] =
    [Design::built_in(StrategyId::KeyedMailbox), Design::built_in(StrategyId::WorkStealing)];

/// One progress line at most this often.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);

const MIB: f64 = (1 << 20) as f64;

/// A validated soak.
#[derive(Clone, Debug, PartialEq)]
pub struct SoakConfig {
    /// Strategies, in the order given.
    pub strategies: Vec<Design>,
    /// Distinct keys of the churn.
    pub keys: usize,
    /// Length of the mixed soak per strategy.
    pub duration: Duration,
    /// Worker threads per pool; the other settings but the window are the reference ones.
    pub workers: usize,
    /// The admission window.
    pub window: usize,
    /// Seed of the mixed soak.
    pub seed: u64,
    /// Messages per mixed-soak round: the soak drains and checks between rounds, so this
    /// is also about how far past `duration` it may run.
    pub round_messages: usize,
}

impl SoakConfig {
    /// The settings every soaked strategy is built with.
    pub fn strategy_config(&self) -> StrategyConfig {
        StrategyConfig { max_in_flight: self.window, ..StrategyConfig::with_workers(self.workers) }
    }
}

/// Why a soak could not run.
#[derive(Debug, thiserror::Error)]
pub enum SoakError {
    /// A strategy rejected the settings.
    #[error("cannot build {strategy}")]
    Build {
        /// The strategy.
        strategy: Design,
        /// Why.
        source: strategies::BuildError,
    },
}

/// Resident memory around the churn, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Memory {
    /// With the strategy built and idle, before the first message.
    pub before: u64,
    /// The most while the keys churned.
    pub peak: u64,
    /// After the drain, with the strategy still open.
    pub after: u64,
}

impl Memory {
    /// `after - before` in MiB (negative when memory was given back).
    pub fn growth_mib(&self) -> f64 {
        (self.after as f64 - self.before as f64) / MIB
    }
}

/// What the churn phase saw.
#[derive(Clone, Debug, PartialEq)]
pub struct ChurnOutcome {
    /// Distinct keys.
    pub keys: usize,
    /// Messages sent.
    pub messages: u64,
    /// Handler calls.
    pub ran: u64,
    /// Handler calls whose sequence number was not the next of their key.
    pub out_of_order: u64,
    /// Mailboxes alive right after the drain (`None`: the strategy has none).
    pub live_mailboxes: Option<usize>,
    /// `None` where `/proc/self/status` cannot be read.
    pub memory: Option<Memory>,
    /// From the first message to the end of the drain.
    pub elapsed: Duration,
}

/// What the mixed soak saw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MixedOutcome {
    /// Rounds run.
    pub rounds: u64,
    /// Messages sent.
    pub messages: u64,
    /// Messages whose job panics (synchronously or inside a pending step).
    pub injected_panics: u64,
    /// The recorder's counts over every round; `failed` is the strategy's count.
    pub correctness: Correctness,
    /// Mailboxes alive right after the last drain.
    pub live_mailboxes: Option<usize>,
    /// From the first round to the end of the last.
    pub elapsed: Duration,
}

/// Both phases of one strategy.
#[derive(Clone, Debug, PartialEq)]
pub struct StrategySoak {
    /// The strategy.
    pub strategy: Design,
    /// The churn phase.
    pub churn: ChurnOutcome,
    /// The mixed soak.
    pub mixed: MixedOutcome,
}

/// One named check and whether it held.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// What is checked.
    pub name: &'static str,
    /// Whether it held.
    pub held: bool,
    /// The numbers behind it.
    pub detail: String,
}

fn check_that(name: &'static str, held: bool, detail: String) -> Check {
    Check { name, held, detail }
}

fn mailboxes_text(live: Option<usize>) -> String {
    live.map_or_else(|| "none (no per-key mailboxes)".into(), |n| format!("{n} alive"))
}

impl StrategySoak {
    /// Every check of both phases.
    pub fn checks(&self) -> Vec<Check> {
        let (churn, mixed) = (&self.churn, &self.mixed);
        let ordered = self.strategy.is_ordered();
        let retired = |live: Option<usize>| live.is_none_or(|n| n == 0);
        let memory = match churn.memory {
            Some(memory) => check_that(
                "churn: memory given back",
                memory.growth_mib() <= MEMORY_TOLERANCE_MIB,
                format!(
                    "after - before = {:.1} MiB (at most {MEMORY_TOLERANCE_MIB} MiB)",
                    memory.growth_mib()
                ),
            ),
            None => check_that("churn: memory given back", true, "not measured (no /proc)".into()),
        };
        let errors = Correctness { failed: 0, ..mixed.correctness };
        vec![
            check_that(
                "churn: every message ran once",
                churn.ran == churn.messages,
                format!("{} handler calls for {} messages", churn.ran, churn.messages),
            ),
            check_that(
                "churn: key order kept",
                !ordered || churn.out_of_order == 0,
                format!("{} out of order (order promised: {ordered})", churn.out_of_order),
            ),
            check_that(
                "churn: no mailbox left",
                retired(churn.live_mailboxes),
                mailboxes_text(churn.live_mailboxes),
            ),
            memory,
            check_that(
                "soak: no order violation, overlap, loss or duplicate",
                errors.kept_promise(ordered),
                format!(
                    "{} order violations, {} overlaps, {} lost, {} duplicates (order promised: \
                     {ordered})",
                    errors.order_violations, errors.overlaps, errors.lost, errors.duplicates
                ),
            ),
            check_that(
                "soak: failed = panics injected",
                mixed.correctness.failed == mixed.injected_panics,
                format!("{} failed, {} injected", mixed.correctness.failed, mixed.injected_panics),
            ),
            check_that(
                "soak: no mailbox left",
                retired(mixed.live_mailboxes),
                mailboxes_text(mixed.live_mailboxes),
            ),
        ]
    }

    /// Whether every check held.
    pub fn passed(&self) -> bool {
        self.checks().iter().all(|check| check.held)
    }

    /// The table's result: `FAIL`, `pass`, or `caught` for the unordered control whose
    /// reordering the checks saw, as they should (it promises no order, so it passes).
    pub fn result(&self) -> &'static str {
        let c = &self.mixed.correctness;
        let reordered = c.order_violations + c.overlaps + self.churn.out_of_order > 0;
        match (self.passed(), self.strategy.is_ordered(), reordered) {
            (false, _, _) => "FAIL",
            (true, false, true) => "caught",
            (true, _, _) => "pass",
        }
    }
}

/// Every strategy's soak.
#[derive(Clone, Debug, PartialEq)]
pub struct SoakOutcome {
    /// In the order soaked.
    pub strategies: Vec<StrategySoak>,
}

/// Columns of the final table.
const COLUMNS: [&str; 11] = [
    "strategy",
    "keys churned",
    "RSS before MiB",
    "peak MiB",
    "after MiB",
    "mailboxes left",
    "soak messages",
    "panics injected",
    "failed",
    "order/overlap/lost/dup",
    "result",
];

impl SoakOutcome {
    /// Whether every check of every strategy held.
    pub fn passed(&self) -> bool {
        self.strategies.iter().all(StrategySoak::passed)
    }

    /// The final table, one row per strategy, then every failed check.
    pub fn render(&self) -> String {
        let rows: Vec<Vec<String>> = self.strategies.iter().map(table_row).collect();
        let widths: Vec<usize> = (0..COLUMNS.len())
            .map(|i| rows.iter().map(|row| row[i].len()).fold(COLUMNS[i].len(), usize::max))
            .collect();
        let mut out = String::new();
        let header: Vec<String> = COLUMNS.iter().map(|&column| column.to_owned()).collect();
        for row in std::iter::once(&header).chain(&rows) {
            let _ = writeln!(out, "{}", aligned(row, &widths));
        }
        let _ = writeln!(
            out,
            "\nchurn: {CHURN_PER_KEY} messages per key; memory check: after - before at most \
             {MEMORY_TOLERANCE_MIB} MiB; mailboxes counted right after the drain; caught: an \
             unordered strategy's reordering, seen by the checks as expected (a pass)"
        );
        for soak in &self.strategies {
            for check in soak.checks().into_iter().filter(|check| !check.held) {
                let _ = writeln!(out, "FAIL  {}: {}: {}", soak.strategy, check.name, check.detail);
            }
        }
        out
    }
}

/// One line of the table: each cell padded to its column's width, the first left-aligned
/// and the others right-aligned, two spaces apart.
fn aligned(row: &[String], widths: &[usize]) -> String {
    let cells: Vec<String> = row
        .iter()
        .zip(widths)
        .enumerate()
        .map(
            |(i, (cell, &width))| {
                if i == 0 {
                    format!("{cell:<width$}")
                } else {
                    format!("{cell:>width$}")
                }
            },
        )
        .collect();
    cells.join("  ").trim_end().to_owned()
}

/// The table row of one strategy, in [`COLUMNS`] order.
fn table_row(soak: &StrategySoak) -> Vec<String> {
    let (churn, mixed) = (&soak.churn, &soak.mixed);
    let mib = |pick: fn(&Memory) -> u64| {
        churn
            .memory
            .map_or_else(|| "-".into(), |memory| format!("{:.1}", pick(&memory) as f64 / MIB))
    };
    let c = &mixed.correctness;
    vec![
        soak.strategy.to_string(),
        grouped(churn.keys as u64),
        mib(|m| m.before),
        mib(|m| m.peak),
        mib(|m| m.after),
        churn.live_mailboxes.map_or_else(|| "n/a".into(), |n| n.to_string()),
        grouped(mixed.messages),
        grouped(mixed.injected_panics),
        grouped(c.failed),
        format!("{}/{}/{}/{}", c.order_violations, c.overlaps, c.lost, c.duplicates),
        soak.result().into(),
    ]
}

/// `1234567` as `1,234,567`.
fn grouped(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Runs both phases for every strategy of `config`; `progress` gets a line as each phase
/// starts and every few seconds of a long one.
pub fn run_soak(
    config: &SoakConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<SoakOutcome, SoakError> {
    quiet_workload_panics();
    let mut strategies = Vec::new();
    for &strategy in &config.strategies {
        progress(&format!("{strategy}: churning {} keys", grouped(config.keys as u64)));
        let churn = churn::churn(strategy, config, progress)?;
        progress(&format!("{strategy}: mixed soak for {:?}", config.duration));
        let mixed = mixed::mixed_soak(strategy, config, progress)?;
        strategies.push(StrategySoak { strategy, churn, mixed });
    }
    Ok(SoakOutcome { strategies })
}

fn build(
    strategy: Design,
    config: &SoakConfig,
    handler: Arc<dyn Handler>,
) -> Result<Box<dyn Strategy>, SoakError> {
    strategy
        .build(config.strategy_config(), handler)
        .map_err(|source| SoakError::Build { strategy, source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
        assert_eq!(grouped(1_234_567), "1,234,567");
    }

    #[test]
    fn the_table_lists_every_strategy_and_each_failed_check() {
        let churn = ChurnOutcome {
            keys: 1_000,
            messages: 3_000,
            ran: 3_000,
            out_of_order: 0,
            live_mailboxes: Some(0),
            memory: Some(Memory { before: 10 << 20, peak: 12 << 20, after: 100 << 20 }),
            elapsed: Duration::from_secs(1),
        };
        let mixed = MixedOutcome { messages: 1_234_567, injected_panics: 5, ..Default::default() };
        let outcome = SoakOutcome {
            strategies: vec![StrategySoak {
                strategy: StrategyId::KeyedMailbox.into(),
                churn,
                mixed,
            }],
        };
        assert!(!outcome.passed());
        let table = outcome.render();
        assert!(table.contains("keyed-mailbox") && table.contains("1,234,567"), "{table}");
        assert!(table.contains("FAIL  keyed-mailbox: churn: memory given back"), "{table}");
        assert!(table.contains("FAIL  keyed-mailbox: soak: failed = panics injected"), "{table}");
        assert!(!table.contains("FAIL  keyed-mailbox: churn: no mailbox left"), "{table}");
    }

    #[test]
    fn the_unordered_controls_reordering_reads_caught_and_an_ordered_strategys_fails() {
        let churn = ChurnOutcome {
            keys: 1_000,
            messages: 3_000,
            ran: 3_000,
            out_of_order: 0,
            live_mailboxes: None,
            memory: None,
            elapsed: Duration::from_secs(1),
        };
        let mut mixed = MixedOutcome { messages: 5_000, ..Default::default() };
        mixed.correctness.order_violations = 17;
        mixed.correctness.overlaps = 2;
        let soak_of = |strategy: StrategyId, mixed: &MixedOutcome| StrategySoak {
            strategy: strategy.into(),
            churn: churn.clone(),
            mixed: mixed.clone(),
        };
        assert_eq!(soak_of(StrategyId::ThreadPool, &mixed).result(), "caught");
        assert_eq!(soak_of(StrategyId::GroupBy, &mixed).result(), "FAIL");
        mixed.correctness = Correctness::default();
        assert_eq!(soak_of(StrategyId::ThreadPool, &mixed).result(), "pass");
    }
}
