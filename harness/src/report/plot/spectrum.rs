//! Latency percentile spectrum, one chart per scenario (one panel per parameter): x is the
//! percentile on the usual 1/(1-q) log scale, y the latency on a log scale, one line per
//! strategy. A sweep of more than [`MAX_PANELS`] panels shows its first point only.

use plotters::style::BLACK;

use super::layout;
use super::lines::{LinePanel, Lines, Series};
use super::panel::{grid, strategy_entries, Axis, Frame, Layout, Mark};
use super::sweep::{first_point, point_note};
use super::TICK_PX;
use super::{absent, log_range, ns, ns_label, render};
use super::{strategy_colour, Planned};
use crate::report::prose::prose;
use crate::report::view::{Rows, View};
use crate::results::Latency;
use crate::workload::ScenarioId;

/// Percentile positions: log10(1 / (1 - q)) for p50, p90, p99, p99.9, and the maximum
/// drawn one decade further out.
const POSITIONS: [(f64, &str); 5] =
    [(std::f64::consts::LOG10_2, "p50"), (1.0, "p90"), (2.0, "p99"), (3.0, "p99.9"), (4.0, "max")];

/// The most panels a chart shows every sweep point in; past it, the first point only.
const MAX_PANELS: usize = 12;

fn values(latency: &Latency) -> [u64; 5] {
    [latency.p50, latency.p90, latency.p99, latency.p999, latency.max]
}

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    let mut plans = Vec::new();
    // A pipeline scenario records no latency percentiles: no chart is offered for it.
    for &scenario in ScenarioId::ALL.iter().filter(|scenario| !scenario.is_pipeline()) {
        let name = format!("latency-{scenario}");
        let rows = view.rows(scenario);
        if rows.is_empty() {
            plans.push(absent(&name, scenario));
            continue;
        }
        let (rows, point) =
            if rows.params().len() > MAX_PANELS { first_point(rows) } else { (rows.clone(), None) };
        let note = point_note(&prose!("charts", "spectrum"), scenario, point);
        let title = format!("Latency percentiles: {scenario}");
        plans.push(render(name, title, note, &figure(scenario, &rows)));
    }
    plans
}

/// A panel per param, on one log scale; a line per strategy through its percentiles.
fn figure(scenario: ScenarioId, rows: &Rows<'_>) -> Lines {
    let params = rows.params();
    let strategies = rows.strategies();
    let range = log_range(rows.iter().flat_map(|row| values(&row.latency_ns).map(ns)));
    let positions: Vec<(f64, String)> =
        POSITIONS.iter().map(|(x, label)| (*x, (*label).to_owned())).collect();
    let panel = |param: &&str| {
        let caption = if param.is_empty() {
            scenario.description().to_owned()
        } else {
            format!("{scenario} {param}")
        };
        let lines = strategies.iter().filter_map(|strategy| {
            let row = rows.row(param, strategy)?;
            let points = POSITIONS.iter().zip(values(&row.latency_ns));
            let points = points.map(|((x, _), value)| (*x, ns(value))).collect();
            Some(Series::new(strategy_colour(strategy), points))
        });
        LinePanel {
            frame: Frame {
                caption_style: (TICK_PX, BLACK),
                ..Frame::new(10, (46, 78)).caption(caption)
            },
            x: Axis::ticked(0.1..4.25, positions.clone()).desc("percentile (1/(1-q) log scale)"),
            y: Axis::log(range.clone(), ns_label).desc("latency (log)"),
            series: lines.collect(),
            pen: Some((2, 3)),
            ..LinePanel::default()
        }
    };
    let columns = if params.len() <= 4 { 2 } else { 3 };
    let (grid_rows, columns) = grid(params.len(), columns);
    Lines {
        title: format!("Latency percentiles: {scenario}"),
        canvas: layout::PARAM_GRID,
        legend: strategy_entries(&strategies, Mark::Line),
        layout: Layout::Grid(grid_rows, columns),
        panels: params.iter().map(panel).collect(),
    }
}
