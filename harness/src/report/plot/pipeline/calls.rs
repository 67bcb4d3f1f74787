//! What a commit costs on the run's transport (every pipeline scenario): each cell's
//! commit call p50 and p99, on a log axis, titled with the transport.

use super::super::bars::{Bar, BarPanel, Bars, Fill, LabelStyle, Labels, Slots};
use super::super::layout;
use super::super::panel::{Axis, Entry, Frame, Mark};
use super::super::{log_range, ns_label, render, skipped, strategy_colour, Planned, TICK_PX};
use super::{strategies_of, NEUTRAL};
use crate::report::format::format_ns;
use crate::report::prose::prose;
use crate::report::view::View;
use crate::results::{CallSummary, PipelineRun};

const NAME: &str = "pipeline-commit-calls";

pub(super) fn plan(view: &View<'_>) -> Planned {
    let results = view.results();
    if results.pipelines.is_empty() {
        return skipped(NAME, "no pipeline runs in these results");
    }
    let cells: Vec<(&PipelineRun, CallSummary)> = results
        .pipelines
        .iter()
        .filter_map(|run| Some((run, run.transport_calls?.commit_call)))
        .filter(|(_, commit)| commit.calls > 0)
        .collect();
    if cells.is_empty() {
        return skipped(NAME, "no pipeline cell of these results timed its commit calls");
    }
    let transport = match &results.meta.transport {
        Some(meta) => format!("{} ({}, {} broker)", meta.kind, meta.client, meta.broker),
        None => "the embedded log".to_owned(),
    };
    let title = format!("Commit call p50 and p99 per pipeline cell, on {transport}");
    render(NAME, title.clone(), prose!("charts", "pipeline_calls"), &figure(&cells, title))
}

/// A row per cell: its p99 bar over its p50 bar, in nanoseconds.
fn figure(cells: &[(&PipelineRun, CallSummary)], title: String) -> Bars {
    let nanos = |us: f64| (us * 1e3).max(1.0);
    let values = cells.iter().flat_map(|(_, commit)| [commit.p50_us, commit.p99_us]);
    let range = log_range(values.map(nanos));
    let groups = cells.iter().map(|(run, commit)| {
        let colour = strategy_colour(&run.strategy);
        let p99 = Bar::new(0, nanos(commit.p99_us), colour).label(format_ns(commit.p99_us * 1e3));
        let p50 = Bar::new(1, nanos(commit.p50_us), colour).fill(Fill::Pale);
        [p99, p50].into_iter().collect()
    });
    let categories = cells.iter().map(|(run, _)| {
        let param = if run.param.is_empty() { String::new() } else { format!(" {}", run.param) };
        format!("{}{param} · {}", run.scenario, run.strategy)
    });
    let panel = BarPanel {
        frame: Frame::new(14, (50, 420)),
        categories: categories.collect(),
        // Room right of the longest bar for its label.
        values: Axis::log(range.start..range.end * 2.0, ns_label).desc("commit call (log)"),
        horizontal: true,
        slots: Slots::spread(2, 0.84, 0.9),
        labels: LabelStyle { place: Labels::Beside, lift: 1.08, px: TICK_PX - 2 },
        groups: groups.collect(),
        ..BarPanel::default()
    };
    let runs: Vec<&PipelineRun> = cells.iter().map(|(run, _)| *run).collect();
    let mut legend: Vec<Entry> = strategies_of(&runs)
        .into_iter()
        .map(|strategy| Entry::new(strategy, strategy_colour(strategy), Mark::Bar))
        .collect();
    legend.push(Entry::new("p99", NEUTRAL, Mark::Bar));
    legend.push(Entry::new("p50", NEUTRAL, Mark::PaleBar));
    Bars::single(title, layout::PAIR_ROWS, legend, panel)
}
