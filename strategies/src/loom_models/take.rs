//! Loom models of `hybrid`'s take (`hybrid.rs`, steps 2-3): a worker whose FIFO is empty
//! pops a mailbox from another worker's FIFO and becomes its home. Each model runs the real
//! affinity placement with two workers and round-robin binding (keys bound to workers 0,
//! 1, 0, ... in activation order), the worker loops played by model threads: an owner
//! that runs its own FIFO and a taker that takes from it, racing a push to the victim's
//! FIFO, a wake from a wait, and a retirement. Afterwards every key ran exactly once per
//! message, in order, never two at once, and nothing is left queued or live.

use super::*;
use crate::keyed_mailbox::{take, Affinity};
use crate::Binding;

/// A third key, bound to worker 0 after `KEY` (0) and `OTHER` (1).
const THIRD: Key = Key::new(0, 9);

/// A mailbox set on the affinity placement: two workers, round-robin binding.
fn affinity_set(probe: &Arc<Probe>) -> Arc<MailboxSet<Affinity>> {
    let config = StrategyConfig { workers: 2, binding: Binding::RoundRobin, ..config(16) };
    let handler: Arc<dyn Handler> = Arc::clone(probe) as Arc<dyn Handler>;
    let core = Arc::new(Core::new(config, WindowScope::Strategy, EventSet::ALL, handler));
    MailboxSet::new(core, Affinity::new(2, Binding::RoundRobin))
}

/// Runs `mailbox`'s turn on `worker`, requeueing it there as the worker loop does.
fn run_on(set: &Arc<MailboxSet<Affinity>>, worker: usize, mailbox: Arc<Mailbox>) {
    if let Turn::Requeue(mailbox) = set.run(mailbox) {
        set.placement.workers[worker].runnable.push(mailbox);
    }
}

/// Worker `worker`'s loop, once: its own FIFO's front mailbox, run; whether there was one.
fn run_own(set: &Arc<MailboxSet<Affinity>>, worker: usize) -> bool {
    let next = set.placement.workers[worker].runnable.pop();
    next.map(|mailbox| run_on(set, worker, mailbox)).is_some()
}

/// `taker`'s take, once: a mailbox of another FIFO, run on `taker`; whether there was one.
fn take_once(set: &Arc<MailboxSet<Affinity>>, taker: usize) -> bool {
    let taken = take(&set.placement, taker);
    taken.map(|mailbox| run_on(set, taker, mailbox)).is_some()
}

/// Runs every queued mailbox on its worker until all FIFOs are empty.
fn drain(set: &Arc<MailboxSet<Affinity>>) {
    while run_own(set, 0) | run_own(set, 1) {}
}

/// Each key's messages ran exactly once, in order (seq 0, 1, ...), never two at once.
fn assert_each_key_in_order(probe: &Probe, keys: &[(Key, u64)]) {
    // SeqCst: pairs with the increment in `Probe::handle`.
    assert_eq!(probe.overlaps.load(Ordering::SeqCst), 0, "two messages of a key overlapped");
    let started = lock(&probe.started).clone();
    let ended = probe.ended();
    for &(key, count) in keys {
        let expected: Vec<u64> = (0..count).collect();
        let of = |all: &[(Key, u64)]| -> Vec<u64> {
            all.iter().filter(|(k, _)| *k == key).map(|&(_, seq)| seq).collect()
        };
        assert_eq!(of(&started), expected, "{key:?}: starts out of order, lost or twice");
        assert_eq!(of(&ended), expected, "{key:?}: ends out of order, lost or twice");
    }
    assert_eq!(started.len(), keys.iter().map(|&(_, n)| n as usize).sum::<usize>());
}

/// Nothing queued on any worker, no mailbox left, every credit back.
fn assert_quiet(set: &MailboxSet<Affinity>) {
    for worker in &set.placement.workers {
        assert!(worker.runnable.is_empty(), "a mailbox was left queued");
    }
    assert_eq!(set.live(), 0, "a mailbox was left in the map");
    assert_eq!(set.core.windows.in_flight(), 0, "a credit was not returned");
}

#[test]
fn hybrid_a_take_races_a_push_to_the_victims_fifo() {
    // Worker 1 takes key A's queued mailbox from worker 0's FIFO while key C's new mailbox
    // is pushed there and A's next message arrives. Whoever gets each mailbox runs it once;
    // A's second message follows its first wherever A now lives.
    explore("hybrid_a_take_races_a_push_to_the_victims_fifo", || {
        let probe = probe();
        let set = affinity_set(&probe);
        submit(&set, message(KEY, 0, Job::Noop)); // bound to worker 0
        submit(&set, message(OTHER, 0, Job::Noop)); // bound to worker 1
        assert!(run_own(&set, 1), "worker 1 runs its own key first");
        let taker = {
            let set = Arc::clone(&set);
            thread::spawn(move || take_once(&set, 1))
        };
        submit(&set, message(THIRD, 0, Job::Noop)); // bound to worker 0, beside A
        submit(&set, message(KEY, 1, Job::Noop));
        taker.join().unwrap();
        drain(&set);
        assert_each_key_in_order(&probe, &[(KEY, 2), (OTHER, 1), (THIRD, 1)]);
        assert_quiet(&set);
    });
}

#[test]
fn hybrid_a_take_races_the_wake_of_a_waiting_mailbox() {
    // Key A's first step waits (A is in no FIFO); its second message is queued behind it.
    // The thread that completes the wait finishes the first and schedules A to its home,
    // worker 0, while worker 1 tries a take: it gets A only once A is queued, and then runs
    // the second message after the first ended, on worker 1's thread.
    explore("hybrid_a_take_races_the_wake_of_a_waiting_mailbox", || {
        let probe = probe();
        let set = affinity_set(&probe);
        submit(&set, message(KEY, 0, Job::Wait { ns: 0 }));
        assert!(run_own(&set, 0), "worker 0 runs A's first message");
        assert!(
            set.placement.workers[0].runnable.is_empty(),
            "a waiting mailbox is queued nowhere"
        );
        submit(&set, message(KEY, 1, Job::Noop));
        let opener = spawn_opener(&probe);
        let taker = {
            let set = Arc::clone(&set);
            thread::spawn(move || (take_once(&set, 1), thread::current().id()))
        };
        opener.join().unwrap();
        let (took, taker_thread) = taker.join().unwrap();
        drain(&set);
        assert_each_key_in_order(&probe, &[(KEY, 2)]);
        if took {
            assert_eq!(probe.started_on(KEY, 1), Some(taker_thread), "the taker ran it");
        }
        assert_quiet(&set);
    });
}

#[test]
fn hybrid_a_take_races_the_retirement_of_its_mailbox() {
    // Key A's only message is queued on worker 0. Worker 0 runs it and retires the emptied
    // mailbox while worker 1 tries to take it and A's next message is submitted: into the
    // old mailbox before the retirement's look (its holder runs it) or into a new one after.
    // Either way both run once, in order, and no mailbox is left.
    explore("hybrid_a_take_races_the_retirement_of_its_mailbox", || {
        let probe = probe();
        let set = affinity_set(&probe);
        submit(&set, message(KEY, 0, Job::Noop));
        let owner = {
            let set = Arc::clone(&set);
            thread::spawn(move || run_own(&set, 0))
        };
        let taker = {
            let set = Arc::clone(&set);
            thread::spawn(move || take_once(&set, 1))
        };
        submit(&set, message(KEY, 1, Job::Noop));
        let (owned, took) = (owner.join().unwrap(), taker.join().unwrap());
        assert!(owned || took, "the queued mailbox was run by its owner or its taker");
        drain(&set);
        assert_each_key_in_order(&probe, &[(KEY, 2)]);
        assert_quiet(&set);
    });
}
