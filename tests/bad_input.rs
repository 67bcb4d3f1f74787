//! Bad input to every subcommand of the `keyed-bench` binary: each case must exit with
//! status 2, name the bad value on stderr in one style (`error: ...`, as clap's own errors),
//! not panic, and leave the files around it exactly as they were (nothing half-written, no
//! temporary file, no folder of partial output).
//!
//! No case measures anything: every one fails before a run starts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Exit status for bad input (flags, files).
const BAD_INPUT: i32 = 2;

/// The committed reference run.
fn reference_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("results/2026-11-30-vm/results.json")
}

fn reference_json() -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(reference_path()).unwrap()).unwrap()
}

const RELATIVE_RULE: &str = "[[rule]]\nname = 'keeps up'\nkind = 'relative'\n\
    metric = 'throughput_per_s.median'\nscenario = 'uniform'\nstrategies = ['keyed-mailbox']\n\
    of = 'group-by'\nop = '>='\nfactor = 0.8\n";

const BASELINE_RULE: &str = "[[rule]]\nname = 'vs inline'\nkind = 'baseline'\n\
    metric = 'throughput_vs_inline'\nscenario = 'uniform'\nstrategies = ['keyed-mailbox']\n\
    op = '>='\ntolerance = 0.2\n";

/// The files every case starts with, in a fresh folder.
fn fixtures(dir: &Path) {
    let write = |name: &str, contents: &[u8]| std::fs::write(dir.join(name), contents).unwrap();
    let reference = std::fs::read(reference_path()).unwrap();
    write("file", b"not a folder");
    std::fs::create_dir(dir.join("folder")).unwrap();
    write("empty.json", b"");
    write("truncated.json", &reference[..reference.len() / 2]);
    write("hello.json", b"hello");
    write("latin1.json", b"{\"schema\": \"caf\xe9\"}");
    let doctor = |name: &str, change: &dyn Fn(&mut serde_json::Value)| {
        let mut json = reference_json();
        change(&mut json);
        write(name, json.to_string().as_bytes());
    };
    doctor("v0.json", &|json| json["schema"] = "keyed-bench.results.v0".into());
    doctor("negative.json", &|json| json["runs"][3]["elapsed_s"] = (-1.0).into());
    doctor("twice.json", &|json| {
        let first = json["runs"][0].clone();
        json["runs"].as_array_mut().unwrap().push(first);
    });
    doctor("unknown-design.json", &|json| json["runs"][0]["strategy"] = "nobody".into());
    doctor("no-cores.json", &|json| json["meta"]["cores"] = 0.into());
    doctor("no-messages.json", &|json| json["runs"][1]["messages"] = 0.into());
    doctor("p99-above-max.json", &|json| {
        let max = json["runs"][2]["latency_ns"]["max"].as_u64().unwrap();
        json["runs"][2]["latency_ns"]["p99"] = (max + 1).into();
    });
    doctor("done-99-of-3.json", &|json| {
        json["meta"]["incomplete"] = serde_json::json!({
            "cells_planned": 3, "cells_done": 99, "missing": [], "stopped_by": "SIGINT"
        });
    });
    doctor("keys-zero.json", &|json| {
        let mut sizes = serde_json::to_value(harness::workload::Sizes::standard()).unwrap();
        sizes["keys"] = 0.into();
        json["meta"]["sizes"] = sizes;
    });
    write("rules.toml", RELATIVE_RULE.as_bytes());
    write("baseline-rules.toml", BASELINE_RULE.as_bytes());
    write("not-toml.toml", b"[[rule]\nname = ");
    write("latin1.toml", b"name = 'caf\xe9'");
    write("colour.toml", format!("{RELATIVE_RULE}colour = 'red'\n").as_bytes());
    write("factor-text.toml", RELATIVE_RULE.replace("0.8", "'lots'").as_bytes());
    write("factor-nan.toml", RELATIVE_RULE.replace("0.8", "nan").as_bytes());
    write("speed.toml", RELATIVE_RULE.replace("throughput_per_s.median", "speed").as_bytes());
    write("group-bye.toml", RELATIVE_RULE.replace("'group-by'", "'group-bye'").as_bytes());
    write("unifrom.toml", RELATIVE_RULE.replace("'uniform'", "'unifrom'").as_bytes());
    write("no-strategies.toml", RELATIVE_RULE.replace("['keyed-mailbox']", "[]").as_bytes());
    write("twice.toml", format!("{RELATIVE_RULE}{RELATIVE_RULE}").as_bytes());
    write("tolerance.toml", BASELINE_RULE.replace("0.2", "1.5").as_bytes());
    write("no-rules.toml", b"# nothing here\n");
    write("baseline-not-json.json", b"{ baseline");
    write("baseline-other.json", br#"{"schema": "elsewhere.v9", "values": {}}"#);
    write("baseline-kept.json", br#"{"schema": "keyed-bench.baseline.v1", "values": {}}"#);
}

/// Every file and folder under `dir` with its contents: what a failed command must leave.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut found = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                found.insert(path.clone(), None);
                pending.push(path);
            } else {
                found.insert(path.clone(), Some(std::fs::read(&path).unwrap()));
            }
        }
    }
    found
}

/// One bad invocation: its arguments (`{dir}` is the case's folder, `{ref}` the reference
/// run) and a piece of stderr that names the bad value.
struct Case {
    args: &'static [&'static str],
    names: &'static str,
}

const fn case(args: &'static [&'static str], names: &'static str) -> Case {
    Case { args, names }
}

const CASES: &[Case] = &[
    // run: numbers zero, negative, huge, not numbers, past their limits.
    case(&["run", "--cell-timeout", "0s"], "--cell-timeout must be numbers with units"),
    case(&["run", "--cell-timeout", "90"], "`90`"),
    case(&["run", "--cell-timeout", "25h"], "--cell-timeout must be numbers with units"),
    case(&["run", "--cell-timeout", "soon"], "`soon`"),
    case(&["run", "--workers", "0"], "--workers must be in 1..=4096, got 0"),
    case(&["run", "--workers", "-3"], "--workers must be a whole number in 1..=4096, got -3"),
    case(&["run", "--workers", "-3,2"], "--workers must be a whole number in 1..=4096, got -3"),
    case(&["run", "--workers", "1.5"], "--workers must be a whole number in 1..=4096, got 1.5"),
    case(&["run", "--workers", "many"], "'many'"),
    case(&["run", "--workers", "99999999999999999999999"], "got 99999999999999999999999"),
    case(&["run", "--workers", "5000"], "--workers must be in 1..=4096, got 5000"),
    case(&["run", "--window", "2097152"], "--window must be in 1..=2097151, got 2097152"),
    case(&["run", "--throughput", "0"], "--throughput must be in 1..=1048576, got 0"),
    case(&["run", "--groups-per-worker", "65537"], "got 65537"),
    case(&["run", "--repeat", "1001"], "--repeat must be in 1..=1000, got 1001"),
    case(&["run", "--messages", "0"], "--messages must be in 1..=100000000, got 0"),
    case(&["run", "--keys", "100000001"], "--keys must be in 1..=100000000, got 100000001"),
    case(&["run", "--zipf-s", "nan"], "--zipf-s must be in 0.01..=10, got NaN"),
    case(&["run", "--rate", "inf"], "--rate must be in 1..=1000000000, got inf"),
    case(&["run", "--rate", "fast"], "'fast'"),
    case(&["run", "--troubled-pct", "101"], "--troubled-pct must be in 0.0001..=100, got 101"),
    case(&["run", "--spin-ns", "1000000001"], "got 1000000001"),
    case(&["run", "--spin-ns=-5"], "--spin-ns must be a whole number in 0..=1000000000, got -5"),
    case(&["run", "--zipf-s", "-1"], "--zipf-s must be in 0.01..=10, got -1"),
    case(&["run", "--loads", "-0.5,0.9"], "--loads must be in 0.01..=2, got -0.5"),
    // Durations.
    case(&["run", "--backoff-ms", "0"], "--backoff-ms must be in 1..=1000, got 0"),
    case(&["run", "--hot-wait-ms", "1001"], "--hot-wait-ms must be in 1..=1000, got 1001"),
    case(&["run", "--async-max-wait-ms", "4001"], "got 4001"),
    case(&["run", "--long-ms", "2s"], "'2s'"),
    // Lists: empty, duplicate, bad entries.
    case(&["run", "--scenario", "bogus"], "unknown scenario `bogus`"),
    case(&["run", "--strategy", "keyed"], "unknown strategy `keyed`"),
    case(&["run", "--scenario", "uniform,"], "--scenario `uniform,` has an empty entry"),
    case(&["run", "--strategy", ""], "--strategy `` has an empty entry"),
    case(&["run", "--strategy", "inline,tokio,inline"], "--strategy names `inline` twice"),
    case(&["run", "--scenario", "all,zipf"], "`all` selects every id"),
    case(&["run", "--bursts", "5,5"], "--bursts names `5` twice"),
    case(&["run", "--bursts", "5,,6"], "--bursts"),
    case(&["run", "--async-keys", "0"], "--async-keys must be in 1..=100000000, got 0"),
    case(&["run", "--loads", "0.5,abc"], "'abc'"),
    case(&["run", "--loads", "3"], "--loads must be in 0.01..=2, got 3"),
    case(&["run", "--loads", "0.5,0.5"], "--loads names `0.5` twice"),
    // Conflicts and products past what can run.
    case(&["run", "--published-async-io"], "--published-parallel-consumer"),
    case(&["run", "--published-parallel-consumer", "--pc-keys", "3"], "--pc-keys"),
    case(&["run", "--published-parallel-consumer", "--pc-messages", "9"], "--pc-messages"),
    case(&["run", "--published-parallel-consumer", "--quick"], "--quick"),
    case(&["run", "--types", "100000", "--keys-per-type", "10000"], "100000 x 10000"),
    case(&["run", "--pipeline-records", "1000"], "--crash-after is 10000, past the limit of 1000"),
    case(&["run", "--metadata-limit", "2"], "--metadata-limit"),
    case(&["run", "--partitions", "0"], "--partitions"),
    case(&["run", "--commit-policy", "newest"], "unknown commit policy `newest`"),
    case(&["run", "--retry-policy", "retry-later"], "unknown retry policy `retry-later`"),
    case(&["run", "--commit-interval-ms", "0"], "--commit-interval-ms must be in 1..=60000, got 0"),
    case(&["run", "--partitions", "4", "--expand-to", "3"], "--expand-to must be more than"),
    case(&["run", "--partitions", "4", "--expand-to", "4"], "--expand-to must be more than"),
    case(&["run", "--poison", "30000"], "--poison is 30000, past the limit of 20000"),
    case(&["run", "--max-attempts", "101"], "--max-attempts must be in 0..=100, got 101"),
    case(&["run", "--fail-pct", "101"], "--fail-pct must be in 0..=100, got 101"),
    case(&["run", "--consumers", "1"], "--consumers must be in 2..=64, got 1"),
    case(&["run", "--pipeline-rate", "0"], "--pipeline-rate must be in 1..=100000000, got 0"),
    case(
        &["run", "--scenario", "many-types", "--strategy", "per-type-pool", "--types", "100000"],
        "--types x --workers is 100000 x",
    ),
    case(
        &["run", "--strategy", "group-by", "--workers", "4096", "--groups-per-worker", "65536"],
        "4096 x 65536",
    ),
    // Output folders.
    case(&["run", "--out", "{dir}/file"], "--out `{dir}/file` is a file"),
    case(&["run", "--out", ""], "--out"),
    case(
        &["run", "--scenario", "uniform", "--strategy", "inline", "--out", "{dir}/file/sub"],
        "{dir}/file/sub",
    ),
    case(&["run", "--seed", "-1"], "--seed must be a whole number in 0..=18446744073709551615"),
    case(&["run", "--no-such-flag"], "--no-such-flag"),
    case(&["no-such-command"], "no-such-command"),
    // plot: missing, empty, truncated, foreign, doctored results; outputs that cannot be.
    case(&["plot", "--input", "{dir}/absent.json"], "cannot read {dir}/absent.json"),
    case(&["plot", "--input", "{dir}/folder"], "cannot read {dir}/folder/results.json"),
    case(&["plot", "--input", "{dir}/empty.json"], "empty.json is not a valid"),
    case(&["plot", "--input", "{dir}/truncated.json"], "truncated.json is not a valid"),
    case(&["plot", "--input", "{dir}/hello.json"], "hello.json is not a valid"),
    case(&["plot", "--input", "{dir}/latin1.json"], "latin1.json is not a valid"),
    case(&["plot", "--input", "{dir}/v0.json"], "schema `keyed-bench.results.v0`"),
    case(&["plot", "--input", "{dir}/negative.json"], "`elapsed_s` is -1"),
    // Files no run writes: refused by every command that reads them.
    case(&["plot", "--input", "{dir}/twice.json"], "the cell is listed twice"),
    case(
        &["export", "--format", "bmf", "--results", "{dir}/twice.json"],
        "the cell is listed twice",
    ),
    case(&["compare", "{dir}/twice.json", "{ref}"], "the cell is listed twice"),
    case(&["gate", "--results", "{dir}/twice.json"], "the cell is listed twice"),
    case(
        &["export", "--format", "bmf", "--results", "{dir}/unknown-design.json"],
        "strategy `nobody` is neither",
    ),
    case(&["export", "--format", "bmf", "--results", "{dir}/no-cores.json"], "`meta.cores` is 0"),
    case(&["export", "--format", "bmf", "--results", "{dir}/no-messages.json"], "`messages` is 0"),
    case(
        &["export", "--format", "bmf", "--results", "{dir}/p99-above-max.json"],
        "percentiles rise",
    ),
    case(
        &["export", "--format", "bmf", "--results", "{dir}/done-99-of-3.json"],
        "99 of 3 cells done",
    ),
    case(&["plot", "--input", ""], "--input"),
    case(&["plot", "--input", "{ref}", "--out", "{dir}/file"], "--out {dir}/file is a file"),
    case(&["plot", "--input", "{ref}", "--report", "{dir}/folder"], "{dir}/folder is a folder"),
    case(
        &["plot", "--input", "{ref}", "--out", "{dir}/plots", "--report", "{dir}/file/r.html"],
        "cannot write {dir}/file",
    ),
    case(&["plot", "--input", "{ref}", "--out", "{dir}/file/plots"], "{dir}/file/plots"),
    // gate: results, rules and baselines missing, unreadable, malformed or wrong.
    case(&["gate", "--results", "{dir}/absent.json"], "cannot read {dir}/absent.json"),
    case(&["gate", "--results", "{dir}/v0.json"], "schema `keyed-bench.results.v0`"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/absent.toml"], "{dir}/absent.toml"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/folder"], "{dir}/folder"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/not-toml.toml"], "not-toml.toml"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/latin1.toml"], "not UTF-8"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/no-rules.toml"], "holds no [[rule]]"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/colour.toml"], "unknown field `colour`"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/factor-text.toml"], "'lots'"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/factor-nan.toml"], "got NaN"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/speed.toml"], "unknown metric `speed`"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/group-bye.toml"], "`group-bye`"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/unifrom.toml"], "`unifrom`"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/no-strategies.toml"], "empty list"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/twice.toml"], "named `keeps up`"),
    case(&["gate", "--results", "{ref}", "--rules", "{dir}/tolerance.toml"], "got 1.5"),
    case(
        &["gate", "--results", "{dir}/keys-zero.json", "--rules", "{dir}/rules.toml"],
        "--keys must be in 1..=100000000, got 0",
    ),
    case(&["gate", "--results", "{ref}", "--confirm", "11"], "--confirm must be in 0..=10, got 11"),
    case(
        &["gate", "--results", "{ref}", "--confirm", "-1"],
        "--confirm must be a whole number in 0..=10, got -1",
    ),
    case(&["gate", "--results", "{ref}", "--format", "yaml"], "'yaml'"),
    case(
        &[
            "gate",
            "--results",
            "{ref}",
            "--rules",
            "{dir}/baseline-rules.toml",
            "--baseline",
            "{dir}/absent-baseline.json",
        ],
        "cannot read baseline {dir}/absent-baseline.json",
    ),
    case(
        &[
            "gate",
            "--results",
            "{ref}",
            "--rules",
            "{dir}/baseline-rules.toml",
            "--baseline",
            "{dir}/baseline-not-json.json",
        ],
        "invalid baseline file {dir}/baseline-not-json.json",
    ),
    case(
        &[
            "gate",
            "--results",
            "{ref}",
            "--rules",
            "{dir}/baseline-rules.toml",
            "--baseline",
            "{dir}/baseline-other.json",
        ],
        "schema `elsewhere.v9`",
    ),
    case(
        &[
            "gate",
            "--results",
            "{ref}",
            "--rules",
            "{dir}/speed.toml",
            "--baseline",
            "{dir}/baseline-kept.json",
            "--update-baseline",
        ],
        "unknown metric `speed`",
    ),
    case(
        &[
            "gate",
            "--results",
            "{ref}",
            "--rules",
            "{dir}/baseline-rules.toml",
            "--baseline",
            "{dir}/folder",
            "--update-baseline",
        ],
        "cannot write {dir}/folder",
    ),
    // compare: results missing, unreadable or malformed; flags out of range.
    case(&["compare", "{dir}/absent.json", "{ref}"], "cannot read {dir}/absent.json"),
    case(&["compare", "{ref}", "{dir}/folder"], "cannot read {dir}/folder/results.json"),
    case(&["compare", "{ref}", "{dir}/empty.json"], "empty.json is not a valid"),
    case(&["compare", "{dir}/truncated.json", "{ref}"], "truncated.json is not a valid"),
    case(&["compare", "{ref}", "{dir}/latin1.json"], "latin1.json is not a valid"),
    case(&["compare", "{ref}", "{dir}/v0.json"], "schema `keyed-bench.results.v0`"),
    case(&["compare", "{dir}/negative.json", "{ref}"], "`elapsed_s` is -1"),
    case(&["compare", "", "{ref}"], "a value is required for '<A>'"),
    case(&["compare", "{ref}"], "<B>"),
    case(
        &["compare", "{ref}", "{ref}", "--fail-on-regression=-5"],
        "--fail-on-regression must be in 0..=1000, got -5",
    ),
    case(
        &["compare", "{ref}", "{ref}", "--fail-on-regression", "-5"],
        "--fail-on-regression must be in 0..=1000, got -5",
    ),
    case(
        &["compare", "{ref}", "{ref}", "--fail-on-regression", "1001"],
        "--fail-on-regression must be in 0..=1000, got 1001",
    ),
    case(
        &["compare", "{ref}", "{ref}", "--fail-on-regression", "nan"],
        "--fail-on-regression must be in 0..=1000, got NaN",
    ),
    case(&["compare", "{ref}", "{ref}", "--fail-on-regression", "lots"], "'lots'"),
    case(&["compare", "{ref}", "{ref}", "--alpha", "0"], "--alpha must be in 0.0001..=0.5, got 0"),
    case(&["compare", "{ref}", "{ref}", "--threshold", "200"], "--threshold must be in 0..=100"),
    case(&["compare", "{ref}", "{ref}", "--metric", "p95"], "unknown metric `p95`"),
    case(&["compare", "{ref}", "{ref}", "--metric", "p99,p99"], "--metric names `p99` twice"),
    case(&["compare", "{ref}", "{ref}", "--metric", ""], "--metric `` has an empty entry"),
    case(&["compare", "{ref}", "{ref}", "--format", "yaml"], "'yaml'"),
    // soak (rejected before anything runs).
    case(&["soak", "--keys", "0"], "--keys"),
    case(&["soak", "--workers", "0"], "--workers"),
    case(&["soak", "--keys", "-1"], "--keys must be a whole number in 1..=100000000, got -1"),
    case(&["soak", "--duration", "0s"], "`0s`"),
    case(&["soak", "--duration", "30x"], "`30x`"),
    case(&["soak", "--duration", "25h"], "`25h`"),
    case(&["soak", "--strategy", "nope"], "nope"),
    case(&["soak", "--strategy", "keyed-mailbox,keyed-mailbox"], "keyed-mailbox"),
    case(&["soak", "--strategy", "keyed-mailbox", "--strategy", "keyed-mailbox"], "keyed-mailbox"),
    // export.
    case(&["export", "--results", "{dir}/absent.json", "--format", "bmf"], "{dir}/absent.json"),
    case(&["export", "--results", "{dir}/truncated.json", "--format", "gab"], "truncated.json"),
    case(&["export", "--results", "{ref}", "--format", "xml"], "'xml'"),
    case(
        &["export", "--results", "{ref}", "--format", "bmf", "--out", "{dir}/folder"],
        "cannot write --out {dir}/folder",
    ),
    case(
        &["export", "--results", "{ref}", "--format", "bmf", "--out", "{dir}/absent/x.json"],
        "cannot write --out {dir}/absent/x.json",
    ),
    // history: no folder of runs, none in it, a page that is not one.
    case(&["history", "--results", "{dir}/file"], "--results {dir}/file is not a folder"),
    case(&["history", "--results", "{dir}/folder"], "no results.json under {dir}/folder"),
    case(&["history", "--results", ""], "--results"),
    case(&["history", "--results", "{dir}", "--out", "{dir}/folder"], "--out {dir}/folder is not"),
    case(
        &["history", "--results", "{dir}", "--out", "{dir}/page.md"],
        "--out {dir}/page.md is not",
    ),
];

#[test]
fn every_bad_invocation_exits_2_naming_the_value_and_writes_nothing() {
    let root = std::env::temp_dir().join(format!("keyed-bench-bad-input-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let reference = reference_path().display().to_string();
    let mut failures = Vec::new();
    for (index, case) in CASES.iter().enumerate() {
        let dir = root.join(index.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        fixtures(&dir);
        let fill = |text: &str| {
            text.replace("{dir}", &dir.display().to_string()).replace("{ref}", &reference)
        };
        let args: Vec<String> = case.args.iter().map(|arg| fill(arg)).collect();
        let before = snapshot(&dir);
        let output = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
            .args(&args)
            .current_dir(&dir)
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        let names = fill(case.names);
        let mut problems = Vec::new();
        if output.status.code() != Some(BAD_INPUT) {
            problems.push(format!("exit status {:?}", output.status.code()));
        }
        if !stderr.contains(&names) {
            problems.push(format!("stderr does not contain {names:?}"));
        }
        if !stderr.starts_with("error: ") {
            problems.push("stderr does not start with `error: `, as clap's errors do".to_owned());
        }
        if stderr.contains("panicked") {
            problems.push("panicked".to_owned());
        }
        let after = snapshot(&dir);
        if after != before {
            let changed: Vec<_> = after
                .keys()
                .chain(before.keys())
                .filter(|path| after.get(*path) != before.get(*path))
                .map(|path| path.display().to_string())
                .collect();
            problems.push(format!("files changed: {changed:?}"));
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{args:?}: {}\n  stderr: {}",
                problems.join("; "),
                stderr.trim()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&root);
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        CASES.len(),
        failures.join("\n")
    );
}

/// The flags of each subcommand, as clap sees them, and the arguments that make the rest of
/// its command line valid.
fn subcommands(reference: &str) -> Vec<(clap::Command, Vec<String>)> {
    use clap::{Args, Command};
    let owned = |words: &[&str]| words.iter().map(|word| (*word).to_owned()).collect();
    vec![
        (harness::cli::RunArgs::augment_args(Command::new("run")), owned(&["run", "--dry-run"])),
        (harness::cli::soak::SoakArgs::augment_args(Command::new("soak")), owned(&["soak"])),
        (
            harness::cli::compare::CompareArgs::augment_args(Command::new("compare")),
            owned(&["compare", reference, reference]),
        ),
        (
            harness::cli::gate::GateArgs::augment_args(Command::new("gate")),
            owned(&["gate", "--results", reference]),
        ),
        (
            harness::cli::plot::PlotArgs::augment_args(Command::new("plot")),
            owned(&["plot", "--input", reference]),
        ),
        (
            harness::cli::export::ExportArgs::augment_args(Command::new("export")),
            owned(&["export", "--results", reference, "--format", "bmf"]),
        ),
    ]
}

/// Every numeric flag of every subcommand given `-1`: exit 2 and one message, in the style
/// of clap's, that names the flag and what it accepts (not clap's "unexpected argument
/// '-1'", which names neither).
#[test]
fn a_negative_number_for_any_numeric_flag_is_refused_by_its_range() {
    use std::any::TypeId;
    let numbers =
        [TypeId::of::<usize>(), TypeId::of::<u64>(), TypeId::of::<u32>(), TypeId::of::<f64>()];
    let reference = reference_path().display().to_string();
    let (mut checked, mut failures) = (0, Vec::new());
    for (command, words) in subcommands(&reference) {
        for arg in command.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if !numbers.iter().any(|number| arg.get_value_parser().type_id() == *number) {
                continue;
            }
            checked += 1;
            let output = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
                .args(&words)
                .args([format!("--{long}"), "-1".to_owned()])
                .output()
                .expect("the binary runs");
            let stderr = String::from_utf8_lossy(&output.stderr);
            let expected = format!("error: --{long} must be ");
            if output.status.code() != Some(BAD_INPUT)
                || !stderr.starts_with(&expected)
                || !stderr.contains("..=")
                || !stderr.contains("got -1")
            {
                failures.push(format!(
                    "{} --{long} -1: {:?}: {}",
                    words[0],
                    output.status.code(),
                    stderr.trim()
                ));
            }
        }
    }
    assert!(checked >= 50, "only {checked} numeric flags found");
    assert!(failures.is_empty(), "{} of {checked}:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn a_closed_standard_output_ends_quietly() {
    use std::io::Read as _;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .args(["export", "--results", &reference_path().display().to_string(), "--format", "bmf"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // Close the reading end at once: the export (tens of kilobytes) meets a closed pipe.
    drop(child.stdout.take());
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(status.code(), Some(0), "{stderr}");
}

#[test]
fn a_full_standard_output_is_reported_with_status_2() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // not on this system
    };
    let output = Command::new(env!("CARGO_BIN_EXE_keyed-bench"))
        .arg("list")
        .stdout(full)
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(BAD_INPUT), "{stderr}");
    assert!(stderr.contains("cannot write to standard output"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
