//! The output folder: checked before a dry run, prepared before a run.

use std::path::Path;

use super::SuiteError;

/// Fails as the run would on an output folder it could not create: one under a file.
/// Creates nothing (`--dry-run`).
pub fn check_output(out: &Path) -> Result<(), SuiteError> {
    let existing = out.ancestors().find(|path| !path.as_os_str().is_empty() && path.exists());
    match existing {
        Some(path) if !path.is_dir() => Err(SuiteError::Write {
            path: out.display().to_string(),
            source: std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a folder", path.display()),
            ),
        }),
        _ => Ok(()),
    }
}

/// Creates the output folders, failing early (before any measurement) if it cannot, and
/// removes what an earlier run wrote there (`results.json`, `summary.md`,
/// `histograms/*.hgrm`; nothing else), so a run that fails leaves no complete-looking
/// results behind and a run never mixes its files with an earlier one's.
pub fn prepare_output(out: &Path) -> Result<(), SuiteError> {
    let histograms = out.join("histograms");
    let earlier_histograms = std::fs::read_dir(&histograms)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "hgrm"));
    let earlier = [out.join("results.json"), out.join("summary.md")];
    for previous in earlier.into_iter().chain(earlier_histograms) {
        match std::fs::remove_file(&previous) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                let path = previous.display().to_string();
                return Err(SuiteError::Write { path, source: error });
            }
            _ => {}
        }
    }
    writable_output(out)
}

/// Creates the output folders if missing and checks that the folder can be written,
/// keeping everything in it (a resumed run adds to what its earlier sessions wrote).
pub fn writable_output(out: &Path) -> Result<(), SuiteError> {
    let histograms = out.join("histograms");
    std::fs::create_dir_all(&histograms)
        .map_err(|source| SuiteError::Write { path: histograms.display().to_string(), source })?;
    let probe = out.join(".write-probe");
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|source| SuiteError::Write { path: out.display().to_string(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_run_removes_only_what_an_earlier_run_wrote() {
        let out = std::env::temp_dir().join(format!("keyed-bench-prepare-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(out.join("histograms")).unwrap();
        let theirs = ["results.json", "summary.md", "histograms/uniform-inline.hgrm"];
        let others = ["notes.txt", "histograms/README", "plots.png"];
        for name in theirs.iter().chain(&others) {
            std::fs::write(out.join(name), b"earlier").unwrap();
        }
        prepare_output(&out).unwrap();
        for name in theirs {
            assert!(!out.join(name).exists(), "{name} from an earlier run was kept");
        }
        for name in others {
            assert!(out.join(name).exists(), "{name} is not ours to remove");
        }
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn an_output_under_a_file_is_refused_without_creating_anything() {
        let file = std::env::temp_dir().join(format!("keyed-bench-check-{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        assert!(check_output(&file.join("sub")).is_err());
        std::fs::remove_file(&file).unwrap();
        let absent = file.join("a").join("b");
        check_output(&absent).unwrap();
        assert!(!file.exists());
    }
}
