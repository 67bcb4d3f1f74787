//! What separates the criterion `dispatch` bench from a `keyed-bench run --scenario uniform
//! --spin-ns 0` cell: the same strategy timed with one factor of the run's experiment
//! changed at a time, starting from the bench's (docs/dispatch.md has the figures).
//!
//! ```text
//! cargo run --release --example dispatch_variants                      # wall clock, every variant
//! cargo run --release --example dispatch_variants -- --strategy group-by --workers 1 \
//!     --variants bench,recorder --rounds 1 --callgrind                   # under callgrind, below
//! ```
//!
//! A variant is `bench` or factors joined by `+`:
//! - `bench`: the criterion bench's cell: a no-op closure as the handler, key `index % keys`,
//!   messages submitted as they are, batches of 10,000 messages, each ending with a drain;
//! - `recorder`: the run's handler, `BenchHandler`, recording every start and end (two
//!   clock reads, the order and overlap checks, the message's slot) into a `Recorder`;
//! - `random`: the run's messages: `uniform`'s seeded draws (seed 42), keys uniformly at
//!   random, a `Spin { ns: 0 }` job each;
//! - `stamp`: the run's producer: every message's `intended_ns` read from the clock as it
//!   is sent (`submit_closed`);
//! - `400k`: the run's size: batches of 400,000 messages;
//! - `run`: all four;
//! - `spin0`: not a difference between the two (both run the reference's 20 us idle spin):
//!   an idle mailbox worker parks at once, as `--idle-spin-us 0` has it.
//!
//! Every variant is built once, warmed up with one untimed batch, then timed on `--rounds`
//! batches, the variants taking turns so that a disturbance of the machine spreads over
//! them all. Each line gives nanoseconds per message, medians over the rounds: the wall
//! clock (and its best round), the process's CPU and the CPU of the strategy's own threads
//! (`/proc/self/task/<tid>/schedstat`); then the events per message of one more, counted,
//! batch.
//!
//! `--callgrind`: under `valgrind --tool=callgrind --callgrind-out-file=F`, zeroes
//! callgrind's counts before each timed batch and dumps them after its drain (`F.2`, `F.3`,
//! ... in the order printed; `F.1` holds the set-up), so that each dump holds exactly the
//! instructions of one batch, in every thread: divide its `totals` by the batch's messages.
//! With `--separate-threads=yes` a dump holds the calling thread's (the producer's) alone.
//! Valgrind runs one thread at a time, so with one worker the counts are the work done,
//! not contention. `scripts/dispatch-callgrind.sh` runs both and prints the table.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

use harness::measure::handler::BenchHandler;
use harness::measure::recorder::{Clock, Recorder};
use harness::measure::system::{StrategyThreads, ThreadsCpu, Usage};
use harness::measure::timer::Timer;
use harness::workload::{ScenarioId, Sizes};
use strategies::{Job, Key, Message, Outcome, Strategy, StrategyConfig, StrategyId};

/// Keys of both experiments' 1,000-key cell.
const KEYS: usize = 1_000;
/// Messages per batch of the criterion bench.
const BENCH_MESSAGES: usize = 10_000;
/// Messages per repetition of the run.
const RUN_MESSAGES: usize = 400_000;
/// The run's default seed.
const SEED: u64 = 42;
/// The variants run when `--variants` is not given.
const DEFAULT_VARIANTS: &str = "bench,recorder,random,stamp,400k,random+stamp+400k,run";

/// One factor of the run's experiment that the bench's lacks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Factors {
    recorder: bool,
    random: bool,
    stamp: bool,
    big: bool,
    no_spin: bool,
}

impl Factors {
    fn parse(name: &str) -> Result<Self, String> {
        let mut factors = Self::default();
        for factor in name.split('+') {
            match factor {
                "bench" => {}
                "recorder" => factors.recorder = true,
                "random" => factors.random = true,
                "stamp" => factors.stamp = true,
                "400k" => factors.big = true,
                "spin0" => factors.no_spin = true,
                "run" => {
                    factors =
                        Self { recorder: true, random: true, stamp: true, big: true, ..factors }
                }
                other => {
                    return Err(format!(
                        "unknown factor `{other}`; valid: bench, recorder, random, stamp, 400k, run, spin0"
                    ))
                }
            }
        }
        Ok(factors)
    }

    fn messages(self) -> usize {
        if self.big {
            RUN_MESSAGES
        } else {
            BENCH_MESSAGES
        }
    }
}

/// The messages of one batch: round-robin keys, or the run's seeded uniform draws.
fn messages(factors: Factors) -> Vec<Message> {
    let count = factors.messages();
    if factors.random {
        let sizes = Sizes { messages: count, keys: vec![KEYS], spin_ns: 0, ..Sizes::standard() };
        let mut workloads = harness::workload::generate(ScenarioId::Uniform, &sizes, SEED, 1.0);
        return workloads.remove(0).messages;
    }
    (0..count as u64)
        .map(|index| Message {
            key: Key::new(0, index % KEYS as u64),
            seq: index / KEYS as u64,
            intended_ns: 0,
            job: Job::Noop,
        })
        .collect()
}

/// One variant of one strategy, built and warmed up.
struct Variant {
    name: String,
    factors: Factors,
    messages: Vec<Message>,
    recorder: Option<Arc<Recorder>>,
    strategy: Box<dyn Strategy>,
    /// The threads this variant's strategy started (not the other variants'); `None`
    /// where their CPU time cannot be read.
    threads: Option<Vec<libc::pid_t>>,
    clock: Clock,
    /// Per timed batch: wall, process CPU and strategy-thread CPU, ns per message.
    timings: Vec<[f64; 3]>,
}

impl Variant {
    fn build(name: &str, id: StrategyId, workers: usize, timer: &Timer) -> Result<Self, String> {
        let factors = Factors::parse(name)?;
        let messages = messages(factors);
        let clock = Clock::start();
        let idle_spin_us = if factors.no_spin { 0 } else { StrategyConfig::DEFAULT_IDLE_SPIN_US };
        let config = StrategyConfig { idle_spin_us, ..StrategyConfig::with_workers(workers) };
        let threads = StrategyThreads::before_start();
        let (strategy, recorder) = if factors.recorder {
            let recorder = Arc::new(Recorder::new(&messages, KEYS, clock));
            let handler = BenchHandler::new(Arc::clone(&recorder), timer.clone());
            (id.build(config, Arc::new(handler)), Some(recorder))
        } else {
            (id.build(config, Arc::new(|_: &Message| Outcome::Done)), None)
        };
        let strategy = strategy.map_err(|error| format!("cannot build {id}: {error}"))?;
        let mut variant = Self {
            name: format!("{id} workers={workers} {name}"),
            factors,
            messages,
            recorder,
            strategy,
            threads: None,
            clock,
            timings: Vec::new(),
        };
        variant.batch(); // warm-up
        variant.forget();
        // Taken now, before another variant starts its threads.
        variant.threads = threads.started();
        Ok(variant)
    }

    /// Sends the batch and drains, as the bench (messages as they are) or as the run's
    /// producer (each stamped with the clock); returns the wall-clock nanoseconds.
    #[inline(never)]
    fn batch(&self) -> f64 {
        let started = Instant::now();
        for message in &self.messages {
            let message = if self.factors.stamp {
                Message { intended_ns: self.clock.now_ns(), ..*message }
            } else {
                *message
            };
            self.strategy.submit(message).expect("an open strategy accepts");
        }
        self.strategy.drain();
        started.elapsed().as_nanos() as f64
    }

    /// Forgets what the recorder recorded, as between the run's repetitions: not timed.
    fn forget(&self) {
        if let Some(recorder) = &self.recorder {
            recorder.reset();
        }
    }

    fn timed_batch(&mut self, callgrind: bool) {
        if callgrind {
            callgrind::zero_stats();
        }
        let read = || self.threads.as_ref().map(|tids| ThreadsCpu::read(tids));
        let (usage, threads) = (Usage::now(), read());
        let wall_ns = self.batch();
        let cpu_s = Usage::now().since(&usage).cpu_s;
        let threads_ns = read().zip(threads).map(|(after, before)| after.since(&before));
        if callgrind {
            callgrind::dump_stats(&self.name);
        }
        self.forget();
        let per = self.messages.len() as f64;
        self.timings.push([
            wall_ns / per,
            cpu_s * 1e9 / per,
            threads_ns.map_or(f64::NAN, |ns| ns as f64 / per),
        ]);
    }

    /// Events per message of one counted batch: wake-ups, parks, activations.
    fn events(&self) -> String {
        if !self.strategy.count_events(true) {
            return "events n/a".into();
        }
        self.batch();
        self.forget();
        self.strategy.count_events(false);
        let events = self.strategy.stats().events;
        let per = |count: Option<u64>| {
            count.map_or("n/a".into(), |n| format!("{:.3}", n as f64 / self.messages.len() as f64))
        };
        format!(
            "wake-ups {} parks {} activations {} hops {}",
            per(events.wakeups),
            per(events.parks),
            per(events.activations),
            per(events.hops)
        )
    }

    fn report(&self) -> String {
        let sorted = |column: usize| {
            let mut values: Vec<f64> = self.timings.iter().map(|t| t[column]).collect();
            values.sort_by(f64::total_cmp);
            values
        };
        let median = |column: usize| sorted(column)[self.timings.len() / 2];
        format!(
            "{:<42} wall {:>6.0} (best {:>6.0})  cpu {:>6.0}  strategy threads {:>6.0} ns/msg  {}",
            self.name,
            median(0),
            sorted(0)[0],
            median(1),
            median(2),
            self.events()
        )
    }
}

#[path = "../benches/support/callgrind.rs"]
mod callgrind;

struct Args {
    strategies: Vec<StrategyId>,
    workers: Vec<usize>,
    variants: Vec<String>,
    rounds: usize,
    callgrind: bool,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        strategies: vec![StrategyId::KeyedMailbox, StrategyId::GroupBy],
        workers: vec![1, 2],
        variants: DEFAULT_VARIANTS.split(',').map(str::to_owned).collect(),
        rounds: 5,
        callgrind: false,
    };
    let mut given = std::env::args().skip(1);
    while let Some(flag) = given.next() {
        if flag == "--callgrind" {
            args.callgrind = true;
            continue;
        }
        let value = given.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let list = || value.split(',').map(str::to_owned).collect::<Vec<_>>();
        match flag.as_str() {
            "--strategy" => {
                args.strategies = list()
                    .iter()
                    .map(|id| id.parse().map_err(|error| format!("{error}")))
                    .collect::<Result<_, _>>()?;
            }
            "--workers" => {
                args.workers = list()
                    .iter()
                    .map(|n| n.parse().map_err(|_| format!("--workers: bad count `{n}`")))
                    .collect::<Result<_, _>>()?;
            }
            "--variants" => args.variants = list(),
            "--rounds" => {
                args.rounds = value.parse().map_err(|_| format!("--rounds: bad count `{value}`"))?;
            }
            other => {
                return Err(format!(
                    "unknown flag `{other}`; valid: --strategy, --workers, --variants, --rounds, --callgrind"
                ))
            }
        }
    }
    Ok(args)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let timer = Timer::start();
    let mut variants = Vec::new();
    for &workers in &args.workers {
        for &id in &args.strategies {
            for name in &args.variants {
                match Variant::build(name, id, workers, &timer) {
                    Ok(variant) => variants.push(variant),
                    Err(error) => {
                        eprintln!("error: {error}");
                        return ExitCode::from(2);
                    }
                }
            }
        }
    }
    if args.callgrind {
        // Everything before the first timed batch (generation, builds, warm-ups) goes to a
        // dump of its own, F.1.
        callgrind::dump_stats("set-up");
    }
    for _ in 0..args.rounds.max(1) {
        for variant in &mut variants {
            variant.timed_batch(args.callgrind);
        }
    }
    for variant in &variants {
        println!("{}", variant.report());
        variant.strategy.close();
    }
    ExitCode::SUCCESS
}
