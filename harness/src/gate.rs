//! Performance gates: rules from a committed TOML file, evaluated on one run's results.
//!
//! Three kinds of rule:
//! - **absolute**: a metric against a number, or against `workers` x `factor`
//!   (correctness counts are zero; shared pools start exactly `workers` threads);
//! - **relative**: a metric of one strategy against `factor` x the same metric of another
//!   strategy *from the same run* (the default on shared runners: both sides see the same
//!   machine, load and noise);
//! - **baseline**: a machine-independent metric (efficiency, or `throughput_vs_inline`)
//!   against a committed baseline file, within a tolerance.
//!
//! A failing wall-clock rule is measured again, up to `confirm` more times, by re-running
//! just the cells involved; it fails only if every measurement fails, and every measurement
//! is reported. Correctness and thread rules fail at once.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::{Deserialize, Serialize};
use strategies::StrategyId;

use crate::results::{Results, RunResult};
use crate::scenario::ScenarioId;

/// The schema id of a baseline file.
pub const BASELINE_SCHEMA: &str = "keyed-bench.baseline.v1";

/// Metrics computed from a run rather than read from it.
const DERIVED_METRICS: &[&str] = &["correctness", "violations", "throughput_vs_inline"];

/// A gate input that cannot be used (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct GateInputError(pub String);

fn bad(message: impl Into<String>) -> GateInputError {
    GateInputError(message.into())
}

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
    fn holds(self, measured: f64, limit: f64) -> bool {
        match self {
            Self::AtLeast => measured >= limit,
            Self::AtMost => measured <= limit,
            Self::Equal => (measured - limit).abs() < 1e-9,
            Self::Above => measured > limit,
        }
    }

    fn symbol(self) -> &'static str {
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
    expecting = "`strategies` must be `all`, `ordered`, `shared-pool`, a strategy id, or a list \
                 of strategy ids"
)]
pub enum Selection {
    /// `all`, `ordered` (the strategies that promise order) or `shared-pool`.
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
    /// A results field by dotted path (`throughput_per_s.median`, `bystander_latency_ns.p99`,
    /// `threads.observed`, `efficiency`, ...) or a derived metric (`correctness`: the sum of
    /// all correctness counts; `violations`: order violations + overlaps;
    /// `throughput_vs_inline`: median throughput / `inline`'s in the same cell).
    pub metric: String,
    /// Scenario id; every scenario when absent.
    #[serde(default)]
    pub scenario: Option<String>,
    /// Parameter (`keys=20`); every parameter when absent.
    #[serde(default)]
    pub param: Option<String>,
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
    /// Whether the metric depends on wall-clock speed (and so is confirmed before failing).
    fn is_wall_clock(&self) -> bool {
        !(self.metric == "violations"
            || self.metric.starts_with("correctness")
            || self.metric.starts_with("threads"))
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    #[serde(default)]
    rule: Vec<Rule>,
}

/// The most confirmation re-measurements `--confirm` may ask for.
pub const MAX_CONFIRM: usize = 10;

/// Reads and checks a rules file against the results it will judge.
pub fn read_rules(path: &Path, results: &Results) -> Result<Vec<Rule>, GateInputError> {
    let bytes = std::fs::read(path)
        .map_err(|error| bad(format!("cannot read rules {}: {error}", path.display())))?;
    let text = std::str::from_utf8(&bytes).map_err(|error| {
        bad(format!("invalid rules file {}: not UTF-8 text: {error}", path.display()))
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
        .map_err(|error| bad(format!("invalid rules file {}: {error}", path.display())))?;
    if file.rule.is_empty() {
        return Err(bad(format!("{} holds no [[rule]]", path.display())));
    }
    for (index, rule) in file.rule.iter().enumerate() {
        check_rule(rule, results).map_err(|error| bad(format!("{}: {error}", path.display())))?;
        if file.rule[..index].iter().any(|earlier| earlier.name == rule.name) {
            return Err(bad(format!(
                "{}: two rules are named `{}`; names key the baseline, so each must be unique",
                path.display(),
                rule.name
            )));
        }
    }
    Ok(file.rule)
}

fn check_rule(rule: &Rule, results: &Results) -> Result<(), GateInputError> {
    let name = &rule.name;
    if name.trim().is_empty() {
        return Err(bad(format!("a rule has the empty name `{name}`; every rule needs a name")));
    }
    if let Some(scenario) = &rule.scenario {
        scenario.parse::<ScenarioId>().map_err(|error| bad(format!("rule `{name}`: {error}")))?;
    }
    let ids =
        selection_ids(&rule.strategies).map_err(|error| bad(format!("rule `{name}`: {error}")))?;
    if ids.is_empty() {
        return Err(bad(format!("rule `{name}`: `strategies` is an empty list")));
    }
    if let Selection::List(list) = &rule.strategies {
        if let Some(twice) =
            list.iter().enumerate().find_map(|(index, id)| list[..index].contains(id).then_some(id))
        {
            return Err(bad(format!("rule `{name}`: `strategies` names `{twice}` twice")));
        }
    }
    if let Some(of) = &rule.of {
        of.parse::<StrategyId>().map_err(|error| bad(format!("rule `{name}`: {error}")))?;
    }
    if let Some(factor) = rule.factor {
        if !(factor.is_finite() && factor > 0.0) {
            return Err(bad(format!(
                "rule `{name}`: `factor` must be a finite number above 0, got {factor}"
            )));
        }
    }
    if let Some(Limit::Number(value)) = rule.value {
        if !value.is_finite() {
            return Err(bad(format!(
                "rule `{name}`: `value` must be a finite number, got {value}"
            )));
        }
    }
    if !DERIVED_METRICS.contains(&rule.metric.as_str()) {
        // A field is known if some run has it (nullable ones are null where they do not apply).
        let known = results.runs.iter().any(|run| {
            serde_json::to_value(run).is_ok_and(|json| {
                lookup(&json, &rule.metric).is_some_and(serde_json::Value::is_number)
            })
        });
        if !known {
            return Err(bad(format!(
                "rule `{name}`: unknown metric `{}`; use a results field path such as \
                 throughput_per_s.median, or one of {}",
                rule.metric,
                DERIVED_METRICS.join(", ")
            )));
        }
    }
    let missing = |what: &str| bad(format!("rule `{name}`: a {:?} rule needs `{what}`", rule.kind));
    let stray =
        |what: &str| bad(format!("rule `{name}`: a {:?} rule takes no `{what}`", rule.kind));
    let (has_value, has_of, has_tolerance) =
        (rule.value.is_some(), rule.of.is_some(), rule.tolerance.is_some());
    match rule.kind {
        Kind::Absolute if has_of || has_tolerance => {
            return Err(stray(if has_of { "of" } else { "tolerance" }))
        }
        Kind::Absolute if rule.factor.is_some() && matches!(rule.value, Some(Limit::Number(_))) => {
            return Err(bad(format!("rule `{name}`: `factor` applies only to value = \"workers\"")))
        }
        Kind::Relative if has_value || has_tolerance => {
            return Err(stray(if has_value { "value" } else { "tolerance" }))
        }
        Kind::Baseline if has_value || has_of || rule.factor.is_some() => {
            return Err(stray(if has_value {
                "value"
            } else if has_of {
                "of"
            } else {
                "factor"
            }))
        }
        Kind::Baseline if !matches!(rule.op, Op::AtLeast | Op::AtMost) => {
            return Err(bad(format!("rule `{name}`: a baseline rule compares with >= or <=")))
        }
        _ => {}
    }
    match rule.kind {
        Kind::Absolute => match &rule.value {
            None => return Err(missing("value")),
            Some(Limit::Symbol(symbol)) if symbol != "workers" => {
                return Err(bad(format!(
                    "rule `{name}`: value `{symbol}` is neither a number nor `workers`"
                )))
            }
            Some(_) => {}
        },
        Kind::Relative => {
            if rule.of.is_none() {
                return Err(missing("of"));
            }
            if rule.factor.is_none() {
                return Err(missing("factor"));
            }
        }
        Kind::Baseline => match rule.tolerance {
            Some(tolerance) if (0.0..1.0).contains(&tolerance) => {}
            Some(tolerance) => {
                return Err(bad(format!(
                    "rule `{name}`: `tolerance` must be in 0..1 (0.2 = 20%), got {tolerance}"
                )))
            }
            None => {
                return Err(bad(format!(
                    "rule `{name}`: a baseline rule needs `tolerance` in 0..1"
                )))
            }
        },
    }
    Ok(())
}

/// The strategy ids of a selection.
fn selection_ids(selection: &Selection) -> Result<Vec<StrategyId>, strategies::UnknownStrategy> {
    Ok(match selection {
        Selection::Group(group) => match group.as_str() {
            "all" => StrategyId::ALL.to_vec(),
            "ordered" => StrategyId::ALL.iter().copied().filter(|id| id.is_ordered()).collect(),
            "shared-pool" => {
                StrategyId::ALL.iter().copied().filter(|id| id.is_shared_pool()).collect()
            }
            other => vec![other.parse()?],
        },
        Selection::List(ids) => ids.iter().map(|id| id.parse()).collect::<Result<_, _>>()?,
    })
}

fn lookup<'v>(value: &'v serde_json::Value, path: &str) -> Option<&'v serde_json::Value> {
    path.split('.').try_fold(value, |value, key| value.get(key))
}

/// The value of `metric` for `run`, with `runs` for metrics that need the cell's others.
/// `None`: not applicable to this run (a null field, or no `inline` to compare with).
fn metric_of(metric: &str, run: &RunResult, runs: &[RunResult]) -> Option<f64> {
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
            let inline = find(runs, &run.scenario, &run.param, "inline")?;
            Some(run.throughput_per_s.median / inline.throughput_per_s.median)
        }
        path => lookup(&serde_json::to_value(run).ok()?, path)?.as_f64(),
    }
}

fn find<'r>(
    runs: &'r [RunResult],
    scenario: &str,
    param: &str,
    strategy: &str,
) -> Option<&'r RunResult> {
    runs.iter()
        .find(|run| run.scenario == scenario && run.param == param && run.strategy == strategy)
}

/// Baseline values by `rule|scenario|param|strategy`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Baseline {
    /// Always [`BASELINE_SCHEMA`].
    pub schema: String,
    /// Where the values came from.
    #[serde(default)]
    pub source: String,
    /// The values.
    pub values: BTreeMap<String, f64>,
}

fn baseline_key(rule: &Rule, run: &RunResult) -> String {
    format!("{}|{}|{}|{}", rule.name, run.scenario, run.param, run.strategy)
}

/// Reads a baseline file.
pub fn read_baseline(path: &Path) -> Result<Baseline, GateInputError> {
    let bytes = std::fs::read(path)
        .map_err(|error| bad(format!("cannot read baseline {}: {error}", path.display())))?;
    parse_baseline(&bytes, path)
}

/// Parses and checks the bytes of a baseline file; `path` names it in errors. Any bytes at
/// all give a baseline or an error, never a panic.
pub fn parse_baseline(bytes: &[u8], path: &Path) -> Result<Baseline, GateInputError> {
    let invalid =
        |reason: String| bad(format!("invalid baseline file {}: {reason}", path.display()));
    let baseline: Baseline =
        serde_json::from_slice(bytes).map_err(|error| invalid(error.to_string()))?;
    if baseline.schema != BASELINE_SCHEMA {
        return Err(invalid(format!("schema `{}`, expected `{BASELINE_SCHEMA}`", baseline.schema)));
    }
    if let Some((key, value)) = baseline.values.iter().find(|(_, value)| !value.is_finite()) {
        return Err(invalid(format!("`{key}` is {value}, not a finite number")));
    }
    Ok(baseline)
}

/// A baseline holding, for every baseline rule, the values of `results`.
pub fn baseline_from(results: &Results, rules: &[Rule]) -> Baseline {
    let mut values = BTreeMap::new();
    for rule in rules.iter().filter(|rule| rule.kind == Kind::Baseline) {
        for run in matching_runs(rule, &results.runs) {
            if let Some(value) = metric_of(&rule.metric, run, &results.runs) {
                values.insert(baseline_key(rule, run), value);
            }
        }
    }
    Baseline {
        schema: BASELINE_SCHEMA.into(),
        source: format!(
            "{} at {} ({} cores, {})",
            results.meta.created,
            results.meta.git_commit,
            results.meta.cores,
            results.meta.cpu_model
        ),
        values,
    }
}

fn matching_runs<'r>(
    rule: &'r Rule,
    runs: &'r [RunResult],
) -> impl Iterator<Item = &'r RunResult> + 'r {
    let ids = selection_ids(&rule.strategies).unwrap_or_default();
    runs.iter().filter(move |run| {
        rule.scenario.as_ref().is_none_or(|scenario| *scenario == run.scenario)
            && rule.param.as_ref().is_none_or(|param| *param == run.param)
            && ids.iter().any(|id| id.as_str() == run.strategy)
    })
}

/// One rule applied to one cell.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Verdict {
    /// The rule.
    pub rule: String,
    /// `scenario param strategy`.
    pub cell: String,
    /// Measured values: the run's, then each confirmation's.
    pub measured: Vec<f64>,
    /// The limit each measurement was held to.
    pub limits: Vec<f64>,
    /// The operator.
    pub op: String,
    /// Whether the rule holds (on the run or on any confirmation).
    pub pass: bool,
}

/// Measures a cell again: `(scenario, param, strategies)` -> fresh results of those.
pub type Rerun<'a> = dyn FnMut(&str, &str, &[StrategyId]) -> Option<Vec<RunResult>> + 'a;

/// Evaluates every rule; `confirm` bounds the re-measurements of a failing wall-clock rule.
pub fn evaluate(
    results: &Results,
    rules: &[Rule],
    baseline: Option<&Baseline>,
    confirm: usize,
    rerun: &mut Rerun<'_>,
) -> Result<Vec<Verdict>, GateInputError> {
    let mut verdicts = Vec::new();
    for rule in rules {
        let cells: Vec<&RunResult> = matching_runs(rule, &results.runs).collect();
        let mut judged = 0;
        for run in cells {
            let Some(first) = judge(rule, run, &results.runs, &results.meta, baseline)? else {
                continue;
            };
            judged += 1;
            let (mut measured, mut limits) = (vec![first.0], vec![first.1]);
            let mut pass = rule.op.holds(first.0, first.1);
            if !pass && rule.is_wall_clock() {
                let mut involved =
                    vec![run.strategy.parse::<StrategyId>().map_err(|e| bad(e.to_string()))?];
                if let Some(of) = &rule.of {
                    involved.push(
                        of.parse().map_err(|e: strategies::UnknownStrategy| bad(e.to_string()))?,
                    );
                }
                if rule.metric == "throughput_vs_inline" {
                    involved.push(StrategyId::Inline);
                }
                for _ in 0..confirm {
                    let Some(fresh) = rerun(&run.scenario, &run.param, &involved) else { break };
                    let Some(again) = find(&fresh, &run.scenario, &run.param, &run.strategy) else {
                        break;
                    };
                    let Some((value, limit)) = judge(rule, again, &fresh, &results.meta, baseline)?
                    else {
                        break;
                    };
                    measured.push(value);
                    limits.push(limit);
                    if rule.op.holds(value, limit) {
                        pass = true;
                        break;
                    }
                }
            }
            verdicts.push(Verdict {
                rule: rule.name.clone(),
                cell: format!("{} {} {}", run.scenario, run.param, run.strategy).replace("  ", " "),
                measured,
                limits,
                op: rule.op.symbol().into(),
                pass,
            });
        }
        if judged == 0 {
            return Err(bad(no_cell(rule, &results.runs)));
        }
    }
    Ok(verdicts)
}

/// Why `rule` judged nothing: what it asks for next to what the results hold.
fn no_cell(rule: &Rule, runs: &[RunResult]) -> String {
    fn distinct<'r>(values: impl Iterator<Item = &'r str>) -> String {
        let mut seen: Vec<&str> = Vec::new();
        for value in values {
            if !seen.contains(&value) {
                seen.push(value);
            }
        }
        if seen.is_empty() {
            "none".into()
        } else {
            seen.join(", ")
        }
    }
    let wanted = selection_ids(&rule.strategies).unwrap_or_default();
    let mut asked = vec![format!("strategies {}", distinct(wanted.iter().map(|id| id.as_str())))];
    if let Some(scenario) = &rule.scenario {
        asked.push(format!("scenario {scenario}"));
    }
    if let Some(param) = &rule.param {
        asked.push(format!("param {param}"));
    }
    format!(
        "rule `{}` matches no measured cell in these results: it asks for {}, and they hold \
         strategies {} on scenarios {} (metric `{}` may also be null where it does not apply)",
        rule.name,
        asked.join(", "),
        distinct(runs.iter().map(|run| run.strategy.as_str())),
        distinct(runs.iter().map(|run| run.scenario.as_str())),
        rule.metric
    )
}

/// `(measured, limit)` of `rule` on `run`; `None` where the metric does not apply.
fn judge(
    rule: &Rule,
    run: &RunResult,
    runs: &[RunResult],
    meta: &crate::results::Meta,
    baseline: Option<&Baseline>,
) -> Result<Option<(f64, f64)>, GateInputError> {
    let Some(measured) = metric_of(&rule.metric, run, runs) else { return Ok(None) };
    let limit = match rule.kind {
        Kind::Absolute => match rule.value.as_ref().expect("checked") {
            Limit::Number(number) => *number,
            Limit::Symbol(_) => meta.workers as f64 * rule.factor.unwrap_or(1.0),
        },
        Kind::Relative => {
            let of = rule.of.as_deref().expect("checked");
            let Some(other) = find(runs, &run.scenario, &run.param, of) else {
                return Err(bad(format!(
                    "rule `{}`: no `{of}` run in {} {}",
                    rule.name, run.scenario, run.param
                )));
            };
            let Some(theirs) = metric_of(&rule.metric, other, runs) else { return Ok(None) };
            theirs * rule.factor.expect("checked")
        }
        Kind::Baseline => {
            let baseline = baseline.ok_or_else(|| {
                bad(format!("rule `{}` needs a baseline file (--baseline)", rule.name))
            })?;
            let key = baseline_key(rule, run);
            let Some(&base) = baseline.values.get(&key) else {
                return Err(bad(format!(
                    "the baseline has no value for `{key}`; refresh it with --update-baseline"
                )));
            };
            let tolerance = rule.tolerance.expect("checked");
            match rule.op {
                Op::AtMost => base * (1.0 + tolerance),
                _ => base * (1.0 - tolerance),
            }
        }
    };
    Ok(Some((measured, limit)))
}

/// How to print verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// An aligned table.
    Text,
    /// A table for a pull-request comment.
    Markdown,
    /// Machine-readable.
    Json,
}

fn number(value: f64) -> String {
    if value.abs() >= 1e4 || (value != 0.0 && value.abs() < 1e-2) {
        format!("{value:.3e}")
    } else if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.3}")
    }
}

/// Each measurement with its own limit (a re-run measures both sides of a ratio again).
fn measured_text(verdict: &Verdict) -> String {
    let pairs = verdict.measured.iter().zip(&verdict.limits);
    let all_same = verdict.limits.windows(2).all(|pair| pair[0] == pair[1]);
    pairs
        .map(|(value, limit)| {
            if all_same {
                number(*value)
            } else {
                format!("{} (limit {})", number(*value), number(*limit))
            }
        })
        .collect::<Vec<_>>()
        .join(" -> ")
}

/// The verdicts in `format`.
pub fn render(verdicts: &[Verdict], format: Format) -> String {
    let failed = verdicts.iter().filter(|verdict| !verdict.pass).count();
    let mut out = String::new();
    match format {
        Format::Json => {
            out = serde_json::to_string_pretty(&serde_json::json!({
                "passed": verdicts.len() - failed,
                "failed": failed,
                "verdicts": verdicts,
            }))
            .expect("verdicts serialise");
            out.push('\n');
        }
        Format::Markdown => {
            let _ = writeln!(
                out,
                "### keyed-bench gate: {} of {} checks hold\n",
                verdicts.len() - failed,
                verdicts.len()
            );
            out.push_str("| | rule | cell | measured | limit |\n|---|---|---|---:|---:|\n");
            let mut rows: Vec<&Verdict> = verdicts.iter().collect();
            rows.sort_by_key(|verdict| verdict.pass);
            for verdict in rows {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} {} |",
                    if verdict.pass { "✅" } else { "❌" },
                    verdict.rule,
                    verdict.cell,
                    measured_text(verdict),
                    verdict.op,
                    number(*verdict.limits.last().unwrap_or(&f64::NAN))
                );
            }
        }
        Format::Text => {
            for verdict in verdicts {
                let _ = writeln!(
                    out,
                    "{:4}  {:<44} {:<36} {:>22} {} {}",
                    if verdict.pass { "ok" } else { "FAIL" },
                    verdict.rule,
                    verdict.cell,
                    measured_text(verdict),
                    verdict.op,
                    number(*verdict.limits.last().unwrap_or(&f64::NAN))
                );
            }
            let _ = writeln!(out, "{} passed, {} failed", verdicts.len() - failed, failed);
        }
    }
    out
}

/// Flags of `keyed-bench gate`.
#[derive(clap::Args, Clone, Debug)]
pub struct GateArgs {
    /// The results file to judge.
    #[arg(long)]
    pub results: std::path::PathBuf,
    /// The rules file.
    #[arg(long, default_value = "gates.toml")]
    pub rules: std::path::PathBuf,
    /// The baseline file of the baseline rules [default: gates-baseline.json beside the rules].
    #[arg(long)]
    pub baseline: Option<std::path::PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Re-measurements of a failing wall-clock rule before it fails [0..=10] (0: none).
    #[arg(long, default_value_t = 2)]
    pub confirm: usize,
    /// Write the baseline file from these results instead of judging them.
    #[arg(long)]
    pub update_baseline: bool,
}

/// What `keyed-bench gate` concluded.
#[derive(Debug)]
pub struct GateOutcome {
    /// The report in the chosen format (or a line about the written baseline).
    pub report: String,
    /// Whether every rule holds.
    pub pass: bool,
}

/// Runs `keyed-bench gate`: reads everything (bad input is a [`GateInputError`]), judges,
/// confirms failing wall-clock rules by measuring their cells again.
pub fn run_gate(args: &GateArgs) -> Result<GateOutcome, GateInputError> {
    if args.confirm > MAX_CONFIRM {
        return Err(bad(format!("--confirm must be in 0..={MAX_CONFIRM}, got {}", args.confirm)));
    }
    let results = Results::read(&args.results).map_err(|error| bad(error.to_string()))?;
    if args.confirm > 0 && !args.update_baseline {
        // A confirmation measures cells again with the settings the file records: check
        // them as the command line's would be, before anything runs on them.
        let strategies: Vec<StrategyId> =
            results.runs.iter().filter_map(|run| run.strategy.parse().ok()).collect();
        let scenarios: Vec<ScenarioId> =
            results.runs.iter().filter_map(|run| run.scenario.parse().ok()).collect();
        crate::suite::check_recorded(&results.meta, &strategies, &scenarios).map_err(|error| {
            bad(format!(
                "{}: {error}; judge it without re-measuring with --confirm 0",
                args.results.display()
            ))
        })?;
    }
    let rules = read_rules(&args.rules, &results)?;
    let baseline_path = args.baseline.clone().unwrap_or_else(|| {
        args.rules.parent().unwrap_or_else(|| Path::new(".")).join("gates-baseline.json")
    });
    if args.update_baseline {
        let baseline = baseline_from(&results, &rules);
        let json = serde_json::to_vec_pretty(&baseline).expect("baseline serialises");
        crate::results::write_atomically(&baseline_path, &json)
            .map_err(|error| bad(format!("cannot write {}: {error}", baseline_path.display())))?;
        return Ok(GateOutcome {
            report: format!(
                "wrote {} values to {}\n",
                baseline.values.len(),
                baseline_path.display()
            ),
            pass: true,
        });
    }
    let needs_baseline = rules.iter().any(|rule| rule.kind == Kind::Baseline);
    let baseline = needs_baseline.then(|| read_baseline(&baseline_path)).transpose()?;
    let meta = results.meta.clone();
    let mut rerun = |scenario: &str, param: &str, strategies: &[StrategyId]| {
        let cell = format!("{scenario} {param}");
        eprintln!(
            "gate: confirming by measuring {} again ({} strategies)",
            cell.trim_end(),
            strategies.len()
        );
        match crate::suite::remeasure(&meta, scenario, param, strategies) {
            Ok(runs) => Some(runs),
            Err(error) => {
                eprintln!("gate: {error}");
                None
            }
        }
    };
    let verdicts = evaluate(&results, &rules, baseline.as_ref(), args.confirm, &mut rerun)?;
    Ok(GateOutcome {
        report: render(&verdicts, args.format),
        pass: verdicts.iter().all(|v| v.pass),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed reference run: real results to doctor.
    fn reference() -> Results {
        serde_json::from_str(include_str!("../../results/2026-11-30-vm/results.json")).unwrap()
    }

    fn rules(text: &str, results: &Results) -> Result<Vec<Rule>, GateInputError> {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let unique = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = format!("gate-rules-{}-{unique}.toml", std::process::id());
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, text).unwrap();
        let rules = read_rules(&path, results);
        std::fs::remove_file(&path).ok();
        rules
    }

    fn run_mut<'r>(results: &'r mut Results, scenario: &str, strategy: &str) -> &'r mut RunResult {
        results.runs.iter_mut().find(|r| r.scenario == scenario && r.strategy == strategy).unwrap()
    }

    fn no_rerun() -> impl FnMut(&str, &str, &[StrategyId]) -> Option<Vec<RunResult>> {
        |_: &str, _: &str, _: &[StrategyId]| None
    }

    const CORRECT: &str = r#"
        [[rule]]
        name = "ordered strategies are correct"
        kind = "absolute"
        metric = "correctness"
        strategies = "ordered"
        op = "=="
        value = 0
    "#;

    const RELATIVE: &str = r#"
        [[rule]]
        name = "keyed-mailbox keeps up"
        kind = "relative"
        metric = "throughput_per_s.median"
        scenario = "uniform"
        strategies = ["keyed-mailbox"]
        of = "group-by"
        op = ">="
        factor = 0.8
    "#;

    #[test]
    fn the_committed_gates_hold_on_the_reference_run_apart_from_its_missing_baseline() {
        let results = reference();
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../gates.toml")).unwrap();
        let mut rules = rules(&text, &results).unwrap();
        rules.retain(|rule| rule.kind != Kind::Baseline);
        let verdicts = evaluate(&results, &rules, None, 0, &mut no_rerun()).unwrap();
        assert!(verdicts.len() > 100);
        assert!(verdicts.iter().all(|v| v.pass), "{}", render(&verdicts, Format::Text));
    }

    #[test]
    fn an_order_violation_fails_at_once_naming_the_rule() {
        let mut results = reference();
        run_mut(&mut results, "zipf", "keyed-mailbox").correctness.order_violations = 1;
        let rules = rules(CORRECT, &results).unwrap();
        let mut reruns = 0;
        let mut rerun = |_: &str, _: &str, _: &[StrategyId]| {
            reruns += 1;
            None
        };
        let verdicts = evaluate(&results, &rules, None, 2, &mut rerun).unwrap();
        let failed: Vec<_> = verdicts.iter().filter(|v| !v.pass).collect();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].cell, "zipf keyed-mailbox");
        assert!(render(&verdicts, Format::Text).contains("FAIL  ordered strategies are correct"));
        assert_eq!(reruns, 0, "correctness rules are not re-measured");
    }

    #[test]
    fn a_ratio_under_its_limit_fails_unless_a_confirmation_passes() {
        let mut results = reference();
        let group_by = run_mut(&mut results, "uniform", "group-by").throughput_per_s.median;
        run_mut(&mut results, "uniform", "keyed-mailbox").throughput_per_s.median = group_by * 0.5;
        let rules = rules(RELATIVE, &results).unwrap();
        let verdicts = evaluate(&results, &rules, None, 0, &mut no_rerun()).unwrap();
        assert!(!verdicts[0].pass);

        // A confirmation that measures the real ratio again rescues it, and both
        // measurements are reported.
        let healthy = reference();
        let mut rerun = |_: &str, _: &str, involved: &[StrategyId]| {
            assert_eq!(involved, [StrategyId::KeyedMailbox, StrategyId::GroupBy]);
            Some(healthy.runs.clone())
        };
        let verdicts = evaluate(&results, &rules, None, 2, &mut rerun).unwrap();
        assert!(verdicts[0].pass);
        assert_eq!(verdicts[0].measured.len(), 2);
    }

    #[test]
    fn a_baseline_regression_fails() {
        let results = reference();
        let rule = r#"
            [[rule]]
            name = "vs inline"
            kind = "baseline"
            metric = "throughput_vs_inline"
            scenario = "uniform"
            strategies = ["keyed-mailbox"]
            op = ">="
            tolerance = 0.2
        "#;
        let rules = rules(rule, &results).unwrap();
        let mut baseline = baseline_from(&results, &rules);
        assert!(evaluate(&results, &rules, Some(&baseline), 0, &mut no_rerun()).unwrap()[0].pass);
        for value in baseline.values.values_mut() {
            *value *= 2.0; // the committed baseline was twice as fast
        }
        let verdicts = evaluate(&results, &rules, Some(&baseline), 0, &mut no_rerun()).unwrap();
        assert!(!verdicts[0].pass, "{verdicts:?}");
        let empty = Baseline { schema: BASELINE_SCHEMA.into(), ..Baseline::default() };
        let missing = evaluate(&results, &rules, Some(&empty), 0, &mut no_rerun()).unwrap_err();
        assert!(missing.to_string().contains("--update-baseline"), "{missing}");
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

    #[test]
    fn results_missing_a_strategy_are_named_against_what_the_rule_asks() {
        let mut results = reference();
        results.runs.retain(|run| run.strategy == "keyed-mailbox" || run.strategy == "inline");
        let rule = CORRECT.replace("\"ordered\"", "['thread-pool']");
        let parsed = rules(&rule, &results).unwrap();
        let error = evaluate(&results, &parsed, None, 0, &mut no_rerun()).unwrap_err().to_string();
        assert!(error.contains("asks for strategies thread-pool"), "{error}");
        assert!(error.contains("they hold strategies keyed-mailbox, inline"), "{error}");
        let relative = rules(RELATIVE, &results).unwrap();
        let error = evaluate(&results, &relative, None, 0, &mut no_rerun()).unwrap_err();
        assert!(error.to_string().contains("no `group-by` run in uniform"), "{error}");
    }

    #[test]
    fn bad_tolerances_and_baselines_are_named() {
        let results = reference();
        let rule = |tolerance: &str| {
            format!(
                "[[rule]]\nname = 'b'\nkind = 'baseline'\nmetric = 'efficiency'\n\
                 strategies = 'all'\nop = '>='\n{tolerance}"
            )
        };
        for (tolerance, expected) in [
            ("tolerance = 1.5", "got 1.5"),
            ("tolerance = -0.1", "got -0.1"),
            ("tolerance = nan", "got NaN"),
            ("", "needs `tolerance`"),
            ("tolerance = '0.2'", "invalid type: string"),
        ] {
            let error = rules(&rule(tolerance), &results).unwrap_err().to_string();
            assert!(error.contains(expected), "{tolerance}: {error}");
        }
        let path = Path::new("base.json");
        let cases: [(&[u8], &str); 5] = [
            (b"", "EOF while parsing"),
            (b"[1, 2]", "invalid type: integer `1`"),
            (br#"{"schema": "other", "values": {}}"#, "schema `other`"),
            (br#"{"schema": "keyed-bench.baseline.v1", "values": {"a": "x"}}"#, "invalid type"),
            (br#"{"schema": "keyed-bench.baseline.v1", "values": {"a": 1e999}}"#, "out of range"),
        ];
        for (bytes, expected) in cases {
            let error = parse_baseline(bytes, path).unwrap_err().to_string();
            assert!(error.starts_with("invalid baseline file base.json: "), "{error}");
            assert!(error.contains(expected), "{expected}: {error}");
        }
        let good = br#"{"schema": "keyed-bench.baseline.v1", "values": {"a": 1.5}}"#;
        assert_eq!(parse_baseline(good, path).unwrap().values["a"], 1.5);
    }

    #[test]
    fn recorded_settings_are_checked_before_measuring_again() {
        let mut results = reference();
        results.meta.sizes = Some(crate::scenario::Sizes::standard());
        let all = (StrategyId::ALL, ScenarioId::ALL);
        crate::suite::check_recorded(&results.meta, all.0, all.1).unwrap();
        results.meta.sizes.as_mut().unwrap().keys = 0;
        let error = crate::suite::check_recorded(&results.meta, all.0, all.1).unwrap_err();
        assert!(error.to_string().contains("--keys must be in 1..=100000000, got 0"), "{error}");
        let error = crate::suite::remeasure(&results.meta, "uniform", "", &[StrategyId::Inline])
            .unwrap_err()
            .to_string();
        assert!(error.contains("got 0"), "{error}");
        let mut results = reference();
        results.meta.repeat = 1_000_000;
        let error = crate::suite::check_recorded(&results.meta, all.0, all.1).unwrap_err();
        assert!(error.to_string().contains("--repeat must be in 1..=1000"), "{error}");
    }

    #[test]
    fn a_correctness_field_rule_is_never_confirmed_away() {
        let mut results = reference();
        run_mut(&mut results, "zipf", "keyed-mailbox").correctness.lost = 1;
        let rule = CORRECT.replace("metric = \"correctness\"", "metric = \"correctness.lost\"");
        let rules = rules(&rule, &results).unwrap();
        let healthy = reference();
        let mut rerun = |_: &str, _: &str, _: &[StrategyId]| Some(healthy.runs.clone());
        let verdicts = evaluate(&results, &rules, None, 2, &mut rerun).unwrap();
        assert_eq!(verdicts.iter().filter(|v| !v.pass).count(), 1);
    }

    #[test]
    fn every_format_reports_the_failure() {
        let verdict = Verdict {
            rule: "r".into(),
            cell: "uniform keyed-mailbox".into(),
            measured: vec![1.0, 2.0],
            limits: vec![3.0, 3.0],
            op: ">=".into(),
            pass: false,
        };
        assert!(render(std::slice::from_ref(&verdict), Format::Text).contains("0 passed, 1 failed"));
        assert!(render(std::slice::from_ref(&verdict), Format::Markdown)
            .contains("| ❌ | r | uniform keyed-mailbox | 1 -> 2 | >= 3 |"));
        let json: serde_json::Value =
            serde_json::from_str(&render(&[verdict], Format::Json)).unwrap();
        assert_eq!(json["failed"], 1);
    }
}
