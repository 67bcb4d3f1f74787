//! Evaluation: every rule on every cell it matches, each against its limit (a number, the
//! other strategy of the same cell, or the baseline). A failing wall-clock rule is measured
//! again, up to `confirm` times, and passes if any measurement holds.

use serde::Serialize;
use strategies::Design;

use super::baseline::{baseline_key, Baseline};
use super::metric::{metric_of, pipeline_metric};
use super::rules::{
    below_min_workers, is_pipeline_rule, matching_pipelines, matching_runs, retried_for_ever,
    selection_ids, selects_pipeline, selects_pipeline_cell, Kind, Limit, Op, Rule,
};
use super::{baseline_error, rules_error, GateInputError};
use crate::results::{CellKey, Metric, PipelineRun, Results, RunResult};
use crate::workload::UNSTRESSED;

/// One rule checked on one cell: what was measured, against what, and whether it held (the
/// JSON report lists them as `verdicts`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Check {
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
    /// Whether the rule holds (on the run or on any confirmation); true where `void`.
    pub pass: bool,
    /// A wall-clock rule on a cell (or the cell it compares with) whose interference
    /// receipt says `void`: shown, not judged.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub void: bool,
}

/// A rule about a scenario the results did not run: it does not apply to them.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct NotRun {
    /// The rule.
    pub rule: String,
    /// The scenario it is about.
    pub scenario: String,
    /// Why it does not apply, where that is not that its scenario was not run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// Measures a cell's scenario parameter and sweep point again for the given strategies:
/// fresh results of those.
pub type Rerun<'a> = dyn FnMut(&CellKey, &[Design]) -> Option<Vec<RunResult>> + 'a;

/// Evaluates every rule; `confirm` bounds the re-measurements of a failing wall-clock rule.
pub fn evaluate(
    results: &Results,
    rules: &[Rule],
    baseline: Option<&Baseline>,
    confirm: usize,
    rerun: &mut Rerun<'_>,
) -> Result<Vec<Check>, GateInputError> {
    let mut checks = Vec::new();
    for rule in rules {
        if is_pipeline_rule(rule) {
            checks.extend(judge_pipelines(rule, results)?);
            continue;
        }
        let judged = checks.len();
        for run in matching_runs(rule, &results.runs) {
            let Some(first) = judge(rule, run, &results.runs, &results.meta, baseline)? else {
                continue;
            };
            if rule.is_wall_clock() && void_involved(rule, run, &results.runs) {
                checks.push(Check::void(rule, run, first));
                continue;
            }
            let confirmation = Confirmation { rule, meta: &results.meta, baseline, confirm };
            checks.push(confirmation.check(run, first, rerun)?);
        }
        if checks.len() == judged {
            return Err(rules_error(no_cell(rule, &results.runs)));
        }
    }
    Ok(checks)
}

/// Whether `run`, or the run `rule` compares it with, is void (its receipt says the
/// machine was too busy for a wall-clock figure to be about the design).
fn void_involved(rule: &Rule, run: &RunResult, runs: &[RunResult]) -> bool {
    let compared = rule.of.as_deref().and_then(|of| CellKey::of_run(run).on(of).find(runs));
    run.is_void() || compared.is_some_and(RunResult::is_void)
}

impl Check {
    /// `rule` on a void cell: its first measurement shown, not judged.
    fn void(rule: &Rule, run: &RunResult, (measured, limit): (f64, f64)) -> Self {
        Self {
            rule: rule.name.clone(),
            cell: CellKey::of_run(run).to_string(),
            measured: vec![measured],
            limits: vec![limit],
            op: rule.op.symbol().into(),
            pass: true,
            void: true,
        }
    }
}

/// The rules whose every check was void: nothing wall-clock was judged of them.
pub fn only_void(checks: &[Check]) -> Vec<String> {
    let mut rules: Vec<String> = Vec::new();
    for check in checks {
        if !rules.contains(&check.rule) {
            rules.push(check.rule.clone());
        }
    }
    rules.retain(|rule| checks.iter().filter(|check| &check.rule == rule).all(|check| check.void));
    rules
}

/// What confirming a failing wall-clock rule on a cell needs: the rule, what the run
/// recorded, and how many times it may measure again.
struct Confirmation<'a> {
    rule: &'a Rule,
    meta: &'a crate::results::Meta,
    baseline: Option<&'a Baseline>,
    confirm: usize,
}

impl Confirmation<'_> {
    /// The rule checked on `run`, first measured as `(measured, limit)`: a failing
    /// wall-clock rule is measured again until a measurement holds, up to `confirm` times.
    fn check(
        &self,
        run: &RunResult,
        first: (f64, f64),
        rerun: &mut Rerun<'_>,
    ) -> Result<Check, GateInputError> {
        let rule = self.rule;
        let cell = CellKey::of_run(run);
        let (mut measured, mut limits) = (vec![first.0], vec![first.1]);
        let mut pass = rule.op.holds(first.0, first.1);
        let confirming = !pass && rule.is_wall_clock();
        let involved = if confirming { involved(rule, &cell)? } else { Vec::new() };
        for _ in 0..if confirming { self.confirm } else { 0 } {
            let Some(fresh) = rerun(&cell, &involved) else {
                break;
            };
            let Some(again) = cell.find(&fresh) else { break };
            let Some((value, limit)) = judge(rule, again, &fresh, self.meta, self.baseline)? else {
                break;
            };
            measured.push(value);
            limits.push(limit);
            pass = rule.op.holds(value, limit);
            if pass {
                break;
            }
        }
        Ok(Check {
            rule: rule.name.clone(),
            cell: cell.to_string(),
            measured,
            limits,
            op: rule.op.symbol().into(),
            pass,
            void: false,
        })
    }
}

/// The strategies to measure again to confirm `rule` on `cell`: its own, and those its
/// metric or limit compares it with.
fn involved(rule: &Rule, cell: &CellKey) -> Result<Vec<Design>, GateInputError> {
    let parse = |id: &str| id.parse::<Design>().map_err(|error| rules_error(error.to_string()));
    let mut involved = vec![parse(&cell.strategy)?];
    if let Some(of) = &rule.of {
        involved.push(parse(of)?);
    }
    if let Some(other) = rule.metric.parse::<Metric>().ok().and_then(Metric::relative_to) {
        involved.push(other.into());
    }
    Ok(involved)
}

/// An absolute rule on every pipeline cell it matches (no re-measurement: what a crash
/// loses is not a matter of speed).
fn judge_pipelines(rule: &Rule, results: &Results) -> Result<Vec<Check>, GateInputError> {
    let Some(Limit::Number(limit)) = rule.value else {
        return Err(rules_error(format!("rule `{}`: a pipeline rule needs a number", rule.name)));
    };
    let checks: Vec<Check> = matching_pipelines(rule, &results.pipelines)
        .filter_map(|run| {
            let measured = pipeline_metric(&rule.metric, run)?;
            Some(Check {
                rule: rule.name.clone(),
                cell: CellKey::of_pipeline(run).to_string(),
                measured: vec![measured],
                limits: vec![limit],
                op: rule.op.symbol().into(),
                pass: rule.op.holds(measured, limit),
                void: false,
            })
        })
        .collect();
    if checks.is_empty() {
        return Err(rules_error(format!(
            "rule `{}` matches no pipeline cell in these results (scenario {}, param {}, \
             policy {}, metric `{}`)",
            rule.name,
            rule.scenario.as_deref().unwrap_or("any"),
            rule.param.as_deref().unwrap_or("any"),
            rule.policy.as_deref().unwrap_or("any"),
            rule.metric
        )));
    }
    Ok(checks)
}

/// Whether `run` is a point of a sweep that `baseline` holds no value of `rule` for: such a
/// cell is not judged, where any other cell without a value is an error.
fn unbaselined_point(rule: &Rule, run: &RunResult, baseline: &Baseline) -> bool {
    run.settings.as_ref().is_some_and(|settings| !settings.sweep.is_empty())
        && !baseline.values.contains_key(&baseline_key(rule, &CellKey::of_run(run)))
}

/// Sets apart the baseline rules whose every cell is a point of a sweep that `baseline`
/// holds no value for (a baseline written from a run without that sweep): they do not
/// apply, and the report lists them. A rule with some points in the baseline judges those.
pub fn split_unbaselined(
    rules: Vec<Rule>,
    results: &Results,
    baseline: Option<&Baseline>,
) -> (Vec<Rule>, Vec<NotRun>) {
    let Some(baseline) = baseline else { return (rules, Vec::new()) };
    let mut not_run = Vec::new();
    let applicable = rules
        .into_iter()
        .filter(|rule| {
            if rule.kind != Kind::Baseline || is_pipeline_rule(rule) {
                return true;
            }
            let cells: Vec<&RunResult> = matching_runs(rule, &results.runs).collect();
            if cells.is_empty() || !cells.iter().all(|run| unbaselined_point(rule, run, baseline)) {
                return true;
            }
            not_run.push(NotRun {
                rule: rule.name.clone(),
                scenario: rule.scenario.clone().unwrap_or_else(|| "every scenario".into()),
                why: Some(
                    "the baseline holds none of this sweep's points (`gate --update-baseline` \
                     on a run of the same sweep records them)"
                        .into(),
                ),
            });
            false
        })
        .collect();
    (applicable, not_run)
}

/// Sets apart the rules about a scenario these results did not run (neither measured nor
/// skipped: a run with `--scenario` naming others): they do not apply, and the report
/// lists them. A rule about a scenario that ran but matches no cell is still an error.
/// The cells a rule leaves out by its `min_workers` are listed too, and a rule that leaves
/// out every cell it would judge does not apply.
pub fn split_not_run(rules: Vec<Rule>, results: &Results) -> (Vec<Rule>, Vec<NotRun>) {
    let mut not_run = Vec::new();
    let applicable = rules
        .into_iter()
        .filter(|rule| {
            if let Some(reason) = not_applicable(rule, results) {
                not_run.push(reason);
                return false;
            }
            let (below, judged) = split_min_workers(rule, results);
            not_run.extend(below);
            let (elsewhere, judged_here) = split_transport(rule, results);
            not_run.extend(elsewhere);
            let (forever, judged_forever) = split_retried_for_ever(rule, results);
            not_run.extend(forever);
            judged && judged_forever && judged_here
        })
        .collect();
    (applicable, not_run)
}

/// The cells `rule` selects but for its `min_workers`, each with the workers it ran with,
/// as not applied, and whether the rule still judges some cell.
fn split_min_workers(rule: &Rule, results: &Results) -> (Option<NotRun>, bool) {
    let Some(min) = rule.min_workers else { return (None, true) };
    let relaxed = Rule { min_workers: None, ..rule.clone() };
    let mut below: Vec<(String, usize)> = Vec::new();
    let mut judged = false;
    let mut sort = |cell: String, ran: Option<usize>| match ran {
        Some(ran) => below.push((cell, ran)),
        None => judged = true,
    };
    for run in matching_runs(&relaxed, &results.runs) {
        sort(
            CellKey::of_run(run).to_string(),
            below_min_workers(rule, run.settings.as_ref(), run.workers),
        );
    }
    for run in matching_pipelines(&relaxed, &results.pipelines) {
        sort(
            CellKey::of_pipeline(run).to_string(),
            below_min_workers(rule, run.settings.as_ref(), None),
        );
    }
    if below.is_empty() {
        return (None, judged);
    }
    let mut counts: Vec<usize> = below.iter().map(|&(_, ran)| ran).collect();
    counts.sort_unstable();
    counts.dedup();
    let counts: Vec<String> = counts.iter().map(ToString::to_string).collect();
    let why = format!(
        "ran with {} worker{} and the rule needs at least {min} (`min_workers`)",
        counts.join(" or "),
        if below.iter().all(|&(_, ran)| ran == 1) { "" } else { "s" }
    );
    let cells: Vec<String> = below.into_iter().map(|(cell, _)| cell).collect();
    (Some(NotRun { rule: rule.name.clone(), scenario: cells.join(", "), why: Some(why) }), judged)
}

/// The pipeline cells `rule` selects but for its `transport`, each with the transport it
/// consumed through, as not applied, and whether the rule still judges some cell.
fn split_transport(rule: &Rule, results: &Results) -> (Option<NotRun>, bool) {
    let Some(wanted) = rule.transport else { return (None, true) };
    let relaxed = Rule { transport: None, ..rule.clone() };
    let (elsewhere, here): (Vec<&PipelineRun>, Vec<&PipelineRun>) =
        matching_pipelines(&relaxed, &results.pipelines)
            .partition(|run| run.transport.unwrap_or_default() != wanted);
    if elsewhere.is_empty() {
        return (None, true);
    }
    let mut transports: Vec<&str> =
        elsewhere.iter().map(|run| run.transport.unwrap_or_default().as_str()).collect();
    transports.dedup();
    let why = format!(
        "consumed through {}, and the rule is about {wanted} (`transport`)",
        transports.join(" and ")
    );
    let cells: Vec<String> =
        elsewhere.iter().map(|run| CellKey::of_pipeline(run).to_string()).collect();
    let not_run = NotRun { rule: rule.name.clone(), scenario: cells.join(", "), why: Some(why) };
    (Some(not_run), !here.is_empty())
}

/// The retry-forever cells `rule` would judge but for [`retried_for_ever`], as not applied,
/// and whether the rule still judges some cell.
fn split_retried_for_ever(rule: &Rule, results: &Results) -> (Option<NotRun>, bool) {
    let ids = selection_ids(&rule.strategies).unwrap_or_default();
    let forever: Vec<String> = results
        .pipelines
        .iter()
        .filter(|run| ids.iter().any(|id| id.as_str() == run.strategy))
        .filter(|run| selects_pipeline_cell(rule, run) && retried_for_ever(rule, run))
        .map(|run| CellKey::of_pipeline(run).to_string())
        .collect();
    if forever.is_empty() {
        return (None, true);
    }
    let judged = matching_pipelines(rule, &results.pipelines).next().is_some()
        || matching_runs(rule, &results.runs).next().is_some();
    let why = "retried for ever (`--max-attempts 0`): its poison records never settle, so \
               the final state is not judged; its stall figure is the result";
    let scenario = forever.join(", ");
    (Some(NotRun { rule: rule.name.clone(), scenario, why: Some(why.to_owned()) }), judged)
}

/// Why `rule` does not apply to `results`, if it does not.
fn not_applicable(rule: &Rule, results: &Results) -> Option<NotRun> {
    let ran = |scenario: &str| {
        results.runs.iter().any(|run| run.scenario == scenario)
            || results.pipelines.iter().any(|run| run.scenario == scenario)
            || results.skipped.iter().any(|skipped| skipped.scenario == scenario)
    };
    let reason = |scenario: String, why: Option<String>| {
        Some(NotRun { rule: rule.name.clone(), scenario, why })
    };
    match &rule.scenario {
        Some(scenario) if !ran(scenario) => return reason(scenario.clone(), None),
        // A pipeline rule about a commit policy (or every pipeline scenario) the run left
        // out (`--commit-policy`, `--scenario`).
        _ if is_pipeline_rule(rule) && pipelines_left_out(rule, results) => {
            let scenario = rule.scenario.as_deref().unwrap_or("(any pipeline-*)");
            let policy = rule.policy.as_ref().map(|policy| format!("policy={policy}"));
            let param = rule.param.as_ref().or(policy.as_ref()).map_or("", String::as_str);
            return reason(format!("{scenario} {param}"), None);
        }
        // A rule about every scenario, on results that hold pipeline cells alone.
        None if !is_pipeline_rule(rule)
            && results.runs.is_empty()
            && !results.pipelines.is_empty() =>
        {
            return reason("(any but pipeline-*)".into(), None);
        }
        _ => {}
    }
    // A rule about, or compared with, strategies the run left out (`--strategy`).
    let scenario = || rule.scenario.clone().unwrap_or_else(|| "(any)".into());
    // An isolation rule on results without the stressors' unstressed twins (older files).
    let in_scope = |run: &&RunResult| rule.scenario.as_ref().is_none_or(|s| &run.scenario == s);
    let twinned = results.runs.iter().filter(in_scope).any(|run| run.param.starts_with(UNSTRESSED));
    if rule.metric == Metric::IsolationVsBound.spec().name && !twinned {
        let why = format!("no unstressed twin (`{UNSTRESSED}`) ran, so no cell has the figure");
        return reason(scenario(), Some(why));
    }
    if let Some(absent) = selected_absent(rule, results) {
        return reason(scenario(), Some(format!("none of its strategies ran ({absent})")));
    }
    let absent = compared_with_absent(rule, results)?;
    reason(scenario(), Some(format!("{absent} did not run, and the rule compares with it")))
}

/// Whether the run planned a cell of `strategy` in `rule`'s scenario: measured, skipped,
/// or missing from an incomplete file (a rule about that one is not judged, not left out).
fn ran_in_scope(rule: &Rule, results: &Results, strategy: &str) -> bool {
    let in_scope = |scenario: &str| rule.scenario.as_ref().is_none_or(|s| scenario == s);
    let missing = results.meta.incomplete.iter().flat_map(|left| &left.missing);
    results.runs.iter().any(|run| in_scope(&run.scenario) && run.strategy == strategy)
        || results.skipped.iter().any(|s| in_scope(&s.scenario) && s.strategy == strategy)
        || missing
            .into_iter()
            .any(|key| in_scope(key.scenario.as_str()) && key.strategy == strategy)
}

/// The strategies `rule` is about, where none of them ran in its scenario (measured rules).
fn selected_absent(rule: &Rule, results: &Results) -> Option<String> {
    if is_pipeline_rule(rule) {
        return None;
    }
    let selected = selection_ids(&rule.strategies).ok()?;
    let ids: Vec<&str> = selected.iter().map(|id| id.as_str()).collect();
    let none_ran = !ids.iter().any(|id| ran_in_scope(rule, results, id));
    (none_ran && !ids.is_empty()).then(|| ids.join(", "))
}

/// The strategy `rule` compares its cells with (its `of`, or its metric's reference such
/// as `inline` for `throughput_vs_inline`) where the run measured no cell of it in the
/// rule's scenario: the rule cannot be judged, and does not apply.
fn compared_with_absent(rule: &Rule, results: &Results) -> Option<String> {
    let reference = rule.metric.parse::<Metric>().ok().and_then(Metric::relative_to);
    let other = rule.of.clone().or_else(|| reference.map(|id| id.as_str().to_owned()))?;
    (!ran_in_scope(rule, results, &other)).then_some(other)
}

/// Whether `rule`, about one param or commit policy of a pipeline scenario, or about every
/// pipeline scenario, selects none of the pipeline cells of `results` (a commit policy
/// `--commit-policy` left out, or no pipeline scenario run).
fn pipelines_left_out(rule: &Rule, results: &Results) -> bool {
    // Another transport's cells ran: `split_transport` lists them with the reason.
    let ran = Rule { transport: None, ..rule.clone() };
    (rule.param.is_some() || rule.policy.is_some() || rule.scenario.is_none())
        && !results.pipelines.iter().any(|run| selects_pipeline(&ran, run))
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
            // The cell's own workers where it records them (a scenario may fix its own).
            Limit::Symbol(_) => {
                run.workers.unwrap_or(meta.workers) as f64 * rule.factor.unwrap_or(1.0)
            }
        },
        Kind::Relative => {
            let of = rule.of.as_deref().expect("checked");
            let cell = CellKey::of_run(run);
            let Some(other) = cell.on(of).find(runs) else {
                return Err(rules_error(format!(
                    "rule `{}`: no `{of}` run in {} {}",
                    rule.name,
                    cell.scenario,
                    cell.full_param()
                )));
            };
            let Some(theirs) = metric_of(&rule.metric, other, runs) else { return Ok(None) };
            theirs * rule.factor.expect("checked")
        }
        Kind::Baseline => {
            let baseline = baseline.ok_or_else(|| {
                baseline_error(format!("rule `{}` needs a baseline file (--baseline)", rule.name))
            })?;
            let key = baseline_key(rule, &CellKey::of_run(run));
            let Some(&base) = baseline.values.get(&key) else {
                if unbaselined_point(rule, run, baseline) {
                    // A point the baseline does not hold (`split_unbaselined` lists a rule
                    // that holds none).
                    return Ok(None);
                }
                return Err(baseline_error(format!(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::testing::*;
    use crate::gate::{render, Format};
    use strategies::StrategyId;

    #[test]
    fn the_committed_gates_hold_on_the_reference_run_apart_from_its_missing_baseline() {
        let results = reference();
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../gates.toml")).unwrap();
        let mut rules = rules(&text, &results).unwrap();
        rules.retain(|rule| rule.kind != Kind::Baseline);
        // The reference run predates the isolation stressors' unstressed twins, so no cell of
        // it has an isolation figure.
        rules.retain(|rule| !rule.metric.starts_with("isolation_"));
        // The reference run predates cold-command, parallel-consumer and the pipelines.
        let (rules, not_run) = split_not_run(rules, &results);
        let mut scenarios: Vec<&str> = not_run.iter().map(|rule| rule.scenario.as_str()).collect();
        scenarios.dedup();
        assert_eq!(
            scenarios,
            [
                "cold-command",
                "parallel-consumer",
                "(any pipeline-*) policy=safe",
                "pipeline-crash",
                "pipeline-retry",
                "pipeline-expand",
                "pipeline-reorder",
                "pipeline-rebalance"
            ]
        );
        let checks = evaluate(&results, &rules, None, 0, &mut no_rerun()).unwrap();
        assert!(checks.len() > 100);
        assert!(checks.iter().all(|v| v.pass), "{}", render(&checks, &not_run, Format::Text));
    }

    #[test]
    fn an_order_violation_fails_at_once_naming_the_rule() {
        let mut results = reference();
        run_mut(&mut results, "zipf", "keyed-mailbox").correctness.order_violations = 1;
        let rules = rules(CORRECT, &results).unwrap();
        let mut reruns = 0;
        let mut rerun = |_: &CellKey, _: &[Design]| {
            reruns += 1;
            None
        };
        let checks = evaluate(&results, &rules, None, 2, &mut rerun).unwrap();
        let failed: Vec<_> = checks.iter().filter(|v| !v.pass).collect();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].cell, "zipf keyed-mailbox");
        assert!(render(&checks, &[], Format::Text).contains("FAIL  ordered strategies are correct"));
        assert_eq!(reruns, 0, "correctness rules are not re-measured");
    }

    #[test]
    fn a_ratio_under_its_limit_fails_unless_a_confirmation_passes() {
        let mut results = reference();
        let group_by = run_mut(&mut results, "uniform", "group-by").throughput_per_s.median;
        run_mut(&mut results, "uniform", "keyed-mailbox").throughput_per_s.median = group_by * 0.5;
        let rules = rules(RELATIVE, &results).unwrap();
        let checks = evaluate(&results, &rules, None, 0, &mut no_rerun()).unwrap();
        assert!(!checks[0].pass);

        // A confirmation that measures the real ratio again rescues it, and both
        // measurements are reported.
        let healthy = reference();
        let mut rerun = |_: &CellKey, involved: &[Design]| {
            assert_eq!(involved, [StrategyId::KeyedMailbox, StrategyId::GroupBy]);
            Some(healthy.runs.clone())
        };
        let checks = evaluate(&results, &rules, None, 2, &mut rerun).unwrap();
        assert!(checks[0].pass);
        assert_eq!(checks[0].measured.len(), 2);
    }

    #[test]
    fn a_void_cell_skips_wall_clock_rules_but_not_correctness() {
        let void = crate::results::Interference::judged(1.0, 2, 0.01, Some(1.0), None, None, None);
        let mut results = reference();
        let group_by = run_mut(&mut results, "uniform", "group-by");
        let half = group_by.throughput_per_s.median * 0.5;
        group_by.interference = Some(void.clone());
        let keyed = run_mut(&mut results, "uniform", "keyed-mailbox");
        keyed.throughput_per_s.median = half;
        keyed.correctness.order_violations = 1;
        // The ratio would fail, but the cell it compares with is void: shown, not judged,
        // not measured again.
        let mut rerun = |_: &CellKey, _: &[Design]| -> Option<Vec<RunResult>> {
            panic!("a void cell is not confirmed")
        };
        let checks =
            evaluate(&results, &rules(RELATIVE, &results).unwrap(), None, 2, &mut rerun).unwrap();
        assert!(checks[0].void && checks[0].pass, "{checks:?}");
        assert_eq!(only_void(&checks), ["keyed-mailbox keeps up"]);
        let text = render(&checks, &[], Format::Text);
        assert!(text.contains("void  keyed-mailbox keeps up"), "{text}");
        assert!(text.contains("0 passed, 0 failed, 1 on void cells"), "{text}");
        // Correctness is judged whatever the machine did.
        run_mut(&mut results, "uniform", "keyed-mailbox").interference = Some(void);
        let checks =
            evaluate(&results, &rules(CORRECT, &results).unwrap(), None, 0, &mut no_rerun())
                .unwrap();
        assert!(checks.iter().any(|check| !check.pass && check.cell == "uniform keyed-mailbox"));
        assert!(only_void(&checks).is_empty());
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
    fn a_correctness_field_rule_is_never_confirmed_away() {
        let mut results = reference();
        run_mut(&mut results, "zipf", "keyed-mailbox").correctness.lost = 1;
        let rule = CORRECT.replace("metric = \"correctness\"", "metric = \"correctness.lost\"");
        let rules = rules(&rule, &results).unwrap();
        let healthy = reference();
        let mut rerun = |_: &CellKey, _: &[Design]| Some(healthy.runs.clone());
        let checks = evaluate(&results, &rules, None, 2, &mut rerun).unwrap();
        assert_eq!(checks.iter().filter(|v| !v.pass).count(), 1);
    }

    /// A small measured pipeline-crash cell of each policy for keyed-mailbox and
    /// thread-pool, alone in a results file.
    fn pipeline_results() -> Results {
        let sizes = crate::workload::Sizes {
            pipeline_records: 2_000,
            pipeline_keys: 100,
            crash_after: 800,
            commit_interval_ms: 1,
            ..crate::workload::Sizes::quick()
        };
        let mut results = reference();
        results.runs.clear();
        results.pipelines = crate::pipeline::run_crash(
            &sizes,
            3,
            &crate::measure::timer::Timer::start(),
            strategies::StrategyConfig::with_workers(2),
            &crate::results::CommitPolicy::ALL,
            &[StrategyId::KeyedMailbox.into(), StrategyId::ThreadPool.into()],
            |_| {},
        )
        .unwrap();
        results
    }

    const SAFE: &str = r#"
        [[rule]]
        name = "contiguous loses nothing"
        kind = "absolute"
        metric = "lost"
        scenario = "pipeline-crash"
        param = "policy=contiguous"
        strategies = "all"
        op = "=="
        value = 0
    "#;

    #[test]
    fn pipeline_rules_judge_the_pipeline_cells_and_fail_on_a_loss() {
        let mut results = pipeline_results();
        let rules = rules(&format!("{SAFE}{CORRECT}"), &results).unwrap();
        let (rules, not_run) = split_not_run(rules, &results);
        assert_eq!(not_run.len(), 1, "a rule about every message scenario has nothing to judge");
        let checks = evaluate(&results, &rules, None, 2, &mut no_rerun()).unwrap();
        assert_eq!(checks.len(), 2);
        assert!(checks.iter().all(|v| v.pass), "{checks:?}");
        let cell = results
            .pipelines
            .iter_mut()
            .find(|run| run.param == "policy=contiguous" && run.strategy == "keyed-mailbox")
            .unwrap();
        cell.lost = 3;
        let checks = evaluate(&results, &rules, None, 2, &mut no_rerun()).unwrap();
        let failed: Vec<_> = checks.iter().filter(|v| !v.pass).collect();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].cell, "pipeline-crash policy=contiguous keyed-mailbox");
        assert_eq!(failed[0].measured, [3.0]);
    }

    #[test]
    fn a_rule_about_or_compared_with_a_strategy_left_out_does_not_apply() {
        let mut results = reference();
        results.runs.retain(|run| run.strategy != "group-by");
        let (applicable, not_run) = split_not_run(rules(RELATIVE, &results).unwrap(), &results);
        assert!(applicable.is_empty());
        let why = not_run[0].why.as_deref().unwrap_or_default();
        assert_eq!(why, "group-by did not run, and the rule compares with it");
        results.runs.retain(|run| run.strategy != "keyed-mailbox");
        let (_, not_run) = split_not_run(rules(RELATIVE, &results).unwrap(), &results);
        let why = not_run[0].why.as_deref().unwrap_or_default();
        assert_eq!(why, "none of its strategies ran (keyed-mailbox)");
    }

    #[test]
    fn a_pipeline_rule_about_a_policy_left_out_does_not_apply() {
        let mut results = pipeline_results();
        results.pipelines.retain(|run| run.param != "policy=contiguous");
        let (rules, not_run) = split_not_run(rules(SAFE, &results).unwrap(), &results);
        assert!(rules.is_empty());
        assert_eq!(not_run[0].scenario, "pipeline-crash policy=contiguous");
    }

    #[test]
    fn a_pipeline_rule_must_be_absolute_on_a_known_field() {
        let results = pipeline_results();
        let relative = SAFE.replace(r#"kind = "absolute""#, r#"kind = "relative""#);
        let error = rules(&relative, &results).unwrap_err().to_string();
        assert!(error.contains("is absolute"), "{error}");
        let unknown = SAFE.replace(r#"metric = "lost""#, r#"metric = "lsot""#);
        let error = rules(&unknown, &results).unwrap_err().to_string();
        assert!(error.contains("unknown metric `lsot`"), "{error}");
        let flag = SAFE
            .replace(r#"metric = "lost""#, r#"metric = "projection.final_state_correct""#)
            .replace(r#"value = 0"#, r#"value = 1"#);
        let checks =
            evaluate(&results, &rules(&flag, &results).unwrap(), None, 0, &mut no_rerun()).unwrap();
        assert!(checks.iter().all(|v| v.pass && v.measured == [1.0]), "{checks:?}");
    }

    const SAFE_POLICIES: &str = r#"
        [[rule]]
        name = "safe policies lose nothing"
        kind = "absolute"
        metric = "lost"
        policy = "safe"
        strategies = "all"
        op = "=="
        value = 0
    "#;

    #[test]
    fn a_rule_by_policy_judges_the_safe_cells_of_every_pipeline_scenario() {
        let mut results = pipeline_results();
        // A cell of another pipeline scenario, which commits contiguous.
        let mut expand = results.pipelines[0].clone();
        (expand.scenario, expand.param) = ("pipeline-expand".into(), "mitigation=none".into());
        expand.policy = crate::results::CommitPolicy::Contiguous;
        results.pipelines.push(expand);
        for run in &mut results.pipelines {
            run.lost = if run.policy.is_safe() { 0 } else { 7 };
        }
        let safe_rules = rules_of(SAFE_POLICIES, &results);
        let checks = evaluate(&results, &safe_rules, None, 0, &mut no_rerun()).unwrap();
        let safe = results.pipelines.iter().filter(|run| run.policy.is_safe()).count();
        assert_eq!(checks.len(), safe, "every safe cell, no highest-completed one: {checks:?}");
        assert!(checks.iter().all(|check| check.pass), "{checks:?}");
        assert!(checks.iter().any(|check| check.cell.starts_with("pipeline-expand ")));
        results.pipelines.last_mut().unwrap().lost = 3;
        let checks = evaluate(&results, &safe_rules, None, 0, &mut no_rerun()).unwrap();
        let failed: Vec<_> = checks.iter().filter(|check| !check.pass).collect();
        assert_eq!(failed.len(), 1, "{checks:?}");
        assert!(failed[0].cell.starts_with("pipeline-expand mitigation=none "), "{failed:?}");
        // One policy by its id; an unknown one, or one beside a measured scenario, is refused.
        let one = SAFE_POLICIES.replace("\"safe\"", "\"contiguous+metadata\"");
        let checks = evaluate(&results, &rules_of(&one, &results), None, 0, &mut no_rerun());
        assert_eq!(checks.unwrap().len(), 2, "keyed-mailbox and thread-pool");
        let unknown = SAFE_POLICIES.replace("\"safe\"", "\"newest\"");
        let error = rules(&unknown, &results).unwrap_err().to_string();
        assert!(error.contains("`policy` must be `safe` or a commit policy"), "{error}");
        let measured = SAFE_POLICIES.replace("policy = ", "scenario = \"uniform\"\npolicy = ");
        let error = rules(&measured, &results).unwrap_err().to_string();
        assert!(error.contains("uniform is no pipeline scenario"), "{error}");
        // Results without a pipeline cell: the rule does not apply.
        let (applied, not_run) = split_not_run(rules_of(SAFE_POLICIES, &reference()), &reference());
        assert!(applied.is_empty());
        assert_eq!(not_run[0].scenario, "(any pipeline-*) policy=safe");
    }

    fn rules_of(text: &str, results: &Results) -> Vec<Rule> {
        rules(text, results).unwrap()
    }

    const CATCHES: &str = r#"
        [[rule]]
        name = "the checker catches thread-pool on zipf"
        kind = "absolute"
        metric = "violations"
        scenario = "zipf"
        strategies = ["thread-pool"]
        op = ">"
        value = 0
        min_workers = 2
    "#;

    /// The reference run's zipf cell of thread-pool as run with `workers` workers (a sweep
    /// point), with the order violations and overlaps one worker leaves (none) where 1.
    fn thread_pool_at(results: &Results, workers: usize) -> RunResult {
        let mut run = results
            .runs
            .iter()
            .find(|run| run.scenario == "zipf" && run.strategy == "thread-pool")
            .unwrap()
            .clone();
        let sweep = format!("workers={workers}");
        run.param = sweep.clone();
        run.settings = Some(crate::results::CellSettings {
            workers,
            throughput: 16,
            window: 256,
            idle_spin_us: 20,
            sweep,
        });
        if workers == 1 {
            run.correctness.order_violations = 0;
            run.correctness.overlaps = 0;
        }
        run
    }

    #[test]
    fn a_rule_with_min_workers_reads_n_a_on_cells_with_fewer_and_judges_the_others() {
        let mut results = reference();
        let one = thread_pool_at(&results, 1);
        let two = thread_pool_at(&results, 2);
        results.runs.retain(|run| !(run.scenario == "zipf" && run.strategy == "thread-pool"));
        results.runs.push(one.clone());
        // One worker alone: not applied, with the reason.
        let (applicable, not_run) = split_not_run(rules_of(CATCHES, &results), &results);
        assert!(applicable.is_empty());
        assert_eq!(not_run.len(), 1);
        assert_eq!(not_run[0].scenario, "zipf workers=1 thread-pool");
        let why = not_run[0].why.as_deref().unwrap_or_default();
        assert_eq!(why, "ran with 1 worker and the rule needs at least 2 (`min_workers`)");
        // Without the field the same cell fails: what the field is for.
        let plain = CATCHES.replace("min_workers = 2", "");
        let (applicable, _) = split_not_run(rules_of(&plain, &results), &results);
        let checks = evaluate(&results, &applicable, None, 0, &mut no_rerun()).unwrap();
        assert!(checks.iter().any(|check| !check.pass), "{checks:?}");
        // A sweep of 1 and 2 workers: the point with 2 is judged, the other listed.
        results.runs.push(two);
        let (applicable, not_run) = split_not_run(rules_of(CATCHES, &results), &results);
        assert_eq!(not_run.len(), 1);
        assert_eq!(not_run[0].scenario, "zipf workers=1 thread-pool");
        let checks = evaluate(&results, &applicable, None, 0, &mut no_rerun()).unwrap();
        assert_eq!(checks.len(), 1, "{checks:?}");
        assert_eq!(checks[0].cell, "zipf workers=2 thread-pool");
        assert!(checks[0].pass);
        // Only the point with 2 workers: nothing left out.
        results.runs.retain(|run| run.param != "workers=1");
        assert!(split_not_run(rules_of(CATCHES, &results), &results).1.is_empty());
        let zero = CATCHES.replace("min_workers = 2", "min_workers = 0");
        let error = rules(&zero, &results).unwrap_err().to_string();
        assert!(error.contains("`min_workers` must be at least 1"), "{error}");
    }

    const EXPANSION_REORDERS: &str = r#"
        [[rule]]
        name = "an expansion without a mitigation reorders moved keys on the embedded log"
        kind = "absolute"
        metric = "projection.gaps"
        scenario = "pipeline-expand"
        param = "mitigation=none"
        transport = "embedded"
        strategies = ["keyed-mailbox"]
        op = ">"
        value = 0
    "#;

    /// A rule about one transport judges its cells and lists the others' as not applied,
    /// with the transport they consumed through; with none of its own it does not apply.
    #[test]
    fn a_rule_about_one_transport_lists_the_other_transports_cells_as_not_applied() {
        let mut results = with_pipelines();
        let expand = |run: &crate::results::PipelineRun| {
            run.scenario == "pipeline-expand"
                && run.param == "mitigation=none"
                && run.strategy == "keyed-mailbox"
        };
        let (applicable, not_run) = split_not_run(rules_of(EXPANSION_REORDERS, &results), &results);
        assert!(not_run.is_empty(), "{not_run:?}");
        let checks = evaluate(&results, &applicable, None, 0, &mut no_rerun()).unwrap();
        assert_eq!(checks.len(), 1, "{checks:?}");

        // Every pipeline cell over Kafka, the expansion's reordering nothing.
        for run in &mut results.pipelines {
            run.transport = Some(crate::results::TransportKind::Kafka);
            if expand(run) {
                run.projection.gaps = 0;
            }
        }
        let kafka = results.pipelines.iter().find(|run| expand(run)).unwrap();
        let cell = CellKey::of_pipeline(kafka).to_string();
        let (applicable, not_run) = split_not_run(rules_of(EXPANSION_REORDERS, &results), &results);
        assert!(applicable.is_empty(), "no embedded cell left to judge");
        assert_eq!(not_run.len(), 1, "{not_run:?}");
        assert_eq!(not_run[0].scenario, cell);
        let why = not_run[0].why.as_deref().unwrap_or_default();
        assert_eq!(why, "consumed through kafka, and the rule is about embedded (`transport`)");

        let on_uniform = EXPANSION_REORDERS
            .replace("scenario = \"pipeline-expand\"", "scenario = \"uniform\"")
            .replace("param = \"mitigation=none\"\n", "");
        let error = rules(&on_uniform, &results).unwrap_err().to_string();
        assert!(error.contains("`transport` selects pipeline cells"), "{error}");
    }

    const ENDS_CORRECT: &str = r#"
        [[rule]]
        name = "the version-aware projection ends correct under every retry policy"
        kind = "absolute"
        metric = "projection.keys_wrong"
        scenario = "pipeline-retry"
        strategies = "ordered"
        op = "=="
        value = 0
    "#;

    /// The run of 2026-12-02, whose pipeline-retry cells are the ones retried a bounded
    /// number of times.
    fn with_pipelines() -> Results {
        serde_json::from_str(include_str!("../../../results/2026-12-02-vm/results.json")).unwrap()
    }

    /// Marks `run` a retry-forever cell that the stall limit cut off, its state wrong.
    fn retried_for_ever(run: &mut crate::results::PipelineRun) {
        let retry = run.retry.as_mut().expect("a pipeline-retry cell");
        retry.forever = Some(crate::results::RetryForever {
            stall_s: 1.0,
            stall_from_s: 0.5,
            stall_limit_s: 1.0,
            cut_off: true,
            stranded: 10,
            still_retrying: 3,
            unsettled: 4,
        });
        run.projection.keys_wrong = 5;
        run.projection.final_state_correct = false;
    }

    #[test]
    fn a_retry_forever_cell_is_not_judged_by_the_final_state_rules() {
        let mut results = with_pipelines();
        let retry = |run: &&mut crate::results::PipelineRun| run.scenario == "pipeline-retry";
        let first = results.pipelines.iter_mut().find(retry).unwrap();
        let cell = CellKey::of_pipeline(first).to_string();
        retried_for_ever(first);
        let (applicable, not_run) = split_not_run(rules_of(ENDS_CORRECT, &results), &results);
        assert_eq!(not_run.len(), 1, "{not_run:?}");
        assert_eq!(not_run[0].scenario, cell);
        assert!(not_run[0].why.as_deref().unwrap_or_default().contains("never settle"));
        let checks = evaluate(&results, &applicable, None, 0, &mut no_rerun()).unwrap();
        assert!(!checks.is_empty() && checks.iter().all(|check| check.pass), "{checks:?}");
        assert!(checks.iter().all(|check| check.cell != cell));
        // The `lost` rules still judge it.
        let lost = ENDS_CORRECT.replace("projection.keys_wrong", "lost");
        let (applicable, not_run) = split_not_run(rules_of(&lost, &results), &results);
        assert!(not_run.is_empty());
        let checks = evaluate(&results, &applicable, None, 0, &mut no_rerun()).unwrap();
        assert!(checks.iter().any(|check| check.cell == cell));
        // Every cell retried for ever: the rule does not apply, and is no error.
        results
            .pipelines
            .iter_mut()
            .filter(|run| run.scenario == "pipeline-retry")
            .for_each(retried_for_ever);
        let (applicable, not_run) = split_not_run(rules_of(ENDS_CORRECT, &results), &results);
        assert!(applicable.is_empty());
        assert_eq!(not_run.len(), 1);
    }
}
