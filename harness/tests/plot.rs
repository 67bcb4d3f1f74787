//! Charts and the report from small results files: valid PNG, well-formed SVG and HTML,
//! graceful skips, clear errors for missing or malformed input.

use std::path::{Path, PathBuf};

use harness::report::html::{plot_and_report, render_report, PlotConfig, ReportError};
use harness::report::plot::{render_all, Charts};
use harness::results::{
    ContextSwitches, Correctness, Latency, Meta, ReadError, Results, RunResult, Spread, Tail,
    Threads, SCHEMA,
};

const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

/// A fresh, empty folder under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("keyed-bench-plot-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn run(scenario: &str, param: &str, strategy: &str, scale: u64) -> RunResult {
    let bystander = matches!(scenario, "hot-backlog" | "conflict-backoff" | "long-sync");
    RunResult {
        scenario: scenario.into(),
        param: param.into(),
        strategy: strategy.into(),
        throughput_per_s: Spread {
            median: 1e5 * scale as f64,
            min: 0.9e5 * scale as f64,
            max: 1.1e5 * scale as f64,
        },
        latency_ns: Latency {
            p50: 1_000 * scale,
            p90: 5_000 * scale,
            p99: 50_000 * scale,
            p999: 900_000 * scale,
            max: 3_000_000 * scale,
        },
        hol_ns: Tail { p50: 100, p99: 20_000 * scale, p999: 40_000 * scale, max: 90_000 * scale },
        bystander_latency_ns: bystander.then_some(Tail {
            p50: 900,
            p99: 30_000 * scale,
            p999: 60_000 * scale,
            max: 100_000 * scale,
        }),
        threads: Threads { reported: 2, observed: 2 },
        correctness: Correctness::default(),
        cpu_s: 0.1,
        ctx_switches: ContextSwitches { voluntary: 10.0, involuntary: 1.0 },
        peak_in_flight: 256,
        ideal_s: 0.05 * scale as f64,
        efficiency: 0.9,
        machine_efficiency: Some(0.9),
        producer_cpu_s: Some(0.01),
        cpu_per_message_ns: None,
        elapsed_s: 0.06 * scale as f64,
        messages: 2_000,
        offered_per_s: None,
        achieved_per_s: None,
        below_offered: None,
        workers: Some(2),
        window: Some(256),
        measured_floor_s: None,
        timer_lateness_ns: None,
        window_scope: None,
        windows: None,
        events_per_message: None,
        samples: None,
        memory: None,
        settings: None,
        interference: None,
        driver_gc: None,
    }
}

/// uniform, hot-backlog (240, 241) and async-io (10, 1000 keys) for two strategies; no
/// many-types, open-loop, conflict-backoff or long-sync.
fn small_results() -> Results {
    let mut runs = Vec::new();
    for (index, strategy) in ["keyed-mailbox", "group-by"].into_iter().enumerate() {
        let scale = index as u64 + 1;
        runs.push(run("uniform", "", strategy, scale));
        runs.push(run("hot-backlog", "burst=240", strategy, scale));
        runs.push(run("hot-backlog", "burst=241", strategy, scale * 10));
        runs.push(run("async-io", "keys=10", strategy, scale * 5));
        runs.push(run("async-io", "keys=1000", strategy, scale));
    }
    Results {
        schema: SCHEMA.into(),
        meta: Meta {
            created: "2026-11-30T00:00:00Z".into(),
            git_commit: "abc123".into(),
            rustc: "rustc 1.85.0".into(),
            cpu_model: "Test CPU <fast> & cheap".into(),
            cores: 2,
            workers: 2,
            window: 256,
            throughput: 16,
            command: "keyed-bench run --quick".into(),
            seed: 42,
            repeat: 1,
            quick: true,
            recorder_overhead_ns: Some(60.0),
            saturation_per_s: None,
            suite_elapsed_s: 3.5,
            notes: vec!["a note".into()],
            groups_per_worker: None,
            idle_spin_us: None,
            window_scope: None,
            binding: None,
            commit_policies: None,
            retry_policies: None,
            producers: None,
            timer_threads: None,
            revalidate: None,
            calibrations: Vec::new(),
            sizes: None,
            designs: Vec::new(),
            sweep: None,
            scenarios: None,
            strategies: None,
            breakdown: None,
            incomplete: None,
            resumed: Vec::new(),
            transport: None,
        },
        runs,
        skipped: Vec::new(),
        pipelines: Vec::new(),
        failed: Vec::new(),
        price_of_order: Vec::new(),
        isolation: Vec::new(),
    }
}

fn assert_valid_png(bytes: &[u8], what: &str) {
    assert!(bytes.len() > 1_000, "{what}: {} bytes", bytes.len());
    assert_eq!(bytes[..8], PNG_SIGNATURE, "{what}: PNG signature");
}

fn assert_well_formed_svg(text: &str, what: &str) {
    let text = text.trim();
    assert!(text.starts_with("<svg") || text.starts_with("<?xml"), "{what}: SVG start");
    assert!(text.ends_with("</svg>"), "{what}: SVG end");
    assert_eq!(text.matches("<svg").count(), 1, "{what}: one svg element");
    assert!(text.contains("<text"), "{what}: has text (titles, ticks)");
}

fn names(charts: &Charts) -> Vec<&str> {
    charts.charts.iter().map(|chart| chart.name.as_str()).collect()
}

#[test]
fn small_results_give_valid_charts_and_skip_the_absent_scenarios() {
    let charts = render_all(&small_results()).expect("charts draw");
    let names = names(&charts);
    for expected in [
        "throughput",
        "latency-uniform",
        "latency-hot-backlog",
        "latency-async-io",
        "head-of-line",
        "hot-backlog-cliff",
        "async-io-elapsed",
    ] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    for absent in ["threads-many-types", "open-loop-latency", "latency-zipf"] {
        assert!(!names.contains(&absent), "{absent} drawn without data");
        assert!(
            charts.skipped.iter().any(|line| line.starts_with(absent)),
            "{absent} not noted in {:?}",
            charts.skipped
        );
    }
    for chart in &charts.charts {
        assert_valid_png(&chart.png, &chart.name);
        assert_well_formed_svg(&chart.svg, &chart.name);
        assert!(!chart.note.is_empty() && !chart.title.is_empty());
    }
}

#[test]
fn an_empty_results_file_draws_nothing_and_says_why() {
    let mut results = small_results();
    results.runs.clear();
    let charts = render_all(&results).expect("nothing to draw is not an error");
    assert!(charts.charts.is_empty());
    assert!(charts.skipped.iter().any(|line| line.starts_with("throughput")));
    let html = render_report(&results, &charts);
    assert!(html.contains("Not drawn"));
}

fn assert_well_formed_html(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    assert!(!html.contains("{{"), "an unfilled placeholder");
    for tag in ["table", "figure", "svg", "h2", "p", "ul"] {
        assert_eq!(
            html.matches(&format!("<{tag}>")).count() + html.matches(&format!("<{tag} ")).count(),
            html.matches(&format!("</{tag}>")).count(),
            "<{tag}> opened and closed"
        );
    }
    assert!(!html.contains("<script") && !html.contains("src=\"http"), "self-contained");
}

#[test]
fn the_report_holds_meta_tables_and_every_chart_inline() {
    let results = small_results();
    let charts = render_all(&results).expect("charts draw");
    let html = render_report(&results, &charts);
    assert_well_formed_html(&html);
    assert_eq!(html.matches("<svg").count(), charts.charts.len());
    assert_eq!(html.matches("How to read this.").count(), charts.charts.len());
    assert!(html.contains("Test CPU &lt;fast&gt; &amp; cheap"), "meta is escaped");
    assert!(html.contains("<code>abc123</code>") && html.contains("rustc 1.85.0"));
    assert!(html.contains("<th>strategy</th>"), "summary tables as HTML");
    assert!(!html.contains("|---"), "no Markdown table left");
}

#[test]
fn the_report_opens_with_the_verdict_before_any_chart() {
    let results = small_results();
    let charts = render_all(&results).expect("charts draw");
    let html = render_report(&results, &charts);
    assert_well_formed_html(&html);
    let verdict = html.find("<h2 id=\"verdict\">Verdict</h2>").expect("a verdict section");
    let table = html[verdict..].find("<th>reading</th>").expect("the verdict table") + verdict;
    for later in ["<h2 id=\"run\">", "<h2 id=\"charts\">", "<figure", "<h2 id=\"summary\">"] {
        let at = html.find(later).unwrap_or_else(|| panic!("{later} on the page"));
        assert!(table < at, "the verdict table comes before {later}");
    }
    assert_eq!(html.matches("<th>reading</th>").count(), 1, "the verdict once, not again");
}

#[test]
fn plot_and_report_write_every_file() {
    let dir = scratch("write");
    let input = dir.join("results.json");
    std::fs::write(&input, serde_json::to_string(&small_results()).unwrap()).unwrap();
    let config = PlotConfig {
        input: input.clone(),
        out: dir.join("plots"),
        report: dir.join("report.html"),
        summary: Some(dir.join("again.md")),
    };
    let outcome = plot_and_report(&config).expect("plots and report");
    let summary = std::fs::read_to_string(dir.join("again.md")).expect("--summary writes it");
    assert!(summary.starts_with("# keyed-bench summary\n"), "{summary}");
    assert!(!outcome.files.is_empty());
    for file in &outcome.files {
        let bytes = std::fs::read(file).expect("written");
        match file.extension().and_then(|e| e.to_str()) {
            Some("png") => assert_valid_png(&bytes, &file.display().to_string()),
            Some("svg") => assert_well_formed_svg(
                std::str::from_utf8(&bytes).expect("utf-8 svg"),
                &file.display().to_string(),
            ),
            other => panic!("unexpected file {other:?}"),
        }
    }
    let pngs = outcome.files.iter().filter(|f| f.extension().unwrap() == "png").count();
    assert_eq!(pngs * 2, outcome.files.len(), "a PNG and an SVG of every chart");
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report written");
    assert_well_formed_html(&html);
    let temporary = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect::<Vec<_>>();
    assert!(temporary.is_empty(), "written atomically, nothing left over: {temporary:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn config_for(input: &Path) -> PlotConfig {
    let dir = input.parent().unwrap();
    PlotConfig {
        input: input.into(),
        out: dir.join("plots"),
        report: dir.join("report.html"),
        summary: None,
    }
}

#[test]
fn a_missing_results_file_is_a_clear_bad_input_error() {
    let dir = scratch("missing");
    let error = plot_and_report(&config_for(&dir.join("results.json"))).unwrap_err();
    assert!(matches!(error, ReportError::Read(ReadError::Io { .. })), "{error:?}");
    assert!(error.is_bad_input());
    assert!(error.to_string().contains("results.json"), "{error}");
    assert!(!dir.join("report.html").exists());
}

#[test]
fn a_malformed_results_file_is_a_clear_bad_input_error() {
    let dir = scratch("malformed");
    for (name, contents) in [
        ("truncated.json", r#"{"schema": "keyed-bench.results.v1", "meta": "#),
        ("other.json", r#"{"schema": "something.else", "meta": {}, "runs": []}"#),
    ] {
        let input = dir.join(name);
        std::fs::write(&input, contents).unwrap();
        let error = plot_and_report(&config_for(&input)).unwrap_err();
        assert!(error.is_bad_input());
        assert!(matches!(error, ReportError::Read(ReadError::Invalid { .. })), "{error:?}");
        assert!(error.to_string().contains("not a valid keyed-bench results file"), "{error}");
        assert!(error.to_string().contains(name), "{error}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_reference_run_draws_every_chart() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/2026-11-30-vm/results.json");
    let results = Results::read(&path).expect("the committed reference run reads");
    let charts = render_all(&results).expect("charts draw");
    // The run predates some scenarios: only their charts may be skipped.
    let absent: Vec<&str> = harness::workload::ScenarioId::ALL
        .iter()
        .map(|id| id.as_str())
        .filter(|id| !results.runs.iter().any(|run| run.scenario == *id))
        .filter(|id| !results.pipelines.iter().any(|run| run.scenario == *id))
        .collect();
    assert_eq!(
        absent,
        [
            "hot-key",
            "async-io-zipf",
            "parallel-consumer",
            "cold-command",
            "saga",
            "stateful",
            "pipeline-crash",
            "pipeline-retry",
            "pipeline-expand",
            "pipeline-reorder",
            "pipeline-rebalance"
        ]
    );
    for skipped in &charts.skipped {
        if skipped.starts_with("breakdown-uniform: skipped, no uniform run here has a counted") {
            continue; // the run predates the breakdown
        }
        if skipped == "pipeline-commit-calls: skipped, no pipeline runs in these results" {
            assert!(results.pipelines.is_empty(), "{skipped}");
            continue; // the run predates every pipeline scenario
        }
        let reason = skipped.split_once(": skipped, no ").map(|(_, rest)| rest);
        let scenario = reason.and_then(|rest| rest.strip_suffix(" runs in these results"));
        assert!(scenario.is_some_and(|s| absent.contains(&s)), "{skipped}");
    }
    assert_eq!(charts.charts.len(), 14, "{:?}", names(&charts));
}

/// `results` with every number of every run set by `number` (f64 fields) and `count`
/// (integer fields), and the parameters replaced.
fn doctored(number: f64, count: u64, params: [&str; 3]) -> Results {
    let mut results = small_results();
    for run in &mut results.runs {
        run.throughput_per_s = Spread { median: number, min: number, max: number };
        run.latency_ns = Latency { p50: count, p90: count, p99: count, p999: count, max: count };
        run.hol_ns = Tail { p50: count, p99: count, p999: count, max: count };
        run.bystander_latency_ns = Some(run.hol_ns);
        (run.cpu_s, run.ideal_s, run.efficiency, run.elapsed_s) = (number, number, number, number);
        run.messages = count as usize;
        run.threads = Threads { reported: count as usize, observed: count as usize };
        run.param = match run.scenario.as_str() {
            "hot-backlog" => params[0].into(),
            "async-io" => params[1].into(),
            _ => params[2].into(),
        };
    }
    results
}

#[test]
fn wild_numbers_in_a_results_file_draw_without_panic_or_hang() {
    let cases = [
        doctored(f64::MAX, u64::MAX, ["burst=1e308", "keys=inf", "load=NaN"]),
        doctored(0.0, 0, ["burst=0", "keys=0", ""]),
        doctored(-1e300, 1, ["burst=-5", "keys=-1", "load=-2"]),
        doctored(1e-300, 2, ["burst", "keys=", "=="]),
    ];
    for (index, results) in cases.into_iter().enumerate() {
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let charts = render_all(&results).map(|charts| charts.charts.len());
            let _ = sender.send(charts.map_err(|error| error.to_string()));
        });
        // Generous: drawing takes about a second in a debug build; a hang never ends.
        let outcome = receiver.recv_timeout(std::time::Duration::from_secs(60));
        match outcome {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => panic!("case {index}: {error}"),
            Err(_) => panic!("case {index}: drawing panicked or did not finish"),
        }
    }
}

#[test]
fn the_breakdown_is_drawn_from_counted_uniform_runs_only() {
    let mut results = small_results();
    let without = render_all(&results).expect("charts draw");
    assert!(!names(&without).contains(&"breakdown-uniform"));
    assert!(without.skipped.iter().any(|line| line.starts_with("breakdown-uniform: skipped")));
    for run in results.runs.iter_mut().filter(|run| run.scenario == "uniform") {
        let seen = run.strategy == "keyed-mailbox";
        run.events_per_message = Some(harness::results::EventRates {
            wakeups: seen.then_some(0.003),
            parks: seen.then_some(0.003),
            activations: Some(0.98),
            retirements: Some(0.98),
            hops: Some(1.0),
            messages: 2_000,
            ..Default::default()
        });
    }
    let with = render_all(&results).expect("charts draw");
    let chart = with.charts.iter().find(|chart| chart.name == "breakdown-uniform");
    let chart = chart.expect("a counted uniform run draws the breakdown");
    assert_valid_png(&chart.png, &chart.name);
    assert_well_formed_svg(&chart.svg, &chart.name);
    assert!(chart.svg.contains("n/a"), "events a strategy cannot see are marked");
}

/// The pipeline charts and the scenario each draws from.
const PIPELINE_CHARTS: [(&str, &str); 5] = [
    ("pipeline-crash", "pipeline-crash"),
    ("pipeline-commit-lag", "pipeline-crash"),
    ("pipeline-retry", "pipeline-retry"),
    ("pipeline-expand", "pipeline-expand"),
    ("pipeline-rebalance", "pipeline-rebalance"),
];

/// Measured cells of pipeline-crash, -retry, -expand and -rebalance, tiny, for
/// keyed-mailbox, group-by and thread-pool; measured once per test binary.
fn pipeline_runs() -> &'static [harness::results::PipelineRun] {
    use harness::measure::timer::Timer;
    use harness::pipeline::{run_scenario, Bench, PipelinePlan};
    use harness::workload::{ScenarioId, Sizes};
    use strategies::{StrategyConfig, StrategyId};

    static RUNS: std::sync::OnceLock<Vec<harness::results::PipelineRun>> =
        std::sync::OnceLock::new();
    RUNS.get_or_init(|| {
        let sizes = Sizes {
            pipeline_records: 1_500,
            pipeline_keys: 100,
            partitions: 2,
            expand_to: 4,
            commit_interval_ms: 1,
            crash_after: 500,
            ..Sizes::quick()
        };
        let timer = Timer::start();
        let bench = Bench {
            sizes: &sizes,
            seed: 5,
            timer: &timer,
            strategy_config: StrategyConfig::with_workers(2),
            watch: Default::default(),
        };
        let strategies = [StrategyId::KeyedMailbox, StrategyId::GroupBy, StrategyId::ThreadPool]
            .map(strategies::Design::from);
        let mut runs = Vec::new();
        for scenario in [
            ScenarioId::PipelineCrash,
            ScenarioId::PipelineRetry,
            ScenarioId::PipelineExpand,
            ScenarioId::PipelineRebalance,
        ] {
            let cells =
                run_scenario(scenario, &bench, &PipelinePlan::default(), &strategies, |_| {})
                    .unwrap_or_else(|error| panic!("{scenario}: {error}"));
            assert!(!cells.is_empty(), "{scenario} measured no cell");
            runs.extend(cells);
        }
        runs
    })
}

/// The small results with `pipelines` as their pipeline cells.
fn with_pipelines(pipelines: Vec<harness::results::PipelineRun>) -> Results {
    Results { pipelines, ..small_results() }
}

#[test]
fn measured_pipeline_cells_draw_every_pipeline_chart() {
    let charts = render_all(&with_pipelines(pipeline_runs().to_vec())).expect("charts draw");
    for (name, _) in PIPELINE_CHARTS {
        let chart = charts.charts.iter().find(|chart| chart.name == name);
        let chart = chart.unwrap_or_else(|| panic!("{name} not drawn: {:?}", charts.skipped));
        assert_valid_png(&chart.png, name);
        assert_well_formed_svg(&chart.svg, name);
        assert!(!chart.note.is_empty() && !chart.title.is_empty(), "{name}");
        assert!(
            !charts.skipped.iter().any(|line| line.starts_with(&format!("{name}:"))),
            "{name} both drawn and skipped: {:?}",
            charts.skipped
        );
    }
    let expand = charts.charts.iter().find(|chart| chart.name == "pipeline-expand").unwrap();
    assert!(expand.title.contains("keyed-mailbox"), "{}", expand.title);
    for mitigation in ["none", "drain-then-expand"] {
        assert!(expand.note.contains(&format!("{mitigation}, ")), "{}", expand.note);
    }
    let html = render_report(&with_pipelines(pipeline_runs().to_vec()), &charts);
    assert_well_formed_html(&html);
}

#[test]
fn each_pipeline_chart_is_skipped_with_its_reason_when_its_scenario_is_absent() {
    for (_, scenario) in PIPELINE_CHARTS {
        let kept: Vec<_> =
            pipeline_runs().iter().filter(|run| run.scenario != scenario).cloned().collect();
        let charts = render_all(&with_pipelines(kept)).expect("charts draw");
        let names = names(&charts);
        for (name, from) in PIPELINE_CHARTS {
            if from != scenario {
                assert!(names.contains(&name), "{name} not drawn without {scenario}");
                continue;
            }
            assert!(!names.contains(&name), "{name} drawn without {scenario}");
            let reason = format!("{name}: skipped, no {scenario} runs in these results");
            assert!(charts.skipped.contains(&reason), "{reason} not in {:?}", charts.skipped);
        }
    }
}

#[test]
fn the_commit_call_chart_is_drawn_from_timed_cells_and_skipped_without_them() {
    let name = "pipeline-commit-calls";
    let charts = render_all(&with_pipelines(pipeline_runs().to_vec())).expect("charts draw");
    let chart = charts.charts.iter().find(|chart| chart.name == name);
    let chart = chart.unwrap_or_else(|| panic!("{name} not drawn: {:?}", charts.skipped));
    assert_valid_png(&chart.png, name);
    assert_well_formed_svg(&chart.svg, name);
    assert!(chart.title.contains("on the embedded log"), "{}", chart.title);
    assert!(has_text(&chart.svg, "p99") && has_text(&chart.svg, "p50"), "its legend");

    let none = render_all(&small_results()).expect("charts draw");
    let reason = format!("{name}: skipped, no pipeline runs in these results");
    assert!(none.skipped.contains(&reason), "{reason} not in {:?}", none.skipped);

    // Cells of a file written before the calls were timed.
    let older: Vec<_> = pipeline_runs()
        .iter()
        .map(|run| harness::results::PipelineRun { transport_calls: None, ..run.clone() })
        .collect();
    let charts = render_all(&with_pipelines(older)).expect("charts draw");
    assert!(!names(&charts).contains(&name), "{name} drawn without its figures");
    let reason =
        format!("{name}: skipped, no pipeline cell of these results timed its commit calls");
    assert!(charts.skipped.contains(&reason), "{reason} not in {:?}", charts.skipped);
}

#[test]
fn a_committed_run_opens_its_summary_with_a_verdict_row_per_cell() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/2026-12-01-vm-5/results.json");
    let results = Results::read(&path).expect("the committed reference run reads");
    let summary = harness::report::summary::render_summary(&results);
    assert!(summary.starts_with("# keyed-bench summary\n\n## Verdict\n\n"));
    let verdict = &summary["# keyed-bench summary\n\n## Verdict\n\n".len()..];
    // The verdict ends where the next section or the header begins.
    let end = ["\n## ", "Settings:"].iter().filter_map(|mark| verdict.find(mark)).min();
    let verdict = &verdict[..end.expect("the header follows")];
    let rows: Vec<&str> = verdict
        .lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| scenario"))
        .collect();
    let mut cells: Vec<(&str, &str)> = Vec::new();
    for (scenario, param) in results
        .runs
        .iter()
        .map(|run| (run.scenario.as_str(), run.param.as_str()))
        .chain(results.pipelines.iter().map(|run| (run.scenario.as_str(), run.param.as_str())))
    {
        if !cells.contains(&(scenario, param)) {
            cells.push((scenario, param));
        }
    }
    assert_eq!(rows.len(), cells.len(), "one row per cell:\n{verdict}");
    for row in &rows {
        assert!(!row.contains("inf") && !row.contains("NaN"), "{row}");
    }
    println!("{verdict}");
}

// Sweeps: the sweep-* charts, and what the other charts show of a sweep.

/// `run` as a cell of the sweep point `label` (`workers=2 throughput=16`): the label after
/// its param, and the point's settings recorded.
fn at_point(
    mut run: RunResult,
    (workers, throughput, window): (usize, usize, usize),
    label: &str,
) -> RunResult {
    run.param = harness::results::cell::labelled(&run.param, label);
    run.workers = Some(workers);
    run.window = Some(window);
    run.settings = Some(harness::results::CellSettings {
        workers,
        throughput,
        window,
        idle_spin_us: 20,
        sweep: label.into(),
    });
    run
}

/// uniform at 1, 2 and 4 workers for keyed-mailbox (scaling) and group-by (flat), on a
/// machine of `cores` cores.
fn workers_sweep(cores: usize) -> Results {
    let mut runs = Vec::new();
    for workers in [1_usize, 2, 4] {
        for (strategy, scale) in [("keyed-mailbox", workers as u64), ("group-by", 1)] {
            let run = run("uniform", "", strategy, scale);
            runs.push(at_point(run, (workers, 16, 256), &format!("workers={workers}")));
        }
    }
    let mut results = Results { runs, ..small_results() };
    results.meta.cores = cores;
    results.meta.workers = 1;
    results
}

/// Whether `svg` holds a text element that reads exactly `text`.
fn has_text(svg: &str, text: &str) -> bool {
    svg.contains(&format!(">{text}<")) || svg.contains(&format!(">\n{text}\n</text>"))
}

fn sweep_charts(charts: &Charts) -> Vec<&str> {
    names(charts).into_iter().filter(|name| name.starts_with("sweep-")).collect()
}

#[test]
fn a_workers_sweep_draws_the_scaling_chart_with_its_ideal_and_the_oversubscribed_counts() {
    let charts = render_all(&workers_sweep(4)).expect("charts draw");
    assert_eq!(sweep_charts(&charts), ["sweep-workers-uniform"], "only the sweep it holds");
    let chart = charts.charts.iter().find(|chart| chart.name == "sweep-workers-uniform").unwrap();
    assert_valid_png(&chart.png, &chart.name);
    assert_well_formed_svg(&chart.svg, &chart.name);
    assert!(chart.title.contains("vs workers"), "{}", chart.title);
    for legend in [
        "keyed-mailbox",
        "group-by",
        "ideal: linear in workers",
        // 4 workers and the producer need 5 of the 4 cores; 2 workers leave one.
        "oversubscribed: workers + producer &gt; 4 cores",
        "oversubscribed",
    ] {
        assert!(has_text(&chart.svg, legend), "{legend} not in the SVG");
    }
    assert!(chart.note.contains("workers + producer > 4 cores"), "{}", chart.note);
    assert!(chart.note.contains("contention, not scaling"), "{}", chart.note);

    // Where every count leaves the producer a core, nothing is marked.
    let roomy = render_all(&workers_sweep(16)).expect("charts draw");
    let chart = roomy.charts.iter().find(|chart| chart.name == "sweep-workers-uniform").unwrap();
    assert!(has_text(&chart.svg, "ideal: linear in workers"));
    assert!(!chart.svg.contains("oversubscribed"), "no count is oversubscribed on 16 cores");
    assert!(chart.note.contains("No point here is oversubscribed"), "{}", chart.note);
}

#[test]
fn the_other_charts_show_a_sweeps_first_point_and_say_so() {
    let results = workers_sweep(4);
    let charts = render_all(&results).expect("charts draw");
    let throughput = charts.charts.iter().find(|chart| chart.name == "throughput").unwrap();
    assert!(has_text(&throughput.svg, "uniform (workers=1)"), "the panel names its point");
    assert!(!throughput.svg.contains("workers=2"), "one point per panel");
    assert!(throughput.note.contains("its first point, workers=1"), "{}", throughput.note);
    let summary = harness::report::summary::render_summary(&results);
    assert!(summary.starts_with("# keyed-bench summary\n\n## Verdict\n\n"), "the verdict first");
    assert!(summary.contains("Settings: workers [1, 2, 4], "), "the swept values, not meta's");
    assert!(
        summary.contains(
            "Oversubscribed: cells with 4 workers on 4 cores (the producer needs a core too)"
        ),
        "{summary}"
    );
    let roomy = harness::report::summary::render_summary(&workers_sweep(16));
    assert!(!roomy.contains("Oversubscribed"), "no cell oversubscribed on 16 cores");
}

#[test]
fn a_throughput_sweep_on_zipf_draws_throughput_and_bystander_p99_per_turn_length() {
    let mut runs = Vec::new();
    for throughput in [1_usize, 16, 64] {
        for (strategy, scale) in [("keyed-mailbox", throughput as u64), ("group-by", 2)] {
            let mut run = run("zipf", "", strategy, scale);
            run.bystander_latency_ns =
                Some(Tail { p50: 900, p99: 30_000 * scale, p999: 60_000 * scale, max: 1_000_000 });
            runs.push(at_point(run, (2, throughput, 256), &format!("throughput={throughput}")));
        }
    }
    let results = Results { runs, ..small_results() };
    let charts = render_all(&results).expect("charts draw");
    assert_eq!(sweep_charts(&charts), ["sweep-throughput-zipf"]);
    let chart = charts.charts.iter().find(|chart| chart.name == "sweep-throughput-zipf").unwrap();
    assert_valid_png(&chart.png, &chart.name);
    assert_well_formed_svg(&chart.svg, &chart.name);
    for text in ["keyed-mailbox", "group-by (ignores it)", "64"] {
        assert!(has_text(&chart.svg, text), "{text} not in the SVG");
    }
    // Two workers and the producer on the helper's two cores: the panels say so.
    assert!(chart.svg.contains("bystander p99 latency · oversubscribed (2 workers)"));
    assert!(chart.note.contains("outside the top 1%"), "{}", chart.note);
    let summary = harness::report::summary::render_summary(&results);
    assert!(summary.contains("throughput [1, 16, 64], "), "the swept values");
}

#[test]
fn window_and_key_sweeps_draw_their_charts() {
    let mut runs = Vec::new();
    for window in [16_usize, 64, 256] {
        for strategy in ["keyed-mailbox", "group-by"] {
            for keys in ["keys=20", "keys=1000"] {
                let mut run = run("async-io", keys, strategy, 1);
                run.memory = Some(harness::results::CellMemory {
                    before_bytes: 8 << 20,
                    peak_bytes: (8 << 20) + window as u64 * 4096,
                });
                runs.push(at_point(run, (2, 16, window), &format!("window={window}")));
            }
        }
    }
    for keys in [100, 1_000, 10_000] {
        for strategy in ["keyed-mailbox", "group-by"] {
            let run = run("uniform", &format!("keys={keys}"), strategy, 1);
            runs.push(at_point(run, (2, 16, 256), ""));
        }
    }
    let charts = render_all(&Results { runs, ..small_results() }).expect("charts draw");
    assert_eq!(sweep_charts(&charts), ["sweep-window-async-io", "sweep-keys-uniform"]);
    let window = charts.charts.iter().find(|chart| chart.name == "sweep-window-async-io").unwrap();
    assert!(has_text(&window.svg, "ideal rate: messages / ideal bound"), "the ideal's legend");
    for caption in ["peak resident memory · keys=20", "messages per second (median) · keys=1000"]
    {
        assert!(window.svg.contains(caption), "{caption} not in the SVG");
    }
    let keys = charts.charts.iter().find(|chart| chart.name == "sweep-keys-uniform").unwrap();
    assert!(has_text(&keys.svg, "10k") && keys.svg.contains("p99 latency"), "ticks, captions");
    for chart in &charts.charts {
        assert_valid_png(&chart.png, &chart.name);
        assert_well_formed_svg(&chart.svg, &chart.name);
    }
    // The existing key-sweep chart still draws the window sweep's first point.
    let elapsed = charts.charts.iter().find(|chart| chart.name == "async-io-elapsed");
    let elapsed = elapsed.expect("async-io-elapsed drawn from a window sweep");
    assert!(elapsed.note.contains("its first point, window=16"), "{}", elapsed.note);
}

#[test]
fn results_without_a_sweep_draw_no_sweep_chart() {
    let charts = render_all(&small_results()).expect("charts draw");
    assert!(sweep_charts(&charts).is_empty(), "{:?}", names(&charts));
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/2026-12-01-vm-5/results.json");
    let results = Results::read(&path).expect("the committed reference run reads");
    let charts = render_all(&results).expect("charts draw");
    assert!(sweep_charts(&charts).is_empty(), "{:?}", names(&charts));
    assert!(charts.charts.iter().all(|chart| !chart.note.contains("hold a sweep")));
    let summary = harness::report::summary::render_summary(&results);
    let settings = summary.lines().find(|line| line.starts_with("Settings:")).unwrap();
    assert!(!settings.contains('['), "no list outside a sweep: {settings}");
}
