//! What the suite can run, for `keyed-bench list`.

use std::fmt::Write as _;

use strategies::StrategyId;

/// The strategies, one per line: id, ordered or control, description.
pub fn strategies_table() -> String {
    let width = StrategyId::ALL.iter().map(|id| id.as_str().len()).max().unwrap_or(0);
    let mut out = String::from("strategies:\n");
    for id in StrategyId::ALL {
        let _ = writeln!(out, "  {:width$}  {}", id.as_str(), id.description());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_strategy_once() {
        let table = strategies_table();
        for id in StrategyId::ALL {
            assert_eq!(table.matches(&format!("  {} ", id.as_str())).count(), 1, "{table}");
        }
    }
}
