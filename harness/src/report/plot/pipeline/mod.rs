//! Charts of the pipeline scenarios, one module per chart:
//!
//! - `pipeline-crash` ([`crash`]): records redelivered and lost after a consumer crash.
//! - `pipeline-commit-lag` ([`commit_lag`]): the committed-offset lag over time on
//!   pipeline-crash.
//! - `pipeline-retry` ([`retry`]): bystander latency and out-of-order records per retry
//!   policy.
//! - `pipeline-expand` ([`expand`]): first applications in the old and the new partitions
//!   over a partition expansion.
//! - `pipeline-rebalance` ([`rebalance`]): duplicates against their bounds, and each
//!   rebalance's pause.
//! - `pipeline-commit-calls` ([`calls`]): each cell's commit call p50 and p99 on the run's
//!   transport.

mod calls;
mod commit_lag;
mod crash;
mod expand;
mod rebalance;
mod retry;

use plotters::style::RGBColor;

use super::Planned;
use crate::report::prose::prose;
use crate::report::view::{PipelineRows, View};
use crate::results::{CommitPolicy, PipelineRun};
use crate::workload::scenario::pipeline::PipelineChart;
use crate::workload::ScenarioId;

/// Plans every pipeline chart, in presentation order.
pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    let charts = [crash::plan, commit_lag::plan, retry::plan, expand::plan, rebalance::plan];
    let mut plans: Vec<Planned> = charts.iter().flat_map(|plan| plan(view)).collect();
    plans.push(calls::plan(view));
    plans
}

/// The pipeline scenarios whose specs list `chart`, in presentation order: the ones it
/// draws.
fn charting(chart: PipelineChart) -> impl Iterator<Item = ScenarioId> {
    let lists =
        move |id: &ScenarioId| id.pipeline().is_some_and(|spec| spec.charts.contains(&chart));
    ScenarioId::ALL.iter().copied().filter(lists)
}

/// The colour of each commit policy's bars and panels.
fn policy_colour(policy: CommitPolicy) -> RGBColor {
    match policy {
        CommitPolicy::Contiguous => RGBColor(70, 120, 180),
        CommitPolicy::ContiguousMetadata => RGBColor(90, 170, 110),
        CommitPolicy::HighestCompleted => RGBColor(230, 160, 50),
    }
}

/// The neutral colour of legend entries that name a kind of bar, not a series.
const NEUTRAL: RGBColor = RGBColor(110, 110, 110);

/// The cells of `scenario`, in file order: of a sweep, its first point's
/// ([`super::sweep::first_point_of`]).
fn runs_of<'r>(view: &View<'r>, scenario: ScenarioId) -> PipelineRows<'r> {
    PipelineRows::new(sweep_point(view, scenario).0)
}

/// The cells of `scenario` at the first point of a sweep, and its label where the results
/// hold other points too.
fn sweep_point<'r>(
    view: &View<'r>,
    scenario: ScenarioId,
) -> (Vec<&'r PipelineRun>, Option<&'r str>) {
    let runs = view.pipelines(scenario).to_vec();
    super::sweep::first_point_of(runs, |run| run.settings.as_ref())
}

/// `note`, saying which point of a sweep the chart of `scenario` shows, where it matters.
fn noted(note: &str, view: &View<'_>, scenario: ScenarioId) -> String {
    let shown: Vec<(String, &str)> = sweep_point(view, scenario)
        .1
        .map(|point| (scenario.to_string(), point))
        .into_iter()
        .collect();
    super::sweep::noted(note, &shown, &prose!("charts", "pipeline_elsewhere"))
}

/// The distinct strategies of `runs`, in order of first appearance.
fn strategies_of<'a>(runs: &[&'a PipelineRun]) -> Vec<&'a str> {
    crate::report::first_seen(runs.iter().map(|run| run.strategy.as_str()))
}

/// The distinct commit policies of `runs`, in [`CommitPolicy::ALL`] order.
fn policies_of(runs: &[&PipelineRun]) -> Vec<CommitPolicy> {
    CommitPolicy::ALL
        .into_iter()
        .filter(|&policy| runs.iter().any(|r| r.policy == policy))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_chart_draws_the_scenarios_whose_specs_list_it() {
        let charts = [
            PipelineChart::Crash,
            PipelineChart::CommitLag,
            PipelineChart::Retry,
            PipelineChart::Expand,
            PipelineChart::Rebalance,
        ];
        for chart in charts {
            let drawn: Vec<ScenarioId> = charting(chart).collect();
            assert_eq!(drawn.len(), 1, "{chart:?} draws one scenario");
            assert!(drawn[0].pipeline().is_some_and(|spec| spec.charts.contains(&chart)));
        }
        let crash: Vec<&str> = charting(PipelineChart::Crash).map(ScenarioId::as_str).collect();
        assert_eq!(crash, ["pipeline-crash"]);
    }
}
