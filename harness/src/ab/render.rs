//! An A/B comparison as an aligned text table, as Markdown for a pull-request comment, and
//! as JSON. Only reads the comparison and the rounds.

use std::fmt::Write as _;
use std::path::Path;

use super::{Base, Rounds, UNJUDGED};
use crate::compare::{
    fail_on_regression_json, judged_table, regression_line, Comparison, Correction, ListedCell,
    Regressions,
};
use crate::report::table::Table;

/// What a report names beside the comparison.
#[derive(Clone, Copy, Debug)]
pub struct Report<'a> {
    /// The base side.
    pub base: &'a Base,
    /// The head binary.
    pub head: &'a Path,
    /// The commit the head's results record.
    pub head_commit: &'a str,
    /// The run flags both sides ran.
    pub run_flags: &'a [String],
    /// `--rounds`.
    pub planned: usize,
    /// The samples gathered.
    pub rounds: &'a Rounds,
    /// The two merged files compared.
    pub comparison: &'a Comparison,
    /// The rows past `--fail-on-regression`, where given.
    pub regressions: Option<Regressions<'a, 'a>>,
}

impl Report<'_> {
    /// `main, commit 1a2b3c..., binary PATH (built now)`.
    fn base_line(&self) -> String {
        let base = self.base;
        match &base.commit {
            Some(commit) => format!(
                "{}, commit {commit}, binary {} ({})",
                base.given,
                base.binary.display(),
                if base.built { "built now" } else { "built before, reused" }
            ),
            None => {
                format!("{}, prebuilt binary {} (--base-binary)", base.given, base.binary.display())
            }
        }
    }

    /// The head's results record the commit of the working directory, which is this
    /// binary's unless the tree changed since it was built.
    fn head_line(&self) -> String {
        format!(
            "this binary, {}; its runs record the working directory's commit {}",
            self.head.display(),
            self.head_commit
        )
    }

    /// `6 rounds, base then head in each (2 extra: void rounds)`.
    fn rounds_line(&self) -> String {
        let run = self.rounds.run();
        let extra = match self.rounds.extra {
            0 => String::new(),
            n => format!(" ({n} past --rounds {}: void rounds left cells short)", self.planned),
        };
        format!("{run} rounds, base then head in each{extra}")
    }

    /// How verdicts were reached, in one sentence.
    fn method(&self) -> String {
        let comparison = self.comparison;
        let judged = comparison.rows().filter(|(_, row)| row.judgement.p_value.is_some()).count();
        let corrected = match comparison.correction {
            Correction::Holm => {
                format!(", its p-values Holm-corrected for the {judged} rows judged")
            }
            Correction::None => String::new(),
        };
        format!(
            "verdicts: two-sided Welch's t-test (on logarithms) at alpha {} on one sample per valid \
             round{corrected}, and medians more than {}% apart; a round void on a side gives no \
             sample there; fewer than {} valid samples on a side: too few samples to judge",
            comparison.alpha, comparison.threshold_pct, comparison.min_samples
        )
    }

    /// The verdict counts, `1 slower, 3 within noise`, nonzero ones only.
    fn counts(&self) -> String {
        let counts: Vec<String> = self
            .comparison
            .counts()
            .iter()
            .filter(|(_, count)| *count > 0)
            .map(|(verdict, count)| format!("{count} {verdict}"))
            .collect();
        if counts.is_empty() {
            "no cell judged".to_owned()
        } else {
            counts.join(", ")
        }
    }

    /// One row per cell and metric, with its void rounds per side.
    fn table(&self) -> Table {
        let void = |cell: &ListedCell| {
            let (_, (base, head)) = self.rounds.counts(&(cell.key.clone(), cell.workers));
            format!("{base}/{head}")
        };
        judged_table(self.comparison, ["base", "head"], Some(("void", &void)))
    }

    /// Notes under the heading: settings that differ, cells on one side only, pipelines.
    fn notes(&self) -> Vec<String> {
        let comparison = self.comparison;
        let mut notes = Vec::new();
        if !comparison.settings.is_empty() {
            let listed: Vec<String> = comparison
                .settings
                .iter()
                .map(|d| format!("{} {} -> {}", d.field, d.a, d.b))
                .collect();
            notes
                .push(format!("the builds' settings differ (base -> head): {}", listed.join("; ")));
        }
        for (side, cells) in [("base", &comparison.only_in_a), ("head", &comparison.only_in_b)] {
            if !cells.is_empty() {
                let listed: Vec<String> = cells.iter().map(ToString::to_string).collect();
                notes.push(format!("only the {side} ran (not compared): {}", listed.join(", ")));
            }
        }
        if !comparison.pipelines.is_empty() {
            notes.push(
                "pipeline cells run once per round and are not judged; their figures are in \
                 the rounds' files"
                    .into(),
            );
        }
        notes
    }

    /// The cells `--fail-on-regression` cannot judge, with their `(base, head)` valid
    /// samples: none where it was not given.
    fn unjudged(&self) -> Vec<(&ListedCell, (usize, usize))> {
        if self.regressions.is_none() {
            return Vec::new();
        }
        let counts = |cell: &ListedCell| self.rounds.counts(&(cell.key.clone(), cell.workers)).0;
        self.comparison.unjudged().into_iter().map(|cell| (cell, counts(cell))).collect()
    }

    /// The verdict on `--fail-on-regression`: blocks of a heading and its items, the
    /// regressions, then the cells it cannot judge.
    fn verdict_blocks(&self) -> Vec<(String, Vec<String>)> {
        let Some((pct, found)) = self.regressions else { return Vec::new() };
        let unjudged = self.unjudged();
        let mut blocks = Vec::new();
        if found.is_empty() {
            let cell = if unjudged.is_empty() { "cell" } else { "judged cell" };
            let heading = format!("no {cell} is slower by more than {pct}% (--fail-on-regression)");
            blocks.push((heading, Vec::new()));
        } else {
            let heading =
                format!("{} slower by more than {pct}% (--fail-on-regression):", found.len());
            let items = found.iter().map(|(cell, row)| regression_line(cell, row));
            blocks.push((heading, items.collect()));
        }
        if !unjudged.is_empty() {
            let heading = format!(
                "{} cell(s) unjudged, fewer than {} valid samples on a side: \
                 --fail-on-regression cannot pass them (exit {UNJUDGED} unless a regression \
                 fails it):",
                unjudged.len(),
                self.comparison.min_samples
            );
            let items = unjudged.iter().map(|(cell, (base, head))| {
                format!("{cell}: {base} base, {head} head valid samples")
            });
            blocks.push((heading, items.collect()));
        }
        blocks
    }
}

/// The comparison as aligned text, for a terminal.
pub fn render_text(report: &Report<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "base: {}", report.base_line());
    let _ = writeln!(out, "head: {}", report.head_line());
    let _ = writeln!(out, "run flags: {}", shown_flags(report.run_flags));
    let _ = writeln!(out, "{}", report.rounds_line());
    let _ = writeln!(out, "{}", report.method());
    for note in report.notes() {
        let _ = writeln!(out, "note: {note}");
    }
    out.push('\n');
    if report.comparison.cells.is_empty() {
        out.push_str("no cell ran on both sides\n");
    } else {
        out.push_str(&report.table().text(""));
    }
    let _ = writeln!(out, "\n{}", report.counts());
    for (heading, items) in report.verdict_blocks() {
        let _ = writeln!(out, "{heading}");
        for item in items {
            let _ = writeln!(out, "  {item}");
        }
    }
    out
}

/// The comparison as Markdown, for a pull-request comment.
pub fn render_markdown(report: &Report<'_>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### keyed-bench ab: {}\n", report.counts());
    let _ = writeln!(out, "- base: {}", report.base_line());
    let _ = writeln!(out, "- head: {}", report.head_line());
    let _ = writeln!(out, "- run flags: `{}`", shown_flags(report.run_flags));
    let _ = writeln!(out, "- {}", report.rounds_line());
    let _ = writeln!(out, "- {}", report.method());
    for note in report.notes() {
        let _ = writeln!(out, "- **note:** {note}");
    }
    for (heading, items) in report.verdict_blocks() {
        let _ = writeln!(out, "\n**{heading}**");
        for item in items {
            let _ = writeln!(out, "- `{item}`");
        }
    }
    if !report.comparison.cells.is_empty() {
        out.push('\n');
        out.push_str(&report.table().markdown());
    }
    out
}

/// The comparison, the rounds and each cell's void rounds as JSON (`ab.json`).
pub fn render_json(report: &Report<'_>) -> String {
    let base = report.base;
    let cells: Vec<serde_json::Value> = report
        .rounds
        .ids()
        .map(|id| {
            let ((valid_base, valid_head), _) = report.rounds.counts(id);
            serde_json::json!({
                "cell": id.0,
                "workers": id.1,
                "valid": { "base": valid_base, "head": valid_head },
                "void_rounds": {
                    "base": report.rounds.base.void_rounds(id),
                    "head": report.rounds.head.void_rounds(id),
                },
            })
        })
        .collect();
    let regressions = report.regressions.map(|regressions| {
        let unjudged: Vec<serde_json::Value> = report
            .unjudged()
            .iter()
            .map(|(cell, (base, head))| {
                serde_json::json!({ "cell": cell, "valid": { "base": base, "head": head } })
            })
            .collect();
        let mut verdict = fail_on_regression_json(regressions);
        let failed = !regressions.1.is_empty();
        verdict["inconclusive"] = (!failed && !unjudged.is_empty()).into();
        verdict["unjudged"] = unjudged.into();
        verdict
    });
    let value = serde_json::json!({
        "base": {
            "given": base.given,
            "commit": base.commit,
            "binary": base.binary.display().to_string(),
            "built": base.built,
        },
        "head": { "binary": report.head.display().to_string(), "commit": report.head_commit },
        "run_flags": report.run_flags,
        "rounds": {
            "planned": report.planned,
            "run": report.rounds.run(),
            "extra": report.rounds.extra,
        },
        "order": "base then head in each round",
        "cells": cells,
        "comparison": report.comparison,
        "fail_on_regression": regressions,
    });
    let mut out = serde_json::to_string_pretty(&value).expect("an A/B report serialises");
    out.push('\n');
    out
}

/// The run flags as one would type them; `(none: the default suite)` where none.
fn shown_flags(flags: &[String]) -> String {
    if flags.is_empty() {
        "(none: the default suite)".to_owned()
    } else {
        crate::suite::command_line(flags.iter().map(String::as_str))
    }
}
