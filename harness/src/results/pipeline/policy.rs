//! What a pipeline cell runs with and records: its commit policy, retry policy, mitigation
//! and transport; readers group cells by them.

use serde::{Deserialize, Serialize};

/// What a consumer commits for a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CommitPolicy {
    /// The offset after the highest one below which everything completed (safe).
    #[serde(rename = "contiguous")]
    Contiguous,
    /// As `contiguous`, with the completed offsets above it in the metadata (safe, fewer
    /// redeliveries).
    #[serde(rename = "contiguous+metadata")]
    ContiguousMetadata,
    /// The offset after the highest completed one (unsafe: skips incomplete records below
    /// it after a crash).
    #[serde(rename = "highest-completed")]
    HighestCompleted,
}

strategies::names!(CommitPolicy, UnknownCommitPolicy, "commit policy", "policies" {
    Contiguous = "contiguous",
    ContiguousMetadata = "contiguous+metadata",
    HighestCompleted = "highest-completed",
});

impl CommitPolicy {
    /// Whether a consumer that commits by it loses nothing when it dies or gives its
    /// partitions up: its commit never covers a record that has not completed, so the next
    /// owner runs every record the commit leaves out. `highest-completed` covers the
    /// incomplete records below its highest completed one, and loses them.
    pub fn is_safe(self) -> bool {
        match self {
            Self::Contiguous | Self::ContiguousMetadata => true,
            Self::HighestCompleted => false,
        }
    }
}

/// What the consumer does with a failed attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RetryPolicy {
    /// Wait out the backoff on the key, and try again.
    #[serde(rename = "retry-in-place")]
    RetryInPlace,
    /// As in place, with the partition paused until the record is settled.
    #[serde(rename = "pause-partition")]
    PausePartition,
    /// Send it to a retry topic and go on.
    #[serde(rename = "retry-topic")]
    RetryTopic,
}

strategies::names!(RetryPolicy, UnknownRetryPolicy, "retry policy", "policies" {
    RetryInPlace = "retry-in-place",
    PausePartition = "pause-partition",
    RetryTopic = "retry-topic",
});

/// What the consumer does about an expansion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mitigation {
    /// Nothing: every partition is consumed at once.
    #[serde(rename = "none")]
    None,
    /// The new partitions wait until the old ones are committed up to the expansion.
    #[serde(rename = "drain-then-expand")]
    DrainThenExpand,
}

strategies::names!(Mitigation, UnknownMitigation, "mitigation", "mitigations" {
    None = "none",
    DrainThenExpand = "drain-then-expand",
});

/// Which transport a run's pipeline scenarios consume through (`--transport`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    /// The embedded, in-process log (`pipeline::EmbeddedTransport`).
    #[default]
    Embedded,
    /// Kafka's protocol, through librdkafka, on an in-process mock cluster per cell or on
    /// the user's cluster (the `kafka` feature).
    Kafka,
}

impl TransportKind {
    /// Its name on the command line and in results.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Embedded => "embedded",
            Self::Kafka => "kafka",
        }
    }

    /// Whether this build can run it.
    pub fn is_built(self) -> bool {
        match self {
            Self::Embedded => true,
            Self::Kafka => cfg!(feature = "kafka"),
        }
    }
}

impl std::fmt::Display for TransportKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
