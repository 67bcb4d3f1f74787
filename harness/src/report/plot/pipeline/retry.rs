//! What each retry policy cost the keys without failures, and what it let overtake
//! (`pipeline-retry`): bystander p99 latency, and records that reached the projection
//! before a predecessor with the deepest stash they needed.

use plotters::style::RGBColor;

use super::super::bars::{Bar, BarPanel, Bars, LabelStyle, Labels, Slots};
use super::super::panel::{Axis, Entry, Frame, Layout, Mark};
use super::super::{log_range, Planned, TICK_PX};
use super::{noted, runs_of, skip, strategies_of};
use crate::pipeline::{PipelineRun, RetryPolicy};
use crate::results::Results;
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
        "pipeline-retry",
        "Bystander latency and overtaken records per retry policy (pipeline-retry)",
        noted(NOTE, results, ScenarioId::PipelineRetry),
        &Retry { cells, strategies, policies }.figure(),
    ));
}

/// The x axis of the overtaken panel reaches this far past the most overtaken, for the
/// labels.
const HEADROOM: f64 = 1.45;

impl Retry<'_> {
    fn figure(&self) -> Bars {
        let legend =
            self.policies.iter().map(|&p| Entry::new(p.as_str(), retry_colour(p), Mark::Bar));
        let rows = self.strategies.len() as u32;
        Bars {
            title: "Retry policies: bystander latency and overtaken records".into(),
            size: (1400, 200 + rows * (24 * self.policies.len() as u32 + 18)),
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
        bar: impl Fn(&Cell<'_>) -> (f64, String),
    ) -> BarPanel {
        let groups = self.strategies.iter().map(|strategy| {
            let cells = self.policies.iter().enumerate().filter_map(|(slot, &policy)| {
                let cell =
                    self.cells.iter().find(|c| c.strategy == *strategy && c.policy == policy)?;
                let (value, label) = bar(cell);
                Some(Bar::new(slot, value, retry_colour(policy)).label(label))
            });
            cells.collect()
        });
        BarPanel {
            frame: Frame {
                caption: Some(caption.into()),
                label_areas: (50, 120),
                ..Frame::default()
            },
            categories: self.strategies.iter().map(|s| s.to_string()).collect(),
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
        let measured = || self.cells.iter().map(|cell| cell.p99_us).filter(|&us| us > 0.0);
        let range = log_range(measured());
        // From the power of ten below the fastest, so the axis shows at least two ticks; room
        // for the labels right of the bars.
        let decade = measured().fold(f64::INFINITY, f64::min).log10().floor();
        let start = if decade.is_finite() { range.start.min(10_f64.powf(decade)) } else { 1.0 };
        let axis =
            Axis::log(start..range.end * 3.0, |x| format!("{x:.0}")).desc("microseconds (log)");
        let mut panel = self.panel("bystander p99, produce to apply", axis, |cell| {
            (cell.p99_us, format!("{:.0} µs", cell.p99_us))
        });
        panel.labels.lift = 1.08;
        panel
    }

    /// Overtaken records, linear axis, labelled with the deepest stash.
    fn overtaken(&self) -> BarPanel {
        let most = self.cells.iter().map(|cell| cell.overtaken).max().unwrap_or(0).max(1);
        let axis = Axis::linear(0.0..most as f64 * HEADROOM, |x| format!("{x:.0}")).desc("records");
        let mut panel = self.panel("overtaken records (label: deepest stash)", axis, |cell| {
            let label = if cell.overtaken == 0 && cell.max_stash == 0 {
                "0".to_string()
            } else {
                format!("{} (stash {})", cell.overtaken, cell.max_stash)
            };
            (cell.overtaken as f64, label)
        });
        // 1.5% of the most overtaken.
        panel.labels.lift = 0.015 / HEADROOM;
        panel
    }
}
