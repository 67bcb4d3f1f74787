//! What a cell's measurement is: the raw samples of its repetitions, how it is planned
//! (timed and counted repetitions, producers, the warm-up, the paced lead) and why it can
//! fail. In-process designs (`runner`) and external ones (`external`) both measure into
//! these, through the same recorder ([`recorder_for`]).

use std::time::Duration;

use hdrhistogram::Histogram;
use strategies::{Design, Events, WindowScope};

use super::histograms::Histograms;
use super::recorder::{Clock, Recorder};
use super::system::Usage;
use crate::results::{Correctness, Interference};
use crate::workload::Workload;

/// Warm-up: this fraction of the workload, at most `WARMUP_MAX_MESSAGES`.
const WARMUP_FRACTION: usize = 10;
const WARMUP_MAX_MESSAGES: usize = 10_000;
/// The first paced message is due this long after the run starts.
pub(crate) const PACE_LEAD_NS: u64 = 200_000;

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
    /// watch's stall wait ([`Watch::stall`](crate::watch::Watch::stall)) while one was in flight.
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

/// Messages of the warm-up of a workload of `messages`.
pub(crate) fn warmup_messages(messages: usize) -> usize {
    (messages / WARMUP_FRACTION).min(WARMUP_MAX_MESSAGES)
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
