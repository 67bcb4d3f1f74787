//! What the suite can run, for `keyed-bench list`.

use std::fmt::Write as _;

use strategies::StrategyId;

use crate::workload::{ScenarioId, Sizes};

/// The defaults of one scenario, as flags would set them.
fn defaults(scenario: ScenarioId, sizes: &Sizes) -> String {
    match scenario {
        ScenarioId::Uniform => format!(
            "--messages {} --keys {} --spin-ns {}",
            sizes.messages, sizes.keys, sizes.spin_ns
        ),
        ScenarioId::Zipf => {
            format!("--messages {} --keys {} --zipf-s {}", sizes.messages, sizes.keys, sizes.zipf_s)
        }
        ScenarioId::ManyTypes => {
            format!(
                "--messages {} --types {} --keys-per-type {}",
                sizes.messages, sizes.types, sizes.keys_per_type
            )
        }
        ScenarioId::ConflictBackoff => format!(
            "--paced-messages {} --small-keys {} --troubled-pct {} --backoff-ms {} --rate {}",
            sizes.paced_messages,
            sizes.small_keys,
            sizes.troubled_pct,
            sizes.backoff_ms,
            sizes.rate
        ),
        ScenarioId::LongSync => format!(
            "--paced-messages {} --small-keys {} --long-pct {} --long-ms {} --rate {}",
            sizes.paced_messages, sizes.small_keys, sizes.long_pct, sizes.long_ms, sizes.rate
        ),
        ScenarioId::HotBacklog => format!(
            "--bursts {} --hot-wait-ms {} --bystanders {} --small-keys {} --rate {}",
            join(&sizes.bursts),
            sizes.hot_wait_ms,
            sizes.bystanders,
            sizes.small_keys,
            sizes.rate
        ),
        ScenarioId::AsyncIo => format!(
            "--async-messages {} --async-keys {} --async-max-wait-ms {} --async-window {}",
            sizes.async_messages,
            join(&sizes.async_keys),
            sizes.async_max_wait_ms,
            sizes.async_window
        ),
        ScenarioId::OpenLoop => {
            format!(
                "--open-messages {} --loads {} --keys {}",
                sizes.open_messages,
                join(&sizes.loads),
                sizes.keys
            )
        }
    }
}

fn join<T: ToString>(values: &[T]) -> String {
    values.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
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
