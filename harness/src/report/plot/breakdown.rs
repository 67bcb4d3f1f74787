//! The per-message cost breakdown on `uniform`: what each strategy's machinery did per
//! message (wake-ups, parks, mailbox activations and retirements, hops) in its counted
//! repetition, beside the context switches of its timed runs. Where uniform has several
//! cells per strategy (a sweep, several `--keys`), the first only.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::{
    category, centres, frame, rows, strategies, text_style, ticked, DrawResult, Entry, Figure,
    Mark, Planned, TEXT_PX, TICK_PX,
};
use crate::results::{Results, RunResult};
use crate::workload::ScenarioId;

const NOTE: &str = "One group of bars per strategy on uniform (no-wait handlers, closed loop): \
events per message, counted on one more repetition of the first quarter of the messages \
(at most 10,000) after the timed ones, so that no timed figure carries the counters. Wake-ups are unparks that woke a worker; parks, times a worker \
went to sleep; activations and retirements, mailboxes made and removed; hops, hand-offs to a \
queue a thread takes from (a mailbox scheduled or requeued, a task spawned, a message sent to \
a lane). Context switches (voluntary plus involuntary) are per message of the timed runs. A \
missing bar marked n/a is an event the strategy cannot see (tokio's, rayon's and flume's own \
parks and wake-ups) or has no machinery for (hash groups have no mailboxes).";

/// The series: a label, a colour (tableau's, not the strategies'), and the value of a row.
type Series = (&'static str, RGBColor, fn(&RunResult) -> Option<f64>);

const SERIES: [Series; 6] = [
    ("wake-ups", RGBColor(78, 121, 167), |row| row.events_per_message?.wakeups),
    ("parks", RGBColor(242, 142, 43), |row| row.events_per_message?.parks),
    ("activations", RGBColor(89, 161, 79), |row| row.events_per_message?.activations),
    ("retirements", RGBColor(237, 201, 72), |row| row.events_per_message?.retirements),
    ("hops", RGBColor(176, 122, 161), |row| row.events_per_message?.hops),
    ("context switches", RGBColor(118, 183, 178), |row| {
        let switches = row.ctx_switches.voluntary + row.ctx_switches.involuntary;
        Some(switches / row.messages.max(1) as f64)
    }),
];

struct Breakdown<'a> {
    rows: Vec<&'a RunResult>,
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let rows: Vec<&RunResult> = rows(results, ScenarioId::Uniform)
        .into_iter()
        .filter(|row| row.events_per_message.is_some())
        .collect();
    if rows.is_empty() {
        plans.push(Planned::Skip(
            "breakdown-uniform: skipped, no uniform run here has a counted repetition \
             (--no-breakdown, or results from before the breakdown)"
                .into(),
        ));
        return;
    }
    // One cell per strategy: the first param's (a sweep's first point, the first key count).
    let first = rows[0].param.as_str();
    let several = rows.iter().any(|row| row.param != first);
    let rows: Vec<&RunResult> = rows.into_iter().filter(|row| row.param == first).collect();
    let note = if several {
        format!(
            "{NOTE} These results hold several uniform cells per strategy (a sweep, or several \
             key counts); this chart shows the first, {first}. The summary's breakdown tables \
             hold every cell."
        )
    } else {
        NOTE.to_owned()
    };
    plans.push(super::render(
        "breakdown-uniform".into(),
        "Per-message breakdown (uniform)".into(),
        note,
        &Breakdown { rows },
    ));
}

impl Figure for Breakdown<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, 640)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let legend: Vec<Entry> = SERIES
            .iter()
            .map(|(label, colour, _)| Entry::new(*label, *colour, Mark::Bar))
            .collect();
        let body = frame(root, "Events per message on uniform", &legend)?;
        let strategies = strategies(&self.rows);
        let top = self
            .rows
            .iter()
            .flat_map(|row| SERIES.iter().filter_map(|(_, _, value)| value(row)))
            .fold(0.0f64, f64::max)
            .max(0.1)
            * 1.2;
        let mut chart = ChartBuilder::on(&body)
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(64)
            .build_cartesian_2d(
                ticked(0.0..strategies.len() as f64, centres(strategies.len())),
                0.0..top,
            )?;
        let x_label =
            |x: &f64| strategies.get(category(*x)).map_or(String::new(), |s| s.to_string());
        let y_label = |y: &f64| format!("{y:.2}");
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .x_desc("strategy")
            .y_desc("events per message")
            .label_style(text_style(TICK_PX))
            .axis_desc_style(text_style(TEXT_PX))
            .draw()?;
        let width = 0.8 / SERIES.len() as f64;
        for (index, strategy) in strategies.iter().enumerate() {
            let Some(row) = self.rows.iter().find(|row| row.strategy == *strategy) else {
                continue;
            };
            for (slot, (_, colour, value)) in SERIES.iter().enumerate() {
                let left = index as f64 + 0.1 + slot as f64 * width;
                match value(row) {
                    Some(value) => {
                        chart.draw_series(std::iter::once(Rectangle::new(
                            [(left, 0.0), (left + width * 0.9, value)],
                            colour.filled(),
                        )))?;
                    }
                    None => {
                        chart.draw_series(std::iter::once(Text::new(
                            "n/a",
                            (left, top * 0.03),
                            text_style(TICK_PX - 2).transform(FontTransform::Rotate270),
                        )))?;
                    }
                }
            }
        }
        Ok(())
    }
}
