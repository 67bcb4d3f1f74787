//! Timelines: counts over a cell's time (a committed-offset lag at each tick, records
//! applied per slice), one panel per policy or mitigation, all on one time axis from the
//! cell's start. A track may break into segments (a consumer that crashed and resumed);
//! a diamond marks where each later segment starts.

use plotters::prelude::*;

use super::panel::{build, diamond, mesh, Area, Axis, DrawResult, Frame, Panel, Plot};
use super::TEXT_PX;

/// A figure of timeline panels, top to bottom.
pub(super) type Timeline = Plot<TimelinePanel>;

/// One panel of a timeline.
pub(super) struct TimelinePanel {
    pub(super) caption: String,
    pub(super) colour: RGBColor,
    /// The end of the time axis, seconds since the cell's start.
    pub(super) end_s: f64,
    /// The top of the y axis (which starts just below zero, so that a line at 0 shows).
    pub(super) top: f64,
    /// What the y axis counts.
    pub(super) y_desc: &'static str,
    /// How many y ticks plotters aims for, where not its default.
    pub(super) y_ticks: Option<usize>,
    pub(super) tracks: Vec<Track>,
}

/// One line of a panel: its segments, each in time order.
pub(super) struct Track {
    pub(super) colour: RGBColor,
    /// The radius of the dot at each point, in pixels.
    pub(super) dot: u32,
    pub(super) segments: Vec<Vec<(f64, f64)>>,
}

impl Panel for TimelinePanel {
    fn draw<DB: DrawingBackend>(&self, area: &Area<DB>) -> DrawResult<DB> {
        let frame = Frame {
            caption_style: (TEXT_PX, self.colour),
            y_ticks: self.y_ticks,
            ..Frame::new(10, (44, 76)).caption(&self.caption)
        };
        let end = self.end_s;
        let x = Axis::linear(0.0..end, move |x| seconds_label(*x, end))
            .desc("seconds since the cell's start");
        let count = |y: &f64| if *y < 0.0 { String::new() } else { format!("{y:.0}") };
        let y = Axis::linear(-self.top * 0.03..self.top, count).desc(self.y_desc);
        let mut chart = build(area, &frame, &x, &y)?;
        mesh(&mut chart, &frame, (&x, &y), (true, true))?;
        for track in &self.tracks {
            let style = track.colour.stroke_width(2);
            for (index, segment) in track.segments.iter().enumerate() {
                let points = segment.iter().copied();
                chart.draw_series(LineSeries::new(points, style).point_size(track.dot))?;
                let restart = segment.first().filter(|_| index > 0);
                chart
                    .draw_series(restart.map(|&at| diamond(at, 6, track.colour, String::new())))?;
            }
        }
        Ok(())
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
    use super::seconds_label;

    #[test]
    fn seconds_read_well() {
        assert_eq!(seconds_label(0.05, 0.18), "0.05");
        assert_eq!(seconds_label(0.005, 0.02), "0.005");
        assert_eq!(seconds_label(12.0, 30.0), "12");
    }
}
