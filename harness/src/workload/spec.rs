//! What a workload is before its messages: its parameter, keys, arrivals and the work it
//! asks for, known from the sizes alone.
//!
//! A run plans every cell from [`WorkloadSpec`]s, so that counting cells, `--dry-run` and
//! the progress estimate never generate a message; a workload's messages are generated
//! ([`WorkloadSpec::generate`]) once, when its first cell runs. [`Work`] sums what a
//! workload asks of an executor (thread time, waits, its longest per-key chain, its last
//! arrival): exactly, from generated messages ([`Work::of`]), or as expected from the sizes
//! ([`WorkloadSpec::expected_work`]), the input of the ideal bound either way.

use std::collections::HashMap;

use strategies::Job;

use super::generate::{job_cost_ns, Arrivals, Workload};
use super::ids::ScenarioId;
use super::sizes::Sizes;

const NS_PER_MS: f64 = 1e6;

/// Which workload of its scenario a spec is: the value its parameter names.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Variant {
    /// The scenario's one workload (many-types, conflict-backoff, long-sync).
    Single,
    /// A key count (uniform, zipf, async-io, async-io-zipf, parallel-consumer, stateful).
    Keys(usize),
    /// hot-backlog's burst of hot messages.
    Burst(usize),
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

/// The parameter a `--keys` count gives its cells: `keys=N` when the flag lists several
/// (a sweep), nothing when it gives one.
fn key_param(sizes: &Sizes, keys: usize) -> String {
    if sizes.keys.len() > 1 {
        format!("keys={keys}")
    } else {
        String::new()
    }
}

impl WorkloadSpec {
    fn new(scenario: ScenarioId, param: String, variant: Variant, keys: usize) -> Self {
        let arrivals = match scenario {
            ScenarioId::ConflictBackoff
            | ScenarioId::LongSync
            | ScenarioId::HotBacklog
            | ScenarioId::OpenLoop => Arrivals::Paced,
            ScenarioId::ColdCommand => Arrivals::Driven,
            _ => Arrivals::Closed,
        };
        Self { scenario, param, variant, keys, arrivals, window: None, workers: None }
    }

    /// The workloads of `scenario` at `sizes`, in the order they run: one per value of
    /// its parameter; none for a pipeline scenario (its log is its own).
    pub fn all(scenario: ScenarioId, sizes: &Sizes) -> Vec<Self> {
        let keyed = |keys: &[usize], param: &dyn Fn(usize) -> String| {
            keys.iter()
                .map(|&keys| Self::new(scenario, param(keys), Variant::Keys(keys), keys))
                .collect::<Vec<_>>()
        };
        let named = |keys: usize| format!("keys={keys}");
        let mut specs = match scenario {
            ScenarioId::Uniform | ScenarioId::Zipf => {
                keyed(&sizes.keys, &|keys| key_param(sizes, keys))
            }
            ScenarioId::ManyTypes => {
                let keys = sizes.types * sizes.keys_per_type;
                vec![Self::new(scenario, String::new(), Variant::Single, keys)]
            }
            ScenarioId::ConflictBackoff | ScenarioId::LongSync => {
                vec![Self::new(scenario, String::new(), Variant::Single, sizes.small_keys)]
            }
            ScenarioId::HotBacklog => sizes
                .bursts
                .iter()
                .map(|&burst| {
                    let param = format!("burst={burst}");
                    Self::new(scenario, param, Variant::Burst(burst), sizes.small_keys + 1)
                })
                .collect(),
            ScenarioId::AsyncIo => keyed(&sizes.async_keys, &named),
            ScenarioId::AsyncIoZipf => keyed(&sizes.async_zipf_keys, &named),
            ScenarioId::ParallelConsumer => keyed(&sizes.pc_keys, &named),
            ScenarioId::Stateful => keyed(&sizes.stateful_keys, &named),
            ScenarioId::ColdCommand => sizes
                .cold_slow
                .iter()
                .flat_map(|&slow| sizes.cold_senders.iter().map(move |&senders| (slow, senders)))
                .map(|(slow, senders)| {
                    let param = format!("slow={slow},senders={senders}");
                    let keys = slow + 1 + senders * cold_commands_per_sender(sizes);
                    Self::new(scenario, param, Variant::Cold { slow, senders }, keys)
                })
                .collect(),
            ScenarioId::OpenLoop => sizes
                .keys
                .iter()
                .flat_map(|&keys| sizes.loads.iter().map(move |&load| (keys, load)))
                .map(|(keys, load)| {
                    let param = match key_param(sizes, keys) {
                        keys if keys.is_empty() => format!("load={load}"),
                        keys => format!("{keys} load={load}"),
                    };
                    Self::new(scenario, param, Variant::Load { keys, load }, keys)
                })
                .collect(),
            ScenarioId::PipelineCrash
            | ScenarioId::PipelineRetry
            | ScenarioId::PipelineExpand
            | ScenarioId::PipelineReorder
            | ScenarioId::PipelineRebalance => Vec::new(),
        };
        for spec in &mut specs {
            spec.window = scenario.window(sizes);
            spec.workers = scenario.workers(sizes);
        }
        specs
    }

    /// How many messages its workload holds (the messages a completion-driven workload
    /// may send at most).
    pub fn messages(&self, sizes: &Sizes) -> usize {
        match (self.scenario, self.variant) {
            (ScenarioId::Uniform | ScenarioId::Zipf | ScenarioId::ManyTypes, _) => sizes.messages,
            (ScenarioId::ConflictBackoff | ScenarioId::LongSync, _) => sizes.paced_messages,
            (ScenarioId::HotBacklog, Variant::Burst(burst)) => burst + sizes.bystanders,
            (ScenarioId::AsyncIo | ScenarioId::AsyncIoZipf, _) => sizes.async_messages,
            (ScenarioId::ParallelConsumer, _) => sizes.pc_messages,
            (ScenarioId::ColdCommand, Variant::Cold { slow, senders }) => {
                slow * cold_messages_per_chain(sizes) + senders * cold_commands_per_sender(sizes)
            }
            (ScenarioId::OpenLoop, _) => sizes.open_messages,
            (ScenarioId::Stateful, _) => sizes.stateful_messages,
            _ => 0,
        }
    }

    /// The work it asks for, as expected from the sizes: what [`Work::of`] gives its
    /// generated messages, up to the chance of the draws (the longest per-key chain of
    /// random keys is estimated as the mean of the busiest key, plus its spread).
    /// `open_loop_rate` is the saturation rate open-loop's loads are fractions of.
    pub fn expected_work(&self, sizes: &Sizes, open_loop_rate: f64) -> Work {
        let spin = f64::from(sizes.spin_ns);
        let paced_span = |messages: usize| messages.saturating_sub(1) as f64 * 1e9 / sizes.rate;
        let mut work = Work::default();
        match (self.scenario, self.variant) {
            (ScenarioId::Uniform | ScenarioId::Zipf | ScenarioId::ManyTypes, _) => {
                let messages = sizes.messages as f64;
                work.add_cpu(messages * spin);
                let busiest = if self.scenario == ScenarioId::Zipf {
                    messages * zipf_top_share(self.keys, sizes.zipf_s)
                } else {
                    busiest_of_random(messages, self.keys)
                };
                work.longest_chain_ns = busiest * spin;
            }
            (ScenarioId::ConflictBackoff, _) => {
                let messages = sizes.paced_messages as f64;
                let keys = self.keys as f64;
                let troubled = ((keys * sizes.troubled_pct / 100.0).round()).max(1.0).min(keys);
                let share = troubled / keys;
                // Each troubled message runs three times and backs off twice (1x, then 2x).
                let backoff = sizes.backoff_ms as f64 * NS_PER_MS;
                work.add_cpu(messages * (1.0 - share) * spin + messages * share * 3.0 * spin);
                work.add_wait(messages * share * 3.0 * backoff);
                let per_key = busiest_of_random_among(messages, keys, troubled);
                work.longest_chain_ns = per_key * (3.0 * backoff + 3.0 * spin);
                work.last_arrival_ns = paced_span(sizes.paced_messages);
            }
            (ScenarioId::LongSync, _) => {
                let messages = sizes.paced_messages as f64;
                let long = sizes.long_ms as f64 * NS_PER_MS;
                let longs = messages * sizes.long_pct / 100.0;
                work.add_cpu((messages - longs) * spin + longs * long);
                let busiest = busiest_of_random(longs, self.keys).max(longs.min(1.0));
                work.longest_chain_ns = busiest * long;
                work.last_arrival_ns = paced_span(sizes.paced_messages);
            }
            (ScenarioId::HotBacklog, Variant::Burst(burst)) => {
                let hot = burst as f64 * sizes.hot_wait_ms as f64 * NS_PER_MS;
                work.add_cpu(sizes.bystanders as f64 * spin);
                work.add_wait(hot);
                let bystander = busiest_of_random(sizes.bystanders as f64, sizes.small_keys);
                work.longest_chain_ns = hot.max(bystander * spin);
                work.last_arrival_ns = paced_span(sizes.bystanders);
            }
            (ScenarioId::AsyncIo | ScenarioId::AsyncIoZipf, _) => {
                let messages = sizes.async_messages as f64;
                let max = sizes.async_max_wait_ms as f64 * NS_PER_MS;
                // Waits are uniform in 0..=max: mean max / 2, spread max / sqrt(12).
                work.add_wait(messages * max / 2.0);
                let busiest = if self.scenario == ScenarioId::AsyncIoZipf {
                    messages * zipf_top_share(self.keys, sizes.zipf_s)
                } else {
                    // Round-robin: every key gets its share exactly.
                    (messages / self.keys as f64).ceil()
                };
                let spread = busiest.sqrt() * max / 12f64.sqrt();
                let keys = self.keys as f64;
                work.longest_chain_ns =
                    busiest * max / 2.0 + spread * (2.0 * keys.max(1.0).ln()).sqrt();
            }
            (ScenarioId::ParallelConsumer, _) => {
                let messages = sizes.pc_messages as f64;
                // Whole milliseconds, uniform in 0..=max.
                let mean = sizes.pc_max_block_ms as f64 / 2.0 * NS_PER_MS;
                work.thread_ns = messages * mean;
                work.longest_chain_ns = busiest_of_random(messages, self.keys) * mean;
            }
            (ScenarioId::ColdCommand, _) => {
                work.driven_ns = Some(sizes.cold_duration_ms as f64 * NS_PER_MS);
            }
            (ScenarioId::OpenLoop, Variant::Load { keys, load }) => {
                let messages = sizes.open_messages as f64;
                work.add_cpu(messages * spin);
                work.longest_chain_ns = busiest_of_random(messages, keys) * spin;
                let rate = (open_loop_rate * load).max(1.0);
                work.last_arrival_ns = (messages - 1.0).max(0.0) * 1e9 / rate;
            }
            (ScenarioId::Stateful, _) => {
                let messages = sizes.stateful_messages as f64;
                work.add_cpu(messages * spin);
                work.longest_chain_ns = busiest_of_random(messages, self.keys) * spin;
            }
            _ => {}
        }
        work.type_wait_ns = work.wait_ns;
        work
    }

    /// Its messages, from `seed` (see [`generate`](super::generate)).
    pub fn generate(&self, sizes: &Sizes, seed: u64, open_loop_rate: f64) -> Workload {
        super::generate::generate_spec(self, sizes, seed, open_loop_rate)
    }
}

/// Cold commands one sender may send in a `cold-command` cell: more than any strategy here
/// handles in `--cold-duration-ms` (1M/s), so a sender never runs out before its time is up.
pub(crate) fn cold_commands_per_sender(sizes: &Sizes) -> usize {
    const COLD_COMMANDS_PER_MS: u64 = 1_000;
    (sizes.cold_duration_ms * COLD_COMMANDS_PER_MS) as usize + 16
}

/// Messages each slow aggregate of a `cold-command` cell has: it cannot send faster than
/// one per wait.
pub(crate) fn cold_messages_per_chain(sizes: &Sizes) -> usize {
    (sizes.cold_duration_ms / sizes.cold_wait_ms) as usize + 2
}

/// The expected messages of the busiest of `keys` keys when `messages` are drawn uniformly
/// at random: the mean plus the spread of the largest of `keys` draws (a normal
/// approximation, at most every message).
fn busiest_of_random(messages: f64, keys: usize) -> f64 {
    busiest_of_random_among(messages, keys as f64, keys as f64)
}

/// [`busiest_of_random`] over `among` of the `keys` keys (the troubled ones).
fn busiest_of_random_among(messages: f64, keys: f64, among: f64) -> f64 {
    let mean = messages / keys.max(1.0);
    let spread = (2.0 * mean * among.max(1.0).ln()).sqrt();
    (mean + spread).min(messages)
}

/// The share of the hottest of `keys` keys drawn by Zipf with exponent `s`: 1 / H(keys, s).
fn zipf_top_share(keys: usize, s: f64) -> f64 {
    let harmonic: f64 = (1..=keys).map(|rank| (rank as f64).powf(-s)).sum();
    1.0 / harmonic
}

/// What a workload asks of an executor, summed over its messages: the terms of its ideal
/// bound (`results::metrics::ideal_seconds`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Work {
    /// Time on a thread: CPU spins and blocking calls, in nanoseconds.
    pub thread_ns: f64,
    /// Of that, CPU spins (a blocked call holds a thread, not a core).
    pub spin_ns: f64,
    /// Time waiting off any thread (pending).
    pub wait_ns: f64,
    /// The waits of the aggregate type that waits longest (a window per type).
    pub type_wait_ns: f64,
    /// The longest per-key serial chain: thread time and waits of its busiest key.
    pub longest_chain_ns: f64,
    /// The last scheduled arrival of a paced workload (0 otherwise).
    pub last_arrival_ns: f64,
    /// How long a completion-driven workload runs, which is then its bound.
    pub driven_ns: Option<f64>,
}

impl Work {
    fn add_cpu(&mut self, ns: f64) {
        self.thread_ns += ns;
        self.spin_ns += ns;
    }

    fn add_wait(&mut self, ns: f64) {
        self.wait_ns += ns;
    }

    /// The work of generated messages, exactly.
    pub fn of(workload: &Workload) -> Self {
        if let Some(plan) = &workload.driven {
            return Self { driven_ns: Some(plan.duration_ns as f64), ..Self::default() };
        }
        let (mut thread, mut spin, mut wait) = (0u64, 0u64, 0u64);
        let mut wait_per_type: HashMap<u32, u64> = HashMap::new();
        let mut chains = vec![0u64; workload.keys];
        for message in &workload.messages {
            let (cpu, waits) = job_cost_ns(&message.job);
            thread += cpu;
            if !matches!(message.job, Job::Block { .. }) {
                spin += cpu;
            }
            wait += waits;
            if waits > 0 {
                *wait_per_type.entry(message.key.aggregate_type).or_default() += waits;
            }
            chains[message.key.aggregate_id as usize] += cpu + waits;
        }
        let last_arrival = match workload.arrivals {
            Arrivals::Closed | Arrivals::Driven => 0,
            Arrivals::Paced => workload.messages.iter().map(|m| m.intended_ns).max().unwrap_or(0),
        };
        Self {
            thread_ns: thread as f64,
            spin_ns: spin as f64,
            wait_ns: wait as f64,
            type_wait_ns: wait_per_type.into_values().max().unwrap_or(0) as f64,
            longest_chain_ns: chains.into_iter().max().unwrap_or(0) as f64,
            last_arrival_ns: last_arrival as f64,
            driven_ns: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_name_the_workloads_generate_makes_in_order() {
        for sizes in [Sizes::quick(), Sizes::standard()] {
            for &scenario in ScenarioId::ALL.iter().filter(|scenario| !scenario.is_pipeline()) {
                let specs = WorkloadSpec::all(scenario, &sizes);
                assert_eq!(specs.len(), scenario.params(&sizes), "{scenario}");
                if sizes == Sizes::quick() {
                    let workloads = super::super::generate(scenario, &sizes, 1, 1e6);
                    let params: Vec<_> = workloads.iter().map(|w| &w.param).collect();
                    let named: Vec<_> = specs.iter().map(|s| &s.param).collect();
                    assert_eq!(params, named, "{scenario}");
                }
            }
        }
    }

    #[test]
    fn zipf_top_share_is_one_over_the_harmonic_number() {
        assert!((zipf_top_share(1, 1.1) - 1.0).abs() < 1e-12);
        assert!((zipf_top_share(2, 1.0) - 2.0 / 3.0).abs() < 1e-12);
    }
}
