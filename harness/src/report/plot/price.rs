//! The price of order across the scenarios: per cell, each ordered design's throughput and
//! p99 latency over the unordered control's (`price_of_order[]`), a dashed level at 1.

use super::bars::{Bar, BarPanel, Bars, Fill, Group, Slots};
use super::layout;
use super::panel::{strategy_entries, Axis, Frame, Layout, Mark};
use super::{log_range, render, strategy_colour, Planned};
use crate::report::prose::prose;
use crate::report::view::View;
use crate::report::{cell_name, first_seen};
use crate::results::PriceOfOrder;
use crate::workload::ScenarioId;

/// A log axis' tick label at the powers of ten only (`0.01`, `0.1`, `1`, `10`), so that the
/// many ticks between them stay unlabelled.
fn decade_label(ratio: &f64) -> String {
    let exponent = ratio.log10();
    if (exponent - exponent.round()).abs() > 1e-6 {
        return String::new();
    }
    let decimals = (-exponent.round()).max(0.0) as usize;
    format!("{ratio:.decimals$}")
}

/// The bar of `design` in `cell` at `slot`, filled by its receipt; none where it has no
/// price or no such ratio.
fn bar(
    view: &View<'_>,
    (scenario, param): (ScenarioId, &str),
    design: &str,
    value: fn(&PriceOfOrder) -> Option<f64>,
    slot: usize,
) -> Option<Bar> {
    let price = view.price(scenario, param, design)?;
    Some(Bar::new(slot, value(price)?, strategy_colour(design)).fill(Fill::of(price.validity)))
}

/// The chart, or nothing where the file has no prices (files from before them, or a run
/// without the control): such a run's report stays as it was.
pub(super) fn plan(view: &View<'_>) -> Option<Planned> {
    // The prices of the scenarios whose specs put them in the chart, with their scenario.
    let shown = |price| Some((View::price_scenario(price)?, price));
    let prices: Vec<(ScenarioId, &PriceOfOrder)> = view
        .results()
        .price_of_order
        .iter()
        .filter_map(shown)
        .filter(|(scenario, _)| scenario.spec().charts.price_of_order)
        .collect();
    if prices.is_empty() {
        return None;
    }
    let cells = first_seen(prices.iter().map(|(scenario, price)| (*scenario, &*price.param)));
    let prices: Vec<&PriceOfOrder> = prices.into_iter().map(|(_, price)| price).collect();
    let designs = first_seen(prices.iter().map(|price| price.strategy.as_str()));
    let labels: Vec<String> =
        cells.iter().map(|(scenario, param)| cell_name(scenario.as_str(), param)).collect();
    let panel = |caption: &str, value: fn(&PriceOfOrder) -> Option<f64>| {
        let range = log_range(prices.iter().filter_map(|price| value(price)).chain([1.0]));
        let group = |&cell: &(ScenarioId, &str)| -> Group {
            let bar = |(slot, design): (usize, &&str)| bar(view, cell, design, value, slot);
            designs.iter().enumerate().filter_map(bar).collect()
        };
        BarPanel {
            frame: Frame::new(8, (30, 150)).caption(caption),
            categories: labels.clone(),
            values: Axis::log(range, decade_label).desc("over thread-pool's (log)"),
            slots: Slots::spread(designs.len(), 0.86, 0.9),
            groups: cells.iter().map(group).collect(),
            level: Some((1.0, 1)),
            ..BarPanel::default()
        }
    };
    let plot = Bars {
        title: "Price of order: each ordered design over the unordered control".into(),
        canvas: layout::CELL_COLUMNS,
        legend: strategy_entries(&designs, Mark::Bar),
        layout: Layout::Above(50),
        panels: vec![
            panel("throughput over thread-pool's", |price| price.throughput),
            panel("p99 latency over thread-pool's", |price| price.p99_latency),
        ],
    };
    Some(render("price-of-order", "Price of order", prose!("charts", "price"), &plot))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::reference::receipts as reference;

    #[test]
    fn a_priced_run_draws_the_chart_and_an_older_file_neither_draws_nor_skips_it() {
        let mut results = reference();
        assert!(plan(&View::of(&results)).is_none(), "a file from before prices has no chart");
        results.price_order();
        super::super::register_font().unwrap();
        let Some(Planned::Draw(chart)) = plan(&View::of(&results)) else { panic!("no chart") };
        let chart = chart.unwrap();
        assert_eq!(chart.name, "price-of-order");
        assert!(chart.svg.contains("async-io-zipf keys=200"), "every chosen scenario has a group");
        assert!(!chart.svg.contains("cold-command"), "scenarios outside the chart are left out");
    }
}
