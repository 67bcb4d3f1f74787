//! `isolation[]`: does one troubled key hurt the others, design by design.
//!
//! An isolation stressor (a scenario whose spec states an [`Isolation`] bound: hot-key,
//! conflict-backoff, hot-backlog, saga) runs each stressed workload beside its unstressed
//! twin ([`UNSTRESSED`]): the same bystanders at the same times without the stress. For every
//! design and stressed cell whose twin ran in the same run (same scenario, design and sweep
//! point), the figure is the bystanders' p99 latency under the stress over their p99 in the
//! twin: 1 means the stress did not reach them, 10 that their tail grew tenfold. The cell
//! meets the scenario's bound where the figure is at most the bound, misses it where it is
//! above. A figure whose twin's p99 is zero is absent, and so is its verdict. Derived from
//! `runs[]` whenever the file is written; a file from before it reads as empty.

use serde::{Deserialize, Serialize};

use super::cell::SWEEP_SETTINGS;
use super::{Results, RunResult, Validity};
use crate::workload::{Isolation, ScenarioId, UNSTRESSED};

/// One design's isolation figure in one stressed cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IsolationCell {
    /// The stressor scenario.
    pub scenario: String,
    /// The stressed cell's param (its sweep point at its end, where there is one).
    pub param: String,
    /// The design.
    pub strategy: String,
    /// The bystanders' p99 latency under the stress, in nanoseconds.
    pub stressed_p99_ns: u64,
    /// The bystanders' p99 latency in the unstressed twin, in nanoseconds.
    pub unstressed_p99_ns: u64,
    /// `stressed_p99_ns / unstressed_p99_ns`; absent where the twin's p99 is zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ratio: Option<f64>,
    /// The scenario's bound on the ratio.
    pub bound: f64,
    /// Whether the ratio is at most the bound; absent with the ratio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub met: Option<bool>,
    /// The bystanders' median latency under the stress, in nanoseconds (absent in files
    /// from before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stressed_p50_ns: Option<u64>,
    /// The bystanders' median latency in the unstressed twin, in nanoseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unstressed_p50_ns: Option<u64>,
    /// `stressed_p50_ns / unstressed_p50_ns`: the same figure on the median, which a short
    /// cell's scheduler stalls move far less than its p99; absent where the twin's median is
    /// zero or not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub median_ratio: Option<f64>,
    /// The worse receipt of the two cells (`void` where either was void: not to be judged);
    /// absent where a cell has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<Validity>,
}

/// Whether a token of a param is a sweep point's (`workers=4`), which the suite appends.
fn is_sweep_token(token: &str) -> bool {
    SWEEP_SETTINGS
        .iter()
        .any(|setting| token.strip_prefix(setting).is_some_and(|value| value.starts_with('=')))
}

/// A param's workload part and its sweep point: `burst=241 workers=4` is
/// (`burst=241`, `workers=4`).
fn split(param: &str) -> (String, String) {
    let (sweep, workload): (Vec<&str>, Vec<&str>) =
        param.split_whitespace().partition(|token| is_sweep_token(token));
    (workload.join(" "), sweep.join(" "))
}

/// The scenario's bound, if `scenario` names an isolation stressor.
fn stressor(scenario: &str) -> Option<Isolation> {
    scenario.parse::<ScenarioId>().ok()?.isolation()
}

/// The worse of two receipts; absent where either cell has none.
fn worse(a: Option<Validity>, b: Option<Validity>) -> Option<Validity> {
    Some(a?.max(b?))
}

/// The bystanders' p99 of a cell; none where it has no bystander figure.
fn bystander_p99(run: &RunResult) -> Option<u64> {
    run.bystander_latency_ns.as_ref().map(|tail| tail.p99)
}

/// The bystanders' median of a cell; none where it has no bystander figure.
fn bystander_p50(run: &RunResult) -> Option<u64> {
    run.bystander_latency_ns.as_ref().map(|tail| tail.p50)
}

/// `stressed / unstressed`; none where the twin's figure is zero.
fn ratio(stressed: u64, unstressed: u64) -> Option<f64> {
    (unstressed > 0).then(|| stressed as f64 / unstressed as f64)
}

/// The isolation figure of `run`, if it is a stressed cell whose twin is among `runs`.
pub fn of_cell(run: &RunResult, runs: &[RunResult]) -> Option<IsolationCell> {
    let isolation = stressor(&run.scenario)?;
    let (workload, sweep) = split(&run.param);
    if workload == UNSTRESSED {
        return None;
    }
    let twin = runs.iter().find(|other| {
        other.scenario == run.scenario
            && other.strategy == run.strategy
            && split(&other.param) == (UNSTRESSED.to_owned(), sweep.clone())
    })?;
    let (stressed, unstressed) = (bystander_p99(run)?, bystander_p99(twin)?);
    let (stressed_p50, unstressed_p50) = (bystander_p50(run), bystander_p50(twin));
    let p99_ratio = ratio(stressed, unstressed);
    Some(IsolationCell {
        scenario: run.scenario.clone(),
        param: run.param.clone(),
        strategy: run.strategy.clone(),
        stressed_p99_ns: stressed,
        unstressed_p99_ns: unstressed,
        ratio: p99_ratio,
        bound: isolation.bound,
        met: p99_ratio.map(|ratio| ratio <= isolation.bound),
        stressed_p50_ns: stressed_p50,
        unstressed_p50_ns: unstressed_p50,
        median_ratio: stressed_p50.zip(unstressed_p50).and_then(|(s, u)| ratio(s, u)),
        validity: worse(run.validity(), twin.validity()),
    })
}

/// Every design's isolation figure in every stressed cell whose twin ran, in the order of
/// `runs[]`.
pub fn of(runs: &[RunResult]) -> Vec<IsolationCell> {
    runs.iter().filter_map(|run| of_cell(run, runs)).collect()
}

impl Results {
    /// Sets `isolation[]` from the cells the file holds now.
    pub fn isolate(&mut self) {
        self.isolation = of(&self.runs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed reference run: real cells, renamed into a stressor and its twin.
    fn reference() -> Results {
        serde_json::from_str(include_str!("../../../results/2026-12-02-vm/results.json")).unwrap()
    }

    /// The reference's conflict-backoff cells, and a copy of each as its twin whose
    /// bystanders' p99 is `p99_of_twin(stressed p99)`.
    fn with_twins(p99_of_twin: impl Fn(u64) -> u64) -> Vec<RunResult> {
        let results = reference();
        let stressed: Vec<RunResult> = results
            .runs
            .iter()
            .filter(|run| run.scenario == "conflict-backoff" && run.param.is_empty())
            .cloned()
            .collect();
        assert!(!stressed.is_empty(), "the reference has conflict-backoff cells");
        let twins = stressed.iter().cloned().map(|mut twin| {
            twin.param = UNSTRESSED.to_owned();
            let tail = twin.bystander_latency_ns.as_mut().unwrap();
            tail.p99 = p99_of_twin(tail.p99);
            twin
        });
        stressed.iter().cloned().chain(twins).collect()
    }

    #[test]
    fn a_figure_is_the_stressed_p99_over_the_twins_and_judged_by_the_bound() {
        let runs = with_twins(|p99| p99 / 4);
        let cells = of(&runs);
        for (cell, run) in cells.iter().zip(&runs) {
            let tail = run.bystander_latency_ns.as_ref().unwrap();
            assert_eq!(cell.stressed_p50_ns, Some(tail.p50));
            assert_eq!(cell.median_ratio, Some(1.0), "the twins' medians are the cells' own");
        }
        assert_eq!(cells.len(), runs.len() / 2, "one figure per stressed cell, none per twin");
        for cell in &cells {
            assert_eq!(cell.param, "");
            assert_eq!(cell.bound, 2.0);
            let ratio = cell.ratio.unwrap();
            assert!((4.0..4.1).contains(&ratio), "{ratio}");
            assert_eq!(cell.met, Some(false));
        }
        let calm = of(&with_twins(|p99| p99));
        assert!(calm.iter().all(|cell| cell.ratio == Some(1.0) && cell.met == Some(true)));
    }

    #[test]
    fn a_zero_twin_gives_no_ratio_and_no_verdict() {
        let cells = of(&with_twins(|_| 0));
        assert!(cells.iter().all(|cell| cell.ratio.is_none() && cell.met.is_none()));
    }

    #[test]
    fn sweep_points_are_paired_with_their_own_twins() {
        let mut runs = with_twins(|p99| p99);
        for run in &mut runs {
            run.param = format!("{} workers=4", run.param).trim().to_owned();
        }
        assert_eq!(split("stress=off workers=4"), (UNSTRESSED.to_owned(), "workers=4".into()));
        assert_eq!(split("workers=4"), (String::new(), "workers=4".into()));
        let cells = of(&runs);
        assert!(!cells.is_empty());
        assert!(cells.iter().all(|cell| cell.param == "workers=4"));
        // A stressed cell whose twin ran at another sweep point has no figure.
        runs.retain(|run| run.param == "workers=4");
        assert!(of(&runs).is_empty());
    }

    #[test]
    fn scenarios_that_are_not_stressors_have_no_figure() {
        let results = reference();
        let mut runs: Vec<RunResult> =
            results.runs.iter().filter(|run| run.scenario == "long-sync").cloned().collect();
        let twins: Vec<RunResult> = runs
            .iter()
            .cloned()
            .map(|mut run| {
                run.param = UNSTRESSED.to_owned();
                run
            })
            .collect();
        runs.extend(twins);
        assert!(of(&runs).is_empty());
    }
}
