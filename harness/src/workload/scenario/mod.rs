//! The scenarios, each declared once: the `scenarios!` list below names every scenario and
//! the [`ScenarioSpec`] that holds all it says of itself (id, description, kind, headline
//! metric, what its handlers do, the threads or window it fixes, its random stream) and
//! its generator. The command line, results, the plan, the verdict and the charts ask the
//! spec; nothing else matches on a scenario to learn a fact about it.
//!
//! Adding a scenario is one line here and one spec (with its generator) in the family file
//! beside it: `closed.rs` (closed-loop CPU handlers), `paced.rs` (paced arrivals),
//! `waits.rs` (handlers that wait or block, by key count), `cold.rs` (completion-driven),
//! `isolation.rs` (one stressed key beside bystanders, each with its unstressed twin),
//! `pipeline.rs` (the end-to-end pipeline, whose log `pipeline::scenario` produces). The
//! sizes a scenario takes are rows of the table in `sizes.rs`.

mod closed;
mod cold;
mod isolation;
mod paced;
pub mod pipeline;
pub(super) mod sizes;
mod waits;

use std::fmt;
use std::str::FromStr;

use rand_chacha::ChaCha8Rng;
use serde::{Serialize, Serializer};

use super::{Arrivals, Work, Workload, WorkloadSpec};
use crate::results::metric::Metric;
use sizes::Sizes;

/// Everything a scenario says of itself.
#[derive(Debug)]
pub struct ScenarioSpec {
    /// The id used on the command line, in JSON and in plots.
    pub id: &'static str,
    /// One line on what it shows.
    pub description: &'static str,
    /// Messages offered to a strategy, or a log consumed end to end.
    pub kind: Kind,
    /// What its handlers do besides computing: decides who can run it.
    pub handlers: Handlers,
    /// The one metric its verdict ranks on, of the registry in `results::metric`; none for
    /// a pipeline, whose verdict reads correctness first (records lost, the final state).
    pub headline: Option<Metric>,
    /// The number of its random stream: fixed per scenario, so that adding or reordering
    /// scenarios never changes another one's messages (older results stay reproducible).
    pub stream: u64,
    /// The worker threads it runs with whatever `--workers` says (the published
    /// experiment's 16), if it fixes them.
    pub workers: Option<fn(&Sizes) -> usize>,
    /// The admission window it runs with unless `--window` is given, if it has its own.
    pub window: Option<fn(&Sizes) -> usize>,
    /// How many aggregate types its messages have (a strategy with a pool per type starts
    /// that many pools).
    pub aggregate_types: fn(&Sizes) -> usize,
    /// A note the results carry about how it ran at `sizes`, if any (a scaled-down
    /// published experiment).
    pub note: Option<fn(&Sizes) -> Option<String>>,
    /// Where it stresses one key to ask whether the others suffer: the bound its bystanders
    /// are held to. Such a scenario has an unstressed twin workload ([`UNSTRESSED`]), the
    /// same load without the stress, run in the same suite (`results::isolation`).
    pub isolation: Option<Isolation>,
    /// Whether it adds partitions to the log mid-run: a transport that cannot (the Kafka
    /// mock cluster, which has no CreatePartitions) skips it.
    pub grows_partitions: bool,
    /// Whether a handler submits into its own executor (a saga's re-entrant chain): an
    /// external design whose driver runs no such chain skips it.
    pub resubmits: bool,
    /// Whether a consumer driver in another process (docs/external.md, "Consumers") runs
    /// it: one consumer killed and restarted, with its own commits.
    pub consumer_driver: bool,
    /// The charts across scenarios that show it (`report::plot`).
    pub charts: Charts,
    /// What the summary adds to its section after its tables (`report::summary`).
    pub summary: SummaryExtra,
}

/// What a scenario's section of the summary adds after its tables (one per parameter) and
/// the paragraphs every scenario may have (the timer's lateness, the drivers' collections,
/// the per-message breakdown): a paragraph or a table of its own, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryExtra {
    /// Nothing more.
    None,
    /// What a cell's time per message includes, beside what the criterion `dispatch` bench
    /// times (docs/dispatch.md): the scenario the two are set side by side on.
    DispatchBench,
    /// Elapsed seconds by key count beside the ideal bound (`keys=` cells of non-blocking
    /// waits). No published figure comes from this experiment.
    KeySweep,
    /// Cold commands per second by slow aggregates and senders, keyed-mailbox's ratio to
    /// per-type-pool and group-by, and Wow's published ratios where the cell is their
    /// experiment's.
    ColdCommand,
    /// Elapsed seconds by key count beside the floor from the drawn sleeps, and where the
    /// run is the published experiment, the Parallel Consumer's published seconds.
    ParallelConsumer,
}

/// The charts a scenario is shown in, beside the ones every measured scenario has (its
/// latency spectrum, its panel of throughput, the sweeps of `--workers`, `--throughput` and
/// `--window`). A chart that draws chosen scenarios finds them here: its file name, title and
/// skip line take the scenario's id (`threads-many-types`), so no chart names a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Charts {
    /// `head-of-line`: a scenario with troubled keys, its bystanders' p99 beside the
    /// head-of-line delay.
    pub head_of_line: bool,
    /// `price-of-order`: each ordered design over the unordered control.
    pub price_of_order: bool,
    /// `sweep-keys-*`: throughput and p99 against `--keys`, where the run swept them.
    pub keys_sweep: bool,
    /// The scenario a mailbox's turn length (`--throughput`) is about: its
    /// `sweep-throughput-*` chart comes before the other scenarios', and reads its
    /// bystanders as the keys outside the top 1% by popularity.
    pub turn_length: bool,
    /// `threads-<id>`: the threads each strategy started and added, against `workers`.
    pub threads: bool,
    /// `breakdown-<id>`: what each strategy's machinery did per message, of its counted
    /// repetition.
    pub breakdown: bool,
    /// `<id>-latency`: median and p99 latency against the offered fraction of saturation
    /// (`load=` cells).
    pub latency_vs_load: bool,
    /// `<id>-cliff`: bystander p99 against the hot key's burst (`burst=` cells), with the
    /// burst that fills the admission window marked.
    pub burst_cliff: bool,
    /// `<id>-ratio`: keyed-mailbox's cold-command rate over per-type-pool's and group-by's,
    /// beside Wow's published ratios.
    pub cold_command_ratio: bool,
    /// `<id>-elapsed`: elapsed time against the number of keys (`keys=` cells), beside the
    /// bound of its kind of wait.
    pub elapsed_vs_keys: Option<ElapsedBound>,
}

impl Charts {
    /// In none of them.
    pub const NONE: Self = Self {
        head_of_line: false,
        price_of_order: false,
        keys_sweep: false,
        turn_length: false,
        threads: false,
        breakdown: false,
        latency_vs_load: false,
        burst_cliff: false,
        cold_command_ratio: false,
        elapsed_vs_keys: None,
    };
}

/// The bound a scenario's `<id>-elapsed` chart draws beside the strategies: what no design
/// can beat, given how its handlers wait and how its keys are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElapsedBound {
    /// Non-blocking waits on evenly drawn keys: the ideal bound, the larger of the longest
    /// per-key chain and the total waiting over the window.
    Waits,
    /// Non-blocking waits on Zipf-drawn keys: the same ideal bound, which the hottest key's
    /// chain sets.
    SkewedWaits,
    /// Handlers that block a fixed pool's threads: the floor from the drawn sleeps, and the
    /// Parallel Consumer's published seconds where the run is their experiment.
    BlockingPool,
}

/// The param of a stressor scenario's unstressed twin: the same bystanders at the same
/// times, without the stress.
pub const UNSTRESSED: &str = "stress=off";

/// What an isolation stressor holds its bystanders to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Isolation {
    /// The bystanders' p99 latency under the stress is at most this many times their p99
    /// in the unstressed twin, or the design missed the bound.
    pub bound: f64,
}

/// The bound every stressor states: the bystanders' p99 at most doubles.
const TWICE_UNSTRESSED: Option<Isolation> = Some(Isolation { bound: 2.0 });

/// How a scenario is run.
#[derive(Debug)]
pub enum Kind {
    /// A workload of messages offered to a strategy, made by its generator.
    Measured(Generator),
    /// A partitioned log consumed into a projection (`pipeline::scenario`), as its spec
    /// says.
    Pipeline(pipeline::PipelineSpec),
}

/// What makes a measured scenario's workloads: each piece takes the spec of one workload
/// (one value of the scenario's parameter).
#[derive(Debug)]
pub struct Generator {
    /// How its messages arrive.
    pub arrivals: Arrivals,
    /// Whether its open-loop rates are fractions of a saturation rate the run measures.
    pub loads_of_saturation: bool,
    /// Its workloads at `sizes`, one per parameter value, in the order they run.
    pub workloads: fn(ScenarioId, &Sizes) -> Vec<WorkloadSpec>,
    /// How many messages a workload holds.
    pub messages: fn(&WorkloadSpec, &Sizes) -> usize,
    /// The work a workload asks for, as expected from the sizes (the plan's estimate):
    /// what [`Work::of`] gives its messages, up to the chance of the draws.
    pub expected_work: fn(&WorkloadSpec, &Sizes, f64) -> Work,
    /// Fills a workload's messages from the scenario's random stream; the last argument is
    /// the saturation rate open-loop loads are fractions of.
    pub generate: fn(&WorkloadSpec, &Sizes, &mut ChaCha8Rng, f64, &mut Workload),
    /// The bytes of state each key holds while a workload runs (`no_state` for most).
    pub state_bytes_per_key: fn(&Sizes) -> usize,
}

/// No state per key: the scenarios whose handlers keep none.
fn no_state(_: &Sizes) -> usize {
    0
}

/// What a scenario's handlers do besides computing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handlers {
    /// They compute (spin) and return.
    Compute,
    /// Some wait (return pending): a strategy that runs handlers on the submitting thread
    /// would run every wait one after another.
    Wait,
    /// Some block their thread (a blocking sleep): a strategy that runs handlers on the
    /// submitting thread would block the producer.
    Block,
}

/// One aggregate type: every scenario's but many-types'.
fn one_type(_: &Sizes) -> usize {
    1
}

macro_rules! scenarios {
    ($($variant:ident => $spec:path;)*) => {
        /// Every scenario, by the id used on the command line, in JSON and in plots; its
        /// [`ScenarioSpec`] says the rest.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ScenarioId {
            $(#[doc = concat!("[`", stringify!($spec), "`].")] $variant,)*
        }

        impl ScenarioId {
            /// Every scenario, in presentation order.
            pub const ALL: &'static [ScenarioId] = &[$(ScenarioId::$variant,)*];

            /// Everything it says of itself.
            pub const fn spec(self) -> &'static ScenarioSpec {
                match self { $(ScenarioId::$variant => &$spec,)* }
            }
        }
    };
}

scenarios! {
    Uniform => closed::UNIFORM;
    Zipf => closed::ZIPF;
    ManyTypes => closed::MANY_TYPES;
    ConflictBackoff => paced::CONFLICT_BACKOFF;
    LongSync => paced::LONG_SYNC;
    HotBacklog => paced::HOT_BACKLOG;
    HotKey => isolation::HOT_KEY;
    AsyncIo => waits::ASYNC_IO;
    AsyncIoZipf => waits::ASYNC_IO_ZIPF;
    ParallelConsumer => waits::PARALLEL_CONSUMER;
    ColdCommand => cold::COLD_COMMAND;
    Saga => isolation::SAGA;
    OpenLoop => paced::OPEN_LOOP;
    Stateful => closed::STATEFUL;
    PipelineCrash => pipeline::CRASH;
    PipelineRetry => pipeline::RETRY;
    PipelineExpand => pipeline::EXPAND;
    PipelineReorder => pipeline::REORDER;
    PipelineRebalance => pipeline::REBALANCE;
}

impl ScenarioId {
    /// The id (`uniform`, ...).
    pub const fn as_str(self) -> &'static str {
        self.spec().id
    }

    /// One line on what it shows.
    pub const fn description(self) -> &'static str {
        self.spec().description
    }

    /// Its generator, if it is a measured scenario (not a pipeline).
    pub const fn generator(self) -> Option<&'static Generator> {
        match &self.spec().kind {
            Kind::Measured(generator) => Some(generator),
            Kind::Pipeline { .. } => None,
        }
    }

    /// Whether its open-loop rates are fractions of a saturation rate the run measures.
    pub const fn loads_of_saturation(self) -> bool {
        match self.generator() {
            Some(generator) => generator.loads_of_saturation,
            None => false,
        }
    }

    /// Whether it is an end-to-end pipeline scenario: a log consumed into a projection
    /// (`pipeline::scenario`), not a workload of messages.
    pub const fn is_pipeline(self) -> bool {
        matches!(self.spec().kind, Kind::Pipeline { .. })
    }

    /// Whether some of its handlers wait (return a pending result), so that a strategy that
    /// runs handlers on the submitting thread runs every wait one after another. Every
    /// pipeline's handlers wait (a slow dependency).
    pub const fn handlers_wait(self) -> bool {
        matches!(self.spec().handlers, Handlers::Wait)
    }

    /// Whether some of its handlers block their thread (a blocking sleep), so that a
    /// strategy that runs handlers on the submitting thread blocks the producer.
    pub const fn handlers_block(self) -> bool {
        matches!(self.spec().handlers, Handlers::Block)
    }

    /// The admission window it runs with where it has its own, unless `--window` is given
    /// (async-io's and parallel-consumer's).
    pub fn window(self, sizes: &Sizes) -> Option<usize> {
        self.spec().window.map(|window| window(sizes))
    }

    /// The worker threads it runs with where it fixes them, whatever `--workers` says (the
    /// published experiment's 16 threads).
    pub fn workers(self, sizes: &Sizes) -> Option<usize> {
        self.spec().workers.map(|workers| workers(sizes))
    }

    /// What it takes from the strategy settings of a sweep: `--workers` unless it fixes its
    /// own, `--window` unless it has its own and `window_given` is false.
    pub fn uses(self, sizes: &Sizes, window_given: bool) -> crate::sweep::Uses {
        crate::sweep::Uses {
            workers: self.workers(sizes).is_none(),
            window: window_given || self.window(sizes).is_none(),
        }
    }

    /// The number of its random stream ([`ScenarioSpec::stream`]).
    pub(crate) const fn stream(self) -> u64 {
        self.spec().stream
    }

    /// How many aggregate types its messages have.
    pub fn aggregate_types(self, sizes: &Sizes) -> usize {
        (self.spec().aggregate_types)(sizes)
    }

    /// The metric its verdict ranks on; none for a pipeline, which reads correctness first.
    pub const fn headline(self) -> Option<Metric> {
        self.spec().headline
    }

    /// The bound its bystanders are held to, if it is an isolation stressor.
    pub const fn isolation(self) -> Option<Isolation> {
        self.spec().isolation
    }

    /// Whether a handler submits into its own executor (a saga's re-entrant chain).
    pub const fn resubmits(self) -> bool {
        self.spec().resubmits
    }

    /// Whether a consumer driver runs it ([`ScenarioSpec::consumer_driver`]).
    pub const fn consumer_driver(self) -> bool {
        self.spec().consumer_driver
    }

    /// Whether it adds partitions to the log mid-run ([`ScenarioSpec::grows_partitions`]).
    pub const fn grows_partitions(self) -> bool {
        self.spec().grows_partitions
    }

    /// How many workloads (parameter values) it has at `sizes`: none for a pipeline
    /// scenario, whose cells are one per policy or mitigation the run was given
    /// (`pipeline::PipelinePlan::params`).
    pub fn params(self, sizes: &Sizes) -> usize {
        WorkloadSpec::all(self, sizes).len()
    }
}

impl fmt::Display for ScenarioId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ScenarioId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A scenario id that names no scenario.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown scenario `{given}`; valid ids: {}", ScenarioId::ALL.iter().map(|id| id.as_str()).collect::<Vec<_>>().join(", "))]
pub struct UnknownScenario {
    /// What was given.
    pub given: String,
}

impl FromStr for ScenarioId {
    type Err = UnknownScenario;

    fn from_str(given: &str) -> Result<Self, Self::Err> {
        ScenarioId::ALL
            .iter()
            .copied()
            .find(|id| id.as_str() == given)
            .ok_or_else(|| UnknownScenario { given: given.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_streams_are_unique() {
        for (index, a) in ScenarioId::ALL.iter().enumerate() {
            for b in &ScenarioId::ALL[..index] {
                assert_ne!(a.as_str(), b.as_str());
                assert_ne!(a.stream(), b.stream(), "{a} and {b} share a random stream");
            }
            assert_eq!(a.as_str().parse::<ScenarioId>(), Ok(*a));
        }
    }

    #[test]
    fn streams_stay_where_older_results_put_them() {
        let streams: Vec<u64> = ScenarioId::ALL.iter().map(|id| id.stream()).collect();
        assert_eq!(streams, [0, 1, 2, 3, 4, 5, 17, 6, 8, 9, 10, 18, 7, 11, 12, 13, 14, 15, 16]);
    }
}
