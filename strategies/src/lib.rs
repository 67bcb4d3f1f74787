//! Executors of per-aggregate ordered messages behind one [`Strategy`] contract.
//!
//! A *message* belongs to an aggregate ([`Key`]: type and id). Every ordered strategy runs
//! the messages of one key one at a time, in submission order, while different keys run in
//! parallel. The strategies differ in threads, fairness and head-of-line blocking; the
//! harness measures them side by side.
//!
//! # The contract
//!
//! - A [`Message`] is plain `Copy` data; the synchronous path allocates nothing per message.
//! - One [`Handler`] per strategy instance; a call returns [`Outcome::Done`] or
//!   [`Outcome::Pending`] with a future that completes later (a non-blocking wait, a retry
//!   backoff). The next message of the key starts only after that future completes. A
//!   strategy may poll the future inside its waker's `wake`, on the waking thread
//!   (`keyed-mailbox` and `work-stealing` do, as the reference design does: the thread that
//!   completes a wait finishes the message), so a waker must not be woken while its caller
//!   holds a lock that the future's poll takes.
//! - One admission window for every strategy: at most `max_in_flight` unfinished messages,
//!   refilled in batches of `max(1, max_in_flight / 16)` (see `window.rs`); `submit` from
//!   an outside thread blocks while the window is full.
//! - A handler may submit into its own strategy (a saga sending a command), from its call
//!   or from its pending step's poll: such a submission never blocks. With a free credit it
//!   is admitted as any other; at a full window it is accepted into the strategy's
//!   *admission queue* and `submit` returns `Ok` at once. As messages finish, their credits
//!   admit queued messages first, in submission order, before blocked outside submitters
//!   get any; queued messages are not in flight until admitted
//!   ([`Stats::peak_admission_queue`] reports how many waited). `drain` and `close` wait
//!   for them; after a close began such a submission is refused like any other.
//! - [`Strategy::close`] finishes queued work and then rejects new messages, handing each one
//!   back in [`SubmitError::Closed`]; [`Strategy::force_close`] discards queued messages
//!   (the admission queue's too), lets running steps finish and abandons pending ones.
//!
//! [`conformance::check`] tells whether a design, built in or your own, keeps this contract.
//!
//! # Strategies
//!
//! | id | file | family | threads | design |
//! |---|---|---|---|---|
//! | `per-type-pool` | `per_type_pool.rs` | hash groups | pool per type | one pool of `workers` threads per aggregate type, hash-serial groups |
//! | `group-by` | `group_by.rs` | hash groups | shared pool | hash-serial groups pinned to one shared pool |
//! | `work-stealing` | `work_stealing.rs` | mailboxes | shared pool | per-key mailboxes, crossbeam-deque work stealing |
//! | `keyed-mailbox` | `keyed_mailbox.rs` | mailboxes | shared pool | per-key mailboxes pinned to a worker at creation, fair rounds |
//! | `hybrid` | `hybrid.rs` | mailboxes | shared pool | keyed-mailbox's affinity; a worker that runs dry takes a queued mailbox from another |
//! | `tokio` | `tokio_tasks.rs` | mailboxes | shared pool | per-key mailboxes drained by tokio tasks |
//! | `rayon` | `rayon_jobs.rs` | mailboxes | shared pool | per-key mailboxes drained by rayon jobs |
//! | `tokio-actors` | `tokio_actors.rs` | mailboxes | shared pool | one tokio task and channel per active key (an actor each) |
//! | `inline` | `inline.rs` | inline | caller | the handler runs on the submitting thread (reference) |
//! | `thread-pool` | `thread_pool.rs` | unordered | shared pool | a plain pool fed by one channel, no per-key order (control) |
//!
//! # Strategies as data
//!
//! Each strategy is declared once, as one entry of the `strategies!` list below: variant,
//! id, file and engine type, [`Family`], ordered flag, [`Threads`], plot colour and
//! description. The macro generates [`StrategyId`] (with [`StrategyId::ALL`], its id and
//! description, and [`StrategyId::build`]) and the strategy's [`Descriptor`]: what the
//! harness, the tests and the charts know of it. Code that treats a *kind* of strategy
//! differently (a thread budget, a check that applies only to per-key mailboxes, a chart
//! group) asks the descriptor, never a list of variants, so adding a strategy is a new file
//! and one entry in the list (which declares the file's module too), plus its row in the
//! table above. [`Descriptor::custom`] describes a strategy that is not built in (its
//! colour is derived from its id).

#![forbid(unsafe_code)]

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;

#[cfg(not(loom))]
pub mod conformance;
mod design;
pub mod engine;
mod events;
mod executor;
mod groups;
mod hash;
#[macro_use]
mod names;
mod mailbox;
mod parking;
#[cfg(not(loom))]
pub mod stages;
mod sync;
#[cfg(not(loom))]
pub mod testkit;
mod window;
mod windows;

#[cfg(all(test, loom))]
mod loom_models;

pub use design::{BuildFn, Design, RegisterError};
pub use groups::group_of;
pub use window::MAX_WINDOW;

/// The aggregate a message belongs to: messages with equal keys are serialised.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// The aggregate type (e.g. `Order`), as a small index.
    pub aggregate_type: u32,
    /// The aggregate id within its type.
    pub aggregate_id: u64,
}

impl Key {
    /// The key of aggregate `aggregate_id` of type `aggregate_type`.
    pub const fn new(aggregate_type: u32, aggregate_id: u64) -> Self {
        Self { aggregate_type, aggregate_id }
    }
}

/// What a handler is asked to do; the handler interprets it, strategies never look at it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Job {
    /// Return at once.
    #[default]
    Noop,
    /// Spin about `ns` nanoseconds of CPU, then return done.
    Spin {
        /// CPU time to burn.
        ns: u32,
    },
    /// Block the handler's thread for about `ns` nanoseconds (a blocking sleep, as a
    /// synchronous I/O call does), then return done: it holds a thread but burns no CPU.
    Block {
        /// How long the thread sleeps.
        ns: u32,
    },
    /// Return pending; complete after `ns` nanoseconds without using CPU.
    Wait {
        /// How long the simulated non-blocking wait lasts.
        ns: u32,
    },
    /// Fail an optimistic version check `retries` times, waiting (pending) a backoff that
    /// starts at `backoff_ns` and doubles after each failure, spinning `spin_ns` per attempt.
    Retry {
        /// Failed attempts before the one that succeeds.
        retries: u8,
        /// The first backoff; each later one doubles it.
        backoff_ns: u32,
        /// CPU time of each attempt.
        spin_ns: u32,
    },
    /// Panic: tests that a failing handler is contained.
    Panic,
    /// Read and update `lines` cache lines of the aggregate's own state (the handler keeps
    /// a block of state per aggregate), then spin about `spin_ns` of CPU, then return done.
    Touch {
        /// 64-byte lines of the state read and written.
        lines: u32,
        /// CPU time after the state, in nanoseconds.
        spin_ns: u32,
    },
    /// A value meaning whatever a test handler decides.
    Custom(u32),
}

/// One message: plain data, no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Message {
    /// The aggregate it belongs to.
    pub key: Key,
    /// Position within its key's stream, assigned by the producer (0, 1, 2, ...).
    pub seq: u64,
    /// When it was meant to arrive, in nanoseconds from the start of the run; latency is
    /// measured from here, not from the actual send (no coordinated omission).
    pub intended_ns: u64,
    /// What the handler does with it.
    pub job: Job,
}

/// A step that has not completed yet: it completes when this future does.
pub type Pending = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// What a handler call returned.
pub enum Outcome {
    /// The message is finished.
    Done,
    /// The message finishes when this future completes; the next message of the key waits.
    Pending(Pending),
}

impl fmt::Debug for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Done => f.write_str("Done"),
            Self::Pending(_) => f.write_str("Pending(..)"),
        }
    }
}

/// The application code that a strategy runs for every message.
///
/// A panic (in the call or while its future is polled) is contained by the strategy and
/// counted in [`Stats::failed`]; the message counts as finished.
pub trait Handler: Send + Sync + 'static {
    /// Runs `message` (or starts it and returns the rest as [`Outcome::Pending`]).
    fn handle(&self, message: &Message) -> Outcome;
}

impl<F> Handler for F
where
    F: Fn(&Message) -> Outcome + Send + Sync + 'static,
{
    fn handle(&self, message: &Message) -> Outcome {
        self(message)
    }
}

/// Which admitted messages share one admission window (and so one `max_in_flight`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WindowScope {
    /// One window for the whole strategy: one receiver requests every message.
    #[default]
    Strategy,
    /// One window per aggregate type, opened on the type's first message: each type is
    /// requested by its own dispatcher, as in the legacy per-type design. A key holding
    /// its type's window then stalls only the keys of its own type.
    Type,
}

names!(WindowScope, UnknownWindowScope, "window scope", "scopes" {
    Strategy = "strategy",
    Type = "type",
});

/// How `keyed-mailbox` binds a new mailbox to a worker. Only the reference rule is the
/// design; the other is an ablation, to measure what the rule costs and what it buys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Binding {
    /// The reference rule: scanning from the next worker in round-robin order, the first
    /// running worker whose queue is empty, else the first parked one, else that next
    /// worker.
    #[default]
    Reference,
    /// Ablation: the next worker in round-robin order, looking at no worker's state.
    RoundRobin,
}

names!(Binding, UnknownBinding, "binding", "bindings" {
    Reference = "reference",
    RoundRobin = "round-robin",
});

/// Settings shared by every strategy; [`StrategyConfig::validate`] rejects zero sizes and
/// values past their limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrategyConfig {
    /// Worker threads of the shared pool (per aggregate type for `per-type-pool`).
    pub workers: usize,
    /// At most this many admitted messages are unfinished at once (the shared window).
    pub max_in_flight: usize,
    /// A mailbox runs at most this many messages per turn, so a hot key cannot starve the
    /// other keys of its worker (mailbox strategies).
    pub throughput: usize,
    /// Hash-serial groups per worker thread (`group-by`, `per-type-pool`).
    pub groups_per_worker: usize,
    /// An idle mailbox worker spins this long, in microseconds, for new work before it
    /// parks, since parking and being woken cost system calls; 0 parks at once. A worker
    /// whose previous park outlasted the spin parks at once: the load is light, and
    /// spinning would only burn CPU (`keyed-mailbox`, `work-stealing`).
    pub idle_spin_us: u32,
    /// Which messages share one admission window: `None` runs the strategy's own default
    /// ([`Descriptor::window_scope`]).
    pub window_scope: Option<WindowScope>,
    /// How `keyed-mailbox` binds a new mailbox to a worker ([`Binding`]; other strategies
    /// ignore it).
    pub binding: Binding,
}

impl StrategyConfig {
    /// `max-in-flight` of the reference design.
    pub const DEFAULT_MAX_IN_FLIGHT: usize = 256;
    /// `throughput` of the reference design.
    pub const DEFAULT_THROUGHPUT: usize = 16;
    /// Groups per worker of the legacy design (`64 x cores`).
    pub const DEFAULT_GROUPS_PER_WORKER: usize = 64;
    /// The most workers a strategy will start.
    pub const MAX_WORKERS: usize = 4096;
    /// `spin` of the reference design (one release; another spins 0).
    pub const DEFAULT_IDLE_SPIN_US: u32 = 20;
    /// The longest idle spin the reference design accepts (1 ms).
    pub const MAX_IDLE_SPIN_US: u32 = 1_000;

    /// The reference settings with `workers` threads.
    pub fn with_workers(workers: usize) -> Self {
        Self {
            workers,
            max_in_flight: Self::DEFAULT_MAX_IN_FLIGHT,
            throughput: Self::DEFAULT_THROUGHPUT,
            groups_per_worker: Self::DEFAULT_GROUPS_PER_WORKER,
            idle_spin_us: Self::DEFAULT_IDLE_SPIN_US,
            window_scope: None,
            binding: Binding::Reference,
        }
    }

    /// Checks every field: a zero size is an error, and so is a value past its limit (an
    /// idle spin of 0 is valid: it parks at once).
    pub fn validate(&self) -> Result<(), ConfigError> {
        let fields = [
            ("workers", self.workers, Self::MAX_WORKERS),
            ("max_in_flight", self.max_in_flight, MAX_WINDOW),
            ("throughput", self.throughput, usize::MAX),
            ("groups_per_worker", self.groups_per_worker, 1 << 16),
        ];
        for (field, value, max) in fields {
            if value == 0 {
                return Err(ConfigError::Zero { field });
            }
            if value > max {
                return Err(ConfigError::TooLarge { field, value, max });
            }
        }
        if self.idle_spin_us > Self::MAX_IDLE_SPIN_US {
            return Err(ConfigError::TooLarge {
                field: "idle_spin_us",
                value: self.idle_spin_us as usize,
                max: Self::MAX_IDLE_SPIN_US as usize,
            });
        }
        Ok(())
    }
}

impl Default for StrategyConfig {
    /// The reference settings with one worker per available core.
    fn default() -> Self {
        Self::with_workers(std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

/// A configuration value that no strategy accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A size was zero.
    #[error("`{field}` must be at least 1, got 0")]
    Zero {
        /// The offending field.
        field: &'static str,
    },
    /// A size was past its limit.
    #[error("`{field}` must be at most {max}, got {value}")]
    TooLarge {
        /// The offending field.
        field: &'static str,
        /// The value given.
        value: usize,
        /// The largest accepted value.
        max: usize,
    },
}

/// Why a message was not accepted; the message is handed back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SubmitError {
    /// The strategy was closed (gracefully or forcibly) before the message was admitted.
    #[error("the strategy is closed; message {0:?} was not accepted")]
    Closed(Message),
}

impl SubmitError {
    /// The message that was not accepted.
    pub fn into_message(self) -> Message {
        match self {
            Self::Closed(message) => message,
        }
    }
}

/// Counters a strategy keeps about what happened to admitted messages.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Messages whose handler or future panicked (contained; they count as finished).
    pub failed: u64,
    /// Queued messages that a forced close dropped without running.
    pub discarded: u64,
    /// Pending steps that a forced close abandoned before they completed.
    pub abandoned: u64,
    /// The most admitted messages unfinished at once.
    pub peak_in_flight: usize,
    /// The most messages that waited in the admission queue at once: submissions that this
    /// strategy's own handlers made into it while its window was full, accepted without
    /// blocking the handler's thread and admitted as finishing messages return credits.
    /// Zero while no handler submits into its own strategy at a full window.
    pub peak_admission_queue: usize,
    /// Messages that went through the admission queue so far: admitted from it since,
    /// still waiting in it, or dropped from it by a forced close (then counted in
    /// `discarded` too).
    pub admission_queued: u64,
    /// Per-key mailboxes alive right now (keys with unfinished messages); `None` for the
    /// strategies without per-key mailboxes. Zero once the strategy is drained: a mailbox
    /// that outlives its key's last message is a leak.
    pub live_mailboxes: Option<usize>,
    /// The scope its windows were opened with (its default or the configured one).
    pub window_scope: WindowScope,
    /// Admission windows opened so far: 1 with [`WindowScope::Strategy`], one per aggregate
    /// type seen with [`WindowScope::Type`]. `peak_in_flight` and `peak_admission_queue`
    /// are then the most in any one window.
    pub windows: usize,
    /// What the machinery did while counting was on ([`Strategy::count_events`]).
    pub events: Events,
}

/// Events a strategy's machinery counted while counting was on: the per-message cost
/// breakdown. `None`: the strategy cannot see that event (a library's internals) or has
/// no such machinery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events {
    /// Unparks that woke a parked worker.
    pub wakeups: Option<u64>,
    /// Times a worker went to sleep.
    pub parks: Option<u64>,
    /// Mailboxes made for keys that had none (a map insert each).
    pub activations: Option<u64>,
    /// Mailboxes removed from the map once empty.
    pub retirements: Option<u64>,
    /// Units of work handed to a queue that a thread takes from: a mailbox scheduled or
    /// requeued, a task or job spawned, a message or a resume sent to a lane.
    pub hops: Option<u64>,
    /// Idle spins that found work before the worker parked.
    pub spin_hits: Option<u64>,
    /// Mailboxes a worker took from another worker's queue.
    pub takes: Option<u64>,
    /// Times a worker parked while another worker's queue held a runnable mailbox.
    pub parked_while_queued: Option<u64>,
    /// Nanoseconds outside submitters spent blocked on a full window, summed over them.
    pub window_wait_ns: Option<u64>,
}

/// What a forced close did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForcedClose {
    /// Queued messages dropped without running.
    pub discarded: u64,
    /// Pending steps dropped before they completed.
    pub abandoned: u64,
}

/// One executor design: accepts messages and runs them with its handler.
pub trait Strategy: Send + Sync + fmt::Debug {
    /// Which design this is: its descriptor's id (`keyed-mailbox`, or a user design's).
    fn id(&self) -> &str;

    /// Admits `message` and queues it. From an outside thread this blocks while the window
    /// is full. From inside one of this strategy's own handler calls or step polls it never
    /// blocks: at a full window the message waits in the admission queue and this returns
    /// `Ok` at once (see the contract in the crate docs). Fails, handing the message back,
    /// once the strategy is closed.
    fn submit(&self, message: Message) -> Result<(), SubmitError>;

    /// Blocks until every accepted message has finished, those waiting in the admission
    /// queue included; the strategy stays open.
    fn drain(&self);

    /// Graceful close: rejects new messages, finishes every accepted one (the admission
    /// queue's too), stops the threads. Idempotent.
    fn close(&self);

    /// Forced close: rejects new messages, drops queued ones, lets running steps finish,
    /// abandons pending ones, stops the threads. Idempotent; later calls report zeros.
    fn force_close(&self) -> ForcedClose;

    /// OS threads this strategy has started so far (not the caller's).
    fn threads_started(&self) -> usize;

    /// Counters so far.
    fn stats(&self) -> Stats;

    /// Starts counting events from zero (`true`) or stops (`false`, keeping the counts),
    /// for [`Stats::events`]. Counting costs a read-modify-write per event, so the harness
    /// counts on a repetition of its own. Returns whether this strategy counts anything;
    /// the default counts nothing.
    fn count_events(&self, on: bool) -> bool {
        let _ = on;
        false
    }
}

/// A design family (what a chart groups by).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// One mailbox per active key, run by one thread at a time; a waiting key frees its
    /// worker.
    Mailboxes,
    /// Keys hashed into serial groups pinned to threads; a waiting key blocks its group.
    HashGroups,
    /// The handler runs inside `submit`, on the submitting thread (the reference).
    Inline,
    /// No per-key order at all (the control the order checks must catch).
    Unordered,
}

/// Whose threads run the handlers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Threads {
    /// One pool of `workers` threads, whatever the number of aggregate types.
    SharedPool,
    /// A pool of `workers` threads per aggregate type, each started on its type's first
    /// message.
    PoolPerType,
    /// The submitting thread: the strategy starts no thread of its own.
    Caller,
}

names!(Family, UnknownFamily, "family", "families" {
    Mailboxes = "mailboxes",
    HashGroups = "hash-groups",
    Inline = "inline",
    Unordered = "unordered",
});

names!(Threads, UnknownThreads, "threads", "threads" {
    SharedPool = "shared-pool",
    PoolPerType = "pool-per-type",
    Caller = "caller",
});

/// What the harness, the tests and the charts know of a strategy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// The id used on the command line, in JSON, in bench ids and in plots.
    pub id: Cow<'static, str>,
    /// One line on what the design is.
    pub description: Cow<'static, str>,
    /// The design family a chart groups it with.
    pub family: Family,
    /// Whether it promises per-key order (every family but [`Family::Unordered`]).
    pub ordered: bool,
    /// Whose threads run its handlers, which fixes how many threads it may start.
    pub threads: Threads,
    /// The window scope it runs with unless [`StrategyConfig::window_scope`] says
    /// otherwise: [`WindowScope::Type`] for the legacy `per-type-pool` (each type had its
    /// own dispatcher), [`WindowScope::Strategy`] for the others (one receiver).
    pub window_scope: WindowScope,
    /// Whether [`StrategyConfig::throughput`] bounds a turn: a mailbox runs at most that
    /// many messages before it yields its thread (the per-key mailbox designs; not
    /// `tokio-actors`, whose actor drains its channel, nor the hash-group designs).
    pub bounds_turn: bool,
    /// sRGB plot colour.
    pub colour: [u8; 3],
}

/// The colours [`Descriptor::custom`] picks from: tableau's olive and cyan (the two
/// tableau-10 colours no built-in strategy uses) and the light half of tableau-20, so a
/// custom strategy never shares a colour with a built-in one.
const CUSTOM_COLOURS: [[u8; 3]; 12] = [
    [188, 189, 34],
    [23, 190, 207],
    [174, 199, 232],
    [255, 187, 120],
    [152, 223, 138],
    [255, 152, 150],
    [197, 176, 213],
    [196, 156, 148],
    [247, 182, 210],
    [199, 199, 199],
    [219, 219, 141],
    [158, 218, 229],
];

impl Descriptor {
    /// A descriptor for a strategy that is not built in: its colour is derived from its id,
    /// deterministically (FNV-1a of the id picks one of a palette distinct from the
    /// built-in colours: the same id has the same colour on every run and machine). Its
    /// window scope is [`WindowScope::Strategy`] (one receiver), as for most built-in ones.
    pub fn custom(
        id: impl Into<Cow<'static, str>>,
        description: impl Into<Cow<'static, str>>,
        family: Family,
        ordered: bool,
        threads: Threads,
    ) -> Self {
        let id = id.into();
        let pick = hash::fnv1a(id.as_bytes()) % CUSTOM_COLOURS.len() as u64;
        let colour = CUSTOM_COLOURS[pick as usize];
        Self {
            id,
            description: description.into(),
            family,
            ordered,
            threads,
            window_scope: WindowScope::Strategy,
            bounds_turn: family == Family::Mailboxes,
            colour,
        }
    }

    /// Whether all its threads come from one pool of `workers` ([`Threads::SharedPool`]).
    pub const fn is_shared_pool(&self) -> bool {
        matches!(self.threads, Threads::SharedPool)
    }

    /// Whether its handlers run on the submitting thread ([`Threads::Caller`]).
    pub const fn runs_on_caller(&self) -> bool {
        matches!(self.threads, Threads::Caller)
    }
}

/// Declares the built-in strategies, one line each (see "Strategies as data" above), and
/// generates [`StrategyId`], its methods, the descriptor table and the engine match of
/// [`StrategyId::build`].
/// A column of the `strategies!` list: whether `throughput` bounds a strategy's turn
/// ([`Descriptor::bounds_turn`]).
#[derive(Clone, Copy)]
enum Turn {
    /// A mailbox runs at most `throughput` messages, then yields its thread.
    Bounded,
    /// Nothing in the design reads `throughput`.
    Unbounded,
}

impl Turn {
    const fn is_bounded(self) -> bool {
        matches!(self, Self::Bounded)
    }
}

macro_rules! strategies {
    ($(
        $variant:ident = $id:literal, $module:ident::$engine:ident, $family:ident,
            $ordered:literal, $threads:ident, $scope:ident, $turn:ident, $colour:expr,
            $description:literal;
    )*) => {
        // Each strategy's file, declared by its line.
        $(mod $module;)*

        /// Every strategy, by the id used on the command line, in JSON and in plots.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum StrategyId {
            $(#[doc = $description] $variant,)*
        }

        /// The built-in descriptors, in declaration (= [`StrategyId::ALL`]) order.
        static DESCRIPTORS: [Descriptor; StrategyId::ALL.len()] = [$(
            Descriptor {
                id: Cow::Borrowed($id),
                description: Cow::Borrowed($description),
                family: Family::$family,
                ordered: $ordered,
                threads: Threads::$threads,
                window_scope: WindowScope::$scope,
                bounds_turn: Turn::$turn.is_bounded(),
                colour: $colour,
            },
        )*];

        /// The built-in designs, in declaration order (what [`Design::built_in`] points at).
        static BUILT_IN: [design::Entry; StrategyId::ALL.len()] = [$(
            design::Entry::built_in(StrategyId::$variant, &DESCRIPTORS[StrategyId::$variant as usize]),
        )*];

        // The engine of each line implements the strategy of that line.
        $(const _: () = assert!(
            matches!(<$module::$engine as executor::BuiltIn>::ID, StrategyId::$variant),
            concat!("the engine on the line of `", $id, "` implements another strategy"),
        );)*

        impl StrategyId {
            /// Every strategy, in presentation order.
            pub const ALL: &'static [StrategyId] = &[$(StrategyId::$variant,)*];

            /// The id (`keyed-mailbox`, ...).
            pub const fn as_str(self) -> &'static str {
                match self { $(StrategyId::$variant => $id,)* }
            }

            /// One line on what the design is.
            pub const fn description(self) -> &'static str {
                match self { $(StrategyId::$variant => $description,)* }
            }

            /// Builds this strategy with `config` and `handler`, starting its threads.
            pub fn build(
                self,
                config: StrategyConfig,
                handler: Arc<dyn Handler>,
            ) -> Result<Box<dyn Strategy>, ConfigError> {
                config.validate()?;
                let scope = config.window_scope.unwrap_or(self.descriptor().window_scope);
                let seen = match self {
                    $(StrategyId::$variant => <$module::$engine as executor::BuiltIn>::EVENTS,)*
                };
                let core = Arc::new(executor::Core::new(config, scope, seen, handler));
                Ok(match self {
                    $(StrategyId::$variant => {
                        executor::Executor::<$module::$engine>::boxed(Cow::Borrowed($id), core)
                    })*
                })
            }
        }
    };
}

strategies! {
    // variant     id               file::engine                family      ordered threads
    //     default window scope, turn (does `throughput` bound it), plot colour, description
    PerTypePool  = "per-type-pool", per_type_pool::PerTypePool, HashGroups, true, PoolPerType,
        Type, Unbounded, [140, 86, 75],
        "legacy: a pool of `workers` threads per aggregate type, hash-serial groups pinned to its threads";
    GroupBy      = "group-by",      group_by::GroupBy,          HashGroups, true, SharedPool,
        Strategy, Unbounded, [255, 127, 14],
        "hash-serial groups (`groups_per_worker x workers`) pinned to one shared pool";
    WorkStealing = "work-stealing", work_stealing::WorkStealing, Mailboxes, true, SharedPool,
        Strategy, Bounded, [44, 160, 44],
        "per-key mailboxes scheduled by crossbeam-deque work stealing, no affinity";
    KeyedMailbox = "keyed-mailbox", keyed_mailbox::KeyedMailbox, Mailboxes, true, SharedPool,
        Strategy, Bounded, [31, 119, 180],
        "per-key mailboxes pinned to a worker at creation: fair rounds, waits free the worker";
    Hybrid       = "hybrid",        hybrid::Hybrid,             Mailboxes,  true, SharedPool,
        Strategy, Bounded, [0, 128, 128],
        "keyed-mailbox's affinity, and a worker that runs dry takes another's queued mailbox";
    Tokio        = "tokio",         tokio_tasks::TokioTasks,    Mailboxes,  true, SharedPool,
        Strategy, Bounded, [148, 103, 189],
        "peer: per-key mailboxes drained by tasks on tokio's multi-thread runtime";
    Rayon        = "rayon",         rayon_jobs::RayonJobs,      Mailboxes,  true, SharedPool,
        Strategy, Bounded, [227, 119, 194],
        "peer: per-key mailboxes drained by jobs on a rayon pool";
    TokioActors  = "tokio-actors",  tokio_actors::TokioActors,  Mailboxes,  true, SharedPool,
        Strategy, Unbounded, [204, 153, 0],
        "peer: one tokio task and channel per active key, as an actor framework would";
    Inline       = "inline",        inline::Inline,             Inline,     true, Caller,
        Strategy, Unbounded, [127, 127, 127],
        "control: the handler runs on the submitting thread (zero-overhead reference)";
    ThreadPool   = "thread-pool",   thread_pool::ThreadPool,    Unordered, false, SharedPool,
        Strategy, Unbounded, [214, 39, 40],
        "control: a plain pool fed by one channel, no per-key order (must be caught)";
}

impl StrategyId {
    /// What the harness, the tests and the charts know of this strategy.
    pub const fn descriptor(self) -> &'static Descriptor {
        &DESCRIPTORS[self as usize]
    }

    /// Whether it promises per-key order (all but the `thread-pool` control).
    pub const fn is_ordered(self) -> bool {
        self.descriptor().ordered
    }

    /// Whether all its threads come from one pool of `workers` (all but `per-type-pool`
    /// and the thread-less `inline`).
    pub const fn is_shared_pool(self) -> bool {
        self.descriptor().is_shared_pool()
    }
}

/// The descriptor of `id`, if `id` names a built-in strategy or a registered design
/// ([`Design::find`]).
pub fn descriptor_of(id: &str) -> Option<&'static Descriptor> {
    Design::find(id).map(Design::descriptor)
}

impl fmt::Display for StrategyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A strategy id that names no strategy.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown strategy `{given}`; valid ids: {}", valid_ids())]
pub struct UnknownStrategy {
    /// What was given.
    pub given: String,
}

fn valid_ids() -> String {
    StrategyId::ALL.iter().map(|id| id.as_str()).collect::<Vec<_>>().join(", ")
}

impl FromStr for StrategyId {
    type Err = UnknownStrategy;

    fn from_str(given: &str) -> Result<Self, Self::Err> {
        StrategyId::ALL
            .iter()
            .copied()
            .find(|id| id.as_str() == given)
            .ok_or_else(|| UnknownStrategy { given: given.to_owned() })
    }
}

/// Builds the strategy named `id` (built in or registered): the registry entry point for
/// the harness and the CLI.
pub fn build(
    id: &str,
    config: StrategyConfig,
    handler: Arc<dyn Handler>,
) -> Result<Box<dyn Strategy>, BuildError> {
    id.parse::<Design>()?.build(config, handler)
}

/// Why [`build`] failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// No such strategy.
    #[error(transparent)]
    Unknown(#[from] UnknownStrategy),
    /// The settings are invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The design is known from a results file only: this process registered no way to
    /// build it ([`Design::register`]).
    #[error("`{id}` is known from a results file only: nothing in this process builds it")]
    NotBuildable {
        /// The design's id.
        id: String,
    },
    /// The design runs in another process ([`Design::register_external`]): its driver
    /// runs it, this process never builds it.
    #[error("`{id}` runs in its driver's process: nothing in this process builds it")]
    External {
        /// The design's id.
        id: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_unique() {
        for id in StrategyId::ALL {
            assert_eq!(id.as_str().parse::<StrategyId>().unwrap(), *id);
        }
        let mut names: Vec<_> = StrategyId::ALL.iter().map(|id| id.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), StrategyId::ALL.len());
    }

    #[test]
    fn descriptors_agree_with_the_enum() {
        for &id in StrategyId::ALL {
            let descriptor = id.descriptor();
            assert_eq!(descriptor.id, id.as_str(), "{id}: id");
            assert_eq!(descriptor.description, id.description(), "{id}: description");
            assert_eq!(descriptor.ordered, id.is_ordered(), "{id}: is_ordered");
            assert_eq!(descriptor.is_shared_pool(), id.is_shared_pool(), "{id}: is_shared_pool");
            assert_eq!(
                descriptor.ordered,
                descriptor.family != Family::Unordered,
                "{id}: ordered exactly when its family is not the unordered one"
            );
            assert_eq!(
                descriptor.runs_on_caller(),
                descriptor.family == Family::Inline,
                "{id}: runs on the caller exactly when its family is inline"
            );
        }
        let mut colours: Vec<_> = StrategyId::ALL.iter().map(|id| id.descriptor().colour).collect();
        colours.sort_unstable();
        colours.dedup();
        assert_eq!(colours.len(), StrategyId::ALL.len(), "two strategies share a plot colour");
    }

    /// The charts of earlier runs used these colours: a strategy keeps its colour.
    #[test]
    fn built_in_colours_are_the_established_plot_colours() {
        let expected = [
            ("per-type-pool", [140, 86, 75]),
            ("group-by", [255, 127, 14]),
            ("work-stealing", [44, 160, 44]),
            ("keyed-mailbox", [31, 119, 180]),
            ("tokio", [148, 103, 189]),
            ("rayon", [227, 119, 194]),
            ("inline", [127, 127, 127]),
            ("thread-pool", [214, 39, 40]),
        ];
        for (id, colour) in expected {
            assert_eq!(descriptor_of(id).map(|descriptor| descriptor.colour), Some(colour), "{id}");
        }
    }

    #[test]
    fn descriptor_of_round_trips() {
        for &id in StrategyId::ALL {
            let found = descriptor_of(id.as_str()).unwrap_or_else(|| panic!("{id}: not found"));
            assert!(std::ptr::eq(found, id.descriptor()), "{id}: another descriptor");
            assert_eq!(found.id.parse::<StrategyId>(), Ok(id), "{id}: its id names another");
        }
        for unknown in ["", "keyed", "Keyed-Mailbox", "keyed-mailbox "] {
            assert_eq!(descriptor_of(unknown), None, "`{unknown}`");
        }
    }

    #[test]
    fn custom_colours_are_fixed_and_never_built_in() {
        let built_in: Vec<[u8; 3]> =
            StrategyId::ALL.iter().map(|id| id.descriptor().colour).collect();
        assert!(CUSTOM_COLOURS.iter().all(|colour| !built_in.contains(colour)));
        let custom = |id: String| {
            Descriptor::custom(id, "a test strategy", Family::Mailboxes, true, Threads::SharedPool)
        };
        for id in ["my-strategy", "keyed-mailbox-v2", "actor-pool", "x"] {
            let descriptor = custom(id.to_owned());
            assert_eq!(descriptor.id, id);
            assert_eq!(custom(id.to_owned()).colour, descriptor.colour, "{id}: colour changed");
            assert!(!built_in.contains(&descriptor.colour), "{id}: a built-in colour");
        }
        // FNV-1a has no seed: these hold on every run and machine.
        assert_eq!(custom("my-strategy".into()).colour, [158, 218, 229]);
        assert_eq!(custom("actor-pool".into()).colour, [196, 156, 148]);
        let borrowed = Descriptor::custom("x", "", Family::Unordered, false, Threads::Caller);
        assert_eq!(borrowed.colour, custom("x".into()).colour, "borrowed and owned ids differ");
        assert_eq!(
            (borrowed.family, borrowed.ordered, borrowed.threads),
            (Family::Unordered, false, Threads::Caller)
        );
    }

    #[test]
    fn unknown_id_names_the_valid_ones() {
        let error = "keyed".parse::<StrategyId>().unwrap_err();
        let text = error.to_string();
        assert!(text.contains("`keyed`") && text.contains("keyed-mailbox"), "{text}");
    }

    #[test]
    fn zero_settings_are_rejected() {
        for field in ["workers", "max_in_flight", "throughput", "groups_per_worker"] {
            let mut config = StrategyConfig::with_workers(2);
            match field {
                "workers" => config.workers = 0,
                "max_in_flight" => config.max_in_flight = 0,
                "throughput" => config.throughput = 0,
                _ => config.groups_per_worker = 0,
            }
            assert_eq!(config.validate(), Err(ConfigError::Zero { field }));
        }
        let too_big = StrategyConfig { max_in_flight: MAX_WINDOW + 1, ..Default::default() };
        assert!(matches!(too_big.validate(), Err(ConfigError::TooLarge { .. })));
    }

    #[test]
    fn idle_spin_accepts_zero_to_its_limit_only() {
        let max = StrategyConfig::MAX_IDLE_SPIN_US;
        for idle_spin_us in [0, 1, StrategyConfig::DEFAULT_IDLE_SPIN_US, max] {
            let config = StrategyConfig { idle_spin_us, ..StrategyConfig::with_workers(2) };
            assert_eq!(config.validate(), Ok(()), "idle_spin_us = {idle_spin_us}");
        }
        assert_eq!(StrategyConfig::with_workers(2).idle_spin_us, 20);
        for idle_spin_us in [max + 1, u32::MAX] {
            let config = StrategyConfig { idle_spin_us, ..StrategyConfig::with_workers(2) };
            let expected = ConfigError::TooLarge {
                field: "idle_spin_us",
                value: idle_spin_us as usize,
                max: max as usize,
            };
            assert_eq!(config.validate(), Err(expected));
        }
    }
}
