//! `keyed-bench gate`: clap-derived raw values, then a `TryFrom` into the validated
//! [`GateConfig`].

use std::path::{Path, PathBuf};

use crate::gate::{Format, GateConfig, DEFAULT_CONFIRM, MAX_CONFIRM};
use crate::limits::SettingError;

/// Flags of `keyed-bench gate`.
#[derive(clap::Args, Clone, Debug)]
pub struct GateArgs {
    /// The results file to judge.
    #[arg(long)]
    pub results: PathBuf,
    /// The rules file.
    #[arg(long, default_value = "gates.toml")]
    pub rules: PathBuf,
    /// The baseline file of the baseline rules [default: gates-baseline.json beside the rules].
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Re-measurements of a failing wall-clock rule before it fails [0..=10] (0: none).
    #[arg(long, default_value_t = DEFAULT_CONFIRM)]
    pub confirm: usize,
    /// Write the baseline file from these results instead of judging them.
    #[arg(long)]
    pub update_baseline: bool,
    /// Judge an incomplete results file (a run stopped before its last cell) on the cells it
    /// has; the report says first how many are missing and which rules their absence left
    /// unjudged. Without it, such a file is refused (exit 2).
    #[arg(long)]
    pub allow_incomplete: bool,
}

impl TryFrom<GateArgs> for GateConfig {
    type Error = SettingError;

    fn try_from(args: GateArgs) -> Result<Self, SettingError> {
        if args.confirm > MAX_CONFIRM {
            return Err(SettingError::OutOfRange {
                flag: "confirm",
                value: args.confirm.to_string(),
                expected: format!("in 0..={MAX_CONFIRM}"),
            });
        }
        let baseline = args.baseline.unwrap_or_else(|| {
            args.rules.parent().unwrap_or_else(|| Path::new(".")).join("gates-baseline.json")
        });
        Ok(Self {
            results: args.results,
            rules: args.rules,
            baseline,
            format: args.format,
            confirm: args.confirm,
            update_baseline: args.update_baseline,
            allow_incomplete: args.allow_incomplete,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> GateArgs {
        GateArgs {
            results: "r.json".into(),
            rules: "ci/gates.toml".into(),
            baseline: None,
            format: Format::Text,
            confirm: 2,
            update_baseline: false,
            allow_incomplete: false,
        }
    }

    #[test]
    fn the_baseline_sits_beside_the_rules_and_confirm_is_bounded() {
        let config = GateConfig::try_from(args()).unwrap();
        assert_eq!(config.baseline, PathBuf::from("ci/gates-baseline.json"));
        let bare = GateConfig::try_from(GateArgs { rules: "gates.toml".into(), ..args() });
        assert_eq!(bare.unwrap().baseline, PathBuf::from("gates-baseline.json"));
        let error = GateConfig::try_from(GateArgs { confirm: 11, ..args() }).unwrap_err();
        assert_eq!(error.to_string(), "--confirm must be in 0..=10, got 11");
    }
}
