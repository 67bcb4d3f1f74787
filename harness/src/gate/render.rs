//! Reports: the verdicts as an aligned text table, a Markdown table for a pull-request
//! comment, or JSON. Only reads verdicts.

use std::fmt::Write as _;

use super::evaluate::Verdict;

/// How to print verdicts.
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
fn measured_text(verdict: &Verdict) -> String {
    let pairs = verdict.measured.iter().zip(&verdict.limits);
    let all_same = verdict.limits.windows(2).all(|pair| pair[0] == pair[1]);
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

/// The verdicts in `format`.
pub fn render(verdicts: &[Verdict], format: Format) -> String {
    let failed = verdicts.iter().filter(|verdict| !verdict.pass).count();
    let mut out = String::new();
    match format {
        Format::Json => {
            out = serde_json::to_string_pretty(&serde_json::json!({
                "passed": verdicts.len() - failed,
                "failed": failed,
                "verdicts": verdicts,
            }))
            .expect("verdicts serialise");
            out.push('\n');
        }
        Format::Markdown => {
            let _ = writeln!(
                out,
                "### keyed-bench gate: {} of {} checks hold\n",
                verdicts.len() - failed,
                verdicts.len()
            );
            out.push_str("| | rule | cell | measured | limit |\n|---|---|---|---:|---:|\n");
            let mut rows: Vec<&Verdict> = verdicts.iter().collect();
            rows.sort_by_key(|verdict| verdict.pass);
            for verdict in rows {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} {} |",
                    if verdict.pass { "✅" } else { "❌" },
                    verdict.rule,
                    verdict.cell,
                    measured_text(verdict),
                    verdict.op,
                    number(*verdict.limits.last().unwrap_or(&f64::NAN))
                );
            }
        }
        Format::Text => {
            for verdict in verdicts {
                let _ = writeln!(
                    out,
                    "{:4}  {:<44} {:<36} {:>22} {} {}",
                    if verdict.pass { "ok" } else { "FAIL" },
                    verdict.rule,
                    verdict.cell,
                    measured_text(verdict),
                    verdict.op,
                    number(*verdict.limits.last().unwrap_or(&f64::NAN))
                );
            }
            let _ = writeln!(out, "{} passed, {} failed", verdicts.len() - failed, failed);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_format_reports_the_failure() {
        let verdict = Verdict {
            rule: "r".into(),
            cell: "uniform keyed-mailbox".into(),
            measured: vec![1.0, 2.0],
            limits: vec![3.0, 3.0],
            op: ">=".into(),
            pass: false,
        };
        assert!(render(std::slice::from_ref(&verdict), Format::Text).contains("0 passed, 1 failed"));
        assert!(render(std::slice::from_ref(&verdict), Format::Markdown)
            .contains("| ❌ | r | uniform keyed-mailbox | 1 -> 2 | >= 3 |"));
        let json: serde_json::Value =
            serde_json::from_str(&render(&[verdict], Format::Json)).unwrap();
        assert_eq!(json["failed"], 1);
    }
}
