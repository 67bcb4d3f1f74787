//! What a consumer crash cost per strategy and commit policy (`pipeline-crash`): records
//! redelivered and records lost, on a log axis.

use plotters::style::RGBColor;

use super::super::bars::{Bar, BarPanel, Bars, LabelStyle, Slots};
use super::super::layout;
use super::super::panel::{Axis, Entry, Mark};
use super::super::{absent, log_range, names, render, Planned, TICK_PX};
use super::{charting, noted, policy_colour, runs_of, strategies_of};
use crate::report::prose::prose;
use crate::report::view::{PipelineRows, View};
use crate::results::CommitPolicy;
use crate::workload::scenario::pipeline::PipelineChart;
use crate::workload::ScenarioId;

const LOST: RGBColor = RGBColor(160, 30, 30);

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    charting(PipelineChart::Crash).map(|scenario| plan_of(view, scenario)).collect()
}

/// The chart of `scenario`, whose spec lists it.
fn plan_of(view: &View<'_>, scenario: ScenarioId) -> Planned {
    let runs = runs_of(view, scenario);
    if runs.is_empty() {
        return absent(scenario.as_str(), scenario);
    }
    let title = format!("Redelivered and lost after a consumer crash ({scenario})");
    let note =
        noted(&prose!("charts", "pipeline_crash", scenario = scenario.as_str()), view, scenario);
    render(scenario.as_str(), title, note, &figure(&runs))
}

/// Per strategy, a pair of bars per commit policy: redelivered and lost.
fn figure(runs: &PipelineRows<'_>) -> Bars {
    let strategies = strategies_of(runs);
    let counts = runs.iter().flat_map(|run| [run.redelivered, run.lost]).filter(|&count| count > 0);
    let range = log_range(counts.map(|count| count as f64).chain([1.0]));
    let group = |strategy: &&str| {
        let cells = CommitPolicy::ALL.into_iter().enumerate().filter_map(|(slot, policy)| {
            let run = runs.run(strategy, policy)?;
            let lost = (2 * slot + 1, run.lost, LOST);
            Some([(2 * slot, run.redelivered, policy_colour(policy)), lost])
        });
        let bar = |(slot, count, colour): (usize, u64, _)| {
            Bar::new(slot, count as f64, colour).label(count.to_string())
        };
        cells.flatten().map(bar).collect()
    };
    let panel = BarPanel {
        categories: names(&strategies),
        category_desc: Some("strategy"),
        values: Axis::log(range, |y| format!("{y:.0}")).desc("records"),
        // Per strategy, three policies of two bars each.
        slots: Slots::spread(6, 0.84, 0.92),
        labels: LabelStyle { lift: 1.15, px: TICK_PX - 4, ..LabelStyle::default() },
        groups: strategies.iter().map(group).collect(),
        ..BarPanel::default()
    };
    let redelivered = |policy: CommitPolicy| {
        Entry::new(format!("{policy}: redelivered"), policy_colour(policy), Mark::Bar)
    };
    let legend = CommitPolicy::ALL.map(redelivered).into_iter();
    Bars::single(
        "Records redelivered and lost after a crash".into(),
        layout::STRATEGY_GROUPS,
        legend.chain([Entry::new("lost (any policy)", LOST, Mark::Bar)]).collect(),
        panel,
    )
}
