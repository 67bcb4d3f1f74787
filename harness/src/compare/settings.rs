//! The settings two runs' files record that differ: a note beside the comparison.

use serde::Serialize;

use super::transport;
use crate::results::Results;

/// A setting recorded in `meta` that differs between the runs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SettingDifference {
    /// Its path in results.json (`meta.sizes.spin_ns`).
    pub field: String,
    /// A's value, as JSON (`absent` where A does not record it).
    pub a: String,
    /// B's value.
    pub b: String,
}

/// The `meta` fields whose difference a reader must know of; `sizes` is compared size by
/// size.
const SETTINGS: &[&str] = &[
    "git_commit",
    "rustc",
    "cpu_model",
    "cores",
    "workers",
    "window",
    "throughput",
    "seed",
    "repeat",
    "quick",
    "producers",
    "timer_threads",
    "groups_per_worker",
    "idle_spin_us",
    "window_scope",
    "binding",
    "commit_policies",
    "retry_policies",
];

/// The settings of `a` and `b` that differ, by their path in results.json.
pub(super) fn setting_differences(a: &Results, b: &Results) -> Vec<SettingDifference> {
    let shown = |value: Option<&serde_json::Value>| match value {
        None | Some(serde_json::Value::Null) => "absent".to_owned(),
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(value) => value.to_string(),
    };
    let (meta_a, meta_b) = (
        serde_json::to_value(&a.meta).unwrap_or_default(),
        serde_json::to_value(&b.meta).unwrap_or_default(),
    );
    let mut differences: Vec<SettingDifference> =
        transport::setting_difference(a, b).into_iter().collect();
    for field in SETTINGS {
        let (left, right) = (meta_a.get(field), meta_b.get(field));
        if shown(left) != shown(right) {
            let field = format!("meta.{field}");
            differences.push(SettingDifference { field, a: shown(left), b: shown(right) });
        }
    }
    let sizes = |meta: &serde_json::Value| meta.get("sizes").and_then(|s| s.as_object()).cloned();
    match (sizes(&meta_a), sizes(&meta_b)) {
        (Some(left), Some(right)) => {
            let mut names: Vec<&String> = left.keys().chain(right.keys()).collect();
            names.sort();
            names.dedup();
            for name in names {
                let (l, r) = (shown(left.get(name)), shown(right.get(name)));
                if l != r {
                    let field = format!("meta.sizes.{name}");
                    differences.push(SettingDifference { field, a: l, b: r });
                }
            }
        }
        (None, None) => {}
        (left, right) => {
            let recorded =
                |sizes: &Option<_>| if sizes.is_some() { "recorded" } else { "absent" }.to_owned();
            let field = "meta.sizes".to_owned();
            differences.push(SettingDifference { field, a: recorded(&left), b: recorded(&right) });
        }
    }
    differences
}
