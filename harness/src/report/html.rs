//! The `plot` command: charts of a results file and `report.html`, one self-contained page
//! (the verdict table first, then run meta, every chart inline as SVG with a note on how to
//! read it, the summary tables). Reads results only.
//!
//! The page is assembled from the templates in `harness/templates/` (compiled in with
//! `include_str!`): each `{{name}}` placeholder is replaced in one pass, so a value that
//! happens to contain braces is never expanded again. The summary tables are
//! [`render_summary`](super::summary::render_summary)'s Markdown turned into HTML by a converter that knows exactly the
//! subset the summary writes: headings, paragraphs, list items, pipe tables, `**bold**` and
//! `` `code` ``.

use std::fmt::Write as _;
use std::path::PathBuf;

use super::format::{format_ns, format_rate};
use super::summary::{render_summary_parts, SweptSettings};
pub use super::table::escape;
use super::verdict::render_verdict_body;
use crate::report::plot::{render_all, write_all, Chart, Charts, PlotError};
use crate::results::fs::write_atomically;
use crate::results::{ReadError, Results};

const REPORT_TEMPLATE: &str = include_str!("../../templates/report.html");
const CHART_TEMPLATE: &str = include_str!("../../templates/chart.html");
const META_ROW_TEMPLATE: &str = include_str!("../../templates/meta-row.html");

/// What `keyed-bench plot` reads and writes, validated (`cli/plot.rs` builds it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotConfig {
    /// The results file to read.
    pub input: PathBuf,
    /// The folder the charts go to.
    pub out: PathBuf,
    /// The report file.
    pub report: PathBuf,
}

/// Why the charts or the report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The results file is missing or not a results file.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A chart could not be drawn or written.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// The report could not be written.
    #[error("cannot write {path}")]
    Write {
        /// The report file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

impl ReportError {
    /// Whether the user can fix it (a bad input file, an unwritable output path), as opposed
    /// to a failure inside the plotting code.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, Self::Read(_) | Self::Write { .. } | Self::Plot(PlotError::Write { .. }))
    }
}

/// What `plot` made.
#[derive(Clone, Debug)]
pub struct PlotOutcome {
    /// Chart files written, PNG and SVG of each.
    pub files: Vec<PathBuf>,
    /// The report written.
    pub report: PathBuf,
    /// Charts the results did not allow, and why.
    pub skipped: Vec<String>,
}

/// Reads the results, writes every chart and the report.
pub fn plot_and_report(config: &PlotConfig) -> Result<PlotOutcome, ReportError> {
    let results = Results::read(&config.input)?;
    // Both folders first, so that an output location that cannot be written fails before
    // any chart is: never charts without their report. The report's folder is usually the
    // input's, which exists; the charts' folder is usually new, so it comes second.
    if let Some(parent) = config.report.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|source| ReportError::Write { path: parent.display().to_string(), source })?;
    }
    std::fs::create_dir_all(&config.out)
        .map_err(|source| PlotError::Write { path: config.out.display().to_string(), source })?;
    let charts = render_all(&results)?;
    let html = render_report(&results, &charts);
    let files = write_all(&charts, &config.out)?;
    write_atomically(&config.report, html.as_bytes()).map_err(|source| ReportError::Write {
        path: config.report.display().to_string(),
        source,
    })?;
    Ok(PlotOutcome { files, report: config.report.clone(), skipped: charts.skipped })
}

/// The whole HTML page.
pub fn render_report(results: &Results, charts: &Charts) -> String {
    let meta = &results.meta;
    // A sweep's settings as lists: `meta` holds its first point's only.
    let swept = SweptSettings::of(results);
    let mut rows = vec![
        ("created", escape(&meta.created)),
        ("commit", format!("<code>{}</code>", escape(&meta.git_commit))),
        ("CPU", escape(&meta.cpu_model)),
        ("cores", meta.cores.to_string()),
        ("rustc", escape(&meta.rustc)),
        ("command", format!("<code>{}</code>", escape(&meta.command))),
        (
            "settings",
            format!(
                "workers {}, window {}, throughput {}, repeat {}, seed {}{}",
                swept.show("workers", meta.workers),
                swept.show("window", meta.window),
                swept.show("throughput", meta.throughput),
                meta.repeat,
                meta.seed,
                if meta.quick { ", quick sizes" } else { "" }
            ),
        ),
        ("suite wall time", format_ns(meta.suite_elapsed_s * 1e9)),
    ];
    if let Some(overhead) = meta.recorder_overhead_ns {
        rows.push(("recorder overhead", format!("{} per message", format_ns(overhead))));
    }
    if let Some(saturation) = meta.saturation_per_s {
        rows.push(("open-loop saturation", format!("{} msg/s", format_rate(saturation))));
    }
    let meta_rows: String = rows
        .iter()
        .map(|(key, value)| fill(META_ROW_TEMPLATE, &[("key", key), ("value", value)]))
        .collect();
    let notes: String =
        meta.notes.iter().map(|note| format!("<p>Note: {}</p>\n", escape(note))).collect();
    let verdict = render_verdict_body(results);
    let (verdict, verdict_link) = if verdict.is_empty() {
        (String::new(), "")
    } else {
        (
            format!("<h2 id=\"verdict\">Verdict</h2>\n{}", markdown_to_html(&verdict)),
            "<li><a href=\"#verdict\">Verdict</a></li>\n",
        )
    };
    let verdict = format!("{}{verdict}", incomplete_line(results));
    let contents: String = std::iter::once(verdict_link.to_owned())
        .chain(charts.charts.iter().map(|chart| {
            format!("<li><a href=\"#{}\">{}</a></li>\n", chart.name, escape(&chart.title))
        }))
        .collect();
    let figures: String = charts.charts.iter().map(figure).collect();
    let skipped = if charts.skipped.is_empty() {
        String::new()
    } else {
        let items: String =
            charts.skipped.iter().map(|line| format!("<li>{}</li>\n", escape(line))).collect();
        format!("<div class=\"skipped\"><p>Not drawn:</p>\n<ul>\n{items}</ul></div>\n")
    };
    fill(
        &page_template(),
        &[
            ("verdict", &verdict),
            ("created", &escape(&meta.created)),
            ("meta_rows", &meta_rows),
            ("notes", &notes),
            ("contents", &contents),
            ("charts", &figures),
            ("skipped", &skipped),
            ("summary", &markdown_to_html(&render_summary_parts(results, false))),
        ],
    )
}

/// The page template with a `{{verdict}}` slot first in the page's content: before its
/// first section heading (the run's meta, then the charts), or right after `<body>`.
fn page_template() -> String {
    const SLOT: &str = "{{verdict}}\n";
    let at = REPORT_TEMPLATE
        .find("<h2")
        .or_else(|| REPORT_TEMPLATE.find("<body>").map(|body| body + "<body>".len()))
        .unwrap_or(0);
    format!("{}{SLOT}{}", &REPORT_TEMPLATE[..at], &REPORT_TEMPLATE[at..])
}

/// One chart's section: its SVG inline, without any XML prologue.
fn figure(chart: &Chart) -> String {
    let svg = chart.svg.find("<svg").map_or(chart.svg.as_str(), |start| &chart.svg[start..]);
    fill(
        CHART_TEMPLATE,
        &[
            ("name", &chart.name),
            ("title", &escape(&chart.title)),
            ("note", &escape(&chart.note)),
            ("svg", svg),
        ],
    )
}

/// Replaces every `{{name}}` of `template` with its value, in one pass; a placeholder with
/// no value is left as it is.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let name = &after[..end];
                match values.iter().find(|(key, _)| *key == name) {
                    Some((_, value)) => out.push_str(value),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// `**bold**` and `` `code` `` of an escaped line.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let (mut bold, mut code) = (false, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '`' => {
                out.push_str(if code { "</code>" } else { "<code>" });
                code = !code;
            }
            '*' if !code && chars.peek() == Some(&'*') => {
                chars.next();
                out.push_str(if bold { "</strong>" } else { "<strong>" });
                bold = !bold;
            }
            c => out.push(c),
        }
    }
    if code {
        out.push_str("</code>");
    }
    if bold {
        out.push_str("</strong>");
    }
    out
}

/// The cells of a pipe-table line.
fn cells(line: &str) -> Vec<&str> {
    let line = line.trim();
    let line = line.strip_prefix('|').unwrap_or(line);
    let line = line.strip_suffix('|').unwrap_or(line);
    line.split('|').map(str::trim).collect()
}

/// The summary's Markdown as HTML. Headings move one level down (the page has its own
/// `h1`); right-aligned table columns (`---:`) get the `num` class.
pub fn markdown_to_html(markdown: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = markdown.lines().collect();
    let mut paragraph: Vec<String> = Vec::new();
    let mut list = false;
    let flush = |out: &mut String, paragraph: &mut Vec<String>| {
        if !paragraph.is_empty() {
            let _ = writeln!(out, "<p>{}</p>", paragraph.join(" "));
            paragraph.clear();
        }
    };
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index].trim_end();
        let is_item = line.starts_with("- ");
        if list && !is_item {
            out.push_str("</ul>\n");
            list = false;
        }
        if line.is_empty() {
            flush(&mut out, &mut paragraph);
        } else if let Some((level, text)) = heading(line) {
            flush(&mut out, &mut paragraph);
            let level = (level + 1).min(6);
            let _ = writeln!(out, "<h{level}>{}</h{level}>", inline(&escape(text)));
        } else if is_item {
            flush(&mut out, &mut paragraph);
            if !list {
                out.push_str("<ul>\n");
                list = true;
            }
            let _ = writeln!(out, "<li>{}</li>", inline(&escape(&line[2..])));
        } else if line.starts_with('|') {
            flush(&mut out, &mut paragraph);
            let mut table = vec![line];
            while index + 1 < lines.len() && lines[index + 1].trim_start().starts_with('|') {
                index += 1;
                table.push(lines[index].trim_end());
            }
            render_table(&mut out, &table);
        } else {
            paragraph.push(inline(&escape(line)));
        }
        index += 1;
    }
    flush(&mut out, &mut paragraph);
    if list {
        out.push_str("</ul>\n");
    }
    out
}

/// `(level, text)` of an ATX heading line.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    (1..=6).contains(&level).then(|| line[level..].strip_prefix(' ')).flatten().map(|t| (level, t))
}

/// A pipe table: header, separator (alignment), body rows.
fn render_table(out: &mut String, lines: &[&str]) {
    let header = cells(lines[0]);
    let separator = lines.get(1).map(|line| cells(line)).unwrap_or_default();
    let is_separator = !separator.is_empty()
        && separator.iter().all(|cell| cell.chars().all(|c| "-:".contains(c)));
    let numeric: Vec<bool> = if is_separator {
        separator.iter().map(|cell| cell.ends_with(':')).collect()
    } else {
        Vec::new()
    };
    out.push_str("<table>\n<thead><tr>");
    for cell in &header {
        let _ = write!(out, "<th>{}</th>", inline(&escape(cell)));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for line in &lines[if is_separator { 2 } else { 1 }..] {
        out.push_str("<tr>");
        for (column, cell) in cells(line).iter().enumerate() {
            let class = if numeric.get(column) == Some(&true) { " class=\"num\"" } else { "" };
            let _ = write!(out, "<td{class}>{}</td>", inline(&escape(cell)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// The incomplete run's opening sentence ([`super::incomplete::markdown_line`]) as an
/// HTML paragraph, or nothing for a complete run.
pub(crate) fn incomplete_line(results: &Results) -> String {
    super::incomplete::markdown_line(results).map_or_else(String::new, |line| {
        let paragraph = markdown_to_html(&line);
        paragraph.replacen("<p>", "<p class=\"incomplete\">", 1)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_replaces_once_and_keeps_unknown_placeholders() {
        let filled = fill("a {{x}} b {{y}} c {{z", &[("x", "{{y}}"), ("y", "2")]);
        assert_eq!(filled, "a {{y}} b 2 c {{z");
        assert_eq!(fill("{{nope}}", &[]), "{{nope}}");
    }

    #[test]
    fn every_template_placeholder_is_filled() {
        let names = |template: &str| {
            let mut names = Vec::new();
            let mut rest = template;
            while let Some(start) = rest.find("{{") {
                let end = rest[start..].find("}}").expect("closed placeholder") + start;
                names.push(rest[start + 2..end].to_owned());
                rest = &rest[end + 2..];
            }
            names
        };
        let mut report = names(REPORT_TEMPLATE);
        report.sort();
        report.dedup();
        assert_eq!(
            report,
            ["charts", "contents", "created", "meta_rows", "notes", "skipped", "summary"]
        );
        assert_eq!(names(CHART_TEMPLATE), ["name", "title", "svg", "note"]);
        assert_eq!(names(META_ROW_TEMPLATE), ["key", "value"]);
    }

    #[test]
    fn summary_markdown_becomes_html() {
        let markdown = "# keyed-bench summary\n\nSome `code` and **bold** <x>.\nmore\n\n\
                        ## zipf\n\n| strategy | p99 |\n|---|---:|\n| a | **1 ms** |\n| b | 2 ms |\n\n\
                        - `inline` on `x`: why\n";
        let html = markdown_to_html(markdown);
        assert!(html.contains("<h2>keyed-bench summary</h2>"));
        assert!(html
            .contains("<p>Some <code>code</code> and <strong>bold</strong> &lt;x&gt;. more</p>"));
        assert!(html.contains("<h3>zipf</h3>"));
        assert!(html.contains("<th>strategy</th><th>p99</th>"));
        assert!(html.contains("<td>a</td><td class=\"num\"><strong>1 ms</strong></td>"));
        assert!(html.contains("<ul>\n<li><code>inline</code> on <code>x</code>: why</li>\n</ul>"));
        assert!(!html.contains("|---"));
    }
}
