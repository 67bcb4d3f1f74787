//! Charts of a results file, PNG and SVG, one file per kind of chart. Reads results only.
//!
//! Each chart module (a row of the `charts!` list) turns the results, read through the
//! [`View`], into one or more [`Figure`]s; [`render_all`] draws every figure twice, on an
//! SVG backend and on an RGB bitmap (encoded to PNG here), so both files show the same
//! picture. Nothing touches the disk until [`write_all`].
//!
//! Text is drawn with the bundled DejaVu Sans (`harness/assets/`), registered with plotters
//! as `sans-serif` from `include_bytes!`: charts render the same on a bare machine, with no
//! system font and no fontconfig.
//!
//! Every chart shares one look: a title, a legend strip between the title and the plot
//! (so a legend never covers data), and one fixed colour per strategy ([`strategy_colour`]).

// The figure kinds, the panels every chart shares and the layout that sizes them.
mod bars;
mod layout;
mod lines;
mod panel;
mod timeline;

// The charts, one module each; `charts!` below puts them in presentation order.
mod breakdown;
mod cold_command;
mod head_of_line;
mod hot_backlog;
mod key_sweep;
mod open_loop;
mod pipeline;
mod price;
mod spectrum;
mod sweep;
mod threads;
mod throughput;

/// The charts, in presentation order: one row per chart module. A module's `plan` reads
/// the [`View`] and gives one chart, several, or none ([`Plans`]); adding a chart is a
/// module with a `plan`, its `mod` line above and a row here (`harness/tests/rules.rs`
/// holds every chart module to both).
macro_rules! charts {
    ($($module:ident;)*) => {
        /// Every chart the view's results allow, planned, in presentation order.
        fn plan_all(view: &View<'_>) -> Vec<Planned> {
            let mut plans = Vec::new();
            $($module::plan(view).add_to(&mut plans);)*
            plans
        }
    };
}

charts! {
    throughput;
    sweep;
    spectrum;
    open_loop;
    threads;
    head_of_line;
    hot_backlog;
    key_sweep;
    cold_command;
    breakdown;
    pipeline;
    price;
}

/// What a chart module's `plan` gives: one chart, several, or none.
trait Plans {
    /// Appends them to `plans`.
    fn add_to(self, plans: &mut Vec<Planned>);
}

impl Plans for Planned {
    fn add_to(self, plans: &mut Vec<Planned>) {
        plans.push(self);
    }
}

impl<T: IntoIterator<Item = Planned>> Plans for T {
    fn add_to(self, plans: &mut Vec<Planned>) {
        plans.extend(self);
    }
}
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::prelude::*;

use crate::report::view::{Rows, View};
use crate::results::fs::write_atomically;
use crate::results::{Results, RunResult};
use crate::workload::scenario::Charts as ShownIn;
use crate::workload::ScenarioId;

use panel::{Panel, Plot};

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

/// The error of a failed write to `path`.
pub(super) fn failed(path: &Path) -> impl FnOnce(std::io::Error) -> PlotError {
    let path = path.display().to_string();
    move |source| PlotError::Write { path, source }
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
        let (spread, switches) = (&mut run.throughput_per_s, &mut run.ctx_switches);
        [&mut spread.median, &mut spread.min, &mut spread.max, &mut run.cpu_s, &mut run.ideal_s]
            .into_iter()
            .chain([&mut run.efficiency, &mut run.elapsed_s])
            .chain([&mut switches.voluntary, &mut switches.involuntary])
            .chain([&mut run.offered_per_s, &mut run.achieved_per_s].into_iter().flatten())
            .for_each(clamp);
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
        if let Some(calls) = &mut run.transport_calls {
            clamp(&mut calls.commit_call.p50_us);
            clamp(&mut calls.commit_call.p99_us);
        }
    }
    results
}

/// Draws every chart the results allow.
pub fn render_all(results: &Results) -> Result<Charts, PlotError> {
    register_font()?;
    let results = &drawable(results);
    let view = &View::of(results);
    let mut charts = Charts::default();
    for plan in plan_all(view) {
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

/// The line a chart leaves in the skipped list, and why.
fn skipped(chart: &str, why: &str) -> Planned {
    Planned::Skip(format!("{chart}: skipped, {why}"))
}

/// The scenarios whose specs put them in a chart (`shows` reads a spec's `charts`), in
/// presentation order: the ones a chart of chosen scenarios draws.
fn charted(shows: fn(&ShownIn) -> bool) -> impl Iterator<Item = ScenarioId> {
    ScenarioId::ALL.iter().copied().filter(move |scenario| shows(&scenario.spec().charts))
}

/// The line a chart leaves in the skipped list where the results hold no `scenario` cell.
fn absent(chart: &str, scenario: ScenarioId) -> Planned {
    skipped(chart, &format!("no {scenario} runs in these results"))
}

/// Draws `plot` as SVG and PNG.
fn render(
    name: impl Into<String>,
    title: impl Into<String>,
    note: String,
    plot: &Plot<impl Panel>,
) -> Planned {
    Planned::Draw(render_chart(name.into(), title.into(), note, plot))
}

fn render_chart(
    name: String,
    title: String,
    note: String,
    plot: &Plot<impl Panel>,
) -> Result<Chart, PlotError> {
    let (width, height) = plot.size();
    let draw_failed = |reason: String| PlotError::Draw { chart: name.clone(), reason };
    let mut svg = String::new();
    paint(plot, SVGBackend::with_string(&mut svg, (width, height))).map_err(draw_failed)?;
    let mut pixels = vec![0_u8; width as usize * height as usize * 3];
    paint(plot, BitMapBackend::with_buffer(&mut pixels, (width, height))).map_err(draw_failed)?;
    let png = encode_png(&pixels, width, height)
        .map_err(|error| PlotError::Encode { chart: name.clone(), reason: error.to_string() })?;
    Ok(Chart { name, title, note, svg, png })
}

/// Paints `plot` on `backend` and presents it; why not, where it fails.
fn paint<DB: DrawingBackend>(plot: &Plot<impl Panel>, backend: DB) -> Result<(), String> {
    let root = backend.into_drawing_area();
    plot.draw(&root).map_err(|error| error.to_string())?;
    root.present().map_err(|error| error.to_string())
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

/// The distinct strategies of `rows`, known ones in [`strategies::StrategyId::ALL`] order, then any
/// others in file order.
fn strategies<'a>(rows: &[&'a RunResult]) -> Vec<&'a str> {
    Rows::new(rows.iter().copied()).strategies()
}

/// The strategies as owned labels.
fn names(strategies: &[&str]) -> Vec<String> {
    strategies.iter().map(|strategy| (*strategy).to_owned()).collect()
}

/// The largest value a chart axis spans: far above any measurement, yet with room to pad
/// and to take logarithms without overflow. Larger values (a corrupt or hand-edited
/// results file) are drawn at this value instead of sending the axis to infinity, where
/// tick generation never ends.
const AXIS_LIMIT: f64 = 1e100;

/// The number a parameter's part gives (`20` of `keys=20`), if it is a usable one on an axis.
fn axis_value(text: &str) -> Option<f64> {
    text.parse::<f64>().ok().filter(|value| value.is_finite() && value.abs() <= AXIS_LIMIT)
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

/// A count as a tick label: `16`, `1024`, `10k`.
fn count_label(value: u64) -> String {
    if value >= 1_000 && value.is_multiple_of(1_000) {
        format!("{}k", value / 1_000)
    } else {
        value.to_string()
    }
}

/// Tick label of a nanosecond log axis.
fn ns_label(value: &f64) -> String {
    crate::report::format::format_ns(*value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strategies::StrategyId;

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
    fn counts_read_short() {
        assert_eq!(count_label(10_000), "10k");
        assert_eq!(count_label(1_024), "1024");
    }

    #[test]
    fn params_give_their_values() {
        assert_eq!(axis_value("241"), Some(241.0));
        assert_eq!(axis_value(""), None);
        assert_eq!(axis_value("inf"), None);
        assert_eq!(axis_value("1e308"), None);
        assert_eq!(axis_value("NaN"), None);
    }
}
