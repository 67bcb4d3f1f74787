//! The documents name everything a reader looks up: every strategy in the README and the
//! design document, every scenario in docs/workloads.md and the design document, every size
//! flag and every results field in docs/results.md. A strategy, scenario, size or field
//! added without its docs fails here.

use std::collections::BTreeSet;

use harness::config::flag_ranges;
use harness::results::Results;
use harness::workload::ScenarioId;
use strategies::StrategyId;

fn read(path: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Fails naming each of `documents` that does not mention every one of `ids` as `` `id` ``.
fn assert_named<'a>(documents: &[&str], ids: impl Iterator<Item = &'a str> + Clone) {
    for document in documents {
        let text = read(document);
        let missing: Vec<&str> =
            ids.clone().filter(|id| !text.contains(&format!("`{id}`"))).collect();
        assert!(missing.is_empty(), "{document} does not name {missing:?}");
    }
}

#[test]
fn every_strategy_is_documented() {
    let documents = ["README.md", "docs/design.md", "strategies/src/lib.rs"];
    assert_named(&documents, StrategyId::ALL.iter().map(|id| id.as_str()));
}

#[test]
fn every_scenario_is_documented() {
    let documents = ["docs/workloads.md", "docs/design.md", "docs/results.md"];
    assert_named(&documents, ScenarioId::ALL.iter().map(|id| id.as_str()));
}

#[test]
fn every_size_flag_is_documented() {
    let results = read("docs/results.md");
    let flags: Vec<String> = flag_ranges().map(|range| format!("--{}", range.flag)).collect();
    let missing: Vec<&String> = flags.iter().filter(|flag| !results.contains(*flag)).collect();
    assert!(missing.is_empty(), "docs/results.md does not name {missing:?}");
}

/// Every field path of `value`, objects joined with `.` and arrays as `[]`.
fn field_paths(value: &serde_json::Value, path: &str, into: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Object(fields) => {
            for (key, field) in fields {
                let path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                into.insert(path.clone());
                field_paths(field, &path, into);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                field_paths(item, &format!("{path}[]"), into);
            }
        }
        _ => {}
    }
}

/// One small cell of every pipeline scenario, each with its own section filled in.
fn pipeline_cells() -> Vec<harness::pipeline::PipelineRun> {
    use harness::pipeline::{run_scenario, Bench, PipelinePlan};
    let sizes = harness::workload::Sizes {
        pipeline_records: 600,
        pipeline_keys: 50,
        partitions: 2,
        expand_to: 4,
        crash_after: 200,
        commit_interval_ms: 1,
        ..harness::workload::Sizes::quick()
    };
    let timer = harness::measure::timer::Timer::start();
    let bench = Bench {
        sizes: &sizes,
        seed: 1,
        timer: &timer,
        strategy_config: strategies::StrategyConfig::with_workers(2),
    };
    let plan = PipelinePlan::default();
    let mut cells = Vec::new();
    for scenario in ScenarioId::ALL.iter().copied().filter(|scenario| scenario.is_pipeline()) {
        let runs =
            run_scenario(scenario, &bench, &plan, &[StrategyId::KeyedMailbox.into()], |_| {});
        cells.extend(runs.expect("a small pipeline cell runs").into_iter().take(1));
    }
    cells
}

fn settings() -> harness::sweep::CellSettings {
    harness::sweep::CellSettings {
        workers: 2,
        throughput: 16,
        window: 256,
        idle_spin_us: 20,
        sweep: "workers=2".into(),
    }
}

#[test]
fn every_results_field_is_documented() {
    let reference = read("results/2026-11-30-vm/results.json");
    let path = std::path::Path::new("results.json");
    let mut results = Results::parse(reference.as_bytes(), path).expect("the reference reads");
    // Fill every optional field, so that the check sees it.
    let mut run = results.runs.iter().find(|run| run.bystander_latency_ns.is_some()).cloned();
    if let Some(run) = run.as_mut() {
        run.samples = Some(harness::results::Samples {
            throughput_per_s: vec![run.throughput_per_s.median],
            elapsed_s: vec![run.elapsed_s],
            latency_p99_ns: vec![run.latency_ns.p99],
        });
        run.memory = Some(harness::results::CellMemory { before_bytes: 1, peak_bytes: 2 });
        run.settings = Some(settings());
    }
    results.runs = run.into_iter().collect();
    results.pipelines = pipeline_cells();
    results.pipelines[0].settings = Some(settings());
    let user = strategies::Descriptor::custom(
        "docs-design",
        "a design of the docs test",
        strategies::Family::Mailboxes,
        true,
        strategies::Threads::SharedPool,
    );
    results.meta.designs = vec![harness::results::designs::DesignRecord::of(&user)];
    results.meta.sweep =
        Some(harness::sweep::Sweep::single(&strategies::StrategyConfig::with_workers(2)));
    results.meta.retry_policies = Some(harness::pipeline::RetryPolicy::ALL.to_vec());
    results.meta.scenarios = Some(vec!["uniform".into()]);
    results.meta.strategies = Some(vec!["inline".into()]);
    results.meta.breakdown = Some(true);
    let cell = harness::results::CellKey::recorded("uniform", "", "inline");
    results.meta.incomplete = Some(harness::results::incomplete::Incomplete {
        cells_planned: 2,
        cells_done: 1,
        missing: vec![cell],
        stopped_by: Some("SIGINT".into()),
    });
    results.meta.resumed = vec![harness::results::incomplete::Resumed {
        created: "2030-01-01T00:00:00Z".into(),
        command: "keyed-bench run --resume results/latest".into(),
        git_commit: "abc".into(),
    }];
    let json = serde_json::to_value(&results).unwrap();
    let mut paths = BTreeSet::new();
    field_paths(&json, "", &mut paths);
    let document = read("docs/results.md");
    // A field is documented where its whole path appears (`runs[].latency_ns.p99`), or
    // for an object, its fields' paths; a size by its name in the sizes table.
    let missing: Vec<&String> = paths
        .iter()
        .filter(|path| {
            let named = |text: String| document.contains(&text);
            let size = path.strip_prefix("meta.sizes.").map(|name| format!("| `{name}` |"));
            !named(format!("`{path}`")) && !named(format!("`{path}.")) && !size.is_some_and(named)
        })
        .collect();
    assert!(missing.is_empty(), "docs/results.md does not name {missing:?}");
}
