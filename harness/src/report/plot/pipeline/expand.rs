//! A partition expansion as it happened (`pipeline-expand`): records first applied per
//! slice of the cell's time, in the old partitions and in the new ones, one panel per
//! mitigation, for one strategy.

use std::fmt::Write as _;

use plotters::coord::Shift;
use plotters::prelude::*;

use super::super::{frame, text_style, DrawResult, Entry, Figure, Mark, Planned, TEXT_PX, TICK_PX};
use super::{noted, runs_of, seconds_label, skip, strategies_of};
use crate::results::Results;
use crate::results::{ExpansionReport, Mitigation, PipelineRun, TimelineBin};
use crate::workload::ScenarioId;

const NOTE: &str = "pipeline-expand for one strategy (keyed-mailbox when it ran), one panel \
per mitigation: each point is the records first applied in one equal slice of the cell's \
time, plotted at the slice's start, the partitions the log had before the expansion and \
the partitions it added apart. Under none every partition runs from the start, so a moved \
key's newer records (in a new partition) can apply before its older ones still queued in \
an old partition; under drain-then-expand the new partitions' line stays at 0 until the \
old partitions are committed up to where they stood at the expansion. Each caption gives \
the records that reached the version-aware projection before a predecessor (reordered) and \
how long the new partitions were held.";

const OLD: RGBColor = RGBColor(70, 120, 180);
const NEW: RGBColor = RGBColor(220, 110, 40);

struct Panel<'a> {
    expansion: &'a ExpansionReport,
}

impl Panel<'_> {
    fn caption(&self) -> String {
        let expansion = self.expansion;
        format!(
            "{}: {} records reordered, new partitions held {:.1} ms",
            expansion.mitigation,
            expansion.records_reordered,
            expansion.held_s * 1e3
        )
    }
}

struct Expand<'a> {
    strategy: &'a str,
    panels: Vec<Panel<'a>>,
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let runs: Vec<&PipelineRun> = runs_of(results, ScenarioId::PipelineExpand)
        .into_iter()
        .filter(|run| run.expansion.is_some())
        .collect();
    let strategies = strategies_of(&runs);
    let Some(&strategy) = strategies.iter().find(|&&s| s == "keyed-mailbox").or(strategies.first())
    else {
        plans.push(skip("pipeline-expand", ScenarioId::PipelineExpand));
        return;
    };
    let panels: Vec<Panel<'_>> = Mitigation::ALL
        .iter()
        .filter_map(|&mitigation| {
            runs.iter()
                .filter(|run| run.strategy == strategy)
                .filter_map(|run| run.expansion.as_ref())
                .find(|expansion| expansion.mitigation == mitigation)
        })
        .map(|expansion| Panel { expansion })
        .collect();
    let mut note = String::from(NOTE);
    let _ = write!(note, " Here, for {strategy}:");
    for (index, panel) in panels.iter().enumerate() {
        let expansion = panel.expansion;
        let _ = write!(
            note,
            "{} {}, {} records reordered and the new partitions held {:.1} ms",
            if index == 0 { "" } else { ";" },
            expansion.mitigation,
            expansion.records_reordered,
            expansion.held_s * 1e3
        );
    }
    note.push('.');
    plans.push(super::super::render(
        "pipeline-expand".into(),
        format!("Applications in old and new partitions over an expansion (pipeline-expand, {strategy})"),
        noted(&note, results, ScenarioId::PipelineExpand),
        &Expand { strategy, panels },
    ));
}

impl Figure for Expand<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, 150 + 330 * self.panels.len() as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let (from, to) = self.panels.first().map_or((0, 0), |panel| {
            (panel.expansion.from_partitions, panel.expansion.to_partitions)
        });
        let legend = [
            Entry::new(format!("old partitions (0-{})", from.saturating_sub(1)), OLD, Mark::Line),
            Entry::new(
                format!("new partitions ({from}-{})", to.saturating_sub(1)),
                NEW,
                Mark::Line,
            ),
        ];
        let title = format!("Records first applied per time slice, {}", self.strategy);
        let body = frame(root, &title, &legend)?;
        let bins = || self.panels.iter().flat_map(|panel| &panel.expansion.timeline);
        // Shared axes, so that the panels compare.
        let end_s = bins().map(|bin| bin.at_s).fold(0.0, f64::max);
        let width = self
            .panels
            .iter()
            .filter_map(|panel| {
                let timeline = &panel.expansion.timeline;
                Some(timeline.get(1)?.at_s - timeline.first()?.at_s)
            })
            .fold(0.0, f64::max);
        let x_end = ((end_s + width) * 1.02).max(1e-3);
        let top = bins().map(|bin| bin.old_partitions.max(bin.new_partitions)).max().unwrap_or(0);
        let y_end = (top as f64 * 1.1).max(10.0);
        let areas = body.split_evenly((self.panels.len(), 1));
        for (panel, area) in self.panels.iter().zip(&areas) {
            let mut chart = ChartBuilder::on(area)
                .margin(10)
                .caption(panel.caption(), text_style(TEXT_PX))
                .x_label_area_size(44)
                .y_label_area_size(76)
                .build_cartesian_2d(0.0..x_end, -y_end * 0.03..y_end)?;
            let x_label = |x: &f64| seconds_label(*x, x_end);
            let y_label = |y: &f64| if *y < 0.0 { String::new() } else { format!("{y:.0}") };
            chart
                .configure_mesh()
                .x_label_formatter(&x_label)
                .y_label_formatter(&y_label)
                .x_desc("seconds since the cell's start")
                .y_desc("records per slice")
                .label_style(text_style(TICK_PX))
                .axis_desc_style(text_style(TEXT_PX))
                .draw()?;
            let timeline = &panel.expansion.timeline;
            let old = |bin: &TimelineBin| bin.old_partitions;
            let new = |bin: &TimelineBin| bin.new_partitions;
            for (colour, count) in [(OLD, &old as &dyn Fn(&TimelineBin) -> u64), (NEW, &new)] {
                let points = timeline.iter().map(|bin| (bin.at_s, count(bin) as f64));
                chart.draw_series(LineSeries::new(points, colour.stroke_width(2)).point_size(3))?;
            }
        }
        Ok(())
    }
}
