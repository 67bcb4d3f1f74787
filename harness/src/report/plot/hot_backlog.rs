//! `hot-backlog`: bystander p99 latency against the hot key's burst size, one line per
//! strategy, with the burst at which one key can fill the shared admission window marked.
//! Of a sweep, the first point only.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::sweep::{base_param, first_point, first_point_note, param_part};
use super::{
    category, centres, find, frame, log_range, ns, ns_label, params, rows, strategies,
    strategy_colour, strategy_entries, text_style, ticked, DrawResult, Entry, Figure, Mark,
    Planned, TEXT_PX, TICK_PX,
};
use crate::results::{Results, RunResult};
use crate::workload::ScenarioId;

const NOTE: &str = "One line per strategy: the p99 latency of the bystander keys (log y) as \
the hot key's burst of 1 ms pending messages grows. Burst sizes are evenly spaced, not to \
scale, so the step from 240 to 241 is visible. The dashed red line marks the cliff: the \
smallest burst that, with one refill batch still outstanding, fills the whole shared \
admission window, so admission stalls for every key until the hot key drains. Left of it the \
bystanders should stay near their normal latency; right of it every strategy that shares \
the window stalls. Strategies that hash keys into serial groups (group-by, per-type-pool) \
stall bystanders in the hot key's group at any burst size.";

/// The smallest burst that stalls admission for every key: the window refills in batches
/// of `max(1, window / 16)`, so a key holding more than `window - batch` never lets a batch
/// through (README: "One key holding 241 of 256 stalls admission for every key").
pub(super) fn cliff_burst(window: usize) -> usize {
    (window + 1).saturating_sub((window / 16).max(1))
}

struct HotBacklog<'a> {
    rows: Vec<&'a RunResult>,
    /// (burst size, parameter), in increasing burst order.
    bursts: Vec<(usize, &'a str)>,
    window: usize,
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let (rows, point) = first_point(rows(results, ScenarioId::HotBacklog));
    let mut bursts: Vec<(usize, &str)> = params(&rows)
        .into_iter()
        .filter_map(|param| {
            let row = rows.iter().find(|row| row.param == param)?;
            Some((param_part(base_param(row), "burst")? as usize, param))
        })
        .collect();
    bursts.sort_unstable();
    if bursts.is_empty() || rows.iter().all(|row| row.bystander_latency_ns.is_none()) {
        plans.push(Planned::Skip(
            "hot-backlog-cliff: skipped, no hot-backlog runs in these results".into(),
        ));
        return;
    }
    // The cliff is the window's: the point's where the cells record it.
    let window = rows
        .iter()
        .find_map(|row| row.settings.as_ref().map(|settings| settings.window))
        .unwrap_or(results.meta.window);
    let shown: Vec<(String, &str)> =
        point.map(|point| ("hot-backlog".to_owned(), point)).into_iter().collect();
    let figure = HotBacklog { rows, bursts, window };
    plans.push(super::render(
        "hot-backlog-cliff".into(),
        "hot-backlog: bystander p99 vs burst size".into(),
        first_point_note(NOTE, &shown),
        &figure,
    ));
}

impl Figure for HotBacklog<'_> {
    fn size(&self) -> (u32, u32) {
        (1100, 660)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let strategies = strategies(&self.rows);
        let cliff = cliff_burst(self.window);
        let mut legend = strategy_entries(&strategies, Mark::Line);
        legend.push(Entry::new(
            format!("cliff: burst >= {cliff} fills window {} minus one refill", self.window),
            RED,
            Mark::Dashed,
        ));
        let title = "hot-backlog: bystander p99 latency vs the hot key's burst size";
        let body = frame(root, title, &legend)?;
        let range = log_range(
            self.rows.iter().filter_map(|row| row.bystander_latency_ns.map(|tail| ns(tail.p99))),
        );
        let count = self.bursts.len();
        let mut chart = ChartBuilder::on(&body)
            .margin(14)
            .x_label_area_size(56)
            .y_label_area_size(80)
            .build_cartesian_2d(
                ticked(0.0..count as f64, centres(count)),
                range.clone().log_scale(),
            )?;
        let x_label =
            |x: &f64| self.bursts.get(category(*x)).map_or(String::new(), |b| b.0.to_string());
        chart
            .configure_mesh()
            .x_label_formatter(&x_label)
            .y_label_formatter(&ns_label)
            .x_desc("burst size: 1 ms pending messages queued on the hot key (not to scale)")
            .y_desc("bystander p99 latency (log)")
            .label_style(text_style(TICK_PX))
            .axis_desc_style(text_style(TEXT_PX))
            .draw()?;
        // The cliff sits between the last burst below it and the first at or above it.
        let below = self.bursts.iter().filter(|(burst, _)| *burst < cliff).count();
        if below > 0 && below < count {
            let x = below as f64;
            chart.draw_series(DashedLineSeries::new(
                [(x, range.start), (x, range.end)],
                8,
                6,
                RED.stroke_width(2),
            ))?;
        }
        for strategy in &strategies {
            let colour = strategy_colour(strategy);
            let points: Vec<(f64, f64)> = self
                .bursts
                .iter()
                .enumerate()
                .filter_map(|(index, (_, param))| {
                    let tail = find(&self.rows, param, strategy)?.bystander_latency_ns?;
                    Some((index as f64 + 0.5, ns(tail.p99)))
                })
                .collect();
            chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(3)))?;
            chart.draw_series(
                points.into_iter().map(|point| Circle::new(point, 5, colour.filled())),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::cliff_burst;

    #[test]
    fn the_default_window_stalls_from_241() {
        assert_eq!(cliff_burst(256), 241);
        assert_eq!(cliff_burst(8), 8);
        assert_eq!(cliff_burst(100), 95);
    }
}
