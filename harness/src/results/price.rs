//! `price_of_order[]`: what per-key order costs each ordered design, cell by cell, against
//! the unordered control (`thread-pool`) on the same workload, in the same run.
//!
//! A design's figure over the control's, for every measured cell where both ran (same
//! scenario and param, whose end is the sweep point): throughput (below 1: order costs
//! throughput) and p99 latency (above 1: order costs latency); for a pipeline cell, records
//! redelivered and the committed-offset lag's p99 (above 1: order costs duplicates or lag).
//! A ratio whose denominator is zero is absent. The control is unordered: its figures are
//! what the same threads do when nothing waits for a key's turn, so the ratio is the price
//! of that wait, the window it holds and the bookkeeping that keeps it. Derived from
//! `runs[]` and `pipelines[]` whenever the file is written; a file from before it reads as
//! empty.

use serde::{Deserialize, Serialize};

use super::{PipelineRun, Results, RunResult, Validity};

/// The unordered control every price is measured against.
pub const CONTROL: &str = "thread-pool";

/// One ordered design's price of order in one cell.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PriceOfOrder {
    /// Scenario id.
    pub scenario: String,
    /// The cell's param (its sweep point at its end, where there is one).
    pub param: String,
    /// The ordered design.
    pub strategy: String,
    /// Its median throughput over the control's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput: Option<f64>,
    /// Its p99 latency over the control's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_latency: Option<f64>,
    /// Pipelines: its records redelivered over the control's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redelivered: Option<f64>,
    /// Pipelines: its committed-offset lag's p99 over the control's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_lag_p99: Option<f64>,
    /// The worse receipt of the two cells (`void` where either was void: not to be ranked);
    /// absent where a cell has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity: Option<Validity>,
}

/// `numerator / denominator`, absent where the denominator is zero.
fn ratio(numerator: f64, denominator: f64) -> Option<f64> {
    (denominator > 0.0).then(|| numerator / denominator)
}

/// Whether `strategy` is an ordered design other than the `inline` reference.
fn priced(strategy: &str) -> bool {
    strategy != "inline"
        && strategies::descriptor_of(strategy).is_some_and(|descriptor| descriptor.ordered)
}

/// The worse of two receipts; absent where either cell has none.
fn worse(a: Option<Validity>, b: Option<Validity>) -> Option<Validity> {
    Some(a?.max(b?))
}

/// Every ordered design's price in every measured cell where the control ran, in the
/// order of `runs[]` then `pipelines[]`.
pub fn of(runs: &[RunResult], pipelines: &[PipelineRun]) -> Vec<PriceOfOrder> {
    let mut prices = Vec::new();
    for run in runs.iter().filter(|run| priced(&run.strategy)) {
        let here = (&run.scenario, &run.param);
        let Some(control) = runs
            .iter()
            .find(|other| other.strategy == CONTROL && (&other.scenario, &other.param) == here)
        else {
            continue;
        };
        prices.push(PriceOfOrder {
            scenario: run.scenario.clone(),
            param: run.param.clone(),
            strategy: run.strategy.clone(),
            throughput: ratio(run.throughput_per_s.median, control.throughput_per_s.median),
            p99_latency: ratio(run.latency_ns.p99 as f64, control.latency_ns.p99 as f64),
            redelivered: None,
            commit_lag_p99: None,
            validity: worse(run.validity(), control.validity()),
        });
    }
    for run in pipelines.iter().filter(|run| priced(&run.strategy)) {
        let here = (&run.scenario, &run.param);
        let Some(control) = pipelines
            .iter()
            .find(|other| other.strategy == CONTROL && (&other.scenario, &other.param) == here)
        else {
            continue;
        };
        let receipt =
            |cell: &PipelineRun| cell.interference.as_ref().map(|receipt| receipt.validity);
        prices.push(PriceOfOrder {
            scenario: run.scenario.clone(),
            param: run.param.clone(),
            strategy: run.strategy.clone(),
            throughput: ratio(run.throughput_per_s, control.throughput_per_s),
            p99_latency: None,
            redelivered: ratio(run.redelivered as f64, control.redelivered as f64),
            commit_lag_p99: ratio(run.commit_lag.p99 as f64, control.commit_lag.p99 as f64),
            validity: worse(receipt(run), receipt(control)),
        });
    }
    prices
}

impl Results {
    /// Sets `price_of_order[]` from the cells the file holds now.
    pub fn price_order(&mut self) {
        self.price_of_order = of(&self.runs, &self.pipelines);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed reference run with receipts: real cells, one of them void.
    fn reference() -> Results {
        serde_json::from_str(include_str!("../../../results/2026-12-02-vm/results.json")).unwrap()
    }

    fn find<'a>(
        prices: &'a [PriceOfOrder],
        scenario: &str,
        param: &str,
        strategy: &str,
    ) -> &'a PriceOfOrder {
        prices
            .iter()
            .find(|price| {
                price.scenario == scenario && price.param == param && price.strategy == strategy
            })
            .unwrap_or_else(|| panic!("no price for {scenario} {param} {strategy}"))
    }

    #[test]
    fn a_price_is_the_design_over_the_control_in_the_same_cell() {
        let results = reference();
        let prices = of(&results.runs, &results.pipelines);
        let cell = |strategy: &str| {
            results
                .runs
                .iter()
                .find(|run| run.scenario == "zipf" && run.strategy == strategy)
                .unwrap()
        };
        let (design, control) = (cell("keyed-mailbox"), cell(CONTROL));
        let price = find(&prices, "zipf", "", "keyed-mailbox");
        assert_eq!(
            price.throughput,
            Some(design.throughput_per_s.median / control.throughput_per_s.median)
        );
        assert_eq!(
            price.p99_latency,
            Some(design.latency_ns.p99 as f64 / control.latency_ns.p99 as f64)
        );
        assert_eq!(price.redelivered, None);
        // Neither the reference nor the control is priced.
        assert!(prices.iter().all(|price| price.strategy != "inline" && price.strategy != CONTROL));
    }

    #[test]
    fn a_void_side_makes_the_price_void() {
        let results = reference();
        let prices = of(&results.runs, &results.pipelines);
        assert_eq!(find(&prices, "uniform", "", "per-type-pool").validity, Some(Validity::Void));
        assert_ne!(find(&prices, "zipf", "", "per-type-pool").validity, Some(Validity::Void));
    }

    #[test]
    fn pipelines_are_priced_by_duplicates_and_lag() {
        let results = reference();
        let prices = of(&results.runs, &results.pipelines);
        let cell = |strategy: &str| {
            results
                .pipelines
                .iter()
                .find(|run| {
                    run.param == "policy=contiguous"
                        && run.scenario == "pipeline-crash"
                        && run.strategy == strategy
                })
                .unwrap()
        };
        let (design, control) = (cell("group-by"), cell(CONTROL));
        let price = find(&prices, "pipeline-crash", "policy=contiguous", "group-by");
        assert_eq!(price.redelivered, ratio(design.redelivered as f64, control.redelivered as f64));
        assert_eq!(
            price.commit_lag_p99,
            ratio(design.commit_lag.p99 as f64, control.commit_lag.p99 as f64)
        );
        assert_eq!(price.p99_latency, None);
    }

    #[test]
    fn a_cell_without_the_control_has_no_price_and_a_zero_control_no_ratio() {
        let mut results = reference();
        results.runs.retain(|run| run.scenario != "zipf" || run.strategy != CONTROL);
        let prices = of(&results.runs, &results.pipelines);
        assert!(prices.iter().all(|price| price.scenario != "zipf"));
        assert_eq!(ratio(3.0, 0.0), None);
    }

    #[test]
    fn sweep_points_are_priced_apart() {
        let mut results = reference();
        let mut swept: Vec<RunResult> =
            results.runs.iter().filter(|run| run.scenario == "zipf").cloned().collect();
        for run in &mut swept {
            // A sweep point ends the param, as the suite writes it.
            run.param = "workers=4".to_owned();
            run.throughput_per_s.median *= if run.strategy == CONTROL { 2.0 } else { 1.0 };
        }
        results.runs.extend(swept);
        let prices = of(&results.runs, &results.pipelines);
        let first = find(&prices, "zipf", "", "rayon").throughput.unwrap();
        let second = find(&prices, "zipf", "workers=4", "rayon").throughput.unwrap();
        assert!((first / second - 2.0).abs() < 1e-9, "{first} {second}");
    }
}
