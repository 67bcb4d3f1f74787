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
use super::scenario::ScenarioId;
use super::sizes::Sizes;

/// Nanoseconds per millisecond.
pub(crate) const NS_PER_MS: f64 = 1e6;

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

/// The parameter a `--keys` count gives its cells: `keys=N` when the flag lists several
/// (a sweep), nothing when it gives one.
pub(crate) fn key_param(sizes: &Sizes, keys: usize) -> String {
    if sizes.keys.len() > 1 {
        format!("keys={keys}")
    } else {
        String::new()
    }
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

    /// Its messages, from `seed` (see [`generate`](super::generate)).
    pub fn generate(&self, sizes: &Sizes, seed: u64, open_loop_rate: f64) -> Workload {
        super::generate::generate_spec(self, sizes, seed, open_loop_rate)
    }
}

/// The expected messages of the busiest of `keys` keys when `messages` are drawn uniformly
/// at random: the mean plus the spread of the largest of `keys` draws (a normal
/// approximation, at most every message).
pub(crate) fn busiest_of_random(messages: f64, keys: usize) -> f64 {
    busiest_of_random_among(messages, keys as f64, keys as f64)
}

/// [`busiest_of_random`] over `among` of the `keys` keys (the troubled ones).
pub(crate) fn busiest_of_random_among(messages: f64, keys: f64, among: f64) -> f64 {
    let mean = messages / keys.max(1.0);
    let spread = (2.0 * mean * among.max(1.0).ln()).sqrt();
    (mean + spread).min(messages)
}

/// The share of the hottest of `keys` keys drawn by Zipf with exponent `s`: 1 / H(keys, s).
pub(crate) fn zipf_top_share(keys: usize, s: f64) -> f64 {
    let harmonic: f64 = (1..=keys).map(|rank| (rank as f64).powf(-s)).sum();
    1.0 / harmonic
}

/// What a workload asks of an executor, summed over its messages: the terms of its ideal
/// bound (`measure::metrics::ideal_seconds`).
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
    /// `ns` of CPU spins, nothing else.
    pub(crate) fn computing(ns: f64) -> Self {
        Self { thread_ns: ns, spin_ns: ns, ..Self::default() }
    }

    /// Adds `ns` of waiting off any thread.
    pub(crate) fn add_wait(&mut self, ns: f64) {
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
        let scenarios = || ScenarioId::ALL.iter().filter(|scenario| !scenario.is_pipeline());
        for sizes in [Sizes::quick(), Sizes::standard()] {
            for &scenario in scenarios() {
                let specs = WorkloadSpec::all(scenario, &sizes);
                assert_eq!(specs.len(), scenario.params(&sizes), "{scenario}");
            }
        }
        // At the quick sizes, each generated workload has the param its spec names.
        let sizes = Sizes::quick();
        for &scenario in scenarios() {
            let specs = WorkloadSpec::all(scenario, &sizes);
            let workloads = super::super::generate(scenario, &sizes, 1, 1e6);
            let params: Vec<_> = workloads.iter().map(|w| &w.param).collect();
            let named: Vec<_> = specs.iter().map(|s| &s.param).collect();
            assert_eq!(params, named, "{scenario}");
        }
    }

    #[test]
    fn zipf_top_share_is_one_over_the_harmonic_number() {
        assert!((zipf_top_share(1, 1.1) - 1.0).abs() < 1e-12);
        assert!((zipf_top_share(2, 1.0) - 2.0 / 3.0).abs() < 1e-12);
    }
}
