//! A report as blocks of data (headings, paragraphs, list items, tables), written as
//! Markdown for `summary.md` or as HTML for `report.html`: one document, two emitters, as
//! [`Table`] is one table with several.
//!
//! Blank lines are blocks too: Markdown shows them, HTML has no use for them, and a report
//! keeps exactly the spacing it was written with.

use super::table::{Cell, Style, Table};

/// One block of a document.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Block {
    /// A heading of level 1 to 6; HTML moves it one level down (the page has its own `h1`).
    Heading(usize, Cell),
    /// A paragraph on one line.
    Paragraph(Cell),
    /// A list item; consecutive items make one list.
    Item(Cell),
    /// A table.
    Table(Table),
    /// A blank line in Markdown; nothing in HTML.
    Blank,
}

/// Blocks in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Document {
    blocks: Vec<Block>,
}

impl Document {
    /// A heading of `level` (1 for the title), and a blank line after it.
    pub fn heading(&mut self, level: usize, text: impl Into<Cell>) {
        self.blocks.push(Block::Heading(level.clamp(1, 6), text.into()));
        self.blank();
    }

    /// A paragraph.
    pub fn paragraph(&mut self, text: impl Into<Cell>) {
        self.blocks.push(Block::Paragraph(text.into()));
    }

    /// A list item.
    pub fn item(&mut self, text: impl Into<Cell>) {
        self.blocks.push(Block::Item(text.into()));
    }

    /// A table.
    pub fn table(&mut self, table: Table) {
        self.blocks.push(Block::Table(table));
    }

    /// A blank line.
    pub fn blank(&mut self) {
        self.blocks.push(Block::Blank);
    }

    /// A paragraph of prose with Markdown's inline marks ([`Cell::inline`]), and a blank
    /// line after it.
    pub fn prose(&mut self, text: &str) {
        self.paragraph(Cell::inline(text));
        self.blank();
    }

    /// The document as Markdown, each block on its own lines.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for block in &self.blocks {
            match block {
                Block::Heading(level, text) => {
                    out.push_str(&"#".repeat(*level));
                    out.push(' ');
                    out.push_str(&text.prose_markdown());
                    out.push('\n');
                }
                Block::Paragraph(text) => {
                    out.push_str(&text.prose_markdown());
                    out.push('\n');
                }
                Block::Item(text) => {
                    out.push_str("- ");
                    out.push_str(&text.prose_markdown());
                    out.push('\n');
                }
                Block::Table(table) => out.push_str(&table.markdown()),
                Block::Blank => out.push('\n'),
            }
        }
        out
    }

    /// The document as escaped HTML.
    pub fn html(&self) -> String {
        let mut out = String::new();
        let mut list = false;
        for block in &self.blocks {
            let is_item = matches!(block, Block::Item(_));
            if list && !is_item {
                out.push_str("</ul>\n");
            } else if !list && is_item {
                out.push_str("<ul>\n");
            }
            list = is_item;
            match block {
                Block::Heading(level, text) => {
                    let level = (level + 1).min(6);
                    out.push_str(&format!("<h{level}>{}</h{level}>\n", text.html()));
                }
                Block::Paragraph(text) => out.push_str(&format!("<p>{}</p>\n", text.html())),
                Block::Item(text) => out.push_str(&format!("<li>{}</li>\n", text.html())),
                Block::Table(table) => out.push_str(&table.html()),
                Block::Blank => {}
            }
        }
        if list {
            out.push_str("</ul>\n");
        }
        out
    }
}

impl Cell {
    /// The spans of a line of prose written with Markdown's inline marks: `` `code` `` and
    /// `**strong**` (not nested); anything else is plain text.
    pub fn inline(text: &str) -> Self {
        let mut cell = Self::default();
        for (i, part) in text.split('`').enumerate() {
            if i % 2 == 1 {
                cell = cell.then(Style::Code, part);
                continue;
            }
            let marked = part.split("**").enumerate().filter(|(_, part)| !part.is_empty());
            for (j, part) in marked {
                cell = cell.then([Style::Plain, Style::Strong][j % 2], part);
            }
        }
        cell
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::table::Align;

    #[test]
    fn one_document_two_emitters() {
        let mut doc = Document::default();
        doc.heading(2, "zipf");
        doc.paragraph(Cell::inline("Some `code` and **bold** <x>."));
        doc.blank();
        let mut table = Table::new([("strategy", Align::Left), ("p99", Align::Right)]);
        table.push([Cell::plain("a"), Cell::strong("1 ms")]);
        doc.table(table);
        doc.blank();
        doc.item(Cell::inline("`inline` on `x`: why"));
        assert_eq!(
            doc.markdown(),
            "## zipf\n\nSome `code` and **bold** <x>.\n\n| strategy | p99 |\n|---|---:|\n\
             | a | **1 ms** |\n\n- `inline` on `x`: why\n"
        );
        let html = doc.html();
        assert!(html.starts_with("<h3>zipf</h3>\n<p>Some <code>code</code> and <strong>bold"));
        assert!(html.contains("<strong>bold</strong> &lt;x&gt;.</p>\n<table>"), "{html}");
        assert!(html.contains("<td class=\"num\"><strong>1 ms</strong></td>"), "{html}");
        assert!(
            html.ends_with("<ul>\n<li><code>inline</code> on <code>x</code>: why</li>\n</ul>\n")
        );
    }
}
