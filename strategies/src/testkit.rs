//! What checking an executor takes, shared by [`conformance::check`](crate::conformance) and
//! the crate's own tests: a deadline, an order log and a seeded generator.
//!
//! - [`run_within`] (and [`within`], which panics): runs work on a thread of its own and
//!   waits for it at most a deadline, so that an executor that deadlocks fails a check
//!   instead of hanging it. The thread is left behind when the deadline passes.
//! - [`OrderLog`]: every handler call's start and end, with its thread and instants,
//!   checked for per-key order as it happens, and a [`Report`] of what ran against what
//!   was accepted and handed back (lost, unfinished, duplicated, unexpected).
//! - [`Rng`]: a small seeded generator (SplitMix64), so that a check's workload is the
//!   same on every run and needs no dependency.
//! - [`Sequencer`]: per-key sequence numbers for the messages a check makes, shuffled
//!   with an [`Rng`] where asked.
//! - [`Timer`]: a thread that completes pending steps' sleeps ([`Timer::sleep`]) from
//!   outside the executor under test.
//!
//! # What the order log counts
//!
//! - An *out-of-order* start: the first start of a message whose `seq` is below the
//!   highest `seq` its key has started. A lost message counts only as lost, a repeat only
//!   as a duplicate, and swapping messages `i < j` of a key counts `j - i`.
//! - An *overlap*: a message that starts while another message of its key has started and
//!   not ended.
//! - A *stray end*: an end with no started, unended run of its message (a double
//!   completion, or a bug in the handler that records).
//!
//! For a key whose messages carry `seq` 0, 1, 2, ... in submission order, a report with
//! no fault of any kind means each of them ran once, one at a time, in that order.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use crate::{Job, Key, Message};

/// How many fault descriptions a log keeps for its report.
const EXAMPLES: usize = 10;

// ---------------------------------------------------------------------------------------
// The deadline
// ---------------------------------------------------------------------------------------

/// Why [`run_within`] has no value to return.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Missed {
    /// The work did not return within the deadline; its thread is left running.
    Deadline(Duration),
    /// The work panicked, with this message.
    Panicked(String),
    /// No thread could be started for it.
    NoThread(String),
}

impl fmt::Display for Missed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Missed::Deadline(limit) => write!(f, "did not finish within {}", seconds(*limit)),
            Missed::Panicked(text) => write!(f, "panicked: {text}"),
            Missed::NoThread(error) => write!(f, "cannot start a thread: {error}"),
        }
    }
}

/// `limit` as a report writes it: `15 s`, `2.5 s`.
fn seconds(limit: Duration) -> String {
    if limit.subsec_nanos() == 0 {
        format!("{} s", limit.as_secs())
    } else {
        format!("{:.1} s", limit.as_secs_f64())
    }
}

/// Runs `work` on a thread named `name` and waits at most `limit` for what it returns.
/// Past the deadline the thread is left behind, with whatever it holds.
pub fn run_within<T: Send + 'static>(
    name: &str,
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Missed> {
    let (sender, receiver) = mpsc::channel();
    let spawned = thread::Builder::new().name(name.to_owned()).spawn(move || {
        let _ = sender.send(work());
    });
    let thread = spawned.map_err(|error| Missed::NoThread(error.to_string()))?;
    match receiver.recv_timeout(limit) {
        Ok(value) => {
            let _ = thread.join();
            Ok(value)
        }
        Err(mpsc::RecvTimeoutError::Timeout) => Err(Missed::Deadline(limit)),
        Err(mpsc::RecvTimeoutError::Disconnected) => match thread.join() {
            Err(payload) => Err(Missed::Panicked(panic_text(&*payload))),
            Ok(()) => Err(Missed::Panicked("the work ended without a value".to_owned())),
        },
    }
}

/// [`run_within`] for a test: panics naming `what` when the work does not return in
/// time, and passes a panic of the work on, with its message.
#[track_caller]
pub fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    run_within(what, limit, work).unwrap_or_else(|missed| panic!("{what}: {missed}"))
}

/// The message of a panic's payload.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(text), _) => (*text).to_owned(),
        (_, Some(text)) => text.clone(),
        _ => "a panic with no message".to_owned(),
    }
}

// ---------------------------------------------------------------------------------------
// The order log
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// The seeded generator
// ---------------------------------------------------------------------------------------

/// A small deterministic generator (SplitMix64): the same seed gives the same workload on
/// every run and every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub const fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.below(high - low + 1)
    }

    /// True `percent` times in a hundred.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// True with probability `p` (0 to 1).
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Per-key sequences
// ---------------------------------------------------------------------------------------

/// Hands out per-key sequence numbers (0, 1, 2, ...) in the order messages are made, so a
/// stream built with it is in submission order per key.
#[derive(Clone, Debug, Default)]
pub struct Sequencer {
    next: HashMap<Key, u64>,
}

impl Sequencer {
    /// The next message of `key`.
    pub fn next(&mut self, key: Key, job: Job) -> Message {
        let seq = self.next.entry(key).or_insert(0);
        let message = Message { key, seq: *seq, intended_ns: 0, job };
        *seq += 1;
        message
    }

    /// `count` messages of `key`, each with the job `job(i)`.
    pub fn run_of(&mut self, key: Key, count: usize, job: impl Fn(usize) -> Job) -> Vec<Message> {
        (0..count).map(|i| self.next(key, job(i))).collect()
    }

    /// `per_key` messages of each key, interleaved at random, jobs from `job`.
    pub fn shuffled(
        &mut self,
        rng: &mut Rng,
        keys: &[Key],
        per_key: usize,
        mut job: impl FnMut(&mut Rng) -> Job,
    ) -> Vec<Message> {
        let mut order: Vec<Key> =
            keys.iter().flat_map(|&key| std::iter::repeat_n(key, per_key)).collect();
        rng.shuffle(&mut order);
        order.into_iter().map(|key| self.next(key, job(rng))).collect()
    }
}

// ---------------------------------------------------------------------------------------
// The timer
// ---------------------------------------------------------------------------------------

/// A timer: a thread, started with the first sleep, that wakes sleeping steps at their
/// deadlines from outside the executor, as real I/O does. `conformance::check` gives each
/// check a timer of its own, stopped when the check finishes (a check past its deadline
/// leaves it running for the strategy it left behind), so that an executor that blocks
/// inside a waker stalls only its own check; a test binary may share one.
#[derive(Debug)]
pub struct Timer {
    inner: Arc<TimerInner>,
}

#[derive(Debug)]
struct TimerInner {
    state: Mutex<TimerState>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct TimerState {
    /// Deadlines in order; the `u64` breaks ties.
    alarms: BTreeMap<(Instant, u64), Arc<Alarm>>,
    next_id: u64,
    stopped: bool,
    started: bool,
}

/// What a sleeping step and the timer thread share.
#[derive(Debug, Default)]
struct Alarm {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

impl Timer {
    /// A timer whose thread starts with its first sleep.
    pub fn new() -> Self {
        let inner = TimerInner { state: Mutex::default(), changed: Condvar::new() };
        Self { inner: Arc::new(inner) }
    }

    /// A future that completes `duration` from now.
    pub fn sleep(&self, duration: Duration) -> Sleep {
        Sleep { timer: Arc::clone(&self.inner), deadline: Instant::now() + duration, alarm: None }
    }

    /// Stops its thread; sleeps not yet due never complete.
    pub fn stop(&self) {
        let mut state = lock(&self.inner.state);
        state.stopped = true;
        state.alarms.clear();
        drop(state);
        self.inner.changed.notify_all();
    }
}

impl Default for Timer {
    fn default() -> Self {
        Self::new()
    }
}

impl TimerInner {
    fn register(self: &Arc<Self>, deadline: Instant, alarm: Arc<Alarm>) {
        let mut state = lock(&self.state);
        if state.stopped {
            return;
        }
        let id = state.next_id;
        state.next_id += 1;
        state.alarms.insert((deadline, id), alarm);
        if !state.started {
            state.started = true;
            let timer = Arc::clone(self);
            let spawned =
                thread::Builder::new().name("testkit-timer".to_owned()).spawn(move || timer.run());
            if spawned.is_err() {
                state.started = false;
            }
        }
        drop(state);
        self.changed.notify_all();
    }

    fn run(&self) {
        let mut state = lock(&self.state);
        loop {
            if state.stopped {
                return;
            }
            let now = Instant::now();
            let mut due = Vec::new();
            while let Some(entry) = state.alarms.first_entry() {
                if entry.key().0 > now {
                    break;
                }
                due.push(entry.remove());
            }
            if !due.is_empty() {
                drop(state);
                // Woken without the timer's lock: a strategy may poll the step in `wake`.
                for alarm in due {
                    alarm.fired.store(true, Ordering::SeqCst);
                    let waker = lock(&alarm.waker).take();
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                }
                state = lock(&self.state);
                continue;
            }
            state = match state.alarms.keys().next().map(|&(deadline, _)| deadline) {
                Some(deadline) => {
                    self.changed
                        .wait_timeout(state, deadline - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.changed.wait(state).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}

/// A future that completes at its deadline, woken by the timer thread.
#[derive(Debug)]
pub struct Sleep {
    timer: Arc<TimerInner>,
    deadline: Instant,
    alarm: Option<Arc<Alarm>>,
}

impl Future for Sleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let alarm = match &self.alarm {
            Some(alarm) => Arc::clone(alarm),
            None => {
                if Instant::now() >= self.deadline {
                    return Poll::Ready(());
                }
                let alarm = Arc::new(Alarm::default());
                *lock(&alarm.waker) = Some(cx.waker().clone());
                self.timer.register(self.deadline, Arc::clone(&alarm));
                self.alarm = Some(alarm);
                return Poll::Pending;
            }
        };
        if alarm.fired.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        *lock(&alarm.waker) = Some(cx.waker().clone());
        // The timer sets `fired` before it takes the waker: a poll that stored its waker
        // after the take sees `fired` here.
        if alarm.fired.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_run_past_its_deadline_is_missed_and_a_panic_is_passed_on() {
        let limit = Duration::from_millis(20);
        assert_eq!(run_within("quick", limit, || 7), Ok(7));
        let late = run_within("late", limit, || thread::sleep(Duration::from_secs(2)));
        assert_eq!(late, Err(Missed::Deadline(limit)));
        let boom = || -> () { std::panic::resume_unwind(Box::new("boom")) };
        let panicked = run_within("panics", Duration::from_secs(5), boom);
        assert_eq!(panicked, Err(Missed::Panicked("boom".to_owned())));
    }

    #[test]
    fn the_generator_repeats_for_a_seed_and_stays_in_range() {
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..100).map(|_| rng.between(3, 9)).collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
        assert!(draw(1).iter().all(|n| (3..=9).contains(n)));
        let mut items: Vec<u32> = (0..50).collect();
        Rng::new(4).shuffle(&mut items);
        assert_ne!(items, (0..50).collect::<Vec<_>>());
        items.sort_unstable();
        assert_eq!(items, (0..50).collect::<Vec<_>>());
    }
}
