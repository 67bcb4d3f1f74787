//! A sweep chart as lines: a grid of panels, one row per other point of the sweep and one
//! column per metric, the swept setting on a log x axis ticked at the measured values.
//!
//! The x axis is the line charts' log axis, ticked at the measured values; a latency
//! panel's y axis is logarithmic too, a rate's or a memory's linear.

use std::fmt::Write as _;

use plotters::style::BLACK;
use strategies::WindowScope;

use super::super::layout;
use super::super::lines::{LinePanel, Lines, Reference, Series, SHADE};
use super::super::panel::{Axis, Entry, Frame, Layout, Mark};
use super::super::{count_label, log_range, ns_label, render, strategies, strategy_colour};
use super::super::{Planned, AXIS_LIMIT};
use super::{Axis as Setting, Machine, Point, Sweep};
use crate::report::format::format_rate;
use crate::report::is_contender;
use crate::report::view::Rows;
use crate::results::{Metric, RunResult};

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

/// The ideal a panel draws as a dashed line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ideal {
    /// None.
    None,
    /// The best ordered strategy's throughput at the fewest workers, scaled linearly.
    LinearInWorkers,
    /// Messages over the ideal bound (`runs[].ideal_s`) at each value.
    Rate,
}

/// What a panel plots of a cell.
#[derive(Clone, Copy, Debug)]
pub(super) enum Figure {
    /// A metric of the registry (`results::metric`), without whiskers.
    Metric(Metric),
    /// A metric of the registry, with its repetitions' (min, max) as a whisker where they
    /// differ.
    Spread(Metric),
    /// A figure the registry does not hold (the process's memory).
    Own(fn(&RunResult) -> Option<f64>),
}

impl Figure {
    /// The value of a cell, where it has one.
    fn value(self, row: &RunResult) -> Option<f64> {
        match self {
            Self::Metric(metric) | Self::Spread(metric) => metric.value(row, &[]),
            Self::Own(value) => value(row),
        }
    }

    /// The repetitions' (min, max) of a cell, where the panel draws them.
    fn spread(self, row: &RunResult) -> Option<(f64, f64)> {
        match self {
            Self::Spread(metric) => metric.spread(row),
            Self::Metric(_) | Self::Own(_) => None,
        }
    }
}

/// One metric of a sweep chart, a column of its panels.
pub(super) struct Panel {
    /// The panel's caption (the point's label follows it).
    pub(super) caption: &'static str,
    /// How the y axis reads.
    pub(super) y: YKind,
    /// What it plots of a cell.
    pub(super) figure: Figure,
    pub(super) ideal: Ideal,
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

/// A value as drawn on `kind`'s axis (the results were made drawable before): above zero
/// on a logarithmic one.
fn drawn(kind: YKind, value: f64) -> f64 {
    if kind == YKind::Latency {
        value.max(1.0)
    } else {
        value
    }
}

impl<'s, 'a> SweepChart<'s, 'a> {
    /// The chart of `sweep` titled `title`, with `panels`, for which no strategy ignores
    /// the setting.
    pub(super) fn new(
        sweep: &'s Sweep<'a>,
        title: String,
        panels: [Panel; 2],
        machine: Machine,
    ) -> Self {
        Self { sweep, title, panels, machine, ignores: |_| false }
    }

    /// The chart as planned: `sweep-<axis>-<scenario>`, its title, and `note`.
    pub(super) fn planned(&self, note: String) -> Planned {
        let name = format!("sweep-{}-{}", self.sweep.axis.names().0, self.sweep.scenario);
        render(name, self.title.clone(), note, &self.figure())
    }

    fn figure(&self) -> Lines {
        let all: Vec<&RunResult> = self.all_rows().collect();
        let strategies = strategies(&all);
        let ticks: Vec<f64> = self.values().into_iter().map(|value| value as f64).collect();
        let (first, last) = (ticks[0], ticks[ticks.len() - 1]);
        // 8% of the span each side on the log axis, at least a tenth of a decade.
        let pad = 10_f64.powf(((last / first).log10() * 0.08).max(0.1));
        let x_range = (first / pad)..(last * pad);
        let shade = self.shade_from().map(|from| (from.max(x_range.start), "oversubscribed"));
        let cells =
            self.sweep.points.iter().flat_map(|point| self.panels.iter().map(move |p| (point, p)));
        let panels = cells
            .map(|(point, panel)| LinePanel {
                frame: Frame::new(10, (50, 78)).caption(self.caption(panel, point)),
                x: Axis::log(x_range.clone(), |x| count_label(x.round() as u64))
                    .at(ticks.clone())
                    .desc(self.sweep.axis.names().1),
                y: self.y_axis(panel, point),
                shade,
                references: vec![Reference::new(self.ideal(panel, point))],
                series: strategies.iter().map(|s| self.series(panel, point, s)).collect(),
                ..LinePanel::default()
            })
            .collect();
        let rows = self.sweep.points.len();
        Lines {
            title: self.title.clone(),
            canvas: layout::LINE_PAIRS,
            legend: self.legend(&strategies),
            layout: Layout::Grid(rows, 2),
            panels,
        }
    }

    /// The line of `strategy` in `panel` at `point`, with its whiskers.
    fn series(&self, panel: &Panel, point: &Point<'_>, strategy: &str) -> Series {
        let mut cells: Vec<(usize, &RunResult)> = Rows::new(point.rows.iter().copied())
            .of_strategy(strategy)
            .into_iter()
            .filter_map(|row| Some((self.sweep.axis.value(row)?, row)))
            .collect();
        cells.sort_by_key(|(value, _)| *value);
        cells.dedup_by_key(|(value, _)| *value);
        let mut series = Series::new(strategy_colour(strategy), Vec::new());
        for (value, row) in cells {
            let Some(y) = panel.figure.value(row) else { continue };
            let x = value as f64;
            series.points.push((x, drawn(panel.y, y)));
            let spread = panel.figure.spread(row);
            if let Some((min, max)) = spread.filter(|(min, max)| max > min) {
                series.whiskers.push((x, drawn(panel.y, min), drawn(panel.y, max)));
            }
        }
        series
    }

    /// The ideal of `panel` at `point`, as drawn.
    fn ideal(&self, panel: &Panel, point: &Point<'_>) -> Vec<(f64, f64)> {
        let at = |value: usize| -> Vec<&RunResult> {
            let rows = point.rows.iter().copied();
            rows.filter(|row| self.sweep.axis.value(row) == Some(value)).collect()
        };
        // Only a rate panel has an ideal: its values are drawn as they are.
        match panel.ideal {
            Ideal::None => Vec::new(),
            Ideal::LinearInWorkers => {
                let (Some(&fewest), Some(&most)) = (point.values.first(), point.values.last())
                else {
                    return Vec::new();
                };
                linear_in_workers(&at(fewest), fewest, most)
            }
            Ideal::Rate => point
                .values
                .iter()
                .filter_map(|&value| {
                    let at = at(value);
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

    /// The y axis of `panel` at `point`: a rate or memory panel has its own, fitted to its
    /// point (points may differ tenfold); latency panels share one per column, so that a
    /// log axis compares across the rows.
    fn y_axis(&self, panel: &Panel, point: &Point<'_>) -> Axis {
        let rows: Vec<&RunResult> = match panel.y {
            YKind::Latency => self.all_rows().collect(),
            YKind::Rate | YKind::Mib => point.rows.clone(),
        };
        let values: Vec<f64> = rows
            .iter()
            .flat_map(|row| {
                let spread = panel.figure.spread(row);
                [panel.figure.value(row), spread.map(|(_, max)| max), spread.map(|(min, _)| min)]
            })
            .flatten()
            .collect();
        match panel.y {
            YKind::Rate => {
                let measured = values.iter().copied().fold(0.0_f64, f64::max).max(1.0);
                let ideal =
                    self.ideal(panel, point).into_iter().map(|(_, y)| y).fold(0.0, f64::max);
                // An ideal may run far above the data: it is cut at half as much again.
                let top = (measured.max(ideal.min(measured * 1.5)) * 1.08).min(AXIS_LIMIT);
                Axis::linear(0.0..top, |y| format_rate(*y)).desc("msg/s")
            }
            YKind::Latency => {
                let range = log_range(values.iter().map(|value| value.max(1.0)));
                Axis::log(range, ns_label).desc("latency (log)")
            }
            YKind::Mib => {
                let low = values.iter().copied().fold(f64::INFINITY, f64::min);
                let high = values.iter().copied().fold(0.0_f64, f64::max);
                let low = if low.is_finite() { low } else { 0.0 };
                let pad = ((high - low) * 0.2).max(0.5);
                Axis::linear((low - pad).max(0.0)..(high + pad), |y| format!("{y:.1}")).desc("MiB")
            }
        }
    }

    /// The legend: strategies, the ideals, the oversubscribed region.
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
            let label = match panel.ideal {
                Ideal::None => continue,
                Ideal::LinearInWorkers => "ideal: linear in workers",
                Ideal::Rate => "ideal rate: messages / ideal bound",
            };
            legend.push(Entry::new(label, BLACK, Mark::Dashed));
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

    /// Where the oversubscribed region starts on the x axis (a workers sweep with an
    /// oversubscribed count): half way (on the log axis) between the last count that
    /// leaves the producer a core and the first that does not.
    fn shade_from(&self) -> Option<f64> {
        if self.sweep.axis != Setting::Workers {
            return None;
        }
        let values = self.values();
        let first_over = values.iter().position(|&w| self.machine.oversubscribed(w))?;
        Some(match first_over {
            0 => 0.0,
            index => (values[index - 1] as f64 * values[index] as f64).sqrt(),
        })
    }

    /// The caption of `panel` at `point`.
    fn caption(&self, panel: &Panel, point: &Point<'_>) -> String {
        let mut caption = panel.caption.to_owned();
        if !point.label.is_empty() {
            caption.push_str(" · ");
            caption.push_str(&point.label);
        }
        let over = self.sweep.axis != Setting::Workers
            && point.rest.workers.is_some_and(|workers| self.machine.oversubscribed(workers));
        if let Some(workers) = point.rest.workers.filter(|_| over) {
            let _ = write!(caption, " · oversubscribed ({workers} workers)");
        }
        caption
    }
}

/// The ideal of linear scaling from the best ordered strategy's throughput at the fewest
/// workers (`at_fewest`), sampled along the log axis up to `most` so that it is drawn as
/// it is.
fn linear_in_workers(at_fewest: &[&RunResult], fewest: usize, most: usize) -> Vec<(f64, f64)> {
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
    let (from, to) = ((fewest as f64).log10(), (most as f64).log10());
    (0..=48)
        .map(|step| {
            let workers = 10_f64.powf(from + (to - from) * step as f64 / 48.0);
            (workers, (best * workers / fewest as f64).min(AXIS_LIMIT))
        })
        .collect()
}
