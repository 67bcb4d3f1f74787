//! Latency vs offered load (`open-loop`): median and p99 latency against the offered
//! fraction of saturation, one line per strategy. Of a sweep (or several `--keys`), the
//! first point and key count only.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::sweep::{base_param, first_point, first_point_note, param_part};
use super::{
    find, frame, log_range, ns, ns_label, params, rows, strategies, strategy_colour,
    strategy_entries, text_style, ticked, DrawResult, Figure, Mark, Planned, TEXT_PX, TICK_PX,
};
use crate::report::format::format_rate;
use crate::results::{Results, RunResult};
use crate::workload::ScenarioId;

const NOTE: &str = "Messages arrive at a constant rate, a fraction of the saturation \
throughput (inline on uniform, scaled by workers); latency counts from each message's \
intended arrival, so a stall shows in every message behind it. Left: the median; right: the \
99th percentile; y is logarithmic. A good design stays flat until close to saturation; the \
load at which a line turns up is the usable capacity. inline is the zero-overhead reference.";

/// Which latency of a run a panel plots.
type Pick = fn(&RunResult) -> u64;

/// The two panels: title and the latency it plots.
const PANELS: [(&str, Pick); 2] =
    [("median latency", |row| row.latency_ns.p50), ("p99 latency", |row| row.latency_ns.p99)];

struct OpenLoop<'a> {
    rows: Vec<&'a RunResult>,
    /// (load fraction, parameter, offered msg/s).
    loads: Vec<(f64, &'a str, Option<f64>)>,
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let (rows, point) = first_point(rows(results, ScenarioId::OpenLoop));
    // With several `--keys`, each count has its own loads: the first count's are drawn.
    let keys = |row: &RunResult| {
        base_param(row).split(' ').find(|part| part.starts_with("keys=")).map(str::to_owned)
    };
    let first_keys = rows.first().and_then(|row| keys(row));
    let several_keys = rows.iter().any(|row| keys(row) != first_keys);
    let rows: Vec<&RunResult> = rows.into_iter().filter(|row| keys(row) == first_keys).collect();
    let loads: Vec<(f64, &str, Option<f64>)> = params(&rows)
        .into_iter()
        .filter_map(|param| {
            let row = rows.iter().find(|row| row.param == param)?;
            Some((param_part(base_param(row), "load")?, param, row.offered_per_s))
        })
        .collect();
    let mut shown: Vec<(String, &str)> = Vec::new();
    if let Some(point) = point {
        shown.push(("open-loop".into(), point));
    }
    let keys_note = match first_keys.as_deref().filter(|_| several_keys) {
        Some(keys) => format!(
            " These results hold several key counts; this chart shows the first, {keys} (the \
             sweep-keys-open-loop chart sets them side by side)."
        ),
        None => String::new(),
    };
    if loads.is_empty() {
        plans.push(Planned::Skip(
            "open-loop-latency: skipped, no open-loop runs in these results".into(),
        ));
        return;
    }
    let figure = OpenLoop { rows, loads };
    plans.push(super::render(
        "open-loop-latency".into(),
        "Latency vs offered load (open-loop)".into(),
        first_point_note(&format!("{NOTE}{keys_note}"), &shown),
        &figure,
    ));
}

impl Figure for OpenLoop<'_> {
    fn size(&self) -> (u32, u32) {
        (1300, 620)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let strategies = strategies(&self.rows);
        let title = "Latency vs offered load (open-loop, constant-rate arrivals)";
        let body = frame(root, title, &strategy_entries(&strategies, Mark::Line))?;
        let body = body.margin(0, 10, 10, 10);
        let low = self.loads.iter().map(|(load, ..)| *load).fold(f64::INFINITY, f64::min);
        let high = self.loads.iter().map(|(load, ..)| *load).fold(0.0, f64::max);
        let pad = ((high - low) * 0.06).max(0.02);
        let range =
            log_range(self.rows.iter().flat_map(|row| PANELS.map(|(_, latency)| ns(latency(row)))));
        for (panel, (caption, latency)) in body.split_evenly((1, 2)).iter().zip(PANELS) {
            let mut chart = ChartBuilder::on(panel)
                .caption(caption, text_style(TEXT_PX))
                .margin(10)
                .x_label_area_size(60)
                .y_label_area_size(78)
                .build_cartesian_2d(
                    ticked(
                        (low - pad)..(high + pad),
                        self.loads.iter().map(|(load, ..)| *load).collect(),
                    ),
                    range.clone().log_scale(),
                )?;
            let x_label = |x: &f64| {
                self.loads.iter().find(|(load, ..)| (load - x).abs() < 1e-9).map_or(
                    format!("{x:.2}"),
                    |(load, _, offered)| match offered {
                        Some(rate) => format!("{load} ({}/s)", format_rate(*rate)),
                        None => format!("{load}"),
                    },
                )
            };
            chart
                .configure_mesh()
                .x_label_formatter(&x_label)
                .y_label_formatter(&ns_label)
                .x_desc("offered load, fraction of saturation (msg/s)")
                .y_desc("latency (log)")
                .label_style(text_style(TICK_PX))
                .axis_desc_style(text_style(TEXT_PX))
                .draw()?;
            for strategy in &strategies {
                let colour = strategy_colour(strategy);
                let points: Vec<(f64, f64)> = self
                    .loads
                    .iter()
                    .filter_map(|(load, param, _)| {
                        find(&self.rows, param, strategy).map(|row| (*load, ns(latency(row))))
                    })
                    .collect();
                chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))?;
                chart.draw_series(
                    points.into_iter().map(|point| Circle::new(point, 4, colour.filled())),
                )?;
            }
        }
        Ok(())
    }
}
