//! `cold-command`: how many times faster `keyed-mailbox` handles cold commands than the 9.2
//! design (`per-type-pool`) and than `group-by`, per (slow aggregates, senders) cell (log
//! y), beside Wow's published 9.3 / 9.2 ratios for 128 slow aggregates as labelled points.
//! Of a sweep, the first point only.

use plotters::style::BLACK;
use strategies::StrategyId;

use super::bars::{Bar, BarPanel, Bars, Group, LabelStyle, Slots};
use super::layout;
use super::panel::{Axis, Entry, Frame, Mark};
use super::sweep::{first_point, point_note};
use super::{absent, charted, log_range, render, skipped, strategy_colour, Planned};
use crate::report::prose::prose;
use crate::report::view::View;
use crate::workload::reference::{
    WOW_COLD_COMMAND_14_CORES, WOW_COLD_COMMAND_4_CORES, WOW_COLD_COMMAND_SLOW,
};
use crate::workload::{cold_command_param, ScenarioId};

/// The numerator of the ratios: the design Wow's release shipped.
const MAILBOX: StrategyId = StrategyId::KeyedMailbox;

/// The denominators of the two ratios.
const AGAINST: [StrategyId; 2] = [StrategyId::PerTypePool, StrategyId::GroupBy];

/// A cell: (slow aggregates, senders), and keyed-mailbox's cold-command rate over each of
/// [`AGAINST`]'s.
type Cell = ((usize, usize), [Option<f64>; 2]);

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    charted(|charts| charts.cold_command_ratio).map(|scenario| plan_of(view, scenario)).collect()
}

/// The chart of `scenario`, whose spec puts it in this one.
fn plan_of(view: &View<'_>, scenario: ScenarioId) -> Planned {
    let results = view.results();
    let (rows, point) = first_point(view.rows(scenario));
    let rate = |param, strategy: StrategyId| {
        Some(rows.row(param, strategy.as_str())?.throughput_per_s.median)
    };
    let ratio = |param, against| {
        let (mailbox, other) = (rate(param, MAILBOX)?, rate(param, against)?);
        (other > 0.0 && mailbox > 0.0).then(|| mailbox / other)
    };
    let cells: Vec<Cell> = rows
        .params()
        .into_iter()
        .filter_map(|param| {
            let row = rows.first_in(param)?;
            Some((
                cold_command_param(row.own_param())?,
                AGAINST.map(|against| ratio(param, against)),
            ))
        })
        .collect();
    let name = format!("{scenario}-ratio");
    if rows.is_empty() {
        absent(&name, scenario)
    } else if cells.iter().all(|(_, ratios)| ratios[0].is_none()) {
        skipped(&name, &format!("the {scenario} runs lack {MAILBOX} or {}", AGAINST[0]))
    } else {
        let title = format!(
            "{scenario}: {MAILBOX}'s cold-command rate over {}'s and {}'s",
            AGAINST[0], AGAINST[1]
        );
        let note = point_note(
            &prose!("charts", "cold_command", scenario = scenario.as_str()),
            scenario,
            point,
        );
        render(name, title, note, &figure(scenario, &cells, results.meta.cores))
    }
}

/// A pair of ratio bars per cell, the published ratios as diamonds, parity dashed.
fn figure(scenario: ScenarioId, cells: &[Cell], cores: usize) -> Bars {
    let published = [(4, WOW_COLD_COMMAND_4_CORES), (14, WOW_COLD_COMMAND_14_CORES)].into_iter();
    let published: Vec<(usize, usize, f64)> = published
        .flat_map(|(cores, table)| {
            table.iter().map(move |&(senders, old, new)| (cores, senders, new / old))
        })
        .collect();
    let ratios = cells.iter().flat_map(|(_, ratios)| ratios.iter().flatten().copied());
    let values = ratios.chain(published.iter().map(|&(_, _, ratio)| ratio)).chain([1.0]);
    let group = |((slow, senders), ratios): &Cell| {
        let bars = ratios.iter().zip(AGAINST).enumerate().filter_map(|(slot, (ratio, against))| {
            let ratio = (*ratio)?;
            Some(
                Bar::new(slot, ratio, strategy_colour(against.as_str()))
                    .label(format!("{ratio:.1}x")),
            )
        });
        let mut group: Group = bars.collect();
        if *slow == WOW_COLD_COMMAND_SLOW {
            let at = published.iter().filter(|&&(_, n, _)| n == *senders);
            group.marks = at
                .map(|&(cores, _, ratio)| (ratio, format!("{ratio:.0}x, {cores} cores")))
                .collect();
        }
        group
    };
    let panel = BarPanel {
        frame: Frame::new(14, (56, 70)),
        categories: cells
            .iter()
            .map(|((slow, senders), _)| format!("slow {slow}, senders {senders}"))
            .collect(),
        category_desc: Some("cell"),
        values: Axis::log(log_range(values), |y| format!("{y:.0}x"))
            .desc("ratio of cold commands per second (log)"),
        slots: Slots { pad: 0.15, step: 0.36, width: 0.33 },
        labels: LabelStyle { lift: 1.12, ..LabelStyle::default() },
        groups: cells.iter().map(group).collect(),
        level: Some((1.0, 1)),
        ..BarPanel::default()
    };
    let legend = AGAINST.iter().map(|against| {
        Entry::new(format!("{MAILBOX} / {against}"), strategy_colour(against.as_str()), Mark::Bar)
    });
    let diamond = Entry::new("published 9.3 / 9.2 (Wow, 128 slow)", BLACK, Mark::Diamond);
    Bars::single(
        format!("{scenario}: {MAILBOX} vs the pinned groups ({cores} cores)"),
        layout::CELL_RATIOS,
        legend.chain([diamond]).collect(),
        panel,
    )
}
