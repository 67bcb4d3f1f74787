//! What a cell's consumers' calls into the transport took (commit calls, poll batches), and
//! what its Kafka clients saw of the cluster.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// What a cell's consumers' calls into the transport took, summed over its incarnations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TransportCalls {
    /// The wall time of each `commit` call: a round trip to the broker on Kafka, an
    /// in-process call on the embedded log.
    pub commit_call: CallSummary,
    /// The records of each poll that returned any.
    pub poll_batch: BatchSummary,
}

/// What a cell's Kafka clients saw of the cluster, from librdkafka's statistics (each
/// client reports them every 100 ms; counted from each client's reports, so a client that
/// went within 100 ms of an event may not have counted it) and the members' polls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientEvents {
    /// Partitions whose leader changed from one broker to another between two reports of
    /// a client, summed over the cell's clients (each saw the change for itself).
    pub leader_changes: u64,
    /// Produce requests the producers (the log's, the retry and dead-letter topics') sent
    /// again (librdkafka's `txretries`).
    pub produce_retries: u64,
    /// Requests the members' clients sent again: fetches, commits, offset reads, group
    /// requests (`txretries`).
    pub request_retries: u64,
    /// Connections to a broker that a client lost (`disconnects`, every client).
    pub disconnects: u64,
    /// Errors the members' clients reported in their polls (a broker down, a request
    /// timed out).
    pub client_errors: u64,
}

/// The wall time of a set of calls, in microseconds (to 3 significant digits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallSummary {
    /// Calls timed (failed ones included).
    pub calls: u64,
    /// The median.
    pub p50_us: f64,
    /// The 99th percentile.
    pub p99_us: f64,
    /// The longest.
    pub max_us: f64,
}

/// The records per poll of the polls that returned any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchSummary {
    /// Polls that returned records.
    pub polls: u64,
    /// Records per such poll, on average.
    pub mean: f64,
    /// The median batch.
    pub p50: u64,
    /// The 99th percentile batch.
    pub p99: u64,
    /// The largest batch.
    pub max: u64,
}

/// What an incarnation's calls into the transport took, as it runs: histograms that merge
/// over a cell's incarnations into its [`TransportCalls`]. Never written to a file.
#[derive(Clone, Debug, PartialEq)]
pub struct CallSamples {
    /// Each commit call's wall time, in nanoseconds.
    commit_ns: Histogram<u64>,
    /// Each non-empty poll's records.
    batch: Histogram<u64>,
    /// Records over every non-empty poll (for an exact mean).
    batch_records: u64,
}

impl Default for CallSamples {
    fn default() -> Self {
        let histogram = || Histogram::new(3).expect("3 significant digits are valid");
        Self { commit_ns: histogram(), batch: histogram(), batch_records: 0 }
    }
}

/// Records `value` in `histogram`, which grows to hold it (clamped only past what it can
/// ever hold).
fn record(histogram: &mut Histogram<u64>, value: u64) {
    if histogram.record(value).is_err() {
        histogram.saturating_record(value);
    }
}

impl CallSamples {
    /// One commit call that took `nanos`.
    pub fn commit(&mut self, nanos: u64) {
        record(&mut self.commit_ns, nanos);
    }

    /// One poll that returned `records` (none: not a batch, not counted).
    pub fn poll(&mut self, records: usize) {
        if records > 0 {
            record(&mut self.batch, records as u64);
            self.batch_records += records as u64;
        }
    }

    /// Adds `other`'s calls to these.
    pub fn merge(&mut self, other: &Self) {
        // Both histograms resize as they grow: adding never runs out of range.
        let _ = self.commit_ns.add(&other.commit_ns);
        let _ = self.batch.add(&other.batch);
        self.batch_records += other.batch_records;
    }

    /// The summary of every call.
    pub fn summary(&self) -> TransportCalls {
        let (commit, batch) = (&self.commit_ns, &self.batch);
        let us = |nanos: u64| nanos as f64 / 1e3;
        let commit_call = if commit.is_empty() {
            CallSummary::default()
        } else {
            CallSummary {
                calls: commit.len(),
                p50_us: us(commit.value_at_quantile(0.5)),
                p99_us: us(commit.value_at_quantile(0.99)),
                max_us: us(commit.max()),
            }
        };
        let poll_batch = if batch.is_empty() {
            BatchSummary::default()
        } else {
            BatchSummary {
                polls: batch.len(),
                mean: self.batch_records as f64 / batch.len() as f64,
                p50: batch.value_at_quantile(0.5),
                p99: batch.value_at_quantile(0.99),
                max: batch.max(),
            }
        };
        TransportCalls { commit_call, poll_batch }
    }
}
