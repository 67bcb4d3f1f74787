//! The summary's price of order: each ordered design's figures over the unordered
//! control's in the same cell (`price_of_order[]`), and how they stand beside the Parallel
//! Consumer fork's KEY against UNORDERED figures.

use std::collections::HashMap;

use super::document::Document;
use super::format::format_short_ratio;
use super::prose::{prose, prose_cell};
use super::table::{Cell, Declared, Style, Table};
use super::view::View;
use super::{first_seen, validity_mark};
use crate::results::price::{PriceOfOrder, CONTROL};
use crate::results::{CellKey, Results, Validity};
use crate::workload::zipf_top_share;

/// `a / b`, each side `-` where absent, marked by its receipt.
fn pair(first: Option<f64>, second: Option<f64>, validity: Option<Validity>) -> Cell {
    let side = |value: Option<f64>| value.map_or_else(|| "-".to_owned(), format_short_ratio);
    Cell::plain(format!("{} / {}{}", side(first), side(second), validity_mark(validity)))
}

/// A measured cell's price as the tables show it: throughput / p99, over the control's.
pub(super) fn cell(price: &PriceOfOrder) -> Cell {
    pair(price.throughput, price.p99_latency, price.validity)
}

/// A row of a price table: a cell's scenario and param.
type Row<'a> = (&'a str, &'a str);

/// Which pair of figures a price table shows of a price.
type Sides<'a> = &'a dyn Fn(&PriceOfOrder) -> (Option<f64>, Option<f64>);

/// One row per cell (scenario and param), one column per design; each entry the pair
/// `sides` takes from a price.
fn table(prices: &[&PriceOfOrder], sides: Sides<'_>) -> Table {
    let mut at: HashMap<CellKey, &PriceOfOrder> = HashMap::new();
    for &price in prices {
        let key = CellKey::recorded(&price.scenario, &price.param, &price.strategy);
        at.entry(key).or_insert(price);
    }
    let designs = first_seen(prices.iter().map(|price| price.strategy.as_str()));
    let cells = first_seen(prices.iter().map(|price| (&*price.scenario, &*price.param)));
    let columns = columns(&designs, &at, sides);
    Table::declared(&columns, &cells)
}

/// The columns of a price table: the cell, then one per design of `designs`, each entry
/// the pair `sides` takes from the design's price in the cell (`at`), `n/a` where it has
/// none.
fn columns<'a>(
    designs: &[&'a str],
    at: &'a HashMap<CellKey, &PriceOfOrder>,
    sides: Sides<'a>,
) -> Vec<Declared<'a, Row<'a>>> {
    let mut columns = vec![
        Declared::left("scenario", |&(scenario, _): &Row<'a>| scenario),
        Declared::left("param", |&(_, param): &Row<'a>| super::or_dash(param)),
    ];
    columns.extend(designs.iter().map(|&design| {
        Declared::right(design, move |&(scenario, param): &Row<'a>| {
            let Some(price) = at.get(&CellKey::recorded(scenario, param, design)) else {
                return Cell::plain("n/a");
            };
            let (first, second) = sides(price);
            pair(first, second, price.validity)
        })
    }));
    columns
}

/// The sentence that sets the fork's figures beside this run's nearest cells.
fn beside_the_fork(results: &Results) -> Cell {
    let zipf_share = results.meta.sizes.as_ref().map(|sizes| {
        let keys = sizes.keys.first().copied().unwrap_or(1);
        let async_keys = sizes.async_zipf_keys.first().copied().unwrap_or(1);
        (
            sizes.zipf_s,
            keys,
            zipf_top_share(keys, sizes.zipf_s),
            async_keys,
            zipf_top_share(async_keys, sizes.zipf_s),
        )
    });
    let ours = zipf_share.map_or_else(String::new, |(s, keys, share, async_keys, async_share)| {
        let here = prose!(
            "price",
            "zipf_here",
            keys = keys,
            s = s.to_string(),
            share = format!("{:.1}", share * 100.0),
            async_keys = async_keys,
            async_share = format!("{:.1}", async_share * 100.0),
        );
        format!(" {here}")
    });
    Cell::plain(prose!("price", "fork")).then(Style::Plain, ours)
}

/// The section, or nothing where the control ran in no cell.
pub fn section(out: &mut Document, view: &View<'_>) {
    let results = view.results();
    let is_pipeline = |price: &&PriceOfOrder| view.is_pipeline_price(price);
    let (pipelines, measured): (Vec<&PriceOfOrder>, Vec<&PriceOfOrder>) =
        results.price_of_order.iter().partition(is_pipeline);
    if measured.is_empty() && pipelines.is_empty() {
        return;
    }
    out.blank();
    out.heading(2, "Price of order");
    out.paragraph(prose_cell!("price", "intro", control = CONTROL));
    if !measured.is_empty() {
        out.blank();
        out.table(table(&measured, &|price| (price.throughput, price.p99_latency)));
    }
    if !pipelines.is_empty() {
        out.blank();
        out.paragraph(Cell::plain(prose!("price", "pipelines")));
        out.blank();
        out.table(table(&pipelines, &|price| (price.redelivered, price.commit_lag_p99)));
    }
    out.blank();
    out.paragraph(beside_the_fork(results));
}

#[cfg(test)]
mod tests {
    use super::*;
    use strategies::StrategyId;

    fn reference() -> Results {
        let mut results = crate::report::reference::receipts();
        results.price_order();
        results
    }

    #[test]
    fn the_summary_prices_every_cell_the_control_ran_in() {
        let results = reference();
        let view = View::of(&results);
        let mut out = Document::default();
        section(&mut out, &view);
        let text = out.markdown();
        println!("{text}");
        assert!(text.contains("## Price of order"), "{text}");
        let zipf = text.lines().find(|line| line.starts_with("| zipf | - |")).expect("a zipf row");
        let zipf_id = "zipf".parse().unwrap();
        let price = view.price(zipf_id, "", "keyed-mailbox").unwrap();
        let shown = format!(
            "{} / {}",
            format_short_ratio(price.throughput.unwrap()),
            format_short_ratio(price.p99_latency.unwrap())
        );
        assert!(zipf.contains(&shown), "{zipf} lacks {shown}");
        assert!(text.contains("| uniform | - | 0.") && text.contains("[void]"), "{text}");
        assert!(text
            .lines()
            .any(|line| line.starts_with("| pipeline-crash | policy=contiguous |")));
        assert!(text.contains("Parallel Consumer fork") && text.contains("over 200 keys ("));
    }

    #[test]
    fn the_verdict_gives_the_best_designs_price_only_where_the_file_has_prices() {
        let results = reference();
        let verdict = super::super::verdict::render_verdict(&results);
        let zipf = verdict.lines().find(|line| line.starts_with("| zipf | - |")).unwrap();
        // The best design is the row's one strong name.
        let named = zipf.split("**").nth(1).expect("a best design");
        let view = View::of(&results);
        let best = view.price("zipf".parse().unwrap(), "", named).expect("the best is priced");
        assert!(zipf.contains(&format!("| {} |", cell(best).text())), "{zipf}");
        let mut before = results.clone();
        before.price_of_order.clear();
        assert!(!super::super::verdict::render_verdict(&before).contains("price of order"));
    }

    #[test]
    fn a_run_without_the_control_has_no_section() {
        let mut results = reference();
        let control = CONTROL.parse::<StrategyId>().ok();
        let kept = |name: &str| name.parse::<StrategyId>().ok() != control;
        results.runs.retain(|run| kept(&run.strategy));
        results.pipelines.retain(|run| kept(&run.strategy));
        results.price_order();
        let mut out = Document::default();
        section(&mut out, &View::of(&results));
        assert_eq!(out.markdown(), "");
    }
}
