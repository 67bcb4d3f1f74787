//! The history page: `harness/templates/history.html`, rendered by minijinja as
//! `report.html` is, with each chart an inline SVG made here from escaped parts.

use std::collections::HashMap;
use std::fmt::Write as _;

use minijinja::context;
use minijinja::value::Value;

use super::{receipts_of, settings_of, short_commit, Chart, History, Mark, Point, Run};
use crate::report::format::format_value;
use crate::report::html::{environment_of, escape};
use crate::workload::ScenarioId;

const HISTORY_TEMPLATE: &str = include_str!("../../../templates/history.html");

/// The chart's size in pixels, and its plot area's margins: the y axis's labels on the
/// left, the legend on the right, each run's number and date below.
const WIDTH: f64 = 460.0;
const HEIGHT: f64 = 250.0;
const LEFT: f64 = 72.0;
const RIGHT: f64 = 128.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 38.0;

/// The whole page; links to the runs start with `base`, the way from the page's folder to
/// the results folder.
pub fn render(history: &History, base: &str) -> String {
    let runs: Vec<Value> =
        history.runs.iter().enumerate().map(|(index, run)| run_row(index, run, base)).collect();
    let scenarios = scenario_groups(history, base);
    let left_out = left_out_rows(history);
    let page = context! {
        runs,
        scenarios,
        charts => history.charts.len(),
        left_out_total => history.left_out.len(),
        left_out,
    };
    environment_of("history.html", HISTORY_TEMPLATE)
        .get_template("history.html")
        .and_then(|template| template.render(page))
        .expect("the compiled-in history template renders")
}

/// One row of the runs' table.
fn run_row(index: usize, run: &Run, base: &str) -> Value {
    let meta = &run.results.meta;
    context! {
        number => index + 1,
        created => meta.created,
        folder => run.folder,
        link => run.link.as_ref().map(|link| format!("{base}{link}")),
        commit => short_commit(&meta.git_commit),
        machine => format!("{}, {} cores", meta.cpu_model, meta.cores),
        settings => settings_of(&run.results),
        receipts => receipts_of(&run.results),
    }
}

/// The charts under a heading per scenario, in the registry's order.
fn scenario_groups(history: &History, base: &str) -> Vec<Value> {
    let mut groups = Vec::new();
    let mut by_scenario: HashMap<ScenarioId, Vec<&Chart>> = HashMap::new();
    for chart in &history.charts {
        by_scenario.entry(chart.scenario).or_default().push(chart);
    }
    for &scenario in ScenarioId::ALL {
        let charts = by_scenario.remove(&scenario).unwrap_or_default();
        let Some(first) = charts.first() else { continue };
        let metric = first.metric;
        let better = if metric.higher_is_better() { "higher" } else { "lower" };
        let figures: Vec<Value> = charts
            .iter()
            .map(|chart| {
                let title = super::super::cell_name(scenario.as_str(), &chart.param);
                context! {
                    id => chart_id(chart),
                    title,
                    svg => Value::from_safe_string(svg(chart, history, base)),
                }
            })
            .collect();
        groups.push(context! {
            id => scenario.as_str(),
            name => scenario.as_str(),
            description => scenario.description(),
            metric => format!("{} ({better} is better)", metric.label()),
            charts => figures,
        });
    }
    groups
}

/// A chart's id in the page: its scenario and param, letters, digits and dashes only.
fn chart_id(chart: &Chart) -> String {
    let name = format!("{}-{}", chart.scenario.as_str(), chart.param);
    let id: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '-' }).collect();
    id.trim_end_matches('-').to_owned()
}

/// The left-out cells, one row per run and reason, in the runs' order.
fn left_out_rows(history: &History) -> Vec<Value> {
    let mut groups: Vec<(usize, &str, Vec<&str>)> = Vec::new();
    for entry in &history.left_out {
        match groups
            .iter_mut()
            .find(|(run, reason, _)| *run == entry.run && *reason == entry.reason)
        {
            Some((_, _, cells)) => cells.push(&entry.cell),
            None => groups.push((entry.run, &entry.reason, vec![&entry.cell])),
        }
    }
    groups.sort_by_key(|(run, _, _)| *run);
    groups
        .into_iter()
        .map(|(run, reason, cells)| {
            context! {
                number => run + 1,
                folder => history.runs[run].folder,
                reason,
                count => cells.len(),
                cells => cells.join(", "),
            }
        })
        .collect()
}

/// A colour as SVG writes it.
fn colour(strategy: &str) -> String {
    let [red, green, blue] = crate::report::descriptor(strategy).colour;
    format!("#{red:02x}{green:02x}{blue:02x}")
}

/// The y axis: its top and the step between ticks, 1, 2, 2.5 or 5 times a power of ten, at
/// most four ticks above zero.
pub(super) fn y_axis(max: f64) -> (f64, f64) {
    if !(max.is_finite() && max > 0.0) {
        return (1.0, 0.25);
    }
    let raw = max / 4.0;
    let power = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|factor| factor * power)
        .find(|step| *step >= raw)
        .unwrap_or(10.0 * power);
    ((max / step).ceil() * step, step)
}

/// Where the largest value is this many times the smallest (all positive), the y axis is
/// logarithmic: a design 100 times slower than the rest leaves the rest readable.
pub(super) const LOG_SPAN: f64 = 20.0;

/// A chart's y axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Scale {
    /// From zero to `top`, a tick every `step`.
    Linear { top: f64, step: f64 },
    /// From `10^low` to `10^high`, a tick at every power of ten.
    Log { low: i32, high: i32 },
}

impl Scale {
    /// The scale of `values`: logarithmic where they span more than [`LOG_SPAN`] times.
    pub(super) fn of(values: impl Iterator<Item = f64> + Clone) -> Self {
        let max = values.clone().fold(0.0, f64::max);
        let min = values.fold(f64::INFINITY, f64::min);
        if min > 0.0 && max.is_finite() && max / min > LOG_SPAN {
            let low = min.log10().floor() as i32;
            let high = (max.log10().ceil() as i32).max(low + 1);
            return Self::Log { low, high };
        }
        let (top, step) = y_axis(max);
        Self::Linear { top, step }
    }

    /// Where `value` sits, 0 at the bottom and 1 at the top.
    fn fraction(self, value: f64) -> f64 {
        match self {
            Self::Linear { top, .. } => value / top,
            Self::Log { low, high } => {
                (value.max(f64::MIN_POSITIVE).log10() - f64::from(low)) / f64::from(high - low)
            }
        }
    }

    /// The values the axis labels.
    fn ticks(self) -> Vec<f64> {
        match self {
            Self::Linear { top, step } => {
                let count = (top / step).round() as usize;
                (0..=count).map(|index| step * index as f64).collect()
            }
            Self::Log { low, high } => (low..=high).map(|power| 10f64.powi(power)).collect(),
        }
    }
}

/// One chart as an inline SVG: the axes, one line per design through its runs, each point a
/// link to its run's page with a tooltip.
fn svg(chart: &Chart, history: &History, base: &str) -> String {
    let scale = Scale::of(chart.points.iter().map(|point| point.value));
    let plot_width = WIDTH - LEFT - RIGHT;
    let plot_height = HEIGHT - TOP - BOTTOM;
    let slots = chart.runs.len().max(1) as f64;
    let x = |run: usize| {
        let slot = chart.runs.iter().position(|r| *r == run).unwrap_or(0) as f64;
        LEFT + plot_width * (slot + 0.5) / slots
    };
    let y = |value: f64| TOP + plot_height * (1.0 - scale.fraction(value));
    let label = format!(
        "{} {}: {} across runs",
        chart.scenario.as_str(),
        chart.param,
        chart.metric.label()
    );
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\" aria-label=\"{}\" \
         font-family=\"DejaVu Sans, Verdana, sans-serif\" font-size=\"10\">\n",
        escape(&label)
    );
    axes(&mut out, chart, history, scale, &x, &y);
    for design in &chart.designs {
        lines(&mut out, chart, design, &x, &y);
    }
    for point in &chart.points {
        point_mark(&mut out, point, chart, history, base, (x(point.run), y(point.value)));
    }
    legend(&mut out, chart);
    out.push_str("</svg>");
    out
}

/// The grid, the y axis's ticks in the metric's unit, and each run's number and date.
fn axes(
    out: &mut String,
    chart: &Chart,
    history: &History,
    scale: Scale,
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(f64) -> f64,
) {
    let right = WIDTH - RIGHT;
    for tick in scale.ticks() {
        let at = y(tick);
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{at:.1}\" x2=\"{right}\" y2=\"{at:.1}\" stroke=\"#e3e3e3\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#444\">{}</text>",
            LEFT - 4.0,
            at + 3.5,
            escape(&format_value(chart.metric.unit(), tick))
        );
    }
    if matches!(scale, Scale::Log { .. }) {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#777\" font-size=\"8\">log scale</text>",
            LEFT + 4.0,
            TOP - 4.0
        );
    }
    let bottom = HEIGHT - BOTTOM;
    let _ = writeln!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{bottom}\" x2=\"{right}\" y2=\"{bottom}\" stroke=\"#888\"/>\
         <line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{bottom}\" stroke=\"#888\"/>"
    );
    for &run in &chart.runs {
        let created = &history.runs[run].results.meta.created;
        let date = created.get(5..10).unwrap_or(created);
        let _ = writeln!(
            out,
            "<text x=\"{0:.1}\" y=\"{1:.1}\" text-anchor=\"middle\" fill=\"#444\">#{2}</text>\
             <text x=\"{0:.1}\" y=\"{3:.1}\" text-anchor=\"middle\" fill=\"#777\" \
             font-size=\"8\">{4}</text>",
            x(run),
            bottom + 12.0,
            run + 1,
            bottom + 23.0,
            escape(date)
        );
    }
}

/// One design's line through its points in run order, broken where a run between has no
/// point of it (a void cell, a design it did not measure).
fn lines(
    out: &mut String,
    chart: &Chart,
    design: &str,
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(f64) -> f64,
) {
    let mut segment: Vec<(f64, f64)> = Vec::new();
    let mut segments = Vec::new();
    let points = chart.points_at();
    for &run in &chart.runs {
        match points.get(&(run, design)) {
            Some(point) => segment.push((x(run), y(point.value))),
            None => segments.push(std::mem::take(&mut segment)),
        }
    }
    segments.push(segment);
    for segment in segments.iter().filter(|segment| segment.len() > 1) {
        let points: Vec<String> =
            segment.iter().map(|(px, py)| format!("{px:.1},{py:.1}")).collect();
        let _ = writeln!(
            out,
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.5\"/>",
            points.join(" "),
            colour(design)
        );
    }
}

/// One point: filled or hollow by its receipt, a link to its run's page where it has one,
/// with its tooltip.
fn point_mark(
    out: &mut String,
    point: &Point,
    chart: &Chart,
    history: &History,
    base: &str,
    (px, py): (f64, f64),
) {
    let run = &history.runs[point.run];
    let colour = colour(&point.strategy);
    let fill = match point.mark() {
        Mark::Filled => colour.as_str(),
        Mark::Hollow => "#ffffff",
    };
    let circle = format!(
        "<circle cx=\"{px:.1}\" cy=\"{py:.1}\" r=\"3.5\" fill=\"{fill}\" stroke=\"{colour}\" \
         stroke-width=\"1.5\"><title>{}</title></circle>",
        escape(&tooltip(point, chart, run))
    );
    match &run.link {
        Some(link) => {
            let _ = writeln!(out, "<a href=\"{}\">{circle}</a>", escape(&format!("{base}{link}")));
        }
        None => {
            let _ = writeln!(out, "{circle}");
        }
    }
}

/// A point's tooltip: the run, its commit and machine, the design's figure, its receipt.
pub(super) fn tooltip(point: &Point, chart: &Chart, run: &Run) -> String {
    let meta = &run.results.meta;
    let receipt = match point.validity {
        None => "no receipt (a file from before receipts)".to_owned(),
        Some(validity) if point.reasons.is_empty() => validity.name().to_owned(),
        Some(validity) => format!("{}: {}", validity.name(), point.reasons.join("; ")),
    };
    let violated = if point.violated { "\ncorrectness violation in this scenario" } else { "" };
    format!(
        "#{} {} (commit {}, {}, {} cores)\n{}: {} {}\nreceipt: {receipt}{violated}",
        point.run + 1,
        run.folder,
        short_commit(&meta.git_commit),
        meta.cpu_model,
        meta.cores,
        point.strategy,
        chart.metric.label(),
        format_value(chart.metric.unit(), point.value),
    )
}

/// The legend on the right: each design's colour and name.
fn legend(out: &mut String, chart: &Chart) {
    let left = WIDTH - RIGHT + 10.0;
    for (row, design) in chart.designs.iter().enumerate() {
        let at = TOP + 6.0 + 13.0 * row as f64;
        let colour = colour(design);
        let _ = writeln!(
            out,
            "<line x1=\"{left}\" y1=\"{at}\" x2=\"{:.1}\" y2=\"{at}\" stroke=\"{colour}\" \
             stroke-width=\"2\"/><circle cx=\"{:.1}\" cy=\"{at}\" r=\"3\" fill=\"{colour}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#222\">{}</text>",
            left + 16.0,
            left + 8.0,
            left + 20.0,
            at + 3.5,
            escape(design)
        );
    }
}
