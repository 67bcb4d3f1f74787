//! Whether an earlier session's cells are the cells its recorded settings plan, and ran with
//! them: a resumed run merges them with cells it measures now from those settings, so a
//! cell that disagrees (a hand-edited file, or one pieced together from two runs) would
//! sit in one file beside cells of another experiment.
//!
//! Each cell of the file is matched to the plan of the settings `meta` records
//! ([`match_earlier`](super::ledger::match_earlier)); one the plan has no place for is
//! named with the selection or param that leaves it out, and a matched one with each field
//! it records otherwise than its planned cell would: a measured cell's messages, workers,
//! window and settings; a pipeline cell's records, keys, partitions, commit policy, crash
//! point, retry and group settings.

use super::ledger::Matched;
use super::Plan;
use crate::config::RunConfig;
use crate::limits::settings::{agree_settings, differ, run_settings};
use crate::pipeline::scenario::Recorded;
use crate::results::{CellKey, CellSettings, PipelineRun, RunResult};
use crate::workload::{Arrivals, Sizes};

/// One way a cell of the file disagrees with its recorded settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Disagreement {
    /// The cell, as the file names it.
    pub cell: String,
    /// What it records otherwise (`messages`, `scenario`), and how.
    pub why: String,
}

impl std::fmt::Display for Disagreement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cell `{}`: {}", self.cell, self.why)
    }
}

/// Every way the cells matched in `matched` (and its strays) disagree with `plan`, the
/// plan of `config`, the settings their file records.
pub(crate) fn disagreements(
    plan: &Plan,
    matched: &Matched,
    config: &RunConfig,
) -> Vec<Disagreement> {
    let mut found: Vec<Disagreement> =
        matched.strays.iter().map(|key| stray(key, config)).collect();
    for (index, run) in &matched.runs {
        let key = CellKey::recorded(&run.scenario, &run.param, &run.strategy);
        let whys = measured_fields(plan, *index, run);
        found.extend(whys.into_iter().map(|why| Disagreement { cell: key.to_string(), why }));
    }
    for (index, run) in &matched.pipelines {
        let key = CellKey::recorded(&run.scenario, &run.param, &run.strategy);
        let whys = pipeline_fields(plan, *index, run);
        found.extend(whys.into_iter().map(|why| Disagreement { cell: key.to_string(), why }));
    }
    found
}

/// Why the plan has no place for the cell `key`.
fn stray(key: &CellKey, config: &RunConfig) -> Disagreement {
    let list = |items: Vec<String>| items.join(",");
    let scenario = key.scenario.as_str();
    let why = if !config.scenarios.iter().any(|id| id.as_str() == scenario) {
        let recorded = list(config.scenarios.iter().map(ToString::to_string).collect());
        format!("scenario `{scenario}` is not in the recorded selection (--scenario {recorded})")
    } else if !config.strategies.iter().any(|id| id.as_str() == key.strategy) {
        let recorded = list(config.strategies.iter().map(ToString::to_string).collect());
        format!(
            "strategy `{}` is not in the recorded selection (--strategy {recorded})",
            key.strategy
        )
    } else {
        format!(
            "param `{}` is not one the recorded settings plan for {scenario} (or the cell is \
             listed twice)",
            key.full_param()
        )
    };
    Disagreement { cell: key.to_string(), why }
}

// `settings_fields`: `differ` of each swept setting a cell records, from the run settings
// table.
run_settings!(swept => agree_settings);

/// What the measured cell `run`, matched to planned cell `index`, records otherwise.
fn measured_fields(plan: &Plan, index: usize, run: &RunResult) -> Vec<String> {
    let cell = &plan.cells[index];
    let mut whys = Vec::new();
    // A completion-driven cell records the messages it handled, not a count it was given.
    let spec = cell.workload.map(|workload| &plan.workloads[workload]);
    if let Some(spec) = spec.filter(|spec| spec.arrivals != Arrivals::Driven) {
        let sizes = &plan.points[cell.point].config.sizes;
        differ(&mut whys, "messages", run.messages, spec.messages(sizes));
    }
    if let Some(workers) = run.workers {
        differ(&mut whys, "workers", workers, cell.settings.workers);
    }
    if let Some(window) = run.window {
        differ(&mut whys, "window", window, cell.settings.window);
    }
    settings_fields(&mut whys, run.settings.as_ref(), &cell.settings);
    whys
}

/// What the pipeline cell `run`, matched to planned cell `index`, records otherwise.
fn pipeline_fields(plan: &Plan, index: usize, run: &PipelineRun) -> Vec<String> {
    let cell = &plan.cells[index];
    let sizes: &Sizes = &plan.points[cell.point].config.sizes;
    let planned = Recorded::of(cell.scenario, &cell.key.param, sizes);
    let mut whys = Vec::new();
    differ(&mut whys, "records", run.records, sizes.pipeline_records as u64);
    differ(&mut whys, "keys", run.keys, sizes.pipeline_keys as u64);
    differ(&mut whys, "partitions", run.partitions, planned.partitions);
    differ(&mut whys, "policy", run.policy, planned.policy);
    differ(&mut whys, "crash_after", Shown(run.crash_after), Shown(planned.crash_after));
    if let Some(retry) = &run.retry {
        differ(&mut whys, "retry.rate_per_s", retry.rate_per_s, sizes.pipeline_rate);
        differ(&mut whys, "retry.max_attempts", retry.max_attempts, sizes.max_attempts);
        differ(&mut whys, "retry.backoff_ms", retry.backoff_ms, sizes.retry_backoff_ms);
    }
    if let Some(rebalance) = &run.rebalance {
        differ(&mut whys, "rebalance.consumers", rebalance.consumers as usize, sizes.consumers);
    }
    settings_fields(&mut whys, run.settings.as_ref(), &cell.settings);
    whys
}

/// An optional count as a results file writes it (`null` for none).
#[derive(PartialEq)]
struct Shown(Option<u64>);

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(value) => write!(f, "{value}"),
            None => f.write_str("null"),
        }
    }
}
