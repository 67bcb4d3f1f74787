//! Metrics: turn raw samples into the numbers of `results.json`. No timing here.
//!
//! - latency, head-of-line delay and bystander latency come merged from the runs'
//!   histograms (`measure/histograms.rs` says how each is taken);
//! - ideal bound = max(total thread time / workers, longest per-key serial chain,
//!   total waiting / window, last scheduled arrival): no strategy can finish sooner. Thread
//!   time is CPU (spins) and blocking calls, as drawn by the workload. With one window per
//!   aggregate type the waiting term is that of the type that waits longest: each type
//!   has a window of its own;
//! - machine efficiency: the ideal bound with one more term, the spinning CPU over at most
//!   `cores - producers` workers (each producer needs a core; a blocked call holds a thread, not a
//!   core), over the elapsed time;
//! - measured floor: the same bound with the service times a run recorded in place of the
//!   drawn ones (a blocking sleep overshoots), where handlers do not wait.

use hdrhistogram::Histogram;
use strategies::WindowScope;

use super::histograms::{new_histogram, Histograms};
use super::measurement::{CountedEvents, Measurement, Sample, ServiceTimes};
use crate::results::{
    median, ContextSwitches, Correctness, CpuPerMessage, DriverGc, EventRates, Interference,
    Latency, RunResult, Samples, Spread, Tail, Threads,
};
use crate::workload::{Arrivals, Work, Workload};

/// What a cell could run at once, for its ideal bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// Worker threads: every handler call, spinning or blocked, holds one.
    pub workers: usize,
    /// Of those, how many can spin at once: `workers`, or fewer where the machine has
    /// fewer free cores (machine efficiency). A blocked call needs a thread, not a core.
    pub computing: usize,
    /// Unfinished messages per window.
    pub window: usize,
    /// Which messages share a window.
    pub scope: WindowScope,
}

impl Capacity {
    /// `workers` threads that can all compute at once.
    pub fn new(workers: usize, window: usize, scope: WindowScope) -> Self {
        Self { workers, computing: workers, window, scope }
    }
}

/// The lower bound on a workload's elapsed time, in seconds (see the module docs). A
/// completion-driven workload runs for its plan's duration: that is its bound.
pub fn ideal_seconds(workload: &Workload, capacity: Capacity) -> f64 {
    ideal_seconds_of(&Work::of(workload), capacity)
}

/// [`ideal_seconds`] of a workload's [`Work`], exact or expected.
pub fn ideal_seconds_of(work: &Work, capacity: Capacity) -> f64 {
    let Capacity { workers, computing, window, scope } = capacity;
    if let Some(driven_ns) = work.driven_ns {
        return driven_ns / 1e9;
    }
    let window_wait = match scope {
        WindowScope::Strategy => work.wait_ns,
        WindowScope::Type => work.type_wait_ns,
    };
    let bound_ns = (work.thread_ns / workers as f64)
        .max(work.spin_ns / computing.clamp(1, workers) as f64)
        .max(work.longest_chain_ns)
        .max(window_wait / window as f64)
        .max(work.last_arrival_ns);
    bound_ns / 1e9
}

/// Events per message of a counted repetition.
fn event_rates(counted: CountedEvents) -> EventRates {
    let per = |count: Option<u64>| count.map(|count| count as f64 / counted.messages.max(1) as f64);
    let events = counted.events;
    EventRates {
        wakeups: per(events.wakeups),
        parks: per(events.parks),
        activations: per(events.activations),
        retirements: per(events.retirements),
        hops: per(events.hops),
        spin_hits: per(events.spin_hits),
        takes: per(events.takes),
        parked_while_queued: per(events.parked_while_queued),
        producer_blocked: events.window_wait_ns.map(|waited| {
            let producer_ns = counted.elapsed_ns as f64 * counted.producers.max(1) as f64;
            (waited as f64 / producer_ns.max(1.0)).min(1.0)
        }),
        messages: counted.messages,
    }
}

/// How far below the offered rate the achieved one may fall before the run is marked.
const RATE_TOLERANCE: f64 = 0.98;

fn latency(histogram: &Histogram<u64>) -> Latency {
    Latency {
        p50: histogram.value_at_quantile(0.5),
        p90: histogram.value_at_quantile(0.9),
        p99: histogram.value_at_quantile(0.99),
        p999: histogram.value_at_quantile(0.999),
        max: histogram.max(),
    }
}

fn tail(histogram: &Histogram<u64>) -> Tail {
    Tail {
        p50: histogram.value_at_quantile(0.5),
        p99: histogram.value_at_quantile(0.99),
        p999: histogram.value_at_quantile(0.999),
        max: histogram.max(),
    }
}

/// The median, least and most of the repetitions' `values`.
fn spread_of(values: &[f64]) -> Spread {
    Spread {
        median: median(values),
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(0.0, f64::max),
    }
}

/// A repetition's own p99 latency: its senders' (the bystander histogram) in a
/// completion-driven cell, every message's elsewhere.
fn p99_of(sample: &Sample, driven: bool) -> u64 {
    let histograms = &sample.histograms;
    match (&histograms.bystander, driven) {
        (Some(bystander), true) => bystander,
        _ => &histograms.latency,
    }
    .value_at_quantile(0.99)
}

/// Each repetition's own figures, in the order they ran.
fn repetitions(
    samples: &[Sample],
    throughputs: Vec<f64>,
    elapsed: Vec<f64>,
    driven: bool,
) -> Samples {
    let bystander_p99 =
        |sample: &Sample| Some(sample.histograms.bystander.as_ref()?.value_at_quantile(0.99));
    Samples {
        throughput_per_s: throughputs,
        elapsed_s: elapsed,
        latency_p99_ns: samples.iter().map(|sample| p99_of(sample, driven)).collect(),
        bystander_p99_ns: samples.iter().filter_map(bystander_p99).collect(),
        interference: samples.iter().map(|sample| sample.interference.clone()).collect(),
        cpu_s: samples.iter().map(|sample| sample.usage.cpu_s).collect(),
    }
}

/// The repetitions' histograms, correctness counts and timer lateness, merged.
fn merge_samples(
    workload: &Workload,
    samples: &[Sample],
) -> (Histograms, Correctness, Histogram<u64>) {
    let mut merged = Histograms::new(workload.has_troubled_keys());
    let mut correctness = Correctness::default();
    let mut lateness = new_histogram();
    for sample in samples {
        merged.add(&sample.histograms);
        correctness.add(&sample.correctness);
        // Same bounds everywhere, so adding cannot fail.
        let _ = lateness.add(&sample.timer_lateness);
    }
    (merged, correctness, lateness)
}

/// The median over the repetitions of what their own service times allowed
/// ([`measured_floor_s`]), for a workload whose handlers do not wait.
fn floor_of(workload: &Workload, samples: &[Sample], workers: usize) -> Option<f64> {
    if workload.scenario.handlers_wait() {
        return None;
    }
    let last_arrival_ns = match workload.arrivals {
        Arrivals::Closed | Arrivals::Driven => 0,
        Arrivals::Paced => workload.messages.iter().map(|m| m.intended_ns).max().unwrap_or(0),
    };
    let floors: Vec<f64> = samples
        .iter()
        .map(|sample| measured_floor_s(&sample.service, workers, last_arrival_ns))
        .collect();
    Some(median(&floors))
}

/// A paced workload's offered rate and the median rate its producer achieved.
fn paced_rates(
    workload: &Workload,
    samples: &[Sample],
    messages: usize,
) -> (Option<f64>, Option<f64>) {
    match workload.arrivals {
        Arrivals::Closed | Arrivals::Driven => (None, None),
        Arrivals::Paced => {
            let span_ns = workload.messages.iter().map(|m| m.intended_ns).max().unwrap_or(0);
            let offered = messages as f64 / (span_ns.max(1) as f64 / 1e9);
            let sent: Vec<f64> =
                samples.iter().map(|sample| messages as f64 / sample.send_s).collect();
            (Some(offered), Some(median(&sent)))
        }
    }
}

/// The metrics of `measurement` of `strategy` on `workload`; also returns the merged
/// histograms, to be saved whole.
pub fn run_result(
    workload: &Workload,
    strategy: &str,
    measurement: &Measurement,
    workers: usize,
    window: usize,
    cores: usize,
) -> (RunResult, Histograms) {
    let samples = &measurement.samples;
    let messages = workload.messages.len();
    let (merged, correctness, lateness) = merge_samples(workload, samples);
    // A completion-driven cell measures its senders only: their handled messages, and
    // their latency (the other keys are troubled, so the bystander histogram is theirs).
    let handled = |sample: &Sample| sample.measured_completed.unwrap_or(messages as u64);
    let throughputs: Vec<f64> =
        samples.iter().map(|sample| handled(sample) as f64 / sample.elapsed_s).collect();
    let driven = workload.driven.is_some();
    let measured_latency = match (&merged.bystander, driven) {
        (Some(bystander), true) => bystander,
        _ => &merged.latency,
    };
    let messages = if driven {
        let counts: Vec<f64> = samples.iter().map(|sample| handled(sample) as f64).collect();
        median(&counts) as usize
    } else {
        messages
    };
    let elapsed: Vec<f64> = samples.iter().map(|sample| sample.elapsed_s).collect();
    let mean =
        |value: fn(&Sample) -> f64| samples.iter().map(value).sum::<f64>() / samples.len() as f64;
    let elapsed_s = median(&elapsed);
    let (workers, window) =
        (workload.workers.unwrap_or(workers), workload.window.unwrap_or(window));
    let capacity = Capacity::new(workers, window, measurement.window_scope);
    let ideal_s = ideal_seconds(workload, capacity);
    // Each producer needs a core of its own: at most `cores - producers` workers can
    // compute (a blocked handler holds its thread but no core).
    let computing = workers.min(cores.saturating_sub(measurement.producers)).max(1);
    let machine_ideal_s = ideal_seconds(workload, Capacity { computing, ..capacity });
    let measured_floor_s = floor_of(workload, samples, workers);
    let (offered, achieved) = paced_rates(workload, samples, messages);
    let result = RunResult {
        scenario: workload.scenario.as_str().to_owned(),
        param: workload.param.clone(),
        strategy: strategy.to_owned(),
        throughput_per_s: spread_of(&throughputs),
        latency_ns: latency(measured_latency),
        hol_ns: tail(&merged.hol),
        bystander_latency_ns: merged.bystander.as_ref().map(tail),
        threads: Threads {
            reported: measurement.threads_reported,
            observed: samples.iter().map(|sample| sample.threads_observed).max().unwrap_or(0),
        },
        correctness,
        cpu_s: mean(|sample| sample.usage.cpu_s),
        ctx_switches: ContextSwitches {
            voluntary: mean(|sample| sample.usage.voluntary as f64),
            involuntary: mean(|sample| sample.usage.involuntary as f64),
        },
        peak_in_flight: measurement.peak_in_flight,
        ideal_s,
        efficiency: ideal_s / elapsed_s,
        machine_efficiency: Some(machine_ideal_s / elapsed_s),
        producer_cpu_s: Some(mean(|sample| sample.producer_cpu_s)),
        cpu_per_message_ns: Some(cpu_per_message(samples, messages)),
        elapsed_s,
        messages,
        offered_per_s: offered,
        achieved_per_s: achieved,
        below_offered: offered.zip(achieved).map(|(o, a)| a < o * RATE_TOLERANCE),
        workers: Some(workers),
        window: Some(window),
        measured_floor_s,
        timer_lateness_ns: (!lateness.is_empty()).then(|| tail(&lateness)),
        window_scope: Some(measurement.window_scope),
        windows: Some(measurement.windows),
        events_per_message: measurement.events.map(event_rates),
        samples: Some(repetitions(samples, throughputs, elapsed, driven)),
        memory: None,
        settings: None,
        interference: Interference::sum(samples.iter().map(|sample| &sample.interference)),
        driver_gc: driver_gc(samples),
    };
    (result, merged)
}

/// The collections an external design's driver reported over `samples`, summed; `None`
/// where it reported none.
fn driver_gc(samples: &[Sample]) -> Option<DriverGc> {
    let reported = samples.iter().filter_map(|sample| sample.driver_gc);
    reported.reduce(|a, b| DriverGc {
        collections: a.collections + b.collections,
        time_ms: a.time_ms + b.time_ms,
    })
}

/// The CPU time per message of `samples` (means over them) that sent `messages` each.
fn cpu_per_message(samples: &[Sample], messages: usize) -> CpuPerMessage {
    let count = samples.len().max(1) as f64;
    let per_message = |cpu_s: f64| cpu_s / count * 1e9 / messages.max(1) as f64;
    let process: f64 = samples.iter().map(|sample| sample.usage.cpu_s).sum();
    let producer: f64 = samples.iter().map(|sample| sample.producer_cpu_s).sum();
    let strategy: Option<f64> = samples.iter().map(|sample| sample.strategy_cpu_s).sum();
    CpuPerMessage {
        process: per_message(process),
        off_producer: per_message((process - producer).max(0.0)),
        strategy_threads: strategy.map(per_message),
    }
}

/// The ideal bound of one run with the service times it recorded in place of the drawn
/// costs: the larger of total service / workers, the longest key's service and the last
/// scheduled arrival. Meaningful where handlers only compute or block (a wait's time is no
/// thread's).
fn measured_floor_s(service: &ServiceTimes, workers: usize, last_arrival_ns: u64) -> f64 {
    let bound_ns = (service.total_ns as f64 / workers as f64)
        .max(service.longest_key_ns as f64)
        .max(last_arrival_ns as f64);
    bound_ns / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;
    use strategies::{Job, Key, Message};

    fn message(id: u64, seq: u64, job: Job) -> Message {
        Message { key: Key::new(0, id), seq, intended_ns: 0, job }
    }

    #[test]
    fn ideal_takes_the_binding_constraint() {
        let spin = Job::Spin { ns: 1_000_000 };
        let mut workload = crate::workload::generate(
            crate::workload::ScenarioId::Uniform,
            &crate::workload::Sizes {
                messages: 0,
                keys: vec![4],
                ..crate::workload::Sizes::quick()
            },
            1,
            1.0,
        )
        .remove(0);
        // Four messages of 1 ms on one key: the chain (4 ms) binds, not CPU / 2 workers.
        workload.messages = (0..4).map(|seq| message(0, seq, spin)).collect();
        assert!(
            (ideal_seconds(&workload, Capacity::new(2, 256, WindowScope::Strategy)) - 0.004).abs()
                < 1e-9
        );
        // Spread over four keys: CPU / workers (2 ms) binds.
        workload.messages = (0..4).map(|id| message(id, 0, spin)).collect();
        assert!(
            (ideal_seconds(&workload, Capacity::new(2, 256, WindowScope::Strategy)) - 0.002).abs()
                < 1e-9
        );
        // Waits through a window of 1: total waiting binds.
        workload.messages = (0..4).map(|id| message(id, 0, Job::Wait { ns: 1_000_000 })).collect();
        assert!(
            (ideal_seconds(&workload, Capacity::new(2, 1, WindowScope::Strategy)) - 0.004).abs()
                < 1e-9
        );
        // The same over two types with a window each: each type's waiting (2 ms) binds.
        for (id, message) in workload.messages.iter_mut().enumerate() {
            message.key.aggregate_type = (id % 2) as u32;
        }
        assert!(
            (ideal_seconds(&workload, Capacity::new(2, 1, WindowScope::Type)) - 0.002).abs() < 1e-9
        );
        assert!(
            (ideal_seconds(&workload, Capacity::new(2, 1, WindowScope::Strategy)) - 0.004).abs()
                < 1e-9
        );
        // Spins on 16 workers with one free core: the core binds (4 ms). Blocking calls
        // hold threads, not cores: each key's 1 ms chain binds, not the core.
        let on_one_core =
            Capacity { computing: 1, ..Capacity::new(16, 256, WindowScope::Strategy) };
        workload.messages = (0..4).map(|id| message(id, 0, spin)).collect();
        assert!((ideal_seconds(&workload, on_one_core) - 0.004).abs() < 1e-9);
        let block = Job::Block { ns: 1_000_000 };
        workload.messages = (0..4).map(|id| message(id, 0, block)).collect();
        assert!((ideal_seconds(&workload, on_one_core) - 0.001).abs() < 1e-9);
    }
}
