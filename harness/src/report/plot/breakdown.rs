//! The per-message cost breakdown on each scenario whose spec asks for it
//! (`charts.breakdown`: `uniform`): what each strategy's machinery did per
//! message (wake-ups, parks, mailbox activations and retirements, hops) in its counted
//! repetition, beside the context switches of its timed runs. Where uniform has several
//! cells per strategy (a sweep, several `--keys`), the first only.

use plotters::style::RGBColor;

use super::bars::{Bar, BarPanel, Bars, Group, Slots};
use super::layout;
use super::panel::{Axis, Entry, Frame, Mark};
use super::{charted, names, render, skipped, Planned};
use crate::report::prose::prose;
use crate::report::view::{Rows, View};
use crate::results::RunResult;
use crate::workload::ScenarioId;

/// The series: a label, a colour (tableau's, not the strategies'), and the value of a row.
type Series = (&'static str, RGBColor, fn(&RunResult) -> Option<f64>);

const SERIES: [Series; 6] = [
    ("wake-ups", RGBColor(78, 121, 167), |row| row.events_per_message?.wakeups),
    ("parks", RGBColor(242, 142, 43), |row| row.events_per_message?.parks),
    ("activations", RGBColor(89, 161, 79), |row| row.events_per_message?.activations),
    ("retirements", RGBColor(237, 201, 72), |row| row.events_per_message?.retirements),
    ("hops", RGBColor(176, 122, 161), |row| row.events_per_message?.hops),
    ("context switches", RGBColor(118, 183, 178), |row| {
        let switches = row.ctx_switches.voluntary + row.ctx_switches.involuntary;
        Some(switches / row.messages.max(1) as f64)
    }),
];

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    charted(|charts| charts.breakdown).map(|scenario| plan_of(view, scenario)).collect()
}

/// The chart of `scenario`, whose spec puts it in this one.
fn plan_of(view: &View<'_>, scenario: ScenarioId) -> Planned {
    let name = format!("breakdown-{scenario}");
    let rows = view.rows(scenario).filter(|row| row.events_per_message.is_some());
    if rows.is_empty() {
        let why = format!(
            "no {scenario} run here has a counted repetition (--no-breakdown, or results from \
             before the breakdown)"
        );
        return skipped(&name, &why);
    }
    // One cell per strategy: the first param's (a sweep's first point, the first key count).
    let first = rows[0].param.as_str();
    let several = rows.has_other_than(first);
    let rows = Rows::new(rows.cell(first));
    let id = scenario.as_str();
    let note = prose!("charts", "breakdown", scenario = id);
    let note = if several {
        format!("{note} {}", prose!("charts", "breakdown_several", scenario = id, first = first))
    } else {
        note
    };
    render(name, format!("Per-message breakdown ({scenario})"), note, &figure(scenario, &rows))
}

/// A group of bars per strategy, one bar per series.
fn figure(scenario: ScenarioId, rows: &Rows<'_>) -> Bars {
    let strategies = rows.strategies();
    let values = rows.iter().flat_map(|row| SERIES.iter().filter_map(|(_, _, value)| value(row)));
    let top = values.fold(0.0f64, f64::max).max(0.1) * 1.2;
    let group = |strategy: &&str| match rows.on(strategy) {
        Some(row) => {
            let bar = |(slot, (_, colour, value)): (usize, &Series)| Bar {
                value: value(row),
                ..Bar::new(slot, 0.0, *colour)
            };
            SERIES.iter().enumerate().map(bar).collect()
        }
        None => Group::default(),
    };
    let panel = BarPanel {
        frame: Frame::new(14, (50, 64)),
        categories: names(&strategies),
        category_desc: Some("strategy"),
        values: Axis::linear(0.0..top, |y| format!("{y:.2}")).desc("events per message"),
        slots: Slots::spread(SERIES.len(), 0.8, 0.9),
        groups: strategies.iter().map(group).collect(),
        ..BarPanel::default()
    };
    let legend = SERIES.iter().map(|(label, colour, _)| Entry::new(*label, *colour, Mark::Bar));
    let title = format!("Events per message on {scenario}");
    Bars::single(title, layout::STRATEGY_GROUPS, legend.collect(), panel)
}
