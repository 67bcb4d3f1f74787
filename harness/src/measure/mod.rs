//! Measurement: one workload offered to one strategy, every handler call timed and checked,
//! and the cell's result made from the raw samples.
//!
//! - `runner`: builds the strategy, offers the messages (closed loop or paced), drains,
//!   and returns the raw samples of each repetition;
//! - `external`: designs run by a driver process in any language (the external-design
//!   protocol), their records checked and measured as the runner's;
//! - `handler`: the benchmark handler that interprets each message's job;
//! - `interference`: what the rest of the machine did during a window (receipts);
//! - `histograms`: latency, head-of-line and bystander histograms of a run;
//! - `saga`: the re-entrant chain of a `saga` workload, submitted from its own completions;
//! - `recorder`: what every handler call reports, and the online correctness checks;
//! - `metrics`: the raw samples turned into the numbers of a `results::RunResult`;
//! - `timer`: the one timer thread that completes every pending step;
//! - `system`: what the process and the machine say about themselves (threads, CPU,
//!   context switches, memory, the host).

pub mod external;
pub mod handler;
pub mod histograms;
pub mod interference;
pub mod metrics;
pub mod recorder;
pub mod runner;
mod saga;
pub mod system;
pub mod timer;
