//! Workloads, runner, metrics and reports for keyed-bench.
//!
//! Data flows one way: workload -> runner -> strategy -> handler records -> metrics ->
//! results -> reports. Reporters never time anything; timing code never formats output.
//! This crate depends on `strategies`; never the reverse. The modules, each using only those
//! listed before it (but for a scenario's headline, a metric of `results`): the schema of
//! the results comes before `measure` and `pipeline`, which produce them, and everything
//! after them only reads them.

// Size limits (thresholds in clippy.toml): a long function or a deep block is split into
// named steps.
#![warn(clippy::too_many_lines, clippy::excessive_nesting)]

/// What a setting may be: flag ranges, limits, checks and their typed error.
pub mod limits;
/// Sweeps: list-valued strategy settings and the points of their cross product.
pub mod sweep;
/// The scenarios, their sizes (each declared once) and the seeded messages of every cell.
pub mod workload;
/// `results.json`: the schema (every type of a results file but the sizes and the sweep,
/// which `workload` and `sweep` declare), the files of a run.
pub mod results;
/// What a running cell shares with the watchdog that supervises it: its progress, a cancel
/// flag and the executors a cancel force-closes; and the watchdog's settings.
pub mod watch;
/// One workload offered to one strategy: the runner, the handler, the recorder, the timer,
/// and the metrics computed from the raw samples.
pub mod measure;
/// The end-to-end pipeline: a partitioned log, offset commits and a version-aware projection.
pub mod pipeline;
/// What reads results: the summary, the charts, the HTML report, exports, `list`.
pub mod report;
/// `keyed-bench compare`: two runs' results, cell by cell, judged against their noise.
pub mod compare;
/// `keyed-bench gate`: rules evaluated on one run's results.
pub mod gate;
/// `keyed-bench soak`: a million keys churned and a mixed load held over time.
pub mod soak;
/// The validated settings of a suite run, from flags or from a results file.
pub mod config;
/// The suite: every selected cell measured in turn, then the files written.
pub mod suite;
/// The progress of a run on standard error: a bar, or lines, with the time left.
pub mod progress;
/// `keyed-bench ab`: two builds run in turns on this machine, compared against their noise.
pub mod ab;
/// The command line: one file per subcommand, clap arguments into validated configs.
pub mod cli;
/// Benchmark designs of your own: one call runs the suite, the report and the gates.
pub mod bench;
