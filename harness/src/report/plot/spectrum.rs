//! Latency percentile spectrum, one chart per scenario (one panel per parameter): x is the
//! percentile on the usual 1/(1-q) log scale, y the latency on a log scale, one line per
//! strategy. A sweep of more than [`MAX_PANELS`] panels shows its first point only.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::sweep::{first_point, first_point_note};
use super::{
    find, frame, grid, log_range, ns, ns_label, params, rows, strategies, strategy_colour,
    strategy_entries, text_style, ticked, DrawResult, Figure, Mark, Planned, TEXT_PX, TICK_PX,
};
use crate::results::{Latency, Results, RunResult};
use crate::workload::ScenarioId;

/// Percentile positions: log10(1 / (1 - q)) for p50, p90, p99, p99.9, and the maximum
/// drawn one decade further out.
const POSITIONS: [(f64, &str); 5] =
    [(std::f64::consts::LOG10_2, "p50"), (1.0, "p90"), (2.0, "p99"), (3.0, "p99.9"), (4.0, "max")];

const NOTE: &str = "Each line is one strategy. Left to right: the median, the 90th, 99th and \
99.9th percentiles, then the maximum; the x axis is the usual 1/(1-q) log scale, so each step \
right is ten times rarer. Both axes are logarithmic. Lower is better; a line that bends up \
sharply at the right has a tail problem (head-of-line blocking, a stall), a line high \
everywhere is slow for every message. Latency is completion minus intended arrival.";

/// The most panels a chart shows every sweep point in; past it, the first point only.
const MAX_PANELS: usize = 12;

fn values(latency: &Latency) -> [u64; 5] {
    [latency.p50, latency.p90, latency.p99, latency.p999, latency.max]
}

struct Spectrum<'a> {
    scenario: ScenarioId,
    rows: Vec<&'a RunResult>,
    params: Vec<&'a str>,
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    for &scenario in ScenarioId::ALL {
        let rows = rows(results, scenario);
        if rows.is_empty() {
            plans.push(Planned::Skip(format!(
                "latency-{scenario}: skipped, no {scenario} runs in these results"
            )));
            continue;
        }
        let (rows, shown) = if params(&rows).len() > MAX_PANELS {
            let (rows, point) = first_point(rows);
            let shown: Vec<(String, &str)> =
                point.map(|point| (scenario.to_string(), point)).into_iter().collect();
            (rows, shown)
        } else {
            (rows, Vec::new())
        };
        let params = params(&rows);
        let figure = Spectrum { scenario, rows, params };
        plans.push(super::render(
            format!("latency-{scenario}"),
            format!("Latency percentiles: {scenario}"),
            first_point_note(NOTE, &shown),
            &figure,
        ));
    }
}

impl Figure for Spectrum<'_> {
    fn size(&self) -> (u32, u32) {
        let (grid_rows, columns) = grid(self.params.len(), self.columns());
        let width = if columns == 1 { 1000 } else { columns as u32 * 620 };
        (width, grid_rows as u32 * 480 + 130)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let strategies = strategies(&self.rows);
        let title = format!("Latency percentiles: {}", self.scenario);
        let body = frame(root, &title, &strategy_entries(&strategies, Mark::Line))?;
        let body = body.margin(0, 10, 10, 10);
        let (_, columns) = grid(self.params.len(), self.columns());
        let panels = body.split_evenly(grid(self.params.len(), columns));
        let range = log_range(self.rows.iter().flat_map(|row| values(&row.latency_ns).map(ns)));
        for (panel, param) in panels.iter().zip(&self.params) {
            let caption = if param.is_empty() {
                self.scenario.description().to_owned()
            } else {
                format!("{} {param}", self.scenario)
            };
            let mut chart = ChartBuilder::on(panel)
                .caption(caption, text_style(TICK_PX))
                .margin(10)
                .x_label_area_size(46)
                .y_label_area_size(78)
                .build_cartesian_2d(
                    ticked(0.1..4.25, POSITIONS.iter().map(|(x, _)| *x).collect()),
                    range.clone().log_scale(),
                )?;
            let x_label = |x: &f64| {
                POSITIONS
                    .iter()
                    .find(|(position, _)| (position - x).abs() < 1e-6)
                    .map_or(String::new(), |(_, label)| (*label).into())
            };
            chart
                .configure_mesh()
                .x_label_formatter(&x_label)
                .y_label_formatter(&ns_label)
                .x_desc("percentile (1/(1-q) log scale)")
                .y_desc("latency (log)")
                .label_style(text_style(TICK_PX))
                .axis_desc_style(text_style(TEXT_PX))
                .draw()?;
            for strategy in &strategies {
                let Some(row) = find(&self.rows, param, strategy) else { continue };
                let colour = strategy_colour(strategy);
                let points: Vec<(f64, f64)> = POSITIONS
                    .iter()
                    .zip(values(&row.latency_ns))
                    .map(|((x, _), value)| (*x, ns(value)))
                    .collect();
                chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))?;
                chart.draw_series(
                    points.into_iter().map(|point| Circle::new(point, 3, colour.filled())),
                )?;
            }
        }
        Ok(())
    }
}

impl Spectrum<'_> {
    fn columns(&self) -> usize {
        if self.params.len() <= 4 {
            2
        } else {
            3
        }
    }
}
