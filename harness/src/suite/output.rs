//! The output folder: one run at a time, and no run destroys another's work.
//!
//! # Protocol
//!
//! 1. **Check** ([`check_output`], also all that `--dry-run` does): the folder can be
//!    created, and a fresh run may write there. It may not where the folder holds an
//!    incomplete run (resume it, or give `--overwrite`), a results file this build cannot
//!    read, or files the suite did not write (`--overwrite` keeps those and writes beside
//!    them). A complete earlier run of the suite's own files is replaced: that is what
//!    `results/latest` is for.
//! 2. **Lock** ([`OutputLock::take`]): the run holds an advisory lock ([`LOCK_FILE`], with
//!    its pid and command) for as long as it writes. A second run, or a second resume, of
//!    the same folder finds it held and is refused, naming the holder. The operating system
//!    releases the lock of a process that ends however it ends, so a lock file left by a
//!    killed run is taken over, with a note; the lock file is removed when the run ends.
//! 3. **Prepare** ([`prepare_output`]): under the lock, the check is made again (another
//!    run may have written in between), the suite's own files of the earlier run are
//!    removed (a fresh run; a resumed one keeps everything), and the folder is checked
//!    writable, all before anything is measured.

use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::path::{Path, PathBuf};

use super::SuiteError;
use crate::results::Results;

/// The lock file a run holds in its output folder, with the holder's pid and command.
pub const LOCK_FILE: &str = ".keyed-bench.lock";

/// Whether a fresh run replaces what an earlier one left ([`check_output`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// A fresh run: refused where it would destroy an incomplete run or write among files
    /// the suite did not write.
    Fresh,
    /// A fresh run with `--overwrite`: replaces any earlier run, keeps others' files.
    Overwrite,
    /// A resumed run: adds to what its earlier sessions wrote, keeping everything.
    Resume,
}

impl Start {
    /// How a run treats what its output folder holds: a resumed run keeps it; a fresh one
    /// replaces the suite's own files, refusing or not as `overwrite` (`--overwrite`) says.
    pub fn of(overwrite: bool, resumed: bool) -> Self {
        match (resumed, overwrite) {
            (true, _) => Self::Resume,
            (false, true) => Self::Overwrite,
            (false, false) => Self::Fresh,
        }
    }
}

/// What a fresh run would do to the earlier contents of its folder.
#[derive(Debug, Default)]
struct Contents {
    /// `results.json`, read: `None` where there is none.
    results: Option<Result<Results, String>>,
    /// The suite's own files of an earlier run (results, summary, histograms, charts,
    /// report), relative to the folder.
    own: Vec<PathBuf>,
    /// Files the suite did not write, relative to the folder.
    foreign: Vec<PathBuf>,
}

/// Whether `relative`, a file inside an output folder, is one the suite writes: the
/// results, the summary, the histograms, `plot`'s charts and report, and the hidden
/// temporary and lock files of the run itself.
fn is_own(relative: &Path) -> bool {
    let name = relative.file_name().and_then(|name| name.to_str()).unwrap_or("");
    let extension = relative.extension().and_then(|extension| extension.to_str());
    let folder = relative.parent().and_then(|parent| parent.to_str()).unwrap_or("");
    match folder {
        "" => {
            matches!(name, "results.json" | "summary.md" | "report.html" | LOCK_FILE)
                || (name.starts_with('.') && name.ends_with(".tmp"))
        }
        "histograms" => extension == Some("hgrm"),
        "plots" => matches!(extension, Some("svg" | "png")),
        _ => false,
    }
}

/// Every file under `out` (relative to it), in sorted order; folders themselves are not
/// listed. An absent folder has none.
fn files_under(out: &Path) -> Result<Vec<PathBuf>, SuiteError> {
    let mut files = Vec::new();
    let mut folders = vec![PathBuf::new()];
    while let Some(relative) = folders.pop() {
        let entries = match std::fs::read_dir(out.join(&relative)) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => return Err(write_error(&out.join(&relative), source)),
        };
        for entry in entries {
            let entry = entry.map_err(|source| write_error(out, source))?;
            let path = relative.join(entry.file_name());
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => folders.push(path),
                _ => files.push(path),
            }
        }
    }
    files.sort();
    Ok(files)
}

fn write_error(path: &Path, source: std::io::Error) -> SuiteError {
    SuiteError::Write { path: path.display().to_string(), source }
}

fn inspect(out: &Path) -> Result<Contents, SuiteError> {
    let (own, foreign) = files_under(out)?.into_iter().partition(|file| is_own(file));
    let file = out.join("results.json");
    let results = file.exists().then(|| Results::read(&file).map_err(|error| error.to_string()));
    Ok(Contents { results, own, foreign })
}

/// Why a fresh run may not write into `out` without `--overwrite`, if it may not.
fn refusal(out: &Path, contents: &Contents) -> Option<String> {
    let shown = out.display();
    let incomplete = match &contents.results {
        Some(Ok(results)) => results.meta.incomplete.as_ref(),
        Some(Err(error)) => {
            return Some(format!(
                "{shown} holds a results file this build cannot read ({error}); give another \
                 --out, or --overwrite to replace it"
            ))
        }
        None => None,
    };
    if let Some(left) = incomplete {
        return Some(format!(
            "{shown} holds an incomplete run ({} of {} cells done); {}, or give --overwrite to \
             start afresh and lose them",
            left.cells_done,
            left.cells_planned,
            resume_hint(out)
        ));
    }
    let first = contents.foreign.first()?;
    Some(format!(
        "{shown} holds {} file(s) the suite did not write ({}{}); give another --out, or \
         --overwrite to write beside them (only the suite's own files are replaced)",
        contents.foreign.len(),
        first.display(),
        if contents.foreign.len() > 1 { ", ..." } else { "" }
    ))
}

/// How to go on with the run whose output folder is `out`, quoted for a shell.
pub fn resume_hint(out: &Path) -> String {
    let out = out.display().to_string();
    format!("resume with: {}", command_line(["keyed-bench", "run", "--resume", out.as_str()]))
}

/// `words` as one command line a POSIX shell reads back as those words: each quoted where
/// it needs it (a space, a quote, a `$`). A word holding a NUL byte, which no command line
/// can, is shown as Rust would escape it.
pub fn command_line<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    let mut after_x = false;
    let quoted: Vec<String> = words
        .into_iter()
        .map(|word| {
            let word = hide_secret(word, after_x);
            after_x = word == "-X";
            match shlex::try_quote(&word) {
                Ok(quoted) => quoted.into_owned(),
                Err(_) => format!("{word:?}"),
            }
        })
        .collect();
    quoted.join(" ")
}

/// `word` with the value of a secret `-X key=value` written `<secret>`: the word after a
/// `-X` (`after_x`), or a `-Xkey=value`.
fn hide_secret(word: &str, after_x: bool) -> String {
    let (flag, setting) = match word.strip_prefix("-X") {
        Some(setting) if !setting.is_empty() => ("-X", setting),
        _ if after_x => ("", word),
        _ => return word.to_owned(),
    };
    let Some((key, value)) = setting.split_once('=') else {
        return word.to_owned();
    };
    let setting =
        crate::pipeline::ClientSetting { key: key.trim().to_owned(), value: value.to_owned() };
    if setting.is_secret() {
        format!("{flag}{}", setting.recorded())
    } else {
        word.to_owned()
    }
}

/// Fails as the run would on an output folder it could not create (one under a file) or
/// may not write into (see [`Start`]). Creates and removes nothing (`--dry-run`).
pub fn check_output(out: &Path, start: Start) -> Result<(), SuiteError> {
    let existing = out.ancestors().find(|path| !path.as_os_str().is_empty() && path.exists());
    if let Some(path) = existing.filter(|path| !path.is_dir()) {
        let why = format!("{} is not a folder", path.display());
        return Err(write_error(out, std::io::Error::new(std::io::ErrorKind::NotADirectory, why)));
    }
    if start != Start::Fresh {
        return Ok(());
    }
    match refusal(out, &inspect(out)?) {
        Some(why) => Err(SuiteError::Occupied { why }),
        None => Ok(()),
    }
}

/// Creates the output folders and checks that they can be written, failing early (before
/// any measurement) if not. A fresh run first removes the suite's own files of an earlier
/// run (so a run that fails leaves no complete-looking results behind and never mixes its
/// files with an earlier one's), after checking again that it may ([`check_output`]); a
/// resumed one keeps everything. Call it holding the folder's [`OutputLock`].
pub fn prepare_output(out: &Path, start: Start) -> Result<(), SuiteError> {
    check_output(out, start)?;
    if start != Start::Resume {
        for relative in inspect(out)?.own {
            if relative.as_os_str() == LOCK_FILE {
                continue;
            }
            let path = out.join(relative);
            match std::fs::remove_file(&path) {
                Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                    return Err(write_error(&path, error));
                }
                _ => {}
            }
        }
    }
    let histograms = out.join("histograms");
    std::fs::create_dir_all(&histograms).map_err(|source| write_error(&histograms, source))?;
    let probe = out.join(".write-probe.tmp");
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|source| write_error(out, source))
}

/// The advisory lock a run holds on its output folder ([`LOCK_FILE`]), released, and its
/// file removed, when dropped.
#[derive(Debug)]
pub struct OutputLock {
    file: File,
    path: PathBuf,
}

impl OutputLock {
    /// Its lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Who holds an output folder's lock, as its lock file at `path` says.
fn holder(path: &Path) -> String {
    let mut text = String::new();
    let _ = File::open(path).and_then(|mut file| file.read_to_string(&mut text));
    describe_holder(&text)
}

/// A lock file's holder, from its text: its pid, then its command.
fn describe_holder(text: &str) -> String {
    let mut lines = text.lines();
    match (lines.next(), lines.next()) {
        (Some(pid), Some(command)) => format!("pid {pid}, `{command}`"),
        _ => "a run that has not yet said who it is".to_owned(),
    }
}

impl OutputLock {
    /// Takes the lock of `out` (created if missing) for the run of `command`. Returns the
    /// lock and, where a run that ended without releasing it (killed) left its lock file,
    /// a note saying whose it was. A lock held by a running process refuses, naming it.
    pub fn take(out: &Path, command: &str) -> Result<(Self, Option<String>), SuiteError> {
        std::fs::create_dir_all(out).map_err(|source| write_error(out, source))?;
        let path = out.join(LOCK_FILE);
        loop {
            let mut file = File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|source| write_error(&path, source))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    return Err(SuiteError::Locked {
                        out: out.display().to_string(),
                        holder: holder(&path),
                    });
                }
                Err(std::fs::TryLockError::Error(source)) => {
                    return Err(write_error(&path, source))
                }
            }
            // The holder before us may have removed the file between our open and our lock:
            // then we hold the lock of a file nobody else will see. Take the one at the path.
            if !same_file(&file, &path) {
                continue;
            }
            let mut earlier = String::new();
            file.read_to_string(&mut earlier).map_err(|source| write_error(&path, source))?;
            let stale = (!earlier.trim().is_empty()).then(|| {
                format!(
                    "took over the lock of {} left by a run that ended without releasing it \
                     ({})",
                    out.display(),
                    describe_holder(&earlier)
                )
            });
            let mine = format!("{}\n{command}\n", std::process::id());
            file.set_len(0)
                .and_then(|()| file.rewind())
                .and_then(|()| file.write_all(mine.as_bytes()))
                .map_err(|source| write_error(&path, source))?;
            return Ok((Self { file, path }, stale));
        }
    }
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(held), Ok(named)) => held.dev() == named.dev() && held.ino() == named.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.exists()
}

impl Drop for OutputLock {
    fn drop(&mut self) {
        // Removed while still held, so that no run locks a file about to disappear without
        // seeing (in `take`) that it did.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_line_never_holds_a_secret_setting() {
        let words = [
            "keyed-bench",
            "run",
            "-X",
            "sasl.password=hunter2",
            "-Xssl.key.password=pw",
            "-X",
            "linger.ms=5",
            "--out",
            "a b",
        ];
        assert_eq!(
            command_line(words),
            "keyed-bench run -X 'sasl.password=<secret>' '-Xssl.key.password=<secret>' -X \
             'linger.ms=5' --out 'a b'"
        );
    }

    fn scratch(name: &str) -> PathBuf {
        let out =
            std::env::temp_dir().join(format!("keyed-bench-output-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        out
    }

    fn write_files(out: &Path, names: &[&str]) {
        for name in names {
            let path = out.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, b"earlier").unwrap();
        }
    }

    #[test]
    fn a_command_line_quotes_what_a_shell_would_split_or_expand() {
        assert_eq!(command_line(["keyed-bench", "run", "--quick"]), "keyed-bench run --quick");
        let out = Path::new("results/my run's $HOME");
        let hint = resume_hint(out);
        let command = hint.strip_prefix("resume with: ").unwrap();
        let words = shlex::split(command).unwrap();
        assert_eq!(words, ["keyed-bench", "run", "--resume", "results/my run's $HOME"]);
        let words = shlex::split(&command_line(["a b", "it's", "$x", ""])).unwrap();
        assert_eq!(words, ["a b", "it's", "$x", ""]);
    }

    #[test]
    fn overwrite_removes_only_what_the_suite_wrote() {
        let out = scratch("overwrite");
        let theirs = ["results.json", "summary.md", "histograms/uniform-inline.hgrm"];
        let plots = ["plots/throughput.svg", "plots/throughput.png", "report.html"];
        let others = ["notes.txt", "histograms/README", "plots/mine.pdf"];
        write_files(&out, &theirs);
        write_files(&out, &plots);
        write_files(&out, &others);
        let refused = check_output(&out, Start::Fresh).unwrap_err().to_string();
        assert!(refused.contains("cannot read"), "{refused}");
        prepare_output(&out, Start::Overwrite).unwrap();
        for name in theirs.iter().chain(&plots) {
            assert!(!out.join(name).exists(), "{name} from an earlier run was kept");
        }
        for name in others {
            assert!(out.join(name).exists(), "{name} is not the suite's to remove");
        }
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn a_fresh_run_is_refused_among_files_the_suite_did_not_write() {
        let out = scratch("foreign");
        write_files(&out, &["README.md", "histograms/uniform-inline.hgrm"]);
        let refused = check_output(&out, Start::Fresh).unwrap_err().to_string();
        assert!(refused.contains("1 file(s) the suite did not write (README.md)"), "{refused}");
        assert!(prepare_output(&out, Start::Fresh).is_err());
        assert!(out.join("histograms/uniform-inline.hgrm").exists(), "a refusal removed a file");
        check_output(&out, Start::Resume).unwrap();
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn an_output_under_a_file_is_refused_without_creating_anything() {
        let file = scratch("under-a-file");
        std::fs::write(&file, b"x").unwrap();
        assert!(check_output(&file.join("sub"), Start::Fresh).is_err());
        std::fs::remove_file(&file).unwrap();
        let absent = file.join("a").join("b");
        check_output(&absent, Start::Fresh).unwrap();
        assert!(!file.exists());
    }

    #[test]
    fn a_held_lock_refuses_a_second_run_naming_the_holder_and_is_released_on_drop() {
        let out = scratch("lock");
        let (lock, stale) = OutputLock::take(&out, "keyed-bench run --quick").unwrap();
        assert_eq!(stale, None);
        let refused = OutputLock::take(&out, "keyed-bench run").unwrap_err().to_string();
        let me = std::process::id();
        assert!(refused.contains(&format!("pid {me}, `keyed-bench run --quick`")), "{refused}");
        drop(lock);
        assert!(!out.join(LOCK_FILE).exists(), "the lock file was left behind");
        let (again, stale) = OutputLock::take(&out, "keyed-bench run").unwrap();
        assert_eq!(stale, None);
        drop(again);
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn a_lock_file_left_by_a_killed_run_is_taken_over_with_a_note() {
        let out = scratch("stale");
        write_files(&out, &[]);
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join(LOCK_FILE), "4194305\nkeyed-bench run --quick\n").unwrap();
        let (lock, stale) = OutputLock::take(&out, "keyed-bench run").unwrap();
        let note = stale.expect("a note on the stale lock");
        assert!(note.contains("pid 4194305, `keyed-bench run --quick`"), "{note}");
        let written = std::fs::read_to_string(out.join(LOCK_FILE)).unwrap();
        assert_eq!(written, format!("{}\nkeyed-bench run\n", std::process::id()));
        drop(lock);
        std::fs::remove_dir_all(&out).unwrap();
    }
}
