//! `results.json`: the versioned schema, and reading it back (every field is described in
//! docs/results.md).
//!
//! - `meta`: [`Meta`], how, where and when a run was made, and the settings it recorded;
//! - `read`: reading a file back, and the checks of what no run writes ([`ReadError`]);
//! - `cell`: [`CellKey`], the one identity of a cell, and the settings it ran with;
//! - `pipeline`: the end-to-end pipeline cells (`pipelines[]`) and their parts;
//! - `metric`: [`Metric`], every figure of a cell that a reader ranks, judges or gates on;
//! - `designs`: the descriptors of the designs that are not built in;
//! - `fs`: atomic writes and the `.hgrm` histogram files;
//! - `incomplete`: what the file of a run that has not finished says about itself;
//! - `interference`: what the rest of the machine did while a figure was taken.
//! - `failed`: the cells a run stopped because they made no progress (`failed[]`);
//! - `price`: what order costs each ordered design against the unordered control
//!   (`price_of_order[]`);
//! - `isolation`: how much one troubled key hurts the others, per design (`isolation[]`).

pub mod cell;
pub mod designs;
pub mod failed;
pub mod fs;
pub mod incomplete;
pub mod interference;
pub mod isolation;
mod meta;
pub mod metric;
pub mod noise;
pub mod pipeline;
pub mod price;
mod read;

use serde::{Deserialize, Serialize};

pub use cell::{CellKey, CellSettings, Scenario, SweptSettings};
pub use failed::FailedCell;
pub use interference::{Interference, Validity};
pub use isolation::IsolationCell;
pub use meta::{Calibration, Meta, TransportMeta, WindowScopeSetting};
pub use metric::Metric;
pub use pipeline::{
    BatchSummary, CallSamples, CallSummary, ClientEvents, CommitPolicy, ExpansionReport,
    FailedCommits, IncarnationReport, LagPoint, LagSummary, LatencySummary, Mitigation,
    PipelineRun, ProjectionReport, RebalanceEvent, RebalanceReport, ReorderReport, RetryForever,
    RetryPolicy, RetryReport, TimelineBin, TransportCalls, TransportKind,
};
pub use price::PriceOfOrder;
pub use read::ReadError;
use strategies::WindowScope;

/// The version of the schema this build writes. Bump it when a field's meaning changes;
/// a new field is optional (absent in older files) and needs no bump.
pub const SCHEMA_VERSION: u32 = 1;
/// The schema id written to every results file: [`SCHEMA_PREFIX`] and [`SCHEMA_VERSION`].
pub const SCHEMA: &str = "keyed-bench.results.v1";
/// The schema id without its version number.
pub const SCHEMA_PREFIX: &str = "keyed-bench.results.v";

/// The version of a schema id this build reads: every version from 1 to
/// [`SCHEMA_VERSION`].
fn readable_version(schema: &str) -> Option<u32> {
    let version: u32 = schema.strip_prefix(SCHEMA_PREFIX)?.parse().ok()?;
    (1..=SCHEMA_VERSION).contains(&version).then_some(version)
}

/// The schema ids this build reads, for error messages.
fn readable_schemas() -> String {
    if SCHEMA_VERSION == 1 {
        format!("`{SCHEMA}`")
    } else {
        format!("`{SCHEMA_PREFIX}1` to `{SCHEMA}`")
    }
}

/// A whole results file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Results {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// How, where and when the run was made.
    pub meta: Meta,
    /// One entry per measured (scenario, param, strategy) cell.
    pub runs: Vec<RunResult>,
    /// Cells not measured, with the reason.
    #[serde(default)]
    pub skipped: Vec<Skipped>,
    /// The end-to-end pipeline cells (`pipeline-*` scenarios), one per (scenario, param,
    /// strategy); absent in files from before they existed.
    #[serde(default)]
    pub pipelines: Vec<PipelineRun>,
    /// The cells the run stopped because they made no progress, with the reason; absent
    /// where none did (and in files from before the watchdog).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedCell>,
    /// Each ordered design's figures over the unordered control's in the same cell
    /// ([`price`]); derived from `runs` and `pipelines`, absent in files from before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub price_of_order: Vec<PriceOfOrder>,
    /// Each design's bystanders' p99 under an isolation stressor over its unstressed twin's
    /// ([`isolation`]); derived from `runs`, absent in files from before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub isolation: Vec<IsolationCell>,
}

/// Median, min and max over repetitions.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Spread {
    /// Median.
    pub median: f64,
    /// Minimum.
    pub min: f64,
    /// Maximum.
    pub max: f64,
}

/// The median of `values` (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// Latency percentiles in nanoseconds.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Latency {
    /// 50th percentile.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Maximum.
    pub max: u64,
}

/// Tail percentiles in nanoseconds.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Tail {
    /// 50th percentile.
    pub p50: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Maximum.
    pub max: u64,
}

/// Threads the strategy reported and observed from the process.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Threads {
    /// What the strategy says it started.
    pub reported: usize,
    /// Peak OS threads it added, sampled from the process during the runs.
    pub observed: usize,
}

/// Context switches of the process during a run (mean per repetition).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct ContextSwitches {
    /// Waits.
    pub voluntary: f64,
    /// Preemptions.
    pub involuntary: f64,
}

impl RunResult {
    /// The validity its receipt gives it; `None` in files from before receipts.
    pub fn validity(&self) -> Option<Validity> {
        self.interference.as_ref().map(|receipt| receipt.validity)
    }

    /// Whether its receipt says `void`: kept, but left out of rankings and wall-clock gates.
    pub fn is_void(&self) -> bool {
        self.validity() == Some(Validity::Void)
    }

    /// Its param without the label of its sweep point: the scenario's own (`keys=20`,
    /// `keys=1000 load=0.5`, or empty).
    pub fn own_param(&self) -> &str {
        match &self.settings {
            Some(settings) => settings.base_param(&self.param),
            None => cell::split_sweep(&self.param).0,
        }
    }
}

/// The metrics of one (scenario, param, strategy) cell.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RunResult {
    /// Scenario id.
    pub scenario: String,
    /// `keys=20`, `burst=241`, `load=0.75`, or empty.
    pub param: String,
    /// Strategy id.
    pub strategy: String,
    /// Completed messages per second of wall time, over repetitions.
    pub throughput_per_s: Spread,
    /// Completion - intended arrival, all repetitions merged.
    pub latency_ns: Latency,
    /// Start - ready, all repetitions merged.
    pub hol_ns: Tail,
    /// Latency of keys that are not troubled; null where no key is troubled (all zeros
    /// where every key is).
    pub bystander_latency_ns: Option<Tail>,
    /// Thread counts.
    pub threads: Threads,
    /// Correctness counts, summed over repetitions.
    pub correctness: Correctness,
    /// Process CPU seconds per repetition (mean; every thread of the process).
    pub cpu_s: f64,
    /// Context switches per repetition (mean).
    pub ctx_switches: ContextSwitches,
    /// The most messages in flight at once.
    pub peak_in_flight: usize,
    /// The lower bound on elapsed time.
    pub ideal_s: f64,
    /// `ideal_s / elapsed_s`.
    pub efficiency: f64,
    /// The same with at most `cores - 1` workers in the bound's CPU term (the producer
    /// needs a core); absent in older files.
    #[serde(default)]
    pub machine_efficiency: Option<f64>,
    /// CPU seconds of the producer thread per repetition (mean); absent in older files.
    #[serde(default)]
    pub producer_cpu_s: Option<f64>,
    /// CPU time per message, by whose threads spent it, so that throughput or latency
    /// bought with burnt cores shows; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_per_message_ns: Option<CpuPerMessage>,
    /// Median elapsed seconds per repetition.
    pub elapsed_s: f64,
    /// Messages per repetition.
    pub messages: usize,
    /// Paced scenarios: the offered rate (messages per second).
    pub offered_per_s: Option<f64>,
    /// Paced scenarios: the rate actually sent (median over repetitions).
    pub achieved_per_s: Option<f64>,
    /// Paced scenarios: whether the achieved rate fell below the offered one (by over 2%).
    pub below_offered: Option<bool>,
    /// Worker threads the cell ran with (a scenario may fix its own); absent in older
    /// files, where every cell ran with `meta.workers`.
    #[serde(default)]
    pub workers: Option<usize>,
    /// The admission window the cell ran with; absent in older files.
    #[serde(default)]
    pub window: Option<usize>,
    /// The ideal bound with the service times the runs recorded (median over
    /// repetitions); null where handlers wait.
    #[serde(default)]
    pub measured_floor_s: Option<f64>,
    /// How late the harness timer called the wakers of pending steps (deadline to waker
    /// call), all repetitions merged; null where nothing waited on it.
    #[serde(default)]
    pub timer_lateness_ns: Option<Tail>,
    /// Which messages shared a window in this cell (`strategy` or `type`); absent in
    /// files from before the setting, where every cell had one window per strategy.
    #[serde(default, with = "meta::by_name")]
    pub window_scope: Option<WindowScope>,
    /// Admission windows the strategy opened (1 per strategy, or one per aggregate type
    /// seen); absent in older files.
    #[serde(default)]
    pub windows: Option<usize>,
    /// The per-message cost breakdown, from one more, untimed, repetition that counted the
    /// strategy's events; null where not counted (`--no-breakdown`, older files).
    #[serde(default)]
    pub events_per_message: Option<EventRates>,
    /// Each repetition's own figures, in the order they ran; absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<Samples>,
    /// The process's resident memory while the cell was measured; absent in older files
    /// and where the kernel does not let its high-water mark be reset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<CellMemory>,
    /// The strategy settings the cell ran with, and its point's label within a sweep;
    /// absent in older files (where `meta` holds the run's one setting of each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<CellSettings>,
    /// What the rest of the machine did during the timed repetitions, summed and judged
    /// (`samples.interference` holds each repetition's); absent in older files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<Interference>,
    /// An external design's runtime collections during the timed repetitions, as its
    /// driver reported them (`gc` lines); absent for a design run in process, and for a
    /// driver that reports none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_gc: Option<DriverGc>,
}

/// The garbage collections an external design's driver reported, summed over the timed
/// repetitions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DriverGc {
    /// Collections.
    pub collections: u64,
    /// The time they took, in milliseconds (a JVM's collector beans: its pauses, for G1 on
    /// Java 17).
    pub time_ms: f64,
}

/// Counts of correctness failures seen by the checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Correctness {
    /// Messages that started out of their key's order.
    pub order_violations: u64,
    /// Starts while another message of the same key was running.
    pub overlaps: u64,
    /// Messages of the workload that never started (every message is submitted, and a
    /// refused one aborts the run, so these were accepted).
    pub lost: u64,
    /// Starts beyond a message's first (three starts count 2), plus handler calls for
    /// messages that are not in the workload.
    pub duplicates: u64,
    /// Messages whose handler panicked (contained by the strategy).
    pub failed: u64,
}

impl Correctness {
    /// Whether nothing went wrong.
    pub fn is_clean(&self) -> bool {
        *self == Self::default()
    }

    /// Whether a strategy kept its promise: clean if it promises order, otherwise at
    /// least nothing lost or duplicated (the unordered control may reorder and overlap).
    pub fn kept_promise(&self, ordered: bool) -> bool {
        if ordered {
            self.is_clean()
        } else {
            self.lost == 0 && self.duplicates == 0
        }
    }

    /// Adds another run's counts.
    pub fn add(&mut self, other: &Self) {
        self.order_violations += other.order_violations;
        self.overlaps += other.overlaps;
        self.lost += other.lost;
        self.duplicates += other.duplicates;
        self.failed += other.failed;
    }
}

/// The process's resident memory around one cell's measurement (Linux `VmRSS` before it,
/// and `VmHWM` after it, the high-water mark having been reset at its start): the harness
/// and the workload's messages included, so compare cells of one run with each other.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct CellMemory {
    /// Resident bytes when the cell started.
    pub before_bytes: u64,
    /// The most resident bytes while it ran (its repetitions and the breakdown one).
    pub peak_bytes: u64,
}

/// The figures of each timed repetition of a cell, in the order they ran (one entry per
/// repetition in each list), for comparing two runs with their noise.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Samples {
    /// Messages (completion-driven cells: handled cold commands) / elapsed, per second.
    pub throughput_per_s: Vec<f64>,
    /// Elapsed seconds: first submit to the end of the drain.
    pub elapsed_s: Vec<f64>,
    /// The 99th percentile of the repetition's own latency histogram, in nanoseconds.
    pub latency_p99_ns: Vec<u64>,
    /// The 99th percentile of the repetition's bystander histogram (the keys that are not
    /// troubled), in nanoseconds; empty where no key is troubled, and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bystander_p99_ns: Vec<u64>,
    /// What the rest of the machine did during the repetition; absent in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub interference: Vec<Interference>,
    /// Process CPU seconds (every thread) of the repetition; absent in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_s: Vec<f64>,
}

/// A cell's CPU time per message (means over its repetitions, over `RunResult::messages`),
/// in nanoseconds, by whose threads spent it.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct CpuPerMessage {
    /// Every thread of the process: the producer, the strategy's threads, the harness's
    /// timer and thread sampler (`cpu_s / messages`).
    pub process: f64,
    /// Every thread but the producer (and the extra producers of `--producers`): the
    /// strategy's threads and the harness's (`(cpu_s - producer_cpu_s) / messages`).
    pub off_producer: f64,
    /// The strategy's own threads alone: those started since just before it was built,
    /// read from the kernel's per-thread scheduler statistics; null where the kernel keeps
    /// none.
    pub strategy_threads: Option<f64>,
}

/// Events per message of one counted repetition (see `strategies::Events`); a null field
/// is an event the strategy cannot see.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct EventRates {
    /// Unparks that woke a parked worker.
    pub wakeups: Option<f64>,
    /// Times a worker went to sleep.
    pub parks: Option<f64>,
    /// Mailboxes made for keys that had none.
    pub activations: Option<f64>,
    /// Mailboxes removed once empty.
    pub retirements: Option<f64>,
    /// Hand-offs to a queue that a thread takes from.
    pub hops: Option<f64>,
    /// Idle spins that found work before the worker parked; absent in older files.
    #[serde(default)]
    pub spin_hits: Option<f64>,
    /// Mailboxes a worker took from another worker's queue; absent in older files.
    #[serde(default)]
    pub takes: Option<f64>,
    /// Times a worker parked while another worker's queue held a runnable mailbox;
    /// absent in older files.
    #[serde(default)]
    pub parked_while_queued: Option<f64>,
    /// The share of the counted repetition's producer time (its elapsed time times its
    /// producers) spent blocked on a full window, 0 to 1; not per message. Absent in older
    /// files.
    #[serde(default)]
    pub producer_blocked: Option<f64>,
    /// Messages the counted repetition sent.
    pub messages: u64,
}

/// A cell that was not measured.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Skipped {
    /// Scenario id.
    pub scenario: String,
    /// Strategy id.
    pub strategy: String,
    /// Why.
    pub reason: String,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::workload::Sizes;

    #[test]
    fn a_malformed_or_foreign_file_is_a_clear_error() {
        let dir = std::env::temp_dir().join(format!("keyed-bench-read-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = Results::read(&dir.join("absent.json")).unwrap_err().to_string();
        assert!(missing.starts_with("cannot read"), "{missing}");
        assert!(missing.contains("absent.json: No such file"), "{missing}");
        let folder = Results::read(&dir).unwrap_err().to_string();
        assert!(folder.contains("Is a directory"), "{folder}");
        let cases: [(&[u8], &str); 7] = [
            (b"{ not json", "key must be a string"),
            (b"", "the file is empty"),
            (b"\xff\xfe", "not UTF-8"),
            (
                br#"{"schema": "keyed-bench.results.v0", "runs": 3}"#,
                "schema `keyed-bench.results.v0`",
            ),
            (br#"{"schema": 1}"#, "schema 1 is not a string"),
            (br#"{"runs": []}"#, "no `schema` field"),
            (br#"{"schema": "keyed-bench.results.v1", "runs": []}"#, "missing field `meta`"),
        ];
        for (bytes, expected) in cases {
            std::fs::write(dir.join("bad.json"), bytes).unwrap();
            let bad = Results::read(&dir.join("bad.json")).unwrap_err().to_string();
            assert!(bad.contains("bad.json is not a valid keyed-bench results file"), "{bad}");
            assert!(bad.contains(expected), "{expected}: {bad}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn median_of_odd_and_even() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn numbers_read_back_exactly_as_written() {
        // serde_json's fast float parser is off by one unit in the last place for some
        // values; the `float_roundtrip` feature reads them exactly.
        for value in [4.1359857322182706e299, 0.1 + 0.2, 1e-300, 9_007_199_254_740_993.0] {
            let text = serde_json::to_string(&value).unwrap();
            assert_eq!(serde_json::from_str::<f64>(&text).unwrap(), value, "{text}");
        }
    }

    #[test]
    fn a_negative_measurement_is_named() {
        let reference = include_str!("../../../results/2026-11-30-vm/results.json");
        let path = Path::new("doctored.json");
        assert!(Results::parse(reference.as_bytes(), path).is_ok());
        let mut json: serde_json::Value = serde_json::from_str(reference).unwrap();
        json["runs"][2]["latency_ns"]["p99"] = serde_json::json!(-3);
        let error = Results::parse(json.to_string().as_bytes(), path).unwrap_err().to_string();
        assert!(error.contains("integer `-3`, expected u64"), "{error}");
        json["runs"][2]["latency_ns"]["p99"] = serde_json::json!(3);
        json["runs"][2]["elapsed_s"] = serde_json::json!(-0.5);
        let error = Results::parse(json.to_string().as_bytes(), path).unwrap_err().to_string();
        assert!(error.contains("runs[2] (") && error.contains("`elapsed_s` is -0.5"), "{error}");
    }

    #[test]
    fn per_repetition_samples_are_optional_and_checked() {
        let reference = include_str!("../../../results/2026-11-30-vm/results.json");
        let path = Path::new("samples.json");
        let results = Results::parse(reference.as_bytes(), path).unwrap();
        assert!(results.runs.iter().all(|run| run.samples.is_none()));
        let written = serde_json::to_value(&results).unwrap();
        assert!(written["runs"][0].get("samples").is_none(), "absent, not null");
        let mut json: serde_json::Value = serde_json::from_str(reference).unwrap();
        let samples = serde_json::json!({
            "throughput_per_s": [1.0, 2.0],
            "elapsed_s": [0.5, 0.25],
            "latency_p99_ns": [10, 20],
        });
        json["runs"][1]["samples"] = samples.clone();
        let parsed = Results::parse(json.to_string().as_bytes(), path).unwrap();
        let read = parsed.runs[1].samples.as_ref().unwrap();
        assert_eq!(read.elapsed_s, [0.5, 0.25]);
        assert_eq!(serde_json::to_value(&parsed).unwrap()["runs"][1]["samples"], samples);
        json["runs"][1]["samples"]["elapsed_s"] = serde_json::json!([0.5, -0.25]);
        let error = Results::parse(json.to_string().as_bytes(), path).unwrap_err().to_string();
        assert!(error.contains("`samples.elapsed_s[1]` is -0.25"), "{error}");
        json["runs"][1]["samples"]["elapsed_s"] = serde_json::json!([0.5]);
        let error = Results::parse(json.to_string().as_bytes(), path).unwrap_err().to_string();
        assert!(error.contains("`samples` lists 2, 1 and 2 repetitions"), "{error}");
    }

    #[test]
    fn failed_cells_read_back_and_are_neither_twice_nor_missing() {
        let reference = include_str!("../../../results/2026-11-30-vm/results.json");
        let path = Path::new("failed.json");
        let results = Results::parse(reference.as_bytes(), path).unwrap();
        assert!(results.failed.is_empty() && results.is_finished());
        let written = serde_json::to_value(&results).unwrap();
        assert!(written.get("failed").is_none(), "absent where none failed");
        let mut json: serde_json::Value = serde_json::from_str(reference).unwrap();
        let run = json["runs"].as_array_mut().unwrap().remove(0);
        json["failed"] = serde_json::json!([{
            "scenario": run["scenario"],
            "param": run["param"],
            "strategy": run["strategy"],
            "reason": "no progress for 60 s: 0 of 10 messages done",
            "unit": "messages",
            "done": 0,
            "expected": 10,
            "timeout_s": 60.0,
            "elapsed_s": 61.5,
            "abandoned": false,
        }]);
        let parsed = Results::parse(json.to_string().as_bytes(), path).unwrap();
        assert_eq!(parsed.failed.len(), 1);
        assert!(parsed.is_complete() && !parsed.is_finished(), "done, but not finished");
        assert_eq!(parsed.failed_cells()[0], CellKey::of_run(&results.runs[0]));
        assert_eq!(serde_json::to_value(&parsed).unwrap()["failed"], json["failed"]);
        json["failed"][0]["elapsed_s"] = serde_json::json!(-1.0);
        let error = Results::parse(json.to_string().as_bytes(), path).unwrap_err().to_string();
        assert!(error.contains("`elapsed_s` is -1; a time is never negative"), "{error}");
        json["failed"][0]["elapsed_s"] = serde_json::json!(1.0);
        json["runs"].as_array_mut().unwrap().insert(0, run.clone());
        let error = Results::parse(json.to_string().as_bytes(), path).unwrap_err().to_string();
        assert!(error.contains("the cell is listed twice"), "{error}");
        json["runs"].as_array_mut().unwrap().remove(0);
        json["meta"]["incomplete"] = serde_json::json!({
            "cells_planned": 2,
            "cells_done": 1,
            "missing": [{"scenario": run["scenario"], "param": run["param"], "strategy": run["strategy"]}],
            "stopped_by": null,
        });
        let error = Results::parse(json.to_string().as_bytes(), path).unwrap_err().to_string();
        assert!(error.contains("listed as failed and as missing"), "{error}");
    }

    #[test]
    fn every_version_up_to_this_one_is_read_and_no_other() {
        assert_eq!(readable_version(SCHEMA), Some(SCHEMA_VERSION));
        assert_eq!(readable_version(&format!("{SCHEMA_PREFIX}1")), Some(1));
        for unreadable in ["keyed-bench.results.v0", "keyed-bench.results.v", "other.v1"] {
            assert_eq!(readable_version(unreadable), None, "{unreadable}");
        }
        let next = format!("{SCHEMA_PREFIX}{}", SCHEMA_VERSION + 1);
        assert_eq!(readable_version(&next), None);
    }

    #[test]
    fn a_file_from_before_sizes_were_recorded_reads_as_the_sizes_it_ran() {
        let reference = include_str!("../../../results/2026-11-30-vm/results.json");
        let path = Path::new("reference.json");
        let results = Results::parse(reference.as_bytes(), path).unwrap();
        assert!(!results.meta.quick);
        assert_eq!(results.meta.sizes, Some(Sizes::standard()));
        let mut json: serde_json::Value = serde_json::from_str(reference).unwrap();
        json["meta"]["quick"] = serde_json::json!(true);
        json["meta"]["command"] = serde_json::json!("keyed-bench run --quick");
        let quick = Results::parse(json.to_string().as_bytes(), path).unwrap();
        assert_eq!(quick.meta.sizes, Some(Sizes::quick()));
        for command in ["keyed-bench run --keys 5", "run --loads=0.5", "run --published-async-io"] {
            json["meta"]["command"] = serde_json::json!(command);
            let unknown = Results::parse(json.to_string().as_bytes(), path).unwrap();
            assert_eq!(unknown.meta.sizes, None, "{command}");
        }
        json["meta"]["command"] = serde_json::json!("run --keys-per-type-extra 5 --out x");
        let other = Results::parse(json.to_string().as_bytes(), path).unwrap();
        assert_eq!(other.meta.sizes, Some(Sizes::quick()));
    }

    #[test]
    fn a_file_from_before_the_window_scope_is_measured_again_with_one_window_each() {
        let reference = include_str!("../../../results/2026-11-30-vm/results.json");
        let path = Path::new("reference.json");
        let results = Results::parse(reference.as_bytes(), path).unwrap();
        assert_eq!(results.meta.window_scope, None);
        assert_eq!(results.meta.window_scope(), Some(WindowScope::Strategy));
        assert!(results.runs.iter().all(|run| run.window_scope.is_none()));
        let mut json: serde_json::Value = serde_json::from_str(reference).unwrap();
        for (recorded, scope) in [
            ("default", None),
            ("type", Some(WindowScope::Type)),
            ("strategy", Some(WindowScope::Strategy)),
        ] {
            json["meta"]["window_scope"] = serde_json::json!(recorded);
            json["runs"][0]["window_scope"] = serde_json::json!("type");
            let parsed = Results::parse(json.to_string().as_bytes(), path).unwrap();
            assert_eq!(parsed.meta.window_scope(), scope, "{recorded}");
            assert_eq!(parsed.runs[0].window_scope, Some(WindowScope::Type));
            let written = serde_json::to_value(&parsed).unwrap();
            assert_eq!(written["runs"][0]["window_scope"], "type");
        }
        json["runs"][0]["window_scope"] = serde_json::json!("key");
        let error = Results::parse(json.to_string().as_bytes(), path).unwrap_err().to_string();
        assert!(error.contains("window scope `key`"), "{error}");
    }
}
