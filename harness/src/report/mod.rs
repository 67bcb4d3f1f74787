//! Reports: everything that reads results and shows them. Nothing here times anything.
//!
//! - `view`: a results file read once, each cell found by its key (scenario, parameter,
//!   strategy) rather than by comparing their text;
//! - `format`: durations and rates as people read them;
//! - `verdict`: the table `summary.md` and `report.html` open with, the best ordered design
//!   per cell on its scenario's headline metric;
//! - `summary`: `summary.md`, one table per (scenario, param);
//! - `published`: the summary's tables that set a scenario beside its bound or a published
//!   figure (cold-command, the key sweeps, parallel-consumer);
//! - `prose`: the reports' words (paragraphs, notes, the charts' notes), kept in template
//!   files under `harness/templates/prose/` and rendered by name;
//! - `pipeline`: the summary's tables of the end-to-end pipeline scenarios;
//! - `price`: the summary's price of order, each ordered design over the unordered control;
//! - `standing`: the summary's cells where `keyed-mailbox` trails the best design, each
//!   with the cause its counters give;
//! - `isolation`: the summary's isolation table, each design's bystanders under a stressor
//!   over its unstressed twin, met or missed against the bound;
//! - `plot`: the charts, PNG and SVG;
//! - `html`: `report.html`, the charts and the summary on one page;
//! - `history`: `keyed-bench history`, every committed run's ranked figures on one page;
//! - `incomplete`: the line both open with for an incomplete run;
//! - `interference`: the line both open with on the machine: quiet, or how busy;
//! - `document`: a report as blocks (headings, paragraphs, items, tables), written as
//!   Markdown or HTML;
//! - `table`: the one table model every report fills, and its Markdown, text and HTML
//!   emitters;
//! - `export`: results in the formats of continuous-benchmarking services;
//! - `catalog`: what the suite can run, for `keyed-bench list`.

pub mod catalog;
pub mod document;
pub mod export;
pub mod format;
pub mod history;
pub mod html;
pub mod incomplete;
pub mod isolation;
pub mod interference;
pub mod pipeline;
pub mod plot;
pub mod price;
pub mod prose;
mod published;
pub mod standing;
pub mod summary;
pub mod table;
pub mod verdict;
pub mod view;

use std::borrow::Cow;

use strategies::{descriptor_of, Descriptor, Family, Threads};

use crate::results::Validity;

/// What the reports know of the strategy a results file names `id`: its built-in
/// descriptor, or for an id this build does not know, one that contends for nothing (not
/// ordered: its promises are unknown) with a colour derived from the id.
pub fn descriptor(id: &str) -> Cow<'static, Descriptor> {
    descriptor_of(id).map_or_else(
        || {
            Cow::Owned(Descriptor::custom(
                id.to_owned(),
                "not a strategy of this build",
                Family::Unordered,
                false,
                Threads::SharedPool,
            ))
        },
        Cow::Borrowed,
    )
}

/// Whether a strategy competes for "best" (ordered, and not the `inline` reference).
pub(crate) fn is_contender(strategy: &str) -> bool {
    let descriptor = descriptor(strategy);
    descriptor.ordered && descriptor.family != Family::Inline
}

/// The distinct items of `items`, in order of first appearance.
pub(crate) fn first_seen<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

/// A param as a table shows it: `-` where the scenario has none.
pub(crate) fn or_dash(param: &str) -> &str {
    if param.is_empty() {
        "-"
    } else {
        param
    }
}

/// A cell's name: its scenario, then its param where it has one.
pub(crate) fn cell_name(scenario: &str, param: &str) -> String {
    if param.is_empty() {
        scenario.to_owned()
    } else {
        format!("{scenario} {param}")
    }
}

/// How a cell's receipt marks it where it was not clean: ` [disturbed]`, ` [void]`.
pub(crate) fn validity_mark(validity: Option<Validity>) -> String {
    match validity {
        Some(validity @ (Validity::Disturbed | Validity::Void)) => {
            format!(" [{}]", validity.name())
        }
        _ => String::new(),
    }
}

/// The committed reference runs that the reports' tests take and doctor.
#[cfg(test)]
pub(crate) mod reference {
    use crate::results::Results;

    /// `2026-11-30-vm`: the default suite, from before pipelines and receipts.
    pub(crate) fn first() -> Results {
        let text = include_str!("../../../results/2026-11-30-vm/results.json");
        Results::parse(text.as_bytes(), "reference.json".as_ref()).expect("the run reads")
    }

    /// `2026-12-02-vm`: the default suite with pipelines and interference receipts.
    pub(crate) fn receipts() -> Results {
        let text = include_str!("../../../results/2026-12-02-vm/results.json");
        serde_json::from_str(text).expect("the run reads")
    }
}
