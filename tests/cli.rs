//! The `keyed-bench` binary end to end: `plot`, `gate`, `export` and `soak` on good and bad
//! input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Exit status for bad input (flags, files).
const BAD_INPUT: i32 = 2;

fn keyed_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keyed-bench")).args(args).output().expect("the binary runs")
}

/// A fresh, empty folder under the system temp dir.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("keyed-bench-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn plot_of_a_missing_file_exits_2_and_names_it() {
    let dir = scratch("missing");
    let input = dir.join("results.json");
    let output = keyed_bench(&["plot", "--input", input.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(BAD_INPUT), "{}", stderr(&output));
    assert!(stderr(&output).contains("cannot read") && stderr(&output).contains("results.json"));
}

#[test]
fn plot_of_a_malformed_file_exits_2_and_says_why() {
    let dir = scratch("malformed");
    let input = dir.join("results.json");
    std::fs::write(&input, "{ not json").unwrap();
    let output = keyed_bench(&["plot", "--input", input.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(BAD_INPUT), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("is not a valid keyed-bench results file"),
        "{}",
        stderr(&output)
    );
    assert!(!dir.join("report.html").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn plot_of_the_reference_run_writes_charts_and_report_next_to_it() {
    let dir = scratch("reference");
    let reference =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("results/2026-11-30-vm/results.json");
    std::fs::copy(&reference, dir.join("results.json")).expect("copy the reference run");
    // A folder is accepted for --input: its results.json is read.
    let output = keyed_bench(&["plot", "--input", dir.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report = std::fs::read_to_string(dir.join("report.html")).expect("report written");
    assert!(report.starts_with("<!DOCTYPE html>") && report.contains("<svg"));
    for chart in ["throughput", "head-of-line", "hot-backlog-cliff", "async-io-elapsed"] {
        for extension in ["png", "svg"] {
            let file = dir.join("plots").join(format!("{chart}.{extension}"));
            assert!(file.is_file(), "{} missing", file.display());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The committed reference run, as JSON to doctor.
fn reference_json() -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/2026-11-30-vm/results.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn rules_path() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("gates.toml").display().to_string()
}

/// Writes doctored results and runs the gate on them without confirmation runs.
fn gate_on(name: &str, doctor: impl FnOnce(&mut serde_json::Value)) -> Output {
    let dir = scratch(name);
    let mut json = reference_json();
    doctor(&mut json);
    let results = dir.join("results.json");
    std::fs::write(&results, serde_json::to_vec(&json).unwrap()).unwrap();
    keyed_bench(&[
        "gate",
        "--results",
        results.to_str().unwrap(),
        "--rules",
        &rules_path(),
        "--confirm",
        "0",
    ])
}

fn run_of<'j>(
    json: &'j mut serde_json::Value,
    scenario: &str,
    strategy: &str,
) -> &'j mut serde_json::Value {
    json["runs"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|run| run["scenario"] == scenario && run["strategy"] == strategy)
        .unwrap()
}

#[test]
fn gate_passes_on_the_reference_run() {
    let output = gate_on("gate-pass", |_| {});
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", stderr(&output));
    assert!(stdout.contains(" passed, 0 failed"), "{stdout}");
}

#[test]
fn gate_fails_with_1_naming_the_rule_on_doctored_results() {
    type Doctor = fn(&mut serde_json::Value);
    let doctors: [(&str, Doctor, &str); 3] = [
        (
            "gate-order",
            |json| {
                run_of(json, "zipf", "keyed-mailbox")["correctness"]["order_violations"] = 3.into()
            },
            "FAIL  ordered strategies are correct",
        ),
        (
            "gate-ratio",
            |json| {
                run_of(json, "uniform", "keyed-mailbox")["throughput_per_s"]["median"] =
                    1000.0.into()
            },
            "FAIL  keyed-mailbox keeps up with group-by on uniform",
        ),
        (
            "gate-baseline",
            |json| {
                run_of(json, "uniform", "work-stealing")["throughput_per_s"]["median"] =
                    1000.0.into()
            },
            "FAIL  throughput relative to inline holds (baseline)",
        ),
    ];
    for (name, doctor, expected) in doctors {
        let output = gate_on(name, doctor);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(output.status.code(), Some(1), "{name}: {stdout}{}", stderr(&output));
        assert!(stdout.contains(expected), "{name}: {stdout}");
    }
}

#[test]
fn gate_exits_3_when_the_wall_clock_rules_saw_only_void_cells() {
    // Every cell void: the wall-clock rules judge nothing, correctness still judges.
    let void = serde_json::json!({
        "window_s": 1.0, "cpus": 2, "tick_s": 0.01, "windows": 1, "other_cpu_s": 1.0,
        "steal_s": 0.0, "pressure_s": null, "harness_wait_s": null, "validity": "void",
        "reasons": ["other processes 50% of 2 CPUs (+/- 1% over 1.00 s)"]
    });
    let all_void = |json: &mut serde_json::Value| {
        for run in json["runs"].as_array_mut().unwrap() {
            run["interference"] = void.clone();
        }
    };
    let output = gate_on("gate-void", all_void);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(3), "{stdout}{}", stderr(&output));
    assert!(stdout.contains("void  keyed-mailbox keeps up with group-by on uniform"), "{stdout}");
    assert!(stderr(&output).contains("inconclusive (exit 3)"), "{}", stderr(&output));
    // A failed correctness rule still fails, void or not.
    let output = gate_on("gate-void-violation", |json| {
        all_void(json);
        run_of(json, "zipf", "keyed-mailbox")["correctness"]["order_violations"] = 3.into();
    });
    assert_eq!(output.status.code(), Some(1), "{}", String::from_utf8_lossy(&output.stdout));
}

#[test]
fn gate_exits_2_on_bad_rules_or_results() {
    let dir = scratch("gate-bad");
    let rules = dir.join("gates.toml");
    std::fs::write(&rules, "[[rule]]\nname = 'x'\nkind = 'absolute'\nmetric = 'speed'\nstrategies = 'all'\nop = '>='\nvalue = 1\n").unwrap();
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/2026-11-30-vm/results.json");
    let output = keyed_bench(&[
        "gate",
        "--results",
        results.to_str().unwrap(),
        "--rules",
        rules.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(BAD_INPUT), "{}", stderr(&output));
    assert!(stderr(&output).contains("unknown metric `speed`"), "{}", stderr(&output));

    let missing = dir.join("absent.json");
    let output =
        keyed_bench(&["gate", "--results", missing.to_str().unwrap(), "--rules", &rules_path()]);
    assert_eq!(output.status.code(), Some(BAD_INPUT), "{}", stderr(&output));
}

#[test]
fn export_writes_bencher_and_github_action_benchmark_formats() {
    let results = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/2026-11-30-vm/results.json");
    let bmf = keyed_bench(&["export", "--results", results.to_str().unwrap(), "--format", "bmf"]);
    assert_eq!(bmf.status.code(), Some(0), "{}", stderr(&bmf));
    let bmf: serde_json::Value = serde_json::from_slice(&bmf.stdout).unwrap();
    assert!(bmf["uniform/keyed-mailbox"]["throughput"]["value"].as_f64().unwrap() > 0.0);
    let gab = keyed_bench(&["export", "--results", results.to_str().unwrap(), "--format", "gab"]);
    let gab: serde_json::Value = serde_json::from_slice(&gab.stdout).unwrap();
    assert!(gab
        .as_array()
        .unwrap()
        .iter()
        .any(|entry| entry["name"] == "async-io/keys=20/keyed-mailbox"));
}

#[test]
fn soak_of_a_few_keys_prints_the_table_and_exits_0() {
    let output = keyed_bench(&[
        "soak",
        "--strategy",
        "keyed-mailbox",
        "--keys",
        "2000",
        "--duration",
        "100ms",
        "--workers",
        "2",
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", stderr(&output));
    assert!(stdout.contains("keys churned") && stdout.contains("keyed-mailbox"), "{stdout}");
    assert!(stdout.contains("pass") && !stdout.contains("FAIL"), "{stdout}");
    assert!(stderr(&output).contains("keyed-mailbox: churning 2,000 keys"), "{}", stderr(&output));
}

#[test]
fn soak_exits_2_naming_a_bad_flag() {
    for (args, expected) in [
        (["soak", "--keys", "0"], "--keys must be"),
        (["soak", "--duration", "5x"], "--duration must be"),
        (["soak", "--strategy", "nope"], "unknown strategy `nope`"),
        (["soak", "--workers", "0"], "--workers must be"),
    ] {
        let output = keyed_bench(&args);
        assert_eq!(output.status.code(), Some(BAD_INPUT), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(expected), "{args:?}: {}", stderr(&output));
    }
}

/// Outside the repository (no gates.toml in the working directory) the gate judges with the
/// project's rules, built in, exactly as with the repository's files; a rules file named
/// on the command line must exist.
#[test]
fn gate_outside_the_repository_uses_the_built_in_rules_and_a_named_file_must_exist() {
    let root = env!("CARGO_MANIFEST_DIR");
    let results = format!("{root}/results/2026-12-01-vm-5/results.json");
    let judge = |dir: &str, more: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
            .current_dir(dir)
            .args(["gate", "--results", &results, "--format", "json", "--confirm", "0"])
            .args(more)
            .output()
            .expect("the binary runs")
    };
    let outside = std::env::temp_dir();
    let built_in = judge(outside.to_str().unwrap(), &[]);
    let here = judge(root, &[]);
    assert_eq!(here.status.code(), Some(0), "{}", stderr(&here));
    assert_eq!(built_in.status.code(), here.status.code(), "{}", stderr(&built_in));
    assert_eq!(built_in.stdout, here.stdout);
    let missing = judge(outside.to_str().unwrap(), &["--rules", "no-such-rules.toml"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        stderr(&missing).contains("cannot read rules no-such-rules.toml"),
        "{}",
        stderr(&missing)
    );
}

/// Under every commit policy the code calls safe, in every pipeline scenario, nothing is
/// lost and the version-aware state ends correct: a contiguous pipeline-crash cell whose
/// state ended wrong fails the project's gate naming the rule (no rule about one scenario
/// and policy judged that cell's state before), and an honest quick run of every pipeline
/// scenario passes it.
#[test]
fn gate_judges_the_safe_commit_policies_of_every_pipeline_scenario() {
    let root = env!("CARGO_MANIFEST_DIR");
    let path = format!("{root}/results/2026-12-01-vm-5/results.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let cell = json["pipelines"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|run| run["scenario"] == "pipeline-crash" && run["param"] == "policy=contiguous")
        .unwrap();
    cell["projection"]["final_state_correct"] = false.into();
    cell["projection"]["keys_wrong"] = 5.into();
    let dir = scratch("gate-safe");
    let doctored = dir.join("results.json");
    std::fs::write(&doctored, serde_json::to_vec(&json).unwrap()).unwrap();
    let judge = |results: &Path| {
        let results = results.to_str().unwrap();
        keyed_bench(&["gate", "--results", results, "--rules", &rules_path(), "--confirm", "0"])
    };
    let output = judge(&doctored);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}{}", stderr(&output));
    let rule = "the version-aware state ends correct under a safe commit policy";
    let failed: Vec<&str> = stdout.lines().filter(|line| line.starts_with("FAIL")).collect();
    assert_eq!(failed.len(), 1, "{stdout}");
    assert!(failed[0].contains(rule) && failed[0].contains("pipeline-crash policy=contiguous"));

    let out = dir.join("quick");
    let scenarios = "pipeline-crash,pipeline-retry,pipeline-expand,pipeline-reorder,\
                     pipeline-rebalance";
    let run = keyed_bench(&[
        "run",
        "--quick",
        "--scenario",
        scenarios,
        "--strategy",
        "keyed-mailbox,thread-pool",
        "--workers",
        "2",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    let output = judge(&out.join("results.json"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{}", stderr(&output));
    let judged = stdout.lines().filter(|line| line.starts_with("ok") && line.contains(rule));
    assert_eq!(judged.count(), 2 * 10, "2 strategies x 10 cells of a safe policy: {stdout}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An allocation the system refuses ends the run with a one-line error and status 1, not
/// Rust's abort (SIGABRT, a core dump where enabled). The address space is capped at 1 GiB
/// (`ulimit -v`) and the state of stateful asks for 4 GiB at once, past a --max-memory-mib
/// set high enough not to refuse it first.
#[cfg(target_os = "linux")]
#[test]
fn an_allocation_the_system_refuses_ends_with_a_message_and_status_1() {
    let out = scratch("out-of-memory");
    let output = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576 && exec \"$@\"")
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["run", "--scenario", "stateful", "--strategy", "keyed-mailbox", "--workers", "2"])
        .args(["--stateful-keys", "4096", "--state-kib", "1024", "--stateful-messages", "1000"])
        .args(["--repeat", "1", "--no-breakdown", "--max-memory-mib", "1000000", "--out"])
        .arg(&out)
        .output()
        .expect("sh runs");
    let text = stderr(&output);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(text.contains("error: out of memory: cannot allocate "), "{text}");
    assert!(text.contains("--max-memory-mib"), "{text}");
    assert!(!text.contains("panicked") && !text.contains("memory allocation of"), "{text}");
    let _ = std::fs::remove_dir_all(&out);
}

/// `scripts/many-core.sh`'s sizes fit its promise: under 8 minutes estimated for 16 cores,
/// with a point per power of two and one at cores - 1.
#[test]
fn the_many_core_run_is_estimated_under_eight_minutes_on_16_cores() {
    let root = env!("CARGO_MANIFEST_DIR");
    let output = Command::new("bash")
        .args([&format!("{root}/scripts/many-core.sh"), "--dry-run", "--cores", "16", "unused"])
        .env("KEYED_BENCH", env!("CARGO_BIN_EXE_keyed-bench"))
        .output()
        .expect("bash runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{text}{}", stderr(&output));
    assert!(text.contains("--workers 1,2,4,8,15"), "{text}");
    let line = text.lines().find(|line| line.starts_with("estimated duration: about ")).unwrap();
    let clock = line["estimated duration: about ".len()..].split(' ').next().unwrap();
    let (minutes, seconds) = clock.split_once('m').unwrap_or(("0", clock));
    let seconds: u64 = minutes.parse::<u64>().unwrap() * 60
        + seconds.trim_end_matches('s').parse::<u64>().unwrap();
    assert!(seconds < 8 * 60, "{line}");
    assert!(!Path::new("unused").exists(), "a dry run writes nothing");
}
