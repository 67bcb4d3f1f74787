//! Threads per strategy on `many-types`: what each strategy reports it started and the
//! peak of OS threads it added, against the `workers` setting. Of a sweep, the first point
//! only.

use plotters::style::{RGBColor, BLACK};

use super::bars::{Bar, BarPanel, Bars, Fill, LabelStyle, Labels, Slots};
use super::panel::{Axis, Entry, Frame, Mark};
use super::sweep::{first_point, point_note};
use super::{absent, names, render, strategy_colour, Planned, TICK_PX};
use crate::report::view::{Rows, View};
use crate::workload::ScenarioId;
use crate::report::prose::prose;


pub(super) fn plan(view: &View<'_>) -> Planned {
    let results = view.results();
    let (rows, point) = first_point(view.rows(ScenarioId::ManyTypes));
    if rows.is_empty() {
        return absent("threads-many-types", ScenarioId::ManyTypes);
    }
    // The point's workers, where the cells record them.
    let workers = rows.iter().find_map(|row| Some(row.settings.as_ref()?.workers));
    let plot = figure(&rows, workers.unwrap_or(results.meta.workers));
    let note = point_note(&prose!("charts", "threads"), ScenarioId::ManyTypes, point);
    render("threads-many-types", "Threads per strategy (many-types)", note, &plot)
}

/// A pair of bars per strategy, observed and reported, against the workers setting.
fn figure(rows: &Rows<'_>, workers: usize) -> Bars {
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
        "Threads per strategy on many-types".into(),
        (1100, 620),
        vec![
            Entry::new("observed (peak OS threads added)", grey, Mark::Bar),
            Entry::new("reported by the strategy", grey, Mark::PaleBar),
            Entry::new(format!("workers = {workers}"), BLACK, Mark::Dashed),
        ],
        panel,
    )
}
