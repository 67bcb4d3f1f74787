//! `results.json`: the versioned schema, built from measurements, written atomically.

use std::path::Path;

pub mod metrics;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use metrics::{ideal_seconds, median, Histograms};
use crate::measure::recorder::Correctness;
use crate::measure::runner::Measurement;
use crate::workload::{Arrivals, Workload};

/// The schema id written to every results file.
pub const SCHEMA: &str = "keyed-bench.results.v1";

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
}

/// How, where and when the run was made.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Meta {
    /// RFC 3339 UTC time the run started.
    pub created: String,
    /// The commit of the working directory (`-dirty` with local changes).
    pub git_commit: String,
    /// `rustc -V`.
    pub rustc: String,
    /// From `/proc/cpuinfo`.
    pub cpu_model: String,
    /// Logical cores available.
    pub cores: usize,
    /// Worker threads per pool.
    pub workers: usize,
    /// The default admission window.
    pub window: usize,
    /// Messages per mailbox turn.
    pub throughput: usize,
    /// The command line.
    pub command: String,
    /// The workload seed.
    pub seed: u64,
    /// Measured repetitions per cell.
    pub repeat: usize,
    /// Whether `--quick` sizes were used.
    pub quick: bool,
    /// The recorder's own cost per message, measured with `inline` and a no-op handler.
    pub recorder_overhead_ns: Option<f64>,
    /// Saturation throughput of `inline` x workers on `uniform`, the base of `open-loop`
    /// loads (messages per second).
    pub saturation_per_s: Option<f64>,
    /// Wall time of the whole suite.
    pub suite_elapsed_s: f64,
    /// Anything a reader must know to interpret the numbers (scaled sweeps, ...).
    pub notes: Vec<String>,
    /// Hash-serial groups per worker (absent in files written before it was recorded).
    #[serde(default)]
    pub groups_per_worker: Option<usize>,
    /// The workload sizes, so that a cell can be measured again (gate confirmation).
    #[serde(default)]
    pub sizes: Option<crate::workload::Sizes>,
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
    /// Latency of keys that are not troubled; null where no key is.
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

/// How far below the offered rate the achieved one may fall before the run is marked.
const RATE_TOLERANCE: f64 = 0.98;

fn latency(histogram: &Histogram<u64>) -> Latency {
    Latency {
        p50: histogram.value_at_quantile(0.5),
        p90: histogram.value_at_quantile(0.9),
        p99: histogram.value_at_quantile(0.99),
        p999: histogram.value_at_quantile(0.999),
        max: histogram.max(),
    }
}

fn tail(histogram: &Histogram<u64>) -> Tail {
    Tail {
        p50: histogram.value_at_quantile(0.5),
        p99: histogram.value_at_quantile(0.99),
        p999: histogram.value_at_quantile(0.999),
        max: histogram.max(),
    }
}

impl RunResult {
    /// The metrics of `measurement` of `strategy` on `workload`; also returns the merged
    /// histograms, to be saved whole.
    pub fn new(
        workload: &Workload,
        strategy: &str,
        measurement: &Measurement,
        workers: usize,
        window: usize,
    ) -> (Self, Histograms) {
        let samples = &measurement.samples;
        let messages = workload.messages.len();
        let mut merged = Histograms::new(workload.has_troubled_keys());
        let mut correctness = Correctness::default();
        for sample in samples {
            merged.add(&sample.histograms);
            correctness.add(&sample.correctness);
        }
        let throughputs: Vec<f64> =
            samples.iter().map(|sample| messages as f64 / sample.elapsed_s).collect();
        let elapsed: Vec<f64> = samples.iter().map(|sample| sample.elapsed_s).collect();
        let mean = |value: fn(&crate::measure::runner::Sample) -> f64| {
            samples.iter().map(value).sum::<f64>() / samples.len() as f64
        };
        let elapsed_s = median(&elapsed);
        let ideal_s = ideal_seconds(workload, workers, workload.window.unwrap_or(window));
        let (offered, achieved) = match workload.arrivals {
            Arrivals::Closed => (None, None),
            Arrivals::Paced => {
                let span_ns = workload.messages.iter().map(|m| m.intended_ns).max().unwrap_or(0);
                let offered = messages as f64 / (span_ns.max(1) as f64 / 1e9);
                let sent: Vec<f64> =
                    samples.iter().map(|sample| messages as f64 / sample.send_s).collect();
                (Some(offered), Some(median(&sent)))
            }
        };
        let result = Self {
            scenario: workload.scenario.as_str().to_owned(),
            param: workload.param.clone(),
            strategy: strategy.to_owned(),
            throughput_per_s: Spread {
                median: median(&throughputs),
                min: throughputs.iter().copied().fold(f64::INFINITY, f64::min),
                max: throughputs.iter().copied().fold(0.0, f64::max),
            },
            latency_ns: latency(&merged.latency),
            hol_ns: tail(&merged.hol),
            bystander_latency_ns: merged.bystander.as_ref().map(tail),
            threads: Threads {
                reported: measurement.threads_reported,
                observed: samples.iter().map(|sample| sample.threads_observed).max().unwrap_or(0),
            },
            correctness,
            cpu_s: mean(|sample| sample.usage.cpu_s),
            ctx_switches: ContextSwitches {
                voluntary: mean(|sample| sample.usage.voluntary as f64),
                involuntary: mean(|sample| sample.usage.involuntary as f64),
            },
            peak_in_flight: measurement.peak_in_flight,
            ideal_s,
            efficiency: ideal_s / elapsed_s,
            elapsed_s,
            messages,
            offered_per_s: offered,
            achieved_per_s: achieved,
            below_offered: offered.zip(achieved).map(|(o, a)| a < o * RATE_TOLERANCE),
        };
        (result, merged)
    }
}

/// Why a results file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("cannot read {path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// Why (part of the message, so that every way of printing it says why).
        error: std::io::Error,
    },
    /// The file is not a results file of this schema.
    #[error("{path} is not a valid keyed-bench results file: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

impl Results {
    /// Reads and checks a results file.
    pub fn read(path: &Path) -> Result<Self, ReadError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|error| ReadError::Io { path: shown, error })?;
        Self::parse(&bytes, path)
    }

    /// Checks and parses the bytes of a results file; `path` names it in errors. Any bytes
    /// at all give a results value or an error, never a panic.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Self, ReadError> {
        let invalid =
            |reason: String| ReadError::Invalid { path: path.display().to_string(), reason };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(invalid("the file is empty".into()));
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|error| invalid(format!("not UTF-8 text: {error}")))?;
        // Read the schema first, so that a file of another version is named as such rather
        // than by the first field this version misses in it.
        #[derive(Deserialize)]
        struct Versioned {
            schema: Option<serde_json::Value>,
        }
        match serde_json::from_str::<Versioned>(text) {
            Ok(Versioned { schema: Some(serde_json::Value::String(schema)) })
                if schema != SCHEMA =>
            {
                return Err(invalid(format!("schema `{schema}`, expected `{SCHEMA}`")));
            }
            Ok(Versioned { schema: Some(schema) }) if !schema.is_string() => {
                return Err(invalid(format!(
                    "schema {schema} is not a string; expected `{SCHEMA}`"
                )));
            }
            Ok(Versioned { schema: None }) => {
                return Err(invalid(format!("no `schema` field; expected `{SCHEMA}`")));
            }
            _ => {}
        }
        let results: Self =
            serde_json::from_str(text).map_err(|error| invalid(error.to_string()))?;
        results.check_measurements().map_err(invalid)?;
        Ok(results)
    }

    /// Every measurement is a count, a rate, a time or a ratio: never negative.
    fn check_measurements(&self) -> Result<(), String> {
        fn first_negative(value: &serde_json::Value, path: &str) -> Option<(String, f64)> {
            match value {
                serde_json::Value::Number(number) => {
                    number.as_f64().filter(|n| *n < 0.0).map(|n| (path.to_owned(), n))
                }
                serde_json::Value::Object(fields) => fields.iter().find_map(|(key, field)| {
                    let path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                    first_negative(field, &path)
                }),
                _ => None,
            }
        }
        for (index, run) in self.runs.iter().enumerate() {
            let json = serde_json::to_value(run).map_err(|error| error.to_string())?;
            if let Some((field, value)) = first_negative(&json, "") {
                return Err(format!(
                    "runs[{index}] ({} {} {}): `{field}` is {value}; a measurement is never \
                     negative",
                    run.scenario, run.param, run.strategy
                ));
            }
        }
        Ok(())
    }
}

/// Writes `contents` to `path` through a temporary file in the same folder and a rename, so
/// a reader never sees a half-written file: either the old file (or none) or the new one.
/// On any failure the temporary file is removed and `path` is left as it was.
pub fn write_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let Some(name) = path.file_name() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path names a folder, not a file",
        ));
    };
    // Hidden and unique per process, beside the target so that the rename stays on one
    // file system (a rename across file systems is a copy, and not atomic).
    let mut temporary_name = std::ffi::OsString::from(".");
    temporary_name.push(name);
    temporary_name.push(format!(".{}.tmp", std::process::id()));
    let temporary = path.with_file_name(temporary_name);
    let written = std::fs::File::create(&temporary).and_then(|mut file| {
        file.write_all(contents)?;
        file.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&temporary, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    renamed
}

/// Percentile steps per halving of the distance to 100% in `.hgrm` output (HdrHistogram's
/// own tools use 5).
const HGRM_TICKS_PER_HALF_DISTANCE: u32 = 5;

/// The `.hgrm` percentile distribution of a histogram (HdrHistogram's text format).
pub fn hgrm(histogram: &Histogram<u64>) -> String {
    use std::fmt::Write as _;
    let mut out = String::from("       Value     Percentile TotalCount 1/(1-Percentile)\n\n");
    let mut count = 0;
    for step in histogram.iter_quantiles(HGRM_TICKS_PER_HALF_DISTANCE) {
        count += step.count_since_last_iteration();
        let quantile = step.quantile_iterated_to();
        let inverse =
            if quantile < 1.0 { format!("{:.2}", 1.0 / (1.0 - quantile)) } else { String::new() };
        let line = format!(
            "{:12.3} {:14.12} {:10} {:14}",
            step.value_iterated_to() as f64 / 1e3,
            quantile,
            count,
            inverse
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(
        out,
        "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]\n#[Max     = {:12.3}, Total count    = {:12}]",
        histogram.mean() / 1e3,
        histogram.stdev() / 1e3,
        histogram.max() as f64 / 1e3,
        histogram.len()
    );
    out.push_str("#[Values in microseconds]\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::metrics::new_histogram;

    #[test]
    fn hgrm_lists_rising_percentiles_up_to_the_total() {
        let mut histogram = new_histogram();
        for value in 1..=10_000u64 {
            histogram.record(value * 1_000).unwrap();
        }
        let text = hgrm(&histogram);
        let rows: Vec<Vec<f64>> = text
            .lines()
            .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.contains("Value"))
            .map(|line| {
                line.split_whitespace().take(3).map(|field| field.parse().unwrap()).collect()
            })
            .collect();
        assert!(rows.len() > 20, "{text}");
        assert!(rows.windows(2).all(|pair| pair[0][1] <= pair[1][1] && pair[0][0] <= pair[1][0]));
        let last = rows.last().unwrap();
        assert_eq!((last[1], last[2]), (1.0, 10_000.0));
        assert!(text.contains("Total count    =        10000"), "{text}");
    }

    #[test]
    fn atomic_writes_replace_whole_files_and_leave_nothing_behind_on_failure() {
        let dir = std::env::temp_dir().join(format!("keyed-bench-atomic-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("taken")).unwrap();
        let file = dir.join("results.json");
        write_atomically(&file, b"first").unwrap();
        write_atomically(&file, b"second").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"second");
        // A folder where the file should go, a missing folder, a path with no file name.
        assert!(write_atomically(&dir.join("taken"), b"x").is_err());
        assert!(write_atomically(&dir.join("absent/results.json"), b"x").is_err());
        assert!(write_atomically(Path::new("/"), b"x").is_err());
        let mut left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["results.json", "taken"]);
        assert_eq!(std::fs::read_dir(dir.join("taken")).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).ok();
    }

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
}
