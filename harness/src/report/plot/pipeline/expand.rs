//! A partition expansion as it happened (`pipeline-expand`): records first applied per
//! slice of the cell's time, in the old partitions and in the new ones, one panel per
//! mitigation, for one strategy.

use std::fmt::Write as _;

use plotters::style::RGBColor;
use strategies::StrategyId;

use super::super::layout;
use super::super::panel::{Entry, Layout, Mark};
use super::super::timeline::{Timeline, TimelinePanel, Track};
use super::super::{absent, render, Planned};
use super::{charting, noted, runs_of};
use crate::report::prose::prose;
use crate::report::view::View;
use crate::results::{ExpansionReport, Mitigation};
use crate::workload::scenario::pipeline::PipelineChart;
use crate::workload::ScenarioId;

const OLD: RGBColor = RGBColor(70, 120, 180);
const NEW: RGBColor = RGBColor(220, 110, 40);

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    charting(PipelineChart::Expand).map(|scenario| plan_of(view, scenario)).collect()
}

/// The chart of `scenario`, whose spec lists it.
fn plan_of(view: &View<'_>, scenario: ScenarioId) -> Planned {
    let runs = runs_of(view, scenario).filter(|run| run.expansion.is_some());
    let mailbox = runs.of_strategy(StrategyId::KeyedMailbox.as_str()).first();
    let Some(shown) = mailbox.or(runs.first()) else {
        return absent(scenario.as_str(), scenario);
    };
    let strategy = shown.strategy.as_str();
    let expansions: Vec<&ExpansionReport> = Mitigation::ALL
        .iter()
        .filter_map(|&mitigation| {
            runs.of_strategy(strategy)
                .iter()
                .filter_map(|run| run.expansion.as_ref())
                .find(|expansion| expansion.mitigation == mitigation)
        })
        .collect();
    let mut note = prose!("charts", "pipeline_expand", scenario = scenario.as_str());
    let mitigations: Vec<String> = expansions
        .iter()
        .map(|expansion| {
            prose!(
                "charts",
                "pipeline_expand_mitigation",
                mitigation = expansion.mitigation.to_string(),
                reordered = expansion.records_reordered,
                held = format!("{:.1}", expansion.held_s * 1e3),
            )
        })
        .collect();
    let mitigations = mitigations.join("; ");
    let here =
        prose!("charts", "pipeline_expand_here", strategy = strategy, mitigations = mitigations);
    let _ = write!(note, " {here}");
    let title = format!(
        "Applications in old and new partitions over an expansion ({scenario}, {strategy})"
    );
    let note = noted(&note, view, scenario);
    render(scenario.as_str(), title, note, &figure(strategy, &expansions))
}

/// A panel per mitigation, on shared axes so that they compare: the records first applied
/// per slice in the old partitions and in the new ones.
fn figure(strategy: &str, expansions: &[&ExpansionReport]) -> Timeline {
    let bins = || expansions.iter().flat_map(|expansion| &expansion.timeline);
    let end_s = bins().map(|bin| bin.at_s).fold(0.0, f64::max);
    let width = expansions
        .iter()
        .filter_map(|expansion| {
            let timeline = &expansion.timeline;
            Some(timeline.get(1)?.at_s - timeline.first()?.at_s)
        })
        .fold(0.0, f64::max);
    let top = bins().map(|bin| bin.old_partitions.max(bin.new_partitions)).max().unwrap_or(0);
    let top = (top as f64 * 1.1).max(10.0);
    let end_s = ((end_s + width) * 1.02).max(1e-3);
    let panels = expansions.iter().map(|expansion| {
        let track = |colour, count: fn(&_) -> u64| Track {
            colour,
            dot: 3,
            segments: vec![expansion
                .timeline
                .iter()
                .map(|bin| (bin.at_s, count(bin) as f64))
                .collect()],
        };
        TimelinePanel {
            caption: format!(
                "{}: {} records reordered, new partitions held {:.1} ms",
                expansion.mitigation,
                expansion.records_reordered,
                expansion.held_s * 1e3
            ),
            colour: plotters::style::BLACK,
            end_s,
            top,
            y_desc: "records per slice",
            y_ticks: None,
            tracks: vec![
                track(OLD, |bin| bin.old_partitions),
                track(NEW, |bin| bin.new_partitions),
            ],
        }
    });
    let (from, to) = expansions.first().map_or((0, 0), |e| (e.from_partitions, e.to_partitions));
    let legend = vec![
        Entry::new(format!("old partitions (0-{})", from.saturating_sub(1)), OLD, Mark::Line),
        Entry::new(format!("new partitions ({from}-{})", to.saturating_sub(1)), NEW, Mark::Line),
    ];
    Timeline {
        title: format!("Records first applied per time slice, {strategy}"),
        canvas: layout::TIMELINES,
        legend,
        layout: Layout::Rows(vec![1; expansions.len()]),
        panels: panels.collect(),
    }
}
