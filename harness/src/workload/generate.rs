//! Seeded generation: the exact messages of every (scenario, parameter) cell, and what
//! each scenario needs to know of the sizes (how many cells, whether handlers wait, how many
//! aggregate types), as exhaustive matches beside `generate`.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use strategies::{Job, Key, Message};

use super::scenario::ScenarioId;
use super::sizes::Sizes;
use super::spec::WorkloadSpec;

/// How messages are offered to the strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// As fast as the strategy admits them (saturation); a message's intended time is
    /// the moment the producer tried to send it.
    Closed,
    /// Each message is due at its `intended_ns`; the producer waits for it and never skips
    /// a late one (no coordinated omission).
    Paced,
    /// Completion-driven, as benchmark threads that send and wait: each chain and each
    /// sender of the workload's [`Driven`] plan submits its next message when its previous
    /// one has been handled; a message's intended time is when it was sent.
    Driven,
}

/// A saga key of a paced workload (`saga`): a chain whose handler, as each of its messages
/// completes, submits the chain's next one into the same executor from that completion (a
/// re-entrant submission), beside the paced bystanders. Its messages are made as it runs
/// (not in `Workload::messages`; the recorder checks their order and overlaps only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Saga {
    /// Its aggregate id.
    pub key: u64,
    /// Messages of the chain per repetition: the runner submits the first, each completion
    /// the next.
    pub steps: u64,
    /// What each of its messages does.
    pub job: Job,
}

/// The plan of a completion-driven workload (`cold-command`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Driven {
    /// Background chains that keep one message in flight each: the index range of each
    /// chain's messages in `Workload::messages`, in sequence order.
    pub chains: Vec<std::ops::Range<usize>>,
    /// The hot aggregate, if any: a background key kept at `outstanding` messages in
    /// flight, made as they are needed (not in `Workload::messages`; the recorder checks
    /// its order and overlaps only).
    pub hot: Option<HotChain>,
    /// The measured senders: the index range of each one's messages (one message per new
    /// aggregate) in `Workload::messages`; each sends its next when the previous is handled.
    pub senders: Vec<std::ops::Range<usize>>,
    /// How long the senders send; then the chains stop and everything drains.
    pub duration_ns: u64,
}

/// The hot aggregate of a [`Driven`] plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotChain {
    /// Its aggregate id.
    pub key: u64,
    /// Messages always in flight.
    pub outstanding: usize,
    /// What each of its messages does.
    pub job: Job,
}

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

/// What a job costs when it runs alone: time on a thread (CPU, or a blocking call) and
/// time waiting off any thread (pending).
pub fn job_cost_ns(job: &Job) -> (u64, u64) {
    match *job {
        Job::Noop | Job::Panic | Job::Custom(_) => (0, 0),
        // The state's memory traffic is not drawn: only the spin is in the bound, so what
        // the cache costs shows as efficiency below 1.
        Job::Spin { ns } | Job::Block { ns } | Job::Touch { spin_ns: ns, .. } => (u64::from(ns), 0),
        Job::Wait { ns } => (0, u64::from(ns)),
        Job::Retry { retries, backoff_ns, spin_ns } => {
            let attempts = u64::from(retries) + 1;
            let waits: u64 = (0..u32::from(retries)).map(|i| u64::from(backoff_ns) << i).sum();
            (attempts * u64::from(spin_ns), waits)
        }
    }
}

/// Generates the workloads of `scenario`, one per parameter value, from `seed`.
/// `open_loop_rate` is the saturation rate that `open-loop` loads are fractions of.
pub fn generate(
    scenario: ScenarioId,
    sizes: &Sizes,
    seed: u64,
    open_loop_rate: f64,
) -> Vec<Workload> {
    WorkloadSpec::all(scenario, sizes)
        .iter()
        .map(|spec| generate_spec(spec, sizes, seed, open_loop_rate))
        .collect()
}

/// The messages of one workload of its scenario. Every workload of a scenario draws from a
/// fresh copy of the scenario's own stream, so one is the same whether or not the others
/// are generated.
pub(crate) fn generate_spec(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    seed: u64,
    open_loop_rate: f64,
) -> Workload {
    let scenario = spec.scenario;
    // Each scenario draws from its own stream, so adding one does not shift the others.
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ scenario.stream().wrapping_mul(0x9e37_79b9));
    let mut workload = Workload::new(spec);
    if let Some(generator) = scenario.generator() {
        (generator.generate)(spec, sizes, &mut rng, open_loop_rate, &mut workload);
    }
    workload
}

/// The bytes of one line of `stateful`'s state: a cache line.
pub const STATE_LINE_BYTES: usize = 64;

/// The key count of a `keys=N` param (the key sweeps).
pub fn keys_param(param: &str) -> Option<usize> {
    param.strip_prefix("keys=").and_then(|keys| keys.parse().ok())
}

/// The slow aggregates and senders of a `slow=S,senders=N` param (`cold-command`).
pub fn cold_command_param(param: &str) -> Option<(usize, usize)> {
    let field = |name: &str| {
        param.split(',').find_map(|part| part.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
    };
    Some((field("slow")?, field("senders")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sizes() -> Sizes {
        Sizes { messages: 5_000, ..Sizes::quick() }
    }

    #[test]
    fn same_seed_same_messages() {
        for &scenario in ScenarioId::ALL {
            let a = generate(scenario, &sizes(), 7, 1e6);
            let b = generate(scenario, &sizes(), 7, 1e6);
            assert_eq!(a.len(), b.len());
            for (a, b) in a.iter().zip(&b) {
                assert_eq!(a.messages, b.messages, "{scenario}");
            }
        }
        let a = generate(ScenarioId::Uniform, &sizes(), 7, 1e6);
        let c = generate(ScenarioId::Uniform, &sizes(), 8, 1e6);
        assert_ne!(a[0].messages, c[0].messages);
    }

    /// Each key's messages in `workload` are numbered 0, 1, 2, ... in order.
    fn assert_seqs_count_up(workload: &Workload, scenario: ScenarioId) {
        let mut next = vec![0u64; workload.keys];
        for message in &workload.messages {
            let id = message.key.aggregate_id as usize;
            assert_eq!(message.seq, next[id], "{scenario} {}", workload.param);
            next[id] += 1;
        }
    }

    #[test]
    fn sequence_numbers_count_up_per_key() {
        for &scenario in ScenarioId::ALL {
            for workload in generate(scenario, &sizes(), 1, 1e6) {
                assert_seqs_count_up(&workload, scenario);
            }
        }
    }

    #[test]
    fn zipf_is_skewed_and_uniform_is_not() {
        let count_top = |scenario| {
            let workload = &generate(scenario, &sizes(), 3, 1e6)[0];
            let mut counts = vec![0usize; workload.keys];
            for message in &workload.messages {
                counts[message.key.aggregate_id as usize] += 1;
            }
            *counts.iter().max().unwrap()
        };
        assert!(count_top(ScenarioId::Zipf) > 10 * count_top(ScenarioId::Uniform));
    }

    #[test]
    fn hot_backlog_has_one_troubled_key_and_the_burst() {
        let workloads = generate(ScenarioId::HotBacklog, &sizes(), 1, 1e6);
        let params: Vec<_> = workloads.iter().map(|w| w.param.as_str()).collect();
        assert_eq!(params, ["stress=off", "burst=200", "burst=240", "burst=241", "burst=300"]);
        let twin = &workloads[0];
        assert!(twin.messages.iter().all(|m| m.key.aggregate_id != 0), "the twin has no burst");
        assert_eq!(twin.troubled, workloads[1].troubled, "the twin has the same bystanders");
        let burst_241 = &workloads[3];
        let hot = burst_241.messages.iter().filter(|m| m.key.aggregate_id == 0).count();
        assert_eq!(hot, 241);
        assert_eq!(burst_241.troubled.iter().filter(|&&t| t).count(), 1);
    }

    #[test]
    fn what_a_scenario_says_of_itself_matches_what_it_generates() {
        // The pipeline scenarios produce a log, not messages; `pipeline::scenario` tests them.
        for &scenario in ScenarioId::ALL.iter().filter(|scenario| !scenario.is_pipeline()) {
            let workloads = generate(scenario, &sizes(), 1, 1e6);
            assert_eq!(scenario.params(&sizes()), workloads.len(), "{scenario}: params");
            // A saga's messages are made as it runs: its job counts too.
            let waits = workloads
                .iter()
                .flat_map(|w| {
                    w.messages.iter().map(|message| message.job).chain(w.saga.map(|s| s.job))
                })
                .any(|job| matches!(job, Job::Wait { .. } | Job::Retry { .. }));
            assert_eq!(scenario.handlers_wait(), waits, "{scenario}: handlers_wait");
            let blocks = workloads
                .iter()
                .flat_map(|w| &w.messages)
                .any(|message| matches!(message.job, Job::Block { .. }));
            assert_eq!(scenario.handlers_block(), blocks, "{scenario}: handlers_block");
            let workers = workloads.iter().map(|w| w.workers).collect::<Vec<_>>();
            assert!(workers.iter().all(|&w| w == scenario.workers(&sizes())), "{scenario}");
            let mut types: Vec<u32> = workloads
                .iter()
                .flat_map(|w| &w.messages)
                .map(|message| message.key.aggregate_type)
                .collect();
            types.sort_unstable();
            types.dedup();
            assert_eq!(scenario.aggregate_types(&sizes()), types.len(), "{scenario}: types");
        }
    }

    #[test]
    fn params_read_back_as_they_are_written() {
        let cold = generate(ScenarioId::ColdCommand, &sizes(), 1, 1e6);
        assert_eq!(cold_command_param(&cold[0].param), Some((128, 1)));
        let sweep = generate(ScenarioId::AsyncIo, &sizes(), 1, 1e6);
        assert_eq!(keys_param(&sweep[0].param), Some(20));
        assert_eq!((keys_param("burst=3"), cold_command_param("slow=2")), (None, None));
    }

    #[test]
    fn retry_cost_counts_every_attempt() {
        let job = Job::Retry { retries: 2, backoff_ns: 10, spin_ns: 3 };
        assert_eq!(job_cost_ns(&job), (9, 30));
    }
}
