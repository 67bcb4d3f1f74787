//! Exports of a results file for continuous-benchmarking services.
//!
//! - `bmf`: Bencher Metric Format, `{ "<scenario>[/param]/<strategy>": { "throughput":
//!   {value, lower_value, upper_value}, "latency-p99": {value}, "efficiency": {value} } }`;
//! - `gab`: github-action-benchmark's custom format, an array of `{name, unit, value,
//!   range?}` entries of median throughput (use its `customBiggerIsBetter` tool).

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use crate::results::{Results, RunResult};

/// An export format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Bencher Metric Format.
    Bmf,
    /// github-action-benchmark custom format (bigger is better).
    Gab,
}

/// What `keyed-bench export` reads and writes, validated (`cli/export.rs` builds it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportConfig {
    /// The results file.
    pub results: PathBuf,
    /// The format.
    pub format: ExportFormat,
    /// The file to write (whole or not at all); `None`: standard output.
    pub out: Option<PathBuf>,
}

fn name(run: &RunResult) -> String {
    if run.param.is_empty() {
        format!("{}/{}", run.scenario, run.strategy)
    } else {
        format!("{}/{}/{}", run.scenario, run.param, run.strategy)
    }
}

/// The results in `format`, as pretty JSON.
pub fn export(results: &Results, format: ExportFormat) -> String {
    let value = match format {
        ExportFormat::Bmf => {
            let mut benchmarks = Map::new();
            for run in &results.runs {
                let spread = &run.throughput_per_s;
                benchmarks.insert(
                    name(run),
                    json!({
                        "throughput": {"value": spread.median, "lower_value": spread.min, "upper_value": spread.max},
                        "latency-p99": {"value": run.latency_ns.p99},
                        "efficiency": {"value": run.efficiency},
                    }),
                );
            }
            Value::Object(benchmarks)
        }
        ExportFormat::Gab => Value::Array(
            results
                .runs
                .iter()
                .map(|run| {
                    json!({
                        "name": name(run),
                        "unit": "msg/s",
                        "value": run.throughput_per_s.median,
                        "range": format!("{:.0}-{:.0}", run.throughput_per_s.min, run.throughput_per_s.max),
                    })
                })
                .collect(),
        ),
    };
    let mut text = serde_json::to_string_pretty(&value).expect("json serialises");
    text.push('\n');
    text
}
