//! Threads per strategy on each scenario whose spec asks for it (`charts.threads`:
//! `many-types`): what each strategy reports it started and the peak of OS threads it added,
//! against the `workers` setting. Of a sweep, the first point only.

use plotters::style::{RGBColor, BLACK};

use super::bars::{Bar, BarPanel, Bars, Fill, LabelStyle, Labels, Slots};
use super::layout;
use super::panel::{Axis, Entry, Frame, Mark};
use super::sweep::{first_point, point_note};
use super::{absent, charted, names, render, strategy_colour, Planned, TICK_PX};
use crate::report::prose::prose;
use crate::report::view::{Rows, View};
use crate::workload::ScenarioId;

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    charted(|charts| charts.threads).map(|scenario| plan_of(view, scenario)).collect()
}

/// The chart of `scenario`, whose spec puts it in this one.
fn plan_of(view: &View<'_>, scenario: ScenarioId) -> Planned {
    let results = view.results();
    let name = format!("threads-{scenario}");
    let (rows, point) = first_point(view.rows(scenario));
    if rows.is_empty() {
        return absent(&name, scenario);
    }
    // The point's workers, where the cells record them.
    let workers = rows.iter().find_map(|row| Some(row.settings.as_ref()?.workers));
    let plot = figure(scenario, &rows, workers.unwrap_or(results.meta.workers));
    let note =
        point_note(&prose!("charts", "threads", scenario = scenario.as_str()), scenario, point);
    render(name, format!("Threads per strategy ({scenario})"), note, &plot)
}

/// A pair of bars per strategy, observed and reported, against the workers setting.
fn figure(scenario: ScenarioId, rows: &Rows<'_>, workers: usize) -> Bars {
    let strategies = rows.strategies();
    let most = rows.iter().map(|row| row.threads.observed.max(row.threads.reported)).max();
    let top = most.unwrap_or(0).max(workers) as f64 * 1.15 + 1.0;
    let group = |strategy: &&str| {
        let Some(row) = rows.on(strategy) else {
            return Default::default();
        };
        let bars = [(row.threads.observed, Fill::Edged), (row.threads.reported, Fill::Pale)];
        let bar = |(slot, (count, fill)): (usize, (usize, Fill))| {
            Bar::new(slot, count as f64, strategy_colour(strategy))
                .fill(fill)
                .label(count.to_string())
        };
        bars.into_iter().enumerate().map(bar).collect()
    };
    let panel = BarPanel {
        frame: Frame::new(14, (50, 60)),
        categories: names(&strategies),
        category_desc: Some("strategy"),
        values: Axis::linear(0.0..top, |y| format!("{y:.0}")).desc("threads"),
        slots: Slots { pad: 0.15, step: 0.36, width: 0.33 },
        labels: LabelStyle { place: Labels::Above(0.1), lift: 0.045, px: TICK_PX },
        groups: strategies.iter().map(group).collect(),
        level: Some((workers as f64, 2)),
        ..BarPanel::default()
    };
    let grey = RGBColor(90, 90, 90);
    Bars::single(
        format!("Threads per strategy on {scenario}"),
        layout::STRATEGY_PAIRS,
        vec![
            Entry::new("observed (peak OS threads added)", grey, Mark::Bar),
            Entry::new("reported by the strategy", grey, Mark::PaleBar),
            Entry::new(format!("workers = {workers}"), BLACK, Mark::Dashed),
        ],
        panel,
    )
}
