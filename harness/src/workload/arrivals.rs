//! How a workload's messages are offered to a strategy: closed loop, paced, or
//! completion-driven by a plan, and the saga chain a paced workload may carry. The plans'
//! own messages (a hot aggregate's, a saga's) are made as the workload runs.

use serde::Serialize;
use strategies::Job;

/// How messages are offered to the strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    /// As fast as the strategy admits them (saturation); a message's intended time is
    /// the moment the producer tried to send it.
    Closed,
    /// Each message is due at its `intended_ns`; the producer waits for it and never skips
    /// a late one (no coordinated omission).
    Paced,
    /// Completion-driven, as benchmark threads that send and wait: each chain and each
    /// sender of the workload's [`Driven`] plan submits its next message when its previous
    /// one has been handled; a message's intended time is when it was sent.
    Driven,
}

/// A saga key of a paced workload (`saga`): a chain whose handler, as each of its messages
/// completes, submits the chain's next one into the same executor from that completion (a
/// re-entrant submission), beside the paced bystanders. Its messages are made as it runs
/// (not in `Workload::messages`; the recorder checks their order and overlaps only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Saga {
    /// Its aggregate id.
    pub key: u64,
    /// Messages of the chain per repetition: the runner submits the first, each completion
    /// the next.
    pub steps: u64,
    /// What each of its messages does.
    pub job: Job,
}

/// The plan of a completion-driven workload (`cold-command`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Driven {
    /// Background chains that keep one message in flight each: the index range of each
    /// chain's messages in `Workload::messages`, in sequence order.
    pub chains: Vec<std::ops::Range<usize>>,
    /// The hot aggregate, if any: a background key kept at `outstanding` messages in
    /// flight, made as they are needed (not in `Workload::messages`; the recorder checks
    /// its order and overlaps only).
    pub hot: Option<HotChain>,
    /// The measured senders: the index range of each one's messages (one message per new
    /// aggregate) in `Workload::messages`; each sends its next when the previous is handled.
    pub senders: Vec<std::ops::Range<usize>>,
    /// How long the senders send; then the chains stop and everything drains.
    pub duration_ns: u64,
}

/// The hot aggregate of a [`Driven`] plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotChain {
    /// Its aggregate id.
    pub key: u64,
    /// Messages always in flight.
    pub outstanding: usize,
    /// What each of its messages does.
    pub job: Job,
}
