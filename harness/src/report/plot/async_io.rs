//! `async-io`: elapsed time against the number of keys (log x), one line per strategy, the
//! ideal bound as a line, and the published figures of the key-ordered Kafka consumer's KEY
//! mode (docs/design.md section 5) as labelled points.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    diamond, find, frame, log_range, param_value, params, rows, strategies, strategy_colour,
    strategy_entries, text_style, DrawResult, Entry, Figure, Mark, Planned, TEXT_PX, TICK_PX,
};
use crate::report::format::format_ns;
use crate::results::{Results, RunResult};
use crate::workload::reference::{
    PARALLEL_CONSUMER_KEY_MODE_S as PUBLISHED_KEY_MODE_S,
    PARALLEL_CONSUMER_MESSAGES as PUBLISHED_MESSAGES,
};
use crate::workload::ScenarioId;

const NOTE: &str = "Elapsed wall time of the whole async-io run (log y) against the number of \
keys (log x): each handler waits a random 0-5 ms, at most a window's worth in flight. With \
few keys the per-key chains bound the time; with many, the window does. The dashed black \
line is the ideal bound (the larger of the longest per-key chain and total waiting / \
window); a strategy on it wastes nothing. The open diamonds are the published KEY-mode \
figures of the key-ordered Kafka consumer, labelled with their published seconds; where this \
run used fewer messages than the published 10,000, they are scaled to this run's message \
count, so positions compare like with like.";

struct AsyncIo<'a> {
    rows: Vec<&'a RunResult>,
    /// (keys, parameter), in increasing key order.
    keys: Vec<(usize, &'a str)>,
    /// Messages per run, to scale the published figures.
    messages: usize,
}

impl AsyncIo<'_> {
    /// The published figures' scale to this run's message count.
    fn scale(&self) -> f64 {
        self.messages as f64 / PUBLISHED_MESSAGES as f64
    }
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let rows = rows(results, ScenarioId::AsyncIo);
    let mut keys: Vec<(usize, &str)> = params(&rows)
        .into_iter()
        .filter_map(|param| Some((param_value(param)? as usize, param)))
        .filter(|(keys, _)| *keys > 0)
        .collect();
    keys.sort_unstable();
    if keys.is_empty() {
        plans.push(Planned::Skip(
            "async-io-elapsed: skipped, no async-io runs in these results".into(),
        ));
        return;
    }
    let messages = rows.first().map_or(PUBLISHED_MESSAGES, |row| row.messages);
    let figure = AsyncIo { rows, keys, messages };
    plans.push(super::render(
        "async-io-elapsed".into(),
        "async-io: elapsed time vs number of keys".into(),
        NOTE.into(),
        &figure,
    ));
}

/// `1`, `20`, `1k`, `10k`.
fn keys_label(keys: f64) -> String {
    if keys >= 1_000.0 {
        format!("{}k", keys / 1_000.0)
    } else {
        format!("{keys}")
    }
}

impl Figure for AsyncIo<'_> {
    fn size(&self) -> (u32, u32) {
        (1150, 700)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let strategies = strategies(&self.rows);
        let scale = self.scale();
        let published_label = if self.messages == PUBLISHED_MESSAGES {
            "published KEY mode (key-ordered Kafka consumer)".to_owned()
        } else {
            format!(
                "published KEY mode, {PUBLISHED_MESSAGES} msgs, scaled x{scale} to {} msgs",
                self.messages
            )
        };
        let mut legend = strategy_entries(&strategies, Mark::Line);
        legend.push(Entry::new("ideal bound", BLACK, Mark::Dashed));
        legend.push(Entry::new(published_label, BLACK, Mark::Diamond));
        let title =
            format!("async-io: elapsed time vs number of keys ({} messages)", self.messages);
        let body = frame(root, &title, &legend)?;

        let mut ticks: Vec<f64> = self.keys.iter().map(|(keys, _)| *keys as f64).collect();
        ticks.extend(PUBLISHED_KEY_MODE_S.iter().map(|(keys, _)| *keys as f64));
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        let (low, high) = (ticks[0], ticks[ticks.len() - 1]);
        let seconds = self
            .rows
            .iter()
            .flat_map(|row| [row.elapsed_s, row.ideal_s])
            .chain(PUBLISHED_KEY_MODE_S.iter().map(|(_, s)| s * scale));
        let range = log_range(seconds);
        let mut chart = ChartBuilder::on(&body)
            .margin(14)
            .x_label_area_size(56)
            .y_label_area_size(80)
            .build_cartesian_2d(
                ((low / 1.6)..(high * 1.6)).log_scale().with_key_points(ticks),
                range.log_scale(),
            )?;
        let x_label = |x: &f64| keys_label(*x);
        let y_label = |y: &f64| format_ns(y * 1e9);
        chart
            .configure_mesh()
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .x_desc("keys (log)")
            .y_desc("elapsed (log)")
            .label_style(text_style(TICK_PX))
            .axis_desc_style(text_style(TEXT_PX))
            .draw()?;

        let ideal: Vec<(f64, f64)> = self
            .keys
            .iter()
            .filter_map(|(keys, param)| {
                let row = self.rows.iter().find(|row| row.param == *param)?;
                Some((*keys as f64, row.ideal_s))
            })
            .collect();
        chart.draw_series(DashedLineSeries::new(ideal, 10, 6, BLACK.stroke_width(2)))?;

        for strategy in &strategies {
            let colour = strategy_colour(strategy);
            let points: Vec<(f64, f64)> = self
                .keys
                .iter()
                .filter_map(|(keys, param)| {
                    find(&self.rows, param, strategy).map(|row| (*keys as f64, row.elapsed_s))
                })
                .collect();
            chart.draw_series(LineSeries::new(points.clone(), colour.stroke_width(2)))?;
            chart.draw_series(
                points.into_iter().map(|point| Circle::new(point, 4, colour.filled())),
            )?;
        }

        for &(keys, published) in PUBLISHED_KEY_MODE_S {
            let point = (keys as f64, published * scale);
            let label = format!("{published} s");
            chart.draw_series(std::iter::once(diamond(point, 7, BLACK, label)))?;
        }
        Ok(())
    }
}
