//! What the suite can run, for `keyed-bench list`.

use std::fmt::Write as _;

use strategies::StrategyId;

use crate::workload::{ScenarioId, Sizes};

/// The defaults of one scenario, as flags would set them.
fn defaults(scenario: ScenarioId, sizes: &Sizes) -> String {
    let flags = sizes.flags_of(scenario);
    flags.iter().map(|(flag, value)| format!("--{flag} {value}")).collect::<Vec<_>>().join(" ")
}

/// The strategies, one per line: id and description.
pub fn strategies_table() -> String {
    let width = StrategyId::ALL.iter().map(|id| id.as_str().len()).max().unwrap_or(0);
    let mut out = String::from("strategies:\n");
    for id in StrategyId::ALL {
        let _ = writeln!(out, "  {:width$}  {}", id.as_str(), id.description());
    }
    out
}

/// The scenarios with their description and default sizes.
pub fn scenarios_table() -> String {
    let sizes = Sizes::standard();
    let width = ScenarioId::ALL.iter().map(|id| id.as_str().len()).max().unwrap_or(0);
    let mut out = String::from("scenarios (defaults; --quick uses smaller sizes):\n");
    for &id in ScenarioId::ALL {
        let _ = writeln!(out, "  {:width$}  {}", id.as_str(), id.description());
        let _ = writeln!(out, "  {:width$}    {}", "", defaults(id, &sizes));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_strategy_and_scenario_once() {
        let count = |table: &str, id: &str| {
            table.lines().filter(|line| line.starts_with(&format!("  {id} "))).count()
        };
        let table = strategies_table();
        for id in StrategyId::ALL {
            assert_eq!(count(&table, id.as_str()), 1, "{table}");
        }
        let table = scenarios_table();
        for id in ScenarioId::ALL {
            assert_eq!(count(&table, id.as_str()), 1, "{table}");
        }
    }
}
