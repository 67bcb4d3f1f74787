//! The order log: every handler call's start and end, checked for per-key order as it
//! happens (the counts are defined in the module docs of [`testkit`](super)).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use crate::{Key, Message};

/// How many fault descriptions a log keeps for its report.
const EXAMPLES: usize = 10;

/// One handler call: a message that started, and maybe ended.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    /// The message's key.
    pub key: Key,
    /// The message's place in its key's sequence.
    pub seq: u64,
    /// The thread the handler was called on.
    pub thread: ThreadId,
    /// Its position among all starts (0: the first message started).
    pub order: usize,
    /// When the handler was called.
    pub started: Instant,
    /// When the handler returned done, its pending step completed, or it panicked.
    pub ended: Option<Instant>,
    /// Whether it ended by panicking.
    pub failed: bool,
}

/// What the log knows of one key.
#[derive(Debug, Default)]
struct KeyRecord {
    /// The highest `seq` started so far.
    highest: Option<u64>,
    /// Messages started and not ended (more than one: an overlap).
    open: usize,
}

/// Everything recorded so far; read through [`OrderLog::with_log`].
#[derive(Debug, Default)]
pub struct Log {
    runs: Vec<Run>,
    /// Indices into `runs` of every start of a message (more than one: duplicated).
    by_message: HashMap<(Key, u64), Vec<usize>>,
    keys: HashMap<Key, KeyRecord>,
    running: usize,
    peak_running: usize,
    ended: usize,
    failed: usize,
    out_of_order: usize,
    overlaps: usize,
    stray_ends: usize,
    /// The first few faults, described.
    examples: Vec<String>,
}

impl Log {
    fn example(&mut self, text: impl FnOnce() -> String) {
        if self.examples.len() < EXAMPLES {
            self.examples.push(text());
        }
    }

    /// Messages started so far (every start counts, a duplicate's too).
    pub fn started(&self) -> usize {
        self.runs.len()
    }

    /// Messages ended so far (a panicking one too).
    pub fn ended(&self) -> usize {
        self.ended
    }

    /// Messages whose handler or pending step panicked (they count as ended).
    pub fn failed(&self) -> usize {
        self.failed
    }

    /// Started messages whose key satisfies `filter`.
    pub fn started_where(&self, filter: impl Fn(Key) -> bool) -> usize {
        self.runs.iter().filter(|run| filter(run.key)).count()
    }

    /// Ended messages whose key satisfies `filter`.
    pub fn ended_where(&self, filter: impl Fn(Key) -> bool) -> usize {
        self.runs.iter().filter(|run| filter(run.key) && run.ended.is_some()).count()
    }

    /// Every run, in start order.
    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    /// The runs of `key`, in start order.
    pub fn runs_of(&self, key: Key) -> impl Iterator<Item = &Run> + '_ {
        self.runs.iter().filter(move |run| run.key == key)
    }

    /// How often the message `seq` of `key` started, and how many of those starts ended.
    pub fn starts_and_ends(&self, key: Key, seq: u64) -> (usize, usize) {
        let runs = self.by_message.get(&(key, seq)).map_or(&[][..], Vec::as_slice);
        (runs.len(), runs.iter().filter(|&&run| self.runs[run].ended.is_some()).count())
    }

    /// The distinct threads handlers were called on.
    pub fn threads(&self) -> HashSet<ThreadId> {
        self.runs.iter().map(|run| run.thread).collect()
    }

    /// The most messages started and not ended at once (all keys together).
    pub fn peak_running(&self) -> usize {
        self.peak_running
    }

    /// Out-of-order starts plus overlaps seen so far.
    pub fn order_faults(&self) -> usize {
        self.out_of_order + self.overlaps
    }
}

/// Records handler calls and checks per-key order as they happen (module docs).
#[derive(Debug, Default)]
pub struct OrderLog {
    log: Mutex<Log>,
    changed: Condvar,
}

impl OrderLog {
    fn lock(&self) -> MutexGuard<'_, Log> {
        lock(&self.log)
    }

    /// A handler call for `message` began, on this thread.
    pub fn start(&self, message: &Message) {
        let now = Instant::now();
        let mut log = self.lock();
        let (key, seq) = (message.key, message.seq);
        let order = log.runs.len();
        let starts = log.by_message.entry((key, seq)).or_default();
        starts.push(order);
        let first = starts.len() == 1;
        let record = log.keys.entry(key).or_default();
        let highest = record.highest;
        record.highest = Some(highest.map_or(seq, |highest| highest.max(seq)));
        record.open += 1;
        let others = record.open - 1;
        if let Some(highest) = highest.filter(|&highest| first && seq < highest) {
            log.out_of_order += 1;
            log.example(|| format!("{} seq {seq} started after seq {highest}", name(key)));
        }
        if others > 0 {
            log.overlaps += 1;
            log.example(|| format!("{} seq {seq} started while {others} other(s) ran", name(key)));
        }
        log.running += 1;
        log.peak_running = log.peak_running.max(log.running);
        let thread = thread::current().id();
        log.runs.push(Run { key, seq, thread, order, started: now, ended: None, failed: false });
        drop(log);
        self.changed.notify_all();
    }

    /// `message` ended: its handler returned done, its pending step completed, or it is
    /// about to panic (`failed`). Whether it had a started, unended run (else a stray end).
    pub fn end(&self, message: &Message, failed: bool) -> bool {
        let now = Instant::now();
        let mut log = self.lock();
        let log_ref = &mut *log;
        let (key, seq) = (message.key, message.seq);
        let open = log_ref
            .by_message
            .get(&(key, seq))
            .and_then(|runs| runs.iter().copied().find(|&run| log_ref.runs[run].ended.is_none()));
        let matched = match open {
            Some(run) => {
                log_ref.runs[run].ended = Some(now);
                log_ref.runs[run].failed = failed;
                if let Some(record) = log_ref.keys.get_mut(&key) {
                    record.open = record.open.saturating_sub(1);
                }
                log_ref.running -= 1;
                log_ref.ended += 1;
                log_ref.failed += usize::from(failed);
                true
            }
            None => {
                log_ref.stray_ends += 1;
                log_ref.example(|| format!("{} seq {seq} ended twice or unstarted", name(key)));
                false
            }
        };
        drop(log);
        self.changed.notify_all();
        matched
    }

    /// Reads the log.
    pub fn with_log<R>(&self, read: impl FnOnce(&Log) -> R) -> R {
        read(&self.lock())
    }

    /// Messages started so far.
    pub fn started(&self) -> usize {
        self.with_log(Log::started)
    }

    /// Messages ended so far.
    pub fn ended(&self) -> usize {
        self.with_log(Log::ended)
    }

    /// Waits until `ready` holds, at most `timeout`; whether it holds.
    pub fn wait_until(&self, timeout: Duration, ready: impl Fn(&Log) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        let mut log = self.lock();
        loop {
            if ready(&log) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            log =
                self.changed.wait_timeout(log, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// What ran against what `submit` `accepted` and `handed_back`.
    pub fn report(&self, accepted: &[Message], handed_back: &[Message]) -> Report {
        let log = self.lock();
        let mut report = Report {
            accepted: accepted.len(),
            out_of_order: log.out_of_order,
            overlaps: log.overlaps,
            stray_ends: log.stray_ends,
            details: log.examples.clone(),
            ..Report::default()
        };
        let accepted_set: HashSet<(Key, u64)> = accepted.iter().map(|m| (m.key, m.seq)).collect();
        let handed_back_set: HashSet<(Key, u64)> =
            handed_back.iter().map(|m| (m.key, m.seq)).collect();
        let mut details = Vec::new();
        let mut note = |count: &mut usize, text: String| {
            *count += 1;
            if details.len() < EXAMPLES {
                details.push(text);
            }
        };
        for message in accepted {
            let (key, seq) = (message.key, message.seq);
            match log.starts_and_ends(key, seq) {
                (0, _) => note(&mut report.lost, format!("{} seq {seq} lost", name(key))),
                (1, 0) => {
                    note(&mut report.unfinished, format!("{} seq {seq} never ended", name(key)));
                }
                (1, _) => report.once += 1,
                (starts, _) => {
                    let text = format!("{} seq {seq} ran {starts} times", name(key));
                    note(&mut report.duplicated, text);
                }
            }
        }
        for &(key, seq) in log.by_message.keys() {
            if accepted_set.contains(&(key, seq)) {
                continue;
            }
            if handed_back_set.contains(&(key, seq)) {
                let text = format!("{} seq {seq} ran after it was handed back", name(key));
                note(&mut report.ran_handed_back, text);
            } else {
                let text = format!("{} seq {seq} ran but was never submitted", name(key));
                note(&mut report.unexpected, text);
            }
        }
        report.details.extend(details);
        report
    }
}

/// What [`OrderLog::report`] found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Messages `submit` accepted.
    pub accepted: usize,
    /// Accepted messages that started once and ended.
    pub once: usize,
    /// Out-of-order starts (module docs).
    pub out_of_order: usize,
    /// Messages that started while another of their key ran.
    pub overlaps: usize,
    /// Accepted, never started.
    pub lost: usize,
    /// Accepted, started once, never ended.
    pub unfinished: usize,
    /// Accepted and started more than once.
    pub duplicated: usize,
    /// Ran although `submit` handed it back.
    pub ran_handed_back: usize,
    /// Ran although it was never submitted.
    pub unexpected: usize,
    /// Ends with no started, unended run.
    pub stray_ends: usize,
    /// The first few faults, described.
    pub details: Vec<String>,
}

impl Report {
    /// Out-of-order starts plus overlaps.
    pub fn order_faults(&self) -> usize {
        self.out_of_order + self.overlaps
    }

    /// Whether every accepted message ran exactly once, to the end, and nothing else ran.
    pub fn is_complete(&self) -> bool {
        self.lost
            + self.unfinished
            + self.duplicated
            + self.ran_handed_back
            + self.unexpected
            + self.stray_ends
            == 0
    }

    /// Complete, and per-key order held.
    pub fn is_ordered(&self) -> bool {
        self.is_complete() && self.order_faults() == 0
    }

    /// Panics naming `context` unless [`is_complete`](Self::is_complete).
    #[track_caller]
    pub fn assert_complete(&self, context: &str) {
        assert!(self.is_complete(), "{context}: not exactly once: {self}");
    }

    /// Panics naming `context` unless [`is_ordered`](Self::is_ordered).
    #[track_caller]
    pub fn assert_ordered(&self, context: &str) {
        assert!(self.is_ordered(), "{context}: {self}");
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} of {} ran once; {} out of order, {} overlapping, {} lost, {} unfinished, \
             {} duplicated, {} ran after being handed back, {} unexpected, {} stray ends",
            self.once,
            self.accepted,
            self.out_of_order,
            self.overlaps,
            self.lost,
            self.unfinished,
            self.duplicated,
            self.ran_handed_back,
            self.unexpected,
            self.stray_ends
        )?;
        for detail in &self.details {
            write!(f, "\n  - {detail}")?;
        }
        Ok(())
    }
}

/// A key as a report writes it.
pub fn name(key: Key) -> String {
    format!("key {}/{}", key.aggregate_type, key.aggregate_id)
}

/// Locks `mutex`, ignoring poisoning: a failed check may have panicked while holding it.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::Job;

    fn message(id: u64, seq: u64) -> Message {
        Message { key: Key::new(0, id), seq, intended_ns: 0, job: Job::Noop }
    }

    #[test]
    fn the_log_counts_each_kind_of_fault_once() {
        let log = OrderLog::default();
        let (a0, a1, a2) = (message(1, 0), message(1, 1), message(1, 2));
        log.start(&a1);
        log.start(&a0); // out of order, and overlapping a1
        log.end(&a1, false);
        log.end(&a0, false);
        log.end(&a0, false); // stray
        log.start(&a2);
        log.end(&a2, true);
        log.start(&a2); // duplicate: judged as a duplicate, not as out of order
        let stray = message(9, 0);
        log.start(&stray);
        log.end(&stray, false);
        let lost = message(2, 0);
        let report = log.report(&[a0, a1, a2, lost], &[stray]);
        let counts = (report.out_of_order, report.overlaps, report.stray_ends);
        assert_eq!(counts, (1, 1, 1), "{report}");
        assert_eq!((report.lost, report.duplicated, report.ran_handed_back), (1, 1, 1));
        assert_eq!((report.once, report.unexpected), (2, 0), "{report}");
        assert_eq!(log.with_log(Log::failed), 1);
        assert!(!report.is_complete());
    }

    #[test]
    fn a_late_start_below_the_highest_counts_the_distance() {
        let log = OrderLog::default();
        for seq in [0, 3, 1, 2] {
            log.start(&message(1, seq));
            log.end(&message(1, seq), false);
        }
        let report = log.report(&(0..4).map(|seq| message(1, seq)).collect::<Vec<_>>(), &[]);
        assert_eq!((report.out_of_order, report.overlaps, report.once), (2, 0, 4));
        assert!(report.is_complete() && !report.is_ordered());
    }
}
