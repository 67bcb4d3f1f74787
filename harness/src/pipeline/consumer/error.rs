//! Why an incarnation could not run.

use crate::pipeline::commit::CommitError;
use crate::pipeline::transport::TransportError;
use strategies::Design;

/// Why an incarnation could not run.
#[derive(Debug, thiserror::Error)]
pub enum ConsumerError {
    /// The executor could not be built with these settings.
    #[error("cannot build {strategy}: {reason}")]
    Build {
        /// The strategy.
        strategy: Design,
        /// What was wrong.
        reason: String,
    },
    /// A committed offset's metadata could not be resumed from.
    #[error("partition {partition}: {source}")]
    Resume {
        /// The partition.
        partition: u32,
        /// What was wrong.
        source: CommitError,
    },
    /// The transport refused a commit.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The pipeline's watch was cancelled (by the watchdog that supervises its cell).
    #[error("the cell was cancelled")]
    Cancelled,
    /// A consumer driver (docs/external.md, "Consumers") failed or wrote what cannot be
    /// true: the reason, with its last words.
    #[error("{0}")]
    External(String),
}
