use std::path::PathBuf;

use super::*;
use crate::report::reference::first as reference;
use crate::results::{CellSettings, Interference, Spread};

/// A receipt that says `validity`, with one reason where it is not clean.
fn receipt(validity: Validity) -> Interference {
    let reasons = match validity {
        Validity::Clean => Vec::new(),
        other => vec![format!("others took a share ({})", other.name())],
    };
    Interference {
        validity,
        reasons,
        ..Interference::judged(1.0, 2, 0.01, Some(0.0), None, None, None)
    }
}

/// A `uniform` cell of `strategy` at `throughput` messages per second, with a receipt of
/// `validity` (none: a file from before receipts).
fn cell(strategy: &str, throughput: f64, validity: Option<Validity>) -> RunResult {
    RunResult {
        scenario: "uniform".into(),
        param: String::new(),
        strategy: strategy.into(),
        throughput_per_s: Spread { median: throughput, min: throughput, max: throughput },
        interference: validity.map(receipt),
        samples: None,
        settings: None,
        ..reference().runs.swap_remove(0)
    }
}

/// A run of `runs` made at `created`, in `folder`, linked to its report.
fn run(folder: &str, created: &str, runs: Vec<RunResult>) -> Run {
    let mut results = Results { runs, skipped: Vec::new(), pipelines: Vec::new(), ..reference() };
    results.meta.created = created.into();
    Run { folder: folder.into(), results, link: Some(format!("{folder}/report.html")) }
}

/// The point of `strategy` in `run` on the one chart, if drawn.
fn point<'h>(history: &'h History, run: usize, strategy: &str) -> Option<&'h Point> {
    history.charts[0].points_at().get(&(run, strategy)).copied()
}

#[test]
fn disturbed_is_hollow_void_is_absent_and_listed() {
    let history = collect(vec![run(
        "a",
        "2026-12-01T00:00:00Z",
        vec![
            cell("keyed-mailbox", 100.0, Some(Validity::Clean)),
            cell("work-stealing", 90.0, Some(Validity::Disturbed)),
            cell("group-by", 80.0, Some(Validity::Void)),
            cell("rayon", 70.0, Some(Validity::Unmeasured)),
            cell("tokio", 60.0, None),
            cell("thread-pool", 200.0, Some(Validity::Clean)),
        ],
    )]);
    assert_eq!(history.charts.len(), 1, "{:?}", history.charts);
    let chart = &history.charts[0];
    assert_eq!(
        (chart.scenario, chart.metric),
        ("uniform".parse::<ScenarioId>().unwrap(), Metric::Throughput)
    );
    assert_eq!(point(&history, 0, "keyed-mailbox").map(Point::mark), Some(Mark::Filled));
    assert_eq!(point(&history, 0, "work-stealing").map(Point::mark), Some(Mark::Hollow));
    assert_eq!(point(&history, 0, "rayon").map(Point::mark), Some(Mark::Filled));
    assert_eq!(point(&history, 0, "tokio").map(Point::mark), Some(Mark::Filled));
    assert_eq!(point(&history, 0, "group-by"), None, "a void cell is not drawn");
    assert_eq!(point(&history, 0, "thread-pool"), None, "the unordered control ranks nothing");
    assert_eq!(point(&history, 0, "keyed-mailbox").map(|p| p.value), Some(100.0));
    let left: Vec<(&str, &str)> =
        history.left_out.iter().map(|l| (l.cell.as_str(), l.reason.as_str())).collect();
    assert_eq!(
        left,
        [
            ("uniform thread-pool", "not ranked: the reference or an unordered design"),
            ("uniform group-by", "a void receipt: not ranked, not drawn"),
        ]
    );
    let page = render(&history, "");
    assert_eq!(page.matches("fill=\"#ffffff\"").count(), 1, "one hollow point");
    assert_eq!(page.matches("</title></circle>").count(), 4, "a tooltip per drawn point");
    assert!(page.contains("receipt: disturbed: others took a share (disturbed)"), "{page}");
    assert!(page.contains("receipt: no receipt (a file from before receipts)"));
    assert!(page.contains("<a href=\"a/report.html\"><circle"), "each point links its run");
    assert!(page.contains("2 cells are not drawn"));
}

#[test]
fn runs_are_in_date_order_then_folder() {
    let history = collect(vec![
        run("c-late", "2026-12-03T00:00:00Z", vec![cell("keyed-mailbox", 3.0, None)]),
        run("b-same", "2026-12-01T00:00:00Z", vec![cell("keyed-mailbox", 2.0, None)]),
        run("a-same", "2026-12-01T00:00:00Z", vec![cell("keyed-mailbox", 1.0, None)]),
    ]);
    let folders: Vec<&str> = history.runs.iter().map(|run| run.folder.as_str()).collect();
    assert_eq!(folders, ["a-same", "b-same", "c-late"]);
    let chart = &history.charts[0];
    assert_eq!(chart.runs, [0, 1, 2]);
    let values: Vec<f64> = chart.points.iter().map(|point| point.value).collect();
    assert_eq!(values, [1.0, 2.0, 3.0], "each run's figure at its place in date order");
    assert_eq!(render(&history, ""), render(&history, ""), "the page is deterministic");
}

#[test]
fn a_sweep_point_other_than_the_runs_own_is_left_out() {
    let at = |workers: usize, throughput: f64| {
        let sweep = format!("workers={workers}");
        RunResult {
            param: sweep.clone(),
            settings: Some(CellSettings {
                workers,
                throughput: 1,
                window: 1,
                idle_spin_us: 0,
                sweep,
            }),
            ..cell("keyed-mailbox", throughput, None)
        }
    };
    let mut sweep = run("s", "2026-12-01T00:00:00Z", vec![at(1, 10.0), at(2, 20.0)]);
    sweep.results.meta.workers = 1;
    let history = collect(vec![sweep]);
    assert_eq!(history.charts.len(), 1);
    assert_eq!(history.charts[0].param, "", "the chart is the scenario's own param");
    assert_eq!(history.charts[0].points.len(), 1);
    assert_eq!(history.charts[0].points[0].value, 10.0);
    assert_eq!(history.left_out.len(), 1);
    assert_eq!(history.left_out[0].cell, "uniform workers=2 keyed-mailbox");
    assert!(history.left_out[0].reason.contains("sweep point"), "{:?}", history.left_out);
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
fn a_runs_link_falls_back_and_latest_is_not_read() {
    let dir = scratch("links");
    let json = serde_json::to_string(&reference()).unwrap();
    for (folder, files) in [
        ("report", &["report.html", "summary.md", "README.md"][..]),
        ("summary", &["summary.md", "README.md"][..]),
        ("nested/readme", &["README.md"][..]),
        ("bare", &[][..]),
        ("latest", &["report.html"][..]),
    ] {
        let path = dir.join(folder);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join("results.json"), &json).unwrap();
        for file in files {
            std::fs::write(path.join(file), "x").unwrap();
        }
    }
    let runs = read_runs(&dir).unwrap();
    let links: Vec<(&str, Option<&str>)> =
        runs.iter().map(|run| (run.folder.as_str(), run.link.as_deref())).collect();
    assert_eq!(
        links,
        [
            ("bare", None),
            ("nested/readme", Some("nested/readme/README.md")),
            ("report", Some("report/report.html")),
            ("summary", Some("summary/summary.md")),
        ]
    );
    let out = dir.join("index.html");
    assert_eq!(link_base(&dir, &out), "");
    assert_eq!(link_base(&dir, &dir.join("nested/page.html")), "../");
    std::fs::write(dir.join("summary/results.json"), "{").unwrap();
    let error = read_runs(&dir).unwrap_err().to_string();
    assert!(error.contains("summary/results.json"), "the bad file is named: {error}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn no_default_output_folder_is_read() {
    let dir = scratch("outs");
    let json = serde_json::to_string(&reference()).unwrap();
    let mut folders = vec![PathBuf::from("kept"), PathBuf::from("nested/ab")];
    for out in crate::results::fs::DEFAULT_OUTS {
        let within = std::path::Path::new(out).strip_prefix(crate::results::fs::RESULTS_DIR);
        let within = within.unwrap().to_path_buf();
        folders.extend([within.join("round-1"), within]);
    }
    assert!(folders.contains(&PathBuf::from("ab/round-1")), "{folders:?}");
    for folder in &folders {
        std::fs::create_dir_all(dir.join(folder)).unwrap();
        std::fs::write(dir.join(folder).join("results.json"), &json).unwrap();
    }
    let found: Vec<PathBuf> = find_results(&dir)
        .unwrap()
        .iter()
        .map(|file| file.parent().unwrap().strip_prefix(&dir).unwrap().to_path_buf())
        .collect();
    assert_eq!(found, [PathBuf::from("kept"), PathBuf::from("nested/ab")]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_file_from_before_sweeps_is_its_own_point_by_its_meta() {
    let at = |label: &str| RunResult {
        settings: Some(CellSettings {
            workers: 1,
            throughput: 1,
            window: 1,
            idle_spin_us: 0,
            sweep: label.to_owned(),
        }),
        ..cell("keyed-mailbox", 1.0, None)
    };
    let mut old = run("o", "2026-12-01T00:00:00Z", Vec::new()).results;
    old.meta.sweep = None;
    (old.meta.workers, old.meta.throughput, old.meta.window) = (2, 16, 64);
    old.meta.idle_spin_us = None;
    assert!(own_point(&at("workers=2 throughput=16 window=64"), &old));
    assert!(own_point(&at("idle-spin-us=7 workers=2"), &old), "any, where none is recorded");
    assert!(own_point(&at("keys=9 workers=2 plain"), &old), "a name it does not know");
    assert!(!own_point(&at("workers=2 throughput=1"), &old));
    old.meta.idle_spin_us = Some(5);
    assert!(own_point(&at("idle-spin-us=5"), &old));
    assert!(!own_point(&at("idle-spin-us=7"), &old));
    // A sweep's own point is its first, whatever else `meta` says.
    let mut sweep = crate::sweep::Sweep::single(&strategies::StrategyConfig::with_workers(4));
    (sweep.workers, sweep.idle_spin_us) = (vec![4, 8], vec![9, 0]);
    old.meta.sweep = Some(sweep);
    assert!(own_point(&at("workers=4 idle-spin-us=9"), &old));
    assert!(!own_point(&at("workers=8 idle-spin-us=9"), &old));
    assert!(!own_point(&at("workers=4 idle-spin-us=0"), &old));
}

#[test]
fn commits_settings_and_receipts_read_well() {
    assert_eq!(short_commit("0123456789abcdef"), "0123456");
    assert_eq!(short_commit("0123456789abcdef-dirty"), "0123456-dirty");
    let old = run("o", "2026-12-01T00:00:00Z", vec![cell("keyed-mailbox", 1.0, None)]);
    assert_eq!(receipts_of(&old.results), "no receipts");
    assert_eq!(settings_of(&old.results), "workers 2, repeat 3");
    let new = run(
        "n",
        "2026-12-01T00:00:00Z",
        vec![
            cell("keyed-mailbox", 1.0, Some(Validity::Clean)),
            cell("rayon", 1.0, Some(Validity::Void)),
        ],
    );
    assert_eq!(receipts_of(&new.results), "1 clean, 0 unmeasured, 0 disturbed, 1 void");
    assert_eq!(y_axis_of(95.0), (100.0, 25.0));
}

/// The y axis's top and step for a largest value.
fn y_axis_of(max: f64) -> (f64, f64) {
    super::page::y_axis(max)
}

#[test]
fn a_wide_span_of_values_gets_a_logarithmic_axis() {
    use super::page::{Scale, LOG_SPAN};
    let narrow = [100.0, 250.0, 900.0];
    assert_eq!(Scale::of(narrow.iter().copied()), Scale::Linear { top: 1000.0, step: 250.0 });
    let wide = [0.002, 0.3, 0.002 * LOG_SPAN * 2.0];
    assert_eq!(Scale::of(wide.iter().copied()), Scale::Log { low: -3, high: 0 });
    // A zero cannot sit on a logarithmic axis: linear.
    assert!(matches!(Scale::of([0.0, 5.0, 500.0].into_iter()), Scale::Linear { .. }));
}
