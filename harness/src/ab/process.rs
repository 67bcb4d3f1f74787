//! One round of one side: `BINARY run [run flags] --repeat 1 --no-breakdown --out DIR`, a
//! child process whose output goes to `DIR.log`, then its `DIR/results.json`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::{AbError, Side};
use crate::results::Results;
use crate::suite::command_line;

/// Output lines of a failed run shown in its error.
const TAIL_LINES: usize = 8;

/// A side's binary and the folder its runs start in.
#[derive(Clone, Debug)]
pub(super) struct Binary<'a> {
    /// The executable.
    pub path: &'a Path,
    /// The working directory of its runs; `None` for this process's.
    pub dir: Option<&'a Path>,
}

/// The words after the binary: `run`, the run flags, then what a round sets itself (the
/// breakdown repetition is skipped unless the run flags already skip it: nothing reads it).
pub(super) fn words(run_flags: &[String], out: &Path) -> Vec<String> {
    let mut words = vec!["run".to_owned()];
    words.extend(run_flags.iter().cloned());
    words.extend(["--repeat".to_owned(), "1".to_owned(), "--out".to_owned()]);
    words.push(out.display().to_string());
    if !run_flags.iter().any(|flag| flag == "--no-breakdown") {
        words.push("--no-breakdown".to_owned());
    }
    words
}

/// The last [`TAIL_LINES`] lines of `log`, each after a newline and indented.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|line| !line.trim().is_empty()).collect();
    let start = lines.len().saturating_sub(TAIL_LINES);
    lines[start..].iter().map(|line| format!("\n  {line}")).collect()
}

/// Runs `side`'s round `round` with `binary` into `out` (absolute, not yet there) and reads
/// its results.
pub(super) fn run_round(
    binary: &Binary<'_>,
    (side, round): (Side, usize),
    run_flags: &[String],
    out: &Path,
) -> Result<Results, AbError> {
    let log = PathBuf::from(format!("{}.log", out.display()));
    let file = std::fs::File::create(&log).map_err(|error| AbError::io("create", &log, error))?;
    let errors = file.try_clone().map_err(|error| AbError::io("open", &log, error))?;
    let words = words(run_flags, out);
    let mut command = Command::new(binary.path);
    command.args(&words).stdin(Stdio::null()).stdout(file).stderr(errors);
    if let Some(dir) = binary.dir {
        command.current_dir(dir);
    }
    let status = command.status().map_err(|error| AbError::io("run", binary.path, error))?;
    if !status.success() {
        let shown = binary.path.display().to_string();
        return Err(AbError::Run {
            side,
            round,
            command: command_line(
                std::iter::once(shown.as_str()).chain(words.iter().map(String::as_str)),
            ),
            status: status.to_string(),
            log: log.display().to_string(),
            tail: tail(&log),
        });
    }
    Ok(Results::read(&out.join("results.json"))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_repeats_once_into_its_folder_without_the_breakdown() {
        let flags = vec!["--scenario".to_owned(), "uniform".to_owned()];
        let words = words(&flags, Path::new("/r/base-01"));
        assert_eq!(
            words,
            [
                "run",
                "--scenario",
                "uniform",
                "--repeat",
                "1",
                "--out",
                "/r/base-01",
                "--no-breakdown"
            ]
        );
        let given = vec!["--no-breakdown".to_owned()];
        let words = super::words(&given, Path::new("/r/head-02"));
        assert_eq!(words.iter().filter(|w| *w == "--no-breakdown").count(), 1);
    }

    #[test]
    fn a_failed_run_names_its_command_status_and_output() {
        let dir = std::env::temp_dir().join(format!("ab-process-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("fails.sh");
        std::fs::write(&script, "#!/bin/sh\necho \"error: no such flag $2\" >&2\nexit 2\n")
            .unwrap();
        let mut permissions = std::fs::metadata(&script).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&script, permissions).unwrap();
        let binary = Binary { path: &script, dir: None };
        let flags = vec!["--bogus".to_owned()];
        let error = run_round(&binary, (Side::Base, 3), &flags, &dir.join("base-03")).unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with("round 3, base: `"), "{text}");
        assert!(text.contains("run --bogus --repeat 1"), "{text}");
        assert!(text.contains("exit status: 2"), "{text}");
        assert!(text.contains("base-03.log") && text.contains("\n  error: no such flag --bogus"));
        assert!(!error.is_bad_input());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
