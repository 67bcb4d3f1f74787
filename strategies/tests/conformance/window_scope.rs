//! Window scope (`StrategyConfig::window_scope`): with one window per strategy a key that
//! holds the window stalls every key; with one window per aggregate type it stalls only
//! the keys of its own type, and each type's window admits `max_in_flight` on its own. The
//! 241-of-256 stall of the shared window (`conformance.rs`) holds per window.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread;

use strategies::{
    Handler, Job, Key, Message, Outcome, Strategy, StrategyConfig, StrategyId, WindowScope,
};

use crate::common::*;

/// `scope` with 2 workers and a group per key.
fn scoped(scope: WindowScope) -> StrategyConfig {
    StrategyConfig { groups_per_worker: DISTINCT_GROUPS, window_scope: Some(scope), ..config(2) }
}

const HOT: Key = Key::new(0, 1_000);

/// 241 messages of [`HOT`] (type 0) pending on gate 0, then 100 messages over 20 keys of
/// type 1, then 100 over 20 other keys of type 0.
fn hot_type_then_both_types() -> Vec<Message> {
    let mut seq = Sequencer::default();
    let mut messages = seq.run_of(HOT, 241, |_| pend_on_gate(0));
    messages.extend((0..100).map(|i| seq.next(Key::new(1, i % 20), Job::Noop)));
    messages.extend((0..100).map(|i| seq.next(Key::new(0, i % 20), Job::Noop)));
    messages
}

/// One window per type: the hot key holds 241 of type 0's 256 credits. Type 1's window is
/// its own, so its 100 messages all run; type 0's other keys get the 15 credits left and
/// then stall, exactly as the strategy-wide window stalls every key.
#[test]
fn with_a_window_per_type_a_hot_key_stalls_only_its_own_type() {
    for id in threaded() {
        let f = Fixture::new(id, scoped(WindowScope::Type));
        let of_type = |t: u32| move |k: Key| k.aggregate_type == t;
        let cold_of_type_0 = |k: Key| k.aggregate_type == 0 && k != HOT;
        let (settled, type_1_ended, type_0_started, submitted) =
            f.observe_while_submitting(hot_type_then_both_types(), |submitted| {
                let settled = f.log.wait_until(PATIENCE, |log| {
                    log.ended_where(of_type(1)) >= 100 && log.ended_where(cold_of_type_0) >= 15
                });
                thread::sleep(GRACE);
                let (type_1, type_0) = f.log.with_log(|log| {
                    (log.ended_where(of_type(1)), log.started_where(cold_of_type_0))
                });
                (settled, type_1, type_0, submitted.load(Ordering::SeqCst))
            });
        assert!(settled, "{id}: type 1 or type 0's 15 free credits did not run");
        assert_eq!(
            (type_1_ended, type_0_started, submitted),
            (100, 15, 241 + 100 + 15),
            "{id}: (type 1 ended, other type 0 keys started, admitted) while 241 were held"
        );
        f.assert_contract("241 held of type 0's 256, then release");
        assert_eq!(f.log.ended(), 441, "{id}");
        let stats = f.strategy().stats();
        assert_eq!((stats.window_scope, stats.windows), (WindowScope::Type, 2), "{id}");
        assert!(stats.peak_in_flight <= 256, "{id}: one window exceeded: {stats:?}");
        f.close();
    }
}

/// One window for the strategy: the same workload stalls type 1 too, after the 15 credits
/// the hot key left.
#[test]
fn with_one_window_per_strategy_a_hot_key_stalls_every_type() {
    for id in threaded() {
        let f = Fixture::new(id, scoped(WindowScope::Strategy));
        let cold = |k: Key| k != HOT;
        let (settled, cold_started, submitted) =
            f.observe_while_submitting(hot_type_then_both_types(), |submitted| {
                let settled = f.log.wait_until(PATIENCE, |log| log.ended_where(cold) >= 15);
                thread::sleep(GRACE);
                let started = f.log.with_log(|log| log.started_where(cold));
                (settled, started, submitted.load(Ordering::SeqCst))
            });
        assert!(settled, "{id}: the 15 free credits did not run");
        assert_eq!(
            (cold_started, submitted),
            (15, 256),
            "{id}: (other keys started, admitted) while 241 were held"
        );
        f.assert_contract("241 held of the strategy's 256, then release");
        let stats = f.strategy().stats();
        assert_eq!((stats.window_scope, stats.windows), (WindowScope::Strategy, 1), "{id}");
        f.close();
    }
}

/// Each strategy runs with its descriptor's scope unless the config names one:
/// `per-type-pool` per type (the legacy design), the others per strategy.
#[test]
fn each_strategy_defaults_to_its_descriptors_scope() {
    for &id in StrategyId::ALL {
        let f = Fixture::new(id, config(2));
        f.submit_all((0..3u32).map(|t| Message {
            key: Key::new(t, 0),
            seq: 0,
            intended_ns: 0,
            job: Job::Noop,
        }));
        f.assert_contract("one message of each of 3 types");
        let stats = f.strategy().stats();
        let scope = id.descriptor().window_scope;
        let windows = if scope == WindowScope::Type { 3 } else { 1 };
        assert_eq!((stats.window_scope, stats.windows), (scope, windows), "{id}");
        f.close();
    }
    assert_eq!(StrategyId::PerTypePool.descriptor().window_scope, WindowScope::Type);
    assert_eq!(StrategyId::KeyedMailbox.descriptor().window_scope, WindowScope::Strategy);
}

/// Hops per relay chain, and chains.
const HOPS: u64 = 60;
const CHAINS: u64 = 16;

/// A handler whose message of type `t` submits the chain's next hop into the other type
/// (a new key each hop, so per-key order is trivially kept) until the chain has [`HOPS`]
/// messages: work that moves between the windows of two types.
struct Relay {
    strategy: OnceLock<Weak<dyn Strategy>>,
    ended: AtomicUsize,
}

impl Handler for Relay {
    fn handle(&self, message: &Message) -> Outcome {
        let hop = message.seq;
        if hop + 1 < HOPS {
            let chain = message.key.aggregate_id / HOPS;
            let next = Message {
                key: Key::new(1 - message.key.aggregate_type, chain * HOPS + hop + 1),
                seq: hop + 1,
                ..*message
            };
            let strategy = self.strategy.get().and_then(Weak::upgrade);
            strategy.expect("bound before the first submit").submit(next).expect("open");
        }
        self.ended.fetch_add(1, Ordering::SeqCst);
        Outcome::Done
    }
}

/// `drain` with a window per type waits for work that moves between windows: windows found
/// empty one after another do not prove the set empty (a handler may just have submitted
/// into one already looked at), so after `drain` every hop of every chain has run. Window
/// 1 per type, so the hops also go through the admission queues.
#[test]
fn a_drain_waits_for_work_moving_between_type_windows() {
    for id in threaded() {
        for round in 0..5 {
            let relay = Arc::new(Relay { strategy: OnceLock::new(), ended: AtomicUsize::new(0) });
            let config = StrategyConfig { max_in_flight: 1, ..scoped(WindowScope::Type) };
            let strategy: Arc<dyn Strategy> =
                Arc::from(id.build(config, Arc::clone(&relay) as Arc<dyn Handler>).unwrap());
            relay.strategy.set(Arc::downgrade(&strategy)).unwrap_or_else(|_| unreachable!());
            for chain in 0..CHAINS {
                let head = Message {
                    key: Key::new((chain % 2) as u32, chain * HOPS),
                    seq: 0,
                    intended_ns: 0,
                    job: Job::Noop,
                };
                strategy.submit(head).unwrap();
            }
            strategy.drain();
            let ended = relay.ended.load(Ordering::SeqCst);
            assert_eq!(
                ended,
                (CHAINS * HOPS) as usize,
                "{id}: round {round}: drain returned early"
            );
            assert!(strategy.stats().admission_queued > 0, "{id}: no hop was queued");
            strategy.close();
        }
    }
}
