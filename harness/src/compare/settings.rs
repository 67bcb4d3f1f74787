//! The settings two runs' files record that differ: a note beside the comparison.

use serde::Serialize;

use super::transport;
use crate::limits::RUN_SETTINGS;
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

/// The `meta` fields of the build and the machine whose difference a reader must know of.
const FACTS: [&str; 4] = ["git_commit", "rustc", "cpu_model", "cores"];

/// The `meta` fields whose difference a reader must know of, in the order they are listed:
/// the build and the machine, then each compared run setting ([`RUN_SETTINGS`]) in its
/// place; `sizes` is compared size by size.
fn compared_fields() -> Vec<&'static str> {
    let mut settings: Vec<(&str, u32)> =
        RUN_SETTINGS.iter().filter_map(|setting| setting.compared).collect();
    settings.sort_by_key(|(_, at)| *at);
    FACTS.into_iter().chain(settings.into_iter().map(|(field, _)| field)).collect()
}

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
    for field in compared_fields() {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field compared is one a results file's `meta` holds.
    #[test]
    fn every_compared_setting_is_a_field_of_meta() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../results/2026-12-07-vm/results.json");
        let results = Results::read(&path).unwrap();
        let meta = serde_json::to_value(&results.meta).unwrap();
        let fields = compared_fields();
        assert_eq!(fields.len(), FACTS.len() + 14, "{fields:?}");
        for field in fields {
            assert!(meta.get(field).is_some(), "meta.{field}");
        }
    }
}
