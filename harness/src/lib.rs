//! Workloads, runner, metrics and reports for keyed-bench.
//!
//! Data flows one way: workload (`scenario`) -> runner -> strategy -> handler records
//! (`recorder`) -> `metrics` -> results -> reports. Reporters never time anything; timing
//! code never formats output. This crate depends on `strategies`; never the reverse.

pub mod catalog;
pub mod cli;
pub mod export;
pub mod gate;
pub mod handler;
pub mod metrics;
pub mod plot;
pub mod recorder;
pub mod report;
pub mod results;
pub mod runner;
pub mod scenario;
pub mod soak;
pub mod suite;
pub mod summary;
pub mod system;
pub mod timer;
