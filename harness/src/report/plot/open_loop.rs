//! Latency vs offered load (`open-loop`): median and p99 latency against the offered
//! fraction of saturation, one line per strategy. Of a sweep (or several `--keys`), the
//! first point and key count only.

use super::layout;
use super::lines::{LinePanel, Lines, Series};
use super::panel::{strategy_entries, Axis, Frame, Layout, Mark};
use super::sweep::{first_point, point_note, values_of};
use super::Planned;
use super::{absent, charted, log_range, ns, ns_label, render, strategy_colour};
use crate::report::format::format_rate;
use crate::report::prose::prose;
use crate::report::view::{Rows, View};
use crate::results::RunResult;
use crate::workload::{keys_part, ScenarioId};

/// Which latency of a run a panel plots.
type Pick = fn(&RunResult) -> u64;

/// The two panels: title and the latency it plots.
const PANELS: [(&str, Pick); 2] =
    [("median latency", |row| row.latency_ns.p50), ("p99 latency", |row| row.latency_ns.p99)];

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    charted(|charts| charts.latency_vs_load).map(|scenario| plan_of(view, scenario)).collect()
}

/// The chart of `scenario`, whose spec puts it in this one.
fn plan_of(view: &View<'_>, scenario: ScenarioId) -> Planned {
    let name = format!("{scenario}-latency");
    let (rows, point) = first_point(view.rows(scenario));
    // With several `--keys`, each count has its own loads: the first count's are drawn.
    let keys = |row: &RunResult| keys_part(row.own_param()).map(str::to_owned);
    let first_keys = rows.first().and_then(|row| keys(row));
    let several_keys = rows.iter().any(|row| keys(row) != first_keys);
    let rows = rows.filter(|row| keys(row) == first_keys);
    let loads = values_of(&rows, "load").into_iter();
    let loads: Vec<(f64, &str, Option<f64>)> =
        loads.map(|(load, row)| (load, row.param.as_str(), row.offered_per_s)).collect();
    let keys_note = match first_keys.as_deref().filter(|_| several_keys) {
        Some(keys) => {
            let keys =
                prose!("charts", "open_loop_keys", keys = keys, scenario = scenario.as_str());
            format!(" {keys}")
        }
        None => String::new(),
    };
    if loads.is_empty() {
        return absent(&name, scenario);
    }
    let note =
        point_note(&format!("{}{keys_note}", prose!("charts", "open_loop")), scenario, point);
    let title = format!("Latency vs offered load ({scenario})");
    render(name, title, note, &figure(scenario, &rows, &loads))
}

/// The median and the p99 panel, a line per strategy over the loads: (load fraction,
/// parameter, offered msg/s).
fn figure(scenario: ScenarioId, rows: &Rows<'_>, loads: &[(f64, &str, Option<f64>)]) -> Lines {
    let strategies = rows.strategies();
    let low = loads.iter().map(|(load, ..)| *load).fold(f64::INFINITY, f64::min);
    let high = loads.iter().map(|(load, ..)| *load).fold(0.0, f64::max);
    let pad = ((high - low) * 0.06).max(0.02);
    let range = log_range(rows.iter().flat_map(|row| PANELS.map(|(_, latency)| ns(latency(row)))));
    let ticks: Vec<(f64, String)> = loads
        .iter()
        .map(|(load, _, offered)| match offered {
            Some(rate) => (*load, format!("{load} ({}/s)", format_rate(*rate))),
            None => (*load, format!("{load}")),
        })
        .collect();
    let panel = |(caption, latency): (&str, Pick)| {
        let line = |strategy: &&str| {
            let points = loads.iter().filter_map(|(load, param, _)| {
                rows.row(param, strategy).map(|row| (*load, ns(latency(row))))
            });
            Series::new(strategy_colour(strategy), points.collect())
        };
        LinePanel {
            frame: Frame::new(10, (60, 78)).caption(caption),
            x: Axis::ticked((low - pad)..(high + pad), ticks.clone())
                .desc("offered load, fraction of saturation (msg/s)"),
            y: Axis::log(range.clone(), ns_label).desc("latency (log)"),
            series: strategies.iter().map(line).collect(),
            ..LinePanel::default()
        }
    };
    Lines {
        title: format!("Latency vs offered load ({scenario}, constant-rate arrivals)"),
        canvas: layout::LINE_PAIRS,
        legend: strategy_entries(&strategies, Mark::Line),
        layout: Layout::Grid(1, 2),
        panels: PANELS.into_iter().map(panel).collect(),
    }
}
