//! `hot-backlog`: bystander p99 latency against the hot key's burst size, one line per
//! strategy, with the burst at which one key can fill the shared admission window marked.
//! Of a sweep, the first point only.

use plotters::style::RED;

use super::layout;
use super::lines::{LinePanel, Lines, Reference, Series};
use super::panel::{strategy_entries, Axis, Entry, Frame, Mark};
use super::sweep::{first_point, point_note, values_of};
use super::Planned;
use super::{absent, charted, log_range, ns, ns_label, render, strategy_colour};
use crate::report::prose::prose;
use crate::report::view::{Rows, View};
use crate::workload::ScenarioId;

/// The smallest burst that stalls admission for every key: the window refills in batches
/// of `max(1, window / 16)`, so a key holding more than `window - batch` never lets a batch
/// through (README: "One key holding 241 of 256 stalls admission for every key").
pub(super) fn cliff_burst(window: usize) -> usize {
    (window + 1).saturating_sub((window / 16).max(1))
}

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    charted(|charts| charts.burst_cliff).map(|scenario| plan_of(view, scenario)).collect()
}

/// The chart of `scenario`, whose spec puts it in this one.
fn plan_of(view: &View<'_>, scenario: ScenarioId) -> Planned {
    let results = view.results();
    let name = format!("{scenario}-cliff");
    let (rows, point) = first_point(view.rows(scenario));
    let bursts = values_of(&rows, "burst").into_iter();
    let mut bursts: Vec<(usize, &str)> =
        bursts.map(|(burst, row)| (burst as usize, row.param.as_str())).collect();
    bursts.sort_unstable();
    if bursts.is_empty() || rows.iter().all(|row| row.bystander_latency_ns.is_none()) {
        return absent(&name, scenario);
    }
    // The cliff is the window's: the point's where the cells record it.
    let window = rows.iter().find_map(|row| Some(row.settings.as_ref()?.window));
    let plot = figure(scenario, &rows, &bursts, window.unwrap_or(results.meta.window));
    let note = point_note(&prose!("charts", "hot_backlog"), scenario, point);
    render(name, format!("{scenario}: bystander p99 vs burst size"), note, &plot)
}

/// A line per strategy over the bursts, (burst size, parameter) in increasing order, evenly
/// spaced; the cliff of `window` dashed between the bursts either side of it.
fn figure(scenario: ScenarioId, rows: &Rows<'_>, bursts: &[(usize, &str)], window: usize) -> Lines {
    let strategies = rows.strategies();
    let cliff = cliff_burst(window);
    let label = format!("cliff: burst >= {cliff} fills window {window} minus one refill");
    let legend = strategy_entries(&strategies, Mark::Line);
    let range =
        log_range(rows.iter().filter_map(|row| row.bystander_latency_ns.map(|tail| ns(tail.p99))));
    // The cliff sits between the last burst below it and the first at or above it.
    let below = bursts.iter().filter(|(burst, _)| *burst < cliff).count();
    let cliff = (below > 0 && below < bursts.len()).then(|| Reference {
        points: vec![(below as f64, range.start), (below as f64, range.end)],
        colour: RED,
        dash: (8, 6),
    });
    let line = |strategy: &&str| {
        let points = bursts.iter().enumerate().filter_map(|(index, (_, param))| {
            let tail = rows.row(param, strategy)?.bystander_latency_ns?;
            Some((index as f64 + 0.5, ns(tail.p99)))
        });
        Series::new(strategy_colour(strategy), points.collect())
    };
    let panel = LinePanel {
        frame: Frame::new(14, (56, 80)),
        x: Axis::categories(bursts.iter().map(|(burst, _)| burst.to_string()))
            .desc("burst size: 1 ms pending messages queued on the hot key (not to scale)"),
        y: Axis::log(range, ns_label).desc("bystander p99 latency (log)"),
        references: cliff.into_iter().collect(),
        series: strategies.iter().map(line).collect(),
        pen: Some((3, 5)),
        ..LinePanel::default()
    };
    Lines::single(
        format!("{scenario}: bystander p99 latency vs the hot key's burst size"),
        layout::BURST_LINES,
        legend.into_iter().chain([Entry::new(label, RED, Mark::Dashed)]).collect(),
        panel,
    )
}

#[cfg(test)]
mod tests {
    use super::cliff_burst;

    #[test]
    fn the_default_window_stalls_from_241() {
        assert_eq!(cliff_burst(256), 241);
        assert_eq!(cliff_burst(8), 8);
        assert_eq!(cliff_burst(100), 95);
    }
}
