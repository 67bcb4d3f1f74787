//! The summary's tables of the end-to-end pipeline scenarios: per commit policy and
//! strategy, what a crash lost and redelivered, how far the commits trailed the work, and
//! whether the business state came out right.

use std::fmt::Write as _;

use crate::pipeline::PipelineRun;
use crate::report::format::format_rate;

/// Appends one section per pipeline scenario in `runs` to `out`.
pub fn render_pipelines(out: &mut String, runs: &[PipelineRun]) {
    let mut scenarios: Vec<&str> = Vec::new();
    for run in runs {
        if !scenarios.contains(&run.scenario.as_str()) {
            scenarios.push(&run.scenario);
        }
    }
    for scenario in scenarios {
        let rows: Vec<&PipelineRun> = runs.iter().filter(|run| run.scenario == scenario).collect();
        let first = rows[0];
        let _ = writeln!(
            out,
            "\n## {scenario}\n\n{} records over {} keys in {} partitions; the consumer dies \
             right after the first commit that follows its {}th completion (no final commit, \
             the executor force-closed) and a new one resumes from the commits. *lost*: \
             records never applied; *redelivered*: records delivered twice; *commit lag*: \
             records completed above the committed offsets at each commit (p50 / p99 / max); \
             *freeze*: the longest time a partition's committed offset stood still while its \
             records completed; *state*: the version-aware projection's final state against a \
             sequential replay, then the naive projection's (no version check), with its \
             double applies.\n",
            first.records,
            first.keys,
            first.partitions,
            first.crash_after.unwrap_or(0)
        );
        out.push_str(
            "| policy | strategy | records/s | lost | redelivered | commit lag | freeze | \
             metadata max | state | naive state (double applies) |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---|---|\n",
        );
        for run in rows {
            let state = |correct: bool| if correct { "correct" } else { "**wrong**" };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} / {} / {} | {:.1} ms | {} B | {} | {} ({}) |",
                run.policy,
                run.strategy,
                format_rate(run.throughput_per_s),
                run.lost,
                run.redelivered,
                run.commit_lag.p50,
                run.commit_lag.p99,
                run.commit_lag.max,
                run.longest_freeze_s * 1e3,
                run.max_metadata_bytes,
                state(run.projection.final_state_correct),
                state(run.projection.naive_final_state_correct),
                run.projection.naive_double_applies,
            );
        }
    }
}
