//! The summary's tables that set a scenario beside a bound or a published figure:
//! cold-command against Wow's release, the non-blocking key sweeps against their ideal
//! bound, parallel-consumer against its floor and the Parallel Consumer's published
//! figures. `summary` calls them from the scenario's section.

use strategies::StrategyId;

use super::document::Document;
use super::first_seen;
use super::format::format_rate;
use super::prose::prose;
use super::table::{Declared, Table};
use super::view::Rows;
use crate::results::{Metric, RunResult};
use crate::workload::reference::{
    parallel_consumer_key_mode_s, wow_cold_command, PARALLEL_CONSUMER_MESSAGES,
    PARALLEL_CONSUMER_PARTITION_S, PARALLEL_CONSUMER_UNORDERED_S, WOW_COLD_COMMAND_SLOW,
};
use crate::workload::{cold_command_param, keys_param, ScenarioId};

/// `cold-command`: the cold-command rate of each strategy by (slow, senders), and the
/// ratio of `keyed-mailbox` to the 9.2 design (`per-type-pool`) and to `group-by`, beside
/// Wow's published ratios where the cell is their experiment's (128 slow aggregates).
pub(super) fn render_cold_command(out: &mut Document, rows: &Rows<'_>, cores: usize) {
    let (strategies, params) = strategies_and_params(rows);
    out.heading(3, "cold-command: cold commands per second");
    out.prose(&prose!("published", "cold_command", cores = cores));
    let cells: Vec<ColdCell<'_>> = params
        .iter()
        .filter_map(|&param| {
            let (slow, senders) = cold_command_param(param)?;
            Some(ColdCell { param, slow, senders })
        })
        .collect();
    out.table(Table::declared(&cold_command_columns(rows, &strategies), &cells));
    out.blank();
}

/// One row of the cold-command table: a cell's param and the (slow, senders) it names.
struct ColdCell<'a> {
    /// The cell's parameter.
    param: &'a str,
    /// Slow aggregates.
    slow: usize,
    /// Concurrent senders.
    senders: usize,
}

/// The cold-command table's columns: the cell, each of `strategies`' rate, the ratios of
/// `keyed-mailbox` to the 9.2 design and to `group-by`, and Wow's published ratios.
fn cold_command_columns<'a>(
    rows: &'a Rows<'_>,
    strategies: &[&'a str],
) -> Vec<Declared<'a, ColdCell<'a>>> {
    let rate = move |param: &str, strategy: &str| {
        rows.row(param, strategy).map(|row| row.throughput_per_s.median)
    };
    let ratio = move |of: StrategyId| {
        move |cell: &ColdCell<'_>| {
            let mailbox = rate(cell.param, StrategyId::KeyedMailbox.as_str());
            match (mailbox, rate(cell.param, of.as_str())) {
                (Some(mailbox), Some(other)) if other > 0.0 => format!("{:.1}x", mailbox / other),
                _ => "-".into(),
            }
        }
    };
    let mut columns = vec![
        Declared::right("slow", |cell: &ColdCell<'_>| cell.slow.to_string()),
        Declared::right("senders", |cell: &ColdCell<'_>| cell.senders.to_string()),
    ];
    columns.extend(strategies.iter().map(|&strategy| {
        Declared::right(strategy, move |cell: &ColdCell<'_>| {
            rate(cell.param, strategy).map_or("-".into(), format_rate)
        })
    }));
    columns.extend([
        Declared::right(
            "keyed-mailbox / per-type-pool (9.3 / 9.2)",
            ratio(StrategyId::PerTypePool),
        ),
        Declared::right("keyed-mailbox / group-by", ratio(StrategyId::GroupBy)),
        Declared::left("published 9.3 / 9.2", published_cold),
    ]);
    columns
}

/// Wow's published ratios for the senders of `cell`, where the cell is their experiment's
/// (128 slow aggregates); `-` elsewhere.
fn published_cold(cell: &ColdCell<'_>) -> String {
    if cell.slow != WOW_COLD_COMMAND_SLOW {
        return "-".into();
    }
    let published = wow_cold_command(cell.senders).into_iter().map(|(cores, old, new)| {
        format!("{:.0}x ({cores} cores: {} -> {})", new / old, format_rate(old), format_rate(new))
    });
    published.collect::<Vec<_>>().join("; ")
}

/// The distinct strategies and params of `rows`, in first-seen order.
fn strategies_and_params<'a>(rows: &[&'a RunResult]) -> (Vec<&'a str>, Vec<&'a str>) {
    let strategies = first_seen(rows.iter().map(|row| row.strategy.as_str()));
    (strategies, first_seen(rows.iter().map(|row| row.param.as_str())))
}

/// Elapsed time per key count next to the ideal bound, for the non-blocking key sweeps
/// (`async-io`, `async-io-zipf`). No published figure comes from this experiment.
pub(super) fn render_key_sweep(out: &mut Document, scenario: ScenarioId, rows: &Rows<'_>) {
    let messages = rows.first().map_or(0, |row| row.messages);
    out.heading(3, format!("{scenario}: elapsed seconds by key count"));
    out.prose(&prose!("published", "key_sweep", messages = messages));
    out.table(keys_table(rows, "ideal", false, |row| format!("{:.3}", row.elapsed_s)));
    out.blank();
}

/// `parallel-consumer` by key count: the floor from the drawn sleeps, and each strategy's
/// elapsed seconds with its ratio to the floor from the service times it recorded. Where
/// the run is the published experiment (`published`), the published seconds and their ratio
/// to the same drawn floor stand beside them.
pub(super) fn render_parallel_consumer(out: &mut Document, rows: &Rows<'_>, published: bool) {
    let (_, params) = strategies_and_params(rows);
    let messages = rows.first().map_or(0, |row| row.messages);
    let threads = rows.first().and_then(|row| row.workers).unwrap_or(0);
    out.heading(3, "parallel-consumer: elapsed seconds by key count");
    out.prose(&prose!(
        "published",
        "parallel_consumer",
        messages = messages,
        threads = threads,
        published = published,
    ));
    // Each strategy's elapsed seconds over its measured floor.
    out.table(keys_table(rows, "floor", published, |row| {
        match Metric::FloorRatio.value(row, &[]) {
            Some(ratio) => format!("{:.3} ({ratio:.2}x)", row.elapsed_s),
            None => format!("{:.3}", row.elapsed_s),
        }
    }));
    out.blank();
    if published {
        published_modes(out, rows, &params);
    }
}

/// A table by key count: the bound (`bound` names it: the ideal, the floor), then where
/// `published` the published seconds and their ratio to it, then each strategy's `cell`.
fn keys_table(
    rows: &Rows<'_>,
    bound: &str,
    published: bool,
    cell: fn(&RunResult) -> String,
) -> Table {
    let (strategies, params) = strategies_and_params(rows);
    let bound_of = |param: &str| rows.first_in(param).map_or(0.0, |row| row.ideal_s);
    let published_s = |param: &str| keys_param(param).and_then(parallel_consumer_key_mode_s);
    let mut columns: Vec<Declared<'_, str>> = vec![
        Declared::right("keys", |param: &str| {
            keys_param(param).map_or(param.to_owned(), |keys| keys.to_string())
        }),
        Declared::right(bound, move |param: &str| format!("{:.3}", bound_of(param))),
    ];
    if published {
        columns.extend([
            Declared::right("published", move |param: &str| {
                published_s(param).map_or("-".to_owned(), |seconds| seconds.to_string())
            }),
            Declared::right(format!("published / {bound}"), move |param: &str| {
                let ratio = |seconds: f64| format!("{:.2}x", seconds / bound_of(param));
                published_s(param).map_or("-".to_owned(), ratio)
            }),
        ]);
    }
    columns.extend(strategies.iter().map(|&strategy| {
        Declared::right(strategy, move |param: &str| {
            rows.row(param, strategy).map_or("-".into(), cell)
        })
    }));
    Table::declared(&columns, params.iter().copied())
}

/// The Parallel Consumer's PARTITION and UNORDERED modes, each beside the floor it is set
/// against, and where the published figures come from.
fn published_modes(out: &mut Document, rows: &Rows<'_>, params: &[&str]) {
    // The floor of each key count: its first cell's.
    let mut floors = std::collections::HashMap::new();
    for param in rows.params() {
        let (Some(keys), Some(row)) = (keys_param(param), rows.first_in(param)) else { continue };
        floors.entry(keys).or_insert(row.ideal_s);
    }
    let floor_of = |keys: usize| floors.get(&keys).copied();
    if let Some(floor) = floor_of(1) {
        out.prose(&prose!(
            "published",
            "partition",
            published = PARALLEL_CONSUMER_PARTITION_S.to_string(),
            ratio = format!("{:.2}", PARALLEL_CONSUMER_PARTITION_S / floor),
            floor = format!("{floor:.3}"),
        ));
    }
    let most_keys = params.iter().filter_map(|param| keys_param(param)).max();
    if let Some((keys, floor)) = most_keys.and_then(|keys| Some((keys, floor_of(keys)?))) {
        out.prose(&prose!(
            "published",
            "unordered",
            published = PARALLEL_CONSUMER_UNORDERED_S.to_string(),
            ratio = format!("{:.2}", PARALLEL_CONSUMER_UNORDERED_S / floor),
            floor = format!("{floor:.3}"),
            keys = keys,
        ));
    }
    out.prose(&prose!("published", "published_source", messages = PARALLEL_CONSUMER_MESSAGES));
}
