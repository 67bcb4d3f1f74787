//! Head-of-line blocking: bystander p99 latency and HOL p99 per strategy, one panel per
//! troubled-key cell (`conflict-backoff`, `long-sync`, each `hot-backlog` burst). Of a
//! sweep, each scenario's first point only.

use plotters::style::RGBColor;

use super::bars::{Bar, BarPanel, Bars, Fill, Group, Slots};
use super::layout;
use super::panel::{grid, strategy_entries, Axis, Entry, Frame, Layout, Mark};
use super::sweep::{first_point, first_point_note};
use super::{charted, log_range, names, ns, ns_label, render, skipped, strategies};
use super::{strategy_colour, Planned};
use crate::report::cell_name;
use crate::report::prose::prose;
use crate::report::view::{Rows, View};
use crate::results::RunResult;
use crate::workload::ScenarioId;

pub(super) fn plan(view: &View<'_>) -> Planned {
    let mut panels = Vec::new();
    let mut all = Vec::new();
    let mut shown: Vec<(String, &str)> = Vec::new();
    // The scenarios with troubled keys, as their specs say, in the registry's order.
    for scenario in charted(|charts| charts.head_of_line) {
        let (rows, point) = first_point(view.rows(scenario));
        if let Some(point) = point {
            shown.push((scenario.to_string(), point));
        }
        for param in rows.params() {
            let cell = rows.cell(param).into_iter();
            let cell = Rows::new(cell.filter(|row| row.bystander_latency_ns.is_some()));
            if cell.is_empty() {
                continue;
            }
            all.extend(cell.iter().copied());
            panels.push((cell_name(scenario.as_str(), param), cell));
        }
    }
    if panels.is_empty() {
        let scenarios: Vec<String> =
            charted(|charts| charts.head_of_line).map(|s| s.to_string()).collect();
        let why = format!("no {} runs with bystander latency in these results", one_of(&scenarios));
        return skipped("head-of-line", &why);
    }
    let title = "Head-of-line blocking: bystander p99 and HOL p99";
    let plot = figure(&panels, &strategies(&all));
    // The scenarios drawn whose cells are burst sizes: each burst is a panel of its own.
    let bursts = charted(|charts| charts.head_of_line && charts.burst_cliff);
    let bursts = bursts.map(ScenarioId::as_str).collect::<Vec<_>>().join(", ");
    let note = prose!("charts", "head_of_line", bursts = bursts);
    render("head-of-line", title, first_point_note(&note, &shown), &plot)
}

/// `names` as a choice: `a`, `a or b`, `a, b or c`.
fn one_of(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [first @ .., last] => format!("{} or {last}", first.join(", ")),
    }
}

/// One panel per cell, on one log scale: per strategy, its bystander p99 and its HOL p99.
fn figure(panels: &[(String, Rows<'_>)], strategies: &[&str]) -> Bars {
    let p99s = |row: &&RunResult| {
        [ns(row.hol_ns.p99), row.bystander_latency_ns.map_or(1.0, |tail| ns(tail.p99))]
    };
    let range = log_range(panels.iter().flat_map(|(_, rows)| rows.iter().flat_map(p99s)));
    let panel = |(caption, rows): &(String, Rows<'_>)| {
        let strategies = rows.strategies();
        let group = |strategy: &&str| match rows.on(strategy) {
            Some(row) => {
                let bystander = row.bystander_latency_ns.map_or(range.start, |tail| ns(tail.p99));
                let bars = [(bystander, Fill::Edged), (ns(row.hol_ns.p99), Fill::Pale)];
                let bar = |(slot, (value, fill))| {
                    Bar::new(slot, value, strategy_colour(strategy)).fill(fill)
                };
                bars.into_iter().enumerate().map(bar).collect()
            }
            None => Group::default(),
        };
        BarPanel {
            frame: Frame { text_px: (12, 14), ..Frame::new(8, (30, 74)).caption(caption) },
            categories: names(&strategies),
            values: Axis::log(range.clone(), ns_label).desc("p99 (log)"),
            slots: Slots { pad: 0.12, step: 0.39, width: 0.37 },
            groups: strategies.iter().map(group).collect(),
            ..BarPanel::default()
        }
    };
    let grey = RGBColor(90, 90, 90);
    let legend = [
        Entry::new("bystander p99 latency", grey, Mark::Bar),
        Entry::new("HOL p99 (start - ready)", grey, Mark::PaleBar),
    ];
    let (rows, columns) = grid(panels.len(), 2);
    Bars {
        title: "Head-of-line blocking: bystander p99 latency and HOL p99 per strategy".into(),
        canvas: layout::CELL_GRID,
        legend: legend.into_iter().chain(strategy_entries(strategies, Mark::Bar)).collect(),
        layout: Layout::Grid(rows, columns),
        panels: panels.iter().map(panel).collect(),
    }
}
