//! What every figure kind draws with: the frame of a figure (title and legend strip), the
//! layout of its panels, a panel's axes and mesh, and the marks the kinds share.
//!
//! A panel's axes are [`Axis`] values: linear or logarithmic, ticked where plotters
//! chooses or at given values, each with its tick labels and description. One coordinate
//! type ([`Coord`]) serves them all, so that every kind builds its panels one way.

use std::ops::Range;

use plotters::coord::cartesian::Cartesian2d;
use plotters::coord::combinators::{IntoLogRange, LogCoord};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::ComposedElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::layout::{Canvas, Categories};
use super::{FONT_FAMILY, TEXT_PX, TICK_PX, TITLE_PX};

/// A drawing area in pixels.
pub(super) type Area<DB> = DrawingArea<DB, Shift>;

/// What drawing on `DB` returns.
pub(super) type DrawResult<DB, T = ()> =
    Result<T, DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A panel's chart: both axes are [`Coord`]s.
pub(super) type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<Coord, Coord>>;

pub(super) fn text_style(px: u32) -> TextStyle<'static> {
    (FONT_FAMILY, px).into_font().color(&BLACK)
}

// A figure: its frame (title and legend) and its panels.

/// A figure of one kind: a title, a legend strip under it, and its panels laid out on the
/// rest.
pub(super) struct Plot<P> {
    pub(super) title: String,
    /// Its shape, which gives its size in pixels from its layout and categories.
    pub(super) canvas: Canvas,
    pub(super) legend: Vec<Entry>,
    pub(super) layout: Layout,
    pub(super) panels: Vec<P>,
}

/// A panel of a figure kind.
pub(super) trait Panel {
    /// Draws the panel on `area`.
    fn draw<DB: DrawingBackend>(&self, area: &Area<DB>) -> DrawResult<DB>;

    /// What it holds along a category axis: none but for bars.
    fn categories(&self) -> Categories {
        Categories::default()
    }
}

impl<P> Plot<P> {
    /// A figure of `panel` alone on the body.
    pub(super) fn single(title: String, canvas: Canvas, legend: Vec<Entry>, panel: P) -> Self {
        Self { title, canvas, legend, layout: Layout::Single, panels: vec![panel] }
    }
}

impl<P: Panel> Plot<P> {
    /// Width and height in pixels: its canvas's, for its layout and its panels' categories.
    pub(super) fn size(&self) -> (u32, u32) {
        let categories =
            self.panels.iter().map(P::categories).fold(Categories::default(), Categories::max);
        self.canvas.size(self.layout.cells(), categories)
    }

    /// Paints the whole figure on `root`.
    pub(super) fn draw<DB: DrawingBackend>(&self, root: &Area<DB>) -> DrawResult<DB> {
        let body = frame(root, &self.title, &self.legend)?;
        for (panel, area) in self.panels.iter().zip(self.layout.areas(&body)) {
            panel.draw(&area)?;
        }
        Ok(())
    }
}

/// How a legend entry is marked.
#[derive(Clone, Copy, Debug)]
pub(super) enum Mark {
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
pub(super) struct Entry {
    label: String,
    colour: RGBColor,
    mark: Mark,
}

impl Entry {
    pub(super) fn new(label: impl Into<String>, colour: RGBColor, mark: Mark) -> Self {
        Self { label: label.into(), colour, mark }
    }
}

/// One entry per strategy, in its colour, marked `mark`.
pub(super) fn strategy_entries(strategies: &[&str], mark: Mark) -> Vec<Entry> {
    strategies.iter().map(|s| Entry::new(*s, super::strategy_colour(s), mark)).collect()
}

/// Fills `root` white, draws the title and a legend strip under it; returns the area left
/// for the panels.
fn frame<DB: DrawingBackend>(
    root: &Area<DB>,
    title: &str,
    entries: &[Entry],
) -> DrawResult<DB, Area<DB>> {
    root.fill(&WHITE)?;
    let body = root.margin(10, 0, 0, 0).titled(title, text_style(TITLE_PX))?;
    legend(&body, entries)
}

/// Draws a legend strip of `entries` across the top of `body`; returns the area under it.
/// The legend wraps onto as many rows as it needs.
pub(super) fn legend<DB: DrawingBackend>(
    body: &Area<DB>,
    entries: &[Entry],
) -> DrawResult<DB, Area<DB>> {
    let (width, _) = body.dim_in_pixel();
    let style = text_style(TEXT_PX);
    let (swatch, row_height, margin) = (28_i32, TEXT_PX as i32 + 10, 20_i32);

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
        swatch_of(&legend, entry, (x, middle), swatch)?;
        let at = (x + swatch + 6, middle - TEXT_PX as i32 / 2 - 1);
        legend.draw(&Text::new(entry.label.clone(), at, style.clone()))?;
    }
    Ok(plot)
}

/// The swatch of `entry`, `width` pixels wide from `x`, centred on `middle`.
fn swatch_of<DB: DrawingBackend>(
    legend: &Area<DB>,
    entry: &Entry,
    (x, middle): (i32, i32),
    width: i32,
) -> DrawResult<DB> {
    let colour = entry.colour;
    let square = [(x + 4, middle - 7), (x + width - 4, middle + 7)];
    match entry.mark {
        Mark::Bar => legend.draw(&Rectangle::new(square, colour.filled())),
        Mark::PaleBar => {
            legend.draw(&Rectangle::new(square, pale(colour).filled()))?;
            legend.draw(&Rectangle::new(square, colour.stroke_width(2)))
        }
        Mark::Line => {
            let line = vec![(x, middle), (x + width, middle)];
            legend.draw(&PathElement::new(line, colour.stroke_width(3)))?;
            legend.draw(&Circle::new((x + width / 2, middle), 4, colour.filled()))
        }
        Mark::Dashed => (0..3).try_for_each(|dash| {
            let start = x + dash * 10;
            let line = vec![(start, middle), (start + 6, middle)];
            legend.draw(&PathElement::new(line, colour.stroke_width(3)))
        }),
        Mark::Diamond => legend.draw(&diamond((x + width / 2, middle), 6, colour, String::new())),
        Mark::Outline => legend.draw(&Rectangle::new(square, colour.stroke_width(2))),
    }
}

// Marks shared by the kinds.

/// A pixel-space outline and a text label, anchored at a data point.
type LabelledMarker<C, DB> =
    ComposedElement<C, DB, PathElement<(i32, i32)>, Text<'static, (i32, i32), String>>;

/// An open diamond marker centred on `centre`, `radius` pixels out, with `label` to its
/// upper right.
pub(super) fn diamond<C, DB: DrawingBackend>(
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

/// A labelled open diamond at a data point: a published figure beside the measured ones.
#[derive(Clone, Debug)]
pub(super) struct Marker {
    pub(super) at: (f64, f64),
    pub(super) label: String,
}

/// How far a [`Marker`]'s diamond reaches from its centre, in pixels.
pub(super) const MARKER_PX: i32 = 7;

/// A lighter tint of `colour`, for the second bar of a pair.
pub(super) fn pale(colour: RGBColor) -> RGBColor {
    let mix = |c: u8| ((u16::from(c) + 2 * 255) / 3) as u8;
    RGBColor(mix(colour.0), mix(colour.1), mix(colour.2))
}

/// A text style for a label beside a point: starting at it, centred on it vertically.
pub(super) fn beside(px: u32) -> TextStyle<'static> {
    text_style(px).pos(Pos::new(HPos::Left, VPos::Center))
}

// The layout of the panels.

/// How a figure's body is shared among its panels, in panel order.
#[derive(Clone, Debug)]
pub(super) enum Layout {
    /// One panel on the whole body.
    Single,
    /// A grid of (rows, columns) equal panels, row by row, inset from the body's edges.
    Grid(usize, usize),
    /// Panels top to bottom, each its weight's share of the body's height (rounded down).
    Rows(Vec<u32>),
    /// Two panels side by side, the first this percentage of the body's width.
    Beside(u32),
    /// Two panels one above the other, the first this percentage of the body's height.
    Above(u32),
}

impl Layout {
    /// The cells it takes, (rows, columns): a row of weight `w` is `w` cells high, two
    /// panels beside or above each other share one.
    pub(super) fn cells(&self) -> (u32, u32) {
        match self {
            Self::Single | Self::Beside(_) | Self::Above(_) => (1, 1),
            Self::Grid(rows, columns) => (*rows as u32, *columns as u32),
            Self::Rows(weights) => (weights.iter().sum(), 1),
        }
    }

    /// The panels' areas of `body`.
    pub(super) fn areas<DB: DrawingBackend>(&self, body: &Area<DB>) -> Vec<Area<DB>> {
        let (width, height) = body.dim_in_pixel();
        match self {
            Self::Single => vec![body.clone()],
            Self::Grid(rows, columns) => body.margin(0, 10, 10, 10).split_evenly((*rows, *columns)),
            Self::Rows(weights) => {
                let total = weights.iter().sum::<u32>().max(1);
                let mut rest = body.clone();
                let mut areas = Vec::new();
                for weight in weights {
                    let (area, below) = rest.split_vertically(weight * height / total);
                    areas.push(area);
                    rest = below;
                }
                areas
            }
            Self::Beside(percent) => {
                let (left, right) = body.split_horizontally(width * percent / 100);
                vec![left, right]
            }
            Self::Above(percent) => {
                let (top, bottom) = body.split_vertically(height * percent / 100);
                vec![top, bottom]
            }
        }
    }
}

/// A grid of `count` panels, as square as fits `max_columns`: (rows, columns).
pub(super) fn grid(count: usize, max_columns: usize) -> (usize, usize) {
    let columns = count.clamp(1, max_columns);
    (count.div_ceil(columns), columns)
}

// A panel: its chrome and its axes.

/// A panel's chrome: its caption, the room around it and for the tick labels, its text.
#[derive(Clone, Debug)]
pub(super) struct Frame {
    /// The caption over the panel, if any.
    pub(super) caption: Option<String>,
    /// The caption's size in pixels and its colour.
    pub(super) caption_style: (u32, RGBColor),
    /// Pixels of room around the panel.
    pub(super) margin: u32,
    /// The height of the x tick label area and the width of the y one, in pixels.
    pub(super) label_areas: (u32, u32),
    /// The size of the tick labels and of the axis descriptions, in pixels.
    pub(super) text_px: (u32, u32),
    /// How many y ticks plotters aims for, where not its default.
    pub(super) y_ticks: Option<usize>,
}

impl Frame {
    /// No caption, `margin` pixels of room, `label_areas` for the tick labels.
    pub(super) fn new(margin: u32, label_areas: (u32, u32)) -> Self {
        let (caption, caption_style) = (None, (TEXT_PX, BLACK));
        Self {
            caption,
            caption_style,
            margin,
            label_areas,
            text_px: (TICK_PX, TEXT_PX),
            y_ticks: None,
        }
    }

    /// The frame with `caption` over the panel.
    pub(super) fn caption(self, caption: impl Into<String>) -> Self {
        Self { caption: Some(caption.into()), ..self }
    }
}

impl Default for Frame {
    fn default() -> Self {
        Self::new(14, (50, 70))
    }
}

/// A tick label.
type Label = Box<dyn Fn(&f64) -> String>;

/// One axis of a panel: linear or logarithmic, ticked where plotters chooses or at given
/// values.
pub(super) struct Axis {
    range: Range<f64>,
    log: bool,
    ticks: Option<Vec<f64>>,
    label: Label,
    desc: Option<String>,
}

impl Default for Axis {
    fn default() -> Self {
        Self::linear(0.0..1.0, |_| String::new())
    }
}

impl Axis {
    /// A linear axis over `range`, ticks labelled by `label`.
    pub(super) fn linear(range: Range<f64>, label: impl Fn(&f64) -> String + 'static) -> Self {
        Self { range, log: false, ticks: None, label: Box::new(label), desc: None }
    }

    /// A logarithmic axis over `range`, ticks labelled by `label`.
    pub(super) fn log(range: Range<f64>, label: impl Fn(&f64) -> String + 'static) -> Self {
        Self { log: true, ..Self::linear(range, label) }
    }

    /// A linear axis over `range` ticked exactly at the (value, label) of `ticks`.
    pub(super) fn ticked(range: Range<f64>, ticks: Vec<(f64, String)>) -> Self {
        let (at, labels): (Vec<f64>, Vec<String>) = ticks.into_iter().unzip();
        let positions = at.clone();
        let label = move |x: &f64| match positions.iter().position(|tick| tick == x) {
            Some(index) => labels[index].clone(),
            None => String::new(),
        };
        Self::linear(range, label).at(at)
    }

    /// One category per label from the axis' start: ticks at the centres of `0..count`.
    pub(super) fn categories(labels: impl IntoIterator<Item = String>) -> Self {
        let ticks: Vec<(f64, String)> =
            labels.into_iter().enumerate().map(|(i, label)| (i as f64 + 0.5, label)).collect();
        Self::ticked(0.0..ticks.len() as f64, ticks)
    }

    /// The axis ticked at `ticks` only.
    pub(super) fn at(self, ticks: Vec<f64>) -> Self {
        Self { ticks: Some(ticks), ..self }
    }

    /// The axis described as `desc`.
    pub(super) fn desc(self, desc: impl Into<String>) -> Self {
        Self { desc: Some(desc.into()), ..self }
    }

    pub(super) fn range(&self) -> Range<f64> {
        self.range.clone()
    }

    /// The value `share` of the axis' span past `from`: a share of its length on a linear
    /// axis, of its decades on a logarithmic one.
    pub(super) fn along(&self, from: f64, share: f64) -> f64 {
        let Range { start, end } = self.range;
        if self.log {
            from * (end / start).powf(share)
        } else {
            from + (end - start) * share
        }
    }

    pub(super) fn is_log(&self) -> bool {
        self.log
    }

    fn coord(&self) -> Coord {
        let map = if self.log {
            Map::Log(self.range.clone().log_scale().into())
        } else {
            Map::Linear(self.range.clone().into())
        };
        Coord { map, ticks: self.ticks.clone() }
    }
}

/// The plotters coordinate of an [`Axis`].
pub(super) struct Coord {
    map: Map,
    ticks: Option<Vec<f64>>,
}

enum Map {
    Linear(RangedCoordf64),
    Log(LogCoord<f64>),
}

impl Ranged for Coord {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        match &self.map {
            Map::Linear(coord) => coord.map(value, limit),
            Map::Log(coord) => coord.map(value, limit),
        }
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        match (&self.ticks, &self.map) {
            (Some(_), _) if hint.weight().allow_light_points() => Vec::new(),
            (Some(ticks), _) => ticks.clone(),
            (None, Map::Linear(coord)) => coord.key_points(hint),
            (None, Map::Log(coord)) => coord.key_points(hint),
        }
    }

    fn range(&self) -> Range<f64> {
        match &self.map {
            Map::Linear(coord) => coord.range(),
            Map::Log(coord) => coord.range(),
        }
    }
}

/// Builds a panel with axes `x` and `y` on `area`, without its mesh.
pub(super) fn build<'a, DB: DrawingBackend>(
    area: &'a Area<DB>,
    frame: &Frame,
    x: &Axis,
    y: &Axis,
) -> DrawResult<DB, Chart<'a, DB>> {
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(frame.margin)
        .x_label_area_size(frame.label_areas.0)
        .y_label_area_size(frame.label_areas.1);
    if let Some(caption) = &frame.caption {
        let (px, colour) = &frame.caption_style;
        builder.caption(caption, text_style(*px).color(colour));
    }
    builder.build_cartesian_2d(x.coord(), y.coord())
}

/// Draws the mesh of `chart`: grid lines across the x axis where `lines.0`, across the y
/// axis where `lines.1`; the axes' tick labels and descriptions.
pub(super) fn mesh<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    frame: &Frame,
    (x, y): (&Axis, &Axis),
    lines: (bool, bool),
) -> DrawResult<DB> {
    let mut mesh = chart.configure_mesh();
    if !lines.0 {
        mesh.disable_x_mesh();
    }
    if !lines.1 {
        mesh.disable_y_mesh();
    }
    if let Some(desc) = &x.desc {
        mesh.x_desc(desc);
    }
    if let Some(desc) = &y.desc {
        mesh.y_desc(desc);
    }
    if let Some(ticks) = frame.y_ticks {
        mesh.y_labels(ticks);
    }
    mesh.x_label_formatter(&*x.label)
        .y_label_formatter(&*y.label)
        .label_style(text_style(frame.text_px.0))
        .axis_desc_style(text_style(frame.text_px.1))
        .draw()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_fit_their_panels() {
        assert_eq!(grid(1, 4), (1, 1));
        assert_eq!(grid(4, 2), (2, 2));
        assert_eq!(grid(5, 3), (2, 3));
        assert_eq!(grid(8, 4), (2, 4));
    }

    #[test]
    fn categories_are_ticked_at_their_centres() {
        let axis = Axis::categories(vec!["a".into(), "b".into()]);
        assert_eq!(axis.range(), 0.0..2.0);
        assert_eq!(axis.ticks, Some(vec![0.5, 1.5]));
        assert_eq!((axis.label)(&1.5), "b");
        assert_eq!((axis.label)(&1.0), "", "only the ticks have labels");
    }
}
