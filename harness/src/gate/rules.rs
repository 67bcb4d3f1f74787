//! The rules file: its rules, parsed from TOML and checked against the results they will
//! judge (known scenarios, strategies and metrics; the fields each kind of rule needs and
//! takes), and the runs each rule applies to.

use std::path::Path;

use serde::{Deserialize, Serialize};
use strategies::Design;

use super::metric::{lookup, pipeline_metric};
use super::{rules_error, GateInputError};
use crate::results::{
    CellKey, CellSettings, CommitPolicy, Metric, PipelineRun, Results, RunResult, TransportKind,
};
use crate::workload::ScenarioId;

/// What kind of comparison a rule makes.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Against a number.
    Absolute,
    /// Against another strategy of the same run.
    Relative,
    /// Against a committed baseline.
    Baseline,
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub enum Op {
    /// At least.
    #[serde(rename = ">=")]
    AtLeast,
    /// At most.
    #[serde(rename = "<=")]
    AtMost,
    /// Exactly.
    #[serde(rename = "==")]
    Equal,
    /// More than.
    #[serde(rename = ">")]
    Above,
}

impl Op {
    pub(super) fn holds(self, measured: f64, limit: f64) -> bool {
        match self {
            Self::AtLeast => measured >= limit,
            Self::AtMost => measured <= limit,
            Self::Equal => (measured - limit).abs() < 1e-9,
            Self::Above => measured > limit,
        }
    }

    pub(super) fn symbol(self) -> &'static str {
        match self {
            Self::AtLeast => ">=",
            Self::AtMost => "<=",
            Self::Equal => "==",
            Self::Above => ">",
        }
    }
}

/// Which strategies a rule applies to.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(
    untagged,
    expecting = "`strategies` must be `all`, `ordered`, `shared-pool`, a family (`mailboxes`, \
                 `hash-groups`, ...), a strategy id, or a list of strategy ids"
)]
pub enum Selection {
    /// `all`, `ordered` (the strategies that promise order), `shared-pool` (those whose
    /// handlers run on one pool of `workers`, in this process: not an external design,
    /// whose driver has threads of its own), a family of strategies by its descriptor (`mailboxes`, `hash-groups`, ...) or one strategy id.
    Group(String),
    /// Explicit ids.
    List(Vec<String>),
}

/// An absolute rule's limit.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(untagged, expecting = "`value` must be a number or \"workers\"")]
pub enum Limit {
    /// A number.
    Number(f64),
    /// `workers`: the run's worker count (times `factor`, default 1).
    Symbol(String),
}

/// One rule of the rules file.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Shown in every report line.
    pub name: String,
    /// Absolute, relative or baseline.
    pub kind: Kind,
    /// A metric of the registry by name ([`Metric`]: `throughput`, `efficiency`,
    /// `correctness`, the sum of all correctness counts; `violations`, order violations +
    /// overlaps; `throughput_vs_inline`, median throughput / `inline`'s in the same cell;
    /// `floor_ratio`, `elapsed_s / measured_floor_s`, ...) or any other results field by
    /// dotted path (`throughput_per_s.median`, `threads.observed`, ...).
    pub metric: String,
    /// Scenario id; every scenario when absent.
    #[serde(default)]
    pub scenario: Option<String>,
    /// Parameter (`keys=20`); every parameter when absent. Within a sweep it matches a
    /// cell's whole param (`keys=20 workers=4`) or its scenario's own (`keys=20`, at every
    /// point).
    #[serde(default)]
    pub param: Option<String>,
    /// Only the cells that ran with this many workers (`runs[].settings.workers`, or the
    /// run's `--workers` in files without per-cell settings); every count when absent.
    #[serde(default)]
    pub workers: Option<usize>,
    /// Only the cells that ran with at least this many workers: a rule about what only
    /// concurrency shows (the checker catching the unordered control, which one worker runs
    /// serially) reads `n/a` on a cell with fewer, with the reason; every count when absent.
    #[serde(default)]
    pub min_workers: Option<usize>,
    /// Only the cells that ran with this `--throughput`; every value when absent.
    #[serde(default)]
    pub throughput: Option<usize>,
    /// Only the cells that ran with this window; every window when absent.
    #[serde(default)]
    pub window: Option<usize>,
    /// Only the pipeline cells whose consumers committed by this commit policy
    /// (`pipelines[].policy`): a policy id, or `safe` for every policy that loses nothing
    /// when a consumer dies or gives its partitions up ([`CommitPolicy::is_safe`]); every
    /// policy when absent. A rule with it and no `scenario` is about every pipeline
    /// scenario.
    #[serde(default)]
    pub policy: Option<String>,
    /// Only the pipeline cells consumed through this transport (`embedded` or `kafka`;
    /// `pipelines[].transport`, the embedded log where absent): a rule about what one
    /// transport's delivery shows. A cell of another transport is listed as not applied;
    /// every transport when absent.
    #[serde(default)]
    pub transport: Option<TransportKind>,
    /// The strategies the rule applies to.
    pub strategies: Selection,
    /// How measured compares to the limit.
    pub op: Op,
    /// Absolute: the limit.
    #[serde(default)]
    pub value: Option<Limit>,
    /// Relative: the other strategy's metric times this; absolute `workers`: the multiplier.
    #[serde(default)]
    pub factor: Option<f64>,
    /// Relative: the strategy compared against.
    #[serde(default)]
    pub of: Option<String>,
    /// Baseline: the allowed relative regression (0.2 = 20%).
    #[serde(default)]
    pub tolerance: Option<f64>,
}

impl Rule {
    /// Whether the metric depends on wall-clock speed (and so is confirmed before failing):
    /// as the registry says of its metrics; every field but the correctness counts and the
    /// thread counts.
    pub(super) fn is_wall_clock(&self) -> bool {
        match self.metric.parse::<Metric>() {
            Ok(metric) => metric.timed(),
            Err(_) => {
                !(self.metric.starts_with("correctness") || self.metric.starts_with("threads"))
            }
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    #[serde(default)]
    rule: Vec<Rule>,
}

/// Reads and checks a rules file against the results it will judge.
pub fn read_rules(path: &Path, results: &Results) -> Result<Vec<Rule>, GateInputError> {
    let bytes = std::fs::read(path)
        .map_err(|error| rules_error(format!("cannot read rules {}: {error}", path.display())))?;
    let text = std::str::from_utf8(&bytes).map_err(|error| {
        rules_error(format!("invalid rules file {}: not UTF-8 text: {error}", path.display()))
    })?;
    parse_rules(text, path, results)
}

/// Parses and checks the text of a rules file; `path` names it in errors. Any text at all
/// gives rules or an error, never a panic.
pub fn parse_rules(
    text: &str,
    path: &Path,
    results: &Results,
) -> Result<Vec<Rule>, GateInputError> {
    let file: RuleFile = toml::from_str(text)
        .map_err(|error| rules_error(format!("invalid rules file {}: {error}", path.display())))?;
    if file.rule.is_empty() {
        return Err(rules_error(format!("{} holds no [[rule]]", path.display())));
    }
    for (index, rule) in file.rule.iter().enumerate() {
        check_rule(rule, results)
            .map_err(|error| rules_error(format!("{}: {error}", path.display())))?;
        if file.rule[..index].iter().any(|earlier| earlier.name == rule.name) {
            return Err(rules_error(format!(
                "{}: two rules are named `{}`; names key the baseline, so each must be unique",
                path.display(),
                rule.name
            )));
        }
    }
    Ok(file.rule)
}

/// Checks one rule: its name, scenario, strategies, numbers and metric, and that it has the
/// fields its kind needs and none it takes not.
fn check_rule(rule: &Rule, results: &Results) -> Result<(), GateInputError> {
    let name = &rule.name;
    if name.trim().is_empty() {
        return Err(rules_error(format!(
            "a rule has the empty name `{name}`; every rule needs a name"
        )));
    }
    let scenario = match &rule.scenario {
        Some(scenario) => Some(
            scenario
                .parse::<ScenarioId>()
                .map_err(|error| rules_error(format!("rule `{name}`: {error}")))?,
        ),
        None => None,
    };
    if let Some(policy) = &rule.policy {
        policy_selection(policy).map_err(|why| rules_error(format!("rule `{name}`: {why}")))?;
        if scenario.is_some_and(|scenario| !scenario.is_pipeline()) {
            return Err(rules_error(format!(
                "rule `{name}`: `policy` selects pipeline cells, and {} is no pipeline scenario",
                rule.scenario.as_deref().unwrap_or_default()
            )));
        }
    }
    if rule.transport.is_some() && scenario.is_some_and(|scenario| !scenario.is_pipeline()) {
        return Err(rules_error(format!(
            "rule `{name}`: `transport` selects pipeline cells, and {} is no pipeline scenario",
            rule.scenario.as_deref().unwrap_or_default()
        )));
    }
    if rule.min_workers == Some(0) {
        return Err(rules_error(format!(
            "rule `{name}`: `min_workers` must be at least 1 (every cell ran with 1 or more)"
        )));
    }
    if is_pipeline_rule(rule) {
        return check_pipeline_rule(rule, scenario, results);
    }
    check_strategies(rule)?;
    check_numbers(rule)?;
    check_metric(rule, results)?;
    check_no_stray_field(rule)?;
    check_needed_fields(rule)
}

/// The strategies a rule selects, and the one it compares with: known, and none twice.
fn check_strategies(rule: &Rule) -> Result<(), GateInputError> {
    let name = &rule.name;
    let ids = selection_ids(&rule.strategies)
        .map_err(|error| rules_error(format!("rule `{name}`: {error}")))?;
    if ids.is_empty() {
        return Err(rules_error(format!("rule `{name}`: `strategies` is an empty list")));
    }
    if let Selection::List(list) = &rule.strategies {
        let twice = list
            .iter()
            .enumerate()
            .find_map(|(index, id)| list[..index].contains(id).then_some(id));
        if let Some(twice) = twice {
            return Err(rules_error(format!("rule `{name}`: `strategies` names `{twice}` twice")));
        }
    }
    if let Some(of) = &rule.of {
        of.parse::<Design>().map_err(|error| rules_error(format!("rule `{name}`: {error}")))?;
    }
    Ok(())
}

/// A rule's factor (finite, above 0) and numeric limit (finite).
fn check_numbers(rule: &Rule) -> Result<(), GateInputError> {
    let name = &rule.name;
    if let Some(factor) = rule.factor {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(rules_error(format!(
                "rule `{name}`: `factor` must be a finite number above 0, got {factor}"
            )));
        }
    }
    if let Some(Limit::Number(value)) = rule.value {
        if !value.is_finite() {
            return Err(rules_error(format!(
                "rule `{name}`: `value` must be a finite number, got {value}"
            )));
        }
    }
    Ok(())
}

/// A rule's metric: one of the registry, or a numeric field some run of `results` has. A
/// rule about a scenario the run left out is reported as not run, not judged here.
fn check_metric(rule: &Rule, results: &Results) -> Result<(), GateInputError> {
    let scenario_ran = rule
        .scenario
        .as_ref()
        .is_none_or(|scenario| results.runs.iter().any(|run| run.scenario == *scenario));
    if rule.metric.parse::<Metric>().is_ok() || results.runs.is_empty() || !scenario_ran {
        return Ok(());
    }
    // A field is known if some run has it (nullable ones are null where they do not apply).
    let known = results.runs.iter().any(|run| {
        serde_json::to_value(run)
            .is_ok_and(|json| lookup(&json, &rule.metric).is_some_and(serde_json::Value::is_number))
    });
    if known {
        return Ok(());
    }
    Err(rules_error(format!(
        "rule `{}`: unknown metric `{}`; use a results field path such as \
         throughput_per_s.median, or one of {}",
        rule.name,
        rule.metric,
        Metric::ALL.iter().map(|metric| metric.name()).collect::<Vec<_>>().join(", ")
    )))
}

/// No field that a rule's kind takes not (an absolute rule's `of`, a baseline rule's
/// `value`, ...), and a baseline rule compares with `>=` or `<=`.
fn check_no_stray_field(rule: &Rule) -> Result<(), GateInputError> {
    let name = &rule.name;
    let stray = |what: &str| {
        Err(rules_error(format!("rule `{name}`: a {:?} rule takes no `{what}`", rule.kind)))
    };
    let (has_value, has_of, has_tolerance) =
        (rule.value.is_some(), rule.of.is_some(), rule.tolerance.is_some());
    match rule.kind {
        Kind::Absolute if has_of || has_tolerance => stray(if has_of { "of" } else { "tolerance" }),
        Kind::Absolute if rule.factor.is_some() && matches!(rule.value, Some(Limit::Number(_))) => {
            Err(rules_error(format!("rule `{name}`: `factor` applies only to value = \"workers\"")))
        }
        Kind::Relative if has_value || has_tolerance => {
            stray(if has_value { "value" } else { "tolerance" })
        }
        Kind::Baseline if has_value || has_of || rule.factor.is_some() => {
            let field = if has_value {
                "value"
            } else if has_of {
                "of"
            } else {
                "factor"
            };
            stray(field)
        }
        Kind::Baseline if !matches!(rule.op, Op::AtLeast | Op::AtMost) => {
            Err(rules_error(format!("rule `{name}`: a baseline rule compares with >= or <=")))
        }
        _ => Ok(()),
    }
}

/// The fields a rule's kind needs: an absolute rule's `value` (a number or `workers`), a
/// relative rule's `of` and `factor`, a baseline rule's `tolerance` in 0..1.
fn check_needed_fields(rule: &Rule) -> Result<(), GateInputError> {
    let name = &rule.name;
    let missing = |what: &str| {
        Err(rules_error(format!("rule `{name}`: a {:?} rule needs `{what}`", rule.kind)))
    };
    match rule.kind {
        Kind::Absolute => match &rule.value {
            None => missing("value"),
            Some(Limit::Symbol(symbol)) if symbol != "workers" => Err(rules_error(format!(
                "rule `{name}`: value `{symbol}` is neither a number nor `workers`"
            ))),
            Some(_) => Ok(()),
        },
        Kind::Relative if rule.of.is_none() => missing("of"),
        Kind::Relative if rule.factor.is_none() => missing("factor"),
        Kind::Relative => Ok(()),
        Kind::Baseline => match rule.tolerance {
            Some(tolerance) if (0.0..1.0).contains(&tolerance) => Ok(()),
            Some(tolerance) => Err(rules_error(format!(
                "rule `{name}`: `tolerance` must be in 0..1 (0.2 = 20%), got {tolerance}"
            ))),
            None => Err(rules_error(format!(
                "rule `{name}`: a baseline rule needs `tolerance` in 0..1"
            ))),
        },
    }
}

/// The commit policies a rule's `policy` selects: `safe`, or one policy by its id.
fn policy_selection(policy: &str) -> Result<Vec<CommitPolicy>, String> {
    if policy == "safe" {
        return Ok(CommitPolicy::ALL.into_iter().filter(|policy| policy.is_safe()).collect());
    }
    policy
        .parse::<CommitPolicy>()
        .map(|policy| vec![policy])
        .map_err(|error| format!("`policy` must be `safe` or a commit policy: {error}"))
}

/// A rule about a pipeline scenario (`scenario`; every one where absent, for a rule that
/// selects by `policy`): absolute, against a number, on a numeric or flag field of
/// `pipelines[]` (checked against the results' pipeline cells when they have any).
fn check_pipeline_rule(
    rule: &Rule,
    scenario: Option<ScenarioId>,
    results: &Results,
) -> Result<(), GateInputError> {
    let name = &rule.name;
    let about = scenario.map_or_else(|| "every pipeline scenario".to_owned(), |s| s.to_string());
    if rule.kind != Kind::Absolute || !matches!(rule.value, Some(Limit::Number(_))) {
        return Err(rules_error(format!(
            "rule `{name}`: a rule about {about} is absolute, with a number as `value`"
        )));
    }
    if rule.of.is_some() || rule.tolerance.is_some() || rule.factor.is_some() {
        return Err(rules_error(format!(
            "rule `{name}`: a rule about {about} takes no `of`, `tolerance` or `factor`"
        )));
    }
    selection_ids(&rule.strategies)
        .map_err(|error| rules_error(format!("rule `{name}`: {error}")))?;
    let cells: Vec<_> = results
        .pipelines
        .iter()
        .filter(|run| scenario.is_none_or(|scenario| run.scenario == scenario.as_str()))
        .collect();
    if !cells.is_empty() && !cells.iter().any(|run| pipeline_metric(&rule.metric, run).is_some()) {
        return Err(rules_error(format!(
            "rule `{name}`: unknown metric `{}` for {about}; use a field path of \
             pipelines[] such as lost, redelivered or projection.keys_wrong",
            rule.metric
        )));
    }
    Ok(())
}

/// The pipeline cells `rule` applies to: its scenario, param, policy and strategies.
pub(super) fn matching_pipelines<'r>(
    rule: &'r Rule,
    runs: &'r [PipelineRun],
) -> impl Iterator<Item = &'r PipelineRun> + 'r {
    let ids = selection_ids(&rule.strategies).unwrap_or_default();
    runs.iter().filter(move |run| {
        selects_pipeline(rule, run) && ids.iter().any(|id| id.as_str() == run.strategy)
    })
}

/// Whether `rule`, a pipeline rule, selects the pipeline cell `run` by its scenario, param,
/// settings and commit policy (its strategies are another matter).
pub(super) fn selects_pipeline(rule: &Rule, run: &PipelineRun) -> bool {
    selects_pipeline_cell(rule, run) && !retried_for_ever(rule, run)
}

/// Whether `rule` judges the version-aware final state (`projection.*`) and `run` is a
/// retry-forever cell (`pipeline-retry --max-attempts 0`), which cannot reach it: its poison
/// records never settle, and its stall figure is what it measures. Such a cell is not
/// judged by the rule.
pub(super) fn retried_for_ever(rule: &Rule, run: &PipelineRun) -> bool {
    rule.metric.starts_with("projection.") && !run.state_judged()
}

/// [`selects_pipeline`] but for [`retried_for_ever`].
pub(super) fn selects_pipeline_cell(rule: &Rule, run: &PipelineRun) -> bool {
    let policy_matches = rule.policy.as_deref().is_none_or(|policy| {
        policy_selection(policy).is_ok_and(|policies| policies.contains(&run.policy))
    });
    is_pipeline_rule(rule)
        && policy_matches
        && rule.transport.is_none_or(|transport| run.transport.unwrap_or_default() == transport)
        && selects(rule, &CellKey::of_pipeline(run), run.settings.as_ref(), None)
}

/// Whether `rule`'s scenario, param and settings select `cell`, which ran with `settings`
/// (`workers`: the cell's worker count in files without settings); its strategies are
/// another matter. A rule's param is the cell's whole param or its scenario's own.
pub(super) fn selects(
    rule: &Rule,
    cell: &CellKey,
    settings: Option<&CellSettings>,
    workers: Option<usize>,
) -> bool {
    let scenario_matches =
        rule.scenario.as_ref().is_none_or(|wanted| cell.scenario.as_str() == wanted);
    let param_matches = rule
        .param
        .as_ref()
        .is_none_or(|wanted| *wanted == cell.full_param() || *wanted == cell.param);
    let setting =
        |wanted: Option<usize>, of: fn(&CellSettings) -> usize, fallback: Option<usize>| {
            wanted.is_none_or(|wanted| settings.map(of).or(fallback) == Some(wanted))
        };
    scenario_matches
        && param_matches
        && setting(rule.workers, |s| s.workers, workers)
        && setting(rule.throughput, |s| s.throughput, None)
        && setting(rule.window, |s| s.window, None)
        && below_min_workers(rule, settings, workers).is_none()
}

/// The workers a cell ran with (`settings`, or `workers` in files without settings) where
/// they are fewer than `rule`'s `min_workers`: the rule does not judge it. A cell whose
/// count is not recorded is judged.
pub(super) fn below_min_workers(
    rule: &Rule,
    settings: Option<&CellSettings>,
    workers: Option<usize>,
) -> Option<usize> {
    let min = rule.min_workers?;
    let ran = settings.map(|s| s.workers).or(workers)?;
    (ran < min).then_some(ran)
}

/// Whether `rule` is about a pipeline scenario, or selects by commit policy with no
/// scenario (every pipeline scenario): judged on `pipelines[]`.
pub(super) fn is_pipeline_rule(rule: &Rule) -> bool {
    match rule.scenario.as_deref() {
        Some(id) => id.parse::<ScenarioId>().is_ok_and(ScenarioId::is_pipeline),
        None => rule.policy.is_some() || rule.transport.is_some(),
    }
}

/// The strategy ids of a selection.
pub(super) fn selection_ids(
    selection: &Selection,
) -> Result<Vec<Design>, strategies::UnknownStrategy> {
    Ok(match selection {
        Selection::Group(group) => match group.as_str() {
            "all" => Design::known(),
            "ordered" => Design::known().into_iter().filter(|id| id.is_ordered()).collect(),
            // Designs run in this process: a driver process's threads include its runtime's.
            "shared-pool" => Design::known()
                .into_iter()
                .filter(|&id| id.is_shared_pool() && !crate::results::designs::runs_elsewhere(id))
                .collect(),
            other => match (other.parse::<Design>(), other.parse::<strategies::Family>()) {
                (Ok(id), _) => vec![id],
                (Err(_), Ok(family)) => Design::known()
                    .into_iter()
                    .filter(|id| id.descriptor().family == family)
                    .collect(),
                (Err(error), Err(_)) => return Err(error),
            },
        },
        Selection::List(ids) => ids.iter().map(|id| id.parse()).collect::<Result<_, _>>()?,
    })
}

/// The runs `rule` applies to: its scenario, param and strategies.
pub(super) fn matching_runs<'r>(
    rule: &'r Rule,
    runs: &'r [RunResult],
) -> impl Iterator<Item = &'r RunResult> + 'r {
    let ids = selection_ids(&rule.strategies).unwrap_or_default();
    runs.iter().filter(move |run| {
        let cell = CellKey::of_run(run);
        selects(rule, &cell, run.settings.as_ref(), run.workers)
            && ids.iter().any(|id| id.as_str() == cell.strategy)
    })
}

#[cfg(test)]
mod tests {
    use crate::gate::evaluate;
    use crate::gate::testing::*;

    #[test]
    fn a_rule_selects_sweep_cells_by_setting_and_by_its_scenarios_own_param() {
        let rule: super::Rule = toml::from_str(
            "name = 'x'\nkind = 'absolute'\nmetric = 'correctness'\nstrategies = 'all'\n\
             op = '=='\nvalue = 0\nparam = 'keys=20'\nworkers = 4",
        )
        .unwrap();
        let at = |workers: usize, sweep: &str| crate::results::CellSettings {
            workers,
            throughput: 16,
            window: 256,
            idle_spin_us: 20,
            sweep: sweep.into(),
        };
        let selects = |param: &str, settings: Option<&crate::results::CellSettings>, workers| {
            let cell = crate::results::CellKey::recorded("uniform", param, "inline");
            super::selects(&rule, &cell, settings, workers)
        };
        assert!(selects("keys=20 workers=4", Some(&at(4, "workers=4")), None));
        assert!(!selects("keys=20 workers=2", Some(&at(2, "workers=2")), None));
        assert!(!selects("keys=10 workers=4", Some(&at(4, "workers=4")), None));
        // Files without per-cell settings: the cell's worker count, its whole param.
        assert!(selects("keys=20", None, Some(4)));
        assert!(!selects("keys=20", None, Some(2)));
    }

    #[test]
    fn malformed_rules_are_bad_input_naming_the_problem() {
        let results = reference();
        let cases = [
            ("[[rule]]\nname = 'x'", "invalid rules file"),
            (&CORRECT.replace("correctness", "speediness"), "unknown metric `speediness`"),
            (&RELATIVE.replace("group-by", "group-bye"), "unknown strategy `group-bye`"),
            (&RELATIVE.replace("uniform", "unifrom"), "unknown scenario `unifrom`"),
            (&RELATIVE.replace("factor = 0.8", ""), "needs `factor`"),
            ("", "holds no [[rule]]"),
            (&CORRECT.replace("value = 0", "value = 0\ntolerance = 0.1"), "takes no `tolerance`"),
            (&RELATIVE.replace("factor = 0.8", "factor = 0.8\nvalue = 3"), "takes no `value`"),
            (&RELATIVE.replace("0.8", "nan"), "`factor` must be a finite number above 0, got NaN"),
            (&RELATIVE.replace("0.8", "-2.0"), "`factor` must be a finite number above 0, got -2"),
            (
                &CORRECT.replace("value = 0", "value = inf"),
                "`value` must be a finite number, got inf",
            ),
            (
                &CORRECT.replace("value = 0", "value = true"),
                "`value` must be a number or \"workers\"",
            ),
            (&CORRECT.replace("value = 0", "value = 'cores'"), "value `cores` is neither"),
            (&CORRECT.replace("\"ordered\"", "[]"), "`strategies` is an empty list"),
            (&CORRECT.replace("\"ordered\"", "7"), "`strategies` must be `all`"),
            (
                &CORRECT.replace("\"ordered\"", "['inline', 'tokio', 'inline']"),
                "`strategies` names `inline` twice",
            ),
            (&CORRECT.replace("ordered strategies are correct", " "), "the empty name"),
            (
                &format!("{CORRECT}{CORRECT}"),
                "two rules are named `ordered strategies are correct`",
            ),
            (&CORRECT.replace("name", "nmae"), "unknown field `nmae`"),
            (&CORRECT.replace("absolute", "absolut"), "unknown variant `absolut`"),
            ("rule = 3", "invalid rules file"),
            ("[[rule]]\n[[rule]", "invalid rules file"),
        ];
        for (text, expected) in cases {
            let error = rules(text, &results).unwrap_err().to_string();
            assert!(error.contains(expected), "{expected}: {error}");
        }
        let none = RELATIVE
            .replace("scenario = \"uniform\"", "scenario = \"uniform\"\nparam = \"keys=7\"");
        let rules = rules(&none, &results).unwrap();
        let error = evaluate(&results, &rules, None, 0, &mut no_rerun()).unwrap_err();
        assert!(error.to_string().contains("matches no measured cell"), "{error}");
    }
}
