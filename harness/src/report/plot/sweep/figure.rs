//! Drawing a sweep chart: a grid of panels, one row per other point of the sweep and one
//! column per metric, the swept setting on a log x axis ticked at the measured values.
//!
//! Both axes are drawn as linear [`Ticked`](super::super::Ticked) axes over transformed
//! values (log10 of the setting, log10 of a latency), with ticks placed here: one axis type
//! for every panel, and references and shading that are plain straight segments there.

use std::fmt::Write as _;

use plotters::coord::Shift;
use plotters::prelude::*;
use strategies::WindowScope;

use super::super::{
    frame, log_range, strategies, strategy_colour, text_style, ticked, DrawResult, Entry, Figure,
    Mark, AXIS_LIMIT, TEXT_PX, TICK_PX,
};
use super::{Axis, Machine, Point, Sweep};
use crate::report::format::{format_ns, format_rate};
use crate::report::is_contender;
use crate::results::RunResult;

/// The fill of the oversubscribed region.
const SHADE: RGBColor = RGBColor(222, 222, 222);

/// How a panel's y axis reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum YKind {
    /// Messages per second, linear from zero.
    Rate,
    /// Nanoseconds, logarithmic.
    Latency,
    /// MiB, linear around the data.
    Mib,
}

/// The dashed reference line of a panel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reference {
    /// None.
    None,
    /// The best ordered strategy's throughput at the fewest workers, scaled linearly.
    LinearInWorkers,
    /// Messages over the ideal bound (`runs[].ideal_s`) at each value.
    IdealRate,
}

/// The repetitions' (min, max) of a cell, where it has them.
pub(super) type SpreadOf = fn(&RunResult) -> Option<(f64, f64)>;

/// One metric of a sweep chart, a column of its panels.
pub(super) struct Panel {
    /// The panel's caption (the point's label follows it).
    pub(super) caption: &'static str,
    /// How the y axis reads.
    pub(super) y: YKind,
    /// The value of a cell, where it has one.
    pub(super) value: fn(&RunResult) -> Option<f64>,
    /// The repetitions' (min, max) of a cell, drawn as a whisker where they differ.
    pub(super) spread: Option<SpreadOf>,
    /// The dashed reference.
    pub(super) reference: Reference,
}

/// A sweep chart, ready to draw.
pub(super) struct SweepChart<'s, 'a> {
    pub(super) sweep: &'s Sweep<'a>,
    pub(super) title: String,
    pub(super) panels: [Panel; 2],
    pub(super) machine: Machine,
    /// Whether a strategy ignores the swept setting (marked in the legend).
    pub(super) ignores: fn(&str) -> bool,
}

/// A count as a tick label: `16`, `1024`, `10k`.
fn count_label(value: usize) -> String {
    if value >= 1_000 && value.is_multiple_of(1_000) {
        format!("{}k", value / 1_000)
    } else {
        value.to_string()
    }
}

/// A value on a log axis: its log10, the value clamped into `1e-9..=AXIS_LIMIT`.
fn log(value: f64) -> f64 {
    let value = if value.is_nan() { 1e-9 } else { value.clamp(1e-9, AXIS_LIMIT) };
    value.log10()
}

/// About six round ticks (1, 2 or 5 times a power of ten) over `low..high`.
fn linear_ticks(low: f64, high: f64) -> Vec<f64> {
    let span = (high - low).max(1e-12);
    let raw = span / 6.0;
    let magnitude = 10_f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|step| *step >= raw)
        .unwrap_or(10.0 * magnitude);
    let mut ticks = Vec::new();
    let mut tick = (low / step).ceil() * step;
    while tick <= high && ticks.len() < 50 {
        ticks.push(tick);
        tick += step;
    }
    ticks
}

/// Ticks at 1, 2 and 5 times each power of ten within a log10 range (at the powers alone
/// over more than three decades), as log10 values.
fn log_ticks(low: f64, high: f64) -> Vec<f64> {
    let steps: &[f64] = if high - low > 3.0 { &[1.0] } else { &[1.0, 2.0, 5.0] };
    let mut ticks = Vec::new();
    let mut decade = low.floor();
    while decade <= high.ceil() && ticks.len() < 60 {
        for &m in steps {
            let tick = decade + m.log10();
            if tick >= low && tick <= high {
                ticks.push(tick);
            }
        }
        decade += 1.0;
    }
    ticks
}

/// The parts of a polyline at or below `top`, cut exactly where it crosses.
fn clip_below(points: &[(f64, f64)], top: f64) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for (index, &(x, y)) in points.iter().enumerate() {
        if index > 0 {
            let (px, py) = points[index - 1];
            if (py <= top) != (y <= top) && (y - py).abs() > f64::EPSILON {
                let cut = (px + (x - px) * (top - py) / (y - py), top);
                current.push(cut);
                if y > top {
                    runs.push(std::mem::take(&mut current));
                }
            }
        }
        if y <= top {
            current.push((x, y));
        }
    }
    runs.push(current);
    runs.retain(|run| run.len() >= 2);
    runs
}

/// The y range of a column (in drawn units), and its ticks.
struct Scale {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
}

impl SweepChart<'_, '_> {
    /// The reference line of `panel` at `point`, in data units (x the setting).
    fn reference(&self, panel: &Panel, point: &Point<'_>) -> Vec<(f64, f64)> {
        match panel.reference {
            Reference::None => Vec::new(),
            Reference::LinearInWorkers => {
                let (Some(&fewest), Some(&most)) = (point.values.first(), point.values.last())
                else {
                    return Vec::new();
                };
                let at_fewest: Vec<&RunResult> = point
                    .rows
                    .iter()
                    .copied()
                    .filter(|row| self.sweep.axis.value(row) == Some(fewest))
                    .collect();
                let contenders: Vec<f64> = at_fewest
                    .iter()
                    .filter(|row| is_contender(&row.strategy))
                    .map(|row| row.throughput_per_s.median)
                    .collect();
                let candidates = if contenders.is_empty() {
                    at_fewest.iter().map(|row| row.throughput_per_s.median).collect()
                } else {
                    contenders
                };
                let best = candidates.into_iter().fold(0.0_f64, f64::max);
                if best <= 0.0 {
                    return Vec::new();
                }
                // Sampled along the log axis, so that the line is drawn as it is.
                let (from, to) = (log(fewest as f64), log(most as f64));
                (0..=48)
                    .map(|step| {
                        let workers = 10_f64.powf(from + (to - from) * step as f64 / 48.0);
                        (workers, (best * workers / fewest as f64).min(AXIS_LIMIT))
                    })
                    .collect()
            }
            Reference::IdealRate => point
                .values
                .iter()
                .filter_map(|&value| {
                    let at: Vec<&RunResult> = point
                        .rows
                        .iter()
                        .copied()
                        .filter(|row| self.sweep.axis.value(row) == Some(value))
                        .collect();
                    let row = at
                        .iter()
                        .find(|row| row.window_scope != Some(WindowScope::Type))
                        .or(at.first())?;
                    (row.ideal_s > 0.0).then(|| {
                        (value as f64, (row.messages as f64 / row.ideal_s).min(AXIS_LIMIT))
                    })
                })
                .collect(),
        }
    }

    /// Every cell drawn.
    fn all_rows(&self) -> impl Iterator<Item = &RunResult> + '_ {
        self.sweep.points.iter().flat_map(|point| point.rows.iter().copied())
    }

    /// The y scale of `panel` at `point`: a rate or memory panel has its own, fitted to
    /// its point (points may differ tenfold); latency panels share one per column, so
    /// that a log axis compares across the rows.
    fn scale(&self, panel: &Panel, point: &Point<'_>) -> Scale {
        let rows: Vec<&RunResult> = match panel.y {
            YKind::Latency => self.all_rows().collect(),
            YKind::Rate | YKind::Mib => point.rows.clone(),
        };
        let values: Vec<f64> = rows
            .iter()
            .flat_map(|row| {
                let spread = panel.spread.and_then(|spread| spread(row));
                [(panel.value)(row), spread.map(|(_, max)| max), spread.map(|(min, _)| min)]
            })
            .flatten()
            .map(|value| if value.is_nan() { 0.0 } else { value.clamp(0.0, AXIS_LIMIT) })
            .collect();
        match panel.y {
            YKind::Rate => {
                let measured = values.iter().copied().fold(0.0_f64, f64::max).max(1.0);
                let reference =
                    self.reference(panel, point).into_iter().map(|(_, y)| y).fold(0.0, f64::max);
                // A reference may run far above the data: it is cut at half as much again.
                let top = (measured.max(reference.min(measured * 1.5)) * 1.08).min(AXIS_LIMIT);
                Scale { range: 0.0..top, ticks: linear_ticks(0.0, top) }
            }
            YKind::Latency => {
                let range = log_range(values.iter().map(|value| value.max(1.0)));
                let (low, high) = (log(range.start), log(range.end));
                Scale { range: low..high, ticks: log_ticks(low, high) }
            }
            YKind::Mib => {
                let low = values.iter().copied().fold(f64::INFINITY, f64::min);
                let high = values.iter().copied().fold(0.0_f64, f64::max);
                let low = if low.is_finite() { low } else { 0.0 };
                let pad = ((high - low) * 0.2).max(0.5);
                let range = (low - pad).max(0.0)..(high + pad);
                let ticks = linear_ticks(range.start, range.end);
                Scale { range, ticks }
            }
        }
    }

    /// A value as drawn on `kind`'s axis.
    fn y(kind: YKind, value: f64) -> f64 {
        match kind {
            YKind::Latency => log(value.max(1.0)),
            YKind::Rate | YKind::Mib => {
                if value.is_nan() {
                    0.0
                } else {
                    value.clamp(0.0, AXIS_LIMIT)
                }
            }
        }
    }

    /// The legend: strategies, the reference, the oversubscribed region.
    fn legend(&self, strategies: &[&str]) -> Vec<Entry> {
        let mut legend: Vec<Entry> = strategies
            .iter()
            .map(|strategy| {
                let label = if (self.ignores)(strategy) {
                    format!("{strategy} (ignores it)")
                } else {
                    (*strategy).to_owned()
                };
                Entry::new(label, strategy_colour(strategy), Mark::Line)
            })
            .collect();
        for panel in &self.panels {
            match panel.reference {
                Reference::None => {}
                Reference::LinearInWorkers => {
                    legend.push(Entry::new("ideal: linear in workers", BLACK, Mark::Dashed));
                }
                Reference::IdealRate => {
                    legend.push(Entry::new(
                        "ideal rate: messages / ideal bound",
                        BLACK,
                        Mark::Dashed,
                    ));
                }
            }
        }
        if self.shade_from().is_some() {
            let label = format!("oversubscribed: {}", self.machine.caveat());
            legend.push(Entry::new(label, SHADE, Mark::Bar));
        }
        legend
    }

    /// Every value of the swept setting, in increasing order.
    fn values(&self) -> Vec<usize> {
        let mut values: Vec<usize> =
            self.sweep.points.iter().flat_map(|point| point.values.iter().copied()).collect();
        values.sort_unstable();
        values.dedup();
        values
    }

    /// Where the oversubscribed region starts on the drawn x axis (a workers sweep with an
    /// oversubscribed count): half way (on the log axis) between the last count that
    /// leaves the producer a core and the first that does not.
    fn shade_from(&self) -> Option<f64> {
        if self.sweep.axis != Axis::Workers {
            return None;
        }
        let values = self.values();
        let first_over = values.iter().position(|&w| self.machine.oversubscribed(w))?;
        Some(match first_over {
            0 => f64::NEG_INFINITY,
            index => (log(values[index - 1] as f64) + log(values[index] as f64)) / 2.0,
        })
    }

    /// The caption of `panel` at `point`.
    fn caption(&self, panel: &Panel, point: &Point<'_>) -> String {
        let mut caption = panel.caption.to_owned();
        if !point.label.is_empty() {
            caption.push_str(" · ");
            caption.push_str(&point.label);
        }
        let over = self.sweep.axis != Axis::Workers
            && point.rest.workers.is_some_and(|workers| self.machine.oversubscribed(workers));
        if let Some(workers) = point.rest.workers.filter(|_| over) {
            let _ = write!(caption, " · oversubscribed ({workers} workers)");
        }
        caption
    }
}

impl Figure for SweepChart<'_, '_> {
    fn size(&self) -> (u32, u32) {
        (1300, 220 + 400 * self.sweep.points.len() as u32)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let all: Vec<&RunResult> = self.all_rows().collect();
        let strategies = strategies(&all);
        let body = frame(root, &self.title, &self.legend(&strategies))?;
        let body = body.margin(0, 10, 10, 10);

        let values = self.values();
        let ticks: Vec<f64> = values.iter().map(|&value| log(value as f64)).collect();
        let (first, last) = (ticks[0], ticks[ticks.len() - 1]);
        let pad = ((last - first) * 0.08).max(0.1);
        let x_range = (first - pad)..(last + pad);
        let x_label = |x: &f64| {
            values
                .iter()
                .find(|&&value| (log(value as f64) - x).abs() < 1e-9)
                .map_or(String::new(), |&value| count_label(value))
        };
        let shade_from = self.shade_from().map(|from| from.max(x_range.start));

        let cells = body.split_evenly((self.sweep.points.len(), 2));
        for (index, area) in cells.iter().enumerate() {
            let (point, column) = (&self.sweep.points[index / 2], index % 2);
            let panel = &self.panels[column];
            let scale = &self.scale(panel, point);
            let mut chart = ChartBuilder::on(area)
                .caption(self.caption(panel, point), text_style(TEXT_PX))
                .margin(10)
                .x_label_area_size(50)
                .y_label_area_size(78)
                .build_cartesian_2d(
                    ticked(x_range.clone(), ticks.clone()),
                    ticked(scale.range.clone(), scale.ticks.clone()),
                )?;
            if let Some(from) = shade_from {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(from, scale.range.start), (x_range.end, scale.range.end)],
                    SHADE.filled(),
                )))?;
                chart.draw_series(std::iter::once(Text::new(
                    "oversubscribed",
                    (from + (x_range.end - x_range.start) * 0.015, scale.range.end),
                    text_style(TICK_PX).color(&RGBColor(90, 90, 90)),
                )))?;
            }
            let y_label = |y: &f64| match panel.y {
                YKind::Rate => format_rate(*y),
                YKind::Latency => format_ns(10_f64.powf(*y)),
                YKind::Mib => format!("{y:.1}"),
            };
            let y_desc = match panel.y {
                YKind::Rate => "msg/s",
                YKind::Latency => "latency (log)",
                YKind::Mib => "MiB",
            };
            chart
                .configure_mesh()
                .x_label_formatter(&x_label)
                .y_label_formatter(&y_label)
                .x_desc(self.sweep.axis.description())
                .y_desc(y_desc)
                .label_style(text_style(TICK_PX))
                .axis_desc_style(text_style(TEXT_PX))
                .draw()?;

            let reference: Vec<(f64, f64)> = self
                .reference(panel, point)
                .into_iter()
                .map(|(x, y)| (log(x), Self::y(panel.y, y)))
                .collect();
            for run in clip_below(&reference, scale.range.end) {
                chart.draw_series(DashedLineSeries::new(run, 10, 6, BLACK.stroke_width(2)))?;
            }

            let cap = (x_range.end - x_range.start) * 0.008;
            for strategy in &strategies {
                let colour = strategy_colour(strategy);
                let mut cells: Vec<(usize, &RunResult)> = point
                    .rows
                    .iter()
                    .filter(|row| row.strategy == *strategy)
                    .filter_map(|row| Some((self.sweep.axis.value(row)?, *row)))
                    .collect();
                cells.sort_by_key(|(value, _)| *value);
                cells.dedup_by_key(|(value, _)| *value);
                let mut line = Vec::new();
                for (value, row) in cells {
                    let Some(y) = (panel.value)(row) else { continue };
                    let x = log(value as f64);
                    line.push((x, Self::y(panel.y, y)));
                    let spread = panel.spread.and_then(|spread| spread(row));
                    if let Some((min, max)) = spread.filter(|(min, max)| max > min) {
                        let (low, high) = (Self::y(panel.y, min), Self::y(panel.y, max));
                        let whisker = [
                            vec![(x, low), (x, high)],
                            vec![(x - cap, low), (x + cap, low)],
                            vec![(x - cap, high), (x + cap, high)],
                        ];
                        chart.draw_series(
                            whisker
                                .into_iter()
                                .map(|points| PathElement::new(points, colour.stroke_width(1))),
                        )?;
                    }
                }
                chart.draw_series(LineSeries::new(line.clone(), colour.stroke_width(2)))?;
                chart.draw_series(
                    line.into_iter().map(|point| Circle::new(point, 4, colour.filled())),
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_inside() {
        assert_eq!(linear_ticks(0.0, 600_000.0)[1], 100_000.0);
        assert!(linear_ticks(8.0, 9.0).iter().all(|tick| (8.0..=9.0).contains(tick)));
        let ticks = log_ticks(3.0, 5.0);
        assert_eq!(ticks.first(), Some(&3.0));
        assert_eq!(ticks.len(), 7, "1k 2k 5k 10k 20k 50k 100k");
        assert_eq!(log_ticks(0.0, 5.0).len(), 6, "decades only over five decades");
        assert_eq!(count_label(10_000), "10k");
        assert_eq!(count_label(1_024), "1024");
    }

    #[test]
    fn a_reference_is_cut_where_it_leaves_the_axis() {
        let runs = clip_below(&[(0.0, 0.0), (1.0, 2.0), (2.0, 0.0)], 1.0);
        assert_eq!(runs, vec![vec![(0.0, 0.0), (0.5, 1.0)], vec![(1.5, 1.0), (2.0, 0.0)]]);
        assert!(clip_below(&[(0.0, 5.0), (1.0, 6.0)], 1.0).is_empty());
    }
}
