//! Files of a run: where commands write by default, atomic writes, and histograms in
//! HdrHistogram's `.hgrm` text format.

use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;

/// The folder of results: the committed runs, and the default output folders below.
pub const RESULTS_DIR: &str = "results";
/// Where `keyed-bench run` writes unless `--out` says otherwise.
pub const RUN_OUT: &str = "results/latest";
/// Where `keyed-bench ab` writes unless `--out` says otherwise.
pub const AB_OUT: &str = "results/ab";
/// Every default output folder of a command, each within [`RESULTS_DIR`]: none is a
/// committed run, so the repository's `.gitignore` ignores each (a test holds it to that)
/// and `keyed-bench history` reads none of them ([`default_outs_in`]).
pub const DEFAULT_OUTS: [&str; 2] = [RUN_OUT, AB_OUT];

/// Where each of [`DEFAULT_OUTS`] sits in the folder of results `results` (given in place
/// of [`RESULTS_DIR`]): `results/ab` is `<results>/ab`.
pub fn default_outs_in(results: &Path) -> Vec<PathBuf> {
    DEFAULT_OUTS
        .iter()
        .map(|out| results.join(Path::new(out).strip_prefix(RESULTS_DIR).unwrap_or(Path::new(out))))
        .collect()
}

/// Writes `contents` to `path` through a temporary file in the same folder and a rename, so
/// a reader never sees a half-written file: either the old file (or none) or the new one.
/// On any failure the temporary file is removed and `path` is left as it was.
pub fn write_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    replace(path, contents, true)
}

/// [`write_atomically`] without waiting for the data to reach the disk: a reader, and the
/// next process after this one ends however it ends, see the old file or the new one whole;
/// only a crash of the machine itself may leave the old one (or, on some file systems, an
/// empty one). For a file replaced often, such as the results saved after every cell.
pub fn replace_atomically(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    replace(path, contents, false)
}

fn replace(path: &Path, contents: &[u8], durable: bool) -> std::io::Result<()> {
    use std::io::Write as _;
    let Some(name) = path.file_name() else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "the path names a folder, not a file",
        ));
    };
    // Hidden and unique per process, beside the target so that the rename stays on one
    // file system (a rename across file systems is a copy, and not atomic).
    let mut temporary_name = std::ffi::OsString::from(".");
    temporary_name.push(name);
    temporary_name.push(format!(".{}.tmp", std::process::id()));
    let temporary = path.with_file_name(temporary_name);
    let written = std::fs::File::create(&temporary).and_then(|mut file| {
        file.write_all(contents)?;
        if durable {
            file.sync_all()?;
        }
        Ok(())
    });
    let renamed = written.and_then(|()| std::fs::rename(&temporary, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    renamed
}

/// Percentile steps per halving of the distance to 100% in `.hgrm` output (HdrHistogram's
/// own tools use 5).
const HGRM_TICKS_PER_HALF_DISTANCE: u32 = 5;

/// The `.hgrm` percentile distribution of a histogram (HdrHistogram's text format).
pub fn hgrm(histogram: &Histogram<u64>) -> String {
    use std::fmt::Write as _;
    let mut out = String::from("       Value     Percentile TotalCount 1/(1-Percentile)\n\n");
    let mut count = 0;
    for step in histogram.iter_quantiles(HGRM_TICKS_PER_HALF_DISTANCE) {
        count += step.count_since_last_iteration();
        let quantile = step.quantile_iterated_to();
        let inverse =
            if quantile < 1.0 { format!("{:.2}", 1.0 / (1.0 - quantile)) } else { String::new() };
        let line = format!(
            "{:12.3} {:14.12} {:10} {:14}",
            step.value_iterated_to() as f64 / 1e3,
            quantile,
            count,
            inverse
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let _ = writeln!(
        out,
        "#[Mean    = {:12.3}, StdDeviation   = {:12.3}]\n#[Max     = {:12.3}, Total count    = {:12}]",
        histogram.mean() / 1e3,
        histogram.stdev() / 1e3,
        histogram.max() as f64 / 1e3,
        histogram.len()
    );
    out.push_str("#[Values in microseconds]\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_output_folder_is_a_folder_of_results_ignored_by_git() {
        let ignore = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.gitignore");
        let ignore = std::fs::read_to_string(ignore).unwrap();
        for out in DEFAULT_OUTS {
            assert!(out.starts_with(&format!("{RESULTS_DIR}/")), "{out}");
            let ignored = ignore
                .lines()
                .map(str::trim)
                .any(|line| line.trim_start_matches('/').trim_end_matches('/') == out);
            assert!(ignored, "the default output folder {out} is not in .gitignore");
        }
        let within = default_outs_in(Path::new("runs"));
        assert_eq!(within, [Path::new("runs/latest"), Path::new("runs/ab")]);
    }
    use crate::measure::histograms::new_histogram;

    #[test]
    fn hgrm_lists_rising_percentiles_up_to_the_total() {
        let mut histogram = new_histogram();
        for value in 1..=10_000u64 {
            histogram.record(value * 1_000).unwrap();
        }
        let text = hgrm(&histogram);
        let rows: Vec<Vec<f64>> = text
            .lines()
            .filter(|line| !line.is_empty() && !line.starts_with('#') && !line.contains("Value"))
            .map(|line| {
                line.split_whitespace().take(3).map(|field| field.parse().unwrap()).collect()
            })
            .collect();
        assert!(rows.len() > 20, "{text}");
        assert!(rows.windows(2).all(|pair| pair[0][1] <= pair[1][1] && pair[0][0] <= pair[1][0]));
        let last = rows.last().unwrap();
        assert_eq!((last[1], last[2]), (1.0, 10_000.0));
        assert!(text.contains("Total count    =        10000"), "{text}");
    }

    #[test]
    fn atomic_writes_replace_whole_files_and_leave_nothing_behind_on_failure() {
        let dir = std::env::temp_dir().join(format!("keyed-bench-atomic-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("taken")).unwrap();
        let file = dir.join("results.json");
        write_atomically(&file, b"first").unwrap();
        write_atomically(&file, b"second").unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), b"second");
        // A folder where the file should go, a missing folder, a path with no file name.
        assert!(write_atomically(&dir.join("taken"), b"x").is_err());
        assert!(write_atomically(&dir.join("absent/results.json"), b"x").is_err());
        assert!(write_atomically(Path::new("/"), b"x").is_err());
        let mut left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["results.json", "taken"]);
        assert_eq!(std::fs::read_dir(dir.join("taken")).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).ok();
    }
}
