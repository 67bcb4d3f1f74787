//! `summary.md`: one table per (scenario, param), strategies as rows. Reads results only.

use strategies::WindowScope;

use super::document::Document;
use super::format::{format_ns, format_rate};
use super::prose::{prose, prose_cell};
use super::published;
use super::table::{Cell, Declared, Style, Table};
use super::view::{Rows, View};
use super::{is_contender, validity_mark};
use crate::limits::settings::FLAGS;
use crate::results::{EventRates, Meta, Metric, Results, RunResult, SweptSettings};
use crate::workload::reference::is_parallel_consumer_experiment;
use crate::workload::scenario::SummaryExtra;
use crate::workload::ScenarioId;

/// Whether `row` contends for the summary's best of a column: an ordered contender's
/// cell that is not void.
fn contends(row: &RunResult) -> bool {
    is_contender(&row.strategy) && !row.is_void()
}

/// The whole summary: the title, the verdict table, then the run's header and every
/// scenario's tables.
pub fn render_summary(results: &Results) -> String {
    summary(results, true).markdown()
}

/// The summary, with or without the verdict (`report.html` shows it at the top of the page
/// instead).
pub(super) fn summary(results: &Results, with_verdict: bool) -> Document {
    let view = &View::of(results);
    let mut out = Document::default();
    out.heading(1, "keyed-bench summary");
    let opening = [super::incomplete::line(results), super::incomplete::failed_line(results)];
    for line in opening.into_iter().flatten().filter(|_| with_verdict) {
        out.paragraph(line);
        out.blank();
    }
    if let Some(line) = super::interference::line(results) {
        out.paragraph(line);
        out.blank();
    }
    if with_verdict {
        super::verdict::section(&mut out, view);
    }
    super::standing::section(&mut out, view);
    super::standing::hybrid_section(&mut out, view);
    header(&mut out, results);
    for &scenario in ScenarioId::ALL {
        let rows = view.rows(scenario);
        if !rows.is_empty() {
            scenario_section(&mut out, results, scenario, rows);
        }
    }
    crate::report::pipeline::render_pipelines(&mut out, &results.pipelines);
    let transport = results.meta.transport.as_ref();
    crate::report::pipeline::render_transport_calls(&mut out, transport, &results.pipelines);
    super::price::section(&mut out, view);
    super::isolation::section(&mut out, results);
    if !results.skipped.is_empty() {
        out.blank();
        out.heading(2, "Not run");
        for skipped in &results.skipped {
            out.item(
                Cell::default()
                    .then(Style::Code, skipped.strategy.as_str())
                    .then(Style::Plain, " on ")
                    .then(Style::Code, skipped.scenario.as_str())
                    .then(Style::Plain, format!(": {}", skipped.reason)),
            );
        }
    }
    out
}

/// The run's header: where and when it ran, its settings, the recorder's cost, the
/// saturation base, its notes, any oversubscription, and how to read the tables.
fn header(out: &mut Document, results: &Results) {
    let meta = &results.meta;
    out.prose(&prose!(
        "summary",
        "machine",
        created = meta.created.as_str(),
        commit = meta.git_commit.as_str(),
        cpu = meta.cpu_model.as_str(),
        cores = meta.cores,
        rustc = meta.rustc.as_str(),
    ));
    let swept = SweptSettings::of(results);
    out.prose(&settings_line(meta, &swept));
    if let Some(overhead) = meta.recorder_overhead_ns {
        out.prose(&prose!("summary", "overhead", ns = format!("{overhead:.0}")));
    }
    if let Some(saturation) = meta.saturation_per_s {
        out.prose(&prose!("summary", "saturation", rate = format_rate(saturation)));
    }
    for note in &meta.notes {
        out.prose(&prose!("summary", "note", note = note.as_str()));
    }
    external_designs(out, meta);
    if let Some(line) = oversubscribed(meta, &swept) {
        out.prose(&line);
    }
    out.paragraph(Cell::inline(&prose!("summary", "reading")));
}

/// One line per external design (`--external`): what ran it, so that a reader knows which
/// build of which program each of its rows measured, and what its figures hold.
fn external_designs(out: &mut Document, meta: &Meta) {
    for design in &meta.designs {
        let Some(external) = &design.external else { continue };
        out.paragraph(prose_cell!(
            "summary",
            "external_design",
            id = design.id.as_str(),
            description = design.description.as_str(),
            version = external.version.as_str(),
            command = external.command.as_str(),
            sha = &external.source_sha256[..external.source_sha256.len().min(12)],
            wait = external.wait.as_str(),
        ));
    }
}

/// The settings line: every strategy setting (a swept one as the list of its values), the
/// repetitions, the seed, and the command.
fn settings_line(meta: &Meta, swept: &SweptSettings) -> String {
    format!("Settings: {}. Command: `{}`", meta.settings_line(swept), meta.command)
}

/// The line that says which cells ran with more workers and producers than cores, if any
/// did: in a workers sweep, naming the worker counts (`meta.workers` is its first point).
fn oversubscribed(meta: &Meta, swept: &SweptSettings) -> Option<String> {
    let producers = meta.producers.unwrap_or(1);
    let Some(workers) = swept.values(FLAGS.workers.name) else {
        return (meta.workers + producers > meta.cores).then(|| {
            prose!(
                "summary",
                "oversubscribed",
                workers = meta.workers,
                producers = producers,
                cores = meta.cores,
            )
        });
    };
    let over: Vec<&str> = workers
        .iter()
        .copied()
        .filter(|w| w.parse::<usize>().is_ok_and(|w| w + producers > meta.cores))
        .collect();
    if over.is_empty() {
        return None;
    }
    Some(prose!(
        "summary",
        "oversubscribed_sweep",
        workers = over.join(", "),
        cores = meta.cores,
        producers = producers,
    ))
}

/// A scenario's section: its description, a table per param, the paragraphs any scenario
/// may have, and what its spec adds ([`SummaryExtra`]).
fn scenario_section(out: &mut Document, results: &Results, scenario: ScenarioId, rows: &Rows<'_>) {
    out.blank();
    out.heading(2, scenario.to_string());
    out.prose(scenario.description());
    for param in rows.params() {
        let cell = rows.cell(param);
        if !param.is_empty() {
            out.heading(3, format!("{scenario} {param}"));
        }
        render_table(out, &cell);
    }
    render_timer_lateness(out, rows);
    render_driver_gc(out, rows);
    render_breakdown(out, scenario, rows);
    let meta = &results.meta;
    match scenario.spec().summary {
        SummaryExtra::None => {}
        SummaryExtra::DispatchBench => out.prose(&prose!("summary", "dispatch_bench")),
        SummaryExtra::KeySweep => published::render_key_sweep(out, scenario, rows),
        SummaryExtra::ColdCommand => published::render_cold_command(out, rows, meta.cores),
        SummaryExtra::ParallelConsumer => {
            let published = meta.sizes.as_ref().is_some_and(is_parallel_consumer_experiment);
            published::render_parallel_consumer(out, rows, published);
        }
    }
}

/// The table of one (scenario, param): a row per strategy, the columns of
/// [`scenario_columns`].
fn render_table(out: &mut Document, rows: &[&RunResult]) {
    out.table(Table::declared(&scenario_columns(rows), rows.iter().copied()));
    out.blank();
}

/// The columns of a scenario's table over `rows`: the strategy, the metrics the summary
/// ranks (from the metric registry, the best of each strong), and the figures beside them.
fn scenario_columns(rows: &[&RunResult]) -> Vec<Declared<'static, RunResult>> {
    let metric = |metric| Declared::metric(metric, rows, contends);
    let latency = |header, tail: fn(&RunResult) -> u64| {
        Declared::right(header, move |row: &RunResult| format_ns(tail(row) as f64))
    };
    vec![
        Declared::left("strategy", shown_strategy),
        Declared::metric_with(Metric::Throughput, (rows, contends), " (min-max)", rate),
        Declared::right("CPU/msg all / strategy", cpu_per_message),
        latency("p50", |row| row.latency_ns.p50),
        metric(Metric::P99),
        latency("p99.9", |row| row.latency_ns.p999),
        latency("HOL p99", |row| row.hol_ns.p99),
        metric(Metric::BystanderP99),
        Declared::right("threads rep/obs", |row: &RunResult| {
            format!("{}/{}", row.threads.reported, row.threads.observed)
        }),
        metric(Metric::Efficiency),
        Declared::right("machine eff.", |row: &RunResult| {
            row.machine_efficiency.map_or("-".into(), |value| format!("{value:.2}"))
        }),
        Declared::left("correctness", correctness),
    ]
}

/// The strategy's name, with its windows where they are per aggregate type and the mark of
/// a void or doubtful cell.
fn shown_strategy(row: &RunResult) -> String {
    let name = &row.strategy;
    let shown = match (row.window_scope, row.windows) {
        (Some(WindowScope::Type), Some(windows)) => format!("{name} (type windows: {windows})"),
        (Some(WindowScope::Type), None) => format!("{name} (type windows)"),
        _ => name.clone(),
    };
    format!("{shown}{}", validity_mark(row.validity()))
}

/// A throughput's text (`median`) with the repetitions' spread, and the offered rate
/// where the cell fell below it.
fn rate(row: &RunResult, median: String) -> String {
    let mut rate = match Metric::Throughput.spread(row) {
        Some((min, max)) => format!("{median} ({}-{})", format_rate(min), format_rate(max)),
        None => median,
    };
    if row.below_offered == Some(true) {
        rate.push_str(&format!(
            " below offered {}",
            format_rate(row.offered_per_s.unwrap_or_default())
        ));
    }
    rate
}

/// The correctness counts, marked where any is not zero.
fn correctness(row: &RunResult) -> String {
    let c = &row.correctness;
    format!(
        "{}/{}/{}/{}/{}{}",
        c.order_violations,
        c.overlaps,
        c.lost,
        c.duplicates,
        c.failed,
        if c.is_clean() { "" } else { " ✗" }
    )
}

/// A cell's CPU per message: the whole process's, then the strategy's own threads'; `-`
/// for a figure the cell does not have (an older file, no per-thread statistics).
fn cpu_per_message(row: &RunResult) -> String {
    let Some(cpu) = row.cpu_per_message_ns else {
        return "-".into();
    };
    let strategy = cpu.strategy_threads.map_or("-".into(), format_ns);
    format!("{} / {strategy}", format_ns(cpu.process))
}

/// The harness timer's lateness over the cells of a scenario where steps waited on it: a
/// late timer delays every waiting message, whatever the strategy.
fn render_timer_lateness(out: &mut Document, rows: &[&RunResult]) {
    let late: Vec<_> = rows.iter().filter_map(|row| row.timer_lateness_ns).collect();
    let (Some(p99), Some(max)) =
        (late.iter().map(|tail| tail.p99).max(), late.iter().map(|tail| tail.max).max())
    else {
        return;
    };
    out.prose(&prose!(
        "summary",
        "timer_lateness",
        p99 = format_ns(p99 as f64),
        max = format_ns(max as f64),
    ));
}

/// The collections each external design's driver reported in a scenario's cells, beside
/// the cell's receipt: a pause of its runtime is in its figures, whatever the design.
fn render_driver_gc(out: &mut Document, rows: &[&RunResult]) {
    let cells: Vec<String> = rows
        .iter()
        .filter_map(|row| {
            let gc = row.driver_gc?;
            let receipt = row.interference.as_ref().map_or("unmeasured", |r| r.validity.name());
            Some(prose!(
                "summary",
                "driver_gc_cell",
                design = row.strategy.as_str(),
                param = row.param.as_str(),
                collections = gc.collections,
                ms = format!("{:.1}", gc.time_ms),
                receipt = receipt,
            ))
        })
        .collect();
    if !cells.is_empty() {
        out.prose(&prose!("summary", "driver_gc", collections = cells.join("; ")));
    }
}

/// The per-message cost breakdown of a scenario's cells: what each strategy's machinery did
/// per message in its counted repetition, beside the context switches of its timed ones.
fn render_breakdown(out: &mut Document, scenario: ScenarioId, rows: &[&RunResult]) {
    if rows.iter().all(|row| row.events_per_message.is_none()) {
        return;
    }
    out.heading(3, format!("{scenario}: per-message breakdown"));
    out.prose(&prose!("summary", "breakdown"));
    let counted: Vec<(&RunResult, &EventRates)> =
        rows.iter().filter_map(|&row| Some((row, row.events_per_message.as_ref()?))).collect();
    out.table(Table::declared(&breakdown_columns(), &counted));
    out.blank();
}

/// A cell of the breakdown: its run and the events counted per message.
type Counted<'r> = (&'r RunResult, &'r EventRates);

/// The columns of the per-message breakdown: the cell, each event's rate (`n/a` where the
/// strategy cannot see it), the producers' blocked share and the context switches.
fn breakdown_columns<'r>() -> Vec<Declared<'static, Counted<'r>>> {
    let rate = |header, event: fn(&EventRates) -> Option<f64>| {
        Declared::right(header, move |&(_, events): &Counted<'_>| {
            event(events).map_or("n/a".to_owned(), |value| format!("{value:.3}"))
        })
    };
    vec![
        Declared::left("cell", |(row, _): &Counted<'_>| super::or_dash(&row.param).to_owned()),
        Declared::left("strategy", |(row, _): &Counted<'_>| row.strategy.clone()),
        rate("wake-ups", |events| events.wakeups),
        rate("parks", |events| events.parks),
        rate("activations", |events| events.activations),
        rate("retirements", |events| events.retirements),
        rate("hops", |events| events.hops),
        rate("spin hits", |events| events.spin_hits),
        rate("takes", |events| events.takes),
        rate("parked while queued", |events| events.parked_while_queued),
        Declared::right("producer blocked", |(_, events): &Counted<'_>| {
            let share = events.producer_blocked;
            share.map_or("n/a".to_owned(), |share| format!("{:.0}%", share * 100.0))
        }),
        Declared::right("ctx switches", |(row, _): &Counted<'_>| {
            let messages = row.messages.max(1) as f64;
            format!(
                "{:.3} / {:.3}",
                row.ctx_switches.voluntary / messages,
                row.ctx_switches.involuntary / messages
            )
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_ordered_non_reference_strategies_contend() {
        assert!(is_contender("keyed-mailbox"));
        assert!(!is_contender("inline"));
        assert!(!is_contender("thread-pool"));
        assert!(!is_contender("nonsense"));
    }

    #[test]
    fn a_driver_gc_cell_names_its_param_only_where_it_has_one() {
        let cell = |param: &str| {
            prose!(
                "summary",
                "driver_gc_cell",
                design = "pc-key",
                param = param,
                collections = 2_u64,
                ms = "5.0",
                receipt = "unmeasured",
            )
        };
        assert_eq!(cell(""), "pc-key: 2 in 5.0 ms (receipt: unmeasured)");
        assert_eq!(cell("keys=1"), "pc-key keys=1: 2 in 5.0 ms (receipt: unmeasured)");
    }
}
