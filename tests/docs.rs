//! The documents name everything a reader looks up: every strategy in the README and the
//! design document, every scenario in docs/workloads.md and the design document, every size
//! flag, every metric and every results field in docs/results.md. A strategy, scenario,
//! size, metric or field added without its docs fails here. Every relative link of the
//! README and docs/ leads to a file, and the README's results at a glance agree with the run
//! they quote.

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

/// Every strategy has an instruction-count benchmark (`benches/icount.rs`, one
/// `#[bench::id]` line each, the id with `_` for `-`) and a baseline count for it
/// (`benches/icount-baseline.json`), so the count gate covers a strategy added later.
#[test]
fn every_strategy_has_an_instruction_count_and_its_baseline() {
    let bench = read("benches/icount.rs");
    let baseline: serde_json::Value =
        serde_json::from_str(&read("benches/icount-baseline.json")).expect("the baseline parses");
    for id in StrategyId::ALL {
        let name = id.as_str().replace('-', "_");
        assert!(
            bench.contains(&format!("#[bench::{name}(args = (StrategyId::")),
            "benches/icount.rs has no dispatch benchmark for `{id}`"
        );
        let key = format!("executors/dispatch/{name}");
        assert!(
            baseline["instructions"][&key].is_u64(),
            "benches/icount-baseline.json has no count for {key} (scripts/icount.sh --update)"
        );
    }
}

#[test]
fn every_scenario_is_documented() {
    let documents = ["docs/workloads.md", "docs/design.md", "docs/results.md"];
    assert_named(&documents, ScenarioId::ALL.iter().map(|id| id.as_str()));
}

#[test]
fn every_metric_is_documented() {
    let names = harness::results::Metric::ALL.iter().map(|metric| metric.name());
    assert_named(&["docs/results.md"], names);
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
fn pipeline_cells() -> Vec<harness::results::PipelineRun> {
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
        watch: Default::default(),
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

fn settings() -> harness::results::CellSettings {
    harness::results::CellSettings {
        workers: 2,
        throughput: 16,
        window: 256,
        idle_spin_us: 20,
        sweep: "workers=2".into(),
    }
}

/// An interference receipt with every field filled.
fn receipt() -> harness::results::Interference {
    let (window_s, cpus, tick_s) = (0.5, 2, 0.01);
    let (other, steal, pressure, wait) = (Some(0.4), Some(0.0), Some(0.3), Some(0.01));
    harness::results::Interference::judged(window_s, cpus, tick_s, other, steal, pressure, wait)
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
            bystander_p99_ns: Vec::new(),
            throughput_per_s: vec![run.throughput_per_s.median],
            elapsed_s: vec![run.elapsed_s],
            latency_p99_ns: vec![run.latency_ns.p99],
            interference: vec![receipt()],
            cpu_s: vec![run.cpu_s],
        });
        run.cpu_per_message_ns = Some(harness::results::CpuPerMessage {
            process: 900.0,
            off_producer: 600.0,
            strategy_threads: Some(500.0),
        });
        run.interference = Some(harness::results::Interference { remeasured: 1, ..receipt() });
        run.memory = Some(harness::results::CellMemory { before_bytes: 1, peak_bytes: 2 });
        run.settings = Some(settings());
        run.driver_gc = Some(harness::results::DriverGc { collections: 2, time_ms: 3.5 });
    }
    results.runs = run.into_iter().collect();
    results.pipelines = pipeline_cells();
    results.pipelines[0].settings = Some(settings());
    results.pipelines[0].interference = Some(receipt());
    results.meta.revalidate = Some(2);
    results.meta.calibrations = vec![harness::results::Calibration {
        what: "recorder overhead".into(),
        interference: receipt(),
    }];
    let user = strategies::Descriptor::custom(
        "docs-design",
        "a design of the docs test",
        strategies::Family::Mailboxes,
        true,
        strategies::Threads::SharedPool,
    );
    let external = harness::results::designs::ExternalRecord {
        command: "driver".into(),
        version: "1".into(),
        wait: "a timer".into(),
        sources: vec!["driver.rs".into()],
        source_sha256: "0".repeat(64),
        protocol: 1,
    };
    let record = harness::results::designs::DesignRecord::of(&user);
    results.meta.designs =
        vec![harness::results::designs::DesignRecord { external: Some(external), ..record }];
    results.meta.sweep =
        Some(harness::sweep::Sweep::single(&strategies::StrategyConfig::with_workers(2)));
    results.meta.retry_policies = Some(harness::results::RetryPolicy::ALL.to_vec());
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
    results.failed = vec![harness::results::FailedCell {
        scenario: "zipf".into(),
        param: String::new(),
        strategy: "inline".into(),
        reason: "no progress for 60 s: 0 of 10 messages done".into(),
        unit: "messages".into(),
        done: 0,
        expected: Some(10),
        timeout_s: 60.0,
        elapsed_s: 61.0,
        abandoned: false,
    }];
    results.meta.resumed = vec![harness::results::incomplete::Resumed {
        created: "2030-01-01T00:00:00Z".into(),
        command: "keyed-bench run --resume results/latest".into(),
        git_commit: "abc".into(),
    }];
    let json = serde_json::to_value(&results).unwrap();
    let mut paths = BTreeSet::new();
    field_paths(&json, "", &mut paths);
    let document = read("docs/results.md");
    // An object (or array of objects) documented as having "the fields of `other`" has
    // other's fields.
    let aliases: Vec<(String, String)> = document
        .lines()
        .filter_map(|line| {
            let path = line.strip_prefix("| `")?.split('`').next()?;
            let other = line.split("the fields of `").nth(1)?.split('`').next()?;
            Some([
                (format!("{path}."), format!("{other}.")),
                (format!("{path}[]."), format!("{other}.")),
            ])
        })
        .flatten()
        .collect();
    let paths: BTreeSet<String> = paths
        .into_iter()
        .map(|path| match aliases.iter().find(|(alias, _)| path.starts_with(alias.as_str())) {
            Some((alias, other)) => path.replacen(alias.as_str(), other, 1),
            None => path,
        })
        .collect();
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

/// The documents a reader follows links through: the README and every file of docs/.
fn linked_documents() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut documents: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ reads")
        .map(|entry| entry.expect("a docs/ entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    documents.sort();
    documents.insert(0, "README.md".to_owned());
    documents
}

/// The target of every inline link and image (`[text](target)`) of `text` outside fenced
/// code, and of every reference definition (`[name]: target`).
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find([')', ' ']).unwrap_or(rest.len());
            targets.push(rest[..end].trim_matches(['<', '>']).to_owned());
        }
        let definition = line.trim_start();
        if let Some(end) = definition.strip_prefix('[').and_then(|rest| rest.find("]: ")) {
            let target = definition[end + 4..].split_whitespace().next().unwrap_or("");
            targets.push(target.to_owned());
        }
    }
    targets
}

#[test]
fn every_relative_link_leads_to_a_file() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut broken = Vec::new();
    let mut checked = 0;
    for document in linked_documents() {
        let folder = root.join(&document).parent().expect("a document's folder").to_owned();
        for target in link_targets(&read(&document)) {
            let external = ["http://", "https://", "mailto:"];
            if external.iter().any(|scheme| target.starts_with(scheme)) {
                continue;
            }
            let path = target.split('#').next().unwrap_or("");
            if path.is_empty() {
                continue; // an anchor in the same document
            }
            checked += 1;
            if !folder.join(path).exists() {
                broken.push(format!("{document}: {target}"));
            }
        }
    }
    assert!(checked > 20, "only {checked} relative links found: is the link parser broken?");
    assert!(broken.is_empty(), "links to no file: {broken:#?}");
}

#[test]
fn the_link_parser_finds_links_images_and_definitions() {
    let text = "see [a](docs/a.md#x) and ![b](../b.png \"title\")\n\
                ```sh\n[not](code.md)\n```\n[c]: c.md\n";
    assert_eq!(link_targets(text), ["docs/a.md#x", "../b.png", "c.md"]);
}

/// What a metric of the README's results at a glance reads in results.json: the section
/// (`runs` or `pipelines`), the field's path, whether higher is better, and the units its
/// figures may be written in, each with its factor to the field's unit.
fn glance_metric(name: &str) -> (&'static str, &'static str, bool, &'static [(&'static str, f64)]) {
    const RATE: &[(&str, f64)] = &[("msg/s", 1.0)];
    const COUNT: &[(&str, f64)] = &[("", 1.0)];
    const TIME_NS: &[(&str, f64)] = &[("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9)];
    match name {
        "throughput" => ("runs", "throughput_per_s.median", true, RATE),
        "cold-command rate" => ("runs", "throughput_per_s.median", true, &[("/s", 1.0)]),
        "bystander p99" => ("runs", "bystander_latency_ns.p99", false, TIME_NS),
        "p99 latency" => ("runs", "latency_ns.p99", false, TIME_NS),
        "efficiency" => ("runs", "efficiency", true, COUNT),
        "records redelivered" => ("pipelines", "redelivered", false, COUNT),
        "records lost" => ("pipelines", "lost", false, COUNT),
        _ => panic!("README results at a glance: no results.json field for metric {name:?}"),
    }
}

/// A figure as the README writes it (`759.4k msg/s`, `98.8 us`, `0.90`, `1,024`): its value
/// in the field's unit and half of its last digit's step there (what rounding may hide).
fn parse_figure(figure: &str, units: &[(&str, f64)]) -> (f64, f64) {
    // What follows the figure (", 6 others within noise") is the reading's, not the figure.
    let figure = figure.split(", ").next().unwrap_or(figure);
    let (number, unit) = figure.split_once(' ').unwrap_or((figure, ""));
    let (number, unit) = match number.strip_suffix("/s") {
        Some(number) => (number, "/s"),
        None => (number, unit),
    };
    let number = number.replace(',', "");
    let (digits, scale) = match number.strip_suffix('k') {
        Some(digits) => (digits.to_owned(), 1e3),
        None => match number.strip_suffix('M') {
            Some(digits) => (digits.to_owned(), 1e6),
            None => (number.clone(), 1.0),
        },
    };
    let value: f64 = digits.parse().unwrap_or_else(|_| panic!("{figure:?}: not a number"));
    let decimals = digits.split_once('.').map_or(0, |(_, fraction)| fraction.len());
    let factor = units
        .iter()
        .find(|(name, _)| *name == unit)
        .map(|(_, factor)| *factor)
        .unwrap_or_else(|| panic!("{figure:?}: unit {unit:?} is not one of {units:?}"));
    let step = 10f64.powi(-(decimals as i32)) * scale * factor;
    (value * scale * factor, step / 2.0)
}

#[test]
fn the_figures_parse_with_their_rounding() {
    let rate = [("msg/s", 1.0)];
    assert_eq!(parse_figure("759.4k msg/s", &rate), (759_400.0, 50.0));
    let (value, half) = parse_figure("98.8 us", &[("us", 1e3)]);
    assert!((value - 98_800.0).abs() < 1e-6 && (half - 50.0).abs() < 1e-6);
    assert_eq!(parse_figure("4,785", &[("", 1.0)]), (4785.0, 0.5));
    assert_eq!(parse_figure("22.9k/s, 4 others within noise", &[("/s", 1.0)]), (22_900.0, 50.0));
    assert_eq!(parse_figure("1,073, 2 others", &[("", 1.0)]), (1_073.0, 0.5));
}

/// Fails unless every cell of `json` (run `run`) has a receipt and the receipts meet the
/// reference bar (`meets_reference_bar`: no void cell, at most 1% disturbed).
fn meets_the_reference_bar(json: &serde_json::Value, run: &str) {
    use harness::results::interference::meets_reference_bar;
    use harness::results::Validity;
    let cells = ["runs", "pipelines"]
        .iter()
        .flat_map(|section| json[section].as_array().into_iter().flatten());
    let validities: Vec<Validity> = cells
        .map(|cell| {
            let validity = &cell["interference"]["validity"];
            serde_json::from_value(validity.clone()).unwrap_or_else(|_| {
                panic!("results/{run}: a reference run has a receipt on every cell: {cell}")
            })
        })
        .collect();
    let count = |validity| validities.iter().filter(|&&v| v == validity).count();
    assert!(
        meets_reference_bar(&validities),
        "results/{run} is no reference run: {} void and {} disturbed of {} cells",
        count(Validity::Void),
        count(Validity::Disturbed),
        validities.len()
    );
}

/// The value at `path` (fields joined by `.`) of `value`, as a number.
fn number_at(value: &serde_json::Value, path: &str) -> Option<f64> {
    path.split('.').try_fold(value, |value, field| value.get(field))?.as_f64()
}

#[test]
fn the_results_at_a_glance_agree_with_the_run_they_name() {
    let readme = read("README.md");
    let start = readme.find("## Results at a glance").expect("the README has results at a glance");
    let section = &readme[start..];
    let section = &section[..section[2..].find("\n## ").map_or(section.len(), |end| end + 2)];
    // The run: the first link into results/, as `results/<run>/...`.
    let run = link_targets(section)
        .into_iter()
        .find_map(|target| {
            let rest = target.strip_prefix("results/")?;
            Some(rest.split('/').next()?.to_owned())
        })
        .expect("the section links to the run it quotes");
    let json: serde_json::Value =
        serde_json::from_str(&read(&format!("results/{run}/results.json"))).expect("JSON");
    let meta = &json["meta"];
    meets_the_reference_bar(&json, &run);
    let (cores, workers) = (meta["cores"].as_u64().unwrap(), meta["workers"].as_u64().unwrap());
    for said in [format!("{cores}-core"), format!("{workers} workers")] {
        assert!(section.contains(&said), "the section does not say {said:?} of results/{run}");
    }

    let mut rows = section.lines().filter(|line| line.starts_with('|'));
    let header: Vec<&str> = rows.next().expect("a table").split('|').map(str::trim).collect();
    let column = |name: &str| {
        header.iter().position(|cell| *cell == name).unwrap_or_else(|| panic!("no {name} column"))
    };
    let columns =
        ["scenario", "cell", "metric", "best ordered design", "worst ordered design"].map(column);
    let mut checked = 0;
    for line in rows.skip(1) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [scenario, param, metric, best, worst] = columns.map(|index| cells[index]);
        let scenario = scenario.trim_matches('`');
        let param = if param == "-" { "" } else { param };
        let (section, path, higher, units) = glance_metric(metric);
        // The ordered designs' values in that cell.
        let values: Vec<(String, f64)> = json[section]
            .as_array()
            .expect("an array")
            .iter()
            .filter(|cell| cell["scenario"] == scenario && cell["param"] == param)
            // A void cell is left out of every ranking, as the verdict leaves it out.
            .filter(|cell| cell["interference"]["validity"] != "void")
            .map(|cell| (cell["strategy"].as_str().unwrap().to_owned(), cell))
            .filter(|(strategy, _)| strategy != "inline" && strategy != "thread-pool")
            .map(|(strategy, cell)| {
                let value = number_at(cell, path).unwrap_or_else(|| panic!("{strategy}: {path}"));
                (strategy, value)
            })
            .collect();
        let what = format!("results/{run} {scenario} {param:?} {metric}");
        assert!(values.len() > 1, "{what}: no such cell with ordered designs");
        let top = values.iter().map(|(_, value)| *value).fold(f64::NAN, f64::max);
        let bottom = values.iter().map(|(_, value)| *value).fold(f64::NAN, f64::min);
        let (best_value, worst_value) = if higher { (top, bottom) } else { (bottom, top) };
        for (named, extreme, rank) in [(best, best_value, "best"), (worst, worst_value, "worst")] {
            let (strategy, figure) = named.split_once(' ').expect("`design` figure");
            let strategy = strategy.trim_matches('`');
            let value = values
                .iter()
                .find(|(name, _)| name == strategy)
                .unwrap_or_else(|| panic!("{what}: {strategy} did not run"))
                .1;
            assert_eq!(value, extreme, "{what}: {strategy} is not the {rank} ordered design");
            let receipt = json[section]
                .as_array()
                .and_then(|cells| {
                    cells.iter().find(|cell| {
                        cell["scenario"] == scenario
                            && cell["param"] == param
                            && cell["strategy"] == strategy
                    })
                })
                .map(|cell| &cell["interference"]["validity"]);
            assert_eq!(
                receipt.and_then(|validity| validity.as_str()),
                Some("clean"),
                "{what}: {strategy}'s cell is not clean; quote clean cells only"
            );
            let (shown, half_step) = parse_figure(figure, units);
            assert!(
                (value - shown).abs() <= half_step * (1.0 + 1e-9),
                "{what}: {strategy} measured {value}, the README says {figure}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 10, "only {checked} figures in the results at a glance");
}
