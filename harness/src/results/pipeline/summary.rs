//! Figures summarized from per-record or per-tick samples: the committed-offset lag and
//! produce-to-apply latency.

use serde::{Deserialize, Serialize};

/// The committed-offset lag over a run, in records, from every commit tick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LagSummary {
    /// The median tick.
    pub p50: u64,
    /// The 99th percentile tick.
    pub p99: u64,
    /// The largest.
    pub max: u64,
}

impl LagSummary {
    /// The summary of every commit tick's lag (`samples`, sorted in place).
    pub fn of(samples: &mut [u64]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_unstable();
        let at = |quantile: f64| samples[nearest_rank(samples.len(), quantile)];
        Self { p50: at(0.5), p99: at(0.99), max: samples[samples.len() - 1] }
    }
}

/// The index of `quantile` in `len` sorted samples (rounded to the nearest rank).
fn nearest_rank(len: usize, quantile: f64) -> usize {
    ((len - 1) as f64 * quantile).round() as usize
}

/// Produce-to-apply latency of a set of records, in microseconds: from each record's
/// intended produce time to its first application.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Records measured (applied ones; a dead letter is never applied).
    pub records: u64,
    /// The median.
    pub p50_us: f64,
    /// The 99th percentile.
    pub p99_us: f64,
    /// The largest.
    pub max_us: f64,
}

impl LatencySummary {
    /// The summary of `nanos` (one value per record).
    pub fn of(mut nanos: Vec<u64>) -> Self {
        if nanos.is_empty() {
            return Self::default();
        }
        nanos.sort_unstable();
        let at = |quantile: f64| nanos[nearest_rank(nanos.len(), quantile)] as f64 / 1e3;
        Self {
            records: nanos.len() as u64,
            p50_us: at(0.5),
            p99_us: at(0.99),
            max_us: nanos[nanos.len() - 1] as f64 / 1e3,
        }
    }
}

/// The committed-offset lag at one commit tick.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LagPoint {
    /// Seconds since the pipeline's epoch.
    pub at_s: f64,
    /// Records completed above the committed offsets, summed over the member's partitions.
    pub lag: u64,
}
