//! Measurement: one workload offered to one strategy, every handler call timed and checked,
//! and the cell's result made from the raw samples.
//!
//! - `measurement`: what a cell's measurement is (its repetitions' raw samples), how it is
//!   planned and why it fails, for in-process and external designs alike;
//! - `runner`: builds the strategy, offers the messages, drains, and returns the raw
//!   samples of each repetition; it hands an external design's cells to `external`;
//! - `send`: how a repetition's messages are offered (closed loop, paced or
//!   completion-driven);
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
mod measurement;
pub mod metrics;
pub mod recorder;
pub mod runner;
mod saga;
mod send;
pub mod system;
pub mod timer;
