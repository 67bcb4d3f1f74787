//! Charts of a results file, PNG and SVG, one file per kind of chart. Reads results only.
//!
//! Each chart module turns [`Results`] into one or more [`Figure`]s; [`render_all`] draws
//! every figure twice, on an SVG backend and on an RGB bitmap (encoded to PNG here), so
//! both files show the same picture. Nothing touches the disk until [`write_all`].
//!
//! Text is drawn with the bundled DejaVu Sans (`harness/assets/`), registered with plotters
//! as `sans-serif` from `include_bytes!`: charts render the same on a bare machine, with no
//! system font and no fontconfig.
//!
//! Every chart shares one look: a title, a legend strip between the title and the plot
//! (so a legend never covers data), and one fixed colour per strategy ([`strategy_colour`]).

mod breakdown;
mod cold_command;
mod head_of_line;
mod hot_backlog;
mod key_sweep;
mod open_loop;
mod pipeline;
mod spectrum;
mod sweep;
mod threads;
mod throughput;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::ComposedElement;
use plotters::prelude::*;
use strategies::StrategyId;

use crate::results::fs::write_atomically;
use crate::results::{Results, RunResult};
use crate::workload::ScenarioId;

/// DejaVu Sans (Bitstream Vera licence, DejaVu changes public domain): see
/// `harness/assets/DejaVuSans.LICENSE`.
pub const FONT_TTF: &[u8] = include_bytes!("../../../assets/DejaVuSans.ttf");

/// The family name the font is registered under; plotters' default text family.
const FONT_FAMILY: &str = "sans-serif";

/// Chart title size in pixels.
const TITLE_PX: u32 = 26;
/// Legend, panel caption and axis text size in pixels.
const TEXT_PX: u32 = 16;
/// Tick label size in pixels.
const TICK_PX: u32 = 14;

/// The colour of a strategy, the same in every chart: its descriptor's (built-in colours
/// are tableau-like and colour-blind friendly for the ones that matter most, keyed-mailbox
/// blue against group-by orange); an id this build does not know gets one derived from the
/// id, the same on every run.
pub fn strategy_colour(strategy: &str) -> RGBColor {
    let [red, green, blue] = super::descriptor(strategy).colour;
    RGBColor(red, green, blue)
}

/// One drawn chart, in both formats.
#[derive(Clone, Debug)]
pub struct Chart {
    /// File stem (`throughput`, `latency-zipf`, ...): `<name>.png` and `<name>.svg`.
    pub name: String,
    /// What the chart shows, as its heading.
    pub title: String,
    /// How to read it: what is on each axis and what to look for.
    pub note: String,
    /// The SVG document.
    pub svg: String,
    /// The PNG file.
    pub png: Vec<u8>,
}

/// Every chart of a results file, and the charts left out.
#[derive(Clone, Debug, Default)]
pub struct Charts {
    /// Drawn charts, in presentation order.
    pub charts: Vec<Chart>,
    /// One line per chart that could not be drawn from these results, and why.
    pub skipped: Vec<String>,
}

/// Why charts could not be drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The bundled font was rejected by the font loader.
    #[error("the bundled font could not be registered")]
    Font,
    /// A backend failed while drawing.
    #[error("cannot draw chart `{chart}`: {reason}")]
    Draw {
        /// The chart.
        chart: String,
        /// Why.
        reason: String,
    },
    /// The bitmap could not be encoded as PNG.
    #[error("cannot encode chart `{chart}` as PNG: {reason}")]
    Encode {
        /// The chart.
        chart: String,
        /// Why.
        reason: String,
    },
    /// A file or folder could not be written.
    #[error("cannot write {path}")]
    Write {
        /// The file or folder.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Registers the bundled font once per process.
fn register_font() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT_TTF).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}

/// `results` with every measured real number clamped into `0..=AXIS_LIMIT`: what a chart
/// can place on an axis. A results file read from disk holds no negative number
/// ([`Results::parse`] rejects one), but one built in code may; either way a chart never
/// maps a value so far off its axis that the pixel arithmetic overflows.
fn drawable(results: &Results) -> Results {
    let clamp = |value: &mut f64| {
        *value = if value.is_nan() { 0.0 } else { value.clamp(0.0, AXIS_LIMIT) };
    };
    let mut results = results.clone();
    for run in &mut results.runs {
        let spread = &mut run.throughput_per_s;
        for value in [&mut spread.median, &mut spread.min, &mut spread.max] {
            clamp(value);
        }
        for value in [&mut run.cpu_s, &mut run.ideal_s, &mut run.efficiency, &mut run.elapsed_s] {
            clamp(value);
        }
        for value in [&mut run.ctx_switches.voluntary, &mut run.ctx_switches.involuntary] {
            clamp(value);
        }
        for value in [&mut run.offered_per_s, &mut run.achieved_per_s].into_iter().flatten() {
            clamp(value);
        }
    }
    for run in &mut results.pipelines {
        for incarnation in &mut run.incarnations {
            clamp(&mut incarnation.started_at_s);
            for point in &mut incarnation.lag_timeline {
                clamp(&mut point.at_s);
            }
        }
        if let Some(retry) = &mut run.retry {
            clamp(&mut retry.bystander_latency.p99_us);
        }
        if let Some(expansion) = &mut run.expansion {
            clamp(&mut expansion.held_s);
            for bin in &mut expansion.timeline {
                clamp(&mut bin.at_s);
            }
        }
        if let Some(rebalance) = &mut run.rebalance {
            for event in &mut rebalance.events {
                clamp(&mut event.pause_s);
            }
        }
    }
    results
}

/// Draws every chart the results allow.
pub fn render_all(results: &Results) -> Result<Charts, PlotError> {
    register_font()?;
    let results = &drawable(results);
    let mut charts = Charts::default();
    let mut plans = Vec::new();
    throughput::plan(results, &mut plans);
    sweep::plan(results, &mut plans);
    spectrum::plan(results, &mut plans);
    open_loop::plan(results, &mut plans);
    threads::plan(results, &mut plans);
    head_of_line::plan(results, &mut plans);
    hot_backlog::plan(results, &mut plans);
    key_sweep::plan(results, &mut plans);
    cold_command::plan(results, &mut plans);
    breakdown::plan(results, &mut plans);
    pipeline::plan(results, &mut plans);
    for plan in plans {
        match plan {
            Planned::Draw(chart) => charts.charts.push(chart?),
            Planned::Skip(reason) => charts.skipped.push(reason),
        }
    }
    Ok(charts)
}

/// Writes `<name>.png` and `<name>.svg` of every chart into `dir` (created if needed);
/// returns the files written.
pub fn write_all(charts: &Charts, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    let failed = |path: &Path| {
        let path = path.display().to_string();
        move |source| PlotError::Write { path, source }
    };
    std::fs::create_dir_all(dir).map_err(failed(dir))?;
    let mut written = Vec::new();
    for chart in &charts.charts {
        for (extension, bytes) in [("png", chart.png.as_slice()), ("svg", chart.svg.as_bytes())] {
            let path = dir.join(format!("{}.{extension}", chart.name));
            write_atomically(&path, bytes).map_err(failed(&path))?;
            written.push(path);
        }
    }
    Ok(written)
}

/// A chart a module wants drawn, or the reason it cannot be.
enum Planned {
    Draw(Result<Chart, PlotError>),
    Skip(String),
}

/// What a chart module draws: anything that can paint itself on any plotters backend.
trait Figure {
    /// Width and height in pixels.
    fn size(&self) -> (u32, u32);

    /// Paints the whole chart, title and legend included, on `root`.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Draws `figure` as SVG and PNG.
fn render(name: String, title: String, note: String, figure: &impl Figure) -> Planned {
    Planned::Draw(render_chart(name, title, note, figure))
}

fn render_chart(
    name: String,
    title: String,
    note: String,
    figure: &impl Figure,
) -> Result<Chart, PlotError> {
    let (width, height) = figure.size();
    let draw_failed = |reason: String| PlotError::Draw { chart: name.clone(), reason };

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        figure.draw(&root).map_err(|error| draw_failed(error.to_string()))?;
        root.present().map_err(|error| draw_failed(error.to_string()))?;
    }

    let mut pixels = vec![0_u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        figure.draw(&root).map_err(|error| draw_failed(error.to_string()))?;
        root.present().map_err(|error| draw_failed(error.to_string()))?;
    }
    let png = encode_png(&pixels, width, height)
        .map_err(|error| PlotError::Encode { chart: name.clone(), reason: error.to_string() })?;
    Ok(Chart { name, title, note, svg, png })
}

fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, png::EncodingError> {
    let mut png = Vec::new();
    let mut encoder = png::Encoder::new(&mut png, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    Ok(png)
}

// Shared pieces of every chart.

/// How a legend entry is marked.
#[derive(Clone, Copy, Debug)]
enum Mark {
    /// A filled square: bars.
    Bar,
    /// A pale square with a coloured outline: the second bar of a pair.
    PaleBar,
    /// A line through a dot: one series of a line chart.
    Line,
    /// A dashed line: a bound or a reference level.
    Dashed,
    /// An open diamond: reference points.
    Diamond,
    /// A white square with a coloured outline: a third bar beside a pair.
    Outline,
}

/// One legend entry.
#[derive(Clone, Debug)]
struct Entry {
    label: String,
    colour: RGBColor,
    mark: Mark,
}

impl Entry {
    fn new(label: impl Into<String>, colour: RGBColor, mark: Mark) -> Self {
        Self { label: label.into(), colour, mark }
    }
}

/// One entry per strategy, marked `mark`.
fn strategy_entries(strategies: &[&str], mark: Mark) -> Vec<Entry> {
    strategies.iter().map(|s| Entry::new(*s, strategy_colour(s), mark)).collect()
}

fn text_style(px: u32) -> TextStyle<'static> {
    (FONT_FAMILY, px).into_font().color(&BLACK)
}

/// Fills `root` white, draws the title and a legend strip under it; returns the area left
/// for the plot. The legend wraps onto as many rows as it needs.
fn frame<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    entries: &[Entry],
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let body = root.margin(10, 0, 0, 0).titled(title, text_style(TITLE_PX))?;
    legend(&body, entries)
}

/// Draws a legend strip of `entries` across the top of `body`; returns the area under it.
/// The legend wraps onto as many rows as it needs.
fn legend<DB: DrawingBackend>(
    body: &DrawingArea<DB, Shift>,
    entries: &[Entry],
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (width, _) = body.dim_in_pixel();
    let style = text_style(TEXT_PX);
    let swatch = 28_i32;
    let row_height = TEXT_PX as i32 + 10;
    let margin = 20_i32;

    // Lay the entries out in rows before drawing, to size the strip.
    let mut placed = Vec::new();
    let (mut x, mut y) = (margin, 4_i32);
    for entry in entries {
        let (text_width, _) = body.estimate_text_size(&entry.label, &style)?;
        let entry_width = swatch + 6 + text_width as i32 + 22;
        if x + entry_width > width as i32 - margin && x > margin {
            x = margin;
            y += row_height;
        }
        placed.push((x, y, entry));
        x += entry_width;
    }
    let strip = if entries.is_empty() { 0 } else { y + row_height + 6 };
    let (legend, plot) = body.split_vertically(strip);
    for (x, y, entry) in placed {
        let middle = y + row_height / 2;
        let colour = entry.colour;
        match entry.mark {
            Mark::Bar => legend.draw(&Rectangle::new(
                [(x + 4, middle - 7), (x + swatch - 4, middle + 7)],
                colour.filled(),
            ))?,
            Mark::PaleBar => {
                legend.draw(&Rectangle::new(
                    [(x + 4, middle - 7), (x + swatch - 4, middle + 7)],
                    pale(colour).filled(),
                ))?;
                legend.draw(&Rectangle::new(
                    [(x + 4, middle - 7), (x + swatch - 4, middle + 7)],
                    colour.stroke_width(2),
                ))?;
            }
            Mark::Line => {
                legend.draw(&PathElement::new(
                    vec![(x, middle), (x + swatch, middle)],
                    colour.stroke_width(3),
                ))?;
                legend.draw(&Circle::new((x + swatch / 2, middle), 4, colour.filled()))?;
            }
            Mark::Dashed => {
                for dash in 0..3 {
                    let start = x + dash * 10;
                    legend.draw(&PathElement::new(
                        vec![(start, middle), (start + 6, middle)],
                        colour.stroke_width(3),
                    ))?;
                }
            }
            Mark::Diamond => {
                legend.draw(&diamond((x + swatch / 2, middle), 6, colour, String::new()))?
            }
            Mark::Outline => legend.draw(&Rectangle::new(
                [(x + 4, middle - 7), (x + swatch - 4, middle + 7)],
                colour.stroke_width(2),
            ))?,
        }
        legend.draw(&Text::new(
            entry.label.clone(),
            (x + swatch + 6, middle - TEXT_PX as i32 / 2 - 1),
            style.clone(),
        ))?;
    }
    Ok(plot)
}

/// A pixel-space outline and a text label, anchored at a data point.
type LabelledMarker<C, DB> =
    ComposedElement<C, DB, PathElement<(i32, i32)>, Text<'static, (i32, i32), String>>;

/// An open diamond marker centred on `centre`, `radius` pixels out, with `label` to its
/// upper right.
fn diamond<C, DB: DrawingBackend>(
    centre: C,
    radius: i32,
    colour: RGBColor,
    label: String,
) -> LabelledMarker<C, DB> {
    EmptyElement::at(centre)
        + PathElement::new(
            vec![(0, -radius), (radius, 0), (0, radius), (-radius, 0), (0, -radius)],
            colour.stroke_width(2),
        )
        + Text::new(label, (radius + 2, -radius - 16), text_style(TICK_PX))
}

/// A lighter tint of `colour`, for the second bar of a pair.
fn pale(colour: RGBColor) -> RGBColor {
    let mix = |c: u8| ((u16::from(c) + 2 * 255) / 3) as u8;
    RGBColor(mix(colour.0), mix(colour.1), mix(colour.2))
}

/// A linear axis with tick marks exactly at `ticks` (category centres, measured loads):
/// plotters' own key-point wrapper does not accept a label formatter on a plain `f64` axis.
#[derive(Clone, Debug)]
struct Ticked {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
}

/// A linear `range` ticked at `ticks` only.
fn ticked(range: std::ops::Range<f64>, ticks: Vec<f64>) -> Ticked {
    Ticked { range, ticks }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        RangedCoordf64::from(self.range.clone()).map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

/// The results of one scenario, in file order.
fn rows(results: &Results, scenario: ScenarioId) -> Vec<&RunResult> {
    results.runs.iter().filter(|run| run.scenario == scenario.as_str()).collect()
}

/// The distinct parameters of `rows`, in order of first appearance.
fn params<'a>(rows: &[&'a RunResult]) -> Vec<&'a str> {
    let mut params: Vec<&str> = Vec::new();
    for row in rows {
        if !params.contains(&row.param.as_str()) {
            params.push(&row.param);
        }
    }
    params
}

/// The distinct strategies of `rows`, known ones in [`StrategyId::ALL`] order, then any
/// others in file order.
fn strategies<'a>(rows: &[&'a RunResult]) -> Vec<&'a str> {
    let mut found: Vec<&str> = Vec::new();
    for id in StrategyId::ALL {
        if let Some(row) = rows.iter().find(|row| row.strategy == id.as_str()) {
            found.push(&row.strategy);
        }
    }
    for row in rows {
        if !found.contains(&row.strategy.as_str()) {
            found.push(&row.strategy);
        }
    }
    found
}

/// The row of (`param`, `strategy`), if measured.
fn find<'a>(rows: &[&'a RunResult], param: &str, strategy: &str) -> Option<&'a RunResult> {
    rows.iter().copied().find(|row| row.param == param && row.strategy == strategy)
}

/// The largest value a chart axis spans: far above any measurement, yet with room to pad
/// and to take logarithms without overflow. Larger values (a corrupt or hand-edited
/// results file) are drawn at this value instead of sending the axis to infinity, where
/// tick generation never ends.
const AXIS_LIMIT: f64 = 1e100;

/// The number after `=` in a parameter (`keys=20` -> 20.0), if it is a usable one.
fn param_value(param: &str) -> Option<f64> {
    param
        .split_once('=')
        .and_then(|(_, value)| value.parse::<f64>().ok())
        .filter(|value| value.is_finite() && value.abs() <= AXIS_LIMIT)
}

/// A log axis range around `values` (nanoseconds or seconds), padded a little each side,
/// never touching zero, always finite.
fn log_range(values: impl IntoIterator<Item = f64>) -> std::ops::Range<f64> {
    let (mut low, mut high) = (f64::INFINITY, 0.0_f64);
    for value in values {
        let value = if value.is_nan() { 1e-9 } else { value.clamp(1e-9, AXIS_LIMIT) };
        low = low.min(value);
        high = high.max(value);
    }
    if !low.is_finite() || high <= 0.0 {
        return 1.0..10.0;
    }
    if high / low < 10.0 {
        let middle = (high * low).sqrt();
        return middle / 4.0..middle * 4.0;
    }
    low / 1.6..high * 1.6
}

/// A nanosecond value on a log axis, clamped above zero.
fn ns(value: u64) -> f64 {
    (value as f64).max(1.0)
}

/// Tick label of a nanosecond log axis.
fn ns_label(value: &f64) -> String {
    crate::report::format::format_ns(*value)
}

/// A grid of `count` panels, as square as fits `max_columns`: (rows, columns).
fn grid(count: usize, max_columns: usize) -> (usize, usize) {
    let columns = count.clamp(1, max_columns);
    (count.div_ceil(columns), columns)
}

/// Category centres `0.5, 1.5, ...` for `count` categories on a `0..count` axis.
fn centres(count: usize) -> Vec<f64> {
    (0..count).map(|index| index as f64 + 0.5).collect()
}

/// The category index of a centre tick.
fn category(value: f64) -> usize {
    (value - 0.5).round().max(0.0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_has_its_own_colour() {
        let mut colours: Vec<(u8, u8, u8)> = StrategyId::ALL
            .iter()
            .map(|id| {
                let colour = strategy_colour(id.as_str());
                (colour.0, colour.1, colour.2)
            })
            .collect();
        assert!(!colours.contains(&(0, 0, 0)), "every known id has a palette colour");
        colours.sort_unstable();
        colours.dedup();
        assert_eq!(colours.len(), StrategyId::ALL.len());
        let unknown = strategy_colour("my-executor");
        assert_eq!(unknown, strategy_colour("my-executor"), "the same id, the same colour");
        assert!(!colours.contains(&(unknown.0, unknown.1, unknown.2)), "{unknown:?}");
    }

    #[test]
    fn log_ranges_never_touch_zero_and_cover_the_data() {
        let range = log_range([0.0, 5.0, 5_000.0]);
        assert!(range.start > 0.0 && range.end >= 5_000.0);
        let narrow = log_range([100.0, 120.0]);
        assert!(narrow.start < 100.0 && narrow.end > 120.0 && narrow.end / narrow.start >= 10.0);
        assert_eq!(log_range([]), 1.0..10.0);
        for wild in [[f64::MAX, 1.0], [f64::INFINITY, f64::NAN], [-5.0, 1e300]] {
            let range = log_range(wild);
            assert!(range.start > 0.0 && range.end.is_finite() && range.start < range.end);
        }
    }

    #[test]
    fn grids_fit_their_panels() {
        assert_eq!(grid(1, 4), (1, 1));
        assert_eq!(grid(4, 2), (2, 2));
        assert_eq!(grid(5, 3), (2, 3));
        assert_eq!(grid(8, 4), (2, 4));
        assert_eq!(category(2.5), 2);
        assert_eq!(param_value("burst=241"), Some(241.0));
        assert_eq!(param_value(""), None);
        assert_eq!(param_value("keys=inf"), None);
        assert_eq!(param_value("keys=1e308"), None);
        assert_eq!(param_value("load=NaN"), None);
    }
}
