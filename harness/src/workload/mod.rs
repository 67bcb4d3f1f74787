//! Workloads: the scenario ids, their sizes (every one a flag) and seeded generation.
//!
//! A [`Workload`] is the complete message sequence of one (scenario, parameter) cell,
//! generated before the run from the seed, so every strategy receives exactly the same
//! messages. Per-key sequence numbers are assigned here.

use std::fmt;
use std::str::FromStr;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Zipf};
use serde::Serialize;
use strategies::{Job, Key, Message};

const NS_PER_MS: u64 = 1_000_000;

macro_rules! scenario_ids {
    ($($variant:ident = $id:literal, $description:literal;)*) => {
        /// Every scenario, by the id used on the command line, in JSON and in plots.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        pub enum ScenarioId {
            $(#[doc = $description] #[serde(rename = $id)] $variant,)*
        }

        impl ScenarioId {
            /// Every scenario, in presentation order.
            pub const ALL: &'static [ScenarioId] = &[$(ScenarioId::$variant,)*];

            /// The id (`uniform`, ...).
            pub const fn as_str(self) -> &'static str {
                match self { $(ScenarioId::$variant => $id,)* }
            }

            /// One line on what it shows.
            pub const fn description(self) -> &'static str {
                match self { $(ScenarioId::$variant => $description,)* }
            }
        }
    };
}

scenario_ids! {
    Uniform = "uniform", "uniform keys, ~1 us CPU handlers: raw throughput and dispatch cost";
    Zipf = "zipf", "Zipf-distributed keys (hot keys), ~1 us handlers: fairness under skew";
    ManyTypes = "many-types", "many aggregate types, ~1 us handlers: thread count";
    ConflictBackoff = "conflict-backoff",
        "1% of keys fail a version check twice and back off (pending 10 ms, 20 ms): head-of-line blocking";
    LongSync = "long-sync", "0.2% of messages spin 2 ms synchronously: the cost of no stealing";
    HotBacklog = "hot-backlog",
        "one key gets a burst of 1 ms pending messages while bystanders arrive: the shared-window stall";
    AsyncIo = "async-io",
        "random 0-5 ms pending handlers, window 100, by key count: the key-ordered consumer experiment";
    OpenLoop = "open-loop", "constant-rate arrivals at fractions of saturation: latency vs offered load";
}

impl fmt::Display for ScenarioId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
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

/// Every workload size; each is a command-line flag.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
pub struct Sizes {
    /// Messages per run of the closed-loop `uniform`, `zipf` and `many-types`.
    pub messages: usize,
    /// Messages per run of the paced `conflict-backoff` and `long-sync`.
    pub paced_messages: usize,
    /// Keys of `uniform` and `zipf` (and `open-loop`).
    pub keys: usize,
    /// Zipf exponent of `zipf`.
    pub zipf_s: f64,
    /// CPU time of an ordinary handler, in nanoseconds.
    pub spin_ns: u32,
    /// Aggregate types of `many-types`.
    pub types: usize,
    /// Keys per type of `many-types`.
    pub keys_per_type: usize,
    /// Keys of `conflict-backoff`, `long-sync`, and bystander keys of `hot-backlog`.
    pub small_keys: usize,
    /// Percentage of troubled keys in `conflict-backoff`.
    pub troubled_pct: f64,
    /// First backoff of a troubled message (doubles once), in milliseconds.
    pub backoff_ms: u64,
    /// Percentage of long messages in `long-sync`.
    pub long_pct: f64,
    /// CPU time of a long message, in milliseconds.
    pub long_ms: u64,
    /// Burst sizes of `hot-backlog`.
    pub bursts: Vec<usize>,
    /// Wait of each hot message, in milliseconds.
    pub hot_wait_ms: u64,
    /// Bystander messages of `hot-backlog`.
    pub bystanders: usize,
    /// Offered rate of the paced scenarios (`conflict-backoff`, `long-sync`,
    /// `hot-backlog` bystanders), in messages per second.
    pub rate: f64,
    /// Messages per run of `async-io`.
    pub async_messages: usize,
    /// Key counts of the `async-io` sweep.
    pub async_keys: Vec<usize>,
    /// Longest wait of an `async-io` handler, in milliseconds (waits are uniform 0..this).
    pub async_max_wait_ms: u64,
    /// Window of `async-io` (the published experiment's max concurrency).
    pub async_window: usize,
    /// Offered loads of `open-loop`, as fractions of saturation.
    pub loads: Vec<f64>,
    /// Messages per run of `open-loop`.
    pub open_messages: usize,
}

impl Sizes {
    /// The default suite: a few minutes on 2 cores.
    pub fn standard() -> Self {
        Self {
            messages: 200_000,
            paced_messages: 20_000,
            keys: 10_000,
            zipf_s: 1.1,
            spin_ns: 1_000,
            types: 20,
            keys_per_type: 500,
            small_keys: 1_000,
            troubled_pct: 1.0,
            backoff_ms: 10,
            long_pct: 0.2,
            long_ms: 2,
            bursts: vec![200, 240, 241, 300],
            hot_wait_ms: 1,
            bystanders: 10_000,
            rate: 100_000.0,
            async_messages: 2_000,
            async_keys: vec![10, 20, 1_000, 10_000],
            async_max_wait_ms: 5,
            async_window: 100,
            loads: vec![0.25, 0.5, 0.75, 0.9],
            open_messages: 100_000,
        }
    }

    /// `--quick`: the same scenarios, smaller.
    pub fn quick() -> Self {
        Self {
            messages: 40_000,
            paced_messages: 5_000,
            bystanders: 5_000,
            async_messages: 1_000,
            async_keys: vec![20, 1_000],
            loads: vec![0.5, 0.9],
            open_messages: 20_000,
            ..Self::standard()
        }
    }

    /// The exact parameters of the published key-cardinality experiment.
    pub fn published_async_io() -> (usize, Vec<usize>) {
        (10_000, vec![1, 2, 5, 10, 20, 1_000, 10_000])
    }
}

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
}

impl Workload {
    fn new(scenario: ScenarioId, param: String, keys: usize, arrivals: Arrivals) -> Self {
        Self {
            scenario,
            param,
            messages: Vec::new(),
            keys,
            troubled: vec![false; keys],
            arrivals,
            window: None,
        }
    }

    /// Whether any key is troubled (so bystander latency is meaningful).
    pub fn has_troubled_keys(&self) -> bool {
        self.troubled.iter().any(|&troubled| troubled)
    }

    /// Appends a message of `key` (type, id), numbering it within its key.
    fn push(&mut self, next_seq: &mut [u64], aggregate_type: u32, id: usize, at_ns: u64, job: Job) {
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

/// CPU time and waiting time a job costs when it runs alone.
pub fn job_cost_ns(job: &Job) -> (u64, u64) {
    match *job {
        Job::Noop | Job::Panic | Job::Custom(_) => (0, 0),
        Job::Spin { ns } => (u64::from(ns), 0),
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
    // Each scenario draws from its own stream, so adding one does not shift the others.
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ (scenario as u64).wrapping_mul(0x9e37_79b9));
    let spin = Job::Spin { ns: sizes.spin_ns };
    let paced_interval_ns = (1e9 / sizes.rate).max(1.0);
    match scenario {
        ScenarioId::Uniform | ScenarioId::Zipf => {
            let mut workload = Workload::new(scenario, String::new(), sizes.keys, Arrivals::Closed);
            let mut seqs = vec![0; sizes.keys];
            let zipf = Zipf::new(sizes.keys as u64, sizes.zipf_s).expect("validated zipf exponent");
            for _ in 0..sizes.messages {
                let id = if scenario == ScenarioId::Zipf {
                    zipf.sample(&mut rng) as usize - 1
                } else {
                    rng.gen_range(0..sizes.keys)
                };
                workload.push(&mut seqs, 0, id, 0, spin);
            }
            vec![workload]
        }
        ScenarioId::ManyTypes => {
            let keys = sizes.types * sizes.keys_per_type;
            let mut workload = Workload::new(scenario, String::new(), keys, Arrivals::Closed);
            let mut seqs = vec![0; keys];
            for _ in 0..sizes.messages {
                let id = rng.gen_range(0..keys);
                workload.push(&mut seqs, (id / sizes.keys_per_type) as u32, id, 0, spin);
            }
            vec![workload]
        }
        ScenarioId::ConflictBackoff => {
            let keys = sizes.small_keys;
            let mut workload = Workload::new(scenario, String::new(), keys, Arrivals::Paced);
            let troubled = ((keys as f64 * sizes.troubled_pct / 100.0).round() as usize).max(1);
            // Spread the troubled keys over the id space (ids 0, k, 2k, ...).
            let stride = keys / troubled;
            for index in 0..troubled {
                workload.troubled[index * stride] = true;
            }
            let retry = Job::Retry {
                retries: 2,
                backoff_ns: (sizes.backoff_ms * NS_PER_MS) as u32,
                spin_ns: sizes.spin_ns,
            };
            let mut seqs = vec![0; keys];
            for index in 0..sizes.paced_messages {
                let id = rng.gen_range(0..keys);
                let job = if workload.troubled[id] { retry } else { spin };
                let at = (index as f64 * paced_interval_ns) as u64;
                workload.push(&mut seqs, 0, id, at, job);
            }
            vec![workload]
        }
        ScenarioId::LongSync => {
            let keys = sizes.small_keys;
            let mut workload = Workload::new(scenario, String::new(), keys, Arrivals::Paced);
            let long = Job::Spin { ns: (sizes.long_ms * NS_PER_MS) as u32 };
            let mut seqs = vec![0; keys];
            for index in 0..sizes.paced_messages {
                let id = rng.gen_range(0..keys);
                let job = if rng.gen_bool(sizes.long_pct / 100.0) {
                    workload.troubled[id] = true;
                    long
                } else {
                    spin
                };
                let at = (index as f64 * paced_interval_ns) as u64;
                workload.push(&mut seqs, 0, id, at, job);
            }
            vec![workload]
        }
        ScenarioId::HotBacklog => sizes
            .bursts
            .iter()
            .map(|&burst| {
                // Key 0 is hot; bystanders are 1..=small_keys.
                let keys = sizes.small_keys + 1;
                let mut workload =
                    Workload::new(scenario, format!("burst={burst}"), keys, Arrivals::Paced);
                workload.troubled[0] = true;
                let mut seqs = vec![0; keys];
                let hot = Job::Wait { ns: (sizes.hot_wait_ms * NS_PER_MS) as u32 };
                for _ in 0..burst {
                    workload.push(&mut seqs, 0, 0, 0, hot);
                }
                let mut bystander_rng = rng.clone();
                for index in 0..sizes.bystanders {
                    let id = 1 + bystander_rng.gen_range(0..sizes.small_keys);
                    let at = (index as f64 * paced_interval_ns) as u64;
                    workload.push(&mut seqs, 0, id, at, spin);
                }
                workload
            })
            .collect(),
        ScenarioId::AsyncIo => sizes
            .async_keys
            .iter()
            .map(|&keys| {
                let mut workload =
                    Workload::new(scenario, format!("keys={keys}"), keys, Arrivals::Closed);
                workload.window = Some(sizes.async_window);
                let mut seqs = vec![0; keys];
                let max_wait_ns = sizes.async_max_wait_ms * NS_PER_MS;
                let mut key_rng = rng.clone();
                for index in 0..sizes.async_messages {
                    // Round-robin over the keys, as records spread over keys by a producer.
                    let id = index % keys;
                    let wait = key_rng.gen_range(0..=max_wait_ns) as u32;
                    workload.push(&mut seqs, 0, id, 0, Job::Wait { ns: wait });
                }
                workload
            })
            .collect(),
        ScenarioId::OpenLoop => sizes
            .loads
            .iter()
            .map(|&load| {
                let rate = (open_loop_rate * load).max(1.0);
                let interval_ns = 1e9 / rate;
                let mut workload =
                    Workload::new(scenario, format!("load={load}"), sizes.keys, Arrivals::Paced);
                let mut seqs = vec![0; sizes.keys];
                let mut load_rng = rng.clone();
                for index in 0..sizes.open_messages {
                    let id = load_rng.gen_range(0..sizes.keys);
                    let at = (index as f64 * interval_ns) as u64;
                    workload.push(&mut seqs, 0, id, at, spin);
                }
                workload
            })
            .collect(),
    }
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

    #[test]
    fn sequence_numbers_count_up_per_key() {
        for &scenario in ScenarioId::ALL {
            for workload in generate(scenario, &sizes(), 1, 1e6) {
                let mut next = vec![0u64; workload.keys];
                for message in &workload.messages {
                    let id = message.key.aggregate_id as usize;
                    assert_eq!(message.seq, next[id], "{scenario} {}", workload.param);
                    next[id] += 1;
                }
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
        assert_eq!(params, ["burst=200", "burst=240", "burst=241", "burst=300"]);
        let burst_241 = &workloads[2];
        let hot = burst_241.messages.iter().filter(|m| m.key.aggregate_id == 0).count();
        assert_eq!(hot, 241);
        assert_eq!(burst_241.troubled.iter().filter(|&&t| t).count(), 1);
    }

    #[test]
    fn retry_cost_counts_every_attempt() {
        let job = Job::Retry { retries: 2, backoff_ns: 10, spin_ns: 3 };
        assert_eq!(job_cost_ns(&job), (9, 30));
    }
}
