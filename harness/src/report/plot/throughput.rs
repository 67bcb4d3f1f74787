//! Throughput per scenario: one panel per scenario, one group of bars per parameter,
//! strategies side by side, whiskers from the slowest to the fastest repetition. Of a sweep,
//! each panel shows the first point (the `sweep-*` charts show them all).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::sweep::{base_param, first_point, first_point_note};
use super::{
    category, centres, find, frame, grid, params, rows, strategies, strategy_colour,
    strategy_entries, text_style, ticked, DrawResult, Figure, Mark, Planned, AXIS_LIMIT, TEXT_PX,
    TICK_PX,
};
use crate::report::format::format_rate;
use crate::results::{Results, RunResult};
use crate::workload::ScenarioId;

const NOTE: &str = "One panel per scenario, each with its own linear scale. Bar height is the \
median completed messages per second over the repetitions; the whisker spans the slowest to \
the fastest repetition. In paced scenarios (conflict-backoff, long-sync, hot-backlog, \
open-loop) every strategy that keeps up reaches the offered rate, so equal bars are expected \
and a shorter bar means a strategy fell behind; thread-pool, the unordered control, is not \
held back by per-key order and may finish early.";

struct Throughput<'a> {
    /// (scenario, its cells, the sweep point they are where others were left out).
    panels: Vec<(ScenarioId, Vec<&'a RunResult>, Option<&'a str>)>,
    strategies: Vec<&'a str>,
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let panels: Vec<(ScenarioId, Vec<&RunResult>, Option<&str>)> = ScenarioId::ALL
        .iter()
        .map(|&scenario| {
            let (rows, point) = first_point(rows(results, scenario));
            (scenario, rows, point)
        })
        .filter(|(_, rows, _)| !rows.is_empty())
        .collect();
    if panels.is_empty() {
        plans.push(Planned::Skip("throughput: the results hold no runs".into()));
        return;
    }
    let shown: Vec<(String, &str)> = panels
        .iter()
        .filter_map(|(scenario, _, point)| Some((scenario.to_string(), (*point)?)))
        .collect();
    let all: Vec<&RunResult> =
        panels.iter().flat_map(|(_, rows, _)| rows.iter().copied()).collect();
    let figure = Throughput { strategies: strategies(&all), panels };
    plans.push(super::render(
        "throughput".into(),
        "Throughput per scenario".into(),
        first_point_note(NOTE, &shown),
        &figure,
    ));
}

impl Figure for Throughput<'_> {
    fn size(&self) -> (u32, u32) {
        let (grid_rows, columns) = grid(self.panels.len(), 4);
        (columns as u32 * 440 + 40, grid_rows as u32 * 380 + 110)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let title = "Throughput per scenario (median msg/s; whiskers: min-max over repetitions)";
        let body = frame(root, title, &strategy_entries(&self.strategies, Mark::Bar))?;
        let body = body.margin(0, 10, 10, 10);
        for (panel, (scenario, rows, point)) in
            body.split_evenly(grid(self.panels.len(), 4)).iter().zip(&self.panels)
        {
            draw_panel(panel, *scenario, rows, *point)?;
        }
        Ok(())
    }
}

fn draw_panel<DB: DrawingBackend>(
    panel: &DrawingArea<DB, Shift>,
    scenario: ScenarioId,
    rows: &[&RunResult],
    point: Option<&str>,
) -> DrawResult<DB> {
    let params = params(rows);
    let strategies = strategies(rows);
    let highest = rows.iter().map(|row| row.throughput_per_s.max).fold(0.0, f64::max);
    let top = (highest * 1.12).min(AXIS_LIMIT);
    // Of a sweep's first point, the groups are named by the scenario's own param.
    let labels: Vec<String> = params
        .iter()
        .map(|param| {
            let param = match (point, rows.iter().find(|row| row.param == *param)) {
                (Some(_), Some(row)) => base_param(row),
                _ => param,
            };
            if param.is_empty() {
                scenario.as_str().to_owned()
            } else {
                param.to_owned()
            }
        })
        .collect();
    let caption = match point {
        Some(point) => format!("{scenario} ({point})"),
        None => scenario.to_string(),
    };
    let mut chart = ChartBuilder::on(panel)
        .caption(caption, text_style(TEXT_PX))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(62)
        .build_cartesian_2d(
            ticked(0.0..params.len() as f64, centres(params.len())),
            0.0..top.max(1.0),
        )?;
    let x_label = |x: &f64| labels.get(category(*x)).cloned().unwrap_or_default();
    let y_label = |y: &f64| format_rate(*y);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .y_desc("msg/s")
        .label_style(text_style(TICK_PX))
        .axis_desc_style(text_style(TICK_PX))
        .draw()?;

    let slot = 0.84 / strategies.len().max(1) as f64;
    for (group, param) in params.iter().enumerate() {
        for (index, strategy) in strategies.iter().enumerate() {
            let Some(row) = find(rows, param, strategy) else { continue };
            let left = group as f64 + 0.08 + index as f64 * slot;
            let (right, centre) = (left + slot * 0.85, left + slot * 0.425);
            let spread = row.throughput_per_s;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(left, 0.0), (right, spread.median)],
                strategy_colour(strategy).filled(),
            )))?;
            let cap = slot * 0.25;
            let whisker = [
                vec![(centre, spread.min), (centre, spread.max)],
                vec![(centre - cap, spread.min), (centre + cap, spread.min)],
                vec![(centre - cap, spread.max), (centre + cap, spread.max)],
            ];
            chart.draw_series(
                whisker.into_iter().map(|points| PathElement::new(points, BLACK.stroke_width(1))),
            )?;
        }
    }
    Ok(())
}
