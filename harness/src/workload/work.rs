//! What a workload asks of an executor ([`Work`]): the terms of its ideal bound, summed
//! exactly over generated messages ([`Work::of`]), or as expected from the sizes
//! ([`WorkloadSpec::expected_work`](super::WorkloadSpec::expected_work)), with the estimates the generators make of it.

use std::collections::HashMap;

use strategies::Job;

use super::{Arrivals, Workload};

/// Nanoseconds per millisecond.
pub(crate) const NS_PER_MS: f64 = 1e6;

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
    fn retry_cost_counts_every_attempt() {
        let job = Job::Retry { retries: 2, backoff_ns: 10, spin_ns: 3 };
        assert_eq!(job_cost_ns(&job), (9, 30));
    }

    #[test]
    fn zipf_top_share_is_one_over_the_harmonic_number() {
        assert!((zipf_top_share(1, 1.1) - 1.0).abs() < 1e-12);
        assert!((zipf_top_share(2, 1.0) - 2.0 / 3.0).abs() < 1e-12);
    }
}
