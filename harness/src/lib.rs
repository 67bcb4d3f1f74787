//! Workloads, runner, metrics and reports for keyed-bench.
//!
//! Data flows one way: workload -> runner -> strategy -> handler records -> metrics ->
//! results -> reports. Reporters never time anything; timing code never formats output.
//! This crate depends on `strategies`; never the reverse.

pub mod workload;

pub mod measure;

pub mod results;

pub mod report;

pub mod cli;
pub mod gate;
pub mod soak;
pub mod suite;
