//! The line on the machine that opens `summary.md` and `report.html`: quiet, or how busy
//! it was and which cells that touched (from the cells' interference receipts).

use super::prose::{prose, prose_cell};
use super::table::Cell;
use crate::results::interference::{meets_reference_bar, REFERENCE_DISTURBED_SHARE};
use crate::results::{Interference, Results, Validity};

/// Cells named in the line before "and N more".
const NAMED_CELLS: usize = 6;

/// The sentence as spans, or `None` where no cell has a receipt (files from before them).
pub fn line(results: &Results) -> Option<Cell> {
    let name = |parts: [&str; 3]| parts.join(" ").split_whitespace().collect::<Vec<_>>().join(" ");
    let measured = results.runs.iter().map(|run| {
        Some((name([&run.scenario, &run.param, &run.strategy]), run.interference.as_ref()?))
    });
    let pipelines = results.pipelines.iter().map(|run| {
        Some((name([&run.scenario, &run.param, &run.strategy]), run.interference.as_ref()?))
    });
    let cells: Vec<(String, &Interference)> = measured.chain(pipelines).flatten().collect();
    if cells.is_empty() {
        return None;
    }
    let count = |validity| cells.iter().filter(|(_, receipt)| receipt.validity == validity).count();
    let (disturbed, void) = (count(Validity::Disturbed), count(Validity::Void));
    let unmeasured = count(Validity::Unmeasured);
    let validities: Vec<Validity> = cells.iter().map(|(_, receipt)| receipt.validity).collect();
    let share = format!("{:.0}", REFERENCE_DISTURBED_SHARE * 100.0);
    let bar = if meets_reference_bar(&validities) {
        prose!("interference", "reference_bar", share = share)
    } else {
        prose!("interference", "not_reference", share = share)
    };
    if disturbed + void == 0 {
        return Some(prose_cell!(
            "interference",
            "quiet",
            cells = cells.len(),
            unmeasured = unmeasured,
            bar = bar,
        ));
    }
    let busiest = cells
        .iter()
        .flat_map(|(_, receipt)| [receipt.other_share(), receipt.steal_share()])
        .flatten()
        .fold(0.0, f64::max);
    let remeasured: usize = cells.iter().map(|(_, receipt)| receipt.remeasured).sum();
    let touched: Vec<&str> = cells
        .iter()
        .filter(|(_, receipt)| receipt.validity >= Validity::Disturbed)
        .map(|(name, _)| name.as_str())
        .collect();
    let mut named = touched.iter().take(NAMED_CELLS).copied().collect::<Vec<_>>().join(", ");
    if touched.len() > NAMED_CELLS {
        named.push_str(&format!(" and {} more", touched.len() - NAMED_CELLS));
    }
    Some(prose_cell!(
        "interference",
        "busy",
        busiest = format!("{:.0}", busiest * 100.0),
        disturbed = disturbed,
        cells = cells.len(),
        void = void,
        remeasured = remeasured,
        named = named,
        bar = bar,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::reference::first as reference;

    fn receipt(other_cpu_s: f64) -> Interference {
        Interference::judged(10.0, 2, 0.01, Some(other_cpu_s), Some(0.0), None, None)
    }

    #[test]
    fn files_without_receipts_say_nothing_of_the_machine() {
        assert_eq!(line(&reference()), None);
    }

    #[test]
    fn a_quiet_run_says_so_and_a_busy_one_names_its_cells() {
        let mut results = reference();
        for run in &mut results.runs {
            run.interference = Some(receipt(0.1));
        }
        let quiet = line(&results).unwrap().prose_markdown();
        assert!(quiet.starts_with("**Machine:** quiet"), "{quiet}");
        assert!(quiet.ends_with("It meets the reference bar (no void cell, at most 1% disturbed)."));
        results.runs[0].interference = Some(receipt(3.0));
        results.runs[1].interference = Some(Interference { remeasured: 2, ..receipt(9.0) });
        let busy = line(&results).unwrap().prose_markdown();
        assert!(busy.contains("up to 45%"), "{busy}");
        assert!(busy.contains("1 of") && busy.contains("disturbed"), "{busy}");
        assert!(busy.contains("1 void") && busy.contains("2 measurements repeated"), "{busy}");
        assert!(busy.contains("It is not a reference run"), "{busy}");
        let first = &results.runs[0];
        assert!(busy.contains(&format!("{} {}", first.scenario, first.strategy)), "{busy}");
    }
}
