//! Workloads: the scenario ids, their sizes (every one a flag) and seeded generation.
//!
//! A [`Workload`] is the complete message sequence of one (scenario, parameter) cell,
//! generated from the seed when its first cell runs, so every strategy receives exactly the
//! same messages. Per-key sequence numbers are assigned here. A [`WorkloadSpec`] is the
//! same workload before its messages: its parameter, keys and arrivals, known from the
//! sizes alone. A run plans every cell from specs, so that counting cells, `--dry-run` and
//! the progress estimate never generate a message; a workload's messages are generated
//! ([`WorkloadSpec::generate`]) once, when its first cell runs.
//!
//! Both types are declared here, in the module every part of a workload belongs to: each
//! names its scenario, each scenario's generator makes them, and a spec reaches its
//! workloads, messages and work through that generator. The parts:
//!
//! - `scenario`: every scenario declared once, with all it says of itself and its
//!   generator, and every size in one table (field, flag, range, defaults);
//! - `arrivals`: how a workload's messages are offered, and the plans of those made as it
//!   runs (completion-driven senders, a saga's chain);
//! - `work`: what a workload asks of an executor, exactly or as expected from the sizes;
//! - `param`: a workload's parameter as text, written by the generators and read back;
//! - `generate`: the messages of each workload, from the seed, by its scenario's generator;
//! - `reference`: the published figures of reference systems.

mod arrivals;
mod generate;
mod param;
pub mod reference;
pub mod scenario;
mod work;

use strategies::{Job, Key, Message};

pub use arrivals::{Arrivals, Driven, HotChain, Saga};
pub use generate::generate;
pub use param::{cold_command_param, keys_in, keys_param, keys_part, param_part, without_keys};
pub use scenario::sizes::{
    SizeArgs, SizeValue, Sizes, FOREVER_STALL_BACKOFFS, FOREVER_STALL_MIN_MS,
};
pub use scenario::{
    Generator, Handlers, Isolation, Kind, ScenarioId, ScenarioSpec, UnknownScenario, UNSTRESSED,
};
pub(crate) use work::zipf_top_share;
pub use work::{job_cost_ns, Work};

/// One (scenario, parameter) cell: the exact messages and what bounds their run time.
#[derive(Clone, Debug)]
pub struct Workload {
    /// The scenario.
    pub scenario: ScenarioId,
    /// `keys=20`, `burst=241`, `load=0.75`, or empty.
    pub param: String,
    /// The messages in submission order; `key.aggregate_id` is dense in `0..keys`.
    pub messages: Vec<Message>,
    /// Distinct keys (aggregate ids are `0..keys`).
    pub keys: usize,
    /// Per key: whether it is a troubled key (bystander latency excludes those).
    pub troubled: Vec<bool>,
    /// How messages are offered.
    pub arrivals: Arrivals,
    /// A window that replaces the run's `--window` (the `async-io` experiment's 100).
    pub window: Option<usize>,
    /// Worker threads that replace the run's `--workers` (the published experiment's 16).
    pub workers: Option<usize>,
    /// The plan of a completion-driven workload ([`Arrivals::Driven`]).
    pub driven: Option<Driven>,
    /// The saga key of a paced workload, if it has one (`saga` with its stress on).
    pub saga: Option<Saga>,
    /// Bytes of state each aggregate owns (`stateful`; 0 elsewhere): the handler keeps
    /// `keys x state_bytes` and a `Job::Touch` reads and writes its key's block.
    pub state_bytes: usize,
}

impl Workload {
    /// A closed-loop workload of `scenario` made of `messages` over aggregate ids
    /// `0..keys`, and nothing else: the workload a test builds by hand.
    pub fn of_messages(scenario: ScenarioId, messages: Vec<Message>, keys: usize) -> Self {
        Self {
            scenario,
            param: String::new(),
            messages,
            keys,
            troubled: vec![false; keys],
            arrivals: Arrivals::Closed,
            window: None,
            workers: None,
            driven: None,
            saga: None,
            state_bytes: 0,
        }
    }

    /// A workload of `spec` with no messages yet.
    fn new(spec: &WorkloadSpec) -> Self {
        Self {
            scenario: spec.scenario,
            param: spec.param.clone(),
            messages: Vec::new(),
            keys: spec.keys,
            troubled: vec![false; spec.keys],
            arrivals: spec.arrivals,
            window: spec.window,
            workers: spec.workers,
            driven: None,
            saga: None,
            state_bytes: 0,
        }
    }

    /// Whether any key is troubled (so bystander latency is meaningful).
    pub fn has_troubled_keys(&self) -> bool {
        self.troubled.iter().any(|&troubled| troubled)
    }

    /// Appends a message of `key` (type, id), numbering it within its key.
    pub(crate) fn push(
        &mut self,
        next_seq: &mut [u64],
        aggregate_type: u32,
        id: usize,
        at_ns: u64,
        job: Job,
    ) {
        let seq = next_seq[id];
        next_seq[id] += 1;
        self.messages.push(Message {
            key: Key::new(aggregate_type, id as u64),
            seq,
            intended_ns: at_ns,
            job,
        });
    }
}

/// The bytes of one line of `stateful`'s state: a cache line.
pub const STATE_LINE_BYTES: usize = 64;

/// Which workload of its scenario a spec is: the value its parameter names.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Variant {
    /// The scenario's one workload (many-types, conflict-backoff, long-sync).
    Single,
    /// A key count (uniform, zipf, async-io, async-io-zipf, parallel-consumer, stateful).
    Keys(usize),
    /// hot-backlog's burst of hot messages (none in its unstressed twin).
    Burst(usize),
    /// An isolation stressor's workload with its stress on, or its unstressed twin
    /// (conflict-backoff, hot-key, saga).
    Stress(bool),
    /// cold-command's slow aggregates and senders.
    Cold {
        /// Slow aggregates, each always waiting on one message.
        slow: usize,
        /// Senders of cold commands.
        senders: usize,
    },
    /// open-loop's key count and load, a fraction of saturation.
    Load {
        /// Keys.
        keys: usize,
        /// The offered rate as a fraction of saturation.
        load: f64,
    },
}

/// One workload of a scenario, before its messages.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadSpec {
    /// The scenario.
    pub scenario: ScenarioId,
    /// `keys=20`, `burst=241`, `load=0.75`, or empty.
    pub param: String,
    /// Which of the scenario's workloads it is.
    pub variant: Variant,
    /// Distinct keys (aggregate ids `0..keys`).
    pub keys: usize,
    /// How messages are offered.
    pub arrivals: Arrivals,
    /// A window that replaces the run's `--window` (the `async-io` experiment's 100).
    pub window: Option<usize>,
    /// Worker threads that replace the run's `--workers` (the published experiment's 16).
    pub workers: Option<usize>,
}

impl WorkloadSpec {
    /// The workload `param` of scenario `id`, `variant` over `keys` keys; its arrivals are
    /// the scenario's, its window and workers set by [`WorkloadSpec::all`].
    pub(crate) fn new(id: ScenarioId, param: String, variant: Variant, keys: usize) -> Self {
        let arrivals = id.generator().map_or(Arrivals::Closed, |generator| generator.arrivals);
        Self { scenario: id, param, variant, keys, arrivals, window: None, workers: None }
    }

    /// One workload per key count of `counts`, its param `keys=N`.
    pub(crate) fn by_keys(id: ScenarioId, counts: &[usize]) -> Vec<Self> {
        counts
            .iter()
            .map(|&keys| Self::new(id, format!("keys={keys}"), Variant::Keys(keys), keys))
            .collect()
    }

    /// The workloads of `scenario` at `sizes`, in the order they run: one per value of
    /// its parameter; none for a pipeline scenario (its log is its own).
    pub fn all(scenario: ScenarioId, sizes: &Sizes) -> Vec<Self> {
        let Some(generator) = scenario.generator() else { return Vec::new() };
        let mut specs = (generator.workloads)(scenario, sizes);
        for spec in &mut specs {
            spec.window = scenario.window(sizes);
            spec.workers = scenario.workers(sizes);
        }
        specs
    }

    /// How many messages its workload holds (the messages a completion-driven workload
    /// may send at most).
    pub fn messages(&self, sizes: &Sizes) -> usize {
        self.scenario.generator().map_or(0, |generator| (generator.messages)(self, sizes))
    }

    /// The bytes of state each of its keys holds while it runs (`stateful`: `--state-kib`
    /// KiB, read and written by each message), 0 for a workload without state.
    pub fn state_bytes_per_key(&self, sizes: &Sizes) -> usize {
        self.scenario.generator().map_or(0, |generator| (generator.state_bytes_per_key)(sizes))
    }

    /// The work it asks for, as expected from the sizes: what [`Work::of`] gives its
    /// generated messages, up to the chance of the draws (the longest per-key chain of
    /// random keys is estimated as the mean of the busiest key, plus its spread).
    /// `open_loop_rate` is the saturation rate open-loop's loads are fractions of.
    pub fn expected_work(&self, sizes: &Sizes, open_loop_rate: f64) -> Work {
        let Some(generator) = self.scenario.generator() else { return Work::default() };
        let mut work = (generator.expected_work)(self, sizes, open_loop_rate);
        // Every waiting scenario has one aggregate type: the type that waits longest
        // waits it all.
        work.type_wait_ns = work.wait_ns;
        work
    }
}
