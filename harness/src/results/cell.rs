//! [`CellKey`]: the one identity of a cell, from the plan to the file and back.
//!
//! A cell is one scenario parameter at one point of a sweep, run on one strategy. The plan
//! gives each cell its key; the ledger, `meta.incomplete.missing`, `compare`, the gate and
//! the charts find cells by it; its [`Display`](fmt::Display) is the name progress lines,
//! tables and `--dry-run` print, and [`CellKey::file_stem`] names its histogram files.
//!
//! In a results file a key is three strings, `scenario`, `param` and `strategy`, where
//! `param` is the scenario's own parameter followed by the sweep point's label
//! (`keys=20 workers=4`). Reading one back splits the label off again: a sweep label is a
//! run of `name=value` words whose names are sweep settings ([`SWEEP_SETTINGS`]), which no
//! scenario parameter uses. A scenario this build does not know (a file of another build)
//! is kept as the text it recorded, as a design known only from a file is.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{PipelineRun, Results, RunResult};
use crate::limits::settings::{cell_settings_type, run_settings};
use crate::workload::ScenarioId;

// `SWEEP_SETTINGS` and `CellSettings`, from the swept rows of the run settings table.
run_settings!(swept => cell_settings_type);

/// A cell's scenario: one this build knows, or the id a file of another build recorded.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Scenario {
    /// A scenario of this build.
    Known(ScenarioId),
    /// An id this build does not know, as recorded.
    Recorded(String),
}

impl Scenario {
    /// The id (`uniform`, ...).
    pub fn as_str(&self) -> &str {
        match self {
            Self::Known(id) => id.as_str(),
            Self::Recorded(id) => id,
        }
    }

    /// The scenario of this build, if it is one.
    pub fn known(&self) -> Option<ScenarioId> {
        match self {
            Self::Known(id) => Some(*id),
            Self::Recorded(_) => None,
        }
    }
}

impl From<ScenarioId> for Scenario {
    fn from(id: ScenarioId) -> Self {
        Self::Known(id)
    }
}

impl From<&str> for Scenario {
    fn from(id: &str) -> Self {
        ScenarioId::from_str(id).map_or_else(|_| Self::Recorded(id.to_owned()), Self::Known)
    }
}

impl PartialEq<ScenarioId> for Scenario {
    fn eq(&self, other: &ScenarioId) -> bool {
        *self == Self::Known(*other)
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One cell: a scenario's parameter at one point of a sweep, on one strategy. There is
/// room for one more dimension (a pipeline's transport) as one more field.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CellKey {
    /// The scenario.
    pub scenario: Scenario,
    /// The scenario's own parameter (`keys=20`, `policy=contiguous`), or empty.
    pub param: String,
    /// The sweep point's label (`workers=4 throughput=16`), empty outside a sweep.
    pub sweep: String,
    /// The strategy's id, built in, registered or recorded.
    pub strategy: String,
}

impl CellKey {
    /// The cell of `scenario`'s `param` at the sweep point labelled `sweep`, on `strategy`.
    pub fn new(
        scenario: impl Into<Scenario>,
        param: &str,
        sweep: &str,
        strategy: impl AsRef<str>,
    ) -> Self {
        Self {
            scenario: scenario.into(),
            param: param.to_owned(),
            sweep: sweep.to_owned(),
            strategy: strategy.as_ref().to_owned(),
        }
    }

    /// The cell a results file records as `scenario`, `param` (the sweep label included)
    /// and `strategy`.
    pub fn recorded(scenario: &str, param: &str, strategy: &str) -> Self {
        let (own, sweep) = split_sweep(param);
        Self::new(scenario, own, sweep, strategy)
    }

    /// The cell of a measured run.
    pub fn of_run(run: &RunResult) -> Self {
        Self::recorded(&run.scenario, &run.param, &run.strategy)
    }

    /// The cell of a pipeline run.
    pub fn of_pipeline(run: &PipelineRun) -> Self {
        Self::recorded(&run.scenario, &run.param, &run.strategy)
    }

    /// The same scenario parameter and sweep point on `strategy`.
    pub fn on(&self, strategy: &str) -> Self {
        Self { strategy: strategy.to_owned(), ..self.clone() }
    }

    /// The run of this cell among `runs`, if there is one.
    pub fn find<'r>(&self, runs: &'r [RunResult]) -> Option<&'r RunResult> {
        runs.iter().find(|run| self.is(&run.scenario, &run.param, &run.strategy))
    }

    /// The param as files record it: the scenario's own, then the sweep label.
    pub fn full_param(&self) -> String {
        labelled(&self.param, &self.sweep)
    }

    /// Whether this is the cell a file records as `scenario`, `param` and `strategy`.
    pub fn is(&self, scenario: &str, param: &str, strategy: &str) -> bool {
        self.scenario.as_str() == scenario
            && self.strategy == strategy
            && split_sweep(param) == (self.param.as_str(), self.sweep.as_str())
    }

    /// The stem of its histogram files: `scenario[-param]-strategy`, the param kept to
    /// letters, digits and dots.
    pub fn file_stem(&self) -> String {
        let param: String =
            self.full_param().chars().filter(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
        if param.is_empty() {
            format!("{}-{}", self.scenario, self.strategy)
        } else {
            format!("{}-{param}-{}", self.scenario, self.strategy)
        }
    }
}

impl fmt::Display for CellKey {
    /// `scenario [param] strategy`, as progress lines and tables name a cell.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.scenario.as_str())?;
        let param = self.full_param();
        if !param.is_empty() {
            write!(f, " {param}")?;
        }
        write!(f, " {}", self.strategy)
    }
}

impl CellSettings {
    /// The cell's param without its sweep label: the scenario's own.
    pub fn base_param<'p>(&self, param: &'p str) -> &'p str {
        param.strip_suffix(self.sweep.as_str()).map_or(param, str::trim_end)
    }
}

/// The values of each list-valued setting of a sweep, read from its cells' point labels
/// (`runs[].settings.sweep`, `pipelines[].settings.sweep`): `meta` holds the first point's
/// only.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweptSettings {
    /// (setting, its values in order of first appearance), by the label's names
    /// (`workers`, `throughput`, `window`, `idle-spin-us`).
    values: Vec<(String, Vec<String>)>,
}

impl SweptSettings {
    /// The settings `results` swept, read from its cells' labels.
    pub fn of(results: &Results) -> Self {
        let labels = results
            .runs
            .iter()
            .filter_map(|run| run.settings.as_ref())
            .chain(results.pipelines.iter().filter_map(|run| run.settings.as_ref()))
            .map(|settings| settings.sweep.as_str());
        let mut values: Vec<(String, Vec<String>)> = Vec::new();
        for part in labels.flat_map(str::split_whitespace) {
            let Some((name, value)) = part.split_once('=') else { continue };
            match values.iter_mut().find(|(setting, _)| setting == name) {
                Some((_, seen)) if seen.iter().any(|v| v == value) => {}
                Some((_, seen)) => seen.push(value.to_owned()),
                None => values.push((name.to_owned(), vec![value.to_owned()])),
            }
        }
        Self { values }
    }

    /// `setting` as the settings line shows it: `[1, 2, 4]` where swept, else `single`.
    pub fn show(&self, setting: &str, single: impl fmt::Display) -> String {
        match self.values(setting) {
            Some(values) => format!("[{}]", values.join(", ")),
            None => single.to_string(),
        }
    }

    /// The values `setting` took, where the run swept it.
    pub fn values(&self, setting: &str) -> Option<Vec<&str>> {
        self.values
            .iter()
            .find(|(name, _)| name == setting)
            .map(|(_, values)| values.iter().map(String::as_str).collect())
    }
}

/// A cell's param within a sweep: the scenario's own, then the point's label.
pub fn labelled(param: &str, label: &str) -> String {
    match (param.is_empty(), label.is_empty()) {
        (_, true) => param.to_owned(),
        (true, false) => label.to_owned(),
        (false, false) => format!("{param} {label}"),
    }
}

/// A recorded param split into the scenario's own and the sweep label after it.
pub fn split_sweep(param: &str) -> (&str, &str) {
    let is_sweep_word =
        |word: &str| word.split_once('=').is_some_and(|(name, _)| SWEEP_SETTINGS.contains(&name));
    // The label is the longest run of sweep words at the end.
    let mut start = param.len();
    for (at, word) in word_starts(param).into_iter().rev() {
        if !is_sweep_word(word) {
            break;
        }
        start = at;
    }
    (param[..start].trim_end(), &param[start..])
}

/// Each space-separated word of `text` with the byte offset it starts at.
fn word_starts(text: &str) -> Vec<(usize, &str)> {
    let mut words = Vec::new();
    let mut offset = 0;
    for word in text.split(' ') {
        if !word.is_empty() {
            words.push((offset, word));
        }
        offset += word.len() + 1;
    }
    words
}

/// The three strings a results file holds, the sweep label inside `param`.
#[derive(Serialize, Deserialize)]
struct Recorded {
    scenario: String,
    param: String,
    strategy: String,
}

impl Serialize for CellKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Recorded {
            scenario: self.scenario.as_str().to_owned(),
            param: self.full_param(),
            strategy: self.strategy.clone(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CellKey {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let Recorded { scenario, param, strategy } = Recorded::deserialize(deserializer)?;
        Ok(Self::recorded(&scenario, &param, &strategy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_prints_and_names_its_files_as_cells_always_were() {
        let plain = CellKey::new(ScenarioId::Uniform, "", "", "inline");
        assert_eq!(plain.to_string(), "uniform inline");
        assert_eq!(plain.file_stem(), "uniform-inline");
        let swept = CellKey::new(ScenarioId::AsyncIo, "keys=20", "workers=4", "keyed-mailbox");
        assert_eq!(swept.to_string(), "async-io keys=20 workers=4 keyed-mailbox");
        assert_eq!(swept.file_stem(), "async-io-keys20workers4-keyed-mailbox");
        let load = CellKey::new(ScenarioId::OpenLoop, "load=0.5", "", "tokio");
        assert_eq!(load.file_stem(), "open-loop-load0.5-tokio");
    }

    #[test]
    fn a_recorded_param_splits_into_its_own_and_the_sweep_label() {
        assert_eq!(split_sweep(""), ("", ""));
        assert_eq!(split_sweep("keys=20"), ("keys=20", ""));
        assert_eq!(split_sweep("workers=2"), ("", "workers=2"));
        assert_eq!(split_sweep("keys=20 load=0.5"), ("keys=20 load=0.5", ""));
        assert_eq!(
            split_sweep("slow=16,senders=3 workers=1 throughput=16 idle-spin-us=0"),
            ("slow=16,senders=3", "workers=1 throughput=16 idle-spin-us=0")
        );
        // A sweep word is a label only at the end.
        assert_eq!(split_sweep("window=8 keys=3"), ("window=8 keys=3", ""));
    }

    #[test]
    fn a_key_survives_its_file_and_an_unknown_scenario_is_kept_as_text() {
        let key = CellKey::new(ScenarioId::Zipf, "keys=100", "workers=2", "group-by");
        let json = serde_json::to_string(&key).unwrap();
        assert_eq!(
            json,
            r#"{"scenario":"zipf","param":"keys=100 workers=2","strategy":"group-by"}"#
        );
        assert_eq!(serde_json::from_str::<CellKey>(&json).unwrap(), key);
        assert!(key.is("zipf", "keys=100 workers=2", "group-by"));
        assert!(!key.is("zipf", "keys=100", "group-by"));
        let other: CellKey =
            serde_json::from_str(r#"{"scenario":"later","param":"","strategy":"x"}"#).unwrap();
        assert_eq!(other.scenario, Scenario::Recorded("later".into()));
        assert_eq!(other.to_string(), "later x");
    }

    #[test]
    fn a_label_follows_the_scenarios_param_and_comes_off_again() {
        assert_eq!(labelled("keys=1000", "workers=2"), "keys=1000 workers=2");
        assert_eq!(labelled("", "workers=2"), "workers=2");
        assert_eq!(labelled("burst=240", ""), "burst=240");
        let settings = CellSettings {
            workers: 2,
            throughput: 64,
            window: 64,
            idle_spin_us: 50,
            sweep: "workers=2".into(),
        };
        assert_eq!(settings.base_param("keys=1000 workers=2"), "keys=1000");
        assert_eq!(settings.base_param("workers=2"), "");
        let plain = CellSettings { sweep: String::new(), ..settings };
        assert_eq!(plain.base_param("keys=1000"), "keys=1000");
    }
}
