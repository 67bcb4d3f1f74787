//! Threads per strategy on `many-types`: what each strategy reports it started and the
//! peak of OS threads it added, against the `workers` setting. Of a sweep, the first point
//! only.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::sweep::{first_point, first_point_note};
use super::{
    category, centres, frame, pale, rows, strategies, strategy_colour, text_style, ticked,
    DrawResult, Entry, Figure, Mark, Planned, TEXT_PX, TICK_PX,
};
use crate::results::{Results, RunResult};
use crate::workload::ScenarioId;

const NOTE: &str = "One pair of bars per strategy on many-types (many aggregate types): the \
solid bar is the peak of OS threads the strategy added, observed from the process; the pale \
bar is what the strategy reports it started. The dashed line is the workers setting. A design \
that shares one pool stays on the line whatever the number of types; one pool per type grows \
with the number of types. inline runs on the caller and starts none.";

struct Threads<'a> {
    rows: Vec<&'a RunResult>,
    workers: usize,
}

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
    let figure = Threads { rows, workers };
    plans.push(super::render(
        "threads-many-types".into(),
        "Threads per strategy (many-types)".into(),
        first_point_note(NOTE, &shown),
        &figure,
    ));
}

impl Figure for Threads<'_> {
    fn size(&self) -> (u32, u32) {
        (1100, 620)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let grey = RGBColor(90, 90, 90);
        let legend = [
            Entry::new("observed (peak OS threads added)", grey, Mark::Bar),
            Entry::new("reported by the strategy", grey, Mark::PaleBar),
            Entry::new(format!("workers = {}", self.workers), BLACK, Mark::Dashed),
        ];
        let body = frame(root, "Threads per strategy on many-types", &legend)?;
        let strategies = strategies(&self.rows);
        let top = self
            .rows
            .iter()
            .map(|row| row.threads.observed.max(row.threads.reported))
            .max()
            .unwrap_or(0)
            .max(self.workers) as f64
            * 1.15
            + 1.0;
        let mut chart = ChartBuilder::on(&body)
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(60)
            .build_cartesian_2d(
                ticked(0.0..strategies.len() as f64, centres(strategies.len())),
                0.0..top,
            )?;
        let x_label =
            |x: &f64| strategies.get(category(*x)).map_or(String::new(), |s| s.to_string());
        let y_label = |y: &f64| format!("{y:.0}");
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .x_desc("strategy")
            .y_desc("threads")
            .label_style(text_style(TICK_PX))
            .axis_desc_style(text_style(TEXT_PX))
            .draw()?;
        for (index, strategy) in strategies.iter().enumerate() {
            let Some(row) = self.rows.iter().find(|row| row.strategy == *strategy) else {
                continue;
            };
            let colour = strategy_colour(strategy);
            let left = index as f64 + 0.15;
            let bars = [
                (left, row.threads.observed, colour.filled()),
                (left + 0.36, row.threads.reported, pale(colour).filled()),
            ];
            for (x, count, style) in bars {
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(x, 0.0), (x + 0.33, count as f64)],
                    style,
                )))?;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(x, 0.0), (x + 0.33, count as f64)],
                    colour.stroke_width(1),
                )))?;
                chart.draw_series(std::iter::once(Text::new(
                    count.to_string(),
                    (x + 0.1, count as f64 + top * 0.045),
                    text_style(TICK_PX),
                )))?;
            }
        }
        chart.draw_series(DashedLineSeries::new(
            [(0.0, self.workers as f64), (strategies.len() as f64, self.workers as f64)],
            8,
            5,
            BLACK.stroke_width(2),
        ))?;
        Ok(())
    }
}
