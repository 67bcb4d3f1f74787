//! The histograms of a run, read from the recorder once it is drained:
//!
//! - latency = completion - intended arrival, per message;
//! - head-of-line delay = start - ready, ready = max(arrival, completion of the previous
//!   message of the same key): time a message could have run but did not;
//! - bystander latency: latency of the keys that are not troubled.

use hdrhistogram::Histogram;

use super::recorder::{Recorder, Timing};

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
            let bystander = histograms.bystander.is_some() && !troubled[id];
            histograms.record_key(timings, bystander);
        });
        histograms
    }

    /// Records one key's finished messages, in sequence order: a message is ready once it
    /// is due and the key's previous message ended, and waits behind the head of the line
    /// from then until it starts. A `bystander` key's latencies count as bystanders' too.
    fn record_key(&mut self, timings: &mut dyn Iterator<Item = Timing>, bystander: bool) {
        let mut previous_end = 0;
        for timing in timings {
            let ready = timing.intended_ns.max(previous_end);
            let latency = timing.end_ns.saturating_sub(timing.intended_ns).max(1);
            self.latency.saturating_record(latency);
            self.hol.saturating_record(timing.start_ns.saturating_sub(ready).max(1));
            if let Some(histogram) = self.bystander.as_mut().filter(|_| bystander) {
                histogram.saturating_record(latency);
            }
            previous_end = timing.end_ns;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::recorder::Clock;
    use strategies::{Job, Key, Message};

    fn message(id: u64, seq: u64, job: Job) -> Message {
        Message { key: Key::new(0, id), seq, intended_ns: 0, job }
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
