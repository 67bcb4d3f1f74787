//! Loom models of the wake path (`mailbox.rs`, step 4): the thread that completes a wait
//! polls the stored step itself and finishes the message, racing submissions of the same
//! key, a retirement against a reactivation, `drain`, a second wake, the sweep and a forced
//! close. Each model starts with the step stored (`Waiting`), so that the completion always
//! takes the wake path; `mailbox_wake_races_the_running_turn` covers a wake that races the
//! turn storing it.

use super::*;

#[test]
fn mailbox_a_completion_races_a_submit_of_its_key() {
    // The wake path: key A's first step is stored (`Waiting`) and its second message is
    // queued behind it; the thread that completes the wait finishes the message while A's
    // third message is submitted and a runner takes what is queued. The completing thread,
    // and only it, polls the woken step; it hands the mailbox to the runner for the rest,
    // which run there once each, in order, the third only after the first two ended.
    explore("mailbox_a_completion_races_a_submit_of_its_key", || {
        let probe = probe();
        let set = mailbox_set(&probe, 4);
        submit(&set, message(KEY, 0, Job::Wait { ns: 0 }));
        run_queued(&set); // the turn stores the step: the mailbox is `Waiting`
        submit(&set, message(KEY, 1, Job::Noop));
        let io = spawn_opener(&probe);
        let worker = spawn_runner(&set, &probe, 3);
        submit(&set, message(KEY, 2, Job::Noop));
        let io = io.join().unwrap();
        let worker = worker.join().unwrap();
        probe.assert_ran_in_order(&[(KEY, 0), (KEY, 1), (KEY, 2)]);
        assert_eq!(probe.ended_on(KEY, 0), Some(io), "a worker polled the woken step");
        assert_eq!(probe.started_on(KEY, 1), Some(worker), "the next message left its worker");
        assert_eq!(probe.started_on(KEY, 2), Some(worker), "the next message left its worker");
        assert_quiet(&set);
    });
}

#[test]
fn mailbox_a_completion_of_a_keys_last_message_races_a_new_one() {
    // Retire against reactivate: key A's only message waits; the completing thread finishes
    // it and retires the emptied mailbox (recycling it as the spare) while A's next message
    // is submitted: into the old mailbox before the retirement's look (then the completing
    // thread hands it to the runner) or into a new one (perhaps the recycled spare)
    // after. Either way the mailbox is scheduled once, for the new message only, both run
    // once and in order, and `drain` returns only when no mailbox is left in the map.
    explore("mailbox_a_completion_of_a_keys_last_message_races_a_new_one", || {
        let probe = probe();
        let set = mailbox_set(&probe, 4);
        submit(&set, message(KEY, 0, Job::Wait { ns: 0 }));
        run_queued(&set);
        let io = spawn_opener(&probe);
        let worker = spawn_runner(&set, &probe, 2);
        submit(&set, message(KEY, 1, Job::Noop));
        set.core.windows.wait_empty(); // `drain`
        assert_eq!(set.live(), 0, "a drained set still had a live mailbox");
        let io = io.join().unwrap();
        let worker = worker.join().unwrap();
        probe.assert_ran_in_order(&[(KEY, 0), (KEY, 1)]);
        assert_eq!(probe.ended_on(KEY, 0), Some(io), "a worker polled the woken step");
        assert_eq!(probe.started_on(KEY, 1), Some(worker));
        assert_eq!(set.placement.scheduled(), 2, "the first turn, then one for the new message");
        assert_quiet(&set);
    });
}

#[test]
fn mailbox_a_drain_never_sees_the_mailbox_a_completion_emptied() {
    // Retire, then credit: the completing thread finishes a key's last message, retires the
    // mailbox and only then returns the credit, so a `drain` racing it never finds the
    // window empty while the mailbox is still in the map; and no worker is involved.
    explore("mailbox_a_drain_never_sees_the_mailbox_a_completion_emptied", || {
        let probe = probe();
        let set = mailbox_set(&probe, 4);
        submit(&set, message(KEY, 0, Job::Wait { ns: 0 }));
        run_queued(&set);
        let io = spawn_opener(&probe);
        set.core.windows.wait_empty();
        assert_eq!(set.live(), 0, "the window was empty before the mailbox was retired");
        let io = io.join().unwrap();
        assert_eq!(probe.ended_on(KEY, 0), Some(io));
        assert_eq!(set.placement.scheduled(), 1, "a wait of a last message needs no worker");
        assert_quiet(&set);
    });
}

#[test]
fn mailbox_a_retry_is_polled_by_each_of_its_wakers() {
    // A step that is pending again after its first wake (a retry's next backoff): the
    // thread that opens the first gate polls it, finds it waiting for the second and
    // leaves it stored; the thread that opens the second finishes it (or the first does,
    // if both gates are open by then). Two wakes racing each other never poll the step at
    // once. A wake that arrives while the other opener polls the step (the second gate
    // opens between the poll's two looks at it) is not lost: that opener hands the
    // mailbox to its worker, which finishes the step.
    explore("mailbox_a_retry_is_polled_by_each_of_its_wakers", || {
        let probe = probe();
        let set = mailbox_set(&probe, 4);
        submit(&set, message(KEY, 0, Job::Custom(TWO_GATES)));
        run_queued(&set);
        let first = spawn_gate_opener(&probe.gate);
        let second = spawn_gate_opener(&probe.second_gate);
        let openers = [first.join().unwrap(), second.join().unwrap()];
        let handed_over = set.placement.scheduled() > 1;
        let worker = spawn_runner(&set, &probe, 1).join().unwrap();
        probe.assert_ran_in_order(&[(KEY, 0)]);
        let ended_on = probe.ended_on(KEY, 0).expect("the step ended");
        if handed_over {
            assert_eq!(ended_on, worker, "a mailbox handed to its worker ran elsewhere");
        } else {
            assert!(openers.contains(&ended_on), "the step ended on a thread that did not wake it");
        }
        assert_quiet(&set);
    });
}

#[test]
fn mailbox_a_completion_races_the_sweep() {
    // A forced close (window closed, forced flag, sweeps until the window is empty, as
    // `Executor::force_close` does) races the thread that completes key A's stored step,
    // with A's second message queued behind it, and a worker. The sweep abandons the step
    // or finds the waker holding it (`Running`: left to it); the waker finishes it, or
    // abandons it when it is still pending; the second message runs, or is discarded by
    // the sweep or the worker. Each message is accounted for once, nothing runs after the
    // close finished, nothing is scheduled after it, and no mailbox is left.
    explore("mailbox_a_completion_races_the_sweep", || {
        let probe = probe();
        let set = mailbox_set(&probe, 4);
        submit(&set, message(KEY, 0, Job::Wait { ns: 0 }));
        run_queued(&set);
        submit(&set, message(KEY, 1, Job::Noop));
        let io = spawn_opener(&probe);
        // A worker that looks at the queue twice (a spinning one would multiply the
        // interleavings past loom's bound); what it leaves is run after the close.
        let worker = {
            let set = Arc::clone(&set);
            thread::spawn(move || {
                for _ in 0..2 {
                    let next = lock(&set.placement.queue).pop_front();
                    match next {
                        Some(mailbox) => assert!(matches!(set.run(mailbox), Turn::Done)),
                        None => thread::yield_now(),
                    }
                }
            })
        };
        set.core.windows.close();
        set.core.raise_forced();
        while {
            set.sweep();
            set.core.windows.in_flight() > 0
        } {
            thread::yield_now();
        }
        let (started, ended) = (lock(&probe.started).clone(), probe.ended());
        let scheduled = set.placement.scheduled();
        io.join().unwrap();
        worker.join().unwrap();
        assert_eq!(set.placement.scheduled(), scheduled, "a mailbox was scheduled after the close");
        // The turns the worker did not take: of mailboxes the sweep retired.
        loop {
            let next = lock(&set.placement.queue).pop_front();
            let Some(mailbox) = next else { break };
            assert!(matches!(set.run(mailbox), Turn::Done));
        }
        assert_eq!(*lock(&probe.started), started, "a message started after the close");
        assert_eq!(probe.ended(), ended, "a step ended after the close");
        let forced = set.core.forced_counts();
        let accounted = ended.len() as u64 + forced.discarded + forced.abandoned;
        assert_eq!(accounted, 2, "{forced:?}, ended {ended:?}");
        assert_eq!(started.len() as u64, 2 - forced.discarded, "{forced:?}");
        probe.assert_ran_a_prefix(&[(KEY, 0), (KEY, 1)]);
        assert_quiet(&set);
    });
}

#[test]
fn keyed_mailbox_a_completion_races_a_forced_close() {
    // The whole keyed-mailbox executor (one worker): key A's first step has registered its
    // waker and its second message is queued; the completing thread finishes the step
    // while `force_close` runs. `force_close` returns, each message is finished, discarded
    // or abandoned exactly once, nothing runs after it returned (the completion included),
    // and no mailbox is left.
    explore("keyed_mailbox_a_completion_races_a_forced_close", || {
        let probe = probe();
        let strategy = keyed_mailbox(&probe);
        strategy.submit(message(KEY, 0, Job::Wait { ns: 0 })).unwrap();
        strategy.submit(message(KEY, 1, Job::Noop)).unwrap();
        while lock(&probe.gate.waker).is_none() {
            thread::yield_now(); // until the worker's first poll of the step
        }
        let io = spawn_opener(&probe);
        let forced = strategy.force_close();
        let (started, ended) = (lock(&probe.started).clone(), probe.ended());
        io.join().unwrap();
        assert_eq!(*lock(&probe.started), started, "a message started after force_close");
        assert_eq!(probe.ended(), ended, "a step ended after force_close returned");
        let accounted = ended.len() as u64 + forced.discarded + forced.abandoned;
        assert_eq!(accounted, 2, "{forced:?}, ended {ended:?}");
        assert_eq!(started.len() as u64, 2 - forced.discarded, "{forced:?}");
        probe.assert_ran_a_prefix(&[(KEY, 0), (KEY, 1)]);
        assert_eq!(strategy.stats().live_mailboxes, Some(0), "a forced close left a mailbox");
    });
}
