//! `keyed-bench soak` through the library: a short soak for CI and, ignored, the full
//! million keys (`cargo test --release -p harness --test soak -- --ignored`).

use std::sync::Mutex;
use std::time::Duration;

use harness::soak::{run_soak, SoakConfig, SoakOutcome, DEFAULT_STRATEGIES};
use strategies::Design;

/// One soak at a time: the memory check reads the whole process's resident size.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn soak(strategies: &[Design], keys: usize, duration: Duration, rounds: usize) -> SoakOutcome {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let config = SoakConfig {
        strategies: strategies.to_vec(),
        keys,
        duration,
        workers: 2,
        window: 256,
        seed: 7,
        round_messages: rounds,
    };
    let mut lines = Vec::new();
    let outcome = run_soak(&config, &mut |line| lines.push(line.to_owned())).expect("it runs");
    for &strategy in strategies {
        let started = format!("{strategy}: churning");
        assert!(lines.iter().any(|line| line.starts_with(&started)), "{lines:?}");
    }
    outcome
}

/// Every check of every strategy held; the numbers behind them are the expected ones.
#[track_caller]
fn assert_passed(outcome: &SoakOutcome, keys: usize) {
    for soak in &outcome.strategies {
        let id = soak.strategy;
        let failed: Vec<String> = soak
            .checks()
            .into_iter()
            .filter(|check| !check.held)
            .map(|check| format!("{}: {}", check.name, check.detail))
            .collect();
        assert!(failed.is_empty(), "{id}: {failed:#?}\n{}", outcome.render());
        assert_eq!(soak.churn.ran, 3 * keys as u64, "{id}: churn handler calls");
        let expected_mailboxes = has_mailboxes(id).then_some(0);
        assert_eq!(soak.churn.live_mailboxes, expected_mailboxes, "{id}");
        assert!(soak.churn.memory.is_some(), "{id}: /proc/self/status is readable here");
        let mixed = &soak.mixed;
        assert!(mixed.rounds >= 1 && mixed.injected_panics > 0, "{id}: {mixed:?}");
        assert_eq!(mixed.correctness.failed, mixed.injected_panics, "{id}");
    }
    assert!(outcome.passed());
    let table = outcome.render();
    for soak in &outcome.strategies {
        assert!(table.contains(soak.strategy.as_str()), "{table}");
    }
    assert!(!table.contains("FAIL"), "{table}");
}

fn has_mailboxes(id: Design) -> bool {
    id.descriptor().family == strategies::Family::Mailboxes
}

/// The default strategies, 20,000 keys churned and a 1 s mixed soak each.
#[test]
fn a_short_soak_of_the_default_strategies_passes_every_check() {
    let outcome = soak(&DEFAULT_STRATEGIES, 20_000, Duration::from_secs(1), 10_000);
    assert_passed(&outcome, 20_000);
}

/// Every strategy, tiny sizes: the checks hold for each design (the unordered
/// `thread-pool` is held to its own promise: nothing lost or duplicated).
#[test]
fn a_tiny_soak_of_every_strategy_passes_every_check() {
    let outcome =
        soak(&Design::built_ins().collect::<Vec<_>>(), 5_000, Duration::from_millis(200), 5_000);
    assert_passed(&outcome, 5_000);
}

/// The full churn of a million keys and a 5 s mixed soak: the memory check is only
/// meaningful at this size (see `harness::soak`).
#[test]
#[ignore = "the full million keys: run with --release"]
fn the_full_soak_of_a_million_keys_passes_every_check() {
    let outcome = soak(&DEFAULT_STRATEGIES, 1_000_000, Duration::from_secs(5), 50_000);
    assert_passed(&outcome, 1_000_000);
    println!("{}", outcome.render());
}
