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

use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strategies::{Design, Job, Key, Message, Outcome, Strategy, StrategyConfig, StrategyId};

use super::external;
use super::handler::{AggregateState, BenchHandler};
use super::histograms::Histograms;
use super::interference::Probe;
pub use super::measurement::{
    breakdown_messages, CountedEvents, Measurement, Repetitions, RunError, Sample, ServiceTimes,
    BREAKDOWN_MESSAGES,
};
use super::measurement::{recorder_for, warmup_messages};
use super::recorder::{Clock, Recorder};
use super::saga::SagaChain;
pub use super::send::Role;
use super::send::{submit_closed, submit_driven, submit_paced, DrivenOutcome, Halt};
use super::system::{StrategyThreads, ThreadSampler, Usage};
use super::timer::Timer;

use crate::watch::Watch;
use crate::workload::{Arrivals, Workload};

/// How long a closed strategy's threads get to disappear from the process.
const THREAD_EXIT_WAIT_MS: u64 = 2_000;
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
    let measured = match external::find(strategy) {
        Some(external) => external::measure(&external, workload, config, plan, watch),
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
