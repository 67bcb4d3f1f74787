//! Re-entrant submissions: a handler that submits into its own strategy (a saga sending a
//! command) never blocks on the window (docs/design.md 3.5, "Back-pressure never blocks a
//! thread"; `strategies/src/executor.rs`, "Re-entrant submissions"). At a full window the
//! submission waits in the admission queue, and finishing messages' credits admit it
//! before any blocked outside submitter gets one.
//!
//! Every scenario runs on a helper thread under a watchdog ([`LIMIT`]), so that a strategy
//! that deadlocks fails the test, naming it, instead of hanging the suite; a submission
//! stuck for [`PATIENCE`] is also ended by the fixture's submit watchdog and reported.

use std::sync::{mpsc, Arc, OnceLock, Weak};
use std::thread;
use std::time::{Duration, Instant};

use strategies::{
    Handler, Job, Key, Message, Outcome, Stats, Strategy, StrategyConfig, StrategyId, SubmitError,
};

use crate::common::*;

/// How long one strategy's scenario may take before the test calls it a deadlock.
const LIMIT: Duration = Duration::from_secs(30);

/// Chains in the chain scenarios, as in the reference test.
const CHAINS: u64 = 100;

/// Messages per chain.
const CHAIN_LENGTH: u32 = 20;

/// Every chain message of [`chain_heads`].
const CHAIN_MESSAGES: usize = CHAINS as usize * CHAIN_LENGTH as usize;

/// The reference test's setting: a window of 4 on 2 workers.
fn window_of_4() -> StrategyConfig {
    StrategyConfig { max_in_flight: 4, ..config(2) }
}

/// The heads of [`CHAINS`] chains of [`CHAIN_LENGTH`] messages, keys from `first_key` on:
/// even chains submit their next message from the handler call, odd ones from the pending
/// step's poll.
fn chain_heads(first_key: u64) -> Vec<Message> {
    (0..CHAINS)
        .map(|c| {
            let job = if c % 2 == 0 { chain(CHAIN_LENGTH) } else { chain_from_step(CHAIN_LENGTH) };
            chain_head(key(first_key + c), job)
        })
        .collect()
}

/// After a chain run (drains first): every accepted message, the handlers' submissions
/// included, ran exactly once (in per-key order where the strategy promises it), `expected`
/// in all; nothing was handed back or stuck; the window held at most 4 admitted messages;
/// and some submissions waited in the admission queue.
#[track_caller]
fn assert_chains_ran(f: &Fixture, expected: usize, context: &str) {
    let id = f.id;
    f.assert_contract(context);
    assert!(
        !f.stalled(),
        "{id}: {context}: a submission was stuck until the watchdog closed the strategy"
    );
    assert!(f.rejected().is_empty(), "{id}: {context}: {} handed back", f.rejected().len());
    assert_eq!(f.log.ended(), expected, "{id}: {context}: messages ended");
    let stats = f.strategy().stats();
    assert!(stats.peak_admission_queue > 0, "{id}: {context}: nothing queued: {stats:?}");
    assert!(stats.admission_queued > 0, "{id}: {context}: nothing queued: {stats:?}");
    assert!(stats.peak_in_flight <= 4, "{id}: {context}: window exceeded: {stats:?}");
    let running = f.log.with_log(Log::peak_running);
    assert!(running <= 4, "{id}: {context}: {running} handlers in progress at once, window 4");
    f.assert_mailboxes_retired(context);
}

/// The chains of the reference test beside an outside producer thread that keeps
/// submitting 1,000 independent messages (50 keys, a random sync/async mix) into the full
/// window: the producer blocks, the handlers never do, and everything completes in per-key
/// order.
#[test]
fn chains_beside_an_outside_producer_at_a_full_window_all_complete_in_order() {
    const OUTSIDE_KEYS: u64 = 50;
    const OUTSIDE_PER_KEY: usize = 20;
    for id in threaded() {
        let what = format!("{id}: 100 chains beside an outside producer, window 4");
        within(&what, LIMIT, move || {
            let f = Fixture::new(id, window_of_4());
            let keys: Vec<Key> = (0..OUTSIDE_KEYS).map(|i| key(10_000 + i)).collect();
            let mut rng = Rng::new(44);
            let outside = Sequencer::default()
                .shuffled(&mut rng, &keys, OUTSIDE_PER_KEY, |rng| random_job(rng, 0.2, 5, 50));
            thread::scope(|scope| {
                let f = &f;
                scope.spawn(move || f.submit_all(outside));
                f.submit_all(chain_heads(0));
            });
            let expected = CHAIN_MESSAGES + OUTSIDE_KEYS as usize * OUTSIDE_PER_KEY;
            assert_chains_ran(&f, expected, "100 chains beside an outside producer");
            f.close();
        });
    }
}

/// Waits until the strategy's counters satisfy `ready`; fails naming `what` after
/// [`PATIENCE`].
#[track_caller]
fn wait_for_stats(f: &Fixture, what: &str, ready: impl Fn(&Stats) -> bool) -> Stats {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let stats = f.strategy().stats();
        if ready(&stats) {
            return stats;
        }
        assert!(Instant::now() < deadline, "{}: timed out waiting for {what}: {stats:?}", f.id);
        thread::sleep(Duration::from_millis(1));
    }
}

/// One worker, window 4: a blocker holds the worker while three chain heads fill the
/// window; each chain message submits its next one, then holds its credit pending on the
/// first gate. Once the blocker is released its credit goes to the first head's
/// submission, and the other heads' submissions wait in the admission queue, where nothing
/// can admit them until that gate opens. Returns how many messages the queue holds then
/// (at least 2).
fn fill_the_admission_queue(f: &Fixture) -> u64 {
    let mut seq = Sequencer::default();
    f.submit(seq.next(key(900), block_on_gate(2)));
    f.wait_started(1);
    f.submit_all((0..3).map(|c| chain_head(key(c), chain_then_pend(CHAIN_LENGTH, 1))));
    f.gates.open(2);
    let stats = wait_for_stats(f, "2 submissions in the admission queue", |stats| {
        stats.admission_queued >= 2
    });
    // No credit has come back since the blocker's: every queued message is still queued.
    stats.admission_queued
}

/// Submits a probe from this thread: it blocks on the full window until a close that is
/// under way closes admission, which hands it back.
#[track_caller]
fn probe_until_closed(f: &Fixture) {
    let probe = Message { key: key(901), seq: 0, intended_ns: 0, job: Job::Noop };
    assert!(
        matches!(f.try_submit(probe), Err(SubmitError::Closed(back)) if back == probe),
        "{}: a probe submitted while the close was under way was not handed back",
        f.id
    );
}

/// A graceful close while handlers' submissions wait in the admission queue: they were
/// accepted, so they run before `close` returns (none stranded), and the submissions those
/// messages make once the close began are handed back; nothing handed back runs.
#[test]
fn a_close_runs_the_queued_submissions_and_hands_back_later_ones() {
    for id in threaded() {
        within(&format!("{id}: close with queued submissions"), LIMIT, move || {
            let f = Fixture::new(id, StrategyConfig { max_in_flight: 4, ..config(1) });
            let queued = fill_the_admission_queue(&f);
            let strategy = f.shared();
            let closer = thread::spawn(move || strategy.close());
            probe_until_closed(&f);
            f.gates.open(1);
            closer.join().unwrap_or_else(|_| panic!("{id}: close panicked"));

            let context = "close with queued submissions";
            f.check_contract(context);
            assert_eq!(f.log.ended(), f.accepted().len(), "{id}: close returned early");
            let ledger = f.ledger();
            ledger.assert_balanced(&format!("{id}: {context}"));
            assert_eq!((ledger.discarded, ledger.abandoned), (0, 0), "{id}: a graceful close");
            let stats = f.strategy().stats();
            assert_eq!(stats.admission_queued, queued, "{id}: queued after the close began");
            let handed_back = f.rejected().iter().filter(|message| message.key != key(901)).count();
            assert!(
                handed_back as u64 >= queued,
                "{id}: each of the {queued} queued messages ran after the close began and \
                 submitted its next, which must be handed back; {handed_back} were"
            );
            f.assert_mailboxes_retired(context);
        });
    }
}

/// A forced close while handlers' submissions wait in the admission queue: the queued
/// messages are discarded and counted in `ForcedClose::discarded` (they never ran), the
/// pending chain steps are abandoned, and every submitted message is accounted for once.
#[test]
fn a_forced_close_discards_the_queued_submissions_and_counts_them() {
    for id in threaded() {
        within(&format!("{id}: forced close with queued submissions"), LIMIT, move || {
            let f = Fixture::new(id, StrategyConfig { max_in_flight: 4, ..config(1) });
            let queued = fill_the_admission_queue(&f);
            let strategy = f.shared();
            let closer = thread::spawn(move || strategy.force_close());
            probe_until_closed(&f);
            let forced = closer.join().unwrap_or_else(|_| panic!("{id}: force_close panicked"));

            let context = format!("{id}: forced close with queued submissions");
            f.ledger().assert_balanced(&context);
            assert!(
                forced.discarded >= queued,
                "{context}: the {queued} queued messages must count as discarded: {forced:?}"
            );
            assert!(forced.abandoned >= 3, "{context}: the pending chain steps: {forced:?}");
            let stats = f.strategy().stats();
            assert_eq!((stats.discarded, stats.abandoned), (forced.discarded, forced.abandoned));
            f.assert_mailboxes_retired("forced close with queued submissions");
        });
    }
}

/// `inline` runs a handler's submission on the submitting thread: with a free credit inside
/// the handler call, at a full window after the handler's message finished, from the
/// admission queue. The 100 chains of the reference test (window 4) all complete, their
/// messages start in order, and the nesting never goes deeper than the window, not even
/// for one chain of 20,000 messages (a recursion per message would overflow the stack).
/// Nested messages start before the message that submitted them ends, so overlaps are not
/// checked here (the strategy's documented limit).
#[test]
fn inline_runs_chains_on_the_submitting_thread_one_message_at_a_time() {
    const LONG_CHAIN: u32 = 20_000;
    for id in on_caller() {
        within(&format!("{id}: chains through a window of 4"), LIMIT, move || {
            let f = Fixture::new(id, window_of_4());
            f.submit_all(chain_heads(0));
            f.submit(chain_head(key(5_000), chain(LONG_CHAIN)));
            f.drain();
            let report = f.report();
            assert!(report.is_complete(), "{id}: not exactly once: {report}");
            assert_eq!(report.out_of_order, 0, "{id}: {report}");
            assert_eq!(report.overlaps, 0, "{id}: a chain's next ran inside its handler");
            assert_eq!(f.log.ended(), CHAIN_MESSAGES + LONG_CHAIN as usize, "{id}");
            // A submitted message runs after its handler's message ended: never nested.
            let depth = f.log.with_log(Log::peak_running);
            assert_eq!(depth, 1, "{id}: handlers nested {depth} deep");
            let stats = f.strategy().stats();
            assert!(stats.peak_in_flight <= 4, "{id}: {stats:?}");
            let me = thread::current().id();
            assert_eq!(f.handler_threads(), [me].into(), "{id}: a handler ran elsewhere");
            f.close();
        });
    }
}

/// A late-bound handle to a strategy, for a handler that submits into it; weak, since the
/// strategy may hold that handler.
type Late = Arc<OnceLock<Weak<dyn Strategy>>>;

fn bind(late: &Late, strategy: &Arc<dyn Strategy>) {
    assert!(late.set(Arc::downgrade(strategy)).is_ok(), "bound twice");
}

fn submit_into(late: &Late, message: Message) -> Result<(), SubmitError> {
    late.get().and_then(Weak::upgrade).expect("a bound, live strategy").submit(message)
}

fn build(id: StrategyId, config: StrategyConfig, handler: impl Handler) -> Arc<dyn Strategy> {
    Arc::from(id.build(config, Arc::new(handler)).expect("a valid configuration"))
}

fn noop(key: Key, seq: u64) -> Message {
    Message { key, seq, intended_ns: 0, job: Job::Noop }
}

/// Re-entrancy belongs to one strategy instance. (1) A handler of strategy A that submits
/// into another strategy B is an outside submitter there: at B's full window it waits, as
/// any outside thread does, rather than queueing in B. (2) A strategy nested inside A's
/// handler on the same thread (`inline` C) does not hide A: C's handler submitting into A
/// at A's full window is re-entrant for A and queues, instead of blocking A's only worker.
#[test]
fn re_entrancy_belongs_to_the_strategy_instance_a_handler_runs_in() {
    check_concurrently(threaded(), |id| {
        // (1) A's handler submits into B, whose only credit a gated message holds.
        let b = Arc::new(Fixture::new(
            StrategyId::KeyedMailbox,
            StrategyConfig { max_in_flight: 1, ..config(1) },
        ));
        b.submit(Message { job: block_on_gate(1), ..noop(key(1), 0) });
        b.wait_started(1);
        let (returned, returned_receiver) = mpsc::channel();
        let into_b = Arc::clone(&b);
        let a = build(id, StrategyConfig { max_in_flight: 4, ..config(1) }, move |_: &Message| {
            let _ = returned.send(into_b.try_submit(noop(key(2), 0)).is_ok());
            Outcome::Done
        });
        a.submit(noop(key(3), 0)).unwrap();
        assert!(
            returned_receiver.recv_timeout(GRACE).is_err(),
            "{id}: a handler's submission into another strategy's full window did not wait"
        );
        assert_eq!(b.strategy().stats().admission_queued, 0, "{id}: queued in the other one");
        b.gates.open(1);
        assert_eq!(returned_receiver.recv_timeout(PATIENCE), Ok(true), "{id}: (1) never admitted");
        within(&format!("{id}: (1) drain"), PATIENCE, {
            let a = Arc::clone(&a);
            move || a.drain()
        });
        b.assert_ordered("a submission from another strategy's handler");
        a.close();

        // (2) A's handler submits into inline C, whose handler (on A's worker, inside A's
        // handler) submits into A while A's only credit is held by that very handler.
        let (into_a, into_c): (Late, Late) = (Late::default(), Late::default());
        let (events, event_receiver) = mpsc::channel();
        let a = build(id, StrategyConfig { max_in_flight: 1, ..config(1) }, {
            let (into_c, events) = (Arc::clone(&into_c), events.clone());
            move |message: &Message| {
                if message.seq == 0 {
                    let _ = submit_into(&into_c, noop(key(4), 0));
                } else {
                    let _ = events.send(("A ran", message.seq));
                }
                Outcome::Done
            }
        });
        let c = build(StrategyId::Inline, StrategyConfig { max_in_flight: 1, ..config(1) }, {
            let into_a = Arc::clone(&into_a);
            move |_: &Message| {
                let accepted = submit_into(&into_a, noop(key(5), 1)).is_ok();
                let _ = events.send(("C submitted into A", u64::from(accepted)));
                Outcome::Done
            }
        });
        bind(&into_a, &a);
        bind(&into_c, &c);
        a.submit(noop(key(5), 0)).unwrap();
        let first = event_receiver.recv_timeout(PATIENCE);
        assert_eq!(
            first,
            Ok(("C submitted into A", 1)),
            "{id}: (2) the submission into A from a nested strategy's handler blocked"
        );
        assert_eq!(event_receiver.recv_timeout(PATIENCE), Ok(("A ran", 1)), "{id}: (2)");
        within(&format!("{id}: (2) drain"), PATIENCE, {
            let a = Arc::clone(&a);
            move || a.drain()
        });
        let (a_stats, c_stats) = (a.stats(), c.stats());
        assert_eq!(a_stats.admission_queued, 1, "{id}: (2) A: {a_stats:?}");
        assert_eq!(c_stats.admission_queued, 0, "{id}: (2) C: {c_stats:?}");
        a.close();
        c.close();
    });
}
