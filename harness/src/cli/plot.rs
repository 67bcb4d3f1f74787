//! `keyed-bench plot`: clap-derived raw values, then a `TryFrom` into the validated
//! [`PlotConfig`].

use std::path::PathBuf;

use crate::report::html::PlotConfig;

/// The results file a folder holds.
const RESULTS_FILE: &str = "results.json";

/// `keyed-bench plot`: raw arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct PlotArgs {
    /// The results file (`DIR/results.json`), or the folder that holds it.
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// Folder for the PNG and SVG charts [default: the input's folder + /plots].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The HTML report [default: the input's folder + /report.html].
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Also write the summary (Markdown, a `.md` path) from the results file to FILE: a
    /// run's `summary.md` again after the summary's code changed. Not written unless given.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
}

/// Plot arguments that cannot work.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlotArgsError {
    /// `--out` names something that is not a folder.
    #[error("--out {0} is a file; expected a folder for the charts")]
    OutIsFile(String),
    /// `--report` names a folder.
    #[error("--report {0} is a folder; expected the path of an .html file")]
    ReportIsFolder(String),
    /// `--summary` names no Markdown file (a folder, the results file, the report).
    #[error("--summary {0} is not the path of a .md file")]
    SummaryNotMarkdown(String),
    /// A path flag was given as an empty string.
    #[error("--{0} is empty; give a path")]
    Empty(&'static str),
}

impl TryFrom<PlotArgs> for PlotConfig {
    type Error = PlotArgsError;

    fn try_from(args: PlotArgs) -> Result<Self, Self::Error> {
        let given = [
            ("input", Some(&args.input)),
            ("out", args.out.as_ref()),
            ("report", args.report.as_ref()),
            ("summary", args.summary.as_ref()),
        ];
        if let Some((flag, _)) =
            given.iter().find(|(_, path)| path.is_some_and(|p| p.as_os_str().is_empty()))
        {
            return Err(PlotArgsError::Empty(flag));
        }
        let input = if args.input.is_dir() { args.input.join(RESULTS_FILE) } else { args.input };
        let folder = match input.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let out = args.out.unwrap_or_else(|| folder.join("plots"));
        if out.is_file() {
            return Err(PlotArgsError::OutIsFile(out.display().to_string()));
        }
        let report = args.report.unwrap_or_else(|| folder.join("report.html"));
        if report.is_dir() {
            return Err(PlotArgsError::ReportIsFolder(report.display().to_string()));
        }
        let markdown = |path: &PathBuf| {
            !path.is_dir() && path.extension().is_some_and(|extension| extension == "md")
        };
        if let Some(summary) = args.summary.as_ref().filter(|path| !markdown(path)) {
            return Err(PlotArgsError::SummaryNotMarkdown(summary.display().to_string()));
        }
        Ok(Self { input, out, report, summary: args.summary })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_defaults_sit_next_to_the_input() {
        let args = PlotArgs {
            input: PathBuf::from("results/run/results.json"),
            out: None,
            report: None,
            summary: None,
        };
        let config = PlotConfig::try_from(args).expect("valid");
        assert_eq!(config.out, PathBuf::from("results/run/plots"));
        assert_eq!(config.report, PathBuf::from("results/run/report.html"));
        let bare = PlotArgs {
            input: PathBuf::from("results.json"),
            out: None,
            report: None,
            summary: None,
        };
        assert_eq!(PlotConfig::try_from(bare).expect("valid").out, PathBuf::from("./plots"));
        for (input, out, report, summary, flag) in [
            ("", None, None, None, "input"),
            ("r.json", Some(""), None, None, "out"),
            ("r.json", None, Some(""), None, "report"),
            ("r.json", None, None, Some(""), "summary"),
        ] {
            let args = PlotArgs {
                input: input.into(),
                out: out.map(PathBuf::from),
                report: report.map(PathBuf::from),
                summary: summary.map(PathBuf::from),
            };
            assert_eq!(PlotConfig::try_from(args), Err(PlotArgsError::Empty(flag)));
        }
        for summary in ["results/run/results.json", "results/run/report.html", "."] {
            let args = PlotArgs {
                input: PathBuf::from("results/run/results.json"),
                out: None,
                report: None,
                summary: Some(PathBuf::from(summary)),
            };
            assert_eq!(
                PlotConfig::try_from(args),
                Err(PlotArgsError::SummaryNotMarkdown(summary.to_owned())),
                "--summary {summary} would overwrite what is not a summary"
            );
        }
    }
}
