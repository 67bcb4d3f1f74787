//! Strategy classes: the sets of strategies a test applies to, and the reference
//! configuration.

use strategies::{StrategyConfig, StrategyId};

/// Strategies that run each key in its own mailbox, so a waiting key frees its worker.
pub const PER_KEY_MAILBOXES: [StrategyId; 4] =
    [StrategyId::WorkStealing, StrategyId::KeyedMailbox, StrategyId::Tokio, StrategyId::Rayon];

/// Strategies that serialise whole hash groups, so a waiting key blocks its group.
pub const HASH_GROUPS: [StrategyId; 2] = [StrategyId::PerTypePool, StrategyId::GroupBy];

/// Every strategy, controls included.
pub fn all() -> Vec<StrategyId> {
    StrategyId::ALL.to_vec()
}

/// Every strategy that promises per-key order.
pub fn ordered() -> Vec<StrategyId> {
    StrategyId::ALL.iter().copied().filter(|id| id.is_ordered()).collect()
}

/// Every strategy with threads of its own (all but `inline`, which runs on the submitter).
pub fn threaded() -> Vec<StrategyId> {
    StrategyId::ALL.iter().copied().filter(|&id| id != StrategyId::Inline).collect()
}

/// The reference configuration with `workers` threads.
pub fn config(workers: usize) -> StrategyConfig {
    StrategyConfig::with_workers(workers)
}
