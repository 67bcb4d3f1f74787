//! A rule's metric on one run: a results field by dotted path, or a metric derived from
//! the run and the others of its cell.

use crate::results::{CellKey, PipelineRun, RunResult};

/// Metrics computed from a run rather than read from it.
pub(super) const DERIVED_METRICS: &[&str] =
    &["correctness", "violations", "throughput_vs_inline", "floor_ratio"];

/// The field at dotted `path` of `value`.
pub(super) fn lookup<'v>(
    value: &'v serde_json::Value,
    path: &str,
) -> Option<&'v serde_json::Value> {
    path.split('.').try_fold(value, |value, key| value.get(key))
}

/// The value of `metric` for `run`, with `runs` for metrics that need the cell's others.
/// `None`: not applicable to this run (a null field, or no `inline` to compare with).
pub(super) fn metric_of(metric: &str, run: &RunResult, runs: &[RunResult]) -> Option<f64> {
    raw_metric(metric, run, runs).filter(|value| value.is_finite())
}

fn raw_metric(metric: &str, run: &RunResult, runs: &[RunResult]) -> Option<f64> {
    let c = &run.correctness;
    match metric {
        "correctness" => {
            Some((c.order_violations + c.overlaps + c.lost + c.duplicates + c.failed) as f64)
        }
        "violations" => Some((c.order_violations + c.overlaps) as f64),
        "throughput_vs_inline" => {
            let inline = CellKey::of_run(run).on("inline").find(runs)?;
            Some(run.throughput_per_s.median / inline.throughput_per_s.median)
        }
        // How far above what its own service times allowed the run took (parallel-consumer).
        "floor_ratio" => {
            run.measured_floor_s.filter(|floor| *floor > 0.0).map(|floor| run.elapsed_s / floor)
        }
        path => lookup(&serde_json::to_value(run).ok()?, path)?.as_f64(),
    }
}

/// The value of `metric`, a dotted field path, for a pipeline cell; a flag reads as 1 or 0.
pub(super) fn pipeline_metric(metric: &str, run: &PipelineRun) -> Option<f64> {
    let json = serde_json::to_value(run).ok()?;
    let value = lookup(&json, metric)?;
    value.as_f64().or_else(|| value.as_bool().map(|flag| f64::from(u8::from(flag))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::testing::reference;

    #[test]
    fn floor_ratio_is_elapsed_over_the_measured_floor_and_null_without_one() {
        let mut run = reference().runs[0].clone();
        run.measured_floor_s = None;
        assert_eq!(metric_of("floor_ratio", &run, &[]), None);
        run.measured_floor_s = Some(0.5);
        run.elapsed_s = 0.6;
        let ratio = metric_of("floor_ratio", &run, &[]).unwrap();
        assert!((ratio - 1.2).abs() < 1e-12, "{ratio}");
        run.measured_floor_s = Some(0.0);
        assert_eq!(metric_of("floor_ratio", &run, &[]), None);
    }
}
