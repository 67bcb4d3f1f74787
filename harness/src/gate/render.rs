//! Reports: the checks as an aligned text table, a Markdown table for a pull-request
//! comment, or JSON. Only reads checks.

use std::fmt::Write as _;

use super::evaluate::{Check, NotRun};
use crate::report::table::{Align, Table};

/// How to print checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// An aligned table.
    Text,
    /// A table for a pull-request comment.
    Markdown,
    /// Machine-readable.
    Json,
}

fn number(value: f64) -> String {
    if value.abs() >= 1e4 || (value != 0.0 && value.abs() < 1e-2) {
        format!("{value:.3e}")
    } else if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.3}")
    }
}

/// Each measurement with its own limit (a re-run measures both sides of a ratio again).
fn measured_text(check: &Check) -> String {
    let pairs = check.measured.iter().zip(&check.limits);
    let all_same = check.limits.windows(2).all(|pair| pair[0] == pair[1]);
    pairs
        .map(|(value, limit)| {
            if all_same {
                number(*value)
            } else {
                format!("{} (limit {})", number(*value), number(*limit))
            }
        })
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// The checks as a table, the failures first. The text format keeps its fixed-width
/// lines, which no table of computed widths reproduces.
fn table(checks: &[Check]) -> Table {
    let mut table = Table::new([
        ("", Align::Left),
        ("rule", Align::Left),
        ("cell", Align::Left),
        ("measured", Align::Right),
        ("limit", Align::Right),
    ]);
    let mut rows: Vec<&Check> = checks.iter().collect();
    rows.sort_by_key(|check| check.pass);
    for check in rows {
        table.push([
            (if check.void {
                "⚪"
            } else if check.pass {
                "✅"
            } else {
                "❌"
            })
            .to_owned(),
            check.rule.clone(),
            check.cell.clone(),
            measured_text(check),
            format!("{} {}", check.op, number(*check.limits.last().unwrap_or(&f64::NAN))),
        ]);
    }
    table
}

/// The checks in `format`, and the rules that did not apply.
pub fn render(checks: &[Check], not_run: &[NotRun], format: Format) -> String {
    let failed = checks.iter().filter(|check| !check.pass).count();
    let void = checks.iter().filter(|check| check.void).count();
    let passed = checks.len() - failed - void;
    let mut out = String::new();
    match format {
        Format::Json => {
            out = serde_json::to_string_pretty(&serde_json::json!({
                "passed": passed,
                "failed": failed,
                "void": void,
                "verdicts": checks,
                "not_run": not_run,
            }))
            .expect("checks serialise");
            out.push('\n');
        }
        Format::Markdown => {
            let _ = writeln!(
                out,
                "### keyed-bench gate: {passed} of {} checks hold{}\n",
                checks.len() - void,
                if void > 0 {
                    format!(" ({void} on void cells, not judged)")
                } else {
                    String::new()
                }
            );
            out.push_str(&table(checks).markdown());
            if !not_run.is_empty() {
                out.push_str("\nNot applied (their scenario was not run, unless a reason says otherwise):\n\n");
                for rule in not_run {
                    let why = rule.why.as_ref().map(|why| format!(": {why}")).unwrap_or_default();
                    let _ = writeln!(out, "- {} (`{}`){why}", rule.rule, rule.scenario);
                }
            }
        }
        Format::Text => {
            for check in checks {
                let _ = writeln!(
                    out,
                    "{:4}  {:<44} {:<36} {:>22} {} {}",
                    if check.void {
                        "void"
                    } else if check.pass {
                        "ok"
                    } else {
                        "FAIL"
                    },
                    check.rule,
                    check.cell,
                    measured_text(check),
                    check.op,
                    number(*check.limits.last().unwrap_or(&f64::NAN))
                );
            }
            for rule in not_run {
                let why =
                    rule.why.as_ref().map_or_else(|| " was not run".into(), |w| format!(": {w}"));
                let _ = writeln!(
                    out,
                    "{:4}  {:<44} not applied: scenario {}{why}",
                    "n/a", rule.rule, rule.scenario
                );
            }
            let _ = write!(out, "{passed} passed, {failed} failed");
            if void > 0 {
                let _ = write!(out, ", {void} on void cells (not judged)");
            }
            out.push('\n');
            if !not_run.is_empty() {
                let _ = writeln!(out, "{} not applied", not_run.len());
            }
        }
    }
    out
}

/// What the gate says about a results file around its checks, in each format: an
/// incomplete file, failed cells.
#[derive(Debug, Default)]
pub(super) struct Preface {
    /// Lines of text before the report, each ending in a newline.
    pub(super) text: String,
    /// A line of text after the report.
    pub(super) text_after: Option<String>,
    /// Markdown before the report, ending in a newline (a blank line follows it).
    pub(super) markdown: String,
    /// Fields added to the JSON report's object.
    pub(super) json: Vec<(&'static str, serde_json::Value)>,
}

impl Preface {
    /// `report` (in `format`) with the preface: written before it (and after, in text), or
    /// its fields added to the JSON object (a report that is not one is left as it is).
    pub(super) fn around(self, report: String, format: Format) -> String {
        match format {
            Format::Text => {
                let after = self.text_after.map(|line| line + "\n").unwrap_or_default();
                self.text + &report + &after
            }
            Format::Markdown => self.markdown + "\n" + &report,
            Format::Json => {
                let Ok(serde_json::Value::Object(mut fields)) = serde_json::from_str(&report)
                else {
                    return report;
                };
                fields.extend(self.json.into_iter().map(|(name, value)| (name.to_owned(), value)));
                let mut out = serde_json::to_string_pretty(&fields).expect("a report serialises");
                out.push('\n');
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_reports_the_failure() {
        let check = Check {
            rule: "r".into(),
            cell: "uniform keyed-mailbox".into(),
            measured: vec![1.0, 2.0],
            limits: vec![3.0, 3.0],
            op: ">=".into(),
            pass: false,
            void: false,
        };
        let checks = std::slice::from_ref(&check);
        assert!(render(checks, &[], Format::Text).contains("0 passed, 1 failed"));
        assert!(render(checks, &[], Format::Markdown)
            .contains("| ❌ | r | uniform keyed-mailbox | 1 -> 2 | >= 3 |"));
        let json: serde_json::Value =
            serde_json::from_str(&render(checks, &[], Format::Json)).unwrap();
        assert_eq!(json["failed"], 1);
    }

    #[test]
    fn every_format_lists_the_rules_that_did_not_apply() {
        let not_run = [NotRun { rule: "cold".into(), scenario: "cold-command".into(), why: None }];
        let text = render(&[], &not_run, Format::Text);
        assert!(text.contains("n/a   cold") && text.contains("1 not applied"), "{text}");
        let markdown = render(&[], &not_run, Format::Markdown);
        assert!(markdown.contains("- cold (`cold-command`)"), "{markdown}");
        let json: serde_json::Value =
            serde_json::from_str(&render(&[], &not_run, Format::Json)).unwrap();
        assert_eq!(json["not_run"][0]["scenario"], "cold-command");
    }
}
