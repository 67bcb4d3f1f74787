//! What a consumer crash cost per strategy and commit policy (`pipeline-crash`): records
//! redelivered and records lost, on a log axis.

use plotters::style::RGBColor;

use super::super::bars::{Bar, BarPanel, Bars, LabelStyle, Slots};
use super::super::panel::{Axis, Entry, Layout, Mark};
use super::super::{log_range, Planned, TICK_PX};
use super::{noted, policy_colour, runs_of, skip, strategies_of};
use crate::pipeline::{CommitPolicy, PipelineRun};
use crate::results::Results;
use crate::workload::ScenarioId;

const NOTE: &str = "One group of bars per strategy on pipeline-crash: the consumer died \
mid-run without a final commit and a new one resumed from the committed offsets. For each \
commit policy, the solid bar is the records delivered twice (redelivered) and the dark red \
bar beside it the records never applied (lost); the axis is logarithmic and a zero has no \
bar, only its label. contiguous redelivers everything above each partition's first \
incomplete record; contiguous+metadata only what its metadata did not cover; \
highest-completed commits past slow records and loses them.";

const LOST: RGBColor = RGBColor(160, 30, 30);

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let runs = runs_of(results, ScenarioId::PipelineCrash);
    if runs.is_empty() {
        plans.push(skip("pipeline-crash", ScenarioId::PipelineCrash));
        return;
    }
    plans.push(super::super::render(
        "pipeline-crash",
        "Redelivered and lost after a consumer crash (pipeline-crash)",
        noted(NOTE, results, ScenarioId::PipelineCrash),
        &figure(&runs),
    ));
}

/// Per strategy, a pair of bars per commit policy: redelivered and lost.
fn figure(runs: &[&PipelineRun]) -> Bars {
    let strategies = strategies_of(runs);
    let counts = runs.iter().flat_map(|run| [run.redelivered, run.lost]).filter(|&count| count > 0);
    let range = log_range(counts.map(|count| count as f64).chain([1.0]));
    let groups = strategies.iter().map(|strategy| {
        let cells = CommitPolicy::ALL.into_iter().enumerate().filter_map(|(slot, policy)| {
            let run = runs.iter().find(|run| run.strategy == *strategy && run.policy == policy)?;
            Some([
                (2 * slot, run.redelivered, policy_colour(policy)),
                (2 * slot + 1, run.lost, LOST),
            ])
        });
        let bars = cells.flatten();
        bars.map(|(slot, count, colour)| {
            Bar::new(slot, count as f64, colour).label(count.to_string())
        })
        .collect()
    });
    let panel = BarPanel {
        categories: strategies.iter().map(|s| s.to_string()).collect(),
        category_desc: Some("strategy"),
        values: Axis::log(range, |y| format!("{y:.0}")).desc("records"),
        // Per strategy, three policies of two bars each.
        slots: Slots::spread(6, 0.84, 0.92),
        labels: LabelStyle { lift: 1.15, px: TICK_PX - 4, ..LabelStyle::default() },
        groups: groups.collect(),
        ..BarPanel::default()
    };
    let mut legend: Vec<Entry> = CommitPolicy::ALL
        .iter()
        .map(|&policy| {
            Entry::new(format!("{policy}: redelivered"), policy_colour(policy), Mark::Bar)
        })
        .collect();
    legend.push(Entry::new("lost (any policy)", LOST, Mark::Bar));
    Bars {
        title: "Records redelivered and lost after a crash".into(),
        size: (1200, 640),
        legend,
        layout: Layout::Single,
        panels: vec![panel],
    }
}
