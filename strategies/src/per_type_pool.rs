//! `per-type-pool`: the legacy design, one pool of `workers` threads per aggregate type.
//!
//! # Algorithm
//!
//! 1. Each aggregate type gets its own pool of `workers` threads, started on the type's
//!    first message and kept for the strategy's life (threads = types x workers).
//! 2. Inside a type's pool: `groups_per_worker x workers` serial groups by
//!    `floor_mod(hash(aggregate id), groups)`, each pinned to one thread of that pool.
//! 3. A group runs one message at a time; a pending step blocks the group (not the
//!    thread) until it completes (`groups.rs`).
//!
//! # Ordering guarantee
//!
//! A key (type and id) always reaches the same pool and the same group, and a group is
//! strictly serial, so per-key order holds.
//!
//! # Trade-offs
//!
//! Thread explosion: 20 types on 16 cores start 320 threads, which compete for the cores
//! (context switches, cache pressure). It inherits `group-by`'s head-of-line blocking.
//!
//! # References
//!
//! - docs/design.md section 2 (the "9.2" design: per-aggregate-type schedulers).

use std::sync::Arc;

use dashmap::DashMap;

use crate::events::EventSet;
use crate::executor::{BuiltIn, Core, Engine, Threads};
use crate::groups::GroupPool;
use crate::{Message, StrategyId};

/// The `per-type-pool` strategy.
#[derive(Debug)]
pub(crate) struct PerTypePool {
    core: Arc<Core>,
    /// The pool of each aggregate type seen so far.
    pools: DashMap<u32, GroupPool>,
    threads: Threads,
}

impl BuiltIn for PerTypePool {
    const ID: StrategyId = StrategyId::PerTypePool;
    /// flume's parks and wake-ups are its own; there are no mailboxes.
    const EVENTS: EventSet = EventSet::HOPS;
}

impl Engine for PerTypePool {
    fn start(core: &Arc<Core>) -> Self {
        Self { core: Arc::clone(core), pools: DashMap::new(), threads: Threads::default() }
    }

    fn dispatch(&self, message: Message) {
        let aggregate_type = message.key.aggregate_type;
        if let Some(pool) = self.pools.get(&aggregate_type) {
            pool.dispatch(message);
            return;
        }
        self.pools
            .entry(aggregate_type)
            .or_insert_with(|| {
                let name = format!("type{aggregate_type}");
                GroupPool::start(&self.core, &name, &self.threads)
            })
            .dispatch(message);
    }

    fn sweep(&self) {
        for pool in self.pools.iter() {
            pool.sweep();
        }
    }

    fn stop(&self) {
        for pool in self.pools.iter() {
            pool.stop();
        }
        self.threads.join_all();
    }

    fn threads_started(&self) -> usize {
        self.threads.started()
    }
}
