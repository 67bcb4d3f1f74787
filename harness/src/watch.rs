//! A cell's watch: what a running cell shares with the watchdog that supervises it (the
//! suite's, in `suite/watchdog.rs`), so that a cell that stops making progress can be
//! stopped without ending the process.
//!
//! # Protocol
//!
//! 1. **Progress.** The cell's own code counts each unit of work as it finishes
//!    ([`Watch::advance`]): a measured cell's handler each message that ends, a pipeline
//!    consumer each record it settles. Each thread counts into a counter of its own, one
//!    cache line each, so counting costs the handlers no contended write; the watchdog sums
//!    the counters ([`Watch::done`]) and only asks whether the sum moved. The harness's own
//!    steps between units of work (a repetition's histograms, the wait for a closed
//!    strategy's threads to go) say that the cell is alive ([`Watch::beat`]) without
//!    counting a unit: the watchdog watches both ([`Watch::moves`]).
//! 2. **Enrolment.** Every executor the cell builds is enrolled ([`Watch::enrol`]) for as
//!    long as the cell uses it; the enrolment ends when its guard is dropped.
//! 3. **Cancel.** [`Watch::cancel`] raises the flag and force-closes every enrolled executor
//!    from a thread of its own (a forced close waits for running handler calls, and a
//!    strategy that deadlocked may never return from it): a `submit` blocked on a full window
//!    fails, a `drain` returns, pending steps are abandoned. The harness's own loops (the
//!    producers, the completion-driven driver, the consumer's poll loop and its waits, the
//!    pipeline scenarios' drivers) check the flag ([`Watch::is_cancelled`]) and return, and
//!    the cell ends with an error that says it was cancelled.
//! 4. **Stall.** Progress alone cannot tell that a completion-driven cell is stuck: its hot
//!    aggregate's messages keep ending while a measured sender waits for ever on a command
//!    that is never handled. Its driver therefore holds the senders to the watch's stall
//!    wait ([`Watch::stall`], the cell's no-progress timeout under the suite and in the
//!    gate's re-measurement of it) and the cell
//!    ends with an error that says so once none was answered for that long; the suite
//!    records the cell as failed, as it records one the watchdog stopped.
//!
//! Enrolment and cancel take one lock: an executor is either enrolled before the cancel, and
//! force-closed by it, or refused ([`Cancelled`]), so no executor built while the watch is
//! cancelled runs unseen. A watch nobody cancels costs a counter per unit of work and
//! nothing else: the calibrations use one ([`Watch::default`]), and the gate's
//! re-measurements one with the cell's own stall wait ([`Watch::with_stall`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::Mutex;
use strategies::Strategy;

use crate::workload::Sizes;

/// Counters of one watch: threads share one only past this many.
const SHARDS: usize = 16;

/// How long a completion-driven cell's driver waits for an answer to a measured sender's
/// command under a watch that says nothing else ([`Watch::default`]: the calibrations).
pub const DRIVEN_STALL: Duration = Duration::from_secs(60);

/// One thread's counter, alone on its cache lines (two: adjacent-line prefetch).
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard(AtomicU64);

/// A running cell's progress counter, cancel flag and enrolled executors; cloning it shares
/// them. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct Watch(Arc<State>);

#[derive(Debug, Default)]
struct State {
    /// Units of work finished, by the thread that counted them.
    shards: [Shard; SHARDS],
    /// Units of work the cell expects to finish in all (0: unknown), for the reason a
    /// stopped cell is given.
    expected: AtomicU64,
    /// Steps of the harness that finish no unit of work.
    beats: AtomicU64,
    /// Raised by [`Watch::cancel`], once.
    cancelled: AtomicBool,
    /// How long a completion-driven cell's driver waits for an answer to a measured
    /// sender's command before the cell gives up ([`Watch::stall`]); `None`: [`DRIVEN_STALL`].
    stall: Option<Duration>,
    enrolled: Mutex<Enrolled>,
}

/// The executors a cell is running, and whether the watch was cancelled: one lock, so that
/// an enrolment and a cancel are ordered.
#[derive(Debug, Default)]
struct Enrolled {
    cancelled: bool,
    next: u64,
    executors: Vec<(u64, Weak<dyn Strategy>)>,
}

/// The executor was not enrolled: the watch is cancelled, and the cell must return.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the cell was cancelled")]
pub struct Cancelled;

/// An executor's enrolment in a watch; dropping it ends the enrolment.
#[derive(Debug)]
#[must_use = "the enrolment ends when the guard is dropped"]
pub struct Enrolment<'w> {
    watch: &'w Watch,
    id: u64,
}

impl Drop for Enrolment<'_> {
    fn drop(&mut self) {
        self.watch.0.enrolled.lock().executors.retain(|(id, _)| *id != self.id);
    }
}

/// The counter of the calling thread: threads take the next one in turn when they first
/// count, so the threads of one cell each have one of their own (up to [`SHARDS`]).
fn shard() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SHARDS;
    }
    SHARD.with(|shard| *shard)
}

impl Watch {
    /// A watch whose completion-driven driver gives up once no measured sender's command
    /// has been answered for `stall` (the suite's: the cell's no-progress timeout).
    pub fn with_stall(stall: Duration) -> Self {
        Self(Arc::new(State { stall: Some(stall), ..State::default() }))
    }

    /// How long a completion-driven cell's driver waits for an answer to a measured
    /// sender's command before the cell gives up ([`DRIVEN_STALL`] unless given). The
    /// driver holds the senders to it rather than every message: a hot aggregate's messages
    /// keep ending, and the watch moving, while a command that is never handled holds its
    /// sender, and the cell, for ever.
    pub fn stall(&self) -> Duration {
        self.0.stall.unwrap_or(DRIVEN_STALL)
    }

    /// One more unit of work finished (a message ended, a record settled).
    #[inline]
    pub fn advance(&self) {
        self.0.shards[shard()].0.fetch_add(1, Ordering::Relaxed);
    }

    /// Units of work finished so far.
    pub fn done(&self) -> u64 {
        self.0.shards.iter().map(|shard| shard.0.load(Ordering::Relaxed)).sum()
    }

    /// The cell's harness did a step that finishes no unit of work (built a repetition's
    /// histograms, waited a moment for a closed strategy's threads to go): the cell is
    /// alive, though [`Watch::done`] did not move.
    pub fn beat(&self) {
        self.0.beats.fetch_add(1, Ordering::Relaxed);
    }

    /// What the watchdog watches move: the units of work done and the harness's steps.
    pub fn moves(&self) -> u64 {
        self.done() + self.0.beats.load(Ordering::Relaxed)
    }

    /// Says how many units of work the cell expects to finish in all.
    pub fn expect(&self, units: u64) {
        self.0.expected.store(units, Ordering::Relaxed);
    }

    /// The units of work the cell expects to finish in all, where it said.
    pub fn expected(&self) -> Option<u64> {
        Some(self.0.expected.load(Ordering::Relaxed)).filter(|&units| units > 0)
    }

    /// Whether the cell was cancelled: its loops return as soon as they see it.
    #[inline]
    pub fn is_cancelled(&self) -> bool {
        // Acquire: pairs with the Release store in `cancel`.
        self.0.cancelled.load(Ordering::Acquire)
    }

    /// Enrols `executor`, which the cell has just built, until the guard is dropped; a
    /// cancel force-closes it. Refused once the watch is cancelled.
    pub fn enrol(&self, executor: &Arc<dyn Strategy>) -> Result<Enrolment<'_>, Cancelled> {
        let mut enrolled = self.0.enrolled.lock();
        if enrolled.cancelled {
            return Err(Cancelled);
        }
        let id = enrolled.next;
        enrolled.next += 1;
        enrolled.executors.push((id, Arc::downgrade(executor)));
        Ok(Enrolment { watch: self, id })
    }

    /// Cancels the cell: raises the flag, and force-closes every enrolled executor on a
    /// thread of its own, whose handle it returns (none where no executor was enrolled, or
    /// the thread could not start; the cell's loops then stop on the flag alone).
    pub fn cancel(&self) -> Option<JoinHandle<()>> {
        let executors: Vec<Arc<dyn Strategy>> = {
            let mut enrolled = self.0.enrolled.lock();
            enrolled.cancelled = true;
            // Release: pairs with the Acquire load of `is_cancelled`.
            self.0.cancelled.store(true, Ordering::Release);
            enrolled.executors.iter().filter_map(|(_, executor)| executor.upgrade()).collect()
        };
        if executors.is_empty() {
            return None;
        }
        std::thread::Builder::new()
            .name("keyed-bench-cancel".into())
            .spawn(move || {
                for executor in executors {
                    executor.force_close();
                }
            })
            .ok()
    }
}

/// The watchdog's settings: how long a cell may go without progress, and how long a
/// stopped cell gets to return.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Watchdog {
    /// A cell that finishes no unit of work for this long is cancelled and recorded as
    /// failed (`--cell-timeout`); `None`: each cell's own, [`default_timeout`].
    pub cell_timeout: Option<Duration>,
    /// After the first stop request (SIGINT, SIGTERM), the cell in progress gets this long
    /// to finish before it is cancelled (it is then not done, and a resumed run runs it).
    pub stop_grace: Duration,
    /// A cancelled cell whose code has not returned this long after the cancel (a strategy
    /// that ignores a forced close) is abandoned: the run records it as failed, saves and
    /// ends.
    pub cancel_grace: Duration,
}

/// The shortest default no-progress timeout of a cell, in seconds.
pub const MIN_CELL_TIMEOUT_S: f64 = 60.0;
/// The default no-progress timeout of a cell is this many times its expected time, or the
/// longest single wait its sizes allow, whichever is longer (and at least
/// [`MIN_CELL_TIMEOUT_S`]).
pub const CELL_TIMEOUT_FACTOR: f64 = 10.0;
/// Seconds the cell in progress gets to finish after the first stop request.
pub const STOP_GRACE_S: u64 = 3;
/// Seconds a cancelled cell's code gets to return: more than the longest handler call a
/// size allows (a blocking call of `--pc-max-block-ms`, at most 4 s), which a forced close
/// waits for.
pub const CANCEL_GRACE_S: u64 = 10;

impl Default for Watchdog {
    fn default() -> Self {
        Self {
            cell_timeout: None,
            stop_grace: Duration::from_secs(STOP_GRACE_S),
            cancel_grace: Duration::from_secs(CANCEL_GRACE_S),
        }
    }
}

impl Watchdog {
    /// The no-progress timeout of a cell expected to take `estimate_s` seconds, with
    /// `sizes`: `--cell-timeout` where given, else [`default_timeout`].
    pub fn timeout_of(&self, estimate_s: f64, sizes: &Sizes) -> Duration {
        self.cell_timeout.unwrap_or_else(|| default_timeout(estimate_s, sizes))
    }
}

/// A cell's no-progress timeout when `--cell-timeout` is not given: generous, since a
/// cell stopped by mistake is a measurement lost: [`CELL_TIMEOUT_FACTOR`] x the longer of
/// its expected time (`estimate_s`, the plan's) and the longest single wait `sizes` allow
/// ([`longest_wait`]), and at least [`MIN_CELL_TIMEOUT_S`].
pub fn default_timeout(estimate_s: f64, sizes: &Sizes) -> Duration {
    let longest = estimate_s.max(longest_wait(sizes).as_secs_f64());
    let seconds = (CELL_TIMEOUT_FACTOR * longest).max(MIN_CELL_TIMEOUT_S);
    Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX)
}

/// The longest a cell may go without finishing a unit of work while nothing is wrong, by
/// the sizes alone: one handler's wait, blocking call or CPU (a long message, a slow
/// record, a backoff doubled as often as the attempts allow), or a pipeline's commit
/// interval (a paused partition waits for the next commit).
pub fn longest_wait(sizes: &Sizes) -> Duration {
    let retries = sizes.max_attempts.saturating_sub(2).min(20);
    let millis = [
        sizes.long_ms,
        sizes.hot_wait_ms,
        sizes.async_max_wait_ms,
        sizes.pc_max_block_ms,
        sizes.cold_wait_ms,
        sizes.backoff_ms.saturating_mul(3),
        sizes.pipeline_slow_ms,
        sizes.commit_interval_ms,
        sizes.retry_backoff_ms.saturating_mul(1_u64 << retries),
        forever_stall_ms(sizes),
    ];
    let nanos = [u64::from(sizes.spin_ns), u64::from(sizes.cold_hot_spin_ns)];
    let longest_ms = millis.into_iter().max().unwrap_or(0);
    let longest_ns = nanos.into_iter().max().unwrap_or(0);
    Duration::from_millis(longest_ms).max(Duration::from_nanos(longest_ns))
}

/// A retry-forever pipeline cell's stall limit (`--max-attempts 0`): it waits that long
/// with no bystander record applied before it stops; 0 otherwise.
fn forever_stall_ms(sizes: &Sizes) -> u64 {
    if sizes.max_attempts != 0 {
        return 0;
    }
    let limit = Sizes::forever_stall_limit(Duration::from_millis(sizes.retry_backoff_ms));
    u64::try_from(limit.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strategies::{Message, Outcome, StrategyConfig, StrategyId};

    #[test]
    fn progress_sums_every_threads_count() {
        let watch = Watch::default();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| (0..1_000).for_each(|_| watch.advance()));
            }
        });
        watch.advance();
        assert_eq!(watch.done(), 4_001);
        watch.beat();
        assert_eq!((watch.done(), watch.moves()), (4_001, 4_002), "a beat is no unit of work");
        assert_eq!(watch.expected(), None);
        watch.expect(5_000);
        assert_eq!(watch.expected(), Some(5_000));
    }

    #[test]
    fn a_cancel_force_closes_what_is_enrolled_and_refuses_what_comes_after() {
        let watch = Watch::default();
        let handler = Arc::new(|_: &Message| Outcome::Done);
        let build = || -> Arc<dyn Strategy> {
            Arc::from(
                StrategyId::KeyedMailbox
                    .build(StrategyConfig::with_workers(1), handler.clone())
                    .unwrap(),
            )
        };
        let (kept, left) = (build(), build());
        let enrolled = watch.enrol(&kept).unwrap();
        drop(watch.enrol(&left).unwrap());
        assert!(!watch.is_cancelled());
        watch.cancel().expect("one executor to close").join().unwrap();
        assert!(watch.is_cancelled());
        let message = Message {
            key: strategies::Key::new(0, 1),
            seq: 0,
            intended_ns: 0,
            job: strategies::Job::Noop,
        };
        assert!(kept.submit(message).is_err(), "force-closed");
        assert!(left.submit(message).is_ok(), "no longer enrolled: left alone");
        assert_eq!(watch.enrol(&left).unwrap_err(), Cancelled);
        drop(enrolled);
        left.close();
    }

    #[test]
    fn the_default_timeout_is_generous_and_follows_the_cell() {
        let sizes = Sizes::standard();
        let minimum = Duration::from_secs_f64(MIN_CELL_TIMEOUT_S);
        assert_eq!(default_timeout(0.5, &sizes), minimum);
        assert_eq!(default_timeout(30.0, &sizes), Duration::from_secs(300));
        let slow = Sizes { pipeline_slow_ms: 60_000, ..Sizes::standard() };
        assert_eq!(longest_wait(&slow), Duration::from_secs(60));
        assert_eq!(default_timeout(0.5, &slow), Duration::from_secs(600));
        let given = Watchdog { cell_timeout: Some(Duration::from_secs(2)), ..Watchdog::default() };
        assert_eq!(given.timeout_of(30.0, &slow), Duration::from_secs(2));
        assert_eq!(Watchdog::default().timeout_of(30.0, &sizes), Duration::from_secs(300));
    }
}
