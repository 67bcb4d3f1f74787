//! Throughput per scenario: one panel per scenario, one group of bars per parameter,
//! strategies side by side, whiskers from the slowest to the fastest repetition. Of a sweep,
//! each panel shows the first point (the `sweep-*` charts show them all).

use super::bars::{Bar, BarPanel, Bars, Fill, Slots};
use super::layout;
use super::panel::{grid, strategy_entries, Axis, Frame, Layout, Mark};
use super::sweep::{first_point, first_point_note};
use super::{strategies, strategy_colour, Planned, AXIS_LIMIT, TICK_PX};
use crate::report::format::format_rate;
use crate::report::prose::prose;
use crate::report::view::{Rows, View};
use crate::results::{RunResult, Validity};
use crate::workload::ScenarioId;

pub(super) fn plan(view: &View<'_>) -> Planned {
    let results = view.results();
    let scenarios = ScenarioId::ALL.iter().map(|&scenario| {
        let (rows, point) = first_point(view.rows(scenario));
        (scenario, rows, point)
    });
    let scenarios: Vec<_> = scenarios.filter(|(_, rows, _)| !rows.is_empty()).collect();
    if scenarios.is_empty() {
        return Planned::Skip("throughput: the results hold no runs".into());
    }
    let shown: Vec<(String, &str)> = scenarios
        .iter()
        .filter_map(|(scenario, _, point)| Some((scenario.to_string(), (*point)?)))
        .collect();
    let all: Vec<&RunResult> =
        scenarios.iter().flat_map(|(_, rows, _)| rows.iter().copied()).collect();
    let (grid_rows, columns) = grid(scenarios.len(), 4);
    let plot = Bars {
        title: "Throughput per scenario (median msg/s; whiskers: min-max over repetitions)".into(),
        canvas: layout::SCENARIO_GRID,
        legend: strategy_entries(&strategies(&all), Mark::Bar),
        layout: Layout::Grid(grid_rows, columns),
        panels: scenarios
            .iter()
            .map(|(scenario, rows, point)| panel(*scenario, rows, *point))
            .collect(),
    };
    let mut note = first_point_note(&prose!("charts", "throughput"), &shown);
    if results.runs.iter().any(|run| run.validity() >= Some(Validity::Disturbed)) {
        note.push_str(&format!(" {}", prose!("charts", "throughput_validity")));
    }
    super::render("throughput", "Throughput per scenario", note, &plot)
}

/// The panel of `scenario`: a group of bars per param, a bar per strategy.
fn panel(scenario: ScenarioId, rows: &Rows<'_>, point: Option<&str>) -> BarPanel {
    let params = rows.params();
    let strategies = rows.strategies();
    let highest = rows.iter().map(|row| row.throughput_per_s.max).fold(0.0, f64::max);
    let top = (highest * 1.12).min(AXIS_LIMIT);
    // Of a sweep's first point, the groups are named by the scenario's own param.
    let label = |param: &&str| {
        let param = match (point, rows.first_in(param)) {
            (Some(_), Some(row)) => row.own_param(),
            _ => param,
        };
        if param.is_empty() {
            scenario.to_string()
        } else {
            param.to_owned()
        }
    };
    let group = |param: &&str| {
        let bars = strategies.iter().enumerate().filter_map(|(slot, strategy)| {
            let row = rows.row(param, strategy)?;
            let spread = row.throughput_per_s;
            let bar = Bar::new(slot, spread.median, strategy_colour(strategy));
            Some(Bar {
                whisker: Some((spread.min, spread.max)),
                ..bar.fill(Fill::of(row.validity()))
            })
        });
        bars.collect()
    };
    let caption = match point {
        Some(point) => format!("{scenario} ({point})"),
        None => scenario.to_string(),
    };
    BarPanel {
        frame: Frame { text_px: (TICK_PX, TICK_PX), ..Frame::new(8, (28, 62)).caption(caption) },
        categories: params.iter().map(label).collect(),
        values: Axis::linear(0.0..top.max(1.0), |y| format_rate(*y)).desc("msg/s"),
        slots: Slots::spread(strategies.len(), 0.84, 0.85),
        groups: params.iter().map(group).collect(),
        ..BarPanel::default()
    }
}
