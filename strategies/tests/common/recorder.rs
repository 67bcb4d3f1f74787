//! The recorder: every handler call's start and end, per-key order checked as messages
//! start, and a [`Report`] of what ran against what was submitted (see the module docs of
//! `common` for what counts as an order violation and an overlap).

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use strategies::{Key, Message};

use super::lock;

/// One handler call: a message that started (and maybe ended).
#[derive(Clone, Copy, Debug)]
pub struct Run {
    pub key: Key,
    pub seq: u64,
    /// The thread the handler was called on.
    pub thread: ThreadId,
    /// Position among all starts (0 = first message started).
    pub order: usize,
    pub started: Instant,
    /// When the handler returned done, or its pending step completed (or it panicked).
    pub ended: Option<Instant>,
}

/// Everything recorded so far; read through [`Recorder::with_log`] and friends.
#[derive(Debug, Default)]
pub struct Log {
    runs: Vec<Run>,
    /// Indices into `runs` of every start of a message (more than one: duplicated).
    by_message: HashMap<(Key, u64), Vec<usize>>,
    /// Started, not ended messages per key (more than one: overlap).
    open_per_key: HashMap<Key, usize>,
    /// The `seq` the next start of each key must have.
    expected_seq: HashMap<Key, u64>,
    running: usize,
    peak_running: usize,
    ended: usize,
    /// Messages that ended by panicking (counted in `ended` too).
    failed: usize,
    order_violations: Vec<String>,
    overlaps: Vec<String>,
    /// Ends without a matching start (a bug in the test handler or a double completion).
    stray_ends: Vec<String>,
}

impl Log {
    /// Messages started so far (every start counts, duplicates too).
    pub fn started(&self) -> usize {
        self.runs.len()
    }

    /// Messages ended so far.
    pub fn ended(&self) -> usize {
        self.ended
    }

    /// Started messages whose key satisfies `filter`.
    pub fn started_where(&self, filter: impl Fn(Key) -> bool) -> usize {
        self.runs.iter().filter(|run| filter(run.key)).count()
    }

    /// Messages whose handler or pending step panicked (they count as ended).
    pub fn failed(&self) -> usize {
        self.failed
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

    /// The distinct threads handlers were called on.
    pub fn threads(&self) -> HashSet<ThreadId> {
        self.runs.iter().map(|run| run.thread).collect()
    }

    /// The most messages started and not ended at once (all keys together).
    pub fn peak_running(&self) -> usize {
        self.peak_running
    }

    /// Order violations and overlaps seen so far.
    pub fn order_faults(&self) -> usize {
        self.order_violations.len() + self.overlaps.len()
    }
}

/// Records handler calls and checks per-key order as they happen.
#[derive(Debug, Default)]
pub struct Recorder {
    log: Mutex<Log>,
    changed: Condvar,
}

impl Recorder {
    fn lock(&self) -> MutexGuard<'_, Log> {
        lock(&self.log)
    }

    /// A handler call for `message` began.
    pub fn start(&self, message: &Message) {
        let now = Instant::now();
        let mut log = self.lock();
        let key = message.key;
        let expected = log.expected_seq.get(&key).copied().unwrap_or(0);
        if message.seq != expected {
            let text = format!("{key:?}: seq {} started where seq {expected} was due", message.seq);
            log.order_violations.push(text);
        }
        log.expected_seq.insert(key, message.seq + 1);
        let open = log.open_per_key.entry(key).or_insert(0);
        *open += 1;
        if *open > 1 {
            let text =
                format!("{key:?}: seq {} started while {} other(s) ran", message.seq, *open - 1);
            log.overlaps.push(text);
        }
        log.running += 1;
        log.peak_running = log.peak_running.max(log.running);
        let order = log.runs.len();
        log.runs.push(Run {
            key,
            seq: message.seq,
            thread: thread::current().id(),
            order,
            started: now,
            ended: None,
        });
        log.by_message.entry((key, message.seq)).or_default().push(order);
        drop(log);
        self.changed.notify_all();
    }

    /// The message finished: its handler returned done or its pending step completed.
    pub fn end(&self, message: &Message) {
        let now = Instant::now();
        let mut log = self.lock();
        let log = &mut *log;
        let open_run = log
            .by_message
            .get(&(message.key, message.seq))
            .and_then(|runs| runs.iter().copied().find(|&index| log.runs[index].ended.is_none()));
        match open_run {
            Some(index) => {
                log.runs[index].ended = Some(now);
                *log.open_per_key.get_mut(&message.key).expect("a started key") -= 1;
                log.running -= 1;
                log.ended += 1;
            }
            None => log
                .stray_ends
                .push(format!("{:?} seq {} ended twice or unstarted", message.key, message.seq)),
        }
        self.changed.notify_all();
    }

    /// The message is about to panic (in its handler or its pending step): it ends here
    /// and counts as a handler failure.
    pub fn fail(&self, message: &Message) {
        self.lock().failed += 1;
        self.end(message);
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

    /// Waits until `ready` holds, at most `timeout`; returns whether it holds.
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

    /// Compares what ran with what was `accepted` (submit returned `Ok`) and `rejected`
    /// (handed back in `SubmitError::Closed`).
    pub fn report(&self, accepted: &[Message], rejected: &[Message]) -> Report {
        let log = self.lock();
        let mut report = Report {
            order_violations: log.order_violations.len(),
            overlaps: log.overlaps.len(),
            stray_ends: log.stray_ends.len(),
            ..Report::default()
        };
        let mut details: Vec<String> = Vec::new();
        details.extend(log.order_violations.iter().take(5).cloned());
        details.extend(log.overlaps.iter().take(5).cloned());
        details.extend(log.stray_ends.iter().take(5).cloned());
        let accepted_set: HashSet<(Key, u64)> = accepted.iter().map(|m| (m.key, m.seq)).collect();
        let rejected_set: HashSet<(Key, u64)> = rejected.iter().map(|m| (m.key, m.seq)).collect();
        let mut note = |count: &mut usize, text: String| {
            *count += 1;
            if details.len() < 25 {
                details.push(text);
            }
        };
        for message in accepted {
            let id = (message.key, message.seq);
            match log.by_message.get(&id).map(Vec::as_slice) {
                None | Some([]) => note(&mut report.lost, format!("lost: {id:?} never started")),
                Some([run]) if log.runs[*run].ended.is_none() => {
                    note(&mut report.unfinished, format!("unfinished: {id:?} never ended"));
                }
                Some([_]) => {}
                Some(runs) => {
                    note(
                        &mut report.duplicated,
                        format!("duplicated: {id:?} ran {} times", runs.len()),
                    );
                }
            }
        }
        for id in log.by_message.keys() {
            if accepted_set.contains(id) {
                continue;
            }
            if rejected_set.contains(id) {
                note(&mut report.ran_rejected, format!("ran and was handed back: {id:?}"));
            } else {
                note(&mut report.unexpected, format!("ran but was never submitted: {id:?}"));
            }
        }
        report.details = details;
        report
    }
}

/// What [`Recorder::report`] found.
#[derive(Debug, Default)]
pub struct Report {
    pub order_violations: usize,
    pub overlaps: usize,
    /// Accepted, never started.
    pub lost: usize,
    /// Accepted, started, never ended.
    pub unfinished: usize,
    /// Started more than once.
    pub duplicated: usize,
    /// Ran although `submit` handed it back.
    pub ran_rejected: usize,
    /// Ran although it was never submitted.
    pub unexpected: usize,
    pub stray_ends: usize,
    /// The first few problems, for the failure message.
    pub details: Vec<String>,
}

impl Report {
    /// Order violations plus overlaps.
    pub fn order_faults(&self) -> usize {
        self.order_violations + self.overlaps
    }

    /// Whether every accepted message ran exactly once, to the end, and nothing else ran.
    pub fn is_complete(&self) -> bool {
        self.lost
            + self.unfinished
            + self.duplicated
            + self.ran_rejected
            + self.unexpected
            + self.stray_ends
            == 0
    }

    /// Every accepted message ran exactly once and completed; nothing else ran.
    #[track_caller]
    pub fn assert_complete(&self, context: &str) {
        assert!(self.is_complete(), "{context}: not exactly once: {self}");
    }

    /// Complete, and per-key order held (no violation, no overlap).
    #[track_caller]
    pub fn assert_ordered(&self, context: &str) {
        assert!(self.is_complete() && self.order_faults() == 0, "{context}: {self}");
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} order violations, {} overlaps, {} lost, {} unfinished, {} duplicated, \
             {} ran after being handed back, {} unexpected, {} stray ends",
            self.order_violations,
            self.overlaps,
            self.lost,
            self.unfinished,
            self.duplicated,
            self.ran_rejected,
            self.unexpected,
            self.stray_ends
        )?;
        for detail in &self.details {
            write!(f, "\n  - {detail}")?;
        }
        Ok(())
    }
}
