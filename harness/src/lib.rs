//! Workloads, runner, metrics and reports for keyed-bench.
//!
//! Data flows one way: workload -> runner -> strategy -> handler records -> metrics ->
//! results -> reports. This crate depends on `strategies`; never the reverse.

pub mod catalog;
