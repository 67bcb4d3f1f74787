//! The reports' one view of a results file: its measured runs, pipeline runs and prices of
//! order read once and keyed by [`CellKey`], so a report finds a cell by its scenario,
//! parameter and strategy instead of comparing their text.
//!
//! A [`View`] holds the whole file; [`Rows`] holds a set of measured runs (a scenario's, or
//! any selection of them) with the lookups the tables and charts use: the cell of a
//! parameter, the row of a (parameter, strategy), the first row of a strategy. Parameters
//! are the recorded ones, the sweep label included, so a sweep point is a cell of its own.

use std::collections::{HashMap, HashSet};
use std::ops::Deref;

use strategies::StrategyId;

use crate::results::{
    CellKey, CommitPolicy, PipelineRun, PriceOfOrder, Results, RunResult, Scenario,
};
use crate::workload::ScenarioId;

/// A set of measured runs in file order, with keyed lookups by parameter and strategy.
#[derive(Clone, Debug, Default)]
pub struct Rows<'r> {
    /// Every row, in file order.
    all: Vec<&'r RunResult>,
    /// The distinct parameters, in order of first appearance.
    params: Vec<&'r str>,
    /// The rows of each parameter, in file order.
    cells: HashMap<&'r str, Vec<&'r RunResult>>,
    /// The rows of each strategy, in file order.
    on: HashMap<&'r str, Vec<&'r RunResult>>,
    /// The first row of each (parameter, strategy).
    at: HashMap<(&'r str, &'r str), &'r RunResult>,
}

impl<'r> Rows<'r> {
    /// The rows, indexed.
    pub fn new(rows: impl IntoIterator<Item = &'r RunResult>) -> Self {
        let mut out = Self::default();
        for row in rows {
            let (param, strategy) = (row.param.as_str(), row.strategy.as_str());
            let cell = out.cells.entry(param).or_insert_with(|| {
                out.params.push(param);
                Vec::new()
            });
            cell.push(row);
            out.on.entry(strategy).or_default().push(row);
            out.at.entry((param, strategy)).or_insert(row);
            out.all.push(row);
        }
        out
    }

    /// The rows `keep` keeps, indexed anew.
    pub fn filter(&self, keep: impl Fn(&RunResult) -> bool) -> Self {
        Self::new(self.all.iter().copied().filter(|row| keep(row)))
    }

    /// The distinct parameters, in order of first appearance.
    pub fn params(&self) -> Vec<&'r str> {
        self.params.clone()
    }

    /// The rows of `param` (one per strategy, in file order); none where it was not run.
    pub fn cell(&self, param: &str) -> Vec<&'r RunResult> {
        self.cells.get(param).cloned().unwrap_or_default()
    }

    /// Whether any row has a parameter other than `param`.
    pub fn has_other_than(&self, param: &str) -> bool {
        self.cells.len() > usize::from(self.cells.contains_key(param))
    }

    /// The row of `param` on `strategy`, if it was measured.
    pub fn row(&self, param: &str, strategy: &str) -> Option<&'r RunResult> {
        self.at.get(&(param, strategy)).copied()
    }

    /// The first row of `strategy`, if it ran.
    pub fn on(&self, strategy: &str) -> Option<&'r RunResult> {
        self.on.get(strategy).and_then(|rows| rows.first().copied())
    }

    /// The rows of `strategy`, in file order; none where it did not run.
    pub fn of_strategy(&self, strategy: &str) -> Vec<&'r RunResult> {
        self.on.get(strategy).cloned().unwrap_or_default()
    }

    /// The first row of `param`, if it was run.
    pub fn first_in(&self, param: &str) -> Option<&'r RunResult> {
        self.cells.get(param).and_then(|cell| cell.first().copied())
    }

    /// The distinct strategies: known ones in [`StrategyId::ALL`] order, then any others in
    /// file order.
    pub fn strategies(&self) -> Vec<&'r str> {
        let known = StrategyId::ALL
            .iter()
            .filter_map(|id| self.on(id.as_str()).map(|row| row.strategy.as_str()));
        super::first_seen(known.chain(self.all.iter().map(|row| row.strategy.as_str())))
    }
}

impl<'r> Deref for Rows<'r> {
    type Target = [&'r RunResult];

    fn deref(&self) -> &Self::Target {
        &self.all
    }
}

/// A set of pipeline runs in file order, with keyed lookups by strategy and commit policy.
#[derive(Clone, Debug, Default)]
pub struct PipelineRows<'r> {
    /// Every run, in file order.
    all: Vec<&'r PipelineRun>,
    /// The runs of each strategy, in file order.
    on: HashMap<&'r str, Vec<&'r PipelineRun>>,
    /// The first run of each (strategy, commit policy).
    at: HashMap<(&'r str, CommitPolicy), &'r PipelineRun>,
}

impl<'r> PipelineRows<'r> {
    /// The runs, indexed.
    pub fn new(runs: impl IntoIterator<Item = &'r PipelineRun>) -> Self {
        let mut out = Self::default();
        for run in runs {
            let strategy = run.strategy.as_str();
            out.on.entry(strategy).or_default().push(run);
            out.at.entry((strategy, run.policy)).or_insert(run);
            out.all.push(run);
        }
        out
    }

    /// The runs `keep` keeps, indexed anew.
    pub fn filter(&self, keep: impl Fn(&PipelineRun) -> bool) -> Self {
        Self::new(self.all.iter().copied().filter(|run| keep(run)))
    }

    /// The runs of `strategy`, in file order; none where it did not run.
    pub fn of_strategy(&self, strategy: &str) -> &[&'r PipelineRun] {
        self.on.get(strategy).map_or(&[], Vec::as_slice)
    }

    /// The first run of `strategy` under `policy`, if there is one.
    pub fn run(&self, strategy: &str, policy: CommitPolicy) -> Option<&'r PipelineRun> {
        self.at.get(&(strategy, policy)).copied()
    }
}

impl<'r> Deref for PipelineRows<'r> {
    type Target = [&'r PipelineRun];

    fn deref(&self) -> &Self::Target {
        &self.all
    }
}

/// A results file read once for the reports: every cell under its [`CellKey`].
#[derive(Clone, Debug)]
pub struct View<'r> {
    /// The file.
    results: &'r Results,
    /// The measured runs of each scenario.
    scenarios: HashMap<Scenario, Rows<'r>>,
    /// The pipeline runs of each scenario, in file order.
    pipelines: HashMap<Scenario, Vec<&'r PipelineRun>>,
    /// The first pipeline run of each cell.
    pipeline_cells: HashMap<CellKey, &'r PipelineRun>,
    /// The first price of order of each cell.
    prices: HashMap<CellKey, &'r PriceOfOrder>,
    /// Every strategy of this build a run or a pipeline run names.
    ran: HashSet<StrategyId>,
    /// What a scenario without runs has.
    none: Rows<'r>,
}

impl<'r> View<'r> {
    /// The view of `results`.
    pub fn of(results: &'r Results) -> Self {
        let mut grouped: HashMap<Scenario, Vec<&'r RunResult>> = HashMap::new();
        for run in &results.runs {
            grouped.entry(CellKey::of_run(run).scenario).or_default().push(run);
        }
        let scenarios = grouped.into_iter().map(|(id, rows)| (id, Rows::new(rows))).collect();
        let mut pipelines: HashMap<Scenario, Vec<&'r PipelineRun>> = HashMap::new();
        let mut pipeline_cells = HashMap::new();
        for run in &results.pipelines {
            let key = CellKey::of_pipeline(run);
            pipelines.entry(key.scenario.clone()).or_default().push(run);
            pipeline_cells.entry(key).or_insert(run);
        }
        let mut prices = HashMap::new();
        for price in &results.price_of_order {
            let key = CellKey::recorded(&price.scenario, &price.param, &price.strategy);
            prices.entry(key).or_insert(price);
        }
        let runs = results.runs.iter().map(|run| run.strategy.as_str());
        let names = runs.chain(results.pipelines.iter().map(|run| run.strategy.as_str()));
        let ran = names.filter_map(|name| name.parse().ok()).collect();
        let none = Rows::default();
        Self { results, scenarios, pipelines, pipeline_cells, prices, ran, none }
    }

    /// The file.
    pub fn results(&self) -> &'r Results {
        self.results
    }

    /// Whether `id` ran in any cell, measured or pipeline.
    pub fn ran(&self, id: StrategyId) -> bool {
        self.ran.contains(&id)
    }

    /// The measured runs of `scenario`, in file order.
    pub fn rows(&self, scenario: ScenarioId) -> &Rows<'r> {
        self.scenarios.get(&Scenario::Known(scenario)).unwrap_or(&self.none)
    }

    /// The row of `scenario`'s `param` on `strategy`, if it was measured.
    pub fn row(&self, scenario: ScenarioId, param: &str, strategy: &str) -> Option<&'r RunResult> {
        self.rows(scenario).row(param, strategy)
    }

    /// The pipeline runs of `scenario`, in file order.
    pub fn pipelines(&self, scenario: impl Into<Scenario>) -> &[&'r PipelineRun] {
        self.pipelines.get(&scenario.into()).map_or(&[], Vec::as_slice)
    }

    /// The pipeline run of `scenario`'s `param` on `strategy`, if it ran.
    pub fn pipeline(
        &self,
        scenario: ScenarioId,
        param: &str,
        strategy: &str,
    ) -> Option<&'r PipelineRun> {
        self.pipeline_cells.get(&CellKey::recorded(scenario.as_str(), param, strategy)).copied()
    }

    /// The price of order of `scenario`'s `param` on `strategy`, if the control ran there.
    pub fn price(
        &self,
        scenario: ScenarioId,
        param: &str,
        strategy: &str,
    ) -> Option<&'r PriceOfOrder> {
        self.prices.get(&CellKey::recorded(scenario.as_str(), param, strategy)).copied()
    }

    /// Whether the price of order `price` is of a pipeline scenario's cell.
    pub fn is_pipeline_price(&self, price: &PriceOfOrder) -> bool {
        self.pipelines.contains_key(&Scenario::from(price.scenario.as_str()))
    }

    /// The scenario of this build `price` is of, if it is one.
    pub fn price_scenario(price: &PriceOfOrder) -> Option<ScenarioId> {
        Scenario::from(price.scenario.as_str()).known()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_found_by_their_scenario_param_and_strategy() {
        let results = super::super::reference::first();
        let view = View::of(&results);
        let uniform: ScenarioId = "uniform".parse().unwrap();
        let rows = view.rows(uniform);
        assert!(!rows.is_empty());
        let first = rows[0];
        let found = view.row(uniform, &first.param, &first.strategy).unwrap();
        assert!(std::ptr::eq(found, first));
        assert!(std::ptr::eq(rows.on(&first.strategy).unwrap(), first));
        assert!(view.row(uniform, &first.param, "no-such-design").is_none());
        assert_eq!(rows.params().len(), 1);
        assert_eq!(rows.cell(&first.param).len(), rows.len());
        assert!(!rows.has_other_than(&first.param));
        assert!(view.rows("pipeline-crash".parse().unwrap()).is_empty());
    }
}
