//! How a repetition's messages are sent: closed loop (as fast as the window admits), paced
//! (each at its due time, never skipped) and completion-driven (each sender's next command
//! once its previous one is handled). Every producer stops as soon as its watch is
//! cancelled.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use strategies::{Design, Key, Message, Strategy};

use super::measurement::{RunError, PACE_LEAD_NS};
use super::recorder::Clock;
use crate::watch::Watch;
use crate::workload::{Driven, HotChain, Workload};

/// A paced producer sleeps when its next message is due further ahead than this, and
/// spins (yielding) closer in.
const PACE_SLEEP_THRESHOLD_NS: u64 = 1_000_000;
/// The longest a producer or the driver sleeps or waits without looking at its watch.
const WATCH_POLL: Duration = Duration::from_millis(50);

/// Why a producer stopped before its last message.
pub(super) enum Halt {
    /// The strategy refused a message.
    Refused(strategies::SubmitError),
    /// The cell's watch was cancelled.
    Cancelled,
}

impl Halt {
    /// The cell's error for `strategy`.
    pub(super) fn into_run_error(self, strategy: Design) -> RunError {
        match self {
            Self::Refused(source) => RunError::Refused { strategy, source },
            Self::Cancelled => RunError::Cancelled { strategy },
        }
    }
}

/// What a completion-driven repetition did.
pub(super) struct DrivenOutcome {
    /// When the last message was sent.
    pub(super) last_send_ns: u64,
    /// Messages sent per key (the rest of the workload was never sent).
    pub(super) sent: Vec<u64>,
    /// Messages sent to the hot aggregate, which are not the workload's.
    pub(super) hot_sent: u64,
    /// The measured senders' messages that were handled.
    pub(super) measured_completed: u64,
}

/// Why a completion-driven repetition stopped early.
pub(super) enum DrivenError {
    Refused(strategies::SubmitError),
    /// No measured command was answered for this long.
    Stalled(Duration),
    Cancelled,
}

impl DrivenError {
    /// The cell's error for `strategy`.
    pub(super) fn into_run_error(self, strategy: Design) -> RunError {
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
pub(super) fn submit_driven(
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

/// Submits as fast as the strategy admits; a message's intended time is when it was sent.
/// Returns when the last message was sent.
pub(super) fn submit_closed(
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
pub(super) fn submit_paced(
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
