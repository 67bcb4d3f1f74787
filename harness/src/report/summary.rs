//! `summary.md`: one table per (scenario, param), strategies as rows. Reads results only.

use std::fmt::Write as _;

use strategies::StrategyId;

use crate::results::{Results, RunResult};
use crate::workload::ScenarioId;

/// Published elapsed seconds of the Confluent Parallel Consumer's KEY mode by number of
/// keys (10,000 messages, random 0-5 ms processing, max concurrency 100): domain.md
/// section 5.
pub const PUBLISHED_KEY_MODE_S: &[(usize, f64)] =
    &[(1, 26.7), (2, 13.6), (5, 5.9), (10, 3.3), (20, 2.24), (1_000, 2.06), (10_000, 2.13)];
/// The same experiment's PARTITION and UNORDERED modes.
pub const PUBLISHED_PARTITION_S: f64 = 22.2;
/// See [`PUBLISHED_PARTITION_S`].
pub const PUBLISHED_UNORDERED_S: f64 = 2.83;
/// Messages of the published experiment.
pub const PUBLISHED_MESSAGES: usize = 10_000;

/// A duration in nanoseconds, in the unit that reads best.
pub fn format_ns(ns: f64) -> String {
    match ns {
        ns if ns < 1e3 => format!("{ns:.0} ns"),
        ns if ns < 1e6 => format!("{:.1} us", ns / 1e3),
        ns if ns < 1e9 => format!("{:.1} ms", ns / 1e6),
        ns => format!("{:.2} s", ns / 1e9),
    }
}

/// A rate in messages per second, with k or M.
pub fn format_rate(rate: f64) -> String {
    match rate {
        rate if rate >= 1e6 => format!("{:.2}M", rate / 1e6),
        rate if rate >= 1e3 => format!("{:.1}k", rate / 1e3),
        rate => format!("{rate:.0}"),
    }
}

/// Whether a strategy competes for "best" (ordered, and not the `inline` reference).
fn is_contender(strategy: &str) -> bool {
    strategy.parse::<StrategyId>().is_ok_and(|id| id.is_ordered() && id != StrategyId::Inline)
}

/// The best value of `metric` among contenders (`higher` is better, or lower).
fn best(
    rows: &[&RunResult],
    metric: impl Fn(&RunResult) -> Option<f64>,
    higher: bool,
) -> Option<f64> {
    rows.iter()
        .filter(|row| is_contender(&row.strategy))
        .filter_map(|row| metric(row))
        .reduce(|a, b| if (b > a) == higher { b } else { a })
}

fn mark(text: String, value: Option<f64>, best: Option<f64>, strategy: &str) -> String {
    match (value, best) {
        (Some(value), Some(best)) if value == best && is_contender(strategy) => {
            format!("**{text}**")
        }
        _ => text,
    }
}

/// The whole summary.
pub fn render_summary(results: &Results) -> String {
    let meta = &results.meta;
    let mut out = String::from("# keyed-bench summary\n\n");
    let _ = writeln!(
        out,
        "{} · commit `{}` · {} · {} cores · {}\n",
        meta.created, meta.git_commit, meta.cpu_model, meta.cores, meta.rustc
    );
    let _ = writeln!(
        out,
        "Settings: workers {}, window {}, throughput {}, repeat {}, seed {}{}. Command: `{}`\n",
        meta.workers,
        meta.window,
        meta.throughput,
        meta.repeat,
        meta.seed,
        if meta.quick { ", quick sizes" } else { "" },
        meta.command
    );
    if let Some(overhead) = meta.recorder_overhead_ns {
        let _ = writeln!(
            out,
            "Measurement overhead: the recorder costs {overhead:.0} ns per message \
             (inline, no-op handler, with vs without it); every latency includes it.\n"
        );
    }
    if let Some(saturation) = meta.saturation_per_s {
        let _ = writeln!(
            out,
            "open-loop loads are fractions of {} msg/s (inline on uniform, scaled by workers).\n",
            format_rate(saturation),
        );
    }
    for note in &meta.notes {
        let _ = writeln!(out, "Note: {note}\n");
    }
    out.push_str(
        "Latency is completion - intended arrival; HOL is start - ready. **Bold**: best among \
         the ordered contenders (not `inline`, the reference, nor `thread-pool`, the \
         unordered control). Correctness: order violations / overlaps / lost / duplicates / \
         failed, summed over repetitions.\n",
    );

    for &scenario in ScenarioId::ALL {
        let rows: Vec<&RunResult> =
            results.runs.iter().filter(|run| run.scenario == scenario.as_str()).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n## {scenario}\n\n{}\n", scenario.description());
        let mut params: Vec<&str> = Vec::new();
        for row in &rows {
            if !params.contains(&row.param.as_str()) {
                params.push(&row.param);
            }
        }
        for param in params {
            let cell: Vec<&RunResult> =
                rows.iter().copied().filter(|row| row.param == param).collect();
            if !param.is_empty() {
                let _ = writeln!(out, "### {scenario} {param}\n");
            }
            render_table(&mut out, &cell);
        }
        if scenario == ScenarioId::AsyncIo {
            render_async_io(&mut out, &rows);
        }
    }
    if !results.skipped.is_empty() {
        out.push_str("\n## Not run\n\n");
        for skipped in &results.skipped {
            let _ = writeln!(
                out,
                "- `{}` on `{}`: {}",
                skipped.strategy, skipped.scenario, skipped.reason
            );
        }
    }
    out
}

fn render_table(out: &mut String, rows: &[&RunResult]) {
    out.push_str(
        "| strategy | throughput msg/s (min-max) | p50 | p99 | p99.9 | HOL p99 | bystander p99 \
         | threads rep/obs | efficiency | correctness |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let throughput = |row: &RunResult| Some(row.throughput_per_s.median);
    let p99 = |row: &RunResult| Some(row.latency_ns.p99 as f64);
    let bystander = |row: &RunResult| row.bystander_latency_ns.map(|tail| tail.p99 as f64);
    let efficiency = |row: &RunResult| Some(row.efficiency);
    let (best_throughput, best_p99) = (best(rows, throughput, true), best(rows, p99, false));
    let (best_bystander, best_efficiency) =
        (best(rows, bystander, false), best(rows, efficiency, true));
    for row in rows {
        let name = &row.strategy;
        let spread = &row.throughput_per_s;
        let mut rate = format!(
            "{} ({}-{})",
            format_rate(spread.median),
            format_rate(spread.min),
            format_rate(spread.max)
        );
        if row.below_offered == Some(true) {
            rate.push_str(&format!(
                " below offered {}",
                format_rate(row.offered_per_s.unwrap_or_default())
            ));
        }
        let c = &row.correctness;
        let correctness = format!(
            "{}/{}/{}/{}/{}{}",
            c.order_violations,
            c.overlaps,
            c.lost,
            c.duplicates,
            c.failed,
            if c.is_clean() { "" } else { " ✗" }
        );
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {} | {} | {} | {} | {}/{} | {} | {correctness} |",
            mark(rate, throughput(row), best_throughput, name),
            format_ns(row.latency_ns.p50 as f64),
            mark(format_ns(row.latency_ns.p99 as f64), p99(row), best_p99, name),
            format_ns(row.latency_ns.p999 as f64),
            format_ns(row.hol_ns.p99 as f64),
            bystander(row).map_or("-".into(), |value| mark(
                format_ns(value),
                Some(value),
                best_bystander,
                name
            )),
            row.threads.reported,
            row.threads.observed,
            mark(format!("{:.2}", row.efficiency), efficiency(row), best_efficiency, name),
        );
    }
    out.push('\n');
}

/// Elapsed time per key count next to the ideal bound and the published figures.
fn render_async_io(out: &mut String, rows: &[&RunResult]) {
    let mut strategies: Vec<&str> = Vec::new();
    let mut params: Vec<&str> = Vec::new();
    for row in rows {
        if !strategies.contains(&row.strategy.as_str()) {
            strategies.push(&row.strategy);
        }
        if !params.contains(&row.param.as_str()) {
            params.push(&row.param);
        }
    }
    let messages = rows.first().map_or(0, |row| row.messages);
    let _ = writeln!(
        out,
        "### async-io: elapsed seconds by key count\n\n{messages} messages per run; the published \
         figures are the key-ordered Kafka consumer's KEY mode with {PUBLISHED_MESSAGES} messages \
         (its PARTITION mode: {PUBLISHED_PARTITION_S} s, UNORDERED: {PUBLISHED_UNORDERED_S} s).\n"
    );
    let _ = writeln!(out, "| keys | ideal | published | {} |", strategies.join(" | "));
    let _ = writeln!(out, "|---:|---:|---:|{}", "---:|".repeat(strategies.len()));
    for param in params {
        let keys: Option<usize> = param.strip_prefix("keys=").and_then(|keys| keys.parse().ok());
        let published = keys
            .and_then(|keys| PUBLISHED_KEY_MODE_S.iter().find(|(k, _)| *k == keys))
            .map_or("-".into(), |(_, seconds)| format!("{seconds}"));
        let cell = |strategy: &str| {
            rows.iter()
                .find(|row| row.param == param && row.strategy == strategy)
                .map_or("-".into(), |row| format!("{:.3}", row.elapsed_s))
        };
        let ideal = rows.iter().find(|row| row.param == param).map_or(0.0, |row| row.ideal_s);
        let elapsed: Vec<String> = strategies.iter().map(|s| cell(s)).collect();
        let _ = writeln!(
            out,
            "| {} | {ideal:.3} | {published} | {} |",
            keys.map_or(param.to_owned(), |k| k.to_string()),
            elapsed.join(" | ")
        );
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_read_well() {
        assert_eq!(format_ns(850.0), "850 ns");
        assert_eq!(format_ns(12_345.0), "12.3 us");
        assert_eq!(format_ns(2_500_000.0), "2.5 ms");
        assert_eq!(format_ns(3e9), "3.00 s");
        assert_eq!(format_rate(1_234_567.0), "1.23M");
        assert_eq!(format_rate(45_600.0), "45.6k");
    }

    #[test]
    fn only_ordered_non_reference_strategies_contend() {
        assert!(is_contender("keyed-mailbox"));
        assert!(!is_contender("inline"));
        assert!(!is_contender("thread-pool"));
        assert!(!is_contender("nonsense"));
    }
}
