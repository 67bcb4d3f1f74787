//! Head-of-line blocking: bystander p99 latency and HOL p99 per strategy, one panel per
//! troubled-key cell (`conflict-backoff`, `long-sync`, each `hot-backlog` burst). Of a
//! sweep, each scenario's first point only.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::sweep::{first_point, first_point_note};
use super::{
    category, centres, frame, grid, log_range, ns, ns_label, pale, params, rows, strategies,
    strategy_colour, text_style, ticked, DrawResult, Entry, Figure, Mark, Planned, TEXT_PX,
};
use crate::results::{Results, RunResult};
use crate::workload::ScenarioId;

/// The scenarios with troubled keys, in panel order.
const SCENARIOS: [ScenarioId; 3] =
    [ScenarioId::ConflictBackoff, ScenarioId::LongSync, ScenarioId::HotBacklog];

const NOTE: &str = "One panel per scenario with troubled keys (each hot-backlog burst size has \
its own). For each strategy, the solid bar is the p99 latency of the bystanders, the keys \
that are not troubled; the pale bar is the p99 head-of-line delay of all messages (start \
minus ready: time a message could have run but did not). The y axis is logarithmic. A design \
that isolates troubled keys keeps the solid bar low: bystanders should not wait behind a \
conflict backoff, a long handler or a hot key's backlog.";

struct HeadOfLine<'a> {
    /// (caption, rows of that cell).
    panels: Vec<(String, Vec<&'a RunResult>)>,
    strategies: Vec<&'a str>,
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let mut panels = Vec::new();
    let mut all = Vec::new();
    let mut shown: Vec<(String, &str)> = Vec::new();
    for scenario in SCENARIOS {
        let (rows, point) = first_point(rows(results, scenario));
        if let Some(point) = point {
            shown.push((scenario.to_string(), point));
        }
        for param in params(&rows) {
            let cell: Vec<&RunResult> = rows
                .iter()
                .copied()
                .filter(|row| row.param == param && row.bystander_latency_ns.is_some())
                .collect();
            if cell.is_empty() {
                continue;
            }
            all.extend(cell.iter().copied());
            let caption =
                if param.is_empty() { scenario.to_string() } else { format!("{scenario} {param}") };
            panels.push((caption, cell));
        }
    }
    if panels.is_empty() {
        plans.push(Planned::Skip(
            "head-of-line: skipped, no conflict-backoff, long-sync or hot-backlog runs with \
             bystander latency in these results"
                .into(),
        ));
        return;
    }
    let figure = HeadOfLine { panels, strategies: strategies(&all) };
    plans.push(super::render(
        "head-of-line".into(),
        "Head-of-line blocking: bystander p99 and HOL p99".into(),
        first_point_note(NOTE, &shown),
        &figure,
    ));
}

impl HeadOfLine<'_> {
    fn grid(&self) -> (usize, usize) {
        grid(self.panels.len(), 2)
    }
}

impl Figure for HeadOfLine<'_> {
    fn size(&self) -> (u32, u32) {
        let (grid_rows, columns) = self.grid();
        (columns as u32 * 740 + 20, grid_rows as u32 * 400 + 130)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let grey = RGBColor(90, 90, 90);
        let mut legend: Vec<Entry> = vec![
            Entry::new("bystander p99 latency", grey, Mark::Bar),
            Entry::new("HOL p99 (start - ready)", grey, Mark::PaleBar),
        ];
        legend
            .extend(self.strategies.iter().map(|s| Entry::new(*s, strategy_colour(s), Mark::Bar)));
        let title = "Head-of-line blocking: bystander p99 latency and HOL p99 per strategy";
        let body = frame(root, title, &legend)?;
        let body = body.margin(0, 10, 10, 10);
        let range = log_range(self.panels.iter().flat_map(|(_, rows)| {
            rows.iter().flat_map(|row| {
                [ns(row.hol_ns.p99), row.bystander_latency_ns.map_or(1.0, |tail| ns(tail.p99))]
            })
        }));
        let floor = range.start;
        for (panel, (caption, rows)) in body.split_evenly(self.grid()).iter().zip(&self.panels) {
            let strategies = strategies(rows);
            let mut chart = ChartBuilder::on(panel)
                .caption(caption, text_style(TEXT_PX))
                .margin(8)
                .x_label_area_size(30)
                .y_label_area_size(74)
                .build_cartesian_2d(
                    ticked(0.0..strategies.len() as f64, centres(strategies.len())),
                    range.clone().log_scale(),
                )?;
            let x_label =
                |x: &f64| strategies.get(category(*x)).map_or(String::new(), |s| s.to_string());
            chart
                .configure_mesh()
                .disable_x_mesh()
                .x_label_formatter(&x_label)
                .y_label_formatter(&ns_label)
                .y_desc("p99 (log)")
                .label_style(text_style(12))
                .axis_desc_style(text_style(14))
                .draw()?;
            for (index, strategy) in strategies.iter().enumerate() {
                let Some(row) = rows.iter().find(|row| row.strategy == *strategy) else {
                    continue;
                };
                let colour = strategy_colour(strategy);
                let left = index as f64 + 0.12;
                let bystander = row.bystander_latency_ns.map_or(floor, |tail| ns(tail.p99));
                let bars = [
                    (left, bystander, colour.filled()),
                    (left + 0.39, ns(row.hol_ns.p99), pale(colour).filled()),
                ];
                for (x, value, style) in bars {
                    let corners = [(x, floor), (x + 0.37, value)];
                    chart.draw_series(std::iter::once(Rectangle::new(corners, style)))?;
                    chart.draw_series(std::iter::once(Rectangle::new(
                        corners,
                        colour.stroke_width(1),
                    )))?;
                }
            }
        }
        Ok(())
    }
}
