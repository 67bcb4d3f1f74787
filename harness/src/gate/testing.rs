//! What the gate's unit tests share: the committed reference run to doctor, rules read
//! from text, and two rules to vary.

use strategies::Design;

use super::{read_rules, GateInputError, Rule};
use crate::results::{CellKey, Results, RunResult};

/// The committed reference run: real results to doctor.
pub(super) fn reference() -> Results {
    serde_json::from_str(include_str!("../../../results/2026-11-30-vm/results.json")).unwrap()
}

pub(super) fn rules(text: &str, results: &Results) -> Result<Vec<Rule>, GateInputError> {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let unique = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("gate-rules-{}-{unique}.toml", std::process::id());
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, text).unwrap();
    let rules = read_rules(&path, results);
    std::fs::remove_file(&path).ok();
    rules
}

pub(super) fn run_mut<'r>(
    results: &'r mut Results,
    scenario: &str,
    strategy: &str,
) -> &'r mut RunResult {
    results.runs.iter_mut().find(|r| r.scenario == scenario && r.strategy == strategy).unwrap()
}

pub(super) fn no_rerun() -> impl FnMut(&CellKey, &[Design]) -> Option<Vec<RunResult>> {
    |_: &CellKey, _: &[Design]| None
}

/// keyed-mailbox's uniform throughput at least 1% of group-by's: a rule that holds on the
/// reference run, about one cell pair.
pub(super) const UNIFORM_KEEPS_UP: &str = r#"
        [[rule]]
        name = "uniform keeps up"
        kind = "relative"
        metric = "throughput_per_s.median"
        scenario = "uniform"
        strategies = ["keyed-mailbox"]
        of = "group-by"
        op = ">="
        factor = 0.01
    "#;

pub(super) const CORRECT: &str = r#"
        [[rule]]
        name = "ordered strategies are correct"
        kind = "absolute"
        metric = "correctness"
        strategies = "ordered"
        op = "=="
        value = 0
    "#;

pub(super) const RELATIVE: &str = r#"
        [[rule]]
        name = "keyed-mailbox keeps up"
        kind = "relative"
        metric = "throughput_per_s.median"
        scenario = "uniform"
        strategies = ["keyed-mailbox"]
        of = "group-by"
        op = ">="
        factor = 0.8
    "#;
