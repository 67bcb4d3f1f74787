//! The summary's tables of the end-to-end pipeline scenarios: per cell, what the pipeline
//! lost, ran twice, reordered and delayed, and whether the business state came out right.

use std::collections::HashMap;

use crate::report::document::Document;
use crate::report::format::{format_ns, format_rate};
use crate::report::prose::prose;
use crate::report::table::{Align, Cell, Declared, Style, Table};
use crate::results::designs::runs_elsewhere;
use crate::results::{
    BatchSummary, CallSummary, CellKey, PipelineRun, RebalanceReport, Scenario, TransportCalls,
    TransportMeta,
};
use crate::workload::scenario::pipeline::{PipelineColumn, PipelineKind};
use crate::workload::ScenarioId;
use strategies::Design;

/// Appends one section per pipeline scenario in `runs` to `out`.
pub fn render_pipelines(out: &mut Document, runs: &[PipelineRun]) {
    let mut order: Vec<Scenario> = Vec::new();
    let mut cells: HashMap<Scenario, Vec<&PipelineRun>> = HashMap::new();
    for run in runs {
        let key = CellKey::of_pipeline(run).scenario;
        let rows = cells.entry(key.clone()).or_insert_with(|| {
            order.push(key);
            Vec::new()
        });
        rows.push(run);
    }
    for scenario in order {
        out.blank();
        out.heading(2, scenario.as_str());
        table(out, scenario.known(), &cells[&scenario]);
    }
}

/// The prose and table of one pipeline scenario's cells, by the pipeline its spec declares
/// (the figures its cells recorded) and the columns it names. Where the first cell lacks
/// that pipeline's section (an older file, a failed cell), or this build does not know the
/// scenario, the table follows the section the first cell recorded, with the columns of the
/// spec of that pipeline: the columns every pipeline cell has (pipeline-crash's) where it
/// recorded none. A row per cell that recorded the section.
fn table(out: &mut Document, scenario: Option<ScenarioId>, rows: &[&PipelineRun]) {
    let first = rows[0];
    let declared = scenario.and_then(ScenarioId::pipeline);
    let Some(spec) = declared.filter(|spec| recorded(first, spec.kind)).or_else(|| {
        let kind = recorded_kind(first);
        ScenarioId::ALL.iter().filter_map(|id| id.pipeline()).find(|spec| spec.kind == kind)
    }) else {
        return;
    };
    match spec.kind {
        PipelineKind::Crash => crash(out, rows),
        PipelineKind::Retry => retry(out, first),
        PipelineKind::Expand => expand(out, first),
        PipelineKind::Reorder => reorder(out, first),
        PipelineKind::Rebalance => rebalance(out, first),
    }
    let columns: Vec<_> = spec.columns.iter().map(|&column| declared_column(column)).collect();
    let shown = rows.iter().copied().filter(|run| recorded(run, spec.kind));
    out.table(Table::declared(&columns, shown));
}

/// Whether `run` recorded the section of pipeline `kind` (a crash cell records none beside
/// what every pipeline cell records).
fn recorded(run: &PipelineRun, kind: PipelineKind) -> bool {
    match kind {
        PipelineKind::Crash => true,
        PipelineKind::Retry => run.retry.is_some(),
        PipelineKind::Expand => run.expansion.is_some(),
        PipelineKind::Reorder => run.reorder.is_some(),
        PipelineKind::Rebalance => run.rebalance.is_some(),
    }
}

/// The pipeline whose section `run` recorded; a crash where it recorded none.
fn recorded_kind(run: &PipelineRun) -> PipelineKind {
    [PipelineKind::Retry, PipelineKind::Expand, PipelineKind::Reorder, PipelineKind::Rebalance]
        .into_iter()
        .find(|&kind| recorded(run, kind))
        .unwrap_or(PipelineKind::Crash)
}

/// `cell` followed by a final state: `correct`, or a strong `wrong`.
fn state(cell: Cell, correct: bool) -> Cell {
    if correct {
        cell.then(Style::Plain, "correct")
    } else {
        cell.then(Style::Strong, "wrong")
    }
}

/// Both projections' final states: the version-aware one, then the naive one; `not
/// judged` for a retry-forever cell, whose poison records never settle (its stall figure
/// is its result).
fn states(run: &PipelineRun) -> Cell {
    if !run.state_judged() {
        return Cell::plain("not judged");
    }
    let cell = state(Cell::default(), run.projection.final_state_correct);
    state(cell.then(Style::Plain, " / "), run.projection.naive_final_state_correct)
}

/// How a pipeline table reads a cell of a run.
type Read = fn(&PipelineRun) -> Cell;

/// A cell of plain text.
fn plain(text: impl ToString) -> Cell {
    Cell::plain(text.to_string())
}

/// A cell of a figure of a pipeline's own section (`-` where the run has none; a table
/// shows only the runs that recorded its pipeline's section).
fn of<T>(section: Option<&T>, text: impl Fn(&T) -> String) -> Cell {
    Cell::plain(section.map_or_else(|| "-".to_owned(), text))
}

/// `column`, a column a pipeline spec names, as a table declares it: its header, alignment
/// and cell.
fn declared_column(column: PipelineColumn) -> Declared<'static, PipelineRun> {
    let (header, align) = header(column);
    Declared::new(header, align, read(column))
}

/// The header and alignment of `column`.
fn header(column: PipelineColumn) -> (&'static str, Align) {
    use Align::{Left, Right};
    use PipelineColumn as C;
    match column {
        C::Policy => ("policy", Left),
        C::Strategy => ("strategy", Left),
        C::RecordsPerSecond => ("records/s", Right),
        C::Lost => ("lost", Right),
        C::Redelivered => ("redelivered", Right),
        C::KeysReordered => ("keys reordered", Right),
        C::CommitLag => ("commit lag", Right),
        C::Freeze => ("freeze", Right),
        C::MetadataMax => ("metadata max", Right),
        C::State | C::States => ("state", Left),
        C::NaiveState => ("naive state (double applies)", Left),
        C::RetryPolicy => ("retry policy", Left),
        C::BystanderLatency => ("bystander p50 / p99", Right),
        C::TroubledP99 => ("troubled p99", Right),
        C::Retries => ("retries", Right),
        C::DeadLetters => ("dead letters", Right),
        C::Overtaken => ("overtaken (stash)", Right),
        C::Paused => ("paused", Right),
        C::Mitigation => ("mitigation", Left),
        C::ExpansionKeysReordered => ("reordered keys", Right),
        C::ExpansionRecordsReordered => ("reordered records", Right),
        C::Held => ("held", Right),
        C::ReachedOutOfOrder => ("reached out of order", Right),
        C::ReorderKeys => ("keys", Right),
        C::DeepestStash => ("deepest stash", Right),
        C::NaiveOutOfOrder => ("naive out of order", Right),
        C::Duplicates => ("duplicates (%)", Right),
        C::Uncommitted => ("uncommitted", Right),
        C::InFlight => ("in flight", Right),
        C::Pauses => ("pauses", Right),
        C::OutOfOrder => ("out of order", Right),
    }
}

/// How `column` reads a run's cell.
fn read(column: PipelineColumn) -> Read {
    use PipelineColumn as C;
    match column {
        C::Policy => |run| plain(run.policy),
        C::Strategy => |run| plain(&run.strategy),
        C::RecordsPerSecond => |run| plain(format_rate(run.throughput_per_s)),
        C::Lost => |run| plain(run.lost),
        C::Redelivered => |run| plain(run.redelivered),
        C::KeysReordered => |run| plain(run.projection.keys_reordered),
        C::CommitLag => |run| {
            let lag = &run.commit_lag;
            plain(format!("{} / {} / {}", lag.p50, lag.p99, lag.max))
        },
        C::Freeze => |run| plain(format!("{:.1} ms", run.longest_freeze_s * 1e3)),
        C::MetadataMax => |run| plain(format!("{} B", run.max_metadata_bytes)),
        C::State => |run| state(Cell::default(), run.projection.final_state_correct),
        C::NaiveState => |run| {
            let projection = &run.projection;
            state(Cell::default(), projection.naive_final_state_correct)
                .then(Style::Plain, format!(" ({})", projection.naive_double_applies))
        },
        C::States => states,
        C::RetryPolicy => |run| of(run.retry.as_ref(), |retry| retry.policy.to_string()),
        C::BystanderLatency => |run| {
            of(run.retry.as_ref(), |retry| {
                let latency = &retry.bystander_latency;
                format!("{} / {}", micros(latency.p50_us), micros(latency.p99_us))
            })
        },
        C::TroubledP99 => {
            |run| of(run.retry.as_ref(), |retry| micros(retry.troubled_latency.p99_us))
        }
        C::Retries => |run| of(run.retry.as_ref(), |retry| retry.retries.to_string()),
        C::DeadLetters => |run| of(run.retry.as_ref(), |retry| retry.dead_lettered.to_string()),
        C::Overtaken => |run| {
            of(run.retry.as_ref(), |retry| format!("{} ({})", retry.overtaken, retry.max_stash))
        },
        C::Paused => {
            |run| of(run.retry.as_ref(), |retry| format!("{:.0} ms", retry.failure_pause_s * 1e3))
        }
        C::Mitigation => |run| of(run.expansion.as_ref(), |e| e.mitigation.to_string()),
        C::ExpansionKeysReordered => {
            |run| of(run.expansion.as_ref(), |e| e.keys_reordered.to_string())
        }
        C::ExpansionRecordsReordered => {
            |run| of(run.expansion.as_ref(), |e| e.records_reordered.to_string())
        }
        C::Held => |run| of(run.expansion.as_ref(), |e| format!("{:.1} ms", e.held_s * 1e3)),
        C::ReachedOutOfOrder => {
            |run| of(run.reorder.as_ref(), |reorder| reorder.reached_out_of_order.to_string())
        }
        C::ReorderKeys => {
            |run| of(run.reorder.as_ref(), |reorder| reorder.keys_reordered.to_string())
        }
        C::DeepestStash => |run| of(run.reorder.as_ref(), |reorder| reorder.max_stash.to_string()),
        C::NaiveOutOfOrder => |run| plain(run.projection.naive_out_of_order),
        C::Duplicates => |run| {
            let share = |rebalance: &RebalanceReport| {
                format!("{} ({:.1}%)", run.redelivered, rebalance.duplicate_pct)
            };
            of(run.rebalance.as_ref(), share)
        },
        C::Uncommitted => |run| of(run.rebalance.as_ref(), |r| r.duplicates_bound.to_string()),
        C::InFlight => |run| of(run.rebalance.as_ref(), |r| r.in_flight.to_string()),
        C::Pauses => |run| of(run.rebalance.as_ref(), pauses),
        C::OutOfOrder => |run| plain(run.projection.gaps),
    }
}

/// A rebalance's pauses, in milliseconds.
fn pauses(rebalance: &RebalanceReport) -> String {
    let pauses: Vec<String> =
        rebalance.events.iter().map(|event| format!("{:.1}", event.pause_s * 1e3)).collect();
    format!("{} ms", pauses.join(" / "))
}

fn crash(out: &mut Document, rows: &[&PipelineRun]) {
    let first = rows[0];
    out.prose(&prose!(
        "pipeline",
        "crash",
        records = first.records,
        keys = first.keys,
        partitions = first.partitions,
        crash_after = first.crash_after.unwrap_or(0),
    ));
    let outside = rows.iter().filter_map(|run| Design::find(&run.strategy));
    if outside.filter(|&design| runs_elsewhere(design)).count() > 0 {
        out.prose(&prose!("pipeline", "crash_external"));
    }
}

fn retry(out: &mut Document, first: &PipelineRun) {
    let Some(settings) = &first.retry else { return };
    out.prose(&prose!(
        "pipeline",
        "retry",
        records = first.records,
        keys = first.keys,
        partitions = first.partitions,
        rate_per_s = settings.rate_per_s,
        failing_records = settings.failing_records,
        poison_records = settings.poison_records,
        backoff_ms = settings.backoff_ms,
        max_attempts = settings.max_attempts,
        troubled_keys = settings.troubled_keys,
    ));
}

/// Microseconds, as milliseconds from 1 ms on.
fn micros(us: f64) -> String {
    if us >= 1_000.0 {
        format!("{:.1} ms", us / 1e3)
    } else {
        format!("{us:.0} us")
    }
}

fn expand(out: &mut Document, first: &PipelineRun) {
    let Some(settings) = &first.expansion else { return };
    out.prose(&prose!(
        "pipeline",
        "expand",
        records = first.records,
        keys = first.keys,
        from_partitions = settings.from_partitions,
        to_partitions = settings.to_partitions,
        keys_moved = settings.keys_moved,
    ));
}

fn reorder(out: &mut Document, first: &PipelineRun) {
    let Some(settings) = &first.reorder else { return };
    out.prose(&prose!(
        "pipeline",
        "reorder",
        records = first.records,
        keys = first.keys,
        partitions = first.partitions,
        producers = settings.producers,
        jitter = settings.jitter,
        appended_out_of_order = settings.appended_out_of_order,
    ));
}

fn rebalance(out: &mut Document, first: &PipelineRun) {
    let Some(settings) = &first.rebalance else { return };
    out.prose(&prose!(
        "pipeline",
        "rebalance",
        records = first.records,
        keys = first.keys,
        partitions = first.partitions,
        consumers = settings.consumers,
    ));
}

/// Appends "What the transport costs" to `out`: per pipeline cell that timed its calls
/// into the transport (`transport`: the run's, none for the embedded log), each commit
/// call's wall time, the batches its polls returned, and a rebalance's pauses; nothing
/// where no cell did (older files).
pub fn render_transport_calls(
    out: &mut Document,
    transport: Option<&TransportMeta>,
    runs: &[PipelineRun],
) {
    let table = transport_table(runs);
    if table.is_empty() {
        return;
    }
    out.blank();
    out.heading(2, "What the transport costs");
    let through = match transport {
        Some(meta) => {
            let broker = match &meta.bootstrap {
                Some(bootstrap) => prose!(
                    "pipeline",
                    "bootstrap_brokers",
                    bootstrap = bootstrap.as_str(),
                    brokers = meta.brokers,
                ),
                None => prose!(
                    "pipeline",
                    "cluster_brokers",
                    brokers = meta.brokers,
                    broker = meta.broker.as_str(),
                ),
            };
            prose!(
                "pipeline",
                "through_broker",
                kind = meta.kind.to_string(),
                client = meta.client.as_str(),
                broker = broker,
            )
        }
        None => prose!("pipeline", "through_embedded"),
    };
    out.prose(&prose!("pipeline", "transport", through = through));
    out.table(table);
}

/// One row per cell of `runs` that timed its calls into the transport.
fn transport_table(runs: &[PipelineRun]) -> Table {
    let timed: Vec<(&PipelineRun, &TransportCalls)> =
        runs.iter().filter_map(|run| Some((run, run.transport_calls.as_ref()?))).collect();
    Table::declared(&transport_columns(), &timed)
}

/// A cell that timed its calls into the transport, and those calls.
type Timed<'r> = (&'r PipelineRun, &'r TransportCalls);

/// The columns of the transport table: the cell, its commit calls, its polls, and its
/// rebalance pauses (`-` where it had none).
fn transport_columns<'r>() -> Vec<Declared<'static, Timed<'r>>> {
    let commit = |header, text: fn(&CallSummary) -> String| {
        Declared::right(header, move |(_, calls): &Timed<'_>| text(&calls.commit_call))
    };
    let batch = |header, text: fn(&BatchSummary) -> String| {
        Declared::right(header, move |(_, calls): &Timed<'_>| text(&calls.poll_batch))
    };
    vec![
        Declared::left("scenario", |(run, _): &Timed<'_>| run.scenario.clone()),
        Declared::left("param", |(run, _): &Timed<'_>| run.param.clone()),
        Declared::left("strategy", |(run, _): &Timed<'_>| run.strategy.clone()),
        commit("commit calls", |commit| commit.calls.to_string()),
        commit("commit call p50 / p99", |commit| {
            format!("{} / {}", call(commit.p50_us), call(commit.p99_us))
        }),
        commit("commit call max", |commit| call(commit.max_us)),
        batch("polls", |batch| batch.polls.to_string()),
        batch("poll batch mean / max", |batch| format!("{:.1} / {}", batch.mean, batch.max)),
        Declared::right("rebalance pauses", |(run, _): &Timed<'_>| {
            run.rebalance.as_ref().map_or_else(|| "-".to_owned(), pauses)
        }),
    ]
}

/// A call's wall time in microseconds, in the unit that reads best (an in-process commit
/// takes well under one).
fn call(us: f64) -> String {
    format_ns(us * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{CallSamples, IncarnationReport, TransportKind};

    /// The committed reference run (embedded log, from before transport calls were timed).
    use crate::report::reference::receipts as reference;

    /// Calls of one incarnation: commits of `commit_us`, polls of `batches` records.
    fn timed(commit_us: &[u64], batches: &[usize]) -> IncarnationReport {
        let mut report = IncarnationReport::default();
        commit_us.iter().for_each(|&us| report.calls.commit(us * 1_000));
        batches.iter().for_each(|&records| report.calls.poll(records));
        report
    }

    /// The reference's first pipeline-crash and first pipeline-rebalance cells, timed.
    fn timed_cells() -> Vec<PipelineRun> {
        let results = reference();
        let first = |scenario: &str| {
            let run = results.pipelines.iter().find(|run| run.scenario == scenario);
            run.expect("the reference run has the scenario").clone()
        };
        let (mut crash, mut rebalance) = (first("pipeline-crash"), first("pipeline-rebalance"));
        let (one, two) = (timed(&[2, 4, 1_500], &[500, 0, 20]), timed(&[3], &[8]));
        crash.transport_calls = Some(CallSamples::merged([&one, &two]));
        rebalance.transport_calls = Some(CallSamples::merged([&two]));
        vec![crash, rebalance]
    }

    fn rendered(transport: Option<&TransportMeta>, runs: &[PipelineRun]) -> String {
        let mut out = Document::default();
        render_transport_calls(&mut out, transport, runs);
        out.markdown()
    }

    /// The section `render_pipelines` writes for `runs`.
    fn section(runs: &[PipelineRun]) -> String {
        let mut out = Document::default();
        render_pipelines(&mut out, runs);
        out.markdown()
    }

    #[test]
    fn every_pipeline_a_cell_can_record_has_a_spec_to_fall_back_to() {
        let kinds = [
            PipelineKind::Crash,
            PipelineKind::Retry,
            PipelineKind::Expand,
            PipelineKind::Reorder,
            PipelineKind::Rebalance,
        ];
        let specs: Vec<_> = ScenarioId::ALL.iter().filter_map(|id| id.pipeline()).collect();
        for kind in kinds {
            assert!(specs.iter().any(|spec| spec.kind == kind), "no spec of {kind:?}");
        }
    }

    #[test]
    fn each_pipeline_table_has_the_columns_its_spec_names() {
        let results = reference();
        for run in &results.pipelines {
            let id: ScenarioId = run.scenario.parse().unwrap();
            let spec = id.pipeline().expect("a pipeline scenario");
            let headers: Vec<&str> = spec.columns.iter().map(|&column| header(column).0).collect();
            let expected = format!("| {} |", headers.join(" | "));
            let text = section(std::slice::from_ref(run));
            assert!(text.lines().any(|line| line == expected), "{expected} in {text}");
            let row = text.lines().filter(|line| line.starts_with("| ")).nth(1).unwrap();
            assert_eq!(row.matches(" | ").count() + 1, spec.columns.len(), "{row}");
            assert!(!row.contains("| - |"), "a cell with its section shows every figure: {row}");
        }
    }

    #[test]
    fn a_cell_without_its_pipelines_section_gets_the_columns_every_cell_has() {
        let results = reference();
        let retry: Vec<PipelineRun> =
            results.pipelines.iter().filter(|run| run.retry.is_some()).take(1).cloned().collect();
        let crash = section(&results.pipelines[..1]);
        let crash_header = crash.lines().find(|line| line.starts_with("| ")).unwrap().to_owned();
        let with_section = section(&retry);
        assert!(!with_section.contains(&crash_header), "{with_section}");
        let mut without = retry.clone();
        without[0].retry = None;
        let fallen_back = section(&without);
        assert!(fallen_back.contains(&crash_header), "{fallen_back}");
        // A scenario this build does not know follows the section its first cell recorded.
        let mut renamed = retry;
        renamed[0].scenario = "pipeline-retry-next".into();
        assert_eq!(
            section(&renamed).replace("pipeline-retry-next", "pipeline-retry"),
            with_section
        );
    }

    #[test]
    fn the_transport_table_has_a_row_per_timed_cell() {
        let runs = timed_cells();
        let text = rendered(None, &runs);
        assert!(text.contains("## What the transport costs"), "{text}");
        assert!(text.contains("the embedded log: a commit is an in-process call"), "{text}");
        let rows: Vec<&str> = text.lines().filter(|line| line.starts_with("| pipeline-")).collect();
        assert_eq!(rows.len(), 2, "{text}");
        let crash = &runs[0];
        let head = format!("| pipeline-crash | {} | {} | 4 |", crash.param, crash.strategy);
        assert!(rows[0].starts_with(&head), "{}", rows[0]);
        // Merged over both incarnations: p50 3 us, p99 and max 1.5 ms; 3 batches.
        assert!(
            rows[0].contains("| 3.0 us / 1.5 ms | 1.5 ms | 3 | 176.0 / 500 | - |"),
            "{}",
            rows[0]
        );
        let rebalance = runs[1].rebalance.as_ref().unwrap();
        let pauses: Vec<String> =
            rebalance.events.iter().map(|event| format!("{:.1}", event.pause_s * 1e3)).collect();
        let tail = format!("| 1 | 8.0 / 8 | {} ms |", pauses.join(" / "));
        assert!(rows[1].ends_with(&tail), "{} against {tail}", rows[1]);
    }

    #[test]
    fn the_transport_table_names_a_broker_and_is_left_out_of_older_files() {
        let meta = TransportMeta {
            kind: TransportKind::Kafka,
            broker: "mock".into(),
            brokers: 1,
            client: "librdkafka 2.12.1".into(),
            group_protocol: "consumer".into(),
            timeout_ms: 10_000,
            ..TransportMeta::default()
        };
        let text = rendered(Some(&meta), &timed_cells());
        assert!(text.contains("consumed through kafka (librdkafka 2.12.1, 1 broker(s)"), "{text}");
        assert!(text.contains("a round trip to the broker"), "{text}");
        assert_eq!(rendered(None, &reference().pipelines), "", "no cell timed its calls");
    }
}
