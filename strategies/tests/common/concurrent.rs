//! Running one check for every strategy at once, each on a helper thread (a call that must
//! return in time is the test kit's `within`).

use std::thread;

use strategies::testkit::panic_text;
use strategies::StrategyId;

/// Runs `check` for every strategy in `ids` at once, each on its own thread (for checks
/// that mostly wait), then fails naming every strategy whose check failed.
pub fn check_concurrently(
    ids: impl IntoIterator<Item = StrategyId>,
    check: impl Fn(StrategyId) + Sync,
) {
    let check = &check;
    let failures: Vec<String> = thread::scope(|scope| {
        let running: Vec<_> =
            ids.into_iter().map(|id| (id, scope.spawn(move || check(id)))).collect();
        running
            .into_iter()
            .filter_map(|(id, run)| {
                run.join().err().map(|payload| format!("{id}: {}", panic_text(&*payload)))
            })
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
