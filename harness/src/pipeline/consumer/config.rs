//! What an incarnation runs with: the consumer's settings, what its handler does with each
//! record, how it ends, and what it holds paused.

use crate::pipeline::commit::MetadataLimit;
use crate::pipeline::log::Record;
use crate::pipeline::retry::RetryConfig;
use crate::results::CommitPolicy;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use strategies::{Design, StrategyConfig};

/// Kafka's default `max.poll.records`.
pub const DEFAULT_MAX_POLL_RECORDS: usize = 500;
/// How a consumer polls, commits, handles and retries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumerConfig {
    /// Which offset each commit names, and what rides in its metadata.
    pub policy: CommitPolicy,
    /// Time between two periodic commits.
    pub commit_interval: Duration,
    /// The most metadata bytes one partition's commit may carry.
    pub metadata_limit: MetadataLimit,
    /// The most records one poll returns.
    pub max_poll_records: usize,
    /// CPU each record's handler burns before it applies the record (and each attempt of
    /// a failing one), in nanoseconds.
    pub spin_ns: u64,
    /// What a failed attempt leads to.
    pub retry: RetryConfig,
}

/// What the handler does with a record, decided per incarnation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Treatment {
    /// Run it: spin, apply, complete.
    Run,
    /// Spin, then wait this long without a thread (a slow dependency, pending on the
    /// harness timer), then apply and complete.
    Wait(Duration),
    /// Leave it pending for ever: it never applies nor completes (until a forced close
    /// abandons it).
    Stall,
    /// Its first `failures` attempts fail (`u32::MAX`: poison, every attempt fails); what
    /// then happens is the consumer's retry policy.
    Fail {
        /// Attempts that fail before one succeeds.
        failures: u32,
    },
}

/// Decides each record's [`Treatment`].
pub type Treat = Arc<dyn Fn(&Record) -> Treatment + Send + Sync>;

/// A flag one thread raises and others watch: the cue for a member to leave the group. It
/// also counts the watchers that have their assignment, and those that have run out of
/// work and only wait for a revocation.
#[derive(Clone, Debug, Default)]
pub struct Signal(Arc<(AtomicBool, AtomicU32, AtomicU32)>);

impl Signal {
    /// A signal not yet raised.
    pub fn new() -> Self {
        Self::default()
    }

    /// Raises it.
    pub fn raise(&self) {
        // Release: pairs with the Acquire load of `is_raised`.
        self.0 .0.store(true, Ordering::Release);
    }

    /// Whether it was raised.
    pub fn is_raised(&self) -> bool {
        self.0 .0.load(Ordering::Acquire)
    }

    /// Incarnations that consumed everything assigned to them and only wait for the end.
    pub fn idle(&self) -> u32 {
        self.0 .1.load(Ordering::Acquire)
    }

    /// Counts one more incarnation among the idle.
    pub(super) fn enter_idle(&self) {
        self.0 .1.fetch_add(1, Ordering::AcqRel);
    }

    /// Incarnations the group has given their assignment (possibly empty): a membership
    /// change before every one has would be one they never see revoked.
    pub fn assigned(&self) -> u32 {
        self.0 .2.load(Ordering::Acquire)
    }

    /// Counts one more incarnation among those with their assignment.
    pub(super) fn enter_assigned(&self) {
        self.0 .2.fetch_add(1, Ordering::AcqRel);
    }
}

/// How an incarnation ends.
#[derive(Clone, Debug)]
pub enum Stop {
    /// Consume to the end offsets (and settle the retry topic), drain, commit a last time.
    AtEnd,
    /// Die the moment this many records completed, or once the log is consumed and nothing
    /// completed for `idle` (records stuck, or waiting behind stuck ones, may keep the
    /// count from ever being reached), without a final commit (module docs, step 5).
    CrashAfter {
        /// Completions, in this incarnation, after which it dies.
        completions: u64,
        /// How long a consumed log may see no completion before the consumer dies anyway.
        idle: Duration,
    },
    /// Consume until the group revokes the member's partitions (the transport decides
    /// when), and then give them up in the revocation's callback: stop polling, let nothing
    /// more apply, commit what completed, abandon what is in flight. With `leave`, the
    /// member leaves the group once `signal` is raised, which revokes its partitions the
    /// same way. Every such incarnation that consumed what it owns counts itself idle in
    /// `signal`.
    Revoked {
        /// The cue to leave, and the count of idle incarnations.
        signal: Signal,
        /// Whether this member leaves when `signal` is raised (the others wait for the
        /// revocation its leaving causes).
        leave: bool,
    },
    /// Consume until `signal` is raised (by whoever runs the consumer, once what it
    /// measures is over), then stop at once: nothing applies any more, the executor is
    /// force-closed (what still runs or waits is abandoned: a record retried for ever, and
    /// what waits behind it), and what completed is committed. The member stays in the
    /// group. Raised or not, it never drains: a record retried for ever would hold a drain
    /// for ever.
    Until {
        /// The cue to stop.
        signal: Signal,
    },
}

/// Partitions an incarnation keeps paused until the group has committed other partitions
/// up to given offsets: drain-then-expand holds a topic's new partitions until its old
/// ones are consumed up to the expansion.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hold {
    /// The partitions held.
    pub partitions: Vec<u32>,
    /// `(partition, offset)`: the hold lifts once every such partition's committed offset
    /// has reached its offset.
    pub until_committed: Vec<(u32, u64)>,
}

/// One incarnation of a consumer group member (one process's life, on the member's
/// client): what it runs the records on, how it consumes and how it ends.
#[derive(Clone)]
pub struct Incarnation {
    /// The executor it builds.
    pub strategy: Design,
    /// The executor's settings.
    pub strategy_config: StrategyConfig,
    /// How it polls, commits and retries.
    pub config: ConsumerConfig,
    /// What its handler does with each record.
    pub treat: Treat,
    /// How it ends.
    pub stop: Stop,
    /// Partitions it keeps paused for a while (none by default).
    pub hold: Option<Hold>,
}

impl std::fmt::Debug for Incarnation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incarnation")
            .field("strategy", &self.strategy)
            .field("config", &self.config)
            .field("stop", &self.stop)
            .field("hold", &self.hold)
            .finish_non_exhaustive()
    }
}

impl Incarnation {
    /// An incarnation with no hold.
    pub fn new(
        strategy: Design,
        strategy_config: StrategyConfig,
        config: ConsumerConfig,
        treat: Treat,
        stop: Stop,
    ) -> Self {
        Self { strategy, strategy_config, config, treat, stop, hold: None }
    }
}
