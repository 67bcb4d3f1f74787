//! Lines over a log x: a series per design across a setting that grows by factors (keys,
//! workers, messages per turn, the percentiles' rarity) or across loads, each a line
//! through dots, with whiskers where repetitions spread, dashed references (an ideal, a
//! floor, a cliff), a shaded region and labelled diamonds where a chart has them.

use std::iter::once;

use plotters::prelude::*;

use super::panel::{
    build, diamond, mesh, text_style, Area, Axis, DrawResult, Frame, Marker, Panel, Plot, MARKER_PX,
};
use super::TICK_PX;

/// The fill of a shaded region.
pub(super) const SHADE: RGBColor = RGBColor(222, 222, 222);

/// A figure of line panels.
pub(super) type Lines = Plot<LinePanel>;

/// One panel of lines.
#[derive(Default)]
pub(super) struct LinePanel {
    pub(super) frame: Frame,
    pub(super) x: Axis,
    pub(super) y: Axis,
    /// A grey region from this x to the axis' end, under the mesh, and its label.
    pub(super) shade: Option<(f64, &'static str)>,
    pub(super) references: Vec<Reference>,
    pub(super) series: Vec<Series>,
    pub(super) marks: Vec<Marker>,
    /// The width of the lines and the radius of their dots in pixels, where not 2 and 4.
    pub(super) pen: Option<(u32, u32)>,
}

/// A dashed reference line, cut where it leaves the top of the panel.
#[derive(Clone, Debug)]
pub(super) struct Reference {
    pub(super) points: Vec<(f64, f64)>,
    pub(super) colour: RGBColor,
    /// Dash and gap, in pixels.
    pub(super) dash: (u32, u32),
}

impl Reference {
    /// A black reference through `points`.
    pub(super) fn new(points: Vec<(f64, f64)>) -> Self {
        Self { points, colour: BLACK, dash: (10, 6) }
    }
}

/// One design's line.
#[derive(Clone, Debug)]
pub(super) struct Series {
    pub(super) colour: RGBColor,
    pub(super) points: Vec<(f64, f64)>,
    /// Whiskers at (x, lowest, highest) where the repetitions spread.
    pub(super) whiskers: Vec<(f64, f64, f64)>,
}

impl Series {
    pub(super) fn new(colour: RGBColor, points: Vec<(f64, f64)>) -> Self {
        Self { colour, points, whiskers: Vec::new() }
    }
}

impl Panel for LinePanel {
    fn draw<DB: DrawingBackend>(&self, area: &Area<DB>) -> DrawResult<DB> {
        let (width, radius) = self.pen.unwrap_or((2, 4));
        let mut chart = build(area, &self.frame, &self.x, &self.y)?;
        let (x, y) = (self.x.range(), self.y.range());
        if let Some((from, label)) = self.shade {
            let region = Rectangle::new([(from, y.start), (x.end, y.end)], SHADE.filled());
            chart.draw_series(once(region))?;
            let at = (self.x.along(from, 0.015), y.end);
            let style = text_style(TICK_PX).color(&RGBColor(90, 90, 90));
            chart.draw_series(once(Text::new(label, at, style)))?;
        }
        mesh(&mut chart, &self.frame, (&self.x, &self.y), (true, true))?;
        for reference in &self.references {
            let (dash, gap) = reference.dash;
            let style = reference.colour.stroke_width(2);
            for run in clip_below(&reference.points, y.end) {
                chart.draw_series(DashedLineSeries::new(run, dash, gap, style))?;
            }
        }
        for series in &self.series {
            let colour = series.colour;
            for &(at, low, high) in &series.whiskers {
                let (left, right) = (self.x.along(at, -0.008), self.x.along(at, 0.008));
                let whisker = [
                    [(at, low), (at, high)],
                    [(left, low), (right, low)],
                    [(left, high), (right, high)],
                ];
                chart.draw_series(
                    whisker.map(|line| PathElement::new(line, colour.stroke_width(1))),
                )?;
            }
            chart
                .draw_series(LineSeries::new(series.points.clone(), colour.stroke_width(width)))?;
            let dots =
                series.points.iter().map(|point| Circle::new(*point, radius, colour.filled()));
            chart.draw_series(dots)?;
        }
        for mark in &self.marks {
            chart.draw_series(once(diamond(mark.at, MARKER_PX, BLACK, mark.label.clone())))?;
        }
        Ok(())
    }
}

/// The parts of a polyline at or below `top`, cut exactly where it crosses.
fn clip_below(points: &[(f64, f64)], top: f64) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for (index, &(x, y)) in points.iter().enumerate() {
        let before = index.checked_sub(1).map(|before| points[before]);
        let crossed =
            before.filter(|&(_, py)| (py <= top) != (y <= top) && (y - py).abs() > f64::EPSILON);
        if let Some((px, py)) = crossed {
            current.push((px + (x - px) * (top - py) / (y - py), top));
        }
        if crossed.is_some() && y > top {
            runs.push(std::mem::take(&mut current));
        }
        if y <= top {
            current.push((x, y));
        }
    }
    runs.push(current);
    runs.retain(|run| run.len() >= 2);
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_is_cut_where_it_leaves_the_axis() {
        let runs = clip_below(&[(0.0, 0.0), (1.0, 2.0), (2.0, 0.0)], 1.0);
        assert_eq!(runs, vec![vec![(0.0, 0.0), (0.5, 1.0)], vec![(1.5, 1.0), (2.0, 0.0)]]);
        assert!(clip_below(&[(0.0, 5.0), (1.0, 6.0)], 1.0).is_empty());
    }
}
