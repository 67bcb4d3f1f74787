//! `keyed-bench history`: clap-derived raw values, then a `TryFrom` into the validated
//! [`HistoryConfig`].

use std::path::PathBuf;

use crate::report::history::HistoryConfig;

/// The page's name in the results folder, where `--out` is not given.
const PAGE: &str = "index.html";

/// `keyed-bench history`: raw arguments.
#[derive(Clone, Debug, clap::Args)]
pub struct HistoryArgs {
    /// The folder of committed runs: every `results.json` under it is read, but for those
    /// in its default output folders (a command's output, never a committed run).
    #[arg(long, value_name = "DIR", default_value = crate::results::fs::RESULTS_DIR)]
    pub results: PathBuf,
    /// The page to write [default: the results folder + /index.html].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// History arguments that cannot work.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum HistoryArgsError {
    /// `--results` names no folder.
    #[error("--results {0} is not a folder; expected the folder of committed runs")]
    ResultsNotFolder(String),
    /// `--out` names a folder, or a file that is not HTML.
    #[error("--out {0} is not the path of an .html file")]
    OutNotHtml(String),
    /// A path flag was given as an empty string.
    #[error("--{0} is empty; give a path")]
    Empty(&'static str),
}

impl TryFrom<HistoryArgs> for HistoryConfig {
    type Error = HistoryArgsError;

    fn try_from(args: HistoryArgs) -> Result<Self, Self::Error> {
        if args.results.as_os_str().is_empty() {
            return Err(HistoryArgsError::Empty("results"));
        }
        if args.out.as_ref().is_some_and(|out| out.as_os_str().is_empty()) {
            return Err(HistoryArgsError::Empty("out"));
        }
        if !args.results.is_dir() {
            return Err(HistoryArgsError::ResultsNotFolder(args.results.display().to_string()));
        }
        let out = args.out.unwrap_or_else(|| args.results.join(PAGE));
        let html = out.extension().is_some_and(|extension| extension == "html");
        if out.is_dir() || !html {
            return Err(HistoryArgsError::OutNotHtml(out.display().to_string()));
        }
        Ok(Self { results: args.results, out })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_defaults_into_the_results_folder_and_bad_paths_are_refused() {
        let dir = std::env::temp_dir();
        let args = |results: &str, out: Option<&str>| HistoryArgs {
            results: PathBuf::from(results),
            out: out.map(PathBuf::from),
        };
        let given = dir.display().to_string();
        let config = HistoryConfig::try_from(args(&given, None)).expect("valid");
        assert_eq!(config.out, dir.join("index.html"));
        let config = HistoryConfig::try_from(args(&given, Some("page.html"))).expect("valid");
        assert_eq!(config.out, PathBuf::from("page.html"));
        let refused = |results: &str, out: Option<&str>| {
            HistoryConfig::try_from(args(results, out)).unwrap_err()
        };
        assert_eq!(refused("", None), HistoryArgsError::Empty("results"));
        assert_eq!(refused(&given, Some("")), HistoryArgsError::Empty("out"));
        let missing = dir.join("keyed-bench-no-such-folder").display().to_string();
        assert_eq!(refused(&missing, None), HistoryArgsError::ResultsNotFolder(missing.clone()));
        assert_eq!(refused(&given, Some(&given)), HistoryArgsError::OutNotHtml(given.clone()));
        assert_eq!(
            refused(&given, Some("page.md")),
            HistoryArgsError::OutNotHtml("page.md".to_owned())
        );
    }
}
