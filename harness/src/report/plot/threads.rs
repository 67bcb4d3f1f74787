//! Threads per strategy on `many-types`: what each strategy reports it started and the
//! peak of OS threads it added, against the `workers` setting. Of a sweep, the first point
//! only.

use plotters::style::{RGBColor, BLACK};

use super::bars::{Bar, BarPanel, Bars, Fill, LabelStyle, Labels, Slots};
use super::panel::{Axis, Entry, Frame, Layout, Mark};
use super::sweep::{first_point, first_point_note};
use super::{rows, strategies, strategy_colour, Planned, TICK_PX};
use crate::results::{Results, RunResult};
use crate::workload::ScenarioId;

const NOTE: &str = "One pair of bars per strategy on many-types (many aggregate types): the \
solid bar is the peak of OS threads the strategy added, observed from the process; the pale \
bar is what the strategy reports it started. The dashed line is the workers setting. A design \
that shares one pool stays on the line whatever the number of types; one pool per type grows \
with the number of types. inline runs on the caller and starts none.";

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let (rows, point) = first_point(rows(results, ScenarioId::ManyTypes));
    if rows.is_empty() {
        plans.push(Planned::Skip(
            "threads-many-types: skipped, no many-types runs in these results".into(),
        ));
        return;
    }
    // The point's workers, where the cells record them.
    let workers = rows
        .iter()
        .find_map(|row| row.settings.as_ref().map(|settings| settings.workers))
        .unwrap_or(results.meta.workers);
    let shown: Vec<(String, &str)> =
        point.map(|point| ("many-types".to_owned(), point)).into_iter().collect();
    plans.push(super::render(
        "threads-many-types",
        "Threads per strategy (many-types)",
        first_point_note(NOTE, &shown),
        &figure(&rows, workers),
    ));
}

/// A pair of bars per strategy, observed and reported, against the workers setting.
fn figure(rows: &[&RunResult], workers: usize) -> Bars {
    let strategies = strategies(rows);
    let most = rows.iter().map(|row| row.threads.observed.max(row.threads.reported)).max();
    let top = most.unwrap_or(0).max(workers) as f64 * 1.15 + 1.0;
    let groups = strategies.iter().map(|strategy| {
        let row = rows.iter().find(|row| row.strategy == *strategy);
        let threads = row
            .map(|row| [(row.threads.observed, Fill::Edged), (row.threads.reported, Fill::Pale)]);
        let colour = strategy_colour(strategy);
        let bars = threads.into_iter().flatten().enumerate();
        bars.map(|(slot, (count, fill))| {
            Bar::new(slot, count as f64, colour).fill(fill).label(count.to_string())
        })
        .collect()
    });
    let panel = BarPanel {
        frame: Frame { label_areas: (50, 60), ..Frame::default() },
        categories: strategies.iter().map(|s| s.to_string()).collect(),
        category_desc: Some("strategy"),
        values: Axis::linear(0.0..top, |y| format!("{y:.0}")).desc("threads"),
        slots: Slots { pad: 0.15, step: 0.36, width: 0.33 },
        labels: LabelStyle { place: Labels::Above(0.1), lift: 0.045, px: TICK_PX },
        groups: groups.collect(),
        level: Some((workers as f64, 2)),
        ..BarPanel::default()
    };
    let grey = RGBColor(90, 90, 90);
    Bars {
        title: "Threads per strategy on many-types".into(),
        size: (1100, 620),
        legend: vec![
            Entry::new("observed (peak OS threads added)", grey, Mark::Bar),
            Entry::new("reported by the strategy", grey, Mark::PaleBar),
            Entry::new(format!("workers = {workers}"), BLACK, Mark::Dashed),
        ],
        layout: Layout::Single,
        panels: vec![panel],
    }
}
