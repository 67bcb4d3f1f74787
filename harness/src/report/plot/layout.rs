//! How big a chart is: one rule gives every chart its canvas from what it draws.
//!
//! A chart's canvas is the chrome (its title, its legend strip and its margins) plus its
//! panels: the cells of its layout (a grid of rows and columns; a row of weight `w`
//! is `w` cells high), each [`Canvas::cell`] in size, and, for bars, the room each
//! category and each of its bar slots takes along the category axis (across for columns,
//! down for rows of bars). A chart names its [`Canvas`], one of the shapes below; the size
//! follows from its layout and its categories, never from pixels set beside the figure.

/// The shape of a chart's canvas, in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Canvas {
    /// One cell of the panel layout: width and height.
    pub(super) cell: (u32, u32),
    /// The title, the legend strip and the margins: added to the width and the height.
    pub(super) chrome: (u32, u32),
    /// Along a bar panel's category axis, the room of each category and of each bar slot
    /// in it.
    pub(super) per_category: (u32, u32),
    /// The least width and height.
    pub(super) least: (u32, u32),
}

/// What a chart's panels hold along their category axis: the most categories and the most
/// bar slots per category of any panel, and whether the categories run down (rows of bars).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Categories {
    /// The categories of the panel with the most.
    pub(super) count: u32,
    /// The bar slots of the category with the most.
    pub(super) slots: u32,
    /// Rows of bars, categories top to bottom, instead of columns left to right.
    pub(super) down: bool,
}

impl Categories {
    /// The larger of `self` and `other`, count and slots each.
    pub(super) fn max(self, other: Self) -> Self {
        Self {
            count: self.count.max(other.count),
            slots: self.slots.max(other.slots),
            down: self.down || other.down,
        }
    }
}

impl Canvas {
    /// Cells of `cell` pixels under `chrome`, whatever the categories.
    const fn new(cell: (u32, u32), chrome: (u32, u32)) -> Self {
        Self { cell, chrome, per_category: (0, 0), least: (0, 0) }
    }

    /// The same, each category taking `category` pixels and each of its slots `slot`.
    const fn per_category(self, category: u32, slot: u32) -> Self {
        Self { per_category: (category, slot), ..self }
    }

    /// The same, never smaller than `least`.
    const fn at_least(self, least: (u32, u32)) -> Self {
        Self { least, ..self }
    }

    /// The canvas of a figure whose layout takes `cells` (rows, columns) and whose panels
    /// hold `categories`.
    pub(super) fn size(self, (rows, columns): (u32, u32), categories: Categories) -> (u32, u32) {
        let (category, slot) = self.per_category;
        let along = categories.count * (category + slot * categories.slots);
        let (across, down) = if categories.down { (0, along) } else { (along, 0) };
        let width = self.chrome.0 + columns * self.cell.0 + across;
        let height = self.chrome.1 + rows * self.cell.1 + down;
        (width.max(self.least.0), height.max(self.least.1))
    }
}

// The shapes: a chart's kind of figure, its panels' sizes and its chrome.

/// One panel of bars per strategy with a few bars each (`threads-*`).
pub(super) const STRATEGY_PAIRS: Canvas = Canvas::new((1100, 400), (0, 220));
/// One panel of bars per strategy with many bars each, or per strategy and policy
/// (`breakdown-*`, `pipeline-crash`).
pub(super) const STRATEGY_GROUPS: Canvas = Canvas::new((1200, 420), (0, 220));
/// One panel of lines over evenly spaced bursts (`*-cliff`).
pub(super) const BURST_LINES: Canvas = Canvas::new((1100, 440), (0, 220));
/// One panel of lines over key counts on a log axis (`*-elapsed`).
pub(super) const KEY_LINES: Canvas = Canvas::new((1150, 480), (0, 220));
/// One panel of ratio bars per cell (`*-ratio`).
pub(super) const CELL_RATIOS: Canvas = Canvas::new((1150, 440), (0, 220));
/// Two panels of lines side by side per row (`*-latency`, `sweep-*`).
pub(super) const LINE_PAIRS: Canvas = Canvas::new((650, 400), (0, 220));
/// A grid of panels of bars, one per scenario (`throughput`).
pub(super) const SCENARIO_GRID: Canvas = Canvas::new((440, 380), (40, 110));
/// A grid of panels of lines, one per parameter, at least one wide panel (`latency-*`).
pub(super) const PARAM_GRID: Canvas = Canvas::new((620, 480), (0, 130)).at_least((1000, 0));
/// A grid of panels of bar pairs, one per cell (`head-of-line`).
pub(super) const CELL_GRID: Canvas = Canvas::new((740, 400), (20, 130));
/// Two stacked panels of bars per cell, the categories across (`price-of-order`).
pub(super) const CELL_COLUMNS: Canvas = Canvas::new((0, 980), (160, 0)).per_category(140, 0);
/// Timelines stacked, a row of weight `w` being `w` cells high: a cell of one pixel
/// (`pipeline-commit-lag`, whose rows weigh their height in pixels).
pub(super) const PIXEL_TIMELINES: Canvas = Canvas::new((1200, 1), (0, 150));
/// Timelines stacked, one per row of weight 1 (`pipeline-expand`).
pub(super) const TIMELINES: Canvas = Canvas::new((1200, 330), (0, 150));
/// Two panels of rows of bars side by side, a bar per slot (`pipeline-retry`).
pub(super) const SLOT_ROWS: Canvas = Canvas::new((1400, 0), (0, 200)).per_category(18, 24);
/// One panel of rows of bar pairs (`pipeline-commit-calls`).
pub(super) const PAIR_ROWS: Canvas = Canvas::new((1400, 0), (0, 220)).per_category(34, 0);
/// Two stacked panels of bars per strategy and policy (`pipeline-rebalance`).
pub(super) const STACKED_GROUPS: Canvas = Canvas::new((1500, 840), (0, 220));

#[cfg(test)]
mod tests {
    use super::*;

    fn across(count: u32, slots: u32) -> Categories {
        Categories { count, slots, down: false }
    }

    #[test]
    fn a_grid_grows_by_its_cells() {
        let none = Categories::default();
        assert_eq!(SCENARIO_GRID.size((2, 4), none), (1800, 870));
        assert_eq!(CELL_GRID.size((3, 2), none), (1500, 1330));
        assert_eq!(LINE_PAIRS.size((1, 2), none), (1300, 620));
        assert_eq!(PARAM_GRID.size((1, 1), none), (1000, 610));
        assert_eq!(PARAM_GRID.size((2, 3), none), (1860, 1090));
        assert_eq!(STRATEGY_PAIRS.size((1, 1), none), (1100, 620));
        assert_eq!(TIMELINES.size((3, 1), none), (1200, 1140));
        assert_eq!(PIXEL_TIMELINES.size((460, 1), none), (1200, 610));
    }

    #[test]
    fn bars_grow_along_their_category_axis() {
        assert_eq!(CELL_COLUMNS.size((1, 1), across(5, 4)), (860, 980));
        let rows = Categories { count: 4, slots: 3, down: true };
        assert_eq!(SLOT_ROWS.size((1, 1), rows), (1400, 200 + 4 * (24 * 3 + 18)));
        let pairs = Categories { count: 6, slots: 2, down: true };
        assert_eq!(PAIR_ROWS.size((1, 1), pairs), (1400, 220 + 34 * 6));
        assert_eq!(across(2, 5).max(Categories { count: 3, slots: 1, down: true }).count, 3);
    }
}
