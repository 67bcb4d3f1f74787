//! Workloads, runner, metrics and reports for keyed-bench.
