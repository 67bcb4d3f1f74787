//! The `plot` command: charts of a results file and `report.html`, one self-contained page
//! (the verdict table first, then run meta, every chart inline as SVG with a note on how to
//! read it, the summary tables). Reads results only.
//!
//! The page is `harness/templates/report.html` (compiled in with `include_str!`), rendered
//! by minijinja from the results' data: the run's meta as rows, the charts, and the
//! verdict as its [`Table`](super::table::Table) emitted as HTML. Every value is escaped
//! by the template (with [`escape`], as the tables' cells are) except markup made here from
//! escaped parts: a table, a cell's spans, a chart's SVG, and the summary: the same
//! [`Document`](super::document::Document) as `summary.md`, emitted as HTML.

use std::path::PathBuf;

use minijinja::value::Value;
use minijinja::{context, AutoEscape, Environment};

use super::format::{format_ns, format_rate};
use super::summary::summary;
pub use super::table::escape;
use crate::report::plot::{failed, render_all, write_all, Charts, PlotError};
use crate::results::fs::write_atomically;
use crate::results::{ReadError, Results, SweptSettings};

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
    /// Where to write the summary again from the results file (`plot --summary`), if
    /// anywhere: after the summary's code changed, for a run not yet committed.
    pub summary: Option<PathBuf>,
}

/// Why the charts or the report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The results file is missing or not a results file.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A chart could not be drawn, or a chart or the report written.
    #[error(transparent)]
    Plot(#[from] PlotError),
}

impl ReportError {
    /// Whether the user can fix it (a bad input file, an unwritable output path), as opposed
    /// to a failure inside the plotting code.
    pub fn is_bad_input(&self) -> bool {
        matches!(self, Self::Read(_) | Self::Plot(PlotError::Write { .. }))
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
        std::fs::create_dir_all(parent).map_err(failed(parent))?;
    }
    std::fs::create_dir_all(&config.out).map_err(failed(&config.out))?;
    let charts = render_all(&results)?;
    let html = render_report(&results, &charts);
    let files = write_all(&charts, &config.out)?;
    write_atomically(&config.report, html.as_bytes()).map_err(failed(&config.report))?;
    if let Some(path) = &config.summary {
        let summary = crate::report::summary::render_summary(&results);
        write_atomically(path, summary.as_bytes()).map_err(failed(path))?;
    }
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
        row("settings", meta.brief_settings(&swept)),
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
        failed => super::incomplete::failed_line(results).map(|line| markup(line.html())),
        verdict,
        meta_rows,
        notes => meta.notes,
        charts => figures,
        skipped => charts.skipped,
        summary => markup(summary(results, false).html()),
    };
    environment()
        .get_template("report.html")
        .and_then(|template| template.render(page))
        .expect("the compiled-in report template renders")
}

/// The template environment: `report.html`, escaped with [`escape`] (as the tables' cells
/// are), its last newline kept.
fn environment() -> Environment<'static> {
    environment_of("report.html", REPORT_TEMPLATE)
}

/// An environment of the one template `source`, named `name`, escaped with [`escape`] (as
/// the tables' cells are), its last newline kept: the report's, the history page's.
pub(super) fn environment_of(name: &'static str, source: &'static str) -> Environment<'static> {
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
    env.add_template(name, source).expect("a compiled-in template parses");
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_escapes_values_and_keeps_markup() {
        let mut results = crate::report::reference::first();
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
}
