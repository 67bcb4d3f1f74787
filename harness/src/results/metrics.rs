//! Metrics: turn raw samples into the numbers of `results.json`. No timing here.
//!
//! - latency = completion - intended arrival, per message;
//! - head-of-line delay = start - ready, ready = max(arrival, completion of the previous
//!   message of the same key): time a message could have run but did not;
//! - bystander latency: latency of the keys that are not troubled;
//! - ideal bound = max(total CPU / workers, longest per-key serial chain,
//!   total waiting / window, last scheduled arrival): no strategy can finish sooner.

use hdrhistogram::Histogram;

use crate::measure::recorder::Recorder;
use crate::workload::{job_cost_ns, Arrivals, Workload};

/// The largest latency a histogram holds: one hour, in nanoseconds.
const MAX_TRACKED_NS: u64 = 3_600_000_000_000;
/// Significant decimal digits kept by every histogram.
const SIGNIFICANT_DIGITS: u8 = 3;

/// A latency histogram in nanoseconds.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_TRACKED_NS, SIGNIFICANT_DIGITS)
        .expect("valid histogram bounds")
}

/// The histograms of one run (or of several, merged).
#[derive(Clone, Debug)]
pub struct Histograms {
    /// Completion - intended arrival, every message.
    pub latency: Histogram<u64>,
    /// Start - ready, every message.
    pub hol: Histogram<u64>,
    /// Latency of messages of keys that are not troubled; `None` where no key is.
    pub bystander: Option<Histogram<u64>>,
}

impl Histograms {
    /// Empty histograms; `bystanders` says whether the scenario has troubled keys.
    pub fn new(bystanders: bool) -> Self {
        Self {
            latency: new_histogram(),
            hol: new_histogram(),
            bystander: bystanders.then(new_histogram),
        }
    }

    /// Reads every finished message of `recorder`; `troubled[id]` marks troubled keys.
    pub fn from_recorder(recorder: &Recorder, troubled: &[bool]) -> Self {
        let mut histograms = Self::new(troubled.iter().any(|&t| t));
        recorder.for_each_key(|id, timings| {
            let mut previous_end = 0;
            for timing in timings {
                let ready = timing.intended_ns.max(previous_end);
                let latency = timing.end_ns.saturating_sub(timing.intended_ns).max(1);
                histograms.latency.saturating_record(latency);
                histograms.hol.saturating_record(timing.start_ns.saturating_sub(ready).max(1));
                if let Some(bystander) = histograms.bystander.as_mut().filter(|_| !troubled[id]) {
                    bystander.saturating_record(latency);
                }
                previous_end = timing.end_ns;
            }
        });
        histograms
    }

    /// Adds another run's histograms.
    pub fn add(&mut self, other: &Self) {
        // Same bounds everywhere, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.hol.add(&other.hol);
        if let (Some(mine), Some(theirs)) = (self.bystander.as_mut(), other.bystander.as_ref()) {
            let _ = mine.add(theirs);
        }
    }
}

/// The lower bound on a workload's elapsed time, in seconds (see the module docs).
pub fn ideal_seconds(workload: &Workload, workers: usize, window: usize) -> f64 {
    let mut total_cpu = 0u64;
    let mut total_wait = 0u64;
    let mut chains = vec![0u64; workload.keys];
    for message in &workload.messages {
        let (cpu, wait) = job_cost_ns(&message.job);
        total_cpu += cpu;
        total_wait += wait;
        chains[message.key.aggregate_id as usize] += cpu + wait;
    }
    let longest_chain = chains.into_iter().max().unwrap_or(0);
    let last_arrival = match workload.arrivals {
        Arrivals::Closed => 0,
        Arrivals::Paced => workload.messages.iter().map(|m| m.intended_ns).max().unwrap_or(0),
    };
    let bound_ns = (total_cpu as f64 / workers as f64)
        .max(longest_chain as f64)
        .max(total_wait as f64 / window as f64)
        .max(last_arrival as f64);
    bound_ns / 1e9
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::recorder::Clock;
    use strategies::{Job, Key, Message};

    fn message(id: u64, seq: u64, job: Job) -> Message {
        Message { key: Key::new(0, id), seq, intended_ns: 0, job }
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn ideal_takes_the_binding_constraint() {
        let spin = Job::Spin { ns: 1_000_000 };
        let mut workload = crate::workload::generate(
            crate::workload::ScenarioId::Uniform,
            &crate::workload::Sizes { messages: 0, keys: 4, ..crate::workload::Sizes::quick() },
            1,
            1.0,
        )
        .remove(0);
        // Four messages of 1 ms on one key: the chain (4 ms) binds, not CPU / 2 workers.
        workload.messages = (0..4).map(|seq| message(0, seq, spin)).collect();
        assert!((ideal_seconds(&workload, 2, 256) - 0.004).abs() < 1e-9);
        // Spread over four keys: CPU / workers (2 ms) binds.
        workload.messages = (0..4).map(|id| message(id, 0, spin)).collect();
        assert!((ideal_seconds(&workload, 2, 256) - 0.002).abs() < 1e-9);
        // Waits through a window of 1: total waiting binds.
        workload.messages = (0..4).map(|id| message(id, 0, Job::Wait { ns: 1_000_000 })).collect();
        assert!((ideal_seconds(&workload, 2, 1) - 0.004).abs() < 1e-9);
    }

    #[test]
    fn hol_counts_time_ready_but_not_started() {
        let messages = [message(0, 0, Job::Noop), message(0, 1, Job::Noop)];
        let recorder = Recorder::new(&messages, 1, Clock::start());
        let first = recorder.start(&messages[0]);
        recorder.end(first, &messages[0]);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let second = recorder.start(&messages[1]);
        recorder.end(second, &messages[1]);
        let histograms = Histograms::from_recorder(&recorder, &[false]);
        assert_eq!(histograms.hol.len(), 2);
        // The second message was ready when the first ended and waited ~5 ms to start.
        assert!(histograms.hol.max() >= 4_000_000, "{}", histograms.hol.max());
        assert!(histograms.bystander.is_none());
    }
}
