//! `group-by`: hash-serial groups pinned to one shared pool of `workers` threads.
//!
//! # Algorithm
//!
//! 1. One pool of `workers` threads for every aggregate type.
//! 2. `groups_per_worker x workers` serial groups; a message goes to group
//!    `floor_mod(hash(aggregate id), groups)`, pinned to thread `group % workers`.
//! 3. A group runs one message at a time; a pending step blocks the group (not the
//!    thread) until it completes, then the group's backlog runs in order (`groups.rs`).
//!
//! # Ordering guarantee
//!
//! A key always hashes to the same group and a group is strictly serial, so per-key order
//! holds (and more: every key of a group is serialised with every other).
//!
//! # Trade-offs
//!
//! Head-of-line blocking: a key that waits (I/O, a retry backoff) delays every key hashed
//! to its group for the whole wait, and a long synchronous handler delays every group
//! pinned to the same thread. No stealing, so a hot group loads one thread.
//!
//! # References
//!
//! - docs/design.md section 2 (the `groupBy` hash-serial design on a shared pool).
//! - Reactor's `groupBy` + `publishOn` + `concatMap`.

use std::sync::Arc;

use crate::events::EventSet;
use crate::executor::{BuiltIn, Core, Engine, Threads};
use crate::groups::GroupPool;
use crate::{Message, StrategyId};

/// The `group-by` strategy.
#[derive(Debug)]
pub(crate) struct GroupBy {
    pool: GroupPool,
    threads: Threads,
}

impl BuiltIn for GroupBy {
    const ID: StrategyId = StrategyId::GroupBy;
    /// flume's parks and wake-ups are its own; there are no mailboxes.
    const EVENTS: EventSet = EventSet::HOPS;
}

impl Engine for GroupBy {
    fn start(core: &Arc<Core>) -> Self {
        let threads = Threads::default();
        let pool = GroupPool::start(core, "group-by", &threads);
        Self { pool, threads }
    }

    fn dispatch(&self, message: Message) {
        self.pool.dispatch(message);
    }

    fn sweep(&self) {
        self.pool.sweep();
    }

    fn stop(&self) {
        self.pool.stop();
        self.threads.join_all();
    }

    fn threads_started(&self) -> usize {
        self.threads.started()
    }
}
