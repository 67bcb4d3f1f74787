//! Charts of the pipeline scenarios, one module per chart:
//!
//! - `pipeline-crash` ([`crash`]): records redelivered and lost after a consumer crash.
//! - `pipeline-commit-lag` ([`commit_lag`]): the committed-offset lag over time on
//!   pipeline-crash.
//! - `pipeline-retry` ([`retry`]): bystander latency and out-of-order records per retry
//!   policy.
//! - `pipeline-expand` ([`expand`]): first applications in the old and the new partitions
//!   over a partition expansion.
//! - `pipeline-rebalance` ([`rebalance`]): duplicates against their bounds, and each
//!   rebalance's pause.

mod commit_lag;
mod crash;
mod expand;
mod rebalance;
mod retry;

use plotters::prelude::*;

use super::{pale, text_style, Planned};
use crate::results::Results;
use crate::results::{CommitPolicy, PipelineRun};
use crate::workload::ScenarioId;

/// Plans every pipeline chart, in presentation order.
pub(super) fn plan(results: &Results, plans: &mut Vec<Planned>) {
    crash::plan(results, plans);
    commit_lag::plan(results, plans);
    retry::plan(results, plans);
    expand::plan(results, plans);
    rebalance::plan(results, plans);
}

/// The colour of each commit policy's bars and panels.
fn policy_colour(policy: CommitPolicy) -> RGBColor {
    match policy {
        CommitPolicy::Contiguous => RGBColor(70, 120, 180),
        CommitPolicy::ContiguousMetadata => RGBColor(90, 170, 110),
        CommitPolicy::HighestCompleted => RGBColor(230, 160, 50),
    }
}

/// The neutral colour of legend entries that name a kind of bar, not a series.
const NEUTRAL: RGBColor = RGBColor(110, 110, 110);

/// The cells of `scenario`, in file order: of a sweep, its first point's
/// ([`super::sweep::first_point_of`]).
fn runs_of(results: &Results, scenario: ScenarioId) -> Vec<&PipelineRun> {
    sweep_point(results, scenario).0
}

/// The cells of `scenario` at the first point of a sweep, and its label where the results
/// hold other points too.
fn sweep_point(results: &Results, scenario: ScenarioId) -> (Vec<&PipelineRun>, Option<&str>) {
    let runs = results.pipelines.iter().filter(|run| run.scenario == scenario.as_str()).collect();
    super::sweep::first_point_of(runs, |run| run.settings.as_ref())
}

/// `note`, saying which point of a sweep the chart of `scenario` shows, where it matters.
fn noted(note: &str, results: &Results, scenario: ScenarioId) -> String {
    let shown: Vec<(String, &str)> = sweep_point(results, scenario)
        .1
        .map(|point| (scenario.to_string(), point))
        .into_iter()
        .collect();
    super::sweep::noted(note, &shown, "The summary's pipeline tables show every point.")
}

/// The distinct strategies of `runs`, in order of first appearance.
fn strategies_of<'a>(runs: &[&'a PipelineRun]) -> Vec<&'a str> {
    crate::report::first_seen(runs.iter().map(|run| run.strategy.as_str()))
}

/// The distinct commit policies of `runs`, in [`CommitPolicy::ALL`] order.
fn policies_of(runs: &[&PipelineRun]) -> Vec<CommitPolicy> {
    CommitPolicy::ALL
        .into_iter()
        .filter(|&policy| runs.iter().any(|r| r.policy == policy))
        .collect()
}

/// The line a chart leaves in the skipped list when `scenario` has no cells.
fn skip(chart: &str, scenario: ScenarioId) -> Planned {
    Planned::Skip(format!("{chart}: skipped, no {scenario} runs in these results"))
}

/// How a bar is filled.
#[derive(Clone, Copy, Debug)]
enum Fill {
    /// Solid colour ([`super::Mark::Bar`]).
    Solid,
    /// A pale tint with a coloured outline ([`super::Mark::PaleBar`]).
    Pale,
    /// White with a coloured outline ([`super::Mark::Outline`]).
    Outline,
}

/// The elements of one bar between `from` and `to` (opposite corners), filled by `fill`.
fn bar<C: Copy>(from: C, to: C, colour: RGBColor, fill: Fill) -> Vec<Rectangle<C>> {
    match fill {
        Fill::Solid => vec![Rectangle::new([from, to], colour.filled())],
        Fill::Pale => vec![
            Rectangle::new([from, to], pale(colour).filled()),
            Rectangle::new([from, to], colour.stroke_width(1)),
        ],
        Fill::Outline => vec![
            Rectangle::new([from, to], WHITE.filled()),
            Rectangle::new([from, to], colour.stroke_width(2)),
        ],
    }
}

/// A small value label, `px` pixels high, turned to read upwards, its start at `at`: for
/// the top of a narrow bar.
fn upright_label<C>(label: String, at: C, px: u32) -> Text<'static, C, String> {
    let style = text_style(px).transform(FontTransform::Rotate270).pos(
        plotters::style::text_anchor::Pos::new(
            plotters::style::text_anchor::HPos::Left,
            plotters::style::text_anchor::VPos::Center,
        ),
    );
    Text::new(label, at, style)
}

/// A count as a short label: `812`, `13.7k`, `2.1M`.
fn count_label(count: u64) -> String {
    match count {
        count if count >= 1_000_000 => format!("{:.1}M", count as f64 / 1e6),
        count if count >= 10_000 => format!("{:.1}k", count as f64 / 1e3),
        count => count.to_string(),
    }
}

/// Seconds as an axis label with as many decimals as the span needs.
fn seconds_label(value: f64, span: f64) -> String {
    let decimals = if span >= 10.0 {
        0
    } else if span >= 1.0 {
        1
    } else if span >= 0.1 {
        2
    } else {
        3
    };
    format!("{value:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_well() {
        assert_eq!(count_label(812), "812");
        assert_eq!(count_label(9_999), "9999");
        assert_eq!(count_label(13_737), "13.7k");
        assert_eq!(count_label(2_100_000), "2.1M");
        assert_eq!(seconds_label(0.05, 0.18), "0.05");
        assert_eq!(seconds_label(0.005, 0.02), "0.005");
        assert_eq!(seconds_label(12.0, 30.0), "12");
    }
}
