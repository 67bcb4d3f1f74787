//! What the suite can run, for `keyed-bench list`.

use strategies::StrategyId;

use super::table::{Align, Table};
use crate::workload::{ScenarioId, Sizes};

/// The defaults of one scenario, as flags would set them.
fn defaults(scenario: ScenarioId, sizes: &Sizes) -> String {
    let flags = sizes.flags_of(scenario);
    flags.iter().map(|(flag, value)| format!("--{flag} {value}")).collect::<Vec<_>>().join(" ")
}

/// The strategies, one per line: id and description.
pub fn strategies_table() -> String {
    let mut table = Table::new([("", Align::Left); 2]).with_caption("strategies:");
    for id in StrategyId::ALL {
        table.push([id.as_str(), id.description()]);
    }
    table.text("  ")
}

/// The scenarios with their description and default sizes.
pub fn scenarios_table() -> String {
    let sizes = Sizes::standard();
    let caption = "scenarios (defaults; --quick uses smaller sizes):";
    let mut table = Table::new([("", Align::Left); 2]).with_caption(caption);
    for &id in ScenarioId::ALL {
        table.push([id.as_str().to_owned(), id.description().to_owned()]);
        table.push([String::new(), format!("  {}", defaults(id, &sizes))]);
    }
    table.text("  ")
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
