//! The committed-offset lag over time on `pipeline-crash`: one panel per commit policy, one
//! line per strategy, broken where the consumer crashed.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::super::{
    diamond, frame, strategy_colour, text_style, DrawResult, Entry, Figure, Mark, Planned, TEXT_PX,
    TICK_PX,
};
use super::{
    noted, policies_of, policy_colour, runs_of, seconds_label, skip, strategies_of, NEUTRAL,
};
use crate::results::Results;
use crate::results::{CommitPolicy, PipelineRun};
use crate::workload::ScenarioId;

const NOTE: &str = "The committed-offset lag at every commit tick of pipeline-crash, one \
panel per commit policy and one line per strategy: x is seconds since the cell's first \
consumer started, y the records completed above the committed offsets, summed over the \
partitions. Each line breaks where the consumer crashed; a diamond marks the first tick of \
the consumer that resumed from the commits. Under highest-completed the committed offset is \
always just past the highest completed record, so its lag is 0 by construction.";

/// One incarnation's ticks: (seconds since the cell's start, lag), in time order.
type Segment = Vec<(f64, f64)>;

/// One cell's line: its strategy and one segment per incarnation.
struct Line<'a> {
    strategy: &'a str,
    segments: Vec<Segment>,
}

struct Panel<'a> {
    policy: CommitPolicy,
    lines: Vec<Line<'a>>,
}

struct CommitLag<'a> {
    panels: Vec<Panel<'a>>,
    strategies: Vec<&'a str>,
    /// The latest tick of any cell, in seconds since its start.
    end_s: f64,
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let runs = runs_of(results, ScenarioId::PipelineCrash);
    if runs.is_empty() {
        plans.push(skip("pipeline-commit-lag", ScenarioId::PipelineCrash));
        return;
    }
    let strategies = strategies_of(&runs);
    let panels: Vec<Panel<'_>> = policies_of(&runs)
        .into_iter()
        .map(|policy| Panel {
            policy,
            lines: runs.iter().filter(|run| run.policy == policy).map(|run| line(run)).collect(),
        })
        .collect();
    let end_s = panels
        .iter()
        .flat_map(|panel| &panel.lines)
        .flat_map(|line| &line.segments)
        .flatten()
        .map(|&(at, _)| at)
        .fold(0.0, f64::max);
    plans.push(super::super::render(
        "pipeline-commit-lag".into(),
        "Committed-offset lag over time (pipeline-crash)".into(),
        noted(NOTE, results, ScenarioId::PipelineCrash),
        &CommitLag { panels, strategies, end_s },
    ));
}

/// The ticks of `run`, one segment per incarnation, each in time order, timed from the
/// first incarnation's start.
fn line(run: &PipelineRun) -> Line<'_> {
    let origin = run.incarnations.iter().map(|report| report.started_at_s).fold(f64::MAX, f64::min);
    let origin = if origin.is_finite() { origin } else { 0.0 };
    let segments = run
        .incarnations
        .iter()
        .map(|report| {
            let mut points: Segment = report
                .lag_timeline
                .iter()
                .map(|point| ((point.at_s - origin).max(0.0), point.lag as f64))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            points
        })
        .collect();
    Line { strategy: &run.strategy, segments }
}

impl Panel<'_> {
    /// The largest lag of any tick.
    fn top(&self) -> f64 {
        self.lines
            .iter()
            .flat_map(|line| &line.segments)
            .flatten()
            .map(|&(_, lag)| lag)
            .fold(0.0, f64::max)
    }

    /// The panel's height in pixels: less for a flat line at 0.
    fn height(&self) -> u32 {
        if self.top() > 0.0 {
            290
        } else {
            170
        }
    }
}

impl Figure for CommitLag<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, 150 + self.panels.iter().map(Panel::height).sum::<u32>())
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let mut legend = super::super::strategy_entries(&self.strategies, Mark::Line);
        legend.push(Entry::new("first tick after the crash", NEUTRAL, Mark::Diamond));
        let body = frame(root, "Committed-offset lag at each commit tick", &legend)?;
        let (_, height) = body.dim_in_pixel();
        let total: u32 = self.panels.iter().map(Panel::height).sum::<u32>().max(1);
        let mut rest = body;
        let mut areas = Vec::new();
        for panel in &self.panels {
            let (area, below) = rest.split_vertically(panel.height() * height / total);
            areas.push(area);
            rest = below;
        }
        let x_end = (self.end_s * 1.02).max(1e-3);
        for (panel, area) in self.panels.iter().zip(&areas) {
            let top = panel.top();
            let (top, y_ticks) = if top > 0.0 { (top * 1.08, 10) } else { (1.0, 2) };
            let caption = match panel.policy {
                CommitPolicy::HighestCompleted => {
                    format!("{}: lag 0 by construction", panel.policy)
                }
                policy => policy.to_string(),
            };
            let mut chart = ChartBuilder::on(area)
                .margin(10)
                .caption(caption, text_style(TEXT_PX).color(&policy_colour(panel.policy)))
                .x_label_area_size(44)
                .y_label_area_size(76)
                .build_cartesian_2d(0.0..x_end, -top * 0.03..top)?;
            let x_label = |x: &f64| seconds_label(*x, x_end);
            let y_label = |y: &f64| if *y < 0.0 { String::new() } else { format!("{y:.0}") };
            chart
                .configure_mesh()
                .x_label_formatter(&x_label)
                .y_label_formatter(&y_label)
                .y_labels(y_ticks)
                .x_desc("seconds since the cell's start")
                .y_desc("lag (records)")
                .label_style(text_style(TICK_PX))
                .axis_desc_style(text_style(TEXT_PX))
                .draw()?;
            for line in &panel.lines {
                let colour = strategy_colour(line.strategy);
                for (index, segment) in line.segments.iter().enumerate() {
                    chart.draw_series(
                        LineSeries::new(segment.iter().copied(), colour.stroke_width(2))
                            .point_size(2),
                    )?;
                    if let (true, Some(&first)) = (index > 0, segment.first()) {
                        chart.draw_series(std::iter::once(diamond(
                            first,
                            6,
                            colour,
                            String::new(),
                        )))?;
                    }
                }
            }
        }
        Ok(())
    }
}
