//! A rule's metric on one cell: a metric of the registry by name ([`Metric`]), or else a
//! results field by dotted path.

use crate::results::{Metric, PipelineRun, RunResult};

/// The field at dotted `path` of `value`.
pub(super) fn lookup<'v>(
    value: &'v serde_json::Value,
    path: &str,
) -> Option<&'v serde_json::Value> {
    path.split('.').try_fold(value, |value, key| value.get(key))
}

/// The value of `metric` for `run`, with `runs` for a metric relative to another strategy
/// of its cell. `None`: not applicable to this run (a null field, or no `inline` to compare
/// with).
pub(super) fn metric_of(metric: &str, run: &RunResult, runs: &[RunResult]) -> Option<f64> {
    match metric.parse::<Metric>() {
        Ok(metric) => metric.value(run, runs),
        Err(_) => lookup(&serde_json::to_value(run).ok()?, metric)?
            .as_f64()
            .filter(|value| value.is_finite()),
    }
}

/// The value of `metric` for a pipeline cell: a metric of the registry that pipeline cells
/// have, or a field by dotted path, where a flag reads as 1 or 0.
pub(super) fn pipeline_metric(metric: &str, run: &PipelineRun) -> Option<f64> {
    if let Some(value) = metric.parse::<Metric>().ok().and_then(|name| name.pipeline_value(run)) {
        return Some(value);
    }
    let json = serde_json::to_value(run).ok()?;
    let value = lookup(&json, metric)?;
    value.as_f64().or_else(|| value.as_bool().map(|flag| f64::from(u8::from(flag))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::testing::reference;

    #[test]
    fn a_metric_is_read_by_name_and_any_other_field_by_path() {
        let run = reference().runs[0].clone();
        let median = run.throughput_per_s.median;
        assert_eq!(metric_of("throughput", &run, &[]), Some(median));
        assert_eq!(metric_of("throughput_per_s.median", &run, &[]), Some(median));
        assert_eq!(metric_of("efficiency", &run, &[]), Some(run.efficiency));
        assert_eq!(metric_of("threads.observed", &run, &[]), Some(run.threads.observed as f64));
        assert_eq!(metric_of("throughput_per_s", &run, &[]), None, "not a number");
    }
}
