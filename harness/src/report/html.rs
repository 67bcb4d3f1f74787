//! The `plot` command: charts of a results file and `report.html`, one self-contained page
//! (the verdict table first, then run meta, every chart inline as SVG with a note on how to
//! read it, the summary tables). Reads results only.
//!
//! The page is `harness/templates/report.html` (compiled in with `include_str!`), rendered
//! by minijinja from the results' data: the run's meta as rows, the charts, and the
//! verdict as its [`Table`](super::table::Table) emitted as HTML. Every value is escaped
//! by the template (with [`escape`], as the tables' cells are) except markup made here from
//! escaped parts: a table, a cell's spans, a chart's SVG. The summary tables are
//! [`render_summary`](super::summary::render_summary)'s Markdown turned into HTML by a
//! converter that knows exactly the subset the summary writes: headings, paragraphs, list
//! items, pipe tables, `**bold**` and `` `code` ``.

use std::fmt::Write as _;
use std::path::PathBuf;

use minijinja::value::Value;
use minijinja::{context, AutoEscape, Environment};

use super::format::{format_ns, format_rate};
use super::summary::{render_summary_parts, SweptSettings};
pub use super::table::escape;
use crate::report::plot::{render_all, write_all, Charts, PlotError};
use crate::results::fs::write_atomically;
use crate::results::{ReadError, Results};

const REPORT_TEMPLATE: &str = include_str!("../../templates/report.html");

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

/// Markup made here from escaped parts, which the template writes as it is.
fn markup(html: String) -> Value {
    Value::from_safe_string(html)
}

/// The whole HTML page.
pub fn render_report(results: &Results, charts: &Charts) -> String {
    let meta = &results.meta;
    // A sweep's settings as lists: `meta` holds its first point's only.
    let swept = SweptSettings::of(results);
    let row = |key: &str, value: String| context! { key, value, code => false };
    let mut meta_rows = vec![
        row("created", meta.created.clone()),
        context! { key => "commit", value => meta.git_commit, code => true },
        row("CPU", meta.cpu_model.clone()),
        row("cores", meta.cores.to_string()),
        row("rustc", meta.rustc.clone()),
        context! { key => "command", value => meta.command, code => true },
        row(
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
        row("suite wall time", format_ns(meta.suite_elapsed_s * 1e9)),
    ];
    if let Some(overhead) = meta.recorder_overhead_ns {
        meta_rows.push(row("recorder overhead", format!("{} per message", format_ns(overhead))));
    }
    if let Some(saturation) = meta.saturation_per_s {
        meta_rows.push(row("open-loop saturation", format!("{} msg/s", format_rate(saturation))));
    }
    let verdict = super::verdict::verdict(results).map(|(intro, table)| {
        context! { intro => markup(intro.html()), table => markup(table.html()) }
    });
    let figures: Vec<Value> = charts
        .charts
        .iter()
        .map(|chart| {
            // The SVG inline, without any XML prologue.
            let svg =
                chart.svg.find("<svg").map_or(chart.svg.as_str(), |start| &chart.svg[start..]);
            context! {
                name => chart.name,
                title => chart.title,
                note => chart.note,
                svg => markup(svg.to_owned()),
            }
        })
        .collect();
    let page = context! {
        created => meta.created,
        incomplete => super::incomplete::line(results).map(|line| markup(line.html())),
        verdict,
        meta_rows,
        notes => meta.notes,
        charts => figures,
        skipped => charts.skipped,
        summary => markup(markdown_to_html(&render_summary_parts(results, false))),
    };
    environment()
        .get_template("report.html")
        .and_then(|template| template.render(page))
        .expect("the compiled-in report template renders")
}

/// The template environment: `report.html`, escaped with [`escape`] (as the tables' cells
/// are), its last newline kept.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_keep_trailing_newline(true);
    env.set_formatter(|out, state, value| {
        if state.auto_escape() == AutoEscape::Html && !value.is_safe() {
            if let Some(text) = value.as_str() {
                return out.write_str(&escape(text)).map_err(minijinja::Error::from);
            }
        }
        minijinja::escape_formatter(out, state, value)
    });
    env.add_template("report.html", REPORT_TEMPLATE)
        .expect("the compiled-in report template parses");
    env
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_escapes_values_and_keeps_markup() {
        let reference = include_str!("../../../results/2026-11-30-vm/results.json");
        let mut results = Results::parse(reference.as_bytes(), "r.json".as_ref()).unwrap();
        results.meta.notes = vec!["a <b> & 'c' / d".into()];
        results.meta.command = "run --out \"x\"".into();
        let html = render_report(&results, &Charts::default());
        assert!(html.contains("<p>Note: a &lt;b&gt; &amp; 'c' / d</p>"), "{html}");
        assert!(html.contains("<th>command</th><td><code>run --out &quot;x&quot;</code></td>"));
        assert!(html.contains("<h2 id=\"verdict\">Verdict</h2>\n<p>One row per measured cell"));
        assert!(html.contains("such as <code>thread-pool</code>"), "the intro's spans");
        assert!(html.contains("<nav><ul>\n<li><a href=\"#verdict\">Verdict</a></li>\n"));
        assert!(!html.contains("{{") && !html.contains("{%"), "every tag rendered");
        assert!(html.ends_with("</html>\n"));
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
