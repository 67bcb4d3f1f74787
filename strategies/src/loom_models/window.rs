//! Loom models of park/unpark (`parking.rs`) and of the admission window and its
//! admission queue (`window.rs`).

use super::*;

#[test]
fn park_never_loses_a_wake_up() {
    // A worker going to sleep races two producers that each push one item and unpark it:
    // the worker takes both items (a lost wake-up is a loom deadlock).
    explore("park_never_loses_a_wake_up", || {
        let slot = Arc::new(ParkSlot::default());
        let items = Arc::new(AtomicUsize::new(0));
        let worker = {
            let (slot, items) = (Arc::clone(&slot), Arc::clone(&items));
            thread::spawn(move || {
                slot.register();
                let mut taken = 0;
                while taken < 2 {
                    // SeqCst (both loads): pair with the producers' increments.
                    if items.load(Ordering::SeqCst) > taken {
                        taken += 1;
                        continue;
                    }
                    slot.prepare_park();
                    if items.load(Ordering::SeqCst) > taken {
                        slot.cancel_park();
                        continue;
                    }
                    slot.park();
                }
            })
        };
        let producer = {
            let (slot, items) = (Arc::clone(&slot), Arc::clone(&items));
            thread::spawn(move || {
                // SeqCst: pairs with the worker's loads of `items`.
                items.fetch_add(1, Ordering::SeqCst);
                slot.unpark();
            })
        };
        // SeqCst: pairs with the worker's loads of `items`.
        items.fetch_add(1, Ordering::SeqCst);
        slot.unpark();
        producer.join().unwrap();
        worker.join().unwrap();
        assert!(!slot.is_parked());
    });
}

/// `credits + pending refill + in flight` never changes: no credit lost or created.
fn assert_conserved(window: &Window, size: usize) {
    let (credits, refill, in_flight) = window.fields();
    assert_eq!(
        credits + refill + in_flight,
        size,
        "credits {credits}, refill {refill}, in flight {in_flight}"
    );
}

#[test]
fn window_credits_are_conserved() {
    // Three threads admit and finish through a window of 2 (batch 1): one of them blocks
    // and must be woken by a completion; the credit total never changes.
    explore("window_credits_are_conserved", || {
        let window = Arc::new(Window::new(2));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let window = Arc::clone(&window);
                thread::spawn(move || {
                    window.admit().unwrap();
                    assert_conserved(&window, 2);
                    assert!(!window.finish(), "nothing is queued");
                    assert_conserved(&window, 2);
                })
            })
            .collect();
        window.admit().unwrap();
        assert!(!window.finish(), "nothing is queued");
        for thread in threads {
            thread.join().unwrap();
        }
        window.wait_empty();
        assert_eq!(window.fields(), (2, 0, 0));
        assert_eq!(window.peak_in_flight().clamp(1, 2), window.peak_in_flight());
    });
}

#[test]
fn window_batches_refill_under_concurrent_completion() {
    // A window of 32 refills in batches of 2: two completions racing each other and an
    // admission grant exactly one batch, never one credit or three.
    explore("window_batches_refill_under_concurrent_completion", || {
        let window = Arc::new(Window::new(32));
        for _ in 0..32 {
            window.admit().unwrap();
        }
        let finishers: Vec<_> = (0..2)
            .map(|_| {
                let window = Arc::clone(&window);
                thread::spawn(move || window.finish())
            })
            .collect();
        let admitted = window.admit();
        for finisher in finishers {
            finisher.join().unwrap();
        }
        assert_eq!(admitted, Ok(()), "the batch refill must wake the blocked admission");
        assert_eq!(window.fields(), (1, 0, 31));
    });
}

#[test]
fn window_close_races_a_blocked_admission() {
    // An admission blocked on a full window races a close and a completion: it returns
    // (never hangs), with a credit only if the completion came first, and after the close
    // every admission fails.
    explore("window_close_races_a_blocked_admission", || {
        let window = Arc::new(Window::new(1));
        window.admit().unwrap();
        let blocked = {
            let window = Arc::clone(&window);
            thread::spawn(move || window.admit())
        };
        let finisher = {
            let window = Arc::clone(&window);
            thread::spawn(move || window.finish())
        };
        window.close();
        let outcome = blocked.join().unwrap();
        finisher.join().unwrap();
        let (credits, refill, in_flight) = window.fields();
        match outcome {
            Ok(()) => assert_eq!((credits, refill, in_flight), (0, 0, 1)),
            Err(WindowClosed) => assert_eq!((credits, refill, in_flight), (1, 0, 0)),
        }
        assert_eq!(window.admit(), Err(WindowClosed));
    });
}

#[test]
fn window_a_reentrant_submit_at_a_full_window_races_a_finish() {
    // Window 1, one runner: the runner finishes the message that holds the only credit
    // while another thread, marked as inside a handler of this strategy (as a second
    // worker's handler would be; the core marks its own calls the same way), submits at the
    // full window. The submission either finds the credit returned (admitted at once) or
    // queues and is admitted by that credit, exactly once: both run, once each and in
    // order, the drain returns only after both did, and the window ends whole.
    explore("window_a_reentrant_submit_at_a_full_window_races_a_finish", || {
        let probe = probe();
        let set = mailbox_set_with(&probe, StrategyConfig { max_in_flight: 1, ..config(4) });
        let _dispatch = bind_set(&set);
        submit(&set, message(KEY, 0, Job::Noop));
        let worker = spawn_runner(&set, &probe, 2);
        let next = message(OTHER, 0, Job::Noop);
        let admission = {
            let _inside = set.core.enter();
            set.core.admit(next).expect("the window is open")
        };
        if admission == Admission::Admitted {
            set.submit(next); // what `Executor::submit` does with an admitted message
        }
        set.core.windows.wait_empty();
        assert_eq!(probe.ended().len(), 2, "drain returned before both messages ran");
        worker.join().unwrap();
        probe.assert_ran_in_order(&[(KEY, 0), (OTHER, 0)]);
        assert_quiet(&set);
        let window = set.core.windows.single();
        assert_eq!(window.fields(), (1, 0, 0), "a credit lost or doubled");
        assert!(!window.is_queued(), "the queued flag outlived the queue");
        let queued = u64::from(admission == Admission::Queued);
        assert_eq!((window.queued_total(), window.peak_queued() as u64), (queued, queued));
        assert_eq!(window.peak_in_flight(), 1, "two messages held the only credit");
    });
}

/// A keyed-mailbox executor (one worker) with one window of `max_in_flight` per type.
fn per_type(probe: &Arc<Probe>, max_in_flight: usize) -> Arc<dyn Strategy> {
    let config =
        StrategyConfig { max_in_flight, window_scope: Some(WindowScope::Type), ..config(16) };
    keyed_mailbox_with(probe, config)
}

#[test]
fn per_type_windows_drain_waits_for_a_submission_into_another_type() {
    // Windows per type, one credit each: the handler of a type-0 message submits into
    // type 1's window (opening it) while `drain` runs on the main thread. Type 0's window
    // empties before type 1's message is done, and may be looked at while type 1's is still
    // empty: `drain` still returns only after both ran (the set's unfinished count).
    explore("per_type_windows_drain_waits_for_a_submission_into_another_type", || {
        let probe = probe();
        let strategy = per_type(&probe, 1);
        let first = message(Key::new(0, 7), 0, Job::Custom(SUBMIT_OTHER_TYPE));
        strategy.submit(first).unwrap();
        strategy.drain();
        let mut ended = probe.ended();
        ended.sort_unstable();
        assert_eq!(ended, [(Key::new(0, 7), 0), (Key::new(1, 7), 0)], "drain returned early");
        let stats = strategy.stats();
        assert_eq!((stats.window_scope, stats.windows), (WindowScope::Type, 2), "{stats:?}");
        assert_eq!(stats.live_mailboxes, Some(0), "{stats:?}");
        strategy.close();
    });
}

#[test]
fn per_type_windows_close_races_the_first_message_of_a_new_type() {
    // Windows per type: a submitter sends the first message of type 1 (its window is
    // opened by this submission) while the main thread closes the strategy. Either the
    // window was opened before the close walked the windows (then the close closes it) or
    // after (then it is opened closed): the message is accepted and runs before `close`
    // returns, or it is handed back; a later type's first message is always handed back.
    explore("per_type_windows_close_races_the_first_message_of_a_new_type", || {
        let probe = probe();
        let strategy = per_type(&probe, 2);
        strategy.submit(message(Key::new(0, 7), 0, Job::Noop)).unwrap();
        let submitter = {
            let strategy = Arc::clone(&strategy);
            thread::spawn(move || strategy.submit(message(Key::new(1, 7), 0, Job::Noop)).is_ok())
        };
        strategy.close();
        let accepted = submitter.join().unwrap();
        let mut ended = probe.ended();
        ended.sort_unstable();
        let expected: &[(Key, u64)] = if accepted {
            &[(Key::new(0, 7), 0), (Key::new(1, 7), 0)]
        } else {
            &[(Key::new(0, 7), 0)]
        };
        assert_eq!(ended, expected, "accepted {accepted}: a message stranded or run when refused");
        let late = message(Key::new(2, 7), 0, Job::Noop);
        assert!(strategy.submit(late).is_err(), "a new type's window opened after the close");
    });
}
