//! The runner: offers one workload to one strategy, repeatedly, and collects raw samples.
//! It times; it does not format (metrics and reports do that from its output).
//!
//! Per (workload, strategy) cell:
//! 1. build a recorder and the strategy (its threads start; the thread baseline is taken
//!    before, so harness threads are excluded from the observed count);
//! 2. warm up on a prefix of the workload (closed loop), drain, forget it;
//! 3. `repeat` measured runs, each fully drained; closed loop submits as fast as the window
//!    admits, paced (open loop) submits each message at its due time and never skips a
//!    late one; latency is measured from the intended time either way;
//! 4. close the strategy and read its reported thread count.
//!
//! A cell measured under a [`Watch`] ([`measure_watched`]) counts every message that ends
//! in it, enrols its strategy, and stops as soon as the watch is cancelled: the producers
//! and the completion-driven driver check it between messages and while they wait, and the
//! cancel's forced close fails a blocked `submit` and ends a `drain`. The cell then returns
//! [`RunError::Cancelled`].
//!
//! Two calibrations of a whole suite run here too: the recorder's own cost per message
//! ([`recorder_overhead_ns`]) and the saturation rate that `open-loop` loads are fractions
//! of ([`saturation_per_s`]).

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use strategies::{
    Design, Events, Job, Key, Message, Outcome, Strategy, StrategyConfig, StrategyId, WindowScope,
};

use super::handler::{AggregateState, BenchHandler};
use super::histograms::Histograms;
use super::interference::Probe;
use super::recorder::{Clock, Recorder};
use super::saga::SagaChain;
use super::system::{StrategyThreads, ThreadSampler, Usage};
use super::timer::Timer;

use crate::results::{Correctness, Interference};
use crate::watch::Watch;
use crate::workload::{Arrivals, Driven, HotChain, Workload};

/// Warm-up: this fraction of the workload, at most `WARMUP_MAX_MESSAGES`.
const WARMUP_FRACTION: usize = 10;
const WARMUP_MAX_MESSAGES: usize = 10_000;
/// A paced producer sleeps when its next message is due further ahead than this, and
/// spins (yielding) closer in.
const PACE_SLEEP_THRESHOLD_NS: u64 = 1_000_000;
/// How long a closed strategy's threads get to disappear from the process.
const THREAD_EXIT_WAIT_MS: u64 = 2_000;
/// The first paced message is due this long after the run starts.
pub(crate) const PACE_LEAD_NS: u64 = 200_000;
/// The longest a producer or the driver sleeps or waits without looking at its watch.
const WATCH_POLL: Duration = Duration::from_millis(50);

/// Messages of the no-op runs that measure the recorder's own cost.
const OVERHEAD_MESSAGES: u64 = 200_000;
/// Runs of each no-op measurement; the fastest counts.
const OVERHEAD_RUNS: usize = 3;

/// Shared instruments for every run of a suite.
#[derive(Debug)]
pub struct Instruments {
    /// The timer that completes every pending step.
    pub timer: Timer,
    /// Samples the process's thread count.
    pub sampler: ThreadSampler,
}

impl Instruments {
    /// Starts the timer (one thread) and the thread sampler.
    pub fn start() -> Self {
        Self::with_timer_threads(super::timer::DEFAULT_TIMER_THREADS)
    }

    /// Starts a timer of `threads` threads and the thread sampler.
    pub fn with_timer_threads(threads: usize) -> Self {
        Self { timer: Timer::with_threads(threads), sampler: ThreadSampler::start() }
    }
}

/// The raw outcome of one measured run.
#[derive(Clone, Debug)]
pub struct Sample {
    /// From just before the first send (paced: the run's origin, a lead before the first
    /// message is due) to the end of the drain.
    pub elapsed_s: f64,
    /// From the same start to the last send (paced: how well the schedule was kept).
    pub send_s: f64,
    /// Process usage during the run (every thread of the process).
    pub usage: Usage,
    /// CPU seconds of the producer (the thread that submits, then drains) during the run.
    pub producer_cpu_s: f64,
    /// CPU seconds of the strategy's own threads during the run (every thread started
    /// since just before it was built and alive at the run's end); `None` where per-thread
    /// CPU time cannot be read.
    pub strategy_cpu_s: Option<f64>,
    /// Correctness counts of this run.
    pub correctness: Correctness,
    /// Peak OS threads added by the strategy during this run.
    pub threads_observed: usize,
    /// Latency, head-of-line and bystander histograms of this run.
    pub histograms: Histograms,
    /// How long the messages ran, start to end, as recorded.
    pub service: ServiceTimes,
    /// The timer's lateness during the run: deadline to waker call, per wake-up, ns.
    pub timer_lateness: Histogram<u64>,
    /// Completion-driven runs: the measured senders' messages that were handled.
    pub measured_completed: Option<u64>,
    /// What the rest of the machine did during the run.
    pub interference: Interference,
    /// An external design's: the collections its driver's runtime reported for the run.
    pub driver_gc: Option<crate::results::DriverGc>,
}

/// Start-to-end times of a run's messages, as the recorder saw them: for handlers that
/// only compute or block, the actual time each held a thread (a sleep that overshoots
/// included).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceTimes {
    /// The sum over every message, in nanoseconds.
    pub total_ns: u64,
    /// The largest sum over the messages of one key, in nanoseconds.
    pub longest_key_ns: u64,
}

impl ServiceTimes {
    /// The service times of every finished message of `recorder`.
    pub fn from_recorder(recorder: &Recorder) -> Self {
        let mut times = Self::default();
        recorder.for_each_key(|_, timings| {
            let key: u64 =
                timings.map(|timing| timing.end_ns.saturating_sub(timing.start_ns)).sum();
            times.total_ns += key;
            times.longest_key_ns = times.longest_key_ns.max(key);
        });
        times
    }
}

/// Everything measured for one (workload, strategy) cell.
#[derive(Clone, Debug)]
pub struct Measurement {
    /// The measured runs.
    pub samples: Vec<Sample>,
    /// Threads the strategy says it started.
    pub threads_reported: usize,
    /// The most messages in flight at once in one window (warm-up included).
    pub peak_in_flight: usize,
    /// Which messages shared a window.
    pub window_scope: WindowScope,
    /// Windows the strategy opened.
    pub windows: usize,
    /// Threads that submitted (1 unless `--producers` said more and the workload is not
    /// completion-driven).
    pub producers: usize,
    /// What the strategy's machinery did in one more, untimed, repetition; `None` when
    /// not counted (the strategy counts nothing, or counting was not asked for).
    pub events: Option<CountedEvents>,
}

/// The events of one counted repetition and the messages it sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CountedEvents {
    /// The strategy's counts.
    pub events: Events,
    /// Messages submitted in that repetition.
    pub messages: u64,
    /// Its send phase: first submission to the last one returning (the producers can be
    /// blocked on the window only then).
    pub elapsed_ns: u64,
    /// Threads that submitted.
    pub producers: usize,
}

/// Messages the counted repetition of a cell sends at most (a prefix of its workload).
pub const BREAKDOWN_MESSAGES: usize = 10_000;

/// Messages the counted repetition of a workload of `messages` sends: a quarter of them,
/// at least 500 (all of a smaller one), at most [`BREAKDOWN_MESSAGES`], so that counting
/// costs a small share of a cell whatever its size.
pub fn breakdown_messages(messages: usize) -> usize {
    (messages / 4).clamp(messages.min(500), BREAKDOWN_MESSAGES)
}

/// How a cell is measured: timed repetitions, whether a counted one follows, and how many
/// threads submit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repetitions {
    /// Timed repetitions.
    pub repeat: usize,
    /// One more, untimed, repetition that counts the strategy's events.
    pub count_events: bool,
    /// Producer threads, keys partitioned among them.
    pub producers: usize,
}

impl Repetitions {
    /// `repeat` timed repetitions from one producer, nothing counted.
    pub fn timed(repeat: usize) -> Self {
        Self { repeat, count_events: false, producers: 1 }
    }
}

/// What one sending of the workload did.
struct Sent {
    /// When the last message was sent.
    last_ns: u64,
    /// A completion-driven workload: what its senders did.
    driven: Option<DrivenOutcome>,
    /// CPU seconds of the producer threads other than the calling one.
    helpers_cpu_s: f64,
}

/// Who sends a workload: the calling thread alone, or it and `partitions.len() - 1` more
/// threads, each sending, in workload order, the messages of the keys its partition owns
/// (a key has one producer, so per-key order is kept). A completion-driven workload always
/// has its one driver.
struct Senders {
    partitions: Vec<Vec<Message>>,
    /// The strategy sent to, which an error names.
    strategy: Design,
}

impl Senders {
    /// The senders of `messages` (a workload's, or the counted prefix of them).
    fn new(messages: &[Message], driven: bool, producers: usize, strategy: Design) -> Self {
        if producers <= 1 || driven {
            return Self { partitions: Vec::new(), strategy };
        }
        let mut partitions = vec![Vec::new(); producers];
        for message in messages {
            let key = message.key;
            let spread = key.aggregate_id ^ u64::from(key.aggregate_type).rotate_left(32);
            partitions[(spread % producers as u64) as usize].push(*message);
        }
        Self { partitions, strategy }
    }

    /// Threads started besides the caller's.
    fn helpers(&self) -> usize {
        self.partitions.len().saturating_sub(1)
    }

    /// Sends `messages` of `cell`'s workload once by its arrival mode, from `started` (the
    /// clock's reading just before); a completion-driven workload runs its plan instead.
    fn send(
        &self,
        cell: &CellRun<'_>,
        messages: &[Message],
        started: u64,
    ) -> Result<Sent, RunError> {
        let strategy = self.strategy;
        let (executor, workload, clock, watch) =
            (cell.executor, cell.workload, cell.clock, cell.watch);
        if let Some(plan) = &workload.driven {
            let outcome = submit_driven(executor, workload, plan, clock, cell.completions, watch)
                .map_err(|error| error.into_run_error(strategy))?;
            let last_ns = outcome.last_send_ns;
            return Ok(Sent { last_ns, driven: Some(outcome), helpers_cpu_s: 0.0 });
        }
        let refused = |halt: Halt| halt.into_run_error(strategy);
        if let Some(chain) = cell.saga {
            chain.start(executor).map_err(|error| refused(Halt::Refused(error)))?;
        }
        let send = |messages: &[Message]| match workload.arrivals {
            Arrivals::Closed => submit_closed(executor, messages, clock, watch),
            Arrivals::Paced => submit_paced(executor, messages, clock, started, watch),
            Arrivals::Driven => unreachable!("a driven workload has its plan"),
        };
        if self.partitions.is_empty() {
            let last_ns = send(messages).map_err(refused)?;
            return Ok(Sent { last_ns, driven: None, helpers_cpu_s: 0.0 });
        }
        std::thread::scope(|scope| {
            let helpers: Vec<_> = self.partitions[1..]
                .iter()
                .map(|messages| scope.spawn(move || with_thread_cpu_s(|| send(messages))))
                .collect();
            let mut last_ns = send(&self.partitions[0]).map_err(refused)?;
            let mut helpers_cpu_s = 0.0;
            for helper in helpers {
                let (sent, cpu_s) = helper.join().expect("a producer thread panicked");
                last_ns = last_ns.max(sent.map_err(refused)?);
                helpers_cpu_s += cpu_s;
            }
            Ok(Sent { last_ns, driven: None, helpers_cpu_s })
        })
    }
}

/// Runs `f` and measures the calling thread's CPU seconds while it ran.
fn with_thread_cpu_s<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let before = Usage::thread_now();
    let result = f();
    (result, Usage::thread_now().since(&before).cpu_s)
}

/// Why a cell could not be measured.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The strategy rejected the settings.
    #[error("cannot build `{strategy}`")]
    Build {
        /// The strategy.
        strategy: Design,
        /// Why.
        source: strategies::BuildError,
    },
    /// The strategy refused a message while open.
    #[error("`{strategy}` refused a message while open")]
    Refused {
        /// The strategy.
        strategy: Design,
        /// Why.
        source: strategies::SubmitError,
    },
    /// A completion-driven run heard no answer to any measured sender's command for its
    /// watch's stall wait ([`Watch::stall`]) while one was in flight.
    #[error("`{strategy}` handled no measured command for {waited:?} while one was in flight")]
    Stalled {
        /// The strategy.
        strategy: Design,
        /// How long the driver waited.
        waited: Duration,
    },
    /// The cell's watch was cancelled (by the watchdog that supervises it): it stopped
    /// before its end, and measured nothing that counts.
    #[error("`{strategy}`'s cell was cancelled")]
    Cancelled {
        /// The strategy.
        strategy: Design,
    },
    /// An external design's driver failed the cell: it died, hung, or wrote what cannot be
    /// true. The reason carries its last words.
    #[error("`{strategy}`: {reason}")]
    External {
        /// The strategy.
        strategy: Design,
        /// What went wrong, with the driver's exit status and last words.
        reason: String,
    },
}

/// Why a producer stopped before its last message.
enum Halt {
    /// The strategy refused a message.
    Refused(strategies::SubmitError),
    /// The cell's watch was cancelled.
    Cancelled,
}

impl Halt {
    fn into_run_error(self, strategy: Design) -> RunError {
        match self {
            Self::Refused(source) => RunError::Refused { strategy, source },
            Self::Cancelled => RunError::Cancelled { strategy },
        }
    }
}

/// What a completion-driven repetition did.
struct DrivenOutcome {
    /// When the last message was sent.
    last_send_ns: u64,
    /// Messages sent per key (the rest of the workload was never sent).
    sent: Vec<u64>,
    /// Messages sent to the hot aggregate, which are not the workload's.
    hot_sent: u64,
    /// The measured senders' messages that were handled.
    measured_completed: u64,
}

/// Why a completion-driven repetition stopped early.
enum DrivenError {
    Refused(strategies::SubmitError),
    /// No measured command was answered for this long.
    Stalled(Duration),
    Cancelled,
}

impl DrivenError {
    fn into_run_error(self, strategy: Design) -> RunError {
        match self {
            Self::Refused(source) => RunError::Refused { strategy, source },
            Self::Stalled(waited) => RunError::Stalled { strategy, waited },
            Self::Cancelled => RunError::Cancelled { strategy },
        }
    }
}

/// The key of the next message that ends, waiting for it until a measured command was last
/// `answered` [`Watch::stall`] ago, and no longer once `watch` is cancelled.
fn next_end(
    completions: &mpsc::Receiver<u64>,
    watch: &Watch,
    answered: Instant,
) -> Result<u64, DrivenError> {
    let stall = watch.stall();
    let deadline = answered + stall;
    loop {
        if watch.is_cancelled() {
            return Err(DrivenError::Cancelled);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(DrivenError::Stalled(stall));
        }
        match completions.recv_timeout(left.min(WATCH_POLL)) {
            Ok(key) => return Ok(key),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Err(DrivenError::Stalled(stall)),
        }
    }
}

/// Who sends the next message of a key in a completion-driven run (here, and in the
/// reference driver, `src/bin/keyed-bench-driver.rs`).
#[derive(Clone, Copy, Debug)]
pub enum Role {
    /// Not driven (a message of it ending needs no answer).
    None,
    /// Background chain `usize`: send its next message.
    Chain(usize),
    /// The hot aggregate: send another, keeping its messages in flight.
    Hot,
    /// Measured sender `usize`: it may send its next command.
    Sender(usize),
}

/// Runs a completion-driven repetition: the chains and the hot aggregate keep their
/// messages in flight, and each sender sends a command, waits until it is handled, then
/// sends the next, until `plan.duration_ns` has passed; then the chains stop too. One
/// thread does it all, woken by `completions` (every message that ends tells it its key),
/// so a sender's next command goes out as soon as its previous one is handled. It gives up
/// once no sender's command was handled for the watch's stall wait ([`Watch::stall`]):
/// the chains' and the hot aggregate's messages may keep ending meanwhile.
fn submit_driven(
    executor: &dyn Strategy,
    workload: &Workload,
    plan: &Driven,
    clock: Clock,
    completions: &mpsc::Receiver<u64>,
    watch: &Watch,
) -> Result<DrivenOutcome, DrivenError> {
    while completions.try_recv().is_ok() {} // ends of the warm-up and of earlier runs
    let mut driver = Driver::new(executor, workload, plan, clock);
    let started = clock.now_ns();
    let deadline = started + plan.duration_ns;
    driver.start_chains()?;
    driver.start_hot()?;
    let mut active = driver.start_senders()?;
    let mut measured_completed = 0;
    let mut last_send_ns = clock.now_ns();
    let mut answered = Instant::now();
    while active > 0 {
        let key = next_end(completions, watch, answered)?;
        match driver.role_of(key) {
            Role::None => {}
            Role::Chain(index) => driver.continue_chain(index)?,
            Role::Hot => {
                if let Some(hot) = &plan.hot {
                    driver.send_hot(hot)?;
                }
            }
            Role::Sender(index) => {
                measured_completed += 1;
                answered = Instant::now();
                if driver.has_command(index) && clock.now_ns() < deadline {
                    driver.send_command(index)?;
                    last_send_ns = clock.now_ns();
                } else {
                    active -= 1;
                }
            }
        }
    }
    Ok(DrivenOutcome {
        last_send_ns,
        sent: driver.sent,
        hot_sent: driver.hot_seq,
        measured_completed,
    })
}

/// The senders of a completion-driven repetition, as its one thread runs them: who sends
/// each key's next message, and how far each chain, measured sender and the hot aggregate
/// got.
struct Driver<'a> {
    executor: &'a dyn Strategy,
    messages: &'a [Message],
    plan: &'a Driven,
    clock: Clock,
    /// Messages sent per key (the rest of the workload was never sent).
    sent: Vec<u64>,
    /// Per key: who sends the next message when one of its messages ends.
    roles: Vec<Role>,
    /// Per chain: the index of its next message in `messages`.
    next: Vec<usize>,
    /// Per measured sender: the index of its next command in `messages`.
    next_command: Vec<usize>,
    /// The hot aggregate's next sequence number.
    hot_seq: u64,
}

impl<'a> Driver<'a> {
    fn new(
        executor: &'a dyn Strategy,
        workload: &'a Workload,
        plan: &'a Driven,
        clock: Clock,
    ) -> Self {
        Self {
            executor,
            messages: &workload.messages,
            plan,
            clock,
            sent: vec![0; workload.keys],
            roles: vec![Role::None; workload.keys],
            next: plan.chains.iter().map(|chain| chain.start).collect(),
            next_command: plan.senders.iter().map(|sender| sender.start).collect(),
            hot_seq: 0,
        }
    }

    /// Sends `messages[index]`, intended now.
    #[inline]
    fn send(&mut self, index: usize) -> Result<(), DrivenError> {
        let message = self.messages[index];
        self.sent[message.key.aggregate_id as usize] += 1;
        self.executor
            .submit(Message { intended_ns: self.clock.now_ns(), ..message })
            .map_err(DrivenError::Refused)
    }

    /// Sends the hot aggregate's next message, intended now.
    #[inline]
    fn send_hot(&mut self, hot: &HotChain) -> Result<(), DrivenError> {
        let message = Message {
            key: Key::new(0, hot.key),
            seq: self.hot_seq,
            intended_ns: self.clock.now_ns(),
            job: hot.job,
        };
        self.hot_seq += 1;
        self.executor.submit(message).map_err(DrivenError::Refused)
    }

    /// Sends the first message of every chain that has one.
    fn start_chains(&mut self) -> Result<(), DrivenError> {
        let (plan, messages) = (self.plan, self.messages);
        for (index, chain) in plan.chains.iter().enumerate() {
            if chain.is_empty() {
                continue;
            }
            self.roles[messages[chain.start].key.aggregate_id as usize] = Role::Chain(index);
            self.send(chain.start)?;
            self.next[index] += 1;
        }
        Ok(())
    }

    /// Puts the hot aggregate's `outstanding` messages in flight, if there is one.
    fn start_hot(&mut self) -> Result<(), DrivenError> {
        let plan = self.plan;
        let Some(hot) = &plan.hot else {
            return Ok(());
        };
        self.roles[hot.key as usize] = Role::Hot;
        for _ in 0..hot.outstanding {
            self.send_hot(hot)?;
        }
        Ok(())
    }

    /// Sends every measured sender's first command; returns how many senders had one.
    fn start_senders(&mut self) -> Result<usize, DrivenError> {
        let (plan, messages) = (self.plan, self.messages);
        let mut active = 0;
        for (index, sender) in plan.senders.iter().enumerate() {
            for message in &messages[sender.clone()] {
                self.roles[message.key.aggregate_id as usize] = Role::Sender(index);
            }
            if !sender.is_empty() {
                self.send(sender.start)?;
                self.next_command[index] += 1;
                active += 1;
            }
        }
        Ok(active)
    }

    /// Who sends the next message now that one of `key`'s ended.
    #[inline]
    fn role_of(&self, key: u64) -> Role {
        self.roles.get(key as usize).copied().unwrap_or(Role::None)
    }

    /// Sends chain `index`'s next message, if it has one left.
    #[inline]
    fn continue_chain(&mut self, index: usize) -> Result<(), DrivenError> {
        if self.next[index] < self.plan.chains[index].end {
            self.send(self.next[index])?;
            self.next[index] += 1;
        }
        Ok(())
    }

    /// Whether measured sender `index` has a command left.
    #[inline]
    fn has_command(&self, index: usize) -> bool {
        self.next_command[index] < self.plan.senders[index].end
    }

    /// Sends measured sender `index`'s next command.
    #[inline]
    fn send_command(&mut self, index: usize) -> Result<(), DrivenError> {
        self.send(self.next_command[index])?;
        self.next_command[index] += 1;
        Ok(())
    }
}

/// Measures `strategy` on `workload`: one warm-up, then `repeat` runs, then, with
/// `count_events`, one untimed run that counts the strategy's events (the breakdown).
pub fn measure(
    workload: &Workload,
    strategy: Design,
    config: StrategyConfig,
    plan: Repetitions,
    instruments: &Instruments,
) -> Result<Measurement, RunError> {
    measure_watched(workload, strategy, config, plan, instruments, &Watch::default())
}

/// [`measure`] under `watch`: every message that ends counts in it, and a cancel stops the
/// cell with [`RunError::Cancelled`] (see the module docs).
pub fn measure_watched(
    workload: &Workload,
    strategy: Design,
    config: StrategyConfig,
    plan: Repetitions,
    instruments: &Instruments,
    watch: &Watch,
) -> Result<Measurement, RunError> {
    let measured = match super::external::find(strategy) {
        Some(external) => super::external::measure(&external, workload, config, plan, watch),
        None => measure_cell(workload, strategy, config, plan, instruments, watch),
    };
    if watch.is_cancelled() {
        // Whatever it ended with, the watchdog stopped it: nothing of it counts.
        return Err(RunError::Cancelled { strategy });
    }
    measured
}

/// Messages a cell whose every repetition runs to its end finishes: the warm-up, `repeat`
/// times the workload and the counted prefix; none for a completion-driven one (its senders
/// send for a time).
fn expected_messages(workload: &Workload, plan: Repetitions) -> u64 {
    if workload.driven.is_some() {
        return 0;
    }
    let messages = workload.messages.len();
    let counted = if plan.count_events { breakdown_messages(messages) } else { 0 };
    (warmup_messages(messages) + plan.repeat * messages + counted) as u64
}

/// Messages of the warm-up of a workload of `messages`.
pub(crate) fn warmup_messages(messages: usize) -> usize {
    (messages / WARMUP_FRACTION).min(WARMUP_MAX_MESSAGES)
}

/// [`measure_watched`]'s steps.
fn measure_cell(
    workload: &Workload,
    strategy: Design,
    config: StrategyConfig,
    plan: Repetitions,
    instruments: &Instruments,
    watch: &Watch,
) -> Result<Measurement, RunError> {
    let Repetitions { repeat, count_events, producers } = plan;
    let senders = Senders::new(&workload.messages, workload.driven.is_some(), producers, strategy);
    watch.expect(expected_messages(workload, plan));
    let clock = Clock::start();
    let recorder = Arc::new(recorder_for(workload, clock));
    let (handler, completions, saga) = handler_for(workload, &recorder, &instruments.timer, watch);
    let config = StrategyConfig {
        max_in_flight: workload.window.unwrap_or(config.max_in_flight),
        workers: workload.workers.unwrap_or(config.workers),
        ..config
    };

    instruments.sampler.reset();
    let baseline_threads = instruments.sampler.peak();
    let threads = StrategyThreads::before_start();
    let executor: Arc<dyn Strategy> = Arc::from(
        strategy.build(config, handler).map_err(|source| RunError::Build { strategy, source })?,
    );
    let _enrolled = watch.enrol(&executor).map_err(|_| RunError::Cancelled { strategy })?;
    if let Some(chain) = &saga {
        chain.bind(&executor);
    }
    let cell = CellRun {
        workload,
        strategy,
        executor: &*executor,
        recorder: &recorder,
        clock,
        completions: &completions,
        saga: saga.as_deref(),
        watch,
        threads,
    };
    cell.warm_up()?;
    let mut samples = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        samples.push(cell.timed_repetition(&senders, instruments, baseline_threads)?);
    }
    let events = match (count_events, workload.driven.is_some()) {
        (false, _) => None,
        (true, false) => cell.counted_repetition(producers)?,
        (true, true) => cell.counted_driven_repetition(&senders)?,
    };
    executor.close();
    let stats = executor.stats();
    let measurement = Measurement {
        samples,
        threads_reported: executor.threads_started(),
        peak_in_flight: stats.peak_in_flight,
        window_scope: stats.window_scope,
        windows: stats.windows,
        producers: senders.helpers() + 1,
        events,
    };
    drop(executor);
    wait_for_threads_to_exit(baseline_threads, watch);
    Ok(measurement)
}

/// The recorder of `workload`'s messages, its hot aggregate (if any) in the background.
pub(crate) fn recorder_for(workload: &Workload, clock: Clock) -> Recorder {
    let recorder = Recorder::new(&workload.messages, workload.keys, clock);
    let hot_keys: Vec<u64> = workload
        .driven
        .iter()
        .filter_map(|plan| plan.hot)
        .map(|hot| hot.key)
        .chain(workload.saga.map(|saga| saga.key))
        .collect();
    if hot_keys.is_empty() {
        recorder
    } else {
        recorder.with_background(&hot_keys)
    }
}

/// The handler of `workload`'s messages, recording into `recorder` and counting into
/// `watch`, and where a completion-driven workload hears every end (its senders wait for
/// them), and a saga workload's chain sends its next message from each of its completions.
fn handler_for(
    workload: &Workload,
    recorder: &Arc<Recorder>,
    timer: &Timer,
    watch: &Watch,
) -> (Arc<BenchHandler>, mpsc::Receiver<u64>, Option<Arc<SagaChain>>) {
    let mut handler =
        BenchHandler::new(Arc::clone(recorder), timer.clone()).with_watch(watch.clone());
    let (completed, completions) = mpsc::channel::<u64>();
    if workload.driven.is_some() {
        handler = handler.with_completions(Arc::new(move |key| {
            let _ = completed.send(key); // the driver is gone only once the run is over
        }));
    }
    let saga = workload.saga.map(|saga| SagaChain::new(saga, recorder.clock()));
    if let Some(chain) = &saga {
        let chain = Arc::clone(chain);
        handler = handler.with_completions(Arc::new(move |key| chain.completed(key)));
    }
    if workload.state_bytes > 0 {
        let state = AggregateState::new(workload.keys, workload.state_bytes);
        handler = handler.with_state(Arc::new(state));
    }
    (Arc::new(handler), completions, saga)
}

/// One (workload, strategy) cell being measured: the built strategy and what its warm-up,
/// timed and counted repetitions share.
struct CellRun<'a> {
    workload: &'a Workload,
    strategy: Design,
    executor: &'a dyn Strategy,
    recorder: &'a Recorder,
    clock: Clock,
    /// Where a completion-driven workload's driver hears every end.
    completions: &'a mpsc::Receiver<u64>,
    /// A saga workload's chain, started with each repetition's bystanders.
    saga: Option<&'a SagaChain>,
    /// What the cell's progress counts in, and what stops it.
    watch: &'a Watch,
    /// The strategy's own threads, whose CPU time each timed repetition reads.
    threads: StrategyThreads,
}

impl CellRun<'_> {
    /// Runs the dispatch path (threads, mailboxes, caches) on a prefix of the workload with
    /// no-op jobs, so a wait-heavy prefix does not cost as much as a measured run, drains,
    /// and forgets it.
    fn warm_up(&self) -> Result<(), RunError> {
        let messages = &self.workload.messages;
        let warmup: Vec<Message> = messages[..warmup_messages(messages.len())]
            .iter()
            .map(|message| Message { job: Job::Noop, ..*message })
            .collect();
        submit_closed(self.executor, &warmup, self.clock, self.watch)
            .map_err(|halt| halt.into_run_error(self.strategy))?;
        self.executor.drain();
        self.recorder.reset();
        Ok(())
    }

    /// One measured run: the whole workload sent by `senders` and drained, timed from just
    /// before the first send; `baseline_threads` were running before the strategy started.
    fn timed_repetition(
        &self,
        senders: &Senders,
        instruments: &Instruments,
        baseline_threads: usize,
    ) -> Result<Sample, RunError> {
        let (executor, recorder, clock) = (self.executor, self.recorder, self.clock);
        instruments.sampler.reset();
        let failed_before = executor.stats().failed;
        let probe = Probe::start();
        let usage_before = Usage::now();
        let strategy_before = self.threads.cpu();
        let producer_before = Usage::thread_now();
        instruments.timer.reset_lateness();
        let started = clock.now_ns();
        let messages = &self.workload.messages;
        let sent = senders.send(self, messages, started)?;
        executor.drain();
        let finished = clock.now_ns();
        let usage = Usage::now().since(&usage_before);
        let strategy_cpu = self.threads.cpu().zip(strategy_before);
        let interference = probe.receipt();
        let producer = Usage::thread_now().since(&producer_before);
        let (driven, sent, helpers_cpu_s) = (sent.driven, sent.last_ns, sent.helpers_cpu_s);
        let failed = executor.stats().failed - failed_before;
        let sample = Sample {
            elapsed_s: (finished - started) as f64 / 1e9,
            send_s: (sent - started) as f64 / 1e9,
            usage,
            producer_cpu_s: producer.cpu_s + helpers_cpu_s,
            strategy_cpu_s: strategy_cpu.map(|(after, before)| after.since(&before) as f64 / 1e9),
            correctness: match &driven {
                Some(outcome) => recorder.correctness_of_sent(failed, &outcome.sent),
                None => recorder.correctness(failed),
            },
            measured_completed: driven.as_ref().map(|outcome| outcome.measured_completed),
            // The extra producer threads live through the sends, when the peak is taken:
            // they are the harness's, not the strategy's.
            threads_observed: instruments
                .sampler
                .peak()
                .saturating_sub(baseline_threads + senders.helpers()),
            histograms: Histograms::from_recorder(recorder, &self.workload.troubled),
            service: ServiceTimes::from_recorder(recorder),
            timer_lateness: instruments.timer.lateness(),
            interference,
            driver_gc: None,
        };
        recorder.reset();
        self.watch.beat();
        Ok(sample)
    }

    /// The cost breakdown: one more repetition, counted and not timed, so that no timed
    /// figure carries the counters. It sends the first `breakdown_messages` of the workload
    /// (the same experiment, shorter) from `producers` threads. `None` when the strategy
    /// counts nothing.
    fn counted_repetition(&self, producers: usize) -> Result<Option<CountedEvents>, RunError> {
        let executor = self.executor;
        if !executor.count_events(true) {
            return Ok(None);
        }
        let messages = &self.workload.messages;
        let prefix = &messages[..breakdown_messages(messages.len())];
        let senders = Senders::new(prefix, false, producers, self.strategy);
        let started = self.clock.now_ns();
        let sent = senders.send(self, prefix, started)?;
        executor.drain();
        executor.count_events(false);
        let elapsed_ns = sent.last_ns.saturating_sub(started);
        self.recorder.reset();
        let messages = prefix.len() as u64;
        let events = executor.stats().events;
        Ok(Some(CountedEvents { events, messages, elapsed_ns, producers }))
    }

    /// The cost breakdown of a completion-driven cell: one more whole repetition, counted
    /// and not timed (a prefix of it would be another experiment: its senders answer
    /// completions for a time). Its one driver sends.
    fn counted_driven_repetition(
        &self,
        senders: &Senders,
    ) -> Result<Option<CountedEvents>, RunError> {
        let executor = self.executor;
        if !executor.count_events(true) {
            return Ok(None);
        }
        let started = self.clock.now_ns();
        let sent = senders.send(self, &self.workload.messages, started)?;
        executor.drain();
        executor.count_events(false);
        let elapsed_ns = sent.last_ns.saturating_sub(started);
        self.recorder.reset();
        self.watch.beat();
        // Every message the repetition sent: the workload's and the hot aggregate's.
        let messages =
            sent.driven.map_or(0, |outcome| outcome.sent.iter().sum::<u64>() + outcome.hot_sent);
        let events = executor.stats().events;
        Ok(Some(CountedEvents { events, messages, elapsed_ns, producers: 1 }))
    }
}

/// The recorder's cost per message: `inline` with a no-op handler, with and without it (and
/// the count of the cell's progress beside it).
pub fn recorder_overhead_ns(instruments: &Instruments) -> f64 {
    let messages: Vec<Message> = (0..OVERHEAD_MESSAGES)
        .map(|seq| Message {
            key: Key::new(0, seq % 64),
            seq: seq / 64,
            intended_ns: 0,
            job: Job::Noop,
        })
        .collect();
    let time_per_message = |executor: &dyn Strategy| {
        let started = Instant::now();
        for message in &messages {
            executor.submit(*message).expect("inline accepts while open");
        }
        started.elapsed().as_nanos() as f64 / messages.len() as f64
    };
    let config = StrategyConfig::with_workers(1);
    let bare = StrategyId::Inline
        .build(config, Arc::new(|_: &Message| Outcome::Done))
        .expect("valid settings");
    let recorder = Arc::new(Recorder::new(&messages, 64, Clock::start()));
    // Counting into a watch as every measured cell's handler does, so that the cost stated
    // is all the harness adds to a message.
    let handler = BenchHandler::new(Arc::clone(&recorder), instruments.timer.clone())
        .with_watch(Watch::default());
    let recorded = StrategyId::Inline.build(config, Arc::new(handler)).expect("valid settings");
    let mut best_bare = f64::INFINITY;
    let mut best_recorded = f64::INFINITY;
    for _ in 0..OVERHEAD_RUNS {
        best_bare = best_bare.min(time_per_message(&*bare));
        recorder.reset();
        best_recorded = best_recorded.min(time_per_message(&*recorded));
    }
    (best_recorded - best_bare).max(0.0)
}

/// Saturation throughput: the `inline` reference's rate on `workload` (one run), times the
/// `workers` that count (the caller decides how many can run beside the producer).
pub fn saturation_per_s(
    workload: &Workload,
    config: StrategyConfig,
    workers: usize,
    instruments: &Instruments,
) -> Result<f64, RunError> {
    let measurement =
        measure(workload, StrategyId::Inline.into(), config, Repetitions::timed(1), instruments)?;
    let elapsed = measurement.samples[0].elapsed_s;
    Ok(workload.messages.len() as f64 / elapsed * workers as f64)
}

/// Waits until the process is back to `baseline` threads (pools may let their threads
/// finish exiting after `close` returns), so the next cell's baseline is not inflated; a
/// bounded wait, which tells `watch` the cell is alive.
fn wait_for_threads_to_exit(baseline: usize, watch: &Watch) {
    let deadline = std::time::Instant::now() + Duration::from_millis(THREAD_EXIT_WAIT_MS);
    while super::system::thread_count().is_some_and(|count| count > baseline)
        && std::time::Instant::now() < deadline
        && !watch.is_cancelled()
    {
        watch.beat();
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// Submits as fast as the strategy admits; a message's intended time is when it was sent.
/// Returns when the last message was sent.
fn submit_closed(
    executor: &dyn Strategy,
    messages: &[Message],
    clock: Clock,
    watch: &Watch,
) -> Result<u64, Halt> {
    for message in messages {
        if watch.is_cancelled() {
            return Err(Halt::Cancelled);
        }
        let message = Message { intended_ns: clock.now_ns(), ..*message };
        executor.submit(message).map_err(Halt::Refused)?;
    }
    Ok(clock.now_ns())
}

/// Submits each message at `origin + lead + intended_ns`, late ones at once (never
/// skipped, never re-timed). Returns when the last message was sent.
fn submit_paced(
    executor: &dyn Strategy,
    messages: &[Message],
    clock: Clock,
    origin: u64,
    watch: &Watch,
) -> Result<u64, Halt> {
    let base = origin + PACE_LEAD_NS;
    for message in messages {
        let due = base + message.intended_ns;
        loop {
            if watch.is_cancelled() {
                return Err(Halt::Cancelled);
            }
            let now = clock.now_ns();
            if now >= due {
                break;
            }
            let ahead = due - now;
            if ahead > PACE_SLEEP_THRESHOLD_NS {
                let sleep = Duration::from_nanos(ahead - PACE_SLEEP_THRESHOLD_NS / 2);
                std::thread::sleep(sleep.min(WATCH_POLL));
            } else {
                std::thread::yield_now();
            }
        }
        executor.submit(Message { intended_ns: due, ..*message }).map_err(Halt::Refused)?;
    }
    Ok(clock.now_ns())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::ScenarioId;

    /// Far longer than a cancelled cell takes to return; past it, the cancel did not work.
    const DEADLINE: Duration = Duration::from_secs(120);

    #[test]
    fn a_cancelled_cell_stops_waiting_for_its_messages_and_says_so() {
        // One key's 50 messages, each waiting 4.3 s: 215 s to drain, unless cancelled.
        let messages = (0..50)
            .map(|seq| Message {
                key: Key::new(0, 0),
                seq,
                intended_ns: 0,
                job: Job::Wait { ns: u32::MAX },
            })
            .collect();
        let workload = Workload::of_messages(ScenarioId::Uniform, messages, 1);
        let watch = Watch::default();
        let (sent, result) = mpsc::channel();
        let cell = watch.clone();
        std::thread::spawn(move || {
            let instruments = Instruments::start();
            let strategy = StrategyId::KeyedMailbox.into();
            let config = StrategyConfig::with_workers(2);
            let plan = Repetitions::timed(1);
            let _ =
                sent.send(measure_watched(&workload, strategy, config, plan, &instruments, &cell));
        });
        // The warm-up's 5 messages (no-ops) end; the first waiting one never does.
        while watch.done() < 5 {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(watch.expected(), Some(55));
        watch.cancel();
        let result = result.recv_timeout(DEADLINE).expect("the cancelled cell returns");
        assert!(matches!(result, Err(RunError::Cancelled { .. })), "{result:?}");
        assert_eq!(watch.done(), 5, "no waiting message ended");
    }
}
