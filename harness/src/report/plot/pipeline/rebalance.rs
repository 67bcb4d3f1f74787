//! What a consumer group's rebalances cost (`pipeline-rebalance`): duplicates beside the
//! bounds they must stay within, per strategy and commit policy, and each rebalance's
//! pause.

use super::super::bars::{Bar, BarPanel, Bars, Fill, Group, LabelStyle, Labels, Slots};
use super::super::layout;
use super::super::panel::{Axis, Entry, Frame, Layout, Mark};
use super::super::{absent, log_range, names, render, Planned, TICK_PX};
use super::{charting, noted, policies_of, policy_colour, runs_of, strategies_of, NEUTRAL};
use crate::report::prose::prose;
use crate::report::view::{PipelineRows, View};
use crate::results::{CommitPolicy, PipelineRun, RebalanceEvent};
use crate::workload::scenario::pipeline::PipelineChart;
use crate::workload::ScenarioId;

/// Bars' share of a strategy's category.
const SPAN: f64 = 0.84;

struct Rebalance<'a> {
    runs: PipelineRows<'a>,
    strategies: Vec<&'a str>,
    policies: Vec<CommitPolicy>,
    /// The most rebalances one cell had.
    events: usize,
}

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    charting(PipelineChart::Rebalance).map(|scenario| plan_of(view, scenario)).collect()
}

/// The chart of `scenario`, whose spec lists it.
fn plan_of(view: &View<'_>, scenario: ScenarioId) -> Planned {
    let runs = runs_of(view, scenario).filter(|run| run.rebalance.is_some());
    if runs.is_empty() {
        return absent(scenario.as_str(), scenario);
    }
    let events = runs.iter().filter_map(|run| Some(run.rebalance.as_ref()?.events.len()));
    let events = events.max().unwrap_or(0).max(1);
    let (strategies, policies) = (strategies_of(&runs), policies_of(&runs));
    let plot = Rebalance { strategies, policies, runs, events }.figure();
    let title = format!("Duplicates against their bounds, and rebalance pauses ({scenario})");
    let note = noted(
        &prose!("charts", "pipeline_rebalance", scenario = scenario.as_str()),
        view,
        scenario,
    );
    render(scenario.as_str(), title, note, &plot)
}

impl Rebalance<'_> {
    fn run(&self, strategy: &str, policy: CommitPolicy) -> Option<&PipelineRun> {
        self.runs.run(strategy, policy)
    }

    fn figure(&self) -> Bars {
        Bars {
            title: "Rebalances: duplicates against their bounds, and pauses".into(),
            canvas: layout::STACKED_GROUPS,
            legend: Vec::new(),
            layout: Layout::Above(57),
            panels: vec![self.duplicates(), self.pauses()],
        }
    }

    /// The bars of one strategy's group in the duplicates panel, a slot left empty for a
    /// policy not measured for it.
    fn duplicate_bars(&self, strategy: &str) -> Group {
        let mut bars = Vec::new();
        for &policy in &self.policies {
            let run = self.run(strategy, policy);
            let rebalance = run.and_then(|run| run.rebalance.as_ref());
            let mut values = vec![
                (run.map(|run| run.redelivered), Fill::Solid),
                (rebalance.map(|r| r.duplicates_bound), Fill::Pale),
            ];
            if policy == CommitPolicy::ContiguousMetadata {
                values.push((rebalance.map(|r| r.in_flight), Fill::Outline));
            }
            bars.extend(
                values.into_iter().map(|(value, fill)| (value, fill, policy_colour(policy))),
            );
        }
        let slots = bars.into_iter().enumerate();
        slots
            .filter_map(|(slot, (value, fill, colour))| {
                let value = value?;
                Some(Bar::new(slot, value as f64, colour).fill(fill).label(count_label(value)))
            })
            .collect()
    }

    fn duplicates(&self) -> BarPanel {
        let mut legend: Vec<Entry> = self
            .policies
            .iter()
            .map(|&policy| Entry::new(policy.as_str(), policy_colour(policy), Mark::Bar))
            .collect();
        legend.push(Entry::new("duplicates (delivered twice)", NEUTRAL, Mark::Bar));
        legend.push(Entry::new("bound: uncommitted at the revocations", NEUTRAL, Mark::PaleBar));
        let metadata = self.policies.contains(&CommitPolicy::ContiguousMetadata);
        if metadata {
            legend.push(Entry::new("in flight at the revocations", NEUTRAL, Mark::Outline));
        }
        let groups: Vec<Group> =
            self.strategies.iter().map(|strategy| self.duplicate_bars(strategy)).collect();
        let values = groups.iter().flat_map(|group| &group.bars).filter_map(|bar| bar.value);
        let range = log_range(values.filter(|&value| value > 0.0).chain([1.0]));
        BarPanel {
            frame: frame("duplicates and their bounds", 40),
            legend,
            categories: names(&self.strategies),
            // Room above the tallest bar for its upright label.
            values: Axis::log(range.start..range.end * 3.0, |y| format!("{y:.0}"))
                .desc("records (log)"),
            slots: Slots::spread(self.policies.len() * 2 + usize::from(metadata), SPAN, 0.88),
            labels: LabelStyle { place: Labels::Upright, lift: 1.12, px: TICK_PX - 3 },
            groups,
            ..BarPanel::default()
        }
    }

    fn pauses(&self) -> BarPanel {
        let events = self.runs.iter().filter_map(|run| run.rebalance.as_ref());
        let events = events.flat_map(|rebalance| &rebalance.events);
        let most_ms = events.map(|event| event.pause_s * 1e3).fold(0.0, f64::max);
        let top = if most_ms > 0.0 { most_ms * 1.3 } else { 1.0 };
        let groups = self.strategies.iter().map(|strategy| {
            let cells = self.policies.iter().enumerate().filter_map(|(group, &policy)| {
                let rebalance = self.run(strategy, policy)?.rebalance.as_ref()?;
                let events = rebalance.events.iter().take(self.events).enumerate();
                let slots = events.map(move |(slot, event)| (group * self.events + slot, event));
                Some(slots.map(move |(slot, event)| pause_bar(slot, event, policy)))
            });
            cells.flatten().collect()
        });
        BarPanel {
            frame: frame("pause of each rebalance", 50),
            legend: vec![
                Entry::new("leave: a member left", NEUTRAL, Mark::Bar),
                Entry::new("join: a member joined", NEUTRAL, Mark::PaleBar),
            ],
            categories: names(&self.strategies),
            category_desc: Some("strategy"),
            values: Axis::linear(0.0..top, |y| format!("{y:.1}")).desc("pause (ms)"),
            slots: Slots::spread(self.policies.len() * self.events, SPAN, 0.88),
            labels: LabelStyle { place: Labels::Upright, lift: 0.012, px: TICK_PX - 3 },
            groups: groups.collect(),
            ..BarPanel::default()
        }
    }
}

/// The bar of a rebalance's pause in `slot`: solid for a member leaving, pale for one
/// joining.
fn pause_bar(slot: usize, event: &RebalanceEvent, policy: CommitPolicy) -> Bar {
    let fill = match event.kind.as_str() {
        "leave" => Fill::Solid,
        "join" => Fill::Pale,
        _ => Fill::Outline,
    };
    let ms = event.pause_s * 1e3;
    Bar::new(slot, ms, policy_colour(policy)).fill(fill).label(format!("{ms:.1}"))
}

/// A panel's chrome, captioned `caption`, with `x_labels` pixels for its x tick labels.
fn frame(caption: &str, x_labels: u32) -> Frame {
    Frame::new(14, (x_labels, 76)).caption(caption)
}

/// A count as a short label: `812`, `13.7k`, `2.1M`.
fn count_label(count: u64) -> String {
    match count {
        count if count >= 1_000_000 => format!("{:.1}M", count as f64 / 1e6),
        count if count >= 10_000 => format!("{:.1}k", count as f64 / 1e3),
        count => count.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::count_label;

    #[test]
    fn counts_read_short() {
        assert_eq!(count_label(812), "812");
        assert_eq!(count_label(9_999), "9999");
        assert_eq!(count_label(13_737), "13.7k");
        assert_eq!(count_label(2_100_000), "2.1M");
    }
}
