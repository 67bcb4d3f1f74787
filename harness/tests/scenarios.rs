//! A scenario is declared in one place: its line in the `scenarios!` list and its spec and
//! generator in `harness/src/workload/scenario/`. This test lists every other place in the
//! harness's code (tests aside) that names a scenario's variant, and why it may: adding a
//! scenario touches only its declaration and its sizes; the charts it is shown in and what
//! the summary adds after its tables are fields of its spec (`charts`, `summary`), which the
//! charts and the summary read, so `report/` names none.

use std::path::Path;

/// The places outside `workload/scenario/` that may name a scenario, and why.
const ALLOWED: &[(&str, &str)] = &[
    ("pipeline/scenario/", "a pipeline scenario's log and cells are its generator"),
    ("suite/run.rs", "open-loop's saturation is measured on a uniform workload"),
];

fn sources(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            found.push(path);
        }
    }
}

/// The variants `ScenarioId::Variant` named in `text` before its tests.
fn named_variants(text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or(text);
    let mut named = Vec::new();
    for (at, _) in code.match_indices("ScenarioId::") {
        let rest = &code[at + "ScenarioId::".len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        if name.starts_with(|c: char| c.is_ascii_uppercase()) && name != "ALL" {
            named.push(name);
        }
    }
    named
}

#[test]
fn a_scenario_is_declared_in_one_place() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let mut strays = Vec::new();
    let mut seen = 0;
    let files_read = files.len();
    for file in files {
        let relative = file.strip_prefix(&root).unwrap().to_string_lossy().replace('\\', "/");
        let named = named_variants(&std::fs::read_to_string(&file).unwrap());
        seen += usize::from(!named.is_empty());
        let allowed = relative.starts_with("workload/scenario/")
            || ALLOWED.iter().any(|(place, _)| relative.starts_with(place));
        if !named.is_empty() && !allowed {
            strays.push(format!("{relative}: {}", named.join(", ")));
        }
    }
    assert!(
        files_read > 50 && seen > 0,
        "the scan found almost nothing: is it reading the sources?"
    );
    assert!(strays.is_empty(), "scenarios named outside their declaration: {strays:#?}");
}

#[test]
fn the_scan_finds_a_named_variant_and_skips_tests() {
    let text = "let a = ScenarioId::OpenLoop; ScenarioId::ALL;\n#[cfg(test)]\nScenarioId::Zipf";
    assert_eq!(named_variants(text), ["OpenLoop"]);
}
