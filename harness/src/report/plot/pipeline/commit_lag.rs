//! The committed-offset lag over time on `pipeline-crash`: one panel per commit policy, one
//! line per strategy, broken where the consumer crashed.

use super::super::layout;
use super::super::panel::{strategy_entries, Entry, Layout, Mark};
use super::super::timeline::{Timeline, TimelinePanel, Track};
use super::super::{absent, render, strategy_colour, Planned};
use super::{charting, noted, policies_of, policy_colour, runs_of, strategies_of, NEUTRAL};
use crate::report::prose::prose;
use crate::report::view::View;
use crate::results::{CommitPolicy, PipelineRun};
use crate::workload::scenario::pipeline::PipelineChart;
use crate::workload::ScenarioId;

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    charting(PipelineChart::CommitLag).take(1).map(|scenario| plan_of(view, scenario)).collect()
}

/// The chart of `scenario`, the first whose spec lists it: the chart's file name is its own.
fn plan_of(view: &View<'_>, scenario: ScenarioId) -> Planned {
    let runs = runs_of(view, scenario);
    if runs.is_empty() {
        return absent("pipeline-commit-lag", scenario);
    }
    let policies = policies_of(&runs);
    let tracks = |policy| runs.iter().filter(move |run| run.policy == policy).map(|run| track(run));
    let ticks = policies.iter().flat_map(|&policy| tracks(policy).flat_map(|track| track.segments));
    let end_s = ticks.flatten().map(|(at, _)| at).fold(0.0, f64::max);
    let (panels, heights): (Vec<TimelinePanel>, Vec<u32>) = policies
        .iter()
        .map(|&policy| {
            let tracks: Vec<Track> = tracks(policy).collect();
            let top = tracks.iter().flat_map(|track| track.segments.iter().flatten());
            let top = top.map(|&(_, lag)| lag).fold(0.0, f64::max);
            let caption = match policy {
                CommitPolicy::HighestCompleted => format!("{policy}: lag 0 by construction"),
                policy => policy.to_string(),
            };
            // A flat line at 0 gets a lower panel.
            let (top, y_ticks, height) =
                if top > 0.0 { (top * 1.08, 10, 290) } else { (1.0, 2, 170) };
            let panel = TimelinePanel {
                caption,
                colour: policy_colour(policy),
                end_s: (end_s * 1.02).max(1e-3),
                top,
                y_desc: "lag (records)",
                y_ticks: Some(y_ticks),
                tracks,
            };
            (panel, height)
        })
        .collect();
    let mut legend = strategy_entries(&strategies_of(&runs), Mark::Line);
    legend.push(Entry::new("first tick after the crash", NEUTRAL, Mark::Diamond));
    let plot = Timeline {
        title: "Committed-offset lag at each commit tick".into(),
        canvas: layout::PIXEL_TIMELINES,
        legend,
        layout: Layout::Rows(heights),
        panels,
    };
    let note = noted(
        &prose!("charts", "pipeline_commit_lag", scenario = scenario.as_str()),
        view,
        scenario,
    );
    render(
        "pipeline-commit-lag",
        format!("Committed-offset lag over time ({scenario})"),
        note,
        &plot,
    )
}

/// The ticks of `run` as (seconds since the cell's start, lag), one segment per
/// incarnation, each in time order, timed from the first incarnation's start.
fn track(run: &PipelineRun) -> Track {
    let origin = run.incarnations.iter().map(|report| report.started_at_s).fold(f64::MAX, f64::min);
    let origin = if origin.is_finite() { origin } else { 0.0 };
    let segments = run
        .incarnations
        .iter()
        .map(|report| {
            let mut points: Vec<(f64, f64)> = report
                .lag_timeline
                .iter()
                .map(|point| ((point.at_s - origin).max(0.0), point.lag as f64))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            points
        })
        .collect();
    Track { colour: strategy_colour(&run.strategy), dot: 2, segments }
}
