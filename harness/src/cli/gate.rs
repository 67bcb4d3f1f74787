//! `keyed-bench gate`: clap-derived raw values, then a `TryFrom` into the validated
//! [`GateConfig`].

use std::path::{Path, PathBuf};

use crate::gate::{Format, GateConfig, Rules, DEFAULT_CONFIRM, MAX_CONFIRM};
use crate::limits::{check_in, FlagRange, NumberParser, SettingError};

/// The range of `--confirm`.
const CONFIRM_RANGE: FlagRange =
    FlagRange { flag: "confirm", min: 0.0, max: MAX_CONFIRM as f64, integer: true };

/// Flags of `keyed-bench gate`.
#[derive(clap::Args, Clone, Debug)]
pub struct GateArgs {
    /// The results file to judge.
    #[arg(long)]
    pub results: PathBuf,
    /// The rules file [default: gates.toml of the working directory if there is one, else
    /// the project's rules, built in]. A file named here must exist.
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// The baseline file of the baseline rules [default: gates-baseline.json beside the rules].
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Re-measurements of a failing wall-clock rule before it fails [0..=10] (0: none).
    #[arg(long, default_value_t = DEFAULT_CONFIRM, allow_negative_numbers = true,
          value_parser = NumberParser::<usize>::new(CONFIRM_RANGE))]
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
        check_in(&CONFIRM_RANGE, args.confirm)?;
        let rules = match (args.rules, args.baseline) {
            (Some(rules), baseline) => {
                let beside =
                    || rules.parent().unwrap_or_else(|| Path::new(".")).join("gates-baseline.json");
                let baseline = baseline.unwrap_or_else(beside);
                Rules::File { rules, baseline }
            }
            (None, Some(baseline)) => match Rules::default_here() {
                Rules::File { rules, .. } => Rules::File { rules, baseline },
                Rules::BuiltIn => {
                    return Err(SettingError::Conflict {
                        flag: "baseline",
                        other: "rules",
                        why: "a baseline file belongs to a rules file; give --rules too",
                    })
                }
            },
            (None, None) => Rules::default_here(),
        };
        Ok(Self {
            results: args.results,
            rules,
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
            rules: Some("ci/gates.toml".into()),
            baseline: None,
            format: Format::Text,
            confirm: 2,
            update_baseline: false,
            allow_incomplete: false,
        }
    }

    #[test]
    fn the_baseline_sits_beside_the_rules_and_confirm_is_bounded() {
        let baseline_of = |args: GateArgs| match GateConfig::try_from(args).unwrap().rules {
            Rules::File { baseline, .. } => baseline,
            Rules::BuiltIn => panic!("a rules file was named"),
        };
        assert_eq!(baseline_of(args()), PathBuf::from("ci/gates-baseline.json"));
        let bare = GateArgs { rules: Some("gates.toml".into()), ..args() };
        assert_eq!(baseline_of(bare), PathBuf::from("gates-baseline.json"));
        let error = GateConfig::try_from(GateArgs { confirm: 11, ..args() }).unwrap_err();
        assert_eq!(error.to_string(), "--confirm must be in 0..=10, got 11");
    }
}
