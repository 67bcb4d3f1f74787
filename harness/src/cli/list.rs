//! `keyed-bench list`: every strategy and scenario, with descriptions and default sizes.

use crate::report::catalog::{scenarios_table, strategies_table};

/// Flags of `keyed-bench list` (none).
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
pub struct ListArgs {}

/// The text `keyed-bench list` prints.
pub fn list(_: &ListArgs) -> String {
    format!("{}\n{}", strategies_table(), scenarios_table())
}
