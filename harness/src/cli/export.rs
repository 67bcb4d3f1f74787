//! `keyed-bench export`: clap-derived raw values, then a `TryFrom` into the validated
//! [`ExportConfig`].

use std::path::PathBuf;

use crate::limits::SettingError;
use crate::report::export::{ExportConfig, ExportFormat};

/// Flags of `keyed-bench export`.
#[derive(Clone, Debug, clap::Args)]
pub struct ExportArgs {
    /// The results file.
    #[arg(long)]
    pub results: PathBuf,
    /// `bmf` (Bencher Metric Format) or `gab` (github-action-benchmark, bigger is better).
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Write to this file (whole or not at all) instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

impl TryFrom<ExportArgs> for ExportConfig {
    type Error = SettingError;

    fn try_from(args: ExportArgs) -> Result<Self, SettingError> {
        if let Some(out) = &args.out {
            let given = out.display().to_string();
            if out.as_os_str().is_empty() {
                return Err(SettingError::Out { given, why: "is empty; give the file to write" });
            }
        }
        Ok(Self { results: args.results, format: args.format, out: args.out })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_output_is_rejected() {
        let args = |out: &str| ExportArgs {
            results: "results.json".into(),
            format: ExportFormat::Bmf,
            out: Some(out.into()),
        };
        let error = ExportConfig::try_from(args("")).unwrap_err().to_string();
        assert_eq!(error, "--out `` is empty; give the file to write");
        let config = ExportConfig::try_from(args("out.json")).unwrap();
        assert_eq!(config.out, Some(PathBuf::from("out.json")));
    }
}
