//! `cold-command`: how many times faster `keyed-mailbox` handles cold commands than the 9.2
//! design (`per-type-pool`) and than `group-by`, per (slow aggregates, senders) cell (log
//! y), beside Wow's published 9.3 / 9.2 ratios for 128 slow aggregates as labelled points.
//! Of a sweep, the first point only.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::sweep::{base_param, first_point, first_point_note};
use super::{
    category, centres, diamond, frame, log_range, params, rows, strategy_colour, text_style,
    ticked, DrawResult, Entry, Figure, Mark, Planned, TEXT_PX, TICK_PX,
};
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

/// The denominators of the two ratios.
const AGAINST: [&str; 2] = ["per-type-pool", "group-by"];

struct ColdCommand<'a> {
    rows: Vec<&'a RunResult>,
    params: Vec<&'a str>,
    cores: usize,
}

impl ColdCommand<'_> {
    /// `keyed-mailbox`'s cold-command rate over `against`'s in the cell `param`.
    fn ratio(&self, param: &str, against: &str) -> Option<f64> {
        let rate = |strategy: &str| {
            self.rows
                .iter()
                .find(|row| row.param == param && row.strategy == strategy)
                .map(|row| row.throughput_per_s.median)
        };
        let (mailbox, other) = (rate("keyed-mailbox")?, rate(against)?);
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
        "cold-command-ratio".into(),
        "cold-command: keyed-mailbox's cold-command rate over per-type-pool's and group-by's"
            .into(),
        first_point_note(
            NOTE,
            &point.map(|point| ("cold-command".to_owned(), point)).into_iter().collect::<Vec<_>>(),
        ),
        &figure,
    ));
}

impl Figure for ColdCommand<'_> {
    fn size(&self) -> (u32, u32) {
        (1150, 660)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let mut legend: Vec<Entry> = AGAINST
            .iter()
            .map(|against| {
                Entry::new(
                    format!("keyed-mailbox / {against}"),
                    strategy_colour(against),
                    Mark::Bar,
                )
            })
            .collect();
        legend.push(Entry::new("published 9.3 / 9.2 (Wow, 128 slow)", BLACK, Mark::Diamond));
        let title =
            format!("cold-command: keyed-mailbox vs the pinned groups ({} cores)", self.cores);
        let body = frame(root, &title, &legend)?;
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
            .flat_map(|param| AGAINST.iter().filter_map(|against| self.ratio(param, against)))
            .chain(published.iter().map(|&(_, _, ratio)| ratio))
            .chain([1.0]);
        let range = log_range(values);
        let floor = range.start;
        let count = self.params.len();
        let mut chart = ChartBuilder::on(&body)
            .margin(14)
            .x_label_area_size(56)
            .y_label_area_size(70)
            .build_cartesian_2d(ticked(0.0..count as f64, centres(count)), range.log_scale())?;
        let x_label = |x: &f64| {
            self.params
                .get(category(*x))
                .and_then(|param| self.cell(param))
                .map_or(String::new(), |(slow, senders)| format!("slow {slow}, senders {senders}"))
        };
        let y_label = |y: &f64| format!("{y:.0}x");
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .x_desc("cell")
            .y_desc("ratio of cold commands per second (log)")
            .label_style(text_style(TICK_PX))
            .axis_desc_style(text_style(TEXT_PX))
            .draw()?;
        for (index, param) in self.params.iter().enumerate() {
            for (bar, against) in AGAINST.iter().enumerate() {
                let Some(ratio) = self.ratio(param, against) else { continue };
                let colour = strategy_colour(against);
                let left = index as f64 + 0.15 + bar as f64 * 0.36;
                let corners = [(left, floor), (left + 0.33, ratio)];
                chart.draw_series(std::iter::once(Rectangle::new(corners, colour.filled())))?;
                chart.draw_series(std::iter::once(Text::new(
                    format!("{ratio:.1}x"),
                    (left, ratio * 1.12),
                    text_style(TICK_PX),
                )))?;
            }
            let Some((slow, senders)) = self.cell(param) else { continue };
            if slow != WOW_COLD_COMMAND_SLOW {
                continue;
            }
            for &(cores, _, ratio) in published.iter().filter(|&&(_, n, _)| n == senders) {
                let point = (index as f64 + 0.5, ratio);
                chart.draw_series(std::iter::once(diamond(
                    point,
                    7,
                    BLACK,
                    format!("{ratio:.0}x, {cores} cores"),
                )))?;
            }
        }
        chart.draw_series(DashedLineSeries::new(
            [(0.0, 1.0), (count as f64, 1.0)],
            8,
            5,
            BLACK.stroke_width(1),
        ))?;
        Ok(())
    }
}
