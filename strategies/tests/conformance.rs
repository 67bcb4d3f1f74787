//! The conformance suite: every built-in strategy goes through the contract suite,
//! [`strategies::conformance::check`] (exactly once, order with and without waits, the
//! window, re-entrant submissions, drain and close, forced close, panics, threads and
//! mailboxes), and then through the tests here, which cover what `check` does not: the
//! descriptors and settings, behaviour under settings other than the check's (idle spin,
//! throughput, binding, windows of 16 and 256, one worker), races of `close` against
//! submitters and of a forced close against a wake, head-of-line blocking, fairness,
//! affinity and event counts (docs/design.md section 3, "Behaviours its own test suite
//! checks"). Each test loops over the strategies it applies to and names the strategy in
//! every failure; where a strategy is skipped, the test says why.
//!
//! The job-interpreting handler, the gates and the fixture live in `common/`, on top of
//! the test kit (`strategies::testkit`) that `check` uses too. The tests of handlers that
//! submit into their own strategy (beside an outside producer, across a close, per
//! instance) are in `conformance/reentrant.rs`, the window scope in
//! `conformance/window_scope.rs`.

mod common;

#[path = "conformance/reentrant.rs"]
mod reentrant;
#[path = "conformance/window_scope.rs"]
mod window_scope;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use strategies::conformance::{self, Check, Verdict};
use strategies::{
    Binding, BuildError, ConfigError, Design, Family, Handler, Job, Key, Message, Outcome,
    StrategyConfig, StrategyId, Threads,
};

use common::*;

// ---------------------------------------------------------------------------------------
// The contract itself
// ---------------------------------------------------------------------------------------

/// Built-in designs that fail a check, each with the words its finding must contain: the
/// check is not weakened for them, the defect is pinned here until it is fixed (then the
/// entry goes, and the test holds the design to the whole contract again).
///
/// `inline` with more than one submitting thread: a handler's submission at a full window
/// waits in the admission queue; the credit of a message finishing on *another* submitting
/// thread admits it onto inline's admitted list, and that thread's frame runs it at once,
/// while the handler that submitted it is still running. The key's next message overlaps
/// its current one (16 chains from 16 threads: a few dozen overlaps in 480 messages).
const KNOWN_DEFECTS: &[(StrategyId, Check, &str)] =
    &[(StrategyId::Inline, Check::Reentrant, "overlapping")];

/// Every built-in design passes every check of [`conformance::check`] that applies to it
/// (but for a [`KNOWN_DEFECTS`] entry, which must fail as described, if it fails), and
/// the order checks are skipped exactly for the designs that promise no order.
#[test]
fn every_built_in_strategy_passes_the_contract_suite() {
    let mut broken = Vec::new();
    for &id in StrategyId::ALL {
        let design = Design::from(id);
        let report = match conformance::check(design) {
            Ok(passed) => passed.into_report(),
            Err(failed) => failed.into_report(),
        };
        println!("{report}");
        for check in report.failed() {
            let known = KNOWN_DEFECTS.iter().find(|&&(i, c, _)| (i, c) == (id, check));
            let figures = &report.finding(check).expect("a finding").figures;
            match known {
                Some((_, _, words)) if figures.contains(words) => {}
                _ => broken.push(format!("{id}: {check}: {figures}")),
            }
        }
        let expected = if design.is_ordered() { Verdict::Pass } else { Verdict::Skip };
        for check in [Check::Order, Check::OrderWithWaits] {
            assert_eq!(report.verdict(check), Some(expected), "{id}: {check}: {report}");
        }
    }
    assert!(
        broken.is_empty(),
        "built-in strategies fail the contract suite:\n{}",
        broken.join("\n")
    );
}

// ---------------------------------------------------------------------------------------
// Descriptors and settings
// ---------------------------------------------------------------------------------------

/// The suite decides which checks apply from the strategies' descriptors (`common/classes.rs`
/// queries family, threads and the ordered flag), so a new strategy is classified by its
/// descriptor alone and needs no edit here. What this checks is that the descriptors are
/// consistent with each other, with the `StrategyId` methods and with what a built strategy
/// reports, that the classes agree with them, and that the classes the head-of-line
/// contrast compares are not empty.
#[test]
fn descriptors_classify_every_strategy_consistently() {
    let handler = || -> Arc<dyn Handler> { Arc::new(|_: &Message| Outcome::Done) };
    for &id in StrategyId::ALL {
        let descriptor = id.descriptor();
        assert_eq!(descriptor.id, id.as_str(), "{id}: descriptor id");
        assert_eq!(strategies::descriptor_of(id.as_str()), Some(descriptor), "{id}: lookup");
        assert_eq!(descriptor.ordered, id.is_ordered(), "{id}: is_ordered");
        assert_eq!(descriptor.ordered, descriptor.family != Family::Unordered, "{id}: ordered");
        assert_eq!(descriptor.is_shared_pool(), id.is_shared_pool(), "{id}: is_shared_pool");
        assert_eq!(
            descriptor.runs_on_caller(),
            descriptor.family == Family::Inline,
            "{id}: runs on the caller exactly when its family is inline"
        );
        let classes = [per_key_mailboxes(), hash_groups(), on_caller(), threaded(), ordered()];
        let memberships = classes.map(|class| class.contains(&id));
        let [mailboxes, groups, caller, with_threads, in_order] = memberships;
        assert!(!(mailboxes && groups), "{id}: both per-key mailboxes and hash groups");
        assert_ne!(caller, with_threads, "{id}: exactly one of on-caller and threaded");
        assert_eq!(in_order, descriptor.ordered, "{id}: ordered()");

        // The family is what the strategy does, not just a label (the threads are checked by
        // `thread_counts_follow_each_design`).
        let strategy = id.build(config(2), handler()).unwrap();
        let live = strategy.stats().live_mailboxes;
        assert_eq!(live.is_some(), has_mailboxes(id), "{id}: live_mailboxes {live:?}");
        strategy.close();
    }
    assert!(!per_key_mailboxes().is_empty(), "no per-key mailbox strategy to contrast");
    assert!(!hash_groups().is_empty(), "no hash-group strategy to contrast");
}

/// Behaviour 12 (second half): zero workers, window, throughput or groups is an error, not
/// a panic, for every strategy; the registry builds every id and names the bad one.
#[test]
fn zero_settings_are_rejected_by_every_strategy() {
    let handler = || -> Arc<dyn Handler> { Arc::new(|_: &Message| Outcome::Done) };
    for id in all() {
        for field in ["workers", "max_in_flight", "throughput", "groups_per_worker"] {
            let mut config = config(2);
            match field {
                "workers" => config.workers = 0,
                "max_in_flight" => config.max_in_flight = 0,
                "throughput" => config.throughput = 0,
                _ => config.groups_per_worker = 0,
            }
            match id.build(config, handler()) {
                Err(error) => assert_eq!(error, ConfigError::Zero { field }, "{id}"),
                Ok(_) => panic!("{id}: accepted {field} = 0"),
            }
        }
        match strategies::build(id.as_str(), config(1), handler()) {
            Ok(strategy) => assert_eq!(strategy.id(), id.as_str()),
            Err(error) => panic!("{id}: the registry cannot build it: {error}"),
        }
    }
    let unknown = strategies::build("no-such-strategy", config(1), handler());
    assert!(matches!(unknown, Err(BuildError::Unknown(_))), "an unknown id must be an error");
}

/// docs/design.md 3.5, "Idle spin is a setting": an idle spin past `MAX_IDLE_SPIN_US` is
/// `ConfigError::TooLarge` naming `idle_spin_us`, for every strategy and through the
/// registry, never a panic; 0 (park at once) and the limit itself are accepted.
#[test]
fn an_idle_spin_past_its_limit_is_rejected_naming_the_field() {
    let handler = || -> Arc<dyn Handler> { Arc::new(|_: &Message| Outcome::Done) };
    let max = StrategyConfig::MAX_IDLE_SPIN_US;
    let too_long = StrategyConfig { idle_spin_us: max + 1, ..config(2) };
    let expected =
        ConfigError::TooLarge { field: "idle_spin_us", value: max as usize + 1, max: max as usize };
    for id in all() {
        match id.build(too_long, handler()) {
            Err(error) => {
                assert_eq!(error, expected, "{id}");
                let text = error.to_string();
                assert!(text.contains("idle_spin_us") && text.contains("1000"), "{id}: {text}");
            }
            Ok(_) => panic!("{id}: accepted idle_spin_us = {}", max + 1),
        }
        match strategies::build(id.as_str(), too_long, handler()) {
            Err(error) => assert_eq!(error, BuildError::Config(expected), "{id}: registry"),
            Ok(_) => panic!("{id}: the registry accepted idle_spin_us = {}", max + 1),
        }
        for idle_spin_us in [0, max] {
            let config = StrategyConfig { idle_spin_us, ..config(2) };
            match id.build(config, handler()) {
                Ok(strategy) => strategy.close(),
                Err(error) => panic!("{id}: rejected idle_spin_us = {idle_spin_us}: {error}"),
            }
        }
    }
}

/// docs/design.md 3.5, "Idle spin is a setting": with no idle spin (a worker parks at once)
/// and with the longest (1 ms), every mailbox strategy runs all its messages in per-key
/// order and retires its mailboxes. Rounds of mixed messages alternate with idle gaps
/// shorter and longer than the spin, and a trickle of single messages arrives both while
/// the workers still spin and after they have parked for longer than the spin (so the next
/// idle stretch parks at once), then after a short park again.
#[test]
fn mailbox_strategies_keep_order_with_no_idle_spin_and_with_the_longest() {
    const KEYS: u64 = 24;
    const PER_KEY: usize = 10;
    let keys: Vec<Key> = (0..KEYS).map(key).collect();
    let gaps = [Duration::ZERO, Duration::from_micros(300), Duration::from_millis(3)];
    for idle_spin_us in [0, StrategyConfig::MAX_IDLE_SPIN_US] {
        for id in per_key_mailboxes() {
            let config = StrategyConfig { idle_spin_us, throughput: 2, ..config(3) };
            let f = Fixture::new(id, config);
            let mut seq = Sequencer::default();
            for (round, gap) in gaps.iter().cycle().take(6).enumerate() {
                let mut rng = Rng::new(900 + round as u64);
                let messages =
                    seq.shuffled(&mut rng, &keys, PER_KEY, |rng| random_job(rng, 0.3, 5, 50));
                f.submit_all(messages);
                f.assert_ordered(&format!("idle_spin_us = {idle_spin_us}, round {round}"));
                thread::sleep(*gap);
            }
            let trickle = key(KEYS);
            for (i, gap) in gaps.iter().cycle().take(12).enumerate() {
                let job = if i % 3 == 0 { Job::Wait { ns: 20_000 } } else { Job::Noop };
                f.submit(seq.next(trickle, job));
                thread::sleep(*gap);
            }
            let context = format!("idle_spin_us = {idle_spin_us}, after the trickle");
            f.assert_ordered(&context);
            f.assert_mailboxes_retired(&context);
            let ended = f.log.ended();
            assert_eq!(ended, 6 * KEYS as usize * PER_KEY + 12, "{id}: {context}: ended");
            f.close();
        }
    }
}

// ---------------------------------------------------------------------------------------
// Closing under races (behaviour 12; behaviour 7 and the rest of closing are `check`'s)
// ---------------------------------------------------------------------------------------

/// Behaviour 12: `close` racing 4 submitting threads (some blocked on a small window):
/// every message either ran (submit returned `Ok`) or was handed back, never both, never
/// neither; and close returns only after every accepted one finished.
#[test]
fn close_racing_submitters_runs_or_hands_back_every_message() {
    for id in all() {
        let mut handed_back = 0;
        for round in 0..3u64 {
            let f = Fixture::new(id, StrategyConfig { max_in_flight: 32, ..config(2) });
            thread::scope(|scope| {
                for submitter in 0..4u64 {
                    let f = &f;
                    scope.spawn(move || {
                        let mut rng = Rng::new(round * 10 + submitter);
                        let keys: Vec<Key> = (0..10).map(|i| key(submitter * 100 + i)).collect();
                        let messages = Sequencer::default()
                            .shuffled(&mut rng, &keys, 40, |rng| random_job(rng, 0.2, 20, 200));
                        for message in messages {
                            let _ = f.try_submit(message); // recorded either way
                        }
                    });
                }
                let threshold = 50 + 100 * round as usize;
                f.wait_until("messages to finish before the close", |log| log.ended() >= threshold);
                f.close();
            });
            let (accepted, rejected) = (f.accepted().len(), f.rejected().len());
            assert_eq!(accepted + rejected, 1_600, "{id}: a submit neither ran nor handed back");
            f.check_contract(&format!("close racing 4 submitters, round {round}"));
            assert_eq!(f.log.ended(), accepted, "{id}: close returned with unfinished messages");
            handed_back += rejected;
        }
        assert!(
            handed_back > 0,
            "{id}: every close came after the last submission: no race tested"
        );
    }
}

/// A forced close that lands after a pending step was woken but before its mailbox ran
/// again (1 worker, held by another key) neither loses the step nor leaves the mailbox in a
/// state that breaks its runner: the close returns, no worker panics, and every admitted
/// message is accounted for exactly once.
#[test]
fn force_close_after_a_wake_before_the_rerun_accounts_for_everything() {
    for id in threaded() {
        let config = StrategyConfig { groups_per_worker: DISTINCT_GROUPS, ..config(1) };
        let f = Fixture::new(id, config);
        let mut seq = Sequencer::default();
        let (woken, running) = (key(1), key(2));
        f.submit(seq.next(woken, pend_on_gate(1)));
        f.wait_started(1);
        f.submit(seq.next(running, block_on_gate(2))); // holds the only worker
        f.wait_started(2);
        f.submit_all(seq.run_of(woken, 3, |_| Job::Noop));
        f.gates.open(1); // the step is ready: its mailbox is queued behind the held worker
        thread::sleep(Duration::from_millis(20));

        let strategy = f.shared();
        let closer = thread::spawn(move || strategy.force_close());
        let deadline = Instant::now() + PATIENCE;
        while f.try_submit(seq.next(key(99), Job::Noop)).is_ok() {
            assert!(Instant::now() < deadline, "{id}: force_close never closed admission");
            thread::sleep(Duration::from_millis(1));
        }
        thread::sleep(Duration::from_millis(20)); // let a sweep or two pass
        f.gates.open(2);
        let forced = within(&format!("{id}: force_close"), PATIENCE, move || closer.join())
            .unwrap_or_else(|_| panic!("{id}: force_close panicked (a worker hit a bug)"));

        let admitted = f.accepted().len() as u64;
        let ended = f.log.with_log(|log| log.ended() as u64);
        assert!(ended >= 1, "{id}: the running step must finish");
        assert_eq!(ended + forced.discarded + forced.abandoned, admitted, "{id}: {forced:?}");
    }
}

// ---------------------------------------------------------------------------------------
// The admission window (behaviour 6 and the shared-window stall; behaviour 5 is `check`'s)
//
// The strategies that run on the caller (`inline`) are skipped in this section: they run
// every message to completion inside `submit` on the submitting thread, so a message that
// waits blocks the submitter itself and the window never holds more than one unfinished
// message per submitting thread.
// ---------------------------------------------------------------------------------------

/// Behaviour 6: window 16 with 8 messages stuck pending: 100 fast messages of other keys
/// still complete (refills are small batches, so 8 stuck do not stall the flow).
#[test]
fn eight_stuck_messages_in_a_window_of_16_do_not_stop_100_fast_ones() {
    for id in threaded() {
        let config =
            StrategyConfig { max_in_flight: 16, groups_per_worker: DISTINCT_GROUPS, ..config(2) };
        let f = Fixture::new(id, config);
        let mut seq = Sequencer::default();
        let is_stuck = |k: Key| k.aggregate_id >= 1_000;
        let mut messages: Vec<Message> =
            (1_000..1_008).map(|k| seq.next(key(k), pend_on_gate(0))).collect();
        messages.extend((0..100).map(|i| seq.next(key(i % 10), Job::Noop)));
        let (fast_done, stuck_ended) = f.observe_while_submitting(messages, |_| {
            let fast_done =
                f.log.wait_until(PATIENCE, |log| log.ended_where(|k| !is_stuck(k)) >= 100);
            (fast_done, f.log.with_log(|log| log.ended_where(is_stuck)))
        });
        assert!(fast_done, "{id}: 100 fast messages did not complete beside 8 stuck ones");
        assert_eq!(stuck_ended, 0, "{id}: a stuck message finished before its release");
        f.assert_contract("8 stuck + 100 fast in a window of 16");
        f.close();
    }
}

/// The shared-window stall: one key holding 241 unfinished messages of a window of 256
/// leaves the other keys 15 slots, fewer than a refill batch of 16: after those 15 finish,
/// no other key's message is admitted until the key's messages finish.
#[test]
fn a_key_holding_241_of_256_stalls_every_other_key() {
    for id in threaded() {
        let f =
            Fixture::new(id, StrategyConfig { groups_per_worker: DISTINCT_GROUPS, ..config(2) });
        let hot = key(1_000);
        let is_other = |k: Key| k != hot;
        let messages = hot_backlog_then_others(hot, 241);
        let (settled, others_started, others_ended, submitted) =
            f.observe_while_submitting(messages, |submitted| {
                let settled = f.log.wait_until(PATIENCE, |log| log.ended_where(is_other) >= 15);
                thread::sleep(GRACE);
                let (started, ended) =
                    f.log.with_log(|log| (log.started_where(is_other), log.ended_where(is_other)));
                (settled, started, ended, submitted.load(Ordering::SeqCst))
            });
        assert!(
            settled,
            "{id}: the 15 other-key messages admitted with the first credits never finished"
        );
        assert_eq!(
            (others_started, others_ended, submitted),
            (15, 15, 256),
            "{id}: (other-key messages started, ended, messages admitted) while 241 were held"
        );
        f.assert_contract("241 held of 256, then release");
        assert_eq!(f.log.ended(), 341, "{id}");
        f.close();
    }
}

/// The other side of the stall: a key holding 240 of 256 leaves exactly a refill batch, so
/// the 100 messages of other keys all complete while the 240 are still held.
#[test]
fn a_key_holding_240_of_256_does_not_stall_other_keys() {
    for id in threaded() {
        let f =
            Fixture::new(id, StrategyConfig { groups_per_worker: DISTINCT_GROUPS, ..config(2) });
        let hot = key(1_000);
        let is_other = |k: Key| k != hot;
        let messages = hot_backlog_then_others(hot, 240);
        let (others_done, hot_ended) = f.observe_while_submitting(messages, |_| {
            let others_done = f.log.wait_until(PATIENCE, |log| log.ended_where(is_other) >= 100);
            (others_done, f.log.with_log(|log| log.ended_where(|k| k == hot)))
        });
        assert!(others_done, "{id}: other keys stalled while one key held 240 of 256");
        assert_eq!(hot_ended, 0, "{id}: a held message finished before its release");
        f.assert_contract("240 held of 256, then release");
        f.close();
    }
}

/// `held` messages of `hot`, each waiting (pending) on gate 0, then 100 messages over 20
/// other keys.
fn hot_backlog_then_others(hot: Key, held: usize) -> Vec<Message> {
    let mut seq = Sequencer::default();
    let mut messages = seq.run_of(hot, held, |_| pend_on_gate(0));
    messages.extend((0..100).map(|i| seq.next(key(i % 20), Job::Noop)));
    messages
}

// ---------------------------------------------------------------------------------------
// Threads (behaviour 2)
// ---------------------------------------------------------------------------------------

/// Behaviour 2: every shared-pool strategy starts exactly `workers` threads whatever the
/// number of aggregate types; a pool-per-type strategy (`per-type-pool`) starts a pool per
/// type, lazily (types x workers); one that runs on the caller (`inline`) starts none and
/// runs handlers on the submitter. Otherwise handlers run only on the strategy's threads,
/// never on the submitting one.
#[test]
fn thread_counts_follow_each_design() {
    let workers = 3;
    for id in all() {
        let f = Fixture::new(id, config(workers));
        let mut seq = Sequencer::default();
        let mut run_type = |aggregate_type: u32| {
            f.submit_all(
                (0..5).map(|i| seq.next(Key::new(aggregate_type, i), Job::Spin { ns: 10_000 })),
            );
            f.drain();
        };
        if id.descriptor().threads == Threads::PoolPerType {
            assert_eq!(
                f.strategy().threads_started(),
                0,
                "{id}: pools start on a type's first message"
            );
            run_type(0);
            assert_eq!(f.strategy().threads_started(), workers, "{id}: one type, one pool");
        }
        (0..30).for_each(&mut run_type);
        let expected = expected_threads(id, workers, 30);
        assert_eq!(
            f.strategy().threads_started(),
            expected,
            "{id}: threads after 30 aggregate types"
        );
        f.assert_contract("30 aggregate types");
        let observed = f.handler_threads();
        let me = thread::current().id();
        if id.descriptor().runs_on_caller() {
            assert_eq!(observed, HashSet::from([me]), "{id}: handlers must run on the submitter");
        } else {
            assert!(!observed.contains(&me), "{id}: a handler ran on the submitting thread");
            assert!(observed.len() <= expected, "{id}: handlers ran on {} threads", observed.len());
        }
        f.close();
        assert_eq!(
            f.strategy().threads_started(),
            expected,
            "{id}: the count includes joined threads"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Waiting keys and head-of-line blocking (behaviours 3, 4)
// ---------------------------------------------------------------------------------------

/// Behaviour 3: one key blocked on a pending result does not delay 50 other keys, and the
/// run (`drain`) completes only after it is released. Per-key mailbox strategies only: the
/// hash-group designs block the waiting key's group by design (see the contrast test).
#[test]
fn a_pending_key_does_not_delay_50_other_keys() {
    for id in per_key_mailboxes() {
        let f = Fixture::new(id, config(2));
        let mut seq = Sequencer::default();
        let stuck = key(1_000);
        f.submit(seq.next(stuck, pend_on_gate(1)));
        f.submit_all(seq.run_of(stuck, 3, |_| Job::Noop));
        for _ in 0..4 {
            f.submit_all((0..50).map(|k| seq.next(key(k), Job::Spin { ns: 10_000 })));
        }
        f.wait_until("the 50 other keys to finish", |log| log.ended_where(|k| k != stuck) >= 200);
        assert_eq!(f.log.with_log(|log| log.ended_where(|k| k == stuck)), 0, "{id}");

        let (drained, drained_receiver) = mpsc::channel();
        let strategy = f.shared();
        thread::spawn(move || {
            strategy.drain();
            let _ = drained.send(());
        });
        assert!(
            drained_receiver.recv_timeout(GRACE).is_err(),
            "{id}: drain returned while a step was pending"
        );
        f.gates.open(1);
        assert!(
            drained_receiver.recv_timeout(PATIENCE).is_ok(),
            "{id}: drain did not return after the release"
        );
        f.assert_ordered("a pending key beside 50 others");
        f.close();
    }
}

/// Behaviour 4: one worker; one key retries 3 times with a 200 ms (doubling) backoff; all
/// 19 other keys finish before the retry succeeds: waiting does not hold the worker.
#[test]
fn a_retrying_key_does_not_delay_19_other_keys_on_one_worker() {
    // The strategies run side by side: the check mostly waits for the backoff (1.4 s).
    check_concurrently(per_key_mailboxes(), |id| {
        let f = Fixture::new(id, config(1));
        let mut seq = Sequencer::default();
        let retrying = key(1_000);
        let retry = Job::Retry { retries: 3, backoff_ns: 200_000_000, spin_ns: 10_000 };
        f.submit(seq.next(retrying, retry));
        for _ in 0..5 {
            f.submit_all((0..19).map(|k| seq.next(key(k), Job::Spin { ns: 20_000 })));
        }
        f.assert_ordered("a retrying key beside 19 others");
        let (retry_end, last_other_end) = f.log.with_log(|log| {
            let retry_end = log.runs_of(retrying).filter_map(|run| run.ended).max();
            let others = log.runs().iter().filter(|run| run.key != retrying);
            (retry_end, others.filter_map(|run| run.ended).max())
        });
        assert!(last_other_end < retry_end, "{id}: another key finished after the retry succeeded");
        f.close();
    });
}

/// The head-of-line contrast (one worker, one group per pool, so every key shares the
/// waiting key's group): a waiting key delays every other key of its group in the
/// hash-group designs, and no other key in the per-key mailbox designs.
#[test]
fn a_waiting_key_blocks_its_group_only_in_hash_group_strategies() {
    let config = StrategyConfig { groups_per_worker: 1, ..config(1) };
    for id in hash_groups().into_iter().chain(per_key_mailboxes()) {
        let f = Fixture::new(id, config);
        let mut seq = Sequencer::default();
        let waiting = key(0);
        let bystander = |k: Key| k != waiting;
        f.submit(seq.next(waiting, pend_on_gate(1)));
        f.wait_started(1);
        for _ in 0..3 {
            f.submit_all((1..=10).map(|k| seq.next(key(k), Job::Noop)));
        }
        if id.descriptor().family == Family::HashGroups {
            thread::sleep(GRACE);
            let started = f.log.with_log(|log| log.started_where(bystander));
            assert_eq!(started, 0, "{id}: a key of the waiting key's group ran during the wait");
            let released = Instant::now();
            f.gates.open(1);
            f.assert_ordered("group released");
            let first = f.log.with_log(|log| {
                log.runs().iter().filter(|run| bystander(run.key)).map(|run| run.started).min()
            });
            assert!(first >= Some(released), "{id}: a bystander started before the release");
        } else {
            f.wait_until("the other keys to finish during the wait", |log| {
                log.ended_where(bystander) >= 30
            });
            let waiting_ended = f.log.with_log(|log| log.ended_where(|k| k == waiting));
            assert_eq!(waiting_ended, 0, "{id}: the waiting key finished before its release");
            f.gates.open(1);
            f.assert_ordered("waiting key released");
        }
        f.close();
    }
}

/// The strategies whose waker finishes a waiting message on the thread that completes the
/// wait, as the reference implementation does (docs/design.md 3.5, "Waits are finished by
/// the thread that completes them"): only a key with another message needs a worker. The
/// other mailbox strategies re-poll a woken step on their own threads (`tokio`, `rayon`).
const WAKER_FINISHES: [StrategyId; 3] =
    [StrategyId::KeyedMailbox, StrategyId::Hybrid, StrategyId::WorkStealing];

/// A waiting key's last message ends, and returns its window credit, while the only worker
/// runs a long synchronous turn, in the strategies whose waker finishes the wait; in the
/// other mailbox strategies it waits for the worker. One worker, window 2: key A waits
/// 20 ms (on the test timer thread), then key B spins 300 ms on the worker, and a third
/// submission blocks until A's credit comes back. Timings are compared with B's end only,
/// with a margin of 100 ms against the 280 ms a finishing waker leaves, so a loaded
/// machine delays both sides alike.
#[test]
fn a_waiting_keys_last_message_ends_while_its_worker_runs_a_long_turn() {
    const WAIT: Duration = Duration::from_millis(20);
    const SPIN: Duration = Duration::from_millis(300);
    const MARGIN: Duration = Duration::from_millis(100);
    for id in per_key_mailboxes() {
        let f = Fixture::new(id, StrategyConfig { max_in_flight: 2, ..config(1) });
        let mut seq = Sequencer::default();
        let (waiting, busy, late) = (key(1), key(2), key(3));
        f.submit(seq.next(waiting, Job::Wait { ns: WAIT.as_nanos() as u32 }));
        f.wait_started(1);
        f.submit(seq.next(busy, Job::Spin { ns: SPIN.as_nanos() as u32 }));
        f.wait_started(2);
        f.submit(seq.next(late, Job::Noop)); // blocks until a message returns its credit
        let admitted = Instant::now();
        f.assert_ordered("a waiting key beside a long synchronous turn");
        let end_of = |k: Key| {
            let end = f.log.with_log(|log| log.runs_of(k).filter_map(|run| run.ended).max());
            end.unwrap_or_else(|| panic!("{id}: {k:?} never ended"))
        };
        let (waiting_end, busy_end) = (end_of(waiting), end_of(busy));
        if WAKER_FINISHES.contains(&id) {
            assert!(
                waiting_end + MARGIN < busy_end,
                "{id}: the waiting message ended {:?} before the busy turn did, needed {MARGIN:?}",
                busy_end.saturating_duration_since(waiting_end)
            );
            assert!(
                admitted + MARGIN < busy_end,
                "{id}: its credit came back {:?} before the busy turn ended, needed {MARGIN:?}",
                busy_end.saturating_duration_since(admitted)
            );
        } else {
            assert!(
                waiting_end > busy_end,
                "{id}: a woken step was polled off the runtime's threads"
            );
        }
        f.assert_mailboxes_retired("after a wait beside a long turn");
        f.close();
    }
}

// ---------------------------------------------------------------------------------------
// keyed-mailbox specifics (behaviour 9, affinity)
// ---------------------------------------------------------------------------------------

/// The strategies that promise fair rounds of `throughput` messages in FIFO order.
const FAIR: [StrategyId; 2] = [StrategyId::KeyedMailbox, StrategyId::Hybrid];

/// The strategies that promise affinity of a mailbox to one worker for its life (`hybrid`
/// moves a queued mailbox to a worker that runs dry).
const PINNED: [StrategyId; 1] = [StrategyId::KeyedMailbox];

/// Behaviour 9: one worker, throughput 4: 100 hot messages then 1 cold: cold runs 5th and
/// hot stays in order. The worker is first held by a gated message of a third key, so all
/// 101 are queued before any runs.
#[test]
fn fair_rounds_run_a_cold_key_fifth_behind_a_hot_one() {
    for id in FAIR {
        let f = Fixture::new(id, StrategyConfig { throughput: 4, ..config(1) });
        let mut seq = Sequencer::default();
        let (blocker, hot, cold) = (key(0), key(1), key(2));
        f.submit(seq.next(blocker, block_on_gate(1)));
        f.wait_started(1);
        f.submit_all(seq.run_of(hot, 100, |_| Job::Noop));
        f.submit(seq.next(cold, Job::Noop));
        f.gates.open(1);
        f.assert_ordered("100 hot then 1 cold, throughput 4");
        let position = f.log.with_log(|log| {
            log.runs().iter().filter(|run| run.key != blocker).position(|run| run.key == cold)
        });
        assert_eq!(position, Some(4), "{id}: the cold key must run 5th (0-based position 4)");
        f.close();
    }
}

/// Affinity: while a mailbox lives (kept alive by a gated first message while the rest of
/// its messages, some pending, are queued), all its messages run on one worker thread,
/// even with 4 workers busy with other keys.
#[test]
fn a_live_mailbox_runs_all_its_messages_on_one_thread() {
    for id in PINNED {
        let f = Fixture::new(id, config(4));
        let mut seq = Sequencer::default();
        let mut rng = Rng::new(7);
        let pinned = key(1_000);
        f.submit(seq.next(pinned, pend_on_gate(1)));
        let others: Vec<Key> = (0..40).map(key).collect();
        let background = seq.shuffled(&mut rng, &others, 10, |rng| random_job(rng, 0.3, 50, 300));
        for (i, message) in background.into_iter().enumerate() {
            f.submit(message);
            if i % 5 == 0 {
                f.submit(seq.next(pinned, random_job(&mut rng, 0.5, 50, 300)));
            }
        }
        f.gates.open(1);
        f.assert_ordered("a pinned mailbox among 40 busy keys");
        let pinned_threads: HashSet<_> =
            f.log.with_log(|log| log.runs_of(pinned).map(|run| run.thread).collect());
        assert_eq!(pinned_threads.len(), 1, "{id}: one mailbox's messages ran on several threads");
        assert!(f.handler_threads().len() > 1, "{id}: only one worker ever ran: affinity untested");
        f.close();
    }
}

/// `hybrid`'s take: with round-robin binding, key 2's mailbox is bound to worker 0, queued
/// behind key 0's gated message there, while worker 1 finishes key 1's one message and runs
/// dry. `hybrid`'s worker 1 takes key 2 and runs it while the gate is shut (one take
/// counted); `keyed-mailbox` leaves it on worker 0 until the gate opens, and its worker 1
/// parks beside it (a park while queued, counted).
#[test]
fn a_dry_worker_takes_a_mailbox_queued_behind_a_long_turn_in_hybrid_only() {
    for id in [StrategyId::Hybrid, StrategyId::KeyedMailbox] {
        // No idle spin: a worker with nothing to do parks at once, and only a push to its
        // own queue wakes it, so no worker is awake to take what this test places.
        let config = StrategyConfig { binding: Binding::RoundRobin, idle_spin_us: 0, ..config(2) };
        let f = Fixture::new(id, config);
        // Both workers park as soon as they start (microseconds); this is ample.
        std::thread::sleep(Duration::from_millis(100));
        assert!(f.strategy().count_events(true), "{id} counts its events");
        let mut seq = Sequencer::default();
        let (long, quick, queued) = (key(0), key(1), key(2));
        // Each waits for the one before to start, so that no worker takes it first.
        f.submit(seq.next(long, block_on_gate(1)));
        f.wait_started(1);
        f.submit(seq.next(quick, block_on_gate(2)));
        f.wait_started(2);
        f.submit(seq.next(queued, Job::Noop));
        // Worker 1 runs dry only now, with key 2 queued on worker 0.
        f.gates.open(2);
        let ran_queued = |f: &Fixture| f.log.with_log(|log| log.runs_of(queued).count() > 0);
        let deadline = Instant::now() + Duration::from_secs(2);
        while !ran_queued(&f) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let taken = ran_queued(&f);
        // Read while the gate is shut: worker 1 either took key 2 or parked beside it.
        let events = f.strategy().stats().events;
        f.gates.open(1);
        f.assert_ordered("a queued mailbox behind a gated turn");
        if id == StrategyId::Hybrid {
            assert_eq!(events.takes, Some(1), "{id}: the take is counted");
        } else {
            assert_eq!(events.takes, None, "{id} never takes");
            let parked = events.parked_while_queued.expect("keyed-mailbox sees its parks");
            assert!(parked >= 1, "{id}: worker 1 parked beside a queued mailbox: {events:?}");
        }
        assert_eq!(
            taken,
            id == StrategyId::Hybrid,
            "{id}: ran the queued key while the gate was shut"
        );
        if taken {
            let thread_of =
                |k: Key| f.log.with_log(|log| log.runs_of(k).map(|run| run.thread).next());
            assert_ne!(thread_of(queued), thread_of(long), "{id}: taken by the other worker");
        }
        f.close();
    }
}

/// The binding ablation changes only where a new mailbox goes: `keyed-mailbox` with
/// round-robin binding keeps every key's order, runs a live mailbox on one thread, and
/// still uses all its workers.
#[test]
fn keyed_mailbox_with_round_robin_binding_keeps_order_and_affinity() {
    let id = StrategyId::KeyedMailbox;
    let f = Fixture::new(id, StrategyConfig { binding: Binding::RoundRobin, ..config(3) });
    let mut seq = Sequencer::default();
    let mut rng = Rng::new(31);
    let pinned = key(1_000);
    f.submit(seq.next(pinned, pend_on_gate(1)));
    let others: Vec<Key> = (0..60).map(key).collect();
    let background = seq.shuffled(&mut rng, &others, 10, |rng| random_job(rng, 0.3, 5, 100));
    for (i, message) in background.into_iter().enumerate() {
        f.submit(message);
        if i % 7 == 0 {
            f.submit(seq.next(pinned, random_job(&mut rng, 0.5, 5, 100)));
        }
    }
    f.gates.open(1);
    f.assert_ordered("round-robin binding");
    f.assert_mailboxes_retired("round-robin binding");
    let pinned_threads: HashSet<_> =
        f.log.with_log(|log| log.runs_of(pinned).map(|run| run.thread).collect());
    assert_eq!(pinned_threads.len(), 1, "one mailbox's messages ran on several threads");
    assert_eq!(f.handler_threads().len(), 3, "round-robin binding left a worker unused");
    f.close();
}

// ---------------------------------------------------------------------------------------
// Event counts (the cost breakdown)
// ---------------------------------------------------------------------------------------

/// Counting is off until asked for and counts only while on; each strategy reports the
/// events it can see and `None` for the rest. With one worker, 500 keys of one message each
/// and the submissions spaced so that each key's mailbox retires before the next key
/// arrives, a mailbox strategy activates and retires exactly one mailbox per key, and every
/// strategy with a queue hands every message over at least once.
#[test]
fn event_counts_are_off_until_asked_and_count_what_each_strategy_sees() {
    const KEYS: u64 = 500;
    for &id in StrategyId::ALL {
        let f = Fixture::new(id, StrategyConfig { idle_spin_us: 0, ..config(1) });
        let mut seq = Sequencer::default();
        f.submit_all((0..50).map(|k| seq.next(key(k), Job::Noop)));
        f.drain();
        let off = f.strategy().stats().events;
        let zero_or_none = |count: Option<u64>| count.is_none_or(|count| count == 0);
        assert!(
            [off.wakeups, off.parks, off.activations, off.retirements, off.hops]
                .into_iter()
                .all(zero_or_none),
            "{id}: counted while off: {off:?}"
        );
        let counts = f.strategy().count_events(true);
        assert!(counts, "{id}: every built-in strategy counts something");
        for k in 0..KEYS {
            f.submit(seq.next(key(1_000 + k), Job::Noop));
            f.drain();
        }
        f.strategy().count_events(false);
        let on = f.strategy().stats().events;
        f.submit_all((0..50).map(|k| seq.next(key(5_000 + k), Job::Noop)));
        f.assert_contract("counted, then not");
        assert_eq!(f.strategy().stats().events, on, "{id}: counted after counting stopped");
        let descriptor = id.descriptor();
        if has_mailboxes(id) {
            assert_eq!((on.activations, on.retirements), (Some(KEYS), Some(KEYS)), "{id}: {on:?}");
        } else {
            assert_eq!((on.activations, on.retirements), (None, None), "{id}: {on:?}");
        }
        let hops = on.hops.expect("every strategy counts its hand-offs");
        if descriptor.runs_on_caller() {
            assert_eq!(hops, 0, "{id}: runs on the caller, hands nothing over");
        } else {
            assert!(hops >= KEYS, "{id}: {hops} hops for {KEYS} messages");
        }
        let parks_seen =
            matches!(id, StrategyId::KeyedMailbox | StrategyId::Hybrid | StrategyId::WorkStealing);
        assert_eq!(on.parks.is_some(), parks_seen, "{id}: {on:?}");
        assert_eq!(on.wakeups.is_some(), parks_seen, "{id}: {on:?}");
        if parks_seen {
            // One worker that parks at once, a drain between keys: it goes to sleep between
            // messages, and a submission that finds it asleep wakes it.
            let (parks, wakeups) = (on.parks.unwrap(), on.wakeups.unwrap());
            assert!(parks >= 1 && wakeups >= 1, "{id}: {on:?}");
        }
        f.close();
    }
}
