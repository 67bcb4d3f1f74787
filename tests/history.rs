//! The history page (`keyed-bench history`, results/index.html) made again from the
//! committed runs is the committed page byte for byte: a run committed without making the
//! page again, or a change to the page's code without it, fails here. Every run folder
//! under results/ is named on it; and a results file that cannot be read stops the command
//! with status 2, naming the file, with nothing written.

use std::path::{Path, PathBuf};
use std::process::Command;

use harness::report::history::{collect, find_results, read_runs, render};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_committed_page_is_made_again_byte_for_byte_and_names_every_run() {
    let results = root().join("results");
    let committed = std::fs::read_to_string(results.join("index.html"))
        .expect("results/index.html: make it with `cargo run --release -- history`");
    let runs = read_runs(&results).unwrap_or_else(|error| panic!("{error}"));
    // The page sits in the results folder: its links start there.
    let page = render(&collect(runs), "");
    assert!(
        page == committed,
        "results/index.html is stale (a run committed, or the page's code changed, without \
         making it again): run `cargo run --release -- history` and commit results/index.html \
         (first differing line: {:?})",
        page.lines().zip(committed.lines()).find(|(made, kept)| made != kept)
    );
    let files = find_results(&results).unwrap();
    assert!(files.len() > 1, "the committed runs are found: {files:?}");
    for file in files {
        let folder = file.parent().unwrap().strip_prefix(&results).unwrap();
        let folder = folder.to_string_lossy().replace('\\', "/");
        assert!(
            committed.contains(&format!(">{folder}</")),
            "results/{folder} is not on results/index.html: run `cargo run --release -- history`"
        );
    }
}

/// A fresh folder under the system's temporary one.
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("keyed-bench-history-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn an_unreadable_results_file_is_named_and_nothing_is_written() {
    let dir = scratch("bad");
    let reference = root().join("results/2026-11-30-vm/results.json");
    for (folder, bytes) in [
        ("good", std::fs::read(&reference).unwrap()),
        ("latest", b"not read".to_vec()),
        ("nested/bad", b"{".to_vec()),
    ] {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
        std::fs::write(dir.join(folder).join("results.json"), bytes).unwrap();
    }
    let history = |dir: &Path| {
        Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
            .args(["history", "--results"])
            .arg(dir)
            .output()
            .unwrap()
    };
    let output = history(&dir);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("nested/bad/results.json is not a valid"), "{stderr}");
    assert!(!dir.join("index.html").exists(), "nothing written on bad input");
    std::fs::remove_dir_all(dir.join("nested")).unwrap();
    let output = history(&dir);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("read 1 runs under"), "latest/ is not read: {stderr}");
    let page = std::fs::read_to_string(dir.join("index.html")).unwrap();
    assert!(page.contains("<a href=\"good/report.html\">") || page.contains(">good</td>"));
    std::fs::remove_dir_all(&dir).unwrap();
}
