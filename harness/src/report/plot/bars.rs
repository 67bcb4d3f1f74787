//! Bars by design: values in groups along a category axis (a group per strategy, per
//! cell or per parameter), with whiskers, value labels, reference diamonds and a dashed
//! level where a chart has them.
//!
//! A group's bars sit in slots across its category: slot `s` of category `c` starts at
//! `c + pad + s * step` and is `width` wide. Vertical bars rise from the value axis' start;
//! horizontal ones (a row per category, the first on top) reach right from it. A zero on a
//! logarithmic axis has no bar, only its label.

use std::iter::once;

use plotters::prelude::*;

use super::layout::Categories;
use super::panel::{
    beside, build, diamond, legend, mesh, pale, text_style, Area, Axis, Chart, DrawResult, Entry,
    Frame, Panel, Plot, MARKER_PX,
};
use super::TICK_PX;
use crate::results::Validity;

/// A figure of bar panels.
pub(super) type Bars = Plot<BarPanel>;

/// One panel of bars.
#[derive(Default)]
pub(super) struct BarPanel {
    pub(super) frame: Frame,
    /// A legend strip over this panel alone.
    pub(super) legend: Vec<Entry>,
    /// The label of each category, in order: left to right, or top to bottom.
    pub(super) categories: Vec<String>,
    /// What the categories are, under (or beside) their labels.
    pub(super) category_desc: Option<&'static str>,
    /// The value axis.
    pub(super) values: Axis,
    /// Rows of bars reaching right instead of columns rising.
    pub(super) horizontal: bool,
    pub(super) slots: Slots,
    /// How the bars' value labels sit.
    pub(super) labels: LabelStyle,
    /// One group per category, in order.
    pub(super) groups: Vec<Group>,
    /// A dashed black level across the panel: (value, line width).
    pub(super) level: Option<(f64, u32)>,
    /// Whether a zero has no bar on a linear axis too, only its label.
    pub(super) bare_zeros: bool,
}

/// Where the bars of a group sit across their category.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Slots {
    /// From the category's edge to the first slot.
    pub(super) pad: f64,
    /// From one slot to the next.
    pub(super) step: f64,
    /// A bar's width.
    pub(super) width: f64,
}

impl Slots {
    /// `count` slots spread over `span` of the category, centred, each bar `fill` of its
    /// slot.
    pub(super) fn spread(count: usize, span: f64, fill: f64) -> Self {
        let step = span / count.max(1) as f64;
        Self { pad: (1.0 - span) / 2.0, step, width: step * fill }
    }
}

/// How value labels sit on their bars.
#[derive(Clone, Copy, Debug)]
pub(super) enum Labels {
    /// Above the bar, from its left edge moved right by this much of a category.
    Above(f64),
    /// Turned to read upwards, starting above the bar's centre.
    Upright,
    /// Beside the end of a horizontal bar.
    Beside,
}

/// How far above (or beyond) its bar a label sits, and its size.
#[derive(Clone, Copy, Debug)]
pub(super) struct LabelStyle {
    pub(super) place: Labels,
    /// Past the bar's value: on a log axis a factor of it, on a linear one a share of the
    /// axis.
    pub(super) lift: f64,
    pub(super) px: u32,
}

impl Default for LabelStyle {
    fn default() -> Self {
        Self { place: Labels::Above(0.0), lift: 0.0, px: TICK_PX }
    }
}

/// The bars of one category and the diamonds over it.
#[derive(Debug, Default)]
pub(super) struct Group {
    pub(super) bars: Vec<Bar>,
    /// Reference points over the category's centre: (value, label).
    pub(super) marks: Vec<(f64, String)>,
}

impl FromIterator<Bar> for Group {
    fn from_iter<I: IntoIterator<Item = Bar>>(bars: I) -> Self {
        Self { bars: bars.into_iter().collect(), marks: Vec::new() }
    }
}

/// How a bar is filled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) enum Fill {
    /// Its colour.
    #[default]
    Solid,
    /// Its colour, edged in it.
    Edged,
    /// A pale tint edged in its colour.
    Pale,
    /// White, outlined in its colour.
    Outline,
}

impl Fill {
    /// A cell's bar by its receipt: solid, pale where disturbed, hollow where void.
    pub(super) fn of(validity: Option<Validity>) -> Self {
        match validity {
            Some(Validity::Void) => Self::Outline,
            Some(Validity::Disturbed) => Self::Pale,
            _ => Self::Solid,
        }
    }
}

/// One bar.
#[derive(Clone, Debug)]
pub(super) struct Bar {
    pub(super) slot: usize,
    /// Its value; `None` for a value the design cannot measure, marked n/a.
    pub(super) value: Option<f64>,
    pub(super) colour: RGBColor,
    pub(super) fill: Fill,
    /// The (lowest, highest) of its repetitions, drawn as a whisker.
    pub(super) whisker: Option<(f64, f64)>,
    pub(super) label: Option<String>,
}

impl Bar {
    pub(super) fn new(slot: usize, value: f64, colour: RGBColor) -> Self {
        let value = Some(value);
        Self { slot, value, colour, fill: Fill::Solid, whisker: None, label: None }
    }

    pub(super) fn fill(self, fill: Fill) -> Self {
        Self { fill, ..self }
    }

    pub(super) fn label(self, label: impl Into<String>) -> Self {
        Self { label: Some(label.into()), ..self }
    }
}

impl Panel for BarPanel {
    fn categories(&self) -> Categories {
        let slots = self.groups.iter().flat_map(|group| &group.bars).map(|bar| bar.slot + 1).max();
        Categories {
            count: self.categories.len() as u32,
            slots: slots.unwrap_or(0) as u32,
            down: self.horizontal,
        }
    }

    fn draw<DB: DrawingBackend>(&self, area: &Area<DB>) -> DrawResult<DB> {
        let area = if self.legend.is_empty() { area.clone() } else { legend(area, &self.legend)? };
        let labels = self.categories.iter().cloned();
        let mut categories =
            if self.horizontal { Axis::categories(labels.rev()) } else { Axis::categories(labels) };
        if let Some(desc) = self.category_desc {
            categories = categories.desc(desc);
        }
        let axes =
            if self.horizontal { (&self.values, &categories) } else { (&categories, &self.values) };
        let mut chart = build(&area, &self.frame, axes.0, axes.1)?;
        mesh(&mut chart, &self.frame, axes, (self.horizontal, !self.horizontal))?;
        for (index, group) in self.groups.iter().enumerate() {
            for bar in &group.bars {
                self.draw_bar(&mut chart, index, bar)?;
            }
            for (value, label) in &group.marks {
                let at = self.point(index as f64 + 0.5, *value);
                chart.draw_series(once(diamond(at, MARKER_PX, BLACK, label.clone())))?;
            }
        }
        if let Some((value, width)) = self.level {
            let ends = [(0.0, value), (self.categories.len() as f64, value)];
            chart.draw_series(DashedLineSeries::new(ends, 8, 5, BLACK.stroke_width(width)))?;
        }
        Ok(())
    }
}

impl BarPanel {
    /// A point at `along` the category axis and `value` on the value axis.
    fn point(&self, along: f64, value: f64) -> (f64, f64) {
        if self.horizontal {
            (value, along)
        } else {
            (along, value)
        }
    }

    /// Where slot `slot` of category `index` starts and ends along the category axis.
    fn span(&self, index: usize, slot: usize) -> (f64, f64) {
        let Slots { pad, step, width } = self.slots;
        if self.horizontal {
            let top = (self.categories.len() - index) as f64 - pad - slot as f64 * step;
            (top - width, top)
        } else {
            let left = index as f64 + pad + slot as f64 * step;
            (left, left + width)
        }
    }

    fn draw_bar<DB: DrawingBackend>(
        &self,
        chart: &mut Chart<'_, DB>,
        index: usize,
        bar: &Bar,
    ) -> DrawResult<DB> {
        let (low, high) = self.span(index, bar.slot);
        let range = self.values.range();
        let Some(value) = bar.value else {
            let style = text_style(TICK_PX - 2).transform(FontTransform::Rotate270);
            let at = self.point(low, range.end * 0.03);
            chart.draw_series(once(Text::new("n/a", at, style)))?;
            return Ok(());
        };
        let bare = value <= 0.0 && (self.bare_zeros || self.values.is_log());
        if !bare {
            let corners = [self.point(low, range.start), self.point(high, value)];
            chart.draw_series(rectangles(corners, bar.colour, bar.fill))?;
        }
        if let Some((min, max)) = bar.whisker {
            let (centre, cap) = (low + self.slots.width / 2.0, self.slots.step * 0.25);
            let whisker = [
                [(centre, min), (centre, max)],
                [(centre - cap, min), (centre + cap, min)],
                [(centre - cap, max), (centre + cap, max)],
            ];
            let line = |ends: [(f64, f64); 2]| ends.map(|(along, value)| self.point(along, value));
            let style = BLACK.stroke_width(1);
            chart.draw_series(whisker.map(|ends| PathElement::new(line(ends), style)))?;
        }
        match &bar.label {
            Some(label) => self.draw_label(chart, (low, high), value, label.clone()),
            None => Ok(()),
        }
    }

    fn draw_label<DB: DrawingBackend>(
        &self,
        chart: &mut Chart<'_, DB>,
        (low, high): (f64, f64),
        value: f64,
        label: String,
    ) -> DrawResult<DB> {
        let LabelStyle { place, lift, px } = self.labels;
        let range = self.values.range();
        let lifted = if self.values.is_log() {
            value.max(range.start) * lift
        } else {
            value + (range.end - range.start) * lift
        };
        let text = match place {
            Labels::Above(offset) => Text::new(label, (low + offset, lifted), text_style(px)),
            Labels::Upright => {
                let style = beside(px).transform(FontTransform::Rotate270);
                Text::new(label, (low + self.slots.width / 2.0, lifted), style)
            }
            Labels::Beside => Text::new(label, (lifted, (low + high) / 2.0), beside(px)),
        };
        chart.draw_series(once(text))?;
        Ok(())
    }
}

/// The rectangles of a bar between `corners`, filled by `fill`.
fn rectangles(
    corners: [(f64, f64); 2],
    colour: RGBColor,
    fill: Fill,
) -> Vec<Rectangle<(f64, f64)>> {
    let edge = |width| Rectangle::new(corners, colour.stroke_width(width));
    match fill {
        Fill::Solid => vec![Rectangle::new(corners, colour.filled())],
        Fill::Edged => vec![Rectangle::new(corners, colour.filled()), edge(1)],
        Fill::Pale => vec![Rectangle::new(corners, pale(colour).filled()), edge(1)],
        Fill::Outline => vec![Rectangle::new(corners, WHITE.filled()), edge(2)],
    }
}
