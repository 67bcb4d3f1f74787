//! One table model for every report: the data of a table (caption, columns with their
//! alignment, rows of cells, footnotes) apart from its markup, and three emitters of it,
//! as hyperfine's `MarkupExporter` writes one result table as Markdown, AsciiDoc or
//! Org-mode.
//!
//! - [`Table::markdown`]: a GitHub pipe table, for `summary.md` and pull-request comments;
//! - [`Table::text`]: columns padded to one width each, for a terminal;
//! - [`Table::html`]: an escaped `<table>`, right-aligned columns with the `num` class.
//!
//! A cell is a run of spans, each plain, strong or code, so that emphasis is data: the
//! Markdown emitter writes `**best**`, the HTML one `<strong>best</strong>`, the text one
//! `best`.

use std::fmt::Write as _;

use super::format::format_figure;
use crate::results::{Metric, RunResult};

/// How a column's cells line up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Names and words.
    Left,
    /// Numbers, so that their digits line up.
    Right,
}

impl Align {
    /// `cell` padded with spaces to `width` characters on the side this alignment leaves.
    fn pad(self, cell: &str, width: usize) -> String {
        let pad = " ".repeat(width - cell.chars().count());
        match self {
            Self::Left => format!("{cell}{pad}"),
            Self::Right => format!("{pad}{cell}"),
        }
    }

    /// The class attribute of an HTML cell of the column: `num` where the digits line up.
    fn html_class(self) -> &'static str {
        match self {
            Self::Left => "",
            Self::Right => " class=\"num\"",
        }
    }
}

/// One line of a pipe table: each cell between pipes, an empty one as `| |`.
fn markdown_line(out: &mut String, cells: impl Iterator<Item = String>) {
    out.push('|');
    for cell in cells {
        if cell.is_empty() {
            out.push_str(" |");
        } else {
            let _ = write!(out, " {cell} |");
        }
    }
    out.push('\n');
}

/// How a span of a cell reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// As it is.
    Plain,
    /// Emphasised: the best of a row, a failure.
    Strong,
    /// An identifier or a command, in a fixed-width font.
    Code,
}

/// One cell: spans of text, each with its style.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    spans: Vec<(Style, String)>,
}

impl Cell {
    /// A cell of plain text.
    pub fn plain(text: impl Into<String>) -> Self {
        Self::default().then(Style::Plain, text)
    }

    /// A cell of emphasised text.
    pub fn strong(text: impl Into<String>) -> Self {
        Self::default().then(Style::Strong, text)
    }

    /// `text`, emphasised where `strong`.
    pub fn strong_if(text: impl Into<String>, strong: bool) -> Self {
        if strong {
            Self::strong(text)
        } else {
            Self::plain(text)
        }
    }

    /// This cell followed by `text` in `style`.
    #[must_use]
    pub fn then(mut self, style: Style, text: impl Into<String>) -> Self {
        self.spans.push((style, text.into()));
        self
    }

    /// The text without any markup.
    pub fn text(&self) -> String {
        self.spans.iter().map(|(_, text)| text.as_str()).collect()
    }

    /// The cell as inline Markdown in a pipe table: a `|` is escaped so that it cannot end
    /// the cell.
    pub fn markdown(&self) -> String {
        self.marked(|text| text.replace('|', "\\|"), ["**", "**", "`", "`"])
    }

    /// The spans as inline Markdown in running text, where a `|` is only a character.
    pub fn prose_markdown(&self) -> String {
        self.marked(str::to_owned, ["**", "**", "`", "`"])
    }

    /// The cell as escaped inline HTML.
    pub fn html(&self) -> String {
        self.marked(escape, ["<strong>", "</strong>", "<code>", "</code>"])
    }

    /// The spans' text as `text` writes it, a strong span between `marks[0]` and `marks[1]`,
    /// a code span between `marks[2]` and `marks[3]`.
    fn marked(&self, text: impl Fn(&str) -> String, marks: [&str; 4]) -> String {
        let mut out = String::new();
        for (style, span) in &self.spans {
            let (open, close) = match style {
                Style::Plain => ("", ""),
                Style::Strong => (marks[0], marks[1]),
                Style::Code => (marks[2], marks[3]),
            };
            let _ = write!(out, "{open}{}{close}", text(span));
        }
        out
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Self {
        Self::plain(text)
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Self {
        Self::plain(text)
    }
}

/// A column: its header and how its cells line up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// The header; a table whose headers are all empty has no header row in text.
    pub header: String,
    /// How the header and the cells line up.
    pub align: Align,
}

/// A column as a table declares it: its header and alignment, and how a row's cell is read
/// from the row. A table of such columns is [`Table::declared`]: each row is the columns'
/// cells of it, left to right, so that a column is written once, not once per row.
pub struct Declared<'a, R: ?Sized> {
    /// The header and how the cells line up.
    pub column: Column,
    /// A row's cell.
    cell: Box<dyn Fn(&R) -> Cell + 'a>,
}

impl<'a, R: ?Sized> Declared<'a, R> {
    /// A column of this header and alignment whose cell of a row is `cell(row)`.
    pub fn new<C: Into<Cell>>(
        header: impl Into<String>,
        align: Align,
        cell: impl Fn(&R) -> C + 'a,
    ) -> Self {
        let column = Column { header: header.into(), align };
        Self { column, cell: Box::new(move |row| cell(row).into()) }
    }

    /// A left-aligned column: names and words.
    pub fn left<C: Into<Cell>>(header: impl Into<String>, cell: impl Fn(&R) -> C + 'a) -> Self {
        Self::new(header, Align::Left, cell)
    }

    /// A right-aligned column: numbers.
    pub fn right<C: Into<Cell>>(header: impl Into<String>, cell: impl Fn(&R) -> C + 'a) -> Self {
        Self::new(header, Align::Right, cell)
    }

    /// The cell of `row` in this column.
    pub fn cell(&self, row: &R) -> Cell {
        (self.cell)(row)
    }
}

impl<R: ?Sized> std::fmt::Debug for Declared<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Declared").field("column", &self.column).finish_non_exhaustive()
    }
}

impl Declared<'static, RunResult> {
    /// A column of `metric` over `rows`, as the metric registry declares it: its header,
    /// each row's value in its unit (`-` where the row has none), strong where the row
    /// `contends` and its value is the best among the rows that do.
    pub fn metric(metric: Metric, rows: &[&RunResult], contends: fn(&RunResult) -> bool) -> Self {
        Self::metric_with(metric, (rows, contends), "", |_, text| text)
    }

    /// [`Declared::metric`] with `more` after the header and each value's text as
    /// `text(row, value)` writes it (a spread beside it, a note after it).
    pub fn metric_with(
        metric: Metric,
        (rows, contends): (&[&RunResult], fn(&RunResult) -> bool),
        more: &str,
        text: impl Fn(&RunResult, String) -> String + 'static,
    ) -> Self {
        let higher = metric.higher_is_better();
        let best = rows
            .iter()
            .filter(|row| contends(row))
            .filter_map(|row| metric.value(row, &[]))
            .reduce(|a, b| if (b > a) == higher { b } else { a });
        let header = format!("{}{more}", metric.header());
        Self::right(header, move |row: &RunResult| {
            let Some(value) = metric.value(row, &[]) else {
                return Cell::plain("-");
            };
            let text = text(row, format_figure(metric.unit(), value));
            Cell::strong_if(text, best == Some(value) && contends(row))
        })
    }
}

/// A table's data; the emitters turn it into markup.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// A line that names the table, written above it (`<caption>` in HTML).
    pub caption: Option<String>,
    /// The columns, left to right.
    pub columns: Vec<Column>,
    /// The rows; a row shorter than the columns leaves the rest empty.
    pub rows: Vec<Vec<Cell>>,
    /// Lines written under the table, each a note on how to read it.
    pub footnotes: Vec<String>,
}

impl Table {
    /// A table with these columns and no rows yet.
    pub fn new(columns: impl IntoIterator<Item = (impl Into<String>, Align)>) -> Self {
        let columns = columns
            .into_iter()
            .map(|(header, align)| Column { header: header.into(), align })
            .collect();
        Self { columns, ..Self::default() }
    }

    /// A table of `columns` with a row per item of `rows`: the columns' cells of it.
    pub fn declared<'r, R: ?Sized + 'r>(
        columns: &[Declared<'_, R>],
        rows: impl IntoIterator<Item = &'r R>,
    ) -> Self {
        let mut table = Self {
            columns: columns.iter().map(|declared| declared.column.clone()).collect(),
            ..Self::default()
        };
        for row in rows {
            table.rows.push(columns.iter().map(|declared| declared.cell(row)).collect());
        }
        table
    }

    /// Adds a column to the right.
    #[must_use]
    pub fn column(mut self, header: impl Into<String>, align: Align) -> Self {
        self.columns.push(Column { header: header.into(), align });
        self
    }

    /// A table of the columns of `spec` ([`Table::with`]) and no rows yet.
    pub fn of(spec: &str) -> Self {
        Self::default().with(spec)
    }

    /// Adds the columns of `spec` to the right: headers between `|`, each right-aligned
    /// where it starts with `>` (which is not part of the header), else left-aligned.
    #[must_use]
    pub fn with(mut self, spec: &str) -> Self {
        for header in spec.split('|') {
            self = match header.strip_prefix('>') {
                Some(header) => self.column(header, Align::Right),
                None => self.column(header, Align::Left),
            };
        }
        self
    }

    /// Adds a right-aligned column per header, for a column of numbers per design.
    #[must_use]
    pub fn numbers<H: Into<String>>(mut self, headers: impl IntoIterator<Item = H>) -> Self {
        for header in headers {
            self = self.column(header, Align::Right);
        }
        self
    }

    /// Names the table.
    #[must_use]
    pub fn with_caption(mut self, caption: impl Into<String>) -> Self {
        self.caption = Some(caption.into());
        self
    }

    /// Appends a row.
    pub fn push<C: Into<Cell>>(&mut self, row: impl IntoIterator<Item = C>) {
        self.rows.push(row.into_iter().map(Into::into).collect());
    }

    /// Rows so far.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// A GitHub pipe table: the caption and a blank line above it, the header, the
    /// alignment row (`---`, or `---:` for a right-aligned column), one line per row, then
    /// each footnote after a blank line. An empty cell is written `| |`.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        if let Some(caption) = &self.caption {
            let _ = writeln!(out, "{caption}\n");
        }
        markdown_line(
            &mut out,
            self.columns.iter().map(|column| column.header.replace('|', "\\|")),
        );
        out.push('|');
        for column in &self.columns {
            out.push_str(match column.align {
                Align::Left => "---|",
                Align::Right => "---:|",
            });
        }
        out.push('\n');
        for row in &self.rows {
            markdown_line(&mut out, self.cells(row).map(Cell::markdown));
        }
        for footnote in &self.footnotes {
            let _ = writeln!(out, "\n{footnote}");
        }
        out
    }

    /// Columns padded to one width each (in characters), two spaces apart, every line
    /// starting with `indent` and without trailing spaces; the header row first unless
    /// every header is empty. The caption goes above, the footnotes below, unindented.
    pub fn text(&self, indent: &str) -> String {
        let header: Vec<Cell> =
            self.columns.iter().map(|column| Cell::plain(column.header.as_str())).collect();
        let with_header = self.columns.iter().any(|column| !column.header.is_empty());
        let lines: Vec<Vec<String>> = with_header
            .then_some(&header)
            .into_iter()
            .chain(&self.rows)
            .map(|row| self.cells(row).map(Cell::text).collect())
            .collect();
        let widths: Vec<usize> = (0..self.columns.len())
            .map(|i| lines.iter().map(|line| line[i].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        if let Some(caption) = &self.caption {
            let _ = writeln!(out, "{caption}");
        }
        for cells in &lines {
            let padded: Vec<String> = cells
                .iter()
                .zip(&self.columns)
                .zip(&widths)
                .map(|((cell, column), width)| column.align.pad(cell, *width))
                .collect();
            let line = format!("{indent}{}", padded.join("  "));
            out.push_str(line.trim_end());
            out.push('\n');
        }
        for footnote in &self.footnotes {
            let _ = writeln!(out, "{footnote}");
        }
        out
    }

    /// An escaped HTML table: `<caption>`, a header row in `<thead>`, the rows in `<tbody>`
    /// (a right-aligned column's cells with `class="num"`), the footnotes in `<tfoot>`.
    pub fn html(&self) -> String {
        let mut out = String::from("<table>\n");
        if let Some(caption) = &self.caption {
            let _ = writeln!(out, "<caption>{}</caption>", escape(caption));
        }
        out.push_str("<thead><tr>");
        for column in &self.columns {
            let _ = write!(out, "<th>{}</th>", escape(&column.header));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for row in &self.rows {
            out.push_str("<tr>");
            for (cell, column) in self.cells(row).zip(&self.columns) {
                let _ = write!(out, "<td{}>{}</td>", column.align.html_class(), cell.html());
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n");
        if !self.footnotes.is_empty() {
            out.push_str("<tfoot>\n");
            for footnote in &self.footnotes {
                let _ = writeln!(
                    out,
                    "<tr><td colspan=\"{}\">{}</td></tr>",
                    self.columns.len(),
                    escape(footnote)
                );
            }
            out.push_str("</tfoot>\n");
        }
        out.push_str("</table>\n");
        out
    }

    /// A row's cells, one per column: missing ones empty, extra ones dropped.
    fn cells<'a>(&'a self, row: &'a [Cell]) -> impl Iterator<Item = &'a Cell> {
        const EMPTY: &Cell = &Cell { spans: Vec::new() };
        (0..self.columns.len()).map(move |i| row.get(i).unwrap_or(EMPTY))
    }
}

/// `&`, `<`, `>` and `"` as entities.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut table = Table::new([("strategy", Align::Left), ("p99", Align::Right)]);
        table.push([Cell::plain("a<b"), Cell::strong("1 ms")]);
        table.push([Cell::plain("long-name"), Cell::plain("12 ms / ").then(Style::Code, "x|y")]);
        table
    }

    #[test]
    fn a_spec_names_the_columns_and_marks_the_right_aligned() {
        let spec = Table::of("strategy|>p99").numbers(["a"]).with("note");
        let aligns = [Align::Left, Align::Right, Align::Right, Align::Left];
        let columns = ["strategy", "p99", "a", "note"].into_iter().zip(aligns);
        assert_eq!(spec, Table::new(columns));
    }

    #[test]
    fn a_declared_table_reads_each_rows_cell_per_column() {
        let columns: [Declared<'_, (&str, u32)>; 2] = [
            Declared::left("strategy", |row: &(&str, u32)| row.0),
            Declared::right("p99", |row: &(&str, u32)| {
                Cell::strong_if(row.1.to_string(), row.1 < 5)
            }),
        ];
        let table = Table::declared(&columns, &[("a", 1), ("b", 10)]);
        let mut pushed = Table::of("strategy|>p99");
        pushed.push([Cell::plain("a"), Cell::strong("1")]);
        pushed.push([Cell::plain("b"), Cell::plain("10")]);
        assert_eq!(table, pushed);
    }

    #[test]
    fn markdown_is_a_pipe_table_with_alignment() {
        assert_eq!(
            sample().markdown(),
            "| strategy | p99 |\n|---|---:|\n| a<b | **1 ms** |\n| long-name | 12 ms / `x\\|y` |\n"
        );
        let mut empty = Table::new([("", Align::Left), ("rule", Align::Left)]);
        empty.push(["ok"]);
        assert_eq!(empty.markdown(), "| | rule |\n|---|---|\n| ok | |\n");
    }

    #[test]
    fn text_pads_columns_and_drops_markup() {
        assert_eq!(
            sample().text("  "),
            "  strategy           p99\n  a<b               1 ms\n  long-name  12 ms / x|y\n"
        );
        let mut bare = Table::new([("", Align::Left), ("", Align::Right)]);
        bare.push(["a", "1"]);
        bare.push(["long", "100"]);
        assert_eq!(bare.text(""), "a       1\nlong  100\n");
    }

    #[test]
    fn html_escapes_and_marks_numeric_columns() {
        let mut table = sample().with_caption("T & U");
        table.footnotes.push("n <1>".into());
        let html = table.html();
        assert!(html.contains("<caption>T &amp; U</caption>"), "{html}");
        assert!(html.contains("<thead><tr><th>strategy</th><th>p99</th></tr></thead>"), "{html}");
        assert!(
            html.contains("<tr><td>a&lt;b</td><td class=\"num\"><strong>1 ms</strong></td></tr>"),
            "{html}"
        );
        assert!(html.contains("<code>x|y</code>"), "{html}");
        assert!(html.contains("<tfoot>\n<tr><td colspan=\"2\">n &lt;1&gt;</td></tr>"), "{html}");
    }
}
