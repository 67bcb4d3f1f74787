//! What each retry policy cost the keys without failures, and what it let overtake
//! (`pipeline-retry`): bystander p99 latency, and records that reached the projection
//! before a predecessor with the deepest stash they needed.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::super::{
    category, centres, frame, log_range, text_style, ticked, DrawResult, Entry, Figure, Mark,
    Planned, TEXT_PX, TICK_PX,
};
use super::{noted, runs_of, skip, strategies_of};
use crate::results::Results;
use crate::results::{PipelineRun, RetryPolicy};
use crate::workload::ScenarioId;

const NOTE: &str = "pipeline-retry, one row of bars per strategy, one bar per retry policy. \
Left: the 99th percentile produce-to-apply latency of the bystanders (keys with no failing \
or poison record), in microseconds on a logarithmic axis; a zero (no bystander applied) has \
no bar, only its label. Right: the records that reached the projection before a \
predecessor (overtaken) on a linear axis, each labelled with the deepest stash one key \
needed to put them back in order. retry-in-place and pause-partition keep a key's later \
versions behind its failing one, so overtaken stays at 0 for a strategy that keeps each \
key's order (thread-pool, the unordered control, does not); retry-topic lets them pass and \
the version-aware projection stashes them.";

/// The colour of each retry policy's bars.
fn retry_colour(policy: RetryPolicy) -> RGBColor {
    match policy {
        RetryPolicy::RetryInPlace => RGBColor(40, 150, 150),
        RetryPolicy::PausePartition => RGBColor(140, 95, 180),
        RetryPolicy::RetryTopic => RGBColor(200, 110, 50),
    }
}

/// One cell's measurements.
struct Cell<'a> {
    strategy: &'a str,
    policy: RetryPolicy,
    p99_us: f64,
    overtaken: u64,
    max_stash: u64,
}

struct Retry<'a> {
    cells: Vec<Cell<'a>>,
    strategies: Vec<&'a str>,
    policies: Vec<RetryPolicy>,
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let runs: Vec<&PipelineRun> = runs_of(results, ScenarioId::PipelineRetry)
        .into_iter()
        .filter(|run| run.retry.is_some())
        .collect();
    if runs.is_empty() {
        plans.push(skip("pipeline-retry", ScenarioId::PipelineRetry));
        return;
    }
    let strategies = strategies_of(&runs);
    let cells: Vec<Cell<'_>> = runs
        .iter()
        .filter_map(|run| {
            let retry = run.retry.as_ref()?;
            Some(Cell {
                strategy: &run.strategy,
                policy: retry.policy,
                p99_us: retry.bystander_latency.p99_us,
                overtaken: retry.overtaken,
                max_stash: retry.max_stash,
            })
        })
        .collect();
    let policies =
        RetryPolicy::ALL.into_iter().filter(|&p| cells.iter().any(|c| c.policy == p)).collect();
    plans.push(super::super::render(
        "pipeline-retry".into(),
        "Bystander latency and overtaken records per retry policy (pipeline-retry)".into(),
        noted(NOTE, results, ScenarioId::PipelineRetry),
        &Retry { cells, strategies, policies },
    ));
}

impl Retry<'_> {
    fn cell(&self, strategy: &str, policy: RetryPolicy) -> Option<&Cell<'_>> {
        self.cells.iter().find(|cell| cell.strategy == strategy && cell.policy == policy)
    }

    /// The vertical span of the bar of (`row`, `slot`): rows top to bottom, slots top to
    /// bottom within a row.
    fn bar_span(&self, row: usize, slot: usize) -> (f64, f64) {
        let band = 0.84 / self.policies.len() as f64;
        let top = (self.strategies.len() - row) as f64 - 0.08 - slot as f64 * band;
        (top - band * 0.88, top)
    }

    /// The strategy of a row tick (rows run top to bottom, the axis bottom to top).
    fn row_label(&self, y: f64) -> String {
        let count = self.strategies.len();
        let index = category(y);
        if index >= count {
            return String::new();
        }
        self.strategies[count - 1 - index].to_string()
    }
}

impl Figure for Retry<'_> {
    fn size(&self) -> (u32, u32) {
        let rows = self.strategies.len() as u32;
        (1400, 200 + rows * (24 * self.policies.len() as u32 + 18))
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let legend: Vec<Entry> = self
            .policies
            .iter()
            .map(|&policy| Entry::new(policy.as_str(), retry_colour(policy), Mark::Bar))
            .collect();
        let body = frame(root, "Retry policies: bystander latency and overtaken records", &legend)?;
        let (width, _) = body.dim_in_pixel();
        let (left, right) = body.split_horizontally(width * 11 / 20);
        let rows = self.strategies.len();
        let row_axis = || ticked(0.0..rows as f64, centres(rows));
        let row_label = |y: &f64| self.row_label(*y);
        let beside = text_style(TICK_PX - 2).pos(Pos::new(HPos::Left, VPos::Center));

        // Left: bystander p99 latency, log axis.
        let measured = || self.cells.iter().map(|cell| cell.p99_us).filter(|&us| us > 0.0);
        let range = log_range(measured());
        // From the power of ten below the fastest, so the axis shows at least two ticks; room
        // for the labels right of the bars.
        let decade = measured().fold(f64::INFINITY, f64::min).log10().floor();
        let start = if decade.is_finite() { range.start.min(10_f64.powf(decade)) } else { 1.0 };
        let range = start..range.end * 3.0;
        let mut chart = ChartBuilder::on(&left)
            .margin(14)
            .caption("bystander p99, produce to apply", text_style(TEXT_PX))
            .x_label_area_size(50)
            .y_label_area_size(120)
            .build_cartesian_2d(range.log_scale(), row_axis())?;
        let x_label = |x: &f64| format!("{x:.0}");
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_label_formatter(&x_label)
            .y_label_formatter(&row_label)
            .x_desc("microseconds (log)")
            .label_style(text_style(TICK_PX))
            .axis_desc_style(text_style(TEXT_PX))
            .draw()?;
        let floor = chart.x_range().start;
        for (row, strategy) in self.strategies.iter().enumerate() {
            for (slot, &policy) in self.policies.iter().enumerate() {
                let Some(cell) = self.cell(strategy, policy) else {
                    continue;
                };
                let (bottom, top) = self.bar_span(row, slot);
                if cell.p99_us > 0.0 {
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(floor, bottom), (cell.p99_us, top)],
                        retry_colour(policy).filled(),
                    )))?;
                }
                chart.draw_series(std::iter::once(Text::new(
                    format!("{:.0} µs", cell.p99_us),
                    (cell.p99_us.max(floor) * 1.08, (bottom + top) / 2.0),
                    beside.clone(),
                )))?;
            }
        }

        // Right: overtaken records, linear axis, labelled with the deepest stash.
        let most = self.cells.iter().map(|cell| cell.overtaken).max().unwrap_or(0).max(1);
        let mut chart = ChartBuilder::on(&right)
            .margin(14)
            .caption("overtaken records (label: deepest stash)", text_style(TEXT_PX))
            .x_label_area_size(50)
            .y_label_area_size(120)
            .build_cartesian_2d(0.0..most as f64 * 1.45, row_axis())?;
        let x_label = |x: &f64| format!("{x:.0}");
        chart
            .configure_mesh()
            .disable_y_mesh()
            .x_label_formatter(&x_label)
            .y_label_formatter(&row_label)
            .x_desc("records")
            .label_style(text_style(TICK_PX))
            .axis_desc_style(text_style(TEXT_PX))
            .draw()?;
        let pad = most as f64 * 0.015;
        for (row, strategy) in self.strategies.iter().enumerate() {
            for (slot, &policy) in self.policies.iter().enumerate() {
                let Some(cell) = self.cell(strategy, policy) else {
                    continue;
                };
                let (bottom, top) = self.bar_span(row, slot);
                let value = cell.overtaken as f64;
                if cell.overtaken > 0 {
                    chart.draw_series(std::iter::once(Rectangle::new(
                        [(0.0, bottom), (value, top)],
                        retry_colour(policy).filled(),
                    )))?;
                }
                let label = if cell.overtaken == 0 && cell.max_stash == 0 {
                    "0".to_string()
                } else {
                    format!("{} (stash {})", cell.overtaken, cell.max_stash)
                };
                chart.draw_series(std::iter::once(Text::new(
                    label,
                    (value + pad, (bottom + top) / 2.0),
                    beside.clone(),
                )))?;
            }
        }
        Ok(())
    }
}
