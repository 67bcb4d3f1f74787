//! `cold-command`: how many times faster `keyed-mailbox` handles cold commands than the 9.2
//! design (`per-type-pool`) and than `group-by`, per (slow aggregates, senders) cell (log
//! y), beside Wow's published 9.3 / 9.2 ratios for 128 slow aggregates as labelled points.
//! Of a sweep, the first point only.

use plotters::style::BLACK;
use strategies::StrategyId;

use super::bars::{Bar, BarPanel, Bars, Group, LabelStyle, Slots};
use super::panel::{Axis, Entry, Frame, Layout, Mark};
use super::sweep::{base_param, first_point, first_point_note};
use super::{log_range, params, rows, strategy_colour, Planned};
use crate::results::{Results, RunResult};
use crate::workload::reference::{
    WOW_COLD_COMMAND_14_CORES, WOW_COLD_COMMAND_4_CORES, WOW_COLD_COMMAND_SLOW,
};
use crate::workload::{cold_command_param, ScenarioId};

const NOTE: &str = "One pair of bars per cold-command cell (slow aggregates, senders): how \
many times more cold commands per second keyed-mailbox handled than per-type-pool (the 9.2 \
design Wow's release compared against) and than group-by, on a log scale; 1x is parity. The \
open diamonds are Wow's published 9.3 / 9.2 ratios for 128 slow aggregates (its JMH \
benchmark), labelled with the cores they were measured on; compare them with the cells of 128 \
slow aggregates and the same senders, minding this run's core count in the title.";

/// The numerator of the ratios: the design Wow's release shipped.
const MAILBOX: StrategyId = StrategyId::KeyedMailbox;

/// The denominators of the two ratios.
const AGAINST: [StrategyId; 2] = [StrategyId::PerTypePool, StrategyId::GroupBy];

struct ColdCommand<'a> {
    rows: Vec<&'a RunResult>,
    params: Vec<&'a str>,
    cores: usize,
}

impl ColdCommand<'_> {
    /// `keyed-mailbox`'s cold-command rate over `against`'s in the cell `param`.
    fn ratio(&self, param: &str, against: StrategyId) -> Option<f64> {
        let rate = |strategy: &str| {
            self.rows
                .iter()
                .find(|row| row.param == param && row.strategy == strategy)
                .map(|row| row.throughput_per_s.median)
        };
        let (mailbox, other) = (rate(MAILBOX.as_str())?, rate(against.as_str())?);
        (other > 0.0 && mailbox > 0.0).then(|| mailbox / other)
    }

    /// The (slow aggregates, senders) of the cell `param`, from its own param.
    fn cell(&self, param: &str) -> Option<(usize, usize)> {
        let row = self.rows.iter().find(|row| row.param == param)?;
        cold_command_param(base_param(row))
    }
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let (rows, point) = first_point(rows(results, ScenarioId::ColdCommand));
    if rows.is_empty() {
        plans.push(Planned::Skip(
            "cold-command-ratio: skipped, no cold-command runs in these results".into(),
        ));
        return;
    }
    let params = params(&rows);
    let mut figure = ColdCommand { rows, params, cores: results.meta.cores };
    figure.params =
        figure.params.iter().copied().filter(|param| figure.cell(param).is_some()).collect();
    let has_ratio = figure.params.iter().any(|param| figure.ratio(param, AGAINST[0]).is_some());
    if !has_ratio {
        plans.push(Planned::Skip(
            "cold-command-ratio: skipped, the cold-command runs lack keyed-mailbox or \
             per-type-pool"
                .into(),
        ));
        return;
    }
    plans.push(super::render(
        "cold-command-ratio",
        "cold-command: keyed-mailbox's cold-command rate over per-type-pool's and group-by's",
        first_point_note(
            NOTE,
            &point.map(|point| ("cold-command".to_owned(), point)).into_iter().collect::<Vec<_>>(),
        ),
        &figure.figure(),
    ));
}

impl ColdCommand<'_> {
    /// A pair of ratio bars per cell, the published ratios as diamonds, parity dashed.
    fn figure(&self) -> Bars {
        let published: Vec<(usize, usize, f64)> =
            [(4, WOW_COLD_COMMAND_4_CORES), (14, WOW_COLD_COMMAND_14_CORES)]
                .into_iter()
                .flat_map(|(cores, table)| {
                    table.iter().map(move |&(senders, old, new)| (cores, senders, new / old))
                })
                .collect();
        let values = self
            .params
            .iter()
            .flat_map(|param| AGAINST.iter().filter_map(|against| self.ratio(param, *against)))
            .chain(published.iter().map(|&(_, _, ratio)| ratio))
            .chain([1.0]);
        let groups = self.params.iter().map(|param| {
            let bars = AGAINST.iter().enumerate().filter_map(|(slot, &against)| {
                let ratio = self.ratio(param, against)?;
                Some(
                    Bar::new(slot, ratio, strategy_colour(against.as_str()))
                        .label(format!("{ratio:.1}x")),
                )
            });
            let mut group: Group = bars.collect();
            if let Some((WOW_COLD_COMMAND_SLOW, senders)) = self.cell(param) {
                let at = published.iter().filter(|&&(_, n, _)| n == senders);
                group.marks = at
                    .map(|&(cores, _, ratio)| (ratio, format!("{ratio:.0}x, {cores} cores")))
                    .collect();
            }
            group
        });
        let cells = self.params.iter().filter_map(|param| self.cell(param));
        let panel = BarPanel {
            frame: Frame { label_areas: (56, 70), ..Frame::default() },
            categories: cells
                .map(|(slow, senders)| format!("slow {slow}, senders {senders}"))
                .collect(),
            category_desc: Some("cell"),
            values: Axis::log(log_range(values), |y| format!("{y:.0}x"))
                .desc("ratio of cold commands per second (log)"),
            slots: Slots { pad: 0.15, step: 0.36, width: 0.33 },
            labels: LabelStyle { lift: 1.12, ..LabelStyle::default() },
            groups: groups.collect(),
            level: Some((1.0, 1)),
            ..BarPanel::default()
        };
        let mut legend: Vec<Entry> = AGAINST
            .iter()
            .map(|against| {
                let label = format!("{MAILBOX} / {against}");
                Entry::new(label, strategy_colour(against.as_str()), Mark::Bar)
            })
            .collect();
        legend.push(Entry::new("published 9.3 / 9.2 (Wow, 128 slow)", BLACK, Mark::Diamond));
        Bars {
            title: format!(
                "cold-command: keyed-mailbox vs the pinned groups ({} cores)",
                self.cores
            ),
            size: (1150, 660),
            legend,
            layout: Layout::Single,
            panels: vec![panel],
        }
    }
}
