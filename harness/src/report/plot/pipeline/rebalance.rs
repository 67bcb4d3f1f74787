//! What a consumer group's rebalances cost (`pipeline-rebalance`): duplicates beside the
//! bounds they must stay within, per strategy and commit policy, and each rebalance's
//! pause.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::super::{
    category, centres, frame, legend, log_range, text_style, ticked, DrawResult, Entry, Figure,
    Mark, Planned, TEXT_PX, TICK_PX,
};
use super::{
    bar, count_label, noted, policies_of, policy_colour, runs_of, skip, strategies_of,
    upright_label, Fill, NEUTRAL,
};
use crate::results::Results;
use crate::results::{CommitPolicy, PipelineRun};
use crate::workload::ScenarioId;

const NOTE: &str = "pipeline-rebalance, one group of bars per strategy, coloured by commit \
policy. Top: the solid bar is the records delivered twice over the run (duplicates), the \
pale bar beside it the bound, the records polled but not covered by the revoking members' \
last commits summed over the rebalances; for contiguous+metadata the outlined bar is the \
records in flight at the revocations, the tighter bound of a policy that also commits the \
completed offsets above a gap. The axis is logarithmic and a zero has no bar, only its \
label. Bottom: each rebalance's pause in milliseconds, from the revocation to the first \
record the new assignment applied, the solid bar for a member leaving and the pale bar for \
one joining.";

/// Bars' share of a strategy's category.
const SPAN: f64 = 0.84;

struct Rebalance<'a> {
    runs: Vec<&'a PipelineRun>,
    strategies: Vec<&'a str>,
    policies: Vec<CommitPolicy>,
    /// The most rebalances one cell had.
    events: usize,
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let runs: Vec<&PipelineRun> = runs_of(results, ScenarioId::PipelineRebalance)
        .into_iter()
        .filter(|run| run.rebalance.is_some())
        .collect();
    if runs.is_empty() {
        plans.push(skip("pipeline-rebalance", ScenarioId::PipelineRebalance));
        return;
    }
    let events = runs
        .iter()
        .filter_map(|run| run.rebalance.as_ref())
        .map(|rebalance| rebalance.events.len())
        .max()
        .unwrap_or(0)
        .max(1);
    plans.push(super::super::render(
        "pipeline-rebalance".into(),
        "Duplicates against their bounds, and rebalance pauses (pipeline-rebalance)".into(),
        noted(NOTE, results, ScenarioId::PipelineRebalance),
        &Rebalance { strategies: strategies_of(&runs), policies: policies_of(&runs), runs, events },
    ));
}

/// One bar of the duplicates panel.
struct Bar {
    value: u64,
    colour: RGBColor,
    fill: Fill,
}

impl Rebalance<'_> {
    fn run(&self, strategy: &str, policy: CommitPolicy) -> Option<&PipelineRun> {
        self.runs.iter().copied().find(|run| run.strategy == strategy && run.policy == policy)
    }

    /// The bars of one strategy's group in the duplicates panel, `None` for a slot left
    /// empty (a policy not measured for it).
    fn duplicate_bars(&self, strategy: &str) -> Vec<Option<Bar>> {
        let mut bars = Vec::new();
        for &policy in &self.policies {
            let colour = policy_colour(policy);
            let run = self.run(strategy, policy);
            let rebalance = run.and_then(|run| run.rebalance.as_ref());
            let item = |value: Option<u64>, fill| value.map(|value| Bar { value, colour, fill });
            bars.push(item(run.map(|run| run.redelivered), Fill::Solid));
            bars.push(item(rebalance.map(|r| r.duplicates_bound), Fill::Pale));
            if policy == CommitPolicy::ContiguousMetadata {
                bars.push(item(rebalance.map(|r| r.in_flight), Fill::Outline));
            }
        }
        bars
    }

    fn x_label(&self, x: f64) -> String {
        self.strategies.get(category(x)).map_or(String::new(), |s| s.to_string())
    }

    fn draw_duplicates<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let mut entries: Vec<Entry> = self
            .policies
            .iter()
            .map(|&policy| Entry::new(policy.as_str(), policy_colour(policy), Mark::Bar))
            .collect();
        entries.push(Entry::new("duplicates (delivered twice)", NEUTRAL, Mark::Bar));
        entries.push(Entry::new("bound: uncommitted at the revocations", NEUTRAL, Mark::PaleBar));
        if self.policies.contains(&CommitPolicy::ContiguousMetadata) {
            entries.push(Entry::new("in flight at the revocations", NEUTRAL, Mark::Outline));
        }
        let plot = legend(area, &entries)?;
        let groups: Vec<Vec<Option<Bar>>> =
            self.strategies.iter().map(|strategy| self.duplicate_bars(strategy)).collect();
        let range = log_range(
            groups
                .iter()
                .flatten()
                .flatten()
                .map(|bar| bar.value)
                .filter(|&value| value > 0)
                .map(|value| value as f64)
                .chain([1.0]),
        );
        // Room above the tallest bar for its upright label.
        let range = range.start..range.end * 3.0;
        let count = self.strategies.len();
        let mut chart = ChartBuilder::on(&plot)
            .margin(14)
            .caption("duplicates and their bounds", text_style(TEXT_PX))
            .x_label_area_size(40)
            .y_label_area_size(76)
            .build_cartesian_2d(ticked(0.0..count as f64, centres(count)), range.log_scale())?;
        let x_label = |x: &f64| self.x_label(*x);
        let y_label = |y: &f64| format!("{y:.0}");
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .y_desc("records (log)")
            .label_style(text_style(TICK_PX))
            .axis_desc_style(text_style(TEXT_PX))
            .draw()?;
        let floor = chart.y_range().start;
        for (index, group) in groups.iter().enumerate() {
            let width = SPAN / group.len().max(1) as f64;
            for (slot, item) in group.iter().enumerate() {
                let Some(item) = item else {
                    continue;
                };
                let x = index as f64 + (1.0 - SPAN) / 2.0 + slot as f64 * width;
                let value = item.value as f64;
                if item.value > 0 {
                    let (from, to) = ((x, floor), (x + width * 0.88, value));
                    chart.draw_series(bar(from, to, item.colour, item.fill))?;
                }
                chart.draw_series(std::iter::once(upright_label(
                    count_label(item.value),
                    (x + width * 0.44, value.max(floor) * 1.12),
                    TICK_PX - 3,
                )))?;
            }
        }
        Ok(())
    }

    fn draw_pauses<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let entries = [
            Entry::new("leave: a member left", NEUTRAL, Mark::Bar),
            Entry::new("join: a member joined", NEUTRAL, Mark::PaleBar),
        ];
        let plot = legend(area, &entries)?;
        let most_ms = self
            .runs
            .iter()
            .filter_map(|run| run.rebalance.as_ref())
            .flat_map(|rebalance| &rebalance.events)
            .map(|event| event.pause_s * 1e3)
            .fold(0.0, f64::max);
        let top = if most_ms > 0.0 { most_ms * 1.3 } else { 1.0 };
        let count = self.strategies.len();
        let mut chart = ChartBuilder::on(&plot)
            .margin(14)
            .caption("pause of each rebalance", text_style(TEXT_PX))
            .x_label_area_size(50)
            .y_label_area_size(76)
            .build_cartesian_2d(ticked(0.0..count as f64, centres(count)), 0.0..top)?;
        let x_label = |x: &f64| self.x_label(*x);
        let y_label = |y: &f64| format!("{y:.1}");
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .x_desc("strategy")
            .y_desc("pause (ms)")
            .label_style(text_style(TICK_PX))
            .axis_desc_style(text_style(TEXT_PX))
            .draw()?;
        let width = SPAN / (self.policies.len() * self.events) as f64;
        for (index, strategy) in self.strategies.iter().enumerate() {
            for (group, &policy) in self.policies.iter().enumerate() {
                let Some(rebalance) = self.run(strategy, policy).and_then(|r| r.rebalance.as_ref())
                else {
                    continue;
                };
                for (slot, event) in rebalance.events.iter().take(self.events).enumerate() {
                    let fill = match event.kind.as_str() {
                        "leave" => Fill::Solid,
                        "join" => Fill::Pale,
                        _ => Fill::Outline,
                    };
                    let x = index as f64
                        + (1.0 - SPAN) / 2.0
                        + (group * self.events + slot) as f64 * width;
                    let ms = event.pause_s * 1e3;
                    let (from, to) = ((x, 0.0), (x + width * 0.88, ms));
                    chart.draw_series(bar(from, to, policy_colour(policy), fill))?;
                    chart.draw_series(std::iter::once(upright_label(
                        format!("{ms:.1}"),
                        (x + width * 0.44, ms + top * 0.012),
                        TICK_PX - 3,
                    )))?;
                }
            }
        }
        Ok(())
    }
}

impl Figure for Rebalance<'_> {
    fn size(&self) -> (u32, u32) {
        (1500, 1060)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let body = frame(root, "Rebalances: duplicates against their bounds, and pauses", &[])?;
        let (_, height) = body.dim_in_pixel();
        let (top, bottom) = body.split_vertically(height * 57 / 100);
        self.draw_duplicates(&top)?;
        self.draw_pauses(&bottom)?;
        Ok(())
    }
}
