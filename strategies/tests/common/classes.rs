//! Strategy classes: the sets of strategies a test applies to, and the reference
//! configuration.
//!
//! Every class is a query on the strategies' descriptors (family, threads, ordered), never a
//! list of variants: a new strategy is classified by its line in the crate's strategy
//! list, and every check of its class runs on it without an edit here.

use strategies::{Descriptor, Family, StrategyConfig, StrategyId, Threads};

/// The built-in strategies whose descriptor satisfies `class`, in presentation order.
pub fn strategies_where(class: impl Fn(&Descriptor) -> bool) -> Vec<StrategyId> {
    StrategyId::ALL.iter().copied().filter(|id| class(id.descriptor())).collect()
}

/// Every strategy, controls included.
pub fn all() -> Vec<StrategyId> {
    StrategyId::ALL.to_vec()
}

/// Every strategy that promises per-key order.
pub fn ordered() -> Vec<StrategyId> {
    strategies_where(|strategy| strategy.ordered)
}

/// Strategies that run each key in its own mailbox, so a waiting key frees its worker.
pub fn per_key_mailboxes() -> Vec<StrategyId> {
    strategies_where(|strategy| strategy.family == Family::Mailboxes)
}

/// Strategies that serialise whole hash groups, so a waiting key blocks its group.
pub fn hash_groups() -> Vec<StrategyId> {
    strategies_where(|strategy| strategy.family == Family::HashGroups)
}

/// Every strategy with threads of its own (all but those that run each message inside
/// `submit`, on the submitting thread, like `inline`).
pub fn threaded() -> Vec<StrategyId> {
    strategies_where(|strategy| !strategy.runs_on_caller())
}

/// The strategies that run each message inside `submit`, on the submitting thread.
pub fn on_caller() -> Vec<StrategyId> {
    strategies_where(Descriptor::runs_on_caller)
}

/// Whether `id` keeps per-key mailboxes, so its `Stats::live_mailboxes` is `Some`.
pub fn has_mailboxes(id: StrategyId) -> bool {
    id.descriptor().family == Family::Mailboxes
}

/// The OS threads `id` starts for `types` aggregate types with `workers` workers: a shared
/// pool `workers`, a pool per type `workers x types`, none on the caller.
pub fn expected_threads(id: StrategyId, workers: usize, types: usize) -> usize {
    match id.descriptor().threads {
        Threads::SharedPool => workers,
        Threads::PoolPerType => workers * types,
        Threads::Caller => 0,
    }
}

/// The reference configuration with `workers` threads.
pub fn config(workers: usize) -> StrategyConfig {
    StrategyConfig::with_workers(workers)
}
