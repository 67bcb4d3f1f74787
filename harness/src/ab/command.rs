//! The command itself: the output folder checked, the base found or built, the rounds run
//! with real child processes, the judgement written and rendered.
//!
//! The output folder holds, once done:
//! - `summary.md`: the report as Markdown;
//! - `ab.json`: the comparison, the rounds and each cell's void rounds;
//! - `base/results.json`, `head/results.json`: each side's merged results, one sample per
//!   valid round in `runs[].samples` (`keyed-bench compare` reads them too);
//! - `rounds/<side>-<round>/`: each round's own run, and `rounds/<side>-<round>.log` its
//!   output.

use std::path::{Path, PathBuf};

use super::process::{run_round, Binary};
use super::{
    base, judge, render_json, render_markdown, render_text, run_rounds, AbConfig, AbError, Base,
    BuildInfo, Report, Rounds, Side, OUT_MARKER,
};
use crate::results::fs::write_atomically;
use crate::results::Results;

/// What `keyed-bench ab` concluded.
#[derive(Debug)]
pub struct AbOutcome {
    /// The report, as text.
    pub report: String,
    /// False when `--fail-on-regression` was given and some row is slower past it.
    pub pass: bool,
    /// With `--fail-on-regression`, the cells with too few valid samples on a side to be
    /// judged: where it passed, the verdict is inconclusive ([`super::UNJUDGED`]).
    pub unjudged: Vec<String>,
    /// What was written.
    pub notes: Vec<String>,
}

/// The files of an earlier comparison that the next one into its folder replaces.
const OWN_ENTRIES: [&str; 5] = ["rounds", "base", "head", "ab.json", "summary.md"];

/// `out` made absolute, if a comparison may write there: a folder that does not exist, an
/// empty one, or one an earlier comparison wrote ([`OUT_MARKER`]). Writes nothing.
fn check_out(out: &Path) -> Result<PathBuf, AbError> {
    let refuse = |why: String| AbError::Out { path: out.display().to_string(), why };
    let absolute = std::path::absolute(out).map_err(|error| refuse(error.to_string()))?;
    if !absolute.exists() {
        return Ok(absolute);
    }
    if !absolute.is_dir() {
        return Err(refuse("is a file; expected a folder for the comparison".into()));
    }
    let mut entries = std::fs::read_dir(&absolute).map_err(|error| refuse(error.to_string()))?;
    if entries.next().is_some() && !absolute.join(OUT_MARKER).is_file() {
        return Err(refuse(
            "holds files that keyed-bench ab did not write; give another folder, or empty it"
                .into(),
        ));
    }
    Ok(absolute)
}

/// Makes `out` (checked by [`check_out`]) ready: an earlier comparison's files removed, the
/// marker written, `rounds/` made.
fn prepare_out(out: &Path) -> Result<(), AbError> {
    for entry in OWN_ENTRIES.map(|name| out.join(name)) {
        let removed = if entry.is_dir() {
            std::fs::remove_dir_all(&entry)
        } else if entry.exists() {
            std::fs::remove_file(&entry)
        } else {
            Ok(())
        };
        removed.map_err(|error| AbError::io("remove", &entry, error))?;
    }
    let rounds = out.join("rounds");
    std::fs::create_dir_all(&rounds).map_err(|error| AbError::io("create", &rounds, error))?;
    let marker = out.join(OUT_MARKER);
    let text = "written by keyed-bench ab: the next comparison into this folder replaces it\n";
    std::fs::write(&marker, text).map_err(|error| AbError::io("write", &marker, error))
}

/// Writes `contents` to `path`, its folder made first.
fn write(path: &Path, contents: &[u8]) -> Result<(), AbError> {
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder).map_err(|error| AbError::io("create", folder, error))?;
    }
    write_atomically(path, contents).map_err(|error| AbError::io("write", path, error))
}

/// The base side: the prebuilt binary, or BASE located and built.
fn base_of(
    config: &AbConfig,
    info: &BuildInfo,
    say: &mut dyn FnMut(&str),
) -> Result<Base, AbError> {
    if let Some(binary) = &config.base_binary {
        return Base::prebuilt(&config.base, binary);
    }
    let here =
        std::env::current_dir().map_err(|error| AbError::io("read", Path::new("."), error))?;
    let located = base::locate(&config.base, &here, config.cache.as_deref(), info)?;
    base::build(&located, info, say)
}

/// Runs `keyed-bench ab` (see the module docs of [`super`]): this binary is the head,
/// `info` says how it was built; `say` tells the progress.
pub fn run_ab(
    config: &AbConfig,
    info: &BuildInfo,
    say: &mut dyn FnMut(&str),
) -> Result<AbOutcome, AbError> {
    let out = check_out(&config.out)?;
    let base = base_of(config, info, say)?;
    let head = std::env::current_exe()
        .map_err(|error| AbError::io("find", Path::new("this binary"), error))?;
    prepare_out(&out)?;
    let rounds_dir = out.join("rounds");
    let binaries = [
        Binary { path: &base.binary, dir: base.dir.as_deref() },
        Binary { path: &head, dir: None },
    ];
    let mut run = |side: Side, round: usize| -> Result<Results, AbError> {
        let binary = &binaries[usize::from(side == Side::Head)];
        let folder = rounds_dir.join(format!("{side}-{round:02}"));
        run_round(binary, (side, round), &config.run_flags, &folder)
    };
    let rounds = run_rounds(config.rounds, &mut run, say)?;
    conclude(config, &out, (&base, &head), &rounds)
}

/// Judges the rounds, writes the files and renders the report.
fn conclude(
    config: &AbConfig,
    out: &Path,
    (base, head): (&Base, &Path),
    rounds: &Rounds,
) -> Result<AbOutcome, AbError> {
    let Some((base_results, head_results, comparison)) = judge(rounds, &config.options) else {
        let report = "no round ran\n".into();
        return Ok(AbOutcome { report, pass: true, unjudged: Vec::new(), notes: Vec::new() });
    };
    let regressions = config.fail_on_regression.map(|pct| (pct, comparison.regressions(pct)));
    let pass = regressions.as_ref().is_none_or(|(_, found)| found.is_empty());
    let unjudged = match config.fail_on_regression {
        Some(_) => comparison.unjudged().iter().map(ToString::to_string).collect(),
        None => Vec::new(),
    };
    let report = Report {
        base,
        head,
        head_commit: &head_results.meta.git_commit,
        run_flags: &config.run_flags,
        planned: config.rounds,
        rounds,
        comparison: &comparison,
        regressions: regressions.as_ref().map(|(pct, found)| (*pct, found.as_slice())),
    };
    let json = |results: &Results| serde_json::to_vec_pretty(results).expect("results serialise");
    write(&out.join("base").join("results.json"), &json(&base_results))?;
    write(&out.join("head").join("results.json"), &json(&head_results))?;
    write(&out.join("ab.json"), render_json(&report).as_bytes())?;
    write(&out.join("summary.md"), render_markdown(&report).as_bytes())?;
    let notes = vec![format!(
        "wrote {0}/summary.md, {0}/ab.json, and each side's merged results in \
         {0}/base/results.json and {0}/head/results.json",
        out.display()
    )];
    Ok(AbOutcome { report: render_text(&report), pass, unjudged, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ab-out-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn an_output_folder_of_others_is_refused_and_an_earlier_comparison_replaced() {
        let dir = scratch("others");
        assert_eq!(check_out(&dir).unwrap(), dir, "a folder yet to be made");
        std::fs::create_dir_all(&dir).unwrap();
        assert!(check_out(&dir).is_ok(), "an empty folder");
        std::fs::write(dir.join("notes.txt"), "mine").unwrap();
        let error = check_out(&dir).unwrap_err();
        assert!(error.to_string().contains("did not write"), "{error}");
        assert!(error.is_bad_input());
        let error = check_out(&dir.join("notes.txt")).unwrap_err();
        assert!(error.to_string().ends_with("is a file; expected a folder for the comparison"));
        std::fs::remove_file(dir.join("notes.txt")).unwrap();
        prepare_out(&dir).unwrap();
        std::fs::write(dir.join("rounds/base-01.log"), "old").unwrap();
        std::fs::write(dir.join("ab.json"), "{}").unwrap();
        assert!(check_out(&dir).is_ok(), "an earlier comparison's folder");
        prepare_out(&dir).unwrap();
        assert!(!dir.join("ab.json").exists() && !dir.join("rounds/base-01.log").exists());
        assert!(dir.join("rounds").is_dir() && dir.join(OUT_MARKER).is_file());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
