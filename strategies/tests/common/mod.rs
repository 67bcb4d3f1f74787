//! Test support for the conformance suite.
//!
//! - [`Recorder`]: every handler call records when its message started and ended, on which
//!   thread, and checks per-key order on the fly: an *order violation* is a message whose
//!   `seq` does not directly follow the previous started `seq` of its key (the first must
//!   be 0); an *overlap* is a message that starts while another message of its key has
//!   started and not ended. [`Recorder::report`] adds lost, duplicated and unexpected
//!   messages against what the test submitted.
//! - [`TestHandler`]: interprets [`Job`]s: `Spin` busy-loops, `Wait` returns a pending step
//!   completed by a small timer thread, `Retry` waits a doubling backoff between attempts,
//!   `Panic` panics; `Custom` codes built by [`block_on_gate`], [`pend_on_gate`],
//!   [`panic_when_polled`], [`panic_on_first_poll`] and [`yield_forever`] block the worker
//!   on a [`Gates`] gate, wait (pending) for a gate, panic while the step is polled (after
//!   a wake, or at once), or never complete while waking themselves at every poll. A
//!   pending message *ends* when its step completes; a panicking one ends as it panics and
//!   is also counted as a handler failure.
//! - [`Fixture`]: one strategy built with a [`TestHandler`], the messages it accepted and
//!   rejected, and watchdogs so that a broken strategy fails a test instead of hanging it.
//! - [`Ledger`]: where every submitted message went (completed, failed, discarded,
//!   abandoned, handed back), from the recorder and the strategy's counters, which must
//!   agree message for message.
//!
//! Timing rule: tests wait for events with [`PATIENCE`] (generous, for a loaded 2-core
//! machine); sleeps ([`GRACE`]) only give a wrong implementation the chance to misbehave.

#![allow(dead_code)] // each test binary uses a different part of the support module

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard, Once, OnceLock, Weak};
use std::task::{Context, Poll, Waker};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use rand::Rng;
use strategies::{
    ForcedClose, Handler, Job, Key, Message, Outcome, Strategy, StrategyConfig, StrategyId,
    SubmitError,
};

/// How long a test waits for something that must happen.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// How long a test gives a wrong implementation to do something it must not do.
pub const GRACE: Duration = Duration::from_millis(300);

/// The longest a handler blocks on a closed gate, so a failed test cannot hang a worker
/// forever (a passing test always opens its gates much earlier).
const GATE_LIMIT: Duration = Duration::from_secs(60);

/// Groups per worker large enough that the handful of keys a window test uses land in
/// distinct hash-serial groups (`group-by`, `per-type-pool`): those tests are about the
/// window, not about head-of-line blocking inside a group. The hash is fixed, so this is
/// deterministic.
pub const DISTINCT_GROUPS: usize = 1 << 16;

// ---------------------------------------------------------------------------------------
// Strategy classes
// ---------------------------------------------------------------------------------------

/// Strategies that run each key in its own mailbox, so a waiting key frees its worker.
pub const PER_KEY_MAILBOXES: [StrategyId; 4] =
    [StrategyId::WorkStealing, StrategyId::KeyedMailbox, StrategyId::Tokio, StrategyId::Rayon];

/// Strategies that serialise whole hash groups, so a waiting key blocks its group.
pub const HASH_GROUPS: [StrategyId; 2] = [StrategyId::PerTypePool, StrategyId::GroupBy];

/// Every strategy, controls included.
pub fn all() -> Vec<StrategyId> {
    StrategyId::ALL.to_vec()
}

/// Every strategy that promises per-key order.
pub fn ordered() -> Vec<StrategyId> {
    StrategyId::ALL.iter().copied().filter(|id| id.is_ordered()).collect()
}

/// Every strategy with threads of its own (all but `inline`, which runs on the submitter).
pub fn threaded() -> Vec<StrategyId> {
    StrategyId::ALL.iter().copied().filter(|&id| id != StrategyId::Inline).collect()
}

/// Runs `check` for every strategy in `ids` at once, each on its own thread (for checks
/// that mostly wait), then fails naming every strategy whose check failed.
pub fn check_concurrently(
    ids: impl IntoIterator<Item = StrategyId>,
    check: impl Fn(StrategyId) + Sync,
) {
    let check = &check;
    let failures: Vec<String> = thread::scope(|scope| {
        let running: Vec<_> =
            ids.into_iter().map(|id| (id, scope.spawn(move || check(id)))).collect();
        running
            .into_iter()
            .filter_map(|(id, run)| {
                run.join().err().map(|payload| format!("{id}: {}", panic_text(&*payload)))
            })
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(text), _) => (*text).to_owned(),
        (_, Some(text)) => text.clone(),
        _ => "panicked".to_owned(),
    }
}

/// The reference configuration with `workers` threads.
pub fn config(workers: usize) -> StrategyConfig {
    StrategyConfig::with_workers(workers)
}

// ---------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------

/// Aggregate `id` of type 0.
pub fn key(id: u64) -> Key {
    Key::new(0, id)
}

/// Hands out per-key sequence numbers (0, 1, 2, ...) in the order messages are made, so a
/// stream built with it is in submission order per key.
#[derive(Debug, Default)]
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
    pub fn shuffled<R: Rng>(
        &mut self,
        rng: &mut R,
        keys: &[Key],
        per_key: usize,
        mut job: impl FnMut(&mut R) -> Job,
    ) -> Vec<Message> {
        use rand::seq::SliceRandom;
        let mut order: Vec<Key> =
            keys.iter().flat_map(|&key| std::iter::repeat_n(key, per_key)).collect();
        order.shuffle(rng);
        order.into_iter().map(|key| self.next(key, job(rng))).collect()
    }
}

/// A random job: `Wait` with probability `waits` (up to `max_wait_us`, sometimes zero, so
/// a step is ready at its first poll), otherwise `Noop` or `Spin` up to `max_spin_us`.
pub fn random_job<R: Rng + ?Sized>(
    rng: &mut R,
    waits: f64,
    max_spin_us: u32,
    max_wait_us: u32,
) -> Job {
    if rng.gen_bool(waits) {
        let ns = if rng.gen_bool(0.1) { 0 } else { rng.gen_range(1..=max_wait_us) * 1_000 };
        Job::Wait { ns }
    } else if rng.gen_bool(0.3) {
        Job::Noop
    } else {
        Job::Spin { ns: rng.gen_range(0..=max_spin_us) * 1_000 }
    }
}

const BLOCK_ON_GATE: u32 = 1 << 28;
const PEND_ON_GATE: u32 = 2 << 28;
const PANIC_WHEN_POLLED: u32 = 3 << 28;
const PANIC_ON_FIRST_POLL: u32 = 4 << 28;
const YIELD_FOREVER: u32 = 5 << 28;
const KIND_MASK: u32 = 0xf << 28;

/// A job that blocks its worker thread until gate `gate` opens, then ends.
pub fn block_on_gate(gate: u32) -> Job {
    Job::Custom(BLOCK_ON_GATE | gate)
}

/// A job that returns pending and completes when gate `gate` opens.
pub fn pend_on_gate(gate: u32) -> Job {
    Job::Custom(PEND_ON_GATE | gate)
}

/// A job that returns pending and panics when its step is polled after a short wait.
pub fn panic_when_polled() -> Job {
    Job::Custom(PANIC_WHEN_POLLED)
}

/// A job that returns pending and panics the first time its step is polled (before any
/// wake, so inside the strategy's first poll rather than a resumed one).
pub fn panic_on_first_poll() -> Job {
    Job::Custom(PANIC_ON_FIRST_POLL)
}

/// A job that returns pending and never completes, waking itself at every poll: a
/// cooperative loop that yields for ever (`tokio::task::yield_now` in a loop).
pub fn yield_forever() -> Job {
    Job::Custom(YIELD_FOREVER)
}

/// Whether `job` makes the test handler panic (at the call or in its pending step).
pub fn panics(job: Job) -> bool {
    match job {
        Job::Panic => true,
        Job::Custom(code) => matches!(code & KIND_MASK, PANIC_WHEN_POLLED | PANIC_ON_FIRST_POLL),
        _ => false,
    }
}

// ---------------------------------------------------------------------------------------
// Recorder
// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// Gates
// ---------------------------------------------------------------------------------------

#[derive(Debug, Default)]
struct GateState {
    open: HashSet<u32>,
    /// Set when the fixture is dropped: every gate is open from then on.
    all_open: bool,
    /// Pending steps waiting for a gate.
    wakers: HashMap<u32, Vec<Waker>>,
}

impl GateState {
    fn is_open(&self, gate: u32) -> bool {
        self.all_open || self.open.contains(&gate)
    }
}

/// Numbered gates that handlers wait on until the test opens them.
#[derive(Debug, Default)]
pub struct Gates {
    state: Mutex<GateState>,
    opened: Condvar,
}

impl Gates {
    /// Opens `gate`: blocked handlers return, pending steps complete.
    pub fn open(&self, gate: u32) {
        let wakers = {
            let mut state = lock(&self.state);
            state.open.insert(gate);
            state.wakers.remove(&gate).unwrap_or_default()
        };
        self.opened.notify_all();
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Opens every gate, now and later.
    pub fn open_all(&self) {
        let wakers: Vec<Waker> = {
            let mut state = lock(&self.state);
            state.all_open = true;
            state.wakers.drain().flat_map(|(_, wakers)| wakers).collect()
        };
        self.opened.notify_all();
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Blocks the calling thread until `gate` is open (at most [`GATE_LIMIT`]).
    fn block(&self, gate: u32) {
        let deadline = Instant::now() + GATE_LIMIT;
        let mut state = lock(&self.state);
        while !state.is_open(gate) {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            state = self
                .opened
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// A future that completes when `gate` opens.
    fn opened(self: &Arc<Self>, gate: u32) -> GateOpened {
        GateOpened { gates: Arc::clone(self), gate }
    }
}

struct GateOpened {
    gates: Arc<Gates>,
    gate: u32,
}

impl Future for GateOpened {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = lock(&self.gates.state);
        if state.is_open(self.gate) {
            return Poll::Ready(());
        }
        let wakers = state.wakers.entry(self.gate).or_default();
        if !wakers.iter().any(|waker| waker.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}

// ---------------------------------------------------------------------------------------
// Timer
// ---------------------------------------------------------------------------------------

/// What a sleeping step and the timer thread share.
#[derive(Debug, Default)]
struct Alarm {
    fired: AtomicBool,
    waker: Mutex<Option<Waker>>,
}

struct Entry {
    deadline: Instant,
    id: u64,
    alarm: Arc<Alarm>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.deadline, self.id) == (other.deadline, other.id)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.deadline, self.id).cmp(&(other.deadline, other.id))
    }
}

/// One process-wide timer thread: a heap of deadlines, woken through a condvar.
struct Timer {
    heap: Mutex<BinaryHeap<Reverse<Entry>>>,
    changed: Condvar,
    next_id: AtomicU64,
}

impl Timer {
    fn get() -> &'static Timer {
        static TIMER: OnceLock<&'static Timer> = OnceLock::new();
        TIMER.get_or_init(|| {
            let timer: &'static Timer = Box::leak(Box::new(Timer {
                heap: Mutex::new(BinaryHeap::new()),
                changed: Condvar::new(),
                next_id: AtomicU64::new(0),
            }));
            thread::Builder::new()
                .name("test-timer".into())
                .spawn(move || timer.run())
                .expect("start the test timer thread");
            timer
        })
    }

    fn register(&self, deadline: Instant, alarm: Arc<Alarm>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        lock(&self.heap).push(Reverse(Entry { deadline, id, alarm }));
        self.changed.notify_one();
    }

    fn run(&self) {
        let mut heap = lock(&self.heap);
        loop {
            let now = Instant::now();
            let mut due = Vec::new();
            while heap.peek().is_some_and(|entry| entry.0.deadline <= now) {
                due.push(heap.pop().expect("peeked").0.alarm);
            }
            if !due.is_empty() {
                drop(heap);
                for alarm in due {
                    // SeqCst, then the waker lock: a poll that stored its waker after we
                    // took the slot sees `fired` when it looks again (see `Sleep::poll`).
                    alarm.fired.store(true, Ordering::SeqCst);
                    let waker = lock(&alarm.waker).take();
                    if let Some(waker) = waker {
                        waker.wake();
                    }
                }
                heap = lock(&self.heap);
                continue;
            }
            heap = match heap.peek().map(|entry| entry.0.deadline) {
                Some(deadline) => {
                    self.changed
                        .wait_timeout(heap, deadline - now)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
                None => self.changed.wait(heap).unwrap_or_else(|p| p.into_inner()),
            };
        }
    }
}

/// A future that completes after a duration, woken by the timer thread.
struct Sleep {
    deadline: Instant,
    alarm: Option<Arc<Alarm>>,
}

impl Sleep {
    fn new(duration: Duration) -> Self {
        Self { deadline: Instant::now() + duration, alarm: None }
    }
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
                Timer::get().register(self.deadline, Arc::clone(&alarm));
                self.alarm = Some(alarm);
                return Poll::Pending;
            }
        };
        if alarm.fired.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        *lock(&alarm.waker) = Some(cx.waker().clone());
        if alarm.fired.load(Ordering::SeqCst) {
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

// ---------------------------------------------------------------------------------------
// Handler
// ---------------------------------------------------------------------------------------

/// The payload of a panic a test asked for; the panic hook keeps it quiet.
#[derive(Debug)]
pub struct PlannedPanic;

fn planned_panic() -> ! {
    std::panic::panic_any(PlannedPanic)
}

/// Keeps planned panics out of the test output; every other panic is printed as usual.
fn quiet_planned_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !info.payload().is::<PlannedPanic>() {
                default(info);
            }
        }));
    });
}

/// Burns about `ns` nanoseconds of CPU.
fn spin(ns: u32) {
    let until = Instant::now() + Duration::from_nanos(u64::from(ns));
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

fn pending(step: impl Future<Output = ()> + Send + 'static) -> Outcome {
    Outcome::Pending(Box::pin(step))
}

/// A step that never completes but is always ready to be polled again: every poll wakes
/// its own waker before returning `Pending`.
struct YieldForever;

impl Future for YieldForever {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Runs the jobs of the test messages and records every start and end.
#[derive(Debug)]
pub struct TestHandler {
    recorder: Arc<Recorder>,
    gates: Arc<Gates>,
}

impl Handler for TestHandler {
    fn handle(&self, message: &Message) -> Outcome {
        self.recorder.start(message);
        let message = *message;
        let recorder = Arc::clone(&self.recorder);
        match message.job {
            Job::Noop => {}
            Job::Spin { ns } => spin(ns),
            Job::Wait { ns } => {
                return pending(async move {
                    Sleep::new(Duration::from_nanos(u64::from(ns))).await;
                    recorder.end(&message);
                });
            }
            Job::Retry { retries, backoff_ns, spin_ns } => {
                spin(spin_ns); // the first attempt
                if retries > 0 {
                    return pending(async move {
                        let mut backoff = Duration::from_nanos(u64::from(backoff_ns));
                        for _ in 0..retries {
                            Sleep::new(backoff).await;
                            spin(spin_ns);
                            backoff *= 2;
                        }
                        recorder.end(&message);
                    });
                }
            }
            Job::Panic => {
                recorder.fail(&message);
                planned_panic();
            }
            Job::Custom(code) => {
                let gate = code & !KIND_MASK;
                match code & KIND_MASK {
                    BLOCK_ON_GATE => self.gates.block(gate),
                    PEND_ON_GATE => {
                        let opened = self.gates.opened(gate);
                        return pending(async move {
                            opened.await;
                            recorder.end(&message);
                        });
                    }
                    PANIC_WHEN_POLLED => {
                        return pending(async move {
                            Sleep::new(Duration::from_millis(1)).await;
                            recorder.fail(&message);
                            planned_panic();
                        });
                    }
                    PANIC_ON_FIRST_POLL => {
                        return pending(async move {
                            recorder.fail(&message);
                            planned_panic();
                        });
                    }
                    YIELD_FOREVER => return pending(YieldForever),
                    _ => {} // a plain custom value: nothing to do
                }
            }
        }
        self.recorder.end(&message);
        Outcome::Done
    }
}

// ---------------------------------------------------------------------------------------
// Fixture
// ---------------------------------------------------------------------------------------

/// Runs `work` on a helper thread and waits at most `limit` for it, so that a call that
/// never returns fails the test (naming `what`) instead of hanging it.
#[track_caller]
pub fn within<T: Send + 'static>(
    what: &str,
    limit: Duration,
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let _ = sender.send(work());
    });
    match receiver.recv_timeout(limit) {
        Ok(value) => value,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what} did not return within {limit:?}"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what} panicked"),
    }
}

/// One strategy under test, its handler's recorder and gates, and what it accepted.
pub struct Fixture {
    pub id: StrategyId,
    pub config: StrategyConfig,
    pub recorder: Arc<Recorder>,
    pub gates: Arc<Gates>,
    /// `None` only while dropping.
    strategy: Option<Arc<dyn Strategy>>,
    accepted: Mutex<Vec<Message>>,
    rejected: Mutex<Vec<Message>>,
    watch: Arc<SubmitWatch>,
    /// Dropped with the fixture, which stops its submit watchdog.
    _stop_watchdog: mpsc::Sender<()>,
}

/// Turns a `submit` that blocks forever (a window whose credits leaked) into a failure
/// instead of a hung test: when submissions are under way and none has returned for
/// [`PATIENCE`], the watchdog closes admission, which wakes the blocked `submit` with
/// `SubmitError::Closed`, and [`Fixture::try_submit`] reports the stall.
#[derive(Debug, Default)]
struct SubmitWatch {
    begun: AtomicU64,
    returned: AtomicU64,
    /// Set when the watchdog closed admission.
    stalled: AtomicBool,
}

impl SubmitWatch {
    fn spawn_watchdog(self: &Arc<Self>, strategy: Weak<dyn Strategy>, stop: mpsc::Receiver<()>) {
        let watch = Arc::clone(self);
        thread::spawn(move || {
            let mut last_returned = 0;
            let mut progress_at = Instant::now();
            while let Err(mpsc::RecvTimeoutError::Timeout) =
                stop.recv_timeout(Duration::from_millis(100))
            {
                let begun = watch.begun.load(Ordering::SeqCst);
                let returned = watch.returned.load(Ordering::SeqCst);
                if returned != last_returned || begun == returned {
                    last_returned = returned;
                    progress_at = Instant::now();
                } else if progress_at.elapsed() >= PATIENCE {
                    watch.stalled.store(true, Ordering::SeqCst);
                    if let Some(strategy) = strategy.upgrade() {
                        // `close` itself may never return: leave it on its own thread.
                        thread::spawn(move || strategy.close());
                    }
                    return;
                }
            }
        });
    }
}

impl fmt::Debug for Fixture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fixture")
            .field("id", &self.id)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Fixture {
    /// Builds `id` with `config` and a [`TestHandler`].
    #[track_caller]
    pub fn new(id: StrategyId, config: StrategyConfig) -> Self {
        quiet_planned_panics();
        let recorder = Arc::new(Recorder::default());
        let gates = Arc::new(Gates::default());
        let handler =
            Arc::new(TestHandler { recorder: Arc::clone(&recorder), gates: Arc::clone(&gates) });
        let strategy = id
            .build(config, handler)
            .unwrap_or_else(|error| panic!("{id}: cannot build with {config:?}: {error}"));
        assert_eq!(strategy.id(), id, "built the wrong strategy");
        let strategy: Arc<dyn Strategy> = Arc::from(strategy);
        let watch = Arc::new(SubmitWatch::default());
        let (stop_watchdog, stop) = mpsc::channel();
        watch.spawn_watchdog(Arc::downgrade(&strategy), stop);
        Self {
            id,
            config,
            recorder,
            gates,
            strategy: Some(strategy),
            accepted: Mutex::new(Vec::new()),
            rejected: Mutex::new(Vec::new()),
            watch,
            _stop_watchdog: stop_watchdog,
        }
    }

    /// The strategy under test.
    pub fn strategy(&self) -> &dyn Strategy {
        &**self.shared_ref()
    }

    fn shared_ref(&self) -> &Arc<dyn Strategy> {
        self.strategy.as_ref().expect("the strategy lives until the fixture is dropped")
    }

    /// A handle to the strategy for another thread.
    pub fn shared(&self) -> Arc<dyn Strategy> {
        Arc::clone(self.shared_ref())
    }

    /// Submits `message`, which must be accepted.
    #[track_caller]
    pub fn submit(&self, message: Message) {
        if let Err(error) = self.try_submit(message) {
            panic!("{}: an open strategy refused a message: {error}", self.id);
        }
    }

    /// Submits every message, each of which must be accepted.
    #[track_caller]
    pub fn submit_all(&self, messages: impl IntoIterator<Item = Message>) {
        for message in messages {
            self.submit(message);
        }
    }

    /// Submits `message` and remembers whether it was accepted or handed back; a handed
    /// back message must be the one submitted.
    #[track_caller]
    pub fn try_submit(&self, message: Message) -> Result<(), SubmitError> {
        self.watch.begun.fetch_add(1, Ordering::SeqCst);
        let result = self.strategy().submit(message);
        self.watch.returned.fetch_add(1, Ordering::SeqCst);
        if result.is_err() && self.watch.stalled.load(Ordering::SeqCst) {
            panic!(
                "{}: submit made no progress for {PATIENCE:?} (window credits lost?); \
                 the watchdog closed admission to end the wait",
                self.id
            );
        }
        match result {
            Ok(()) => lock(&self.accepted).push(message),
            Err(error) => {
                assert_eq!(
                    error.into_message(),
                    message,
                    "{}: handed back another message",
                    self.id
                );
                lock(&self.rejected).push(message);
            }
        }
        result
    }

    /// The messages `submit` accepted so far.
    pub fn accepted(&self) -> Vec<Message> {
        lock(&self.accepted).clone()
    }

    /// The messages `submit` handed back so far.
    pub fn rejected(&self) -> Vec<Message> {
        lock(&self.rejected).clone()
    }

    /// `drain`, which must return within [`PATIENCE`].
    #[track_caller]
    pub fn drain(&self) {
        let strategy = self.shared();
        within(&format!("{}: drain", self.id), PATIENCE, move || strategy.drain());
    }

    /// `close`, which must return within [`PATIENCE`].
    #[track_caller]
    pub fn close(&self) {
        let strategy = self.shared();
        within(&format!("{}: close", self.id), PATIENCE, move || strategy.close());
    }

    /// `force_close`, which must return within [`PATIENCE`].
    #[track_caller]
    pub fn force_close(&self) -> ForcedClose {
        let strategy = self.shared();
        within(&format!("{}: force_close", self.id), PATIENCE, move || strategy.force_close())
    }

    /// Waits until `ready` holds; fails the test, naming `what`, after [`PATIENCE`].
    #[track_caller]
    pub fn wait_until(&self, what: &str, ready: impl Fn(&Log) -> bool) {
        if !self.recorder.wait_until(PATIENCE, ready) {
            let (started, ended) = self.recorder.with_log(|log| (log.started(), log.ended()));
            panic!(
                "{}: timed out after {PATIENCE:?} waiting for {what} ({started} started, {ended} ended)",
                self.id
            );
        }
    }

    /// Waits until `count` messages have ended.
    #[track_caller]
    pub fn wait_ended(&self, count: usize) {
        self.wait_until(&format!("{count} messages to end"), |log| log.ended() >= count);
    }

    /// Waits until `count` messages have started.
    #[track_caller]
    pub fn wait_started(&self, count: usize) {
        self.wait_until(&format!("{count} messages to start"), |log| log.started() >= count);
    }

    /// What ran, against what was accepted and handed back.
    pub fn report(&self) -> Report {
        self.recorder.report(&self.accepted(), &self.rejected())
    }

    /// Drains, then checks that every accepted message ran once, in per-key order.
    #[track_caller]
    pub fn assert_ordered(&self, context: &str) {
        self.drain();
        self.report().assert_ordered(&format!("{}: {context}", self.id));
    }

    /// Drains, then checks that every accepted message ran exactly once (order aside).
    #[track_caller]
    pub fn assert_complete(&self, context: &str) {
        self.drain();
        self.report().assert_complete(&format!("{}: {context}", self.id));
    }

    /// Checks, without draining, order for ordered strategies and exactly-once for all.
    #[track_caller]
    pub fn check_contract(&self, context: &str) {
        let report = self.report();
        let context = format!("{}: {context}", self.id);
        if self.id.is_ordered() {
            report.assert_ordered(&context);
        } else {
            report.assert_complete(&context);
        }
    }

    /// Drains, then checks order for ordered strategies and exactly-once for all.
    #[track_caller]
    pub fn assert_contract(&self, context: &str) {
        self.drain();
        self.check_contract(context);
    }

    /// Where every submitted message went so far (see [`Ledger`]).
    pub fn ledger(&self) -> Ledger {
        let (accepted, rejected) = (self.accepted(), self.rejected());
        let report = self.recorder.report(&accepted, &rejected);
        let (ended, handler_failures) =
            self.recorder.with_log(|log| (log.ended() as u64, log.failed() as u64));
        let stats = self.strategy().stats();
        Ledger {
            submitted: (accepted.len() + rejected.len()) as u64,
            handed_back: rejected.len() as u64,
            completed: ended.saturating_sub(handler_failures),
            handler_failures,
            never_started: report.lost as u64,
            never_ended: report.unfinished as u64,
            failed: stats.failed,
            discarded: stats.discarded,
            abandoned: stats.abandoned,
            report,
        }
    }

    /// Asserts that the strategy's per-key mailboxes are all retired: `Some(0)` for the
    /// per-key mailbox strategies, `None` (no mailboxes) for the others. Exact as soon as
    /// `drain`, `close` or `force_close` returns: a runner retires an emptied mailbox before
    /// it returns the window credits those calls wait for.
    #[track_caller]
    pub fn assert_mailboxes_retired(&self, context: &str) {
        let expected = PER_KEY_MAILBOXES.contains(&self.id).then_some(0);
        let live = self.strategy().stats().live_mailboxes;
        assert_eq!(live, expected, "{}: {context}: live mailboxes", self.id);
    }

    /// The threads handlers ran on.
    pub fn handler_threads(&self) -> HashSet<ThreadId> {
        self.recorder.with_log(Log::threads)
    }

    /// Submits `messages` from a helper thread (the window may block it) while `observe`
    /// runs on this one, then opens every gate so the submitter can finish, also when
    /// `observe` panics. `observe` is given the number of messages submitted so far.
    pub fn observe_while_submitting<T>(
        &self,
        messages: Vec<Message>,
        observe: impl FnOnce(&AtomicUsize) -> T,
    ) -> T {
        struct OpenOnDrop<'a>(&'a Gates);
        impl Drop for OpenOnDrop<'_> {
            fn drop(&mut self) {
                self.0.open_all();
            }
        }
        let submitted = AtomicUsize::new(0);
        thread::scope(|scope| {
            let _release = OpenOnDrop(&self.gates);
            scope.spawn(|| {
                for message in messages {
                    self.submit(message);
                    submitted.fetch_add(1, Ordering::SeqCst);
                }
            });
            observe(&submitted)
        })
    }
}

impl Drop for Fixture {
    /// Opens every gate so nothing stays blocked, then drops the strategy (a forced close
    /// if it is still open) on a helper thread: after a failure that thread is left alone,
    /// otherwise it must finish within [`PATIENCE`].
    fn drop(&mut self) {
        self.gates.open_all();
        let Some(strategy) = self.strategy.take() else { return };
        if thread::panicking() {
            thread::spawn(move || drop(strategy));
        } else {
            within(&format!("{}: dropping the strategy", self.id), PATIENCE, move || {
                drop(strategy)
            });
        }
    }
}

/// Where the submitted messages went, counted twice: message by message from what the
/// handler recorded, and by the strategy's counters. Nothing is lost silently when both
/// agree and every submitted message is in exactly one column (see
/// [`Ledger::assert_balanced`]).
#[derive(Debug)]
pub struct Ledger {
    /// Every `submit` call, accepted or not.
    pub submitted: u64,
    /// Submissions refused with `SubmitError::Closed` (the message handed back).
    pub handed_back: u64,
    /// Accepted messages that ran to the end without panicking.
    pub completed: u64,
    /// Accepted messages whose handler or step panicked, as the handler recorded them.
    pub handler_failures: u64,
    /// Accepted messages that never started (the recorder's `lost`).
    pub never_started: u64,
    /// Accepted messages that started and never ended (the recorder's `unfinished`).
    pub never_ended: u64,
    /// `Stats::failed`.
    pub failed: u64,
    /// `Stats::discarded`.
    pub discarded: u64,
    /// `Stats::abandoned`.
    pub abandoned: u64,
    /// The recorder's full report (order, duplicates, strays).
    pub report: Report,
}

impl Ledger {
    /// The counters agree with what ran: `failed` = handler failures, `discarded` = never
    /// started, `abandoned` = started and never ended; nothing ran twice, nothing handed
    /// back ran; and completed + failed + discarded + abandoned + handed back = submitted.
    #[track_caller]
    pub fn assert_balanced(&self, context: &str) {
        let report = &self.report;
        let extra = report.duplicated + report.ran_rejected + report.unexpected + report.stray_ends;
        assert_eq!(extra, 0, "{context}: ran twice, after a hand-back or unasked: {report}");
        assert_eq!(self.failed, self.handler_failures, "{context}: failed vs panics that ran");
        assert_eq!(self.discarded, self.never_started, "{context}: discarded vs never started");
        assert_eq!(self.abandoned, self.never_ended, "{context}: abandoned vs never ended");
        let accounted =
            self.completed + self.failed + self.discarded + self.abandoned + self.handed_back;
        assert_eq!(accounted, self.submitted, "{context}: unaccounted messages: {self:?}");
    }
}

/// Locks `mutex`, ignoring poisoning (a failed test may have panicked while holding it).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
