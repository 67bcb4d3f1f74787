//! Sweeps end to end: list-valued settings run their cross product, each cell records its
//! point, a gate confirms a cell at its own point, and a product past `--max-cells` is
//! refused before anything runs.

use std::path::PathBuf;
use std::process::{Command, Output};

use harness::results::Results;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("keyed-bench-sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn keyed_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keyed-bench")).args(args).output().expect("the binary runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

const TINY: [&str; 8] =
    ["--messages", "3000", "--repeat", "1", "--no-breakdown", "--quick", "--async-messages", "300"];

#[test]
fn a_sweep_runs_every_point_and_each_cell_records_its_settings() {
    let out = scratch("points");
    let out_arg = out.to_str().unwrap();
    let mut args = vec![
        "run",
        "--scenario",
        "uniform,async-io",
        "--strategy",
        "keyed-mailbox,group-by",
        "--workers",
        "1,2",
        "--throughput",
        "1,16",
        "--keys",
        "100,400",
        "--async-keys",
        "20",
        "--out",
        out_arg,
    ];
    args.extend(TINY);
    let output = keyed_bench(&args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let results = Results::read(&out.join("results.json")).expect("valid results");

    // uniform: 2 key counts x 4 points x 2 strategies; async-io keeps its own window and
    // has one key count: 4 points x 2 strategies.
    let uniform: Vec<_> = results.runs.iter().filter(|run| run.scenario == "uniform").collect();
    let async_io: Vec<_> = results.runs.iter().filter(|run| run.scenario == "async-io").collect();
    assert_eq!((uniform.len(), async_io.len()), (16, 8));
    let mut params: Vec<&str> = uniform.iter().map(|run| run.param.as_str()).collect();
    params.dedup();
    assert_eq!(params[0], "keys=100 workers=1 throughput=1", "{params:?}");
    assert_eq!(params.len(), 8, "{params:?}");
    for run in &results.runs {
        let settings = run.settings.as_ref().expect("every cell records its settings");
        assert!(run.param.ends_with(&settings.sweep), "{} / {}", run.param, settings.sweep);
        assert!(settings.sweep.contains(&format!("workers={}", settings.workers)));
        assert!(settings.sweep.contains(&format!("throughput={}", settings.throughput)));
        assert_eq!(run.workers, Some(settings.workers));
        assert!(run.correctness.is_clean(), "{}: {:?}", run.param, run.correctness);
    }
    let own_window = results.meta.sizes.as_ref().unwrap().async_window;
    assert!(async_io.iter().all(|run| run.settings.as_ref().unwrap().window == own_window));
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_gate_judges_a_sweep_and_confirms_a_cell_at_its_own_point() {
    let out = scratch("gate");
    let mut args = vec![
        "run",
        "--scenario",
        "uniform",
        "--strategy",
        "keyed-mailbox,work-stealing,group-by,inline",
        "--workers",
        "1,2",
        "--keys",
        "100",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(TINY);
    let output = keyed_bench(&args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    // --confirm 1: any wall-clock rule that fails on these tiny cells is measured again at
    // the cell's point, which must be possible.
    let results = out.join("results.json");
    let gate = keyed_bench(&["gate", "--results", results.to_str().unwrap(), "--confirm", "1"]);
    let said = text(&gate);
    assert!(matches!(gate.status.code(), Some(0 | 1)), "{said}");
    assert!(!said.contains("cannot measure"), "{said}");
    assert!(said.contains("uniform workers=1 keyed-mailbox"), "{said}");
    assert!(said.contains("the baseline holds none of this sweep's points"), "{said}");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_given_window_replaces_a_scenarios_own_and_is_swept() {
    let out = scratch("window");
    let mut args = vec![
        "run",
        "--scenario",
        "async-io",
        "--strategy",
        "keyed-mailbox",
        "--window",
        "8,32",
        "--async-keys",
        "20",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(TINY);
    let output = keyed_bench(&args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let results = Results::read(&out.join("results.json")).expect("valid results");
    let windows: Vec<(String, usize)> = results
        .runs
        .iter()
        .map(|run| (run.param.clone(), run.settings.as_ref().unwrap().window))
        .collect();
    assert_eq!(windows, [("keys=20 window=8".to_owned(), 8), ("keys=20 window=32".to_owned(), 32)]);
    assert!(results.runs.iter().all(|run| run.peak_in_flight <= run.window.unwrap()));
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_product_past_the_cell_limit_or_a_repeated_value_is_refused_before_anything_runs() {
    let out = scratch("refused");
    let out_arg = out.to_str().unwrap();
    // 4 x 4 points x 9 strategies = 144 cells.
    let sixteen_points =
        ["--scenario", "uniform", "--workers", "1,2,3,4", "--throughput", "1,2,4,8"];
    let over = [&["run"][..], &sixteen_points, &["--max-cells", "20", "--out", out_arg]].concat();
    let output = keyed_bench(&over);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("cell count") && said.contains("--max-cells"), "{said}");
    assert!(!out.exists(), "a refused run wrote {}", out.display());

    let output = keyed_bench(&["run", "--workers", "2,2", "--out", out_arg]);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(2), "{said}");
    assert!(said.contains("--workers") && said.contains('2'), "{said}");

    let output = keyed_bench(&["run", "--throughput", "0,16", "--out", out_arg]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));

    // The same product under a raised limit is listed by a dry run.
    let raised =
        [&["run", "--dry-run"][..], &sixteen_points, &["--max-cells", "2000", "--out", out_arg]]
            .concat();
    let output = keyed_bench(&raised);
    let said = text(&output);
    assert_eq!(output.status.code(), Some(0), "{said}");
    assert!(
        said.lines()
            .any(|line| line.starts_with("uniform ") && line.contains("workers=4 throughput=8")),
        "{said}"
    );
}
