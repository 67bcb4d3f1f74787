//! Fault tests: handlers that panic, pending steps that never complete, a closed strategy
//! that keeps being fed, and the extreme settings (a window of 1, one message per turn,
//! one worker, many more workers than cores).
//!
//! Every case runs for every strategy it applies to (a skipped one is named, with the
//! reason) and checks that nothing is lost silently: each submitted message is completed,
//! failed, discarded, abandoned or handed back in `SubmitError::Closed`, and the strategy's
//! counters agree, message for message, with what the handler saw ([`Ledger`]).
//!
//! Not repeated from the contract suite (`strategies::conformance::check`, run on every
//! strategy by `conformance.rs`): panics in the call and in a step's poll on two workers
//! (its panics check), a forced close with blocked, pending and queued messages (its force
//! close check), a late submission after each kind of close (its drain and close, and
//! force close checks), and a window of 8 (its window check); nor from `conformance.rs`:
//! close racing submitters, and a window of 16.

mod common;

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use strategies::{ForcedClose, Job, Key, Message, StrategyConfig, StrategyId, SubmitError};

use common::*;

/// The longest a forced close may take with steps that never complete: it must abandon
/// them, not wait for them.
const FORCE_CLOSE_LIMIT: Duration = Duration::from_secs(10);

/// A gate no test opens before the strategy is closed.
const NEVER: u32 = 99;

/// `force_close` run on a helper thread; fails the test if it has not returned within
/// [`FORCE_CLOSE_LIMIT`].
#[track_caller]
fn force_close_within_limit(f: &Fixture) -> ForcedClose {
    let strategy = f.shared();
    within(&format!("{}: force_close", f.id), FORCE_CLOSE_LIMIT, move || strategy.force_close())
}

// ---------------------------------------------------------------------------------------
// Handlers that panic
// ---------------------------------------------------------------------------------------

/// Messages per key in the panic test.
const STREAM: usize = 12;

/// The job at `position` of a key's stream of [`STREAM`] messages. The key's `pattern`
/// places the panics: 0, the first message (a new mailbox or group run starts with a
/// failure); 1, the last one, panicking at its first poll (the key retires after a
/// failure); 2, four in a row of every kind; 3, every other message. The rest alternate
/// synchronous work and short waits.
fn panic_pattern(pattern: u64, position: usize) -> Job {
    let kinds = [Job::Panic, panic_when_polled(), panic_on_first_poll()];
    match (pattern, position) {
        (0, 0) => Job::Panic,
        (1, p) if p == STREAM - 1 => panic_on_first_poll(),
        (2, 4) | (2, 7) => Job::Panic,
        (2, 5) => panic_when_polled(),
        (2, 6) => panic_on_first_poll(),
        (3, p) if p % 2 == 1 => kinds[p / 2 % 3],
        (_, p) if p % 3 == 0 => Job::Wait { ns: 50_000 },
        _ => Job::Spin { ns: 2_000 },
    }
}

/// Panics at every position of a key's stream (first, last, back to back, every other),
/// synchronous and inside pending steps (at the first poll and after a wake), from two
/// submitting threads, on ONE worker with a window of 16 refilled one credit at a time:
/// a lost worker or a leaked credit would stop everything. The failed count is exact,
/// every other message of the same keys runs in order, no thread is started to replace
/// one, every mailbox is retired, and the strategy runs the next messages as usual.
#[test]
fn panics_anywhere_in_a_key_stream_are_contained() {
    const SUBMITTERS: u64 = 2;
    const KEYS: u64 = 8; // per submitter, two of each pattern
    for id in all() {
        let workers = 1;
        let config = StrategyConfig { max_in_flight: 16, throughput: 2, ..config(workers) };
        let f = Fixture::new(id, config);
        // `per-type-pool` starts its pool on its type's first message.
        f.submit(Sequencer::default().next(key(999), Job::Noop));
        f.drain();
        let threads_before = f.strategy().threads_started();
        assert_eq!(threads_before, expected_threads(id, workers, 1), "{id}: threads");

        let mut sequencers: Vec<Sequencer> =
            (0..SUBMITTERS).map(|_| Sequencer::default()).collect();
        let planned: u64 = thread::scope(|scope| {
            let running: Vec<_> = sequencers
                .iter_mut()
                .zip(0..)
                .map(|(seq, submitter)| {
                    let f = &f;
                    scope.spawn(move || {
                        let mut planned = 0;
                        for position in 0..STREAM {
                            for k in 0..KEYS {
                                let job = panic_pattern(k % 4, position);
                                planned += u64::from(panics(job));
                                f.submit(seq.next(key(submitter * 100 + k), job));
                            }
                        }
                        planned
                    })
                })
                .collect();
            running.into_iter().map(|submitter| submitter.join().unwrap()).sum()
        });
        let total = 1 + SUBMITTERS * KEYS * STREAM as u64;
        f.assert_contract("panics at every position, two submitters, one worker");
        let ledger = f.ledger();
        ledger.assert_balanced(&format!("{id}: panics at every position"));
        assert_eq!(ledger.failed, planned, "{id}: failed count");
        assert_eq!(ledger.completed, total - planned, "{id}: completed count");
        assert_eq!((ledger.discarded, ledger.abandoned), (0, 0), "{id}: nothing was closed");
        f.assert_mailboxes_retired("after the panics");
        assert_eq!(f.strategy().threads_started(), threads_before, "{id}: a thread was added");
        if !id.descriptor().runs_on_caller() {
            let observed = f.handler_threads().len();
            assert_eq!(observed, workers, "{id}: handlers ran on {observed} threads");
        }

        // Still usable: every key gets three more ordinary messages.
        for (seq, submitter) in sequencers.iter_mut().zip(0..) {
            for k in 0..KEYS {
                f.submit_all(seq.run_of(key(submitter * 100 + k), 3, |i| panic_pattern(9, i)));
            }
        }
        f.assert_contract("ordinary messages after the panics");
        let ledger = f.ledger();
        ledger.assert_balanced(&format!("{id}: after the panics"));
        assert_eq!(ledger.failed, planned, "{id}: failures without a panic");
        assert_eq!(ledger.completed, total + SUBMITTERS * KEYS * 3 - planned, "{id}");
        f.assert_mailboxes_retired("after the ordinary messages");
        assert_eq!(f.strategy().threads_started(), threads_before, "{id}: a thread was added");
        f.close();
    }
}

// ---------------------------------------------------------------------------------------
// Pending steps that never complete
// ---------------------------------------------------------------------------------------

/// Messages queued behind each stuck step.
const BEHIND: usize = 4;

/// Three keys whose first step never completes (`stuck`), [`BEHIND`] messages queued
/// behind each, and ten keys of ordinary messages that finish before the close. Returns
/// (stuck keys, messages of the free keys).
fn stuck_behind_and_free(f: &Fixture, stuck_job: Job) -> (Vec<Key>, usize) {
    let mut seq = Sequencer::default();
    let stuck: Vec<Key> = (1_000..1_003).map(key).collect();
    for &k in &stuck {
        f.submit(seq.next(k, stuck_job));
    }
    for &k in &stuck {
        let behind =
            |i: usize| if i.is_multiple_of(2) { Job::Noop } else { Job::Wait { ns: 20_000 } };
        f.submit_all(seq.run_of(k, BEHIND, behind));
    }
    for _ in 0..3 {
        f.submit_all((0..10).map(|k| seq.next(key(k), Job::Spin { ns: 5_000 })));
    }
    (stuck, 30)
}

/// Runs the forced-close check with steps that never complete (`stuck_job`) on the
/// threaded strategy `id`: `force_close` returns within [`FORCE_CLOSE_LIMIT`], abandons
/// exactly the stuck steps and discards exactly the messages queued behind them (none for
/// the unordered `thread-pool`, which runs them beside the stuck ones), the counters match
/// what ran, and nothing more runs after it.
fn check_force_close_with_stuck_steps(id: StrategyId, stuck_job: Job) {
    let f = Fixture::new(id, StrategyConfig { groups_per_worker: DISTINCT_GROUPS, ..config(3) });
    let (stuck, free) = stuck_behind_and_free(&f, stuck_job);
    let is_stuck = |k: Key| k.aggregate_id >= 1_000;
    // Without per-key order, the messages behind a stuck step run (and finish) anyway.
    let behind_run = if id.is_ordered() { 0 } else { stuck.len() * BEHIND };
    f.wait_until("the free keys to finish and the stuck steps to start", |log| {
        log.ended_where(|k| !is_stuck(k)) >= free
            && log.started_where(is_stuck) >= stuck.len() + behind_run
            && log.ended_where(is_stuck) >= behind_run
    });
    let forced = force_close_within_limit(&f);
    let expected = ForcedClose {
        discarded: (stuck.len() * BEHIND - behind_run) as u64,
        abandoned: stuck.len() as u64,
    };
    assert_eq!(forced, expected, "{id}: (discarded, abandoned) by the forced close");
    let ledger = f.ledger();
    ledger.assert_balanced(&format!("{id}: forced close with stuck steps"));
    assert_eq!((ledger.discarded, ledger.abandoned), (forced.discarded, forced.abandoned));
    assert_eq!(ledger.completed, (free + behind_run) as u64, "{id}: completed");
    assert_eq!(ledger.failed, 0, "{id}");
    if id.is_ordered() {
        assert_eq!(ledger.report.order_faults(), 0, "{id}: {}", ledger.report);
    }
    assert_eq!(f.force_close(), ForcedClose::default(), "{id}: a second force_close");
    f.close(); // harmless after a forced close
    f.gates.open_all(); // late wakes of abandoned steps run nothing
    thread::sleep(GRACE);
    let started = f.log.started();
    assert_eq!(started, free + behind_run + stuck.len(), "{id}: something ran after the close");
}

/// `force_close` with steps that wait for a wake that never comes (their futures hold a
/// waker nobody calls before the close). The strategies that run on the caller (`inline`)
/// are checked on their own below: they queue nothing, and their stuck steps hold the
/// submitting threads.
#[test]
fn force_close_returns_with_steps_that_are_never_woken() {
    check_concurrently(threaded(), |id| {
        check_force_close_with_stuck_steps(id, pend_on_gate(NEVER))
    });
}

/// `force_close` with steps that never complete but wake themselves at every poll (a loop
/// of `yield_now`): always ready to be polled again, never done. A mailbox runner stores
/// such a step and requeues its mailbox behind the others, so the step holds no worker,
/// the other keys finish, and the forced close abandons it.
///
/// Not `rayon`: its workers run the jobs they spawn themselves before the jobs injected
/// from outside the pool, so a mailbox that requeues itself for ever keeps its worker and
/// with three such steps on three workers the other keys never run (rayon's scheduling,
/// not the mailboxes'). Its forced close still abandons them: the test below.
#[test]
fn force_close_returns_with_steps_that_wake_themselves_for_ever() {
    let strategies = threaded().into_iter().filter(|&id| id != StrategyId::Rayon);
    check_concurrently(strategies, |id| {
        check_force_close_with_stuck_steps(id, yield_forever());
    });
}

/// One self-waking step on two workers, alone.
#[test]
fn force_close_abandons_a_lone_self_waking_step() {
    check_concurrently(threaded(), |id| {
        let f = Fixture::new(id, config(2));
        f.submit(Sequencer::default().next(key(1), yield_forever()));
        f.wait_started(1);
        let forced = force_close_within_limit(&f);
        assert_eq!(forced, ForcedClose { discarded: 0, abandoned: 1 }, "{id}");
    });
}

/// A strategy that runs on the caller (`inline`) runs each message inside its `submit`, so
/// a step that never completes holds the submitting thread itself: a forced close (from
/// another thread) abandons each such step, whether it is never woken or wakes itself for
/// ever, and each `submit` returns `Ok` (the message was admitted, then abandoned).
#[test]
fn force_close_frees_submitters_stuck_inside_submit_on_steps_that_never_complete() {
    check_concurrently(on_caller(), |id| {
        let f = Arc::new(Fixture::new(id, config(1)));
        let jobs = [pend_on_gate(NEVER), pend_on_gate(NEVER), yield_forever()];
        let submitters: Vec<_> = jobs
            .into_iter()
            .zip(0..)
            .map(|(job, k)| {
                let f = Arc::clone(&f);
                let message = Sequencer::default().next(key(k), job);
                thread::spawn(move || f.try_submit(message))
            })
            .collect();
        f.wait_started(jobs.len());
        let forced = force_close_within_limit(&f);
        assert_eq!(forced, ForcedClose { discarded: 0, abandoned: jobs.len() as u64 }, "{id}");
        for submitter in submitters {
            let result =
                within(&format!("{id}: a stuck submit"), PATIENCE, move || submitter.join());
            assert!(
                matches!(result, Ok(Ok(()))),
                "{id}: the stuck message was admitted: {result:?}"
            );
        }
        let ledger = f.ledger();
        ledger.assert_balanced(&format!("{id}: forced close of stuck submitters"));
        assert_eq!((ledger.completed, ledger.abandoned), (0, jobs.len() as u64), "{id}");
    });
}

/// `Stats::live_mailboxes` is zero as soon as `drain` returns: a runner returns the window
/// credits of a turn's messages only after it retired the emptied mailbox.
#[test]
fn live_mailboxes_is_zero_as_soon_as_drain_returns() {
    check_concurrently(per_key_mailboxes(), |id| {
        let f = Fixture::new(id, config(2));
        let mut seq = Sequencer::default();
        for round in 0..20_000u64 {
            f.submit(seq.next(key(round % 3), Job::Noop));
            f.strategy().drain();
            let live = f.strategy().stats().live_mailboxes;
            assert_eq!(live, Some(0), "{id}: round {round}: live mailboxes right after drain");
        }
    });
}

/// A forced close leaves no mailbox behind: a key whose pending step was abandoned has no
/// unfinished message left, so its mailbox is retired like any other.
#[test]
fn force_close_leaves_no_mailbox_behind() {
    check_concurrently(per_key_mailboxes(), |id| {
        let f = Fixture::new(id, config(2));
        let (stuck, free) = stuck_behind_and_free(&f, pend_on_gate(NEVER));
        f.wait_until("the free keys to finish and the stuck steps to start", |log| {
            log.ended() >= free && log.started() >= free + stuck.len()
        });
        let forced = force_close_within_limit(&f);
        assert_eq!(forced.abandoned, stuck.len() as u64, "{id}");
        f.assert_mailboxes_retired("after a forced close");
    });
}

// ---------------------------------------------------------------------------------------
// A closed strategy that keeps being fed
// ---------------------------------------------------------------------------------------

/// How a test closes its strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Close {
    Graceful,
    Forced,
}

/// After `close` (and, separately, after `force_close`, which here abandons a step and
/// discards the messages queued behind it), 4 threads x 250 further submissions: every
/// one returns `Err(SubmitError::Closed)` with the very message submitted, nothing runs
/// after the close returned (the abandoned step's late wake included), and the counters
/// stay where the close left them.
#[test]
fn a_closed_strategy_hands_back_every_later_message() {
    const SUBMITTERS: u64 = 4;
    const PER_SUBMITTER: usize = 250;
    for close in [Close::Graceful, Close::Forced] {
        check_concurrently(all(), |id| {
            let f = Fixture::new(id, config(2));
            let mut seq = Sequencer::default();
            f.submit_all((0..40).map(|i| seq.next(key(i % 8), Job::Wait { ns: 20_000 })));
            match close {
                Close::Graceful => f.close(),
                Close::Forced if id.descriptor().runs_on_caller() => {
                    // Every message ran inside its submit: nothing is left to abandon.
                    assert_eq!(f.force_close(), ForcedClose::default(), "{id}");
                }
                Close::Forced => {
                    f.drain();
                    f.submit(seq.next(key(100), pend_on_gate(NEVER)));
                    f.submit_all(seq.run_of(key(100), 5, |_| Job::Noop));
                    // The first message of the key (`thread-pool` may start a later one first).
                    f.wait_until("the stuck step to start", |log| {
                        log.runs_of(key(100)).any(|run| run.seq == 0)
                    });
                    let forced = f.force_close();
                    assert_eq!(forced.abandoned, 1, "{id}: {forced:?}");
                }
            }
            let (started, stats) = (f.log.started(), f.strategy().stats());

            thread::scope(|scope| {
                for submitter in 0..SUBMITTERS {
                    let f = &f;
                    scope.spawn(move || {
                        let mut seq = Sequencer::default();
                        for i in 0..PER_SUBMITTER {
                            let k = key(1_000 + submitter * 10 + i as u64 % 10);
                            let message = seq.next(k, Job::Noop);
                            // `try_submit` checks that a refused message is the one submitted.
                            let result = f.try_submit(message);
                            assert!(
                                matches!(result, Err(SubmitError::Closed(back)) if back == message),
                                "{id}: {close:?}: submit after the close returned {result:?}"
                            );
                        }
                    });
                }
            });
            f.gates.open(NEVER); // the abandoned step's waker fires now, after the close
            thread::sleep(GRACE);
            let context = format!("{id}: after {close:?} close");
            assert_eq!(f.log.started(), started, "{context}: a message ran");
            assert_eq!(f.strategy().stats(), stats, "{context}: counters moved");
            let ledger = f.ledger();
            ledger.assert_balanced(&context);
            assert_eq!(ledger.handed_back, SUBMITTERS * PER_SUBMITTER as u64, "{context}");
            if id.is_ordered() {
                assert_eq!(ledger.report.order_faults(), 0, "{context}: {}", ledger.report);
            }
        });
    }
}

/// Submitters blocked on a full window (4 messages pending on a gate) are handed their
/// messages back as soon as a close begins, without waiting for the window to drain: a
/// graceful close then waits for the 4 admitted messages to finish and a forced one
/// abandons them. Each window-filling message is submitted from its own thread, so this
/// holds for a strategy that runs on the caller too (`inline`: its submitter runs the
/// message and waits inside `submit`).
#[test]
fn a_close_hands_back_submitters_blocked_on_a_full_window_at_once() {
    const WINDOW: usize = 4;
    const BLOCKED: u64 = 3;
    for close in [Close::Graceful, Close::Forced] {
        check_concurrently(all(), |id| {
            let config = StrategyConfig {
                max_in_flight: WINDOW,
                groups_per_worker: DISTINCT_GROUPS,
                ..config(2)
            };
            let f = Arc::new(Fixture::new(id, config));
            let submit_from_a_thread = |message: Message| {
                let f = Arc::clone(&f);
                thread::spawn(move || f.try_submit(message))
            };
            let fillers: Vec<_> = (0..WINDOW as u64)
                .map(|k| submit_from_a_thread(Sequencer::default().next(key(k), pend_on_gate(1))))
                .collect();
            f.wait_started(WINDOW);
            let blocked: Vec<_> = (0..BLOCKED)
                .map(|k| submit_from_a_thread(Sequencer::default().next(key(10 + k), Job::Noop)))
                .collect();
            thread::sleep(GRACE);
            let context = format!("{id}: {close:?} close");
            assert!(
                blocked.iter().all(|submit| !submit.is_finished()),
                "{context}: a submit returned while the window was full"
            );

            let closer = {
                let strategy = f.shared();
                thread::spawn(move || match close {
                    Close::Graceful => {
                        strategy.close();
                        ForcedClose::default()
                    }
                    Close::Forced => strategy.force_close(),
                })
            };
            for submit in blocked {
                let result = within(&format!("{context}: a blocked submit"), PATIENCE, move || {
                    submit.join().unwrap()
                });
                assert!(
                    matches!(result, Err(SubmitError::Closed(_))),
                    "{context}: a blocked submit returned {result:?}"
                );
            }
            if close == Close::Graceful {
                assert!(!closer.is_finished(), "{context}: close returned with 4 unfinished");
                assert_eq!(f.log.ended(), 0, "{context}: a gated message finished");
                f.gates.open(1);
            }
            let forced = within(&format!("{context}: the close"), PATIENCE, move || closer.join())
                .unwrap_or_else(|_| panic!("{context}: the close panicked"));
            for filler in fillers {
                let result =
                    within(&format!("{context}: a filler"), PATIENCE, move || filler.join());
                assert!(matches!(result, Ok(Ok(()))), "{context}: a filler: {result:?}");
            }
            f.gates.open(1);
            thread::sleep(GRACE);
            let ledger = f.ledger();
            ledger.assert_balanced(&context);
            assert_eq!(ledger.handed_back, BLOCKED, "{context}");
            assert_eq!(f.log.started(), WINDOW, "{context}: a message ran after the close");
            let (completed, abandoned) = match close {
                Close::Graceful => (WINDOW as u64, 0),
                Close::Forced => (0, WINDOW as u64),
            };
            assert_eq!((ledger.completed, ledger.abandoned), (completed, abandoned), "{context}");
            assert_eq!(forced.abandoned, abandoned, "{context}");
        });
    }
}

// ---------------------------------------------------------------------------------------
// Extreme settings
// ---------------------------------------------------------------------------------------

/// The smallest window, one message per turn, one worker, all three at once, and 64
/// workers (many more than cores): with a random mix of synchronous and pending messages
/// over 12 keys of two aggregate types from two submitting threads, order holds, every
/// message completes, the thread count follows the design, and every mailbox is retired.
#[test]
fn extreme_settings_keep_order_and_finish_everything() {
    let settings = [
        ("a window of 1", StrategyConfig { max_in_flight: 1, ..config(2) }),
        ("throughput 1", StrategyConfig { throughput: 1, ..config(2) }),
        ("one worker", config(1)),
        (
            "window 1, throughput 1, one worker",
            StrategyConfig { max_in_flight: 1, throughput: 1, ..config(1) },
        ),
        ("64 workers", config(64)),
    ];
    const PER_KEY: usize = 20;
    const KEYS: u64 = 6; // per submitter
    for (setting, config) in settings {
        for id in all() {
            let f = Fixture::new(id, config);
            thread::scope(|scope| {
                for submitter in 0..2u64 {
                    let f = &f;
                    scope.spawn(move || {
                        let mut rng = Rng::new(400 + submitter);
                        let keys: Vec<Key> = (0..KEYS)
                            .map(|i| Key::new((i % 2) as u32, submitter * 100 + i))
                            .collect();
                        let messages =
                            Sequencer::default().shuffled(&mut rng, &keys, PER_KEY, |rng| {
                                random_job(rng, 0.4, 20, 200)
                            });
                        f.submit_all(messages);
                    });
                }
            });
            f.assert_contract(setting);
            let ledger = f.ledger();
            ledger.assert_balanced(&format!("{id}: {setting}"));
            assert_eq!(ledger.completed, 2 * KEYS * PER_KEY as u64, "{id}: {setting}");
            f.assert_mailboxes_retired(setting);
            let expected = expected_threads(id, config.workers, 2);
            assert_eq!(f.strategy().threads_started(), expected, "{id}: {setting}: threads");
            if !id.descriptor().runs_on_caller() {
                let observed = f.handler_threads().len();
                assert!(observed <= expected, "{id}: {setting}: handlers on {observed} threads");
            }
            if config.max_in_flight == 1 {
                assert_eq!(f.strategy().stats().peak_in_flight, 1, "{id}: {setting}: peak");
            }
            f.close();
        }
    }
}

/// A finished message's window credit comes back before its key's next message ends: with
/// a window of 2, key A's second message blocks until a third message (key B) has been
/// admitted, which needs the credit of A's first. A runner that held the credits of a
/// turn's finished messages until the turn ended would stall admission (here until the
/// handler gives up). Not the strategies that run on the caller (`inline`), which run each
/// message inside `submit`.
#[test]
fn a_finished_message_returns_its_credit_before_the_next_of_its_key_ends() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Condvar, Mutex};
    use std::time::Instant;
    use strategies::{Handler, Outcome};

    /// Key A's second message waits here until the test says B was admitted.
    #[derive(Default)]
    struct AwaitAdmission {
        admitted: Mutex<bool>,
        changed: Condvar,
        saw_it: AtomicBool,
    }
    impl Handler for AwaitAdmission {
        fn handle(&self, message: &Message) -> Outcome {
            if message.job == Job::Custom(1) {
                let deadline = Instant::now() + PATIENCE;
                let mut admitted = lock(&self.admitted);
                while !*admitted && Instant::now() < deadline {
                    admitted = self.changed.wait_timeout(admitted, GRACE).unwrap().0;
                }
                self.saw_it.store(*admitted, Ordering::SeqCst);
            }
            Outcome::Done
        }
    }

    check_concurrently(threaded(), |id| {
        let handler = Arc::new(AwaitAdmission::default());
        let settings = StrategyConfig { max_in_flight: 2, ..config(2) };
        let strategy = id.build(settings, Arc::clone(&handler) as Arc<dyn Handler>).unwrap();
        let (a, b) = (key(1), key(2));
        let message = |key, seq, job| Message { key, seq, intended_ns: 0, job };
        strategy.submit(message(a, 0, Job::Noop)).unwrap();
        strategy.submit(message(a, 1, Job::Custom(1))).unwrap();
        strategy.submit(message(b, 0, Job::Noop)).unwrap(); // needs A0's credit back
        *lock(&handler.admitted) = true;
        handler.changed.notify_all();
        strategy.drain();
        assert!(
            handler.saw_it.load(Ordering::SeqCst),
            "{id}: B was admitted only after A's second message gave up waiting"
        );
        strategy.close();
    });
}

/// Steps whose destructor panics: one that completed (dropped as it ends) and one that
/// never completes (dropped when a forced close abandons it). The panics are contained
/// like a handler's: the key's later messages run, every credit comes back, no mailbox or
/// thread is lost, and the forced close returns.
mod steps_that_panic_when_dropped {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::task::{Context, Poll};

    use strategies::{Handler, Outcome, Strategy};

    use super::*;

    /// `Job::Custom` code: a step ready at its first poll that panics when dropped.
    const ENDS_THEN_PANICS: u32 = 1;
    /// `Job::Custom` code: a step never ready that panics when dropped.
    const STUCK_THEN_PANICS: u32 = 2;

    struct PanicOnDrop {
        ready: bool,
    }

    impl Future for PanicOnDrop {
        type Output = ();

        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            if self.ready {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }
    }

    impl Drop for PanicOnDrop {
        fn drop(&mut self) {
            std::panic::panic_any(PlannedPanic);
        }
    }

    #[derive(Default)]
    struct Handled {
        started: AtomicU64,
        plain: AtomicU64,
    }

    impl Handler for Handled {
        fn handle(&self, message: &Message) -> Outcome {
            self.started.fetch_add(1, Ordering::SeqCst);
            match message.job {
                Job::Custom(ENDS_THEN_PANICS) => {
                    Outcome::Pending(Box::pin(PanicOnDrop { ready: true }))
                }
                Job::Custom(STUCK_THEN_PANICS) => {
                    Outcome::Pending(Box::pin(PanicOnDrop { ready: false }))
                }
                _ => {
                    self.plain.fetch_add(1, Ordering::SeqCst);
                    Outcome::Done
                }
            }
        }
    }

    fn build(id: StrategyId, handler: &Arc<Handled>) -> Arc<dyn Strategy> {
        quiet_planned_panics();
        let handler = Arc::clone(handler) as Arc<dyn Handler>;
        Arc::from(id.build(config(2), handler).unwrap())
    }

    fn expected_mailboxes(id: StrategyId) -> Option<usize> {
        has_mailboxes(id).then_some(0)
    }

    #[test]
    fn a_step_that_panics_when_dropped_after_it_ended_is_contained() {
        check_concurrently(all(), |id| {
            let handler = Arc::new(Handled::default());
            let strategy = build(id, &handler);
            let mut sequencer = Sequencer::default();
            for round in 0..4 {
                for k in 0..3 {
                    let job =
                        if round % 2 == 0 { Job::Custom(ENDS_THEN_PANICS) } else { Job::Noop };
                    strategy.submit(sequencer.next(key(k), job)).unwrap();
                }
            }
            let drained = Arc::clone(&strategy);
            within(&format!("{id}: drain"), PATIENCE, move || drained.drain());
            assert_eq!(handler.started.load(Ordering::SeqCst), 12, "{id}: messages started");
            assert_eq!(handler.plain.load(Ordering::SeqCst), 6, "{id}: plain messages run");
            assert_eq!(strategy.stats().failed, 6, "{id}: destructor panics counted as failures");
            assert_eq!(strategy.stats().live_mailboxes, expected_mailboxes(id), "{id}");
            let threads = expected_threads(id, 2, 1);
            assert_eq!(strategy.threads_started(), threads, "{id}: a thread was replaced");
            strategy.close();
        });
    }

    #[test]
    fn a_forced_close_survives_an_abandoned_step_that_panics_when_dropped() {
        check_concurrently(threaded(), |id| {
            let handler = Arc::new(Handled::default());
            let strategy = build(id, &handler);
            let mut sequencer = Sequencer::default();
            strategy.submit(sequencer.next(key(1), Job::Custom(STUCK_THEN_PANICS))).unwrap();
            let deadline = std::time::Instant::now() + PATIENCE;
            while handler.started.load(Ordering::SeqCst) == 0 {
                assert!(std::time::Instant::now() < deadline, "{id}: the step never started");
                thread::sleep(Duration::from_millis(1));
            }
            let closing = Arc::clone(&strategy);
            let forced = within(&format!("{id}: force_close"), FORCE_CLOSE_LIMIT, move || {
                closing.force_close()
            });
            assert_eq!(forced, ForcedClose { discarded: 0, abandoned: 1 }, "{id}");
            assert_eq!(strategy.stats().live_mailboxes, expected_mailboxes(id), "{id}");
        });
    }
}
