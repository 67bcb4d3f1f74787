//! The reference driver of the external-design protocol (docs/external.md): runs one of
//! keyed-bench's own strategies (`keyed-mailbox` unless `--strategy` says otherwise) in its
//! own process, so that `keyed-bench run --external` can be checked against the same design
//! measured in process. Every arrival kind of the protocol is here: closed and paced (from
//! `producers` threads), completion-driven chains, the hot aggregate and measured senders,
//! and the saga chain's re-entrant submissions.
//!
//! `--fault lose` (one message of each repetition never submitted) and `--fault reorder`
//! (two messages of one key submitted swapped) make it a deliberately wrong driver, which
//! the harness's checker must catch.
//!
//! Usage: `keyed-bench-driver [--strategy ID] [--fault lose|reorder]`, its stdin and
//! stdout the protocol's.

use std::io::{BufRead, BufWriter, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use harness::measure::external::protocol::{CellInput, Hello, OutputLine, Record, RepEnd, HEADER};
use harness::measure::handler::{spin, AggregateState};
use harness::measure::runner::Role;
use harness::measure::timer::Timer;
use strategies::{Handler, Job, Key, Message, Outcome, Strategy, StrategyConfig, StrategyId};

/// The deliberate mistakes `--fault` makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    /// Never submits the tenth message of each repetition.
    Lose,
    /// Submits the first two messages of the first key with two or more swapped.
    Reorder,
}

/// The process's time base: every time is nanoseconds since it.
fn now_ns() -> u64 {
    static BASE: OnceLock<Instant> = OnceLock::new();
    BASE.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// This thread's number, as records name it.
fn thread_number() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    thread_local! { static NUMBER: u64 = NEXT.fetch_add(1, Ordering::Relaxed); }
    NUMBER.with(|n| *n)
}

/// A message's record as it is being made: times on the process's time base.
type Sink = Mutex<Vec<Record>>;

/// What a message ending tells: its aggregate id (the driven plan and the saga wait on it).
type Ended = Arc<dyn Fn(u64) + Send + Sync>;

/// Runs each job as keyed-bench's own handler does, and records it. A message's
/// `intended_ns` carries its submission time.
struct DriverHandler {
    sink: Arc<Sink>,
    timer: Timer,
    state: Option<AggregateState>,
    ended: Option<Ended>,
}

impl DriverHandler {
    fn finish(sink: &Sink, ended: Option<&Ended>, message: &Message, start_ns: u64, thread: u64) {
        let record = Record {
            key: message.key,
            seq: message.seq,
            submit_ns: message.intended_ns,
            start_ns,
            end_ns: now_ns(),
            thread,
        };
        sink.lock().unwrap_or_else(PoisonError::into_inner).push(record);
        if let Some(ended) = ended {
            ended(message.key.aggregate_id);
        }
    }
}

impl Handler for DriverHandler {
    fn handle(&self, message: &Message) -> Outcome {
        let (start_ns, thread) = (now_ns(), thread_number());
        let pending = |future: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>| {
            let (sink, ended, message) = (Arc::clone(&self.sink), self.ended.clone(), *message);
            Outcome::Pending(Box::pin(async move {
                future.await;
                Self::finish(&sink, ended.as_ref(), &message, start_ns, thread);
            }))
        };
        match message.job {
            Job::Noop | Job::Panic | Job::Custom(_) => {}
            Job::Spin { ns } => spin(u64::from(ns)),
            Job::Block { ns } => std::thread::sleep(Duration::from_nanos(u64::from(ns))),
            Job::Touch { lines, spin_ns } => {
                if let Some(state) = &self.state {
                    state.touch(message.key.aggregate_id, lines);
                }
                spin(u64::from(spin_ns));
            }
            Job::Wait { ns } => {
                return pending(Box::pin(self.timer.sleep(Duration::from_nanos(u64::from(ns)))))
            }
            Job::Retry { retries, backoff_ns, spin_ns } => {
                spin(u64::from(spin_ns));
                let timer = self.timer.clone();
                return pending(Box::pin(async move {
                    for attempt in 0..u32::from(retries) {
                        timer.sleep(Duration::from_nanos(u64::from(backoff_ns) << attempt)).await;
                        spin(u64::from(spin_ns));
                    }
                }));
            }
        }
        Self::finish(&self.sink, self.ended.as_ref(), message, start_ns, thread);
        Outcome::Done
    }
}

/// A saga chain: each completion of its key submits the next step, re-entrantly.
struct Saga {
    key: u64,
    steps: u64,
    job: Job,
    next: AtomicU64,
    executor: OnceLock<Weak<dyn Strategy>>,
}

impl Saga {
    fn message(&self, seq: u64) -> Message {
        Message { key: Key::new(0, self.key), seq, intended_ns: now_ns(), job: self.job }
    }

    fn completed(&self, key: u64) {
        if key != self.key {
            return;
        }
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        if seq < self.steps {
            if let Some(executor) = self.executor.get().and_then(Weak::upgrade) {
                let _ = executor.submit(self.message(seq));
            }
        }
    }
}

fn main() -> ExitCode {
    let mut strategy = StrategyId::KeyedMailbox;
    let mut fault = Fault::None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next();
        match (arg.as_str(), value.as_deref()) {
            ("--strategy", Some(id)) => match id.parse() {
                Ok(id) => strategy = id,
                Err(error) => return usage(&error.to_string()),
            },
            ("--fault", Some("lose")) => fault = Fault::Lose,
            ("--fault", Some("reorder")) => fault = Fault::Reorder,
            _ => return usage(&format!("unknown argument `{arg}`")),
        }
    }
    match run(strategy, fault) {
        Ok(()) => ExitCode::SUCCESS,
        Err(why) => {
            eprintln!("keyed-bench-driver: {why}");
            ExitCode::FAILURE
        }
    }
}

fn usage(why: &str) -> ExitCode {
    eprintln!("keyed-bench-driver: {why}\nusage: keyed-bench-driver [--strategy ID] [--fault lose|reorder]");
    ExitCode::from(2)
}

fn run(strategy: StrategyId, fault: Fault) -> Result<(), String> {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines().map_while(Result::ok);
    if lines.next().as_deref() != Some(HEADER) {
        return Err(format!("the first line is not `{HEADER}`"));
    }
    let descriptor = strategy.descriptor();
    let hello = Hello {
        name: format!("keyed-bench's {strategy} in the reference driver"),
        version: env!("CARGO_PKG_VERSION").into(),
        family: descriptor.family.as_str().into(),
        ordered: descriptor.ordered,
        threads: descriptor.threads.as_str().into(),
        arrivals: ["closed", "paced", "driven", "saga"].map(String::from).to_vec(),
        producers: 64,
        wait: "a pending future completed by a timer thread (the harness's timer)".into(),
        sources: vec![
            "src/bin/keyed-bench-driver.rs".into(),
            "harness/src/measure/external/protocol.rs".into(),
        ],
        consumes: None,
    };
    let mut out = BufWriter::new(std::io::stdout().lock());
    out.write_all(hello.lines().as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| e.to_string())?;
    match lines.next().as_deref() {
        None => return Ok(()), // asked for the hello only
        Some("cell") => {}
        Some(other) => return Err(format!("expected `cell`, got `{other}`")),
    }
    let cell = CellInput::parse(&mut lines)?;
    run_cell(strategy, fault, &cell, &mut out)
}

fn run_cell(
    strategy: StrategyId,
    fault: Fault,
    cell: &CellInput,
    out: &mut dyn Write,
) -> Result<(), String> {
    let sink = Arc::new(Sink::default());
    let (completed, completions) = mpsc::channel::<u64>();
    let saga = cell.saga.map(|(key, steps, job)| {
        Arc::new(Saga { key, steps, job, next: AtomicU64::new(0), executor: OnceLock::new() })
    });
    let ended: Option<Ended> = if cell.arrivals == "driven" {
        let completed = Mutex::new(completed);
        Some(Arc::new(move |key| {
            let _ = completed.lock().unwrap_or_else(PoisonError::into_inner).send(key);
        }))
    } else {
        saga.clone().map(|saga| Arc::new(move |key| saga.completed(key)) as Ended)
    };
    let handler = DriverHandler {
        sink: Arc::clone(&sink),
        timer: Timer::start(),
        state: (cell.state_bytes > 0).then(|| AggregateState::new(cell.keys, cell.state_bytes)),
        ended,
    };
    let config = StrategyConfig {
        workers: cell.workers,
        max_in_flight: cell.window,
        throughput: cell.throughput,
        ..StrategyConfig::with_workers(cell.workers)
    };
    let executor: Arc<dyn Strategy> =
        Arc::from(strategy.build(config, Arc::new(handler)).map_err(|error| error.to_string())?);
    if let Some(saga) = &saga {
        let _ = saga.executor.set(Arc::downgrade(&executor));
    }
    // The warm-up: the first messages with no-op jobs, drained and forgotten.
    let warmup: Vec<Message> = cell.messages[..cell.warmup.min(cell.messages.len())]
        .iter()
        .map(|m| Message { job: Job::Noop, ..*m })
        .collect();
    let started = now_ns();
    send_closed(&*executor, &warmup)?;
    executor.drain();
    sink.lock().unwrap_or_else(PoisonError::into_inner).clear();
    write(out, &OutputLine::Warmup(now_ns() - started))?;
    let mut messages = cell.messages.clone();
    if fault == Fault::Reorder {
        swap_first_two_of_a_key(&mut messages);
    }
    if fault == Fault::Lose && messages.len() > 10 {
        messages.remove(9);
    }
    for rep in 0..cell.repeat {
        while completions.try_recv().is_ok() {}
        // Said before the first send: the harness reads this process's CPU from here.
        write(out, &OutputLine::Rep(rep))?;
        out.flush().map_err(|e| e.to_string())?;
        let origin = now_ns();
        let (last_send, sent) = match cell.arrivals.as_str() {
            "closed" | "paced" => {
                if let Some(saga) = &saga {
                    saga.next.store(1, Ordering::Relaxed);
                    executor.submit(saga.message(0)).map_err(|e| e.to_string())?;
                }
                (send_by_producers(&*executor, cell, &messages, origin)?, Vec::new())
            }
            "driven" => send_driven(&*executor, cell, &completions)?,
            other => return Err(format!("unknown arrivals `{other}`")),
        };
        executor.drain();
        let finished = now_ns() - origin;
        let records = std::mem::take(&mut *sink.lock().unwrap_or_else(PoisonError::into_inner));
        for record in records {
            let at = |ns: u64| ns.saturating_sub(origin);
            let record = Record {
                submit_ns: at(record.submit_ns),
                start_ns: at(record.start_ns),
                end_ns: at(record.end_ns),
                ..record
            };
            write(out, &OutputLine::Record(record))?;
        }
        for (id, count) in sent.iter().enumerate().filter(|(_, &count)| count > 0) {
            write(out, &OutputLine::Sent(id as u64, *count))?;
        }
        write(
            out,
            &OutputLine::End(RepEnd {
                rep,
                last_send_ns: last_send - origin,
                finished_ns: finished,
            }),
        )?;
        out.flush().map_err(|e| e.to_string())?;
    }
    executor.close();
    write(out, &OutputLine::Done)?;
    out.flush().map_err(|e| e.to_string())
}

fn write(out: &mut dyn Write, line: &OutputLine) -> Result<(), String> {
    let mut text = String::new();
    line.write(&mut text);
    out.write_all(text.as_bytes()).map_err(|e| e.to_string())
}

/// `--fault reorder`: the first key with two messages has its first two swapped.
fn swap_first_two_of_a_key(messages: &mut [Message]) {
    for i in 0..messages.len() {
        if let Some(j) = (i + 1..messages.len()).find(|&j| messages[j].key == messages[i].key) {
            let (first, second) = (messages[i], messages[j]);
            messages[i] = Message { intended_ns: first.intended_ns, ..second };
            messages[j] = Message { intended_ns: second.intended_ns, ..first };
            return;
        }
    }
}

/// Submits `messages` as fast as the executor admits them; returns the last send.
fn send_closed(executor: &dyn Strategy, messages: &[Message]) -> Result<u64, String> {
    for message in messages {
        executor
            .submit(Message { intended_ns: now_ns(), ..*message })
            .map_err(|e| e.to_string())?;
    }
    Ok(now_ns())
}

/// Submits each message at `origin + intended_ns`, a late one at once; returns the last send.
fn send_paced(executor: &dyn Strategy, messages: &[Message], origin: u64) -> Result<u64, String> {
    for message in messages {
        let due = origin + message.intended_ns;
        loop {
            let now = now_ns();
            if now >= due {
                break;
            }
            if due - now > 1_000_000 {
                std::thread::sleep(Duration::from_nanos(due - now - 500_000));
            } else {
                std::thread::yield_now();
            }
        }
        executor
            .submit(Message { intended_ns: now_ns(), ..*message })
            .map_err(|e| e.to_string())?;
    }
    Ok(now_ns())
}

/// Sends `messages` from `cell.producers` threads, each the keys it owns, in order.
fn send_by_producers(
    executor: &dyn Strategy,
    cell: &CellInput,
    messages: &[Message],
    origin: u64,
) -> Result<u64, String> {
    let send = |part: &[Message]| {
        if cell.arrivals == "paced" {
            send_paced(executor, part, origin)
        } else {
            send_closed(executor, part)
        }
    };
    if cell.producers <= 1 {
        return send(messages);
    }
    let mut parts = vec![Vec::new(); cell.producers];
    for message in messages {
        let spread =
            message.key.aggregate_id ^ u64::from(message.key.aggregate_type).rotate_left(32);
        parts[(spread % cell.producers as u64) as usize].push(*message);
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = parts.iter().map(|part| scope.spawn(move || send(part))).collect();
        handles.into_iter().try_fold(0, |last, handle| {
            Ok(last.max(handle.join().map_err(|_| "a producer thread panicked".to_owned())??))
        })
    })
}

/// Runs a completion-driven repetition: the chains and the hot aggregate keep their
/// messages in flight and each sender sends its next command when its previous one
/// ended, until the duration has passed. Returns the last send and the messages sent per key.
fn send_driven(
    executor: &dyn Strategy,
    cell: &CellInput,
    completions: &mpsc::Receiver<u64>,
) -> Result<(u64, Vec<u64>), String> {
    let messages = &cell.messages;
    let mut sent = vec![0u64; cell.keys];
    let mut roles = vec![Role::None; cell.keys];
    let submit = |message: Message, sent: &mut Vec<u64>| -> Result<(), String> {
        if let Some(count) = sent.get_mut(message.key.aggregate_id as usize) {
            *count += 1;
        }
        executor.submit(Message { intended_ns: now_ns(), ..message }).map_err(|e| e.to_string())
    };
    let deadline = now_ns() + cell.duration_ns;
    let mut next: Vec<usize> = cell.chains.iter().map(|chain| chain.start).collect();
    for (index, chain) in cell.chains.iter().enumerate() {
        if chain.is_empty() {
            continue;
        }
        roles[messages[chain.start].key.aggregate_id as usize] = Role::Chain(index);
        submit(messages[chain.start], &mut sent)?;
        next[index] += 1;
    }
    let hot_seq = AtomicUsize::new(0);
    // The hot aggregate's messages are made as it runs: not in the workload, not counted.
    let send_hot = || -> Result<(), String> {
        let (key, _, job) = cell.hot.expect("a hot aggregate");
        let seq = hot_seq.fetch_add(1, Ordering::Relaxed) as u64;
        executor
            .submit(Message { key: Key::new(0, key), seq, intended_ns: now_ns(), job })
            .map_err(|e| e.to_string())
    };
    if let Some((key, outstanding, _)) = cell.hot {
        roles[key as usize] = Role::Hot;
        for _ in 0..outstanding {
            send_hot()?;
        }
    }
    let mut next_command: Vec<usize> = cell.senders.iter().map(|sender| sender.start).collect();
    let mut active = 0;
    for (index, sender) in cell.senders.iter().enumerate() {
        for message in &messages[sender.clone()] {
            roles[message.key.aggregate_id as usize] = Role::Sender(index);
        }
        if !sender.is_empty() {
            submit(messages[sender.start], &mut sent)?;
            next_command[index] += 1;
            active += 1;
        }
    }
    let mut last_send = now_ns();
    while active > 0 {
        let key =
            completions.recv().map_err(|_| "the executor's completions stopped".to_owned())?;
        match roles.get(key as usize).copied().unwrap_or(Role::None) {
            Role::None => {}
            Role::Chain(index) => {
                if next[index] < cell.chains[index].end {
                    submit(messages[next[index]], &mut sent)?;
                    next[index] += 1;
                }
            }
            Role::Hot => send_hot()?,
            Role::Sender(index) => {
                if next_command[index] < cell.senders[index].end && now_ns() < deadline {
                    submit(messages[next_command[index]], &mut sent)?;
                    next_command[index] += 1;
                    last_send = now_ns();
                } else {
                    active -= 1;
                }
            }
        }
    }
    Ok((last_send, sent))
}
