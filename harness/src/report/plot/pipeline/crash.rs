//! What a consumer crash cost per strategy and commit policy (`pipeline-crash`): records
//! redelivered and records lost, on a log axis.

use plotters::coord::Shift;
use plotters::prelude::*;

use super::super::{
    category, centres, frame, log_range, text_style, ticked, DrawResult, Entry, Figure, Mark,
    Planned, TEXT_PX, TICK_PX,
};
use super::{noted, policy_colour, runs_of, skip, strategies_of};
use crate::results::Results;
use crate::results::{CommitPolicy, PipelineRun};
use crate::workload::ScenarioId;

const NOTE: &str = "One group of bars per strategy on pipeline-crash: the consumer died \
mid-run without a final commit and a new one resumed from the committed offsets. For each \
commit policy, the solid bar is the records delivered twice (redelivered) and the dark red \
bar beside it the records never applied (lost); the axis is logarithmic and a zero has no \
bar, only its label. contiguous redelivers everything above each partition's first \
incomplete record; contiguous+metadata only what its metadata did not cover; \
highest-completed commits past slow records and loses them.";

const LOST: RGBColor = RGBColor(160, 30, 30);

struct Crash<'a> {
    runs: Vec<&'a PipelineRun>,
    strategies: Vec<&'a str>,
}

pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    let runs = runs_of(results, ScenarioId::PipelineCrash);
    if runs.is_empty() {
        plans.push(skip("pipeline-crash", ScenarioId::PipelineCrash));
        return;
    }
    let strategies = strategies_of(&runs);
    plans.push(super::super::render(
        "pipeline-crash".into(),
        "Redelivered and lost after a consumer crash (pipeline-crash)".into(),
        noted(NOTE, results, ScenarioId::PipelineCrash),
        &Crash { runs, strategies },
    ));
}

impl Figure for Crash<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, 640)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let mut legend: Vec<Entry> = CommitPolicy::ALL
            .iter()
            .map(|&policy| {
                Entry::new(format!("{policy}: redelivered"), policy_colour(policy), Mark::Bar)
            })
            .collect();
        legend.push(Entry::new("lost (any policy)", LOST, Mark::Bar));
        let body = frame(root, "Records redelivered and lost after a crash", &legend)?;
        let range = log_range(
            self.runs
                .iter()
                .flat_map(|run| [run.redelivered, run.lost])
                .filter(|&count| count > 0)
                .map(|count| count as f64)
                .chain([1.0]),
        );
        let count = self.strategies.len();
        let mut chart = ChartBuilder::on(&body)
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d(ticked(0.0..count as f64, centres(count)), range.log_scale())?;
        let x_label =
            |x: &f64| self.strategies.get(category(*x)).map_or(String::new(), |s| s.to_string());
        let y_label = |y: &f64| format!("{y:.0}");
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_label_formatter(&x_label)
            .y_label_formatter(&y_label)
            .x_desc("strategy")
            .y_desc("records")
            .label_style(text_style(TICK_PX))
            .axis_desc_style(text_style(TEXT_PX))
            .draw()?;
        let floor = chart.y_range().start;
        // Per strategy, three policies of two bars each across 0.84 of the category.
        let width = 0.84 / 6.0;
        for (index, strategy) in self.strategies.iter().enumerate() {
            for (slot, policy) in CommitPolicy::ALL.into_iter().enumerate() {
                let Some(run) =
                    self.runs.iter().find(|run| run.strategy == *strategy && run.policy == policy)
                else {
                    continue;
                };
                let left = index as f64 + 0.08 + slot as f64 * 2.0 * width;
                for (offset, value, colour) in
                    [(0.0, run.redelivered, policy_colour(policy)), (width, run.lost, LOST)]
                {
                    let x = left + offset;
                    if value > 0 {
                        chart.draw_series(std::iter::once(Rectangle::new(
                            [(x, floor), (x + width * 0.92, value as f64)],
                            colour.filled(),
                        )))?;
                    }
                    let label_at = (value as f64).max(floor) * 1.15;
                    chart.draw_series(std::iter::once(Text::new(
                        value.to_string(),
                        (x, label_at),
                        text_style(TICK_PX - 4),
                    )))?;
                }
            }
        }
        Ok(())
    }
}
