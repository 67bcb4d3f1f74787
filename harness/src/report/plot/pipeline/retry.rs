//! What each retry policy cost the keys without failures, and what it let overtake
//! (`pipeline-retry`): bystander p99 latency, and records that reached the projection
//! before a predecessor with the deepest stash they needed.

use std::collections::HashMap;

use plotters::style::RGBColor;

use super::super::bars::{Bar, BarPanel, Bars, LabelStyle, Labels, Slots};
use super::super::layout;
use super::super::panel::{Axis, Entry, Frame, Layout, Mark};
use super::super::{absent, log_range, names, render, Planned, TICK_PX};
use super::{charting, noted, runs_of};
use crate::report::prose::prose;
use crate::report::view::View;
use crate::results::{RetryPolicy, RetryReport};
use crate::workload::scenario::pipeline::PipelineChart;
use crate::workload::ScenarioId;

/// The colour of each retry policy's bars.
fn retry_colour(policy: RetryPolicy) -> RGBColor {
    match policy {
        RetryPolicy::RetryInPlace => RGBColor(40, 150, 150),
        RetryPolicy::PausePartition => RGBColor(140, 95, 180),
        RetryPolicy::RetryTopic => RGBColor(200, 110, 50),
    }
}

struct Retry<'a> {
    /// Each cell's strategy and what it measured.
    cells: Vec<(&'a str, &'a RetryReport)>,
    /// The first cell of each (strategy, retry policy).
    at: HashMap<(&'a str, RetryPolicy), &'a RetryReport>,
    strategies: Vec<&'a str>,
    policies: Vec<RetryPolicy>,
}

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    charting(PipelineChart::Retry).map(|scenario| plan_of(view, scenario)).collect()
}

/// The chart of `scenario`, whose spec lists it.
fn plan_of(view: &View<'_>, scenario: ScenarioId) -> Planned {
    let runs = runs_of(view, scenario);
    let cells: Vec<(&str, &RetryReport)> = runs
        .iter()
        .copied()
        .filter_map(|run| Some((run.strategy.as_str(), run.retry.as_ref()?)))
        .collect();
    if cells.is_empty() {
        return absent(scenario.as_str(), scenario);
    }
    let strategies = crate::report::first_seen(cells.iter().map(|(strategy, _)| *strategy));
    let measured = |policy| cells.iter().any(|(_, retry)| retry.policy == policy);
    let policies = RetryPolicy::ALL.into_iter().filter(|&policy| measured(policy)).collect();
    let mut at = HashMap::new();
    for &(strategy, retry) in &cells {
        at.entry((strategy, retry.policy)).or_insert(retry);
    }
    let plot = Retry { cells, at, strategies, policies }.figure();
    let title = format!("Bystander latency and overtaken records per retry policy ({scenario})");
    let note =
        noted(&prose!("charts", "pipeline_retry", scenario = scenario.as_str()), view, scenario);
    render(scenario.as_str(), title, note, &plot)
}

/// The x axis of the overtaken panel reaches this far past the most overtaken, for the
/// labels.
const HEADROOM: f64 = 1.45;

impl Retry<'_> {
    fn figure(&self) -> Bars {
        let legend =
            self.policies.iter().map(|&p| Entry::new(p.as_str(), retry_colour(p), Mark::Bar));
        Bars {
            title: "Retry policies: bystander latency and overtaken records".into(),
            canvas: layout::SLOT_ROWS,
            legend: legend.collect(),
            layout: Layout::Beside(55),
            panels: vec![self.latency(), self.overtaken()],
        }
    }

    /// A panel of a row of bars per strategy, a bar per policy: `value` and its label.
    fn panel(
        &self,
        caption: &str,
        values: Axis,
        bar: impl Fn(&RetryReport) -> (f64, String),
    ) -> BarPanel {
        let groups = self.strategies.iter().map(|strategy| {
            let cells = self.policies.iter().enumerate().filter_map(|(slot, &policy)| {
                let retry = *self.at.get(&(*strategy, policy))?;
                let (value, label) = bar(retry);
                Some(Bar::new(slot, value, retry_colour(policy)).label(label))
            });
            cells.collect()
        });
        BarPanel {
            frame: Frame::new(14, (50, 120)).caption(caption),
            categories: names(&self.strategies),
            values,
            horizontal: true,
            slots: Slots::spread(self.policies.len(), 0.84, 0.88),
            labels: LabelStyle { place: Labels::Beside, lift: 1.0, px: TICK_PX - 2 },
            groups: groups.collect(),
            bare_zeros: true,
            ..BarPanel::default()
        }
    }

    /// Bystander p99 latency, log axis.
    fn latency(&self) -> BarPanel {
        let measured = || {
            self.cells
                .iter()
                .map(|(_, retry)| retry.bystander_latency.p99_us)
                .filter(|&us| us > 0.0)
        };
        let range = log_range(measured());
        // From the power of ten below the fastest, so the axis shows at least two ticks; room
        // for the labels right of the bars.
        let decade = measured().fold(f64::INFINITY, f64::min).log10().floor();
        let start = if decade.is_finite() { range.start.min(10_f64.powf(decade)) } else { 1.0 };
        let axis =
            Axis::log(start..range.end * 3.0, |x| format!("{x:.0}")).desc("microseconds (log)");
        let mut panel = self.panel("bystander p99, produce to apply", axis, |retry| {
            let p99_us = retry.bystander_latency.p99_us;
            (p99_us, format!("{p99_us:.0} µs"))
        });
        panel.labels.lift = 1.08;
        panel
    }

    /// Overtaken records, linear axis, labelled with the deepest stash.
    fn overtaken(&self) -> BarPanel {
        let most = self.cells.iter().map(|(_, retry)| retry.overtaken).max().unwrap_or(0).max(1);
        let axis = Axis::linear(0.0..most as f64 * HEADROOM, |x| format!("{x:.0}")).desc("records");
        let mut panel = self.panel("overtaken records (label: deepest stash)", axis, |retry| {
            let label = if retry.overtaken == 0 && retry.max_stash == 0 {
                "0".to_string()
            } else {
                format!("{} (stash {})", retry.overtaken, retry.max_stash)
            };
            (retry.overtaken as f64, label)
        });
        // 1.5% of the most overtaken.
        panel.labels.lift = 0.015 / HEADROOM;
        panel
    }
}
