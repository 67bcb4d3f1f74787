//! A driver's repetitions checked and measured: its records replayed, in time order, into
//! the same recorder an in-process design's handler writes to, so that the order, overlap,
//! loss and duplicate checks, the latency, head-of-line and bystander histograms and the
//! service times are the runner's own.
//!
//! A record is refused (and the cell fails, naming the line) where it cannot be true: a
//! message not in the workload, a start before its submission, an end before its start,
//! times past its repetition's end. A record that is possible but wrong (out of order,
//! overlapping, repeated, missing) is what the checker counts.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use strategies::{Message, WindowScope};

use super::driver::Session;
use super::protocol::{parse_output_line, CellInput, OutputLine, Record, RepEnd};
use crate::measure::histograms::Histograms;
use crate::measure::interference::Probe;
use crate::measure::measurement::{recorder_for, Measurement, Sample, ServiceTimes, PACE_LEAD_NS};
use crate::measure::recorder::{Clock, Recorder};
use crate::measure::system::Usage;
use crate::results::DriverGc;
use crate::watch::Watch;
use crate::workload::{Arrivals, Workload};

/// How often the driver's thread count is sampled.
const THREAD_SAMPLE: Duration = Duration::from_millis(5);

/// Reads every repetition of `session` (which was sent `input`, made from `workload`) and
/// measures it; the error names the line and what is wrong with it.
pub(super) fn measure_session(
    session: &mut Session,
    workload: &Workload,
    input: &CellInput,
    watch: &Watch,
) -> Result<Measurement, String> {
    let mut reading = Reading {
        workload,
        input,
        watch,
        lookup: Lookup::new(workload),
        recorder: recorder_for(workload, Clock::start()),
        peak: ThreadPeak::start(session.pid()),
        samples: Vec::with_capacity(input.repeat),
        most_threads: 0,
        peak_in_flight: 0,
        records: Vec::new(),
        sent: Vec::new(),
        gc: None,
        current: None,
    };
    loop {
        let Some(line) = session.next_line()? else {
            return Err(session.why(&format!(
                "its output ended after line {} without `done` ({} of {} repetitions reported)",
                session.line_number,
                reading.samples.len(),
                input.repeat
            )));
        };
        let at = session.line_number;
        match parse_output_line(&line).and_then(|parsed| reading.step(parsed, session)) {
            Ok(true) => break,
            Ok(false) => {}
            Err(why) => return Err(session.why(&format!("output line {at}: {why}"))),
        }
    }
    if let Some(line) = session.next_line()? {
        return Err(
            session.why(&format!("it wrote `{}` after `done`", super::protocol::clip(&line)))
        );
    }
    Ok(Measurement {
        samples: reading.samples,
        threads_reported: reading.most_threads,
        peak_in_flight: reading.peak_in_flight,
        window_scope: WindowScope::Strategy,
        windows: 1,
        producers: input.producers,
        events: None,
    })
}

/// A session's output as it is read: the repetitions measured so far and the one open.
struct Reading<'a> {
    workload: &'a Workload,
    input: &'a CellInput,
    watch: &'a Watch,
    lookup: Lookup,
    recorder: Recorder,
    peak: ThreadPeak,
    samples: Vec<Sample>,
    /// The most distinct threads that started a message in one repetition.
    most_threads: usize,
    peak_in_flight: usize,
    /// The open repetition's records, `sent` lines and collections.
    records: Vec<Record>,
    sent: Vec<(u64, u64)>,
    gc: Option<DriverGc>,
    /// The open repetition: its number, its receipt's start and the driver's usage then.
    current: Option<(usize, Probe, Option<Usage>)>,
}

impl Reading<'_> {
    /// Takes one line of output: `true` at `done`; the error says why it cannot be here.
    fn step(&mut self, line: OutputLine, session: &Session) -> Result<bool, String> {
        let open = self.current.as_ref().map(|(rep, _, _)| *rep);
        match (line, open) {
            (OutputLine::Warmup(_), None) => {}
            (OutputLine::Rep(rep), None)
                if rep == self.samples.len() && rep < self.input.repeat =>
            {
                self.peak.reset();
                self.current = Some((rep, Probe::start_with(session.pid()), session.usage()));
            }
            (OutputLine::Record(record), Some(_)) => {
                self.lookup.check(&record)?;
                self.records.push(record);
                self.watch.advance();
            }
            (OutputLine::Sent(id, count), Some(_)) if self.input.arrivals == "driven" => {
                if id as usize >= self.workload.keys {
                    return Err(format!("`sent` names key {id}, not in the workload"));
                }
                self.sent.push((id, count));
            }
            (OutputLine::Gc(collections, ns), Some(_)) => {
                let before = self.gc.unwrap_or_default();
                let time_ms = before.time_ms + ns as f64 / 1e6;
                self.gc = Some(DriverGc { collections: before.collections + collections, time_ms });
            }
            (OutputLine::End(end), Some(rep)) if end.rep == rep => self.close(end, session)?,
            (OutputLine::Done, None) if self.samples.len() == self.input.repeat => return Ok(true),
            (line, _) => {
                let mut text = String::new();
                line.write(&mut text);
                return Err(format!("`{}` out of place", text.trim_end()));
            }
        }
        Ok(false)
    }

    /// Measures the open repetition, which `end` closes.
    fn close(&mut self, end: RepEnd, session: &Session) -> Result<(), String> {
        let (_, probe, before) = self.current.take().expect("a repetition is open");
        let usage = session.usage().zip(before).map(|(after, before)| after.since(&before));
        let rep = Repetition {
            records: &self.records,
            sent: &self.sent,
            end,
            threads: self.peak.peak(),
            gc: self.gc.take(),
        };
        let (sample, replayed) =
            measure_repetition(&self.recorder, &self.lookup, self.workload, rep, probe, usage)?;
        self.most_threads = self.most_threads.max(replayed.handler_threads);
        self.peak_in_flight = self.peak_in_flight.max(replayed.peak_in_flight);
        self.samples.push(sample);
        self.records.clear();
        self.sent.clear();
        Ok(())
    }
}

/// What a driver reported of one repetition.
struct Repetition<'a> {
    records: &'a [Record],
    /// A completion-driven repetition's `sent` lines.
    sent: &'a [(u64, u64)],
    end: RepEnd,
    /// The driver's most threads while it ran.
    threads: usize,
    /// The collections its runtime reported.
    gc: Option<DriverGc>,
}

/// The runner's sample of `rep`, whose receipt `probe` began and whose driver used `usage`,
/// and what its replay found; `recorder` is reset after.
fn measure_repetition(
    recorder: &Recorder,
    lookup: &Lookup,
    workload: &Workload,
    rep: Repetition<'_>,
    probe: Probe,
    usage: Option<Usage>,
) -> Result<(Sample, Replayed), String> {
    let replayed = replay(recorder, lookup, rep.records, rep.sent, rep.end, workload)?;
    let sample = Sample {
        elapsed_s: rep.end.finished_ns as f64 / 1e9,
        send_s: rep.end.last_send_ns as f64 / 1e9,
        // The driver's whole process: its producers, its runtime's threads too.
        usage: usage.unwrap_or_default(),
        producer_cpu_s: 0.0,
        strategy_cpu_s: None,
        correctness: replayed.correctness,
        threads_observed: rep.threads,
        histograms: Histograms::from_recorder(recorder, &workload.troubled),
        service: ServiceTimes::from_recorder(recorder),
        timer_lateness: Histogram::new(3).expect("valid significant figures"),
        measured_completed: replayed.measured_completed,
        interference: probe.receipt(),
        driver_gc: rep.gc,
    };
    recorder.reset();
    Ok((sample, replayed))
}

/// What one repetition's replay found.
struct Replayed {
    correctness: crate::results::Correctness,
    /// Distinct threads that started a message.
    handler_threads: usize,
    /// The most messages submitted and not ended at once.
    peak_in_flight: usize,
    /// A completion-driven repetition: the measured senders' messages that ended.
    measured_completed: Option<u64>,
}

/// Replays `records` of the repetition that `end` closes into `recorder`.
fn replay(
    recorder: &Recorder,
    lookup: &Lookup,
    records: &[Record],
    sent: &[(u64, u64)],
    end: RepEnd,
    workload: &Workload,
) -> Result<Replayed, String> {
    if end.last_send_ns > end.finished_ns {
        return Err("its last send is after its end".into());
    }
    let mut events = Vec::with_capacity(records.len() * 2);
    let mut in_flight = Vec::with_capacity(records.len() * 2);
    for (index, record) in records.iter().enumerate() {
        if record.end_ns > end.finished_ns {
            return Err(format!(
                "message {:?} seq {} ends at {} ns, after its repetition's end at {} ns",
                record.key, record.seq, record.end_ns, end.finished_ns
            ));
        }
        // Ends sort before starts at the same instant: a message may start as its key's
        // previous one ends.
        events.push((record.start_ns, 1u8, index));
        events.push((record.end_ns, 0u8, index));
        in_flight.push((record.submit_ns, 1i8));
        in_flight.push((record.end_ns, -1i8));
    }
    events.sort_unstable();
    let messages: Vec<Message> =
        records.iter().map(|record| lookup.message(record, workload)).collect();
    let mut tokens = vec![None; records.len()];
    for (at, kind, index) in events {
        if kind == 1 {
            tokens[index] = recorder.start_at(&messages[index], at);
        } else {
            recorder.end_at(tokens[index], &messages[index], at);
        }
    }
    in_flight.sort_unstable();
    let (mut now, mut peak) = (0i64, 0i64);
    for (_, step) in in_flight {
        now += i64::from(step);
        peak = peak.max(now);
    }
    let correctness = match &workload.driven {
        Some(_) => {
            let mut counts = vec![0; workload.keys];
            for &(id, count) in sent {
                counts[id as usize] = count;
            }
            recorder.correctness_of_sent(0, &counts)
        }
        None => recorder.correctness(0),
    };
    let measured_completed = workload.driven.as_ref().map(|_| {
        records.iter().filter(|record| lookup.is_sender(record.key.aggregate_id)).count() as u64
    });
    let threads: HashSet<u64> = records.iter().map(|record| record.thread).collect();
    Ok(Replayed {
        correctness,
        handler_threads: threads.len(),
        peak_in_flight: peak.max(0) as usize,
        measured_completed,
    })
}

/// What the workload holds, found from a record: each key's messages and its background
/// and sender roles.
struct Lookup {
    /// Per key: the index in the workload of each of its messages, in sequence order.
    per_key: Vec<Vec<usize>>,
    /// Per key: whether it is a background key (a hot aggregate, a saga chain).
    background: Vec<bool>,
    /// Per key: whether it is a measured sender's.
    sender: Vec<bool>,
    /// Whether paced: a message's intended time is its schedule's, not its submission.
    paced: bool,
    /// The messages' intended times as the driver was sent them (paced: with the lead).
    lead_ns: u64,
}

impl Lookup {
    fn new(workload: &Workload) -> Self {
        let mut per_key = vec![Vec::new(); workload.keys];
        for (index, message) in workload.messages.iter().enumerate() {
            per_key[message.key.aggregate_id as usize].push(index);
        }
        let mut background = vec![false; workload.keys];
        let hot = workload.driven.as_ref().and_then(|plan| plan.hot).map(|hot| hot.key);
        for key in hot.into_iter().chain(workload.saga.map(|saga| saga.key)) {
            if let Some(flag) = background.get_mut(key as usize) {
                *flag = true;
            }
        }
        let mut sender = vec![false; workload.keys];
        for range in workload.driven.iter().flat_map(|plan| plan.senders.iter()) {
            for message in &workload.messages[range.clone()] {
                sender[message.key.aggregate_id as usize] = true;
            }
        }
        let paced = workload.arrivals == Arrivals::Paced;
        Self { per_key, background, sender, paced, lead_ns: PACE_LEAD_NS }
    }

    fn is_sender(&self, id: u64) -> bool {
        self.sender.get(id as usize).copied().unwrap_or(false)
    }

    /// Whether `record` can be true: its message is in the workload (or of a background
    /// key), and its times are in order.
    fn check(&self, record: &Record) -> Result<(), String> {
        let id = record.key.aggregate_id;
        let known = usize::try_from(id).ok().filter(|&id| id < self.per_key.len());
        let Some(id) = known else {
            return Err(format!("a record of key {id}, not in the workload"));
        };
        if !self.background[id] && record.seq >= self.per_key[id].len() as u64 {
            return Err(format!("a record of key {id} seq {}, not in the workload", record.seq));
        }
        if record.start_ns < record.submit_ns {
            return Err(format!(
                "key {id} seq {} starts at {} ns, before its submission at {} ns",
                record.seq, record.start_ns, record.submit_ns
            ));
        }
        if record.end_ns < record.start_ns {
            return Err(format!(
                "key {id} seq {} ends at {} ns, before its start at {} ns",
                record.seq, record.end_ns, record.start_ns
            ));
        }
        Ok(())
    }

    /// The message `record` reports (checked), with its intended time: the schedule's
    /// where paced (latency counts from there, however late the driver submitted), its
    /// submission otherwise.
    fn message(&self, record: &Record, workload: &Workload) -> Message {
        let id = record.key.aggregate_id as usize;
        let scheduled =
            self.per_key[id].get(record.seq as usize).map(|&index| workload.messages[index]);
        let intended_ns = match scheduled {
            Some(message) if self.paced && !self.background[id] => {
                message.intended_ns + self.lead_ns
            }
            _ => record.submit_ns,
        };
        let key = scheduled.map_or(record.key, |message| message.key);
        Message { key, seq: record.seq, intended_ns, job: strategies::Job::Noop }
    }
}

/// The most threads a process had since the last reset, sampled every [`THREAD_SAMPLE`].
struct ThreadPeak {
    peak: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl ThreadPeak {
    fn start(pid: u32) -> Self {
        let peak = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, stopped) = (Arc::clone(&peak), Arc::clone(&stop));
        std::thread::spawn(move || {
            let threads = || crate::measure::system::process_threads(pid);
            while let (false, Some(now)) = (stopped.load(Ordering::Relaxed), threads()) {
                seen.fetch_max(now, Ordering::Relaxed);
                std::thread::sleep(THREAD_SAMPLE);
            }
        });
        Self { peak, stop }
    }

    fn reset(&self) {
        self.peak.store(0, Ordering::Relaxed);
    }

    fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }
}

impl Drop for ThreadPeak {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::ScenarioId;
    use proptest::prelude::*;
    use strategies::{Job, Key};

    /// Two keys of three messages each, closed loop.
    fn workload() -> Workload {
        let messages = (0..3)
            .flat_map(|seq| {
                (0..2).map(move |id| Message {
                    key: Key::new(0, id),
                    seq,
                    intended_ns: 0,
                    job: Job::Noop,
                })
            })
            .collect();
        Workload::of_messages(ScenarioId::Uniform, messages, 2)
    }

    /// Checks and replays `records` as one repetition ending at `finished_ns`.
    fn run(records: &[Record], finished_ns: u64) -> Result<Replayed, String> {
        let workload = workload();
        let lookup = Lookup::new(&workload);
        let recorder = recorder_for(&workload, Clock::start());
        for record in records {
            lookup.check(record)?;
        }
        let end = RepEnd { rep: 0, last_send_ns: 0, finished_ns };
        replay(&recorder, &lookup, records, &[], end, &workload)
    }

    fn record(id: u64, seq: u64, start_ns: u64, end_ns: u64) -> Record {
        Record { key: Key::new(0, id), seq, submit_ns: 0, start_ns, end_ns, thread: id }
    }

    #[test]
    fn a_serial_run_per_key_is_clean_and_a_swap_an_overlap_and_a_loss_are_counted() {
        let serial: Vec<Record> = (0..2)
            .flat_map(|id| (0..3).map(move |seq| record(id, seq, seq * 10, seq * 10 + 5)))
            .collect();
        let replayed = run(&serial, 100).unwrap();
        assert!(replayed.correctness.is_clean(), "{:?}", replayed.correctness);
        assert_eq!((replayed.handler_threads, replayed.peak_in_flight), (2, 6));
        // Key 0's seq 1 and 2 swapped in time; key 1's seq 1 overlaps seq 0; key 1's seq 2 lost.
        let wrong = vec![
            record(0, 0, 0, 5),
            record(0, 2, 10, 15),
            record(0, 1, 20, 25),
            record(1, 0, 0, 10),
            record(1, 1, 5, 12),
        ];
        let counts = run(&wrong, 100).unwrap().correctness;
        assert_eq!(
            (counts.order_violations, counts.overlaps, counts.lost, counts.duplicates),
            (1, 1, 1, 0),
            "{counts:?}"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3_000))]

        /// Any records, possible or not, are refused or counted: never a panic, and a run
        /// that reports every message once, one at a time per key in order, is clean.
        #[test]
        fn any_records_are_refused_or_counted(
            raw in proptest::collection::vec((0u64..4, 0u64..5, 0u64..50, 0u64..50, 0u64..50, 0u64..3), 0..16),
            finished_ns in 0u64..60,
        ) {
            let records: Vec<Record> = raw
                .iter()
                .map(|&(id, seq, submit_ns, start_ns, end_ns, thread)| Record {
                    key: Key::new(0, id), seq, submit_ns, start_ns, end_ns, thread,
                })
                .collect();
            if let Ok(replayed) = run(&records, finished_ns) {
                let reported: u64 = records.len() as u64;
                let c = replayed.correctness;
                // Every message not reported is lost; every report beyond a message's first
                // is a duplicate.
                prop_assert_eq!(6 - c.lost + c.duplicates, reported);
            }
        }
    }
}
