//! `tokio-actors`: the idiomatic Rust answer with no keyed executor: one tokio task and one
//! channel per active key, as an actor framework would run them.
//!
//! # Algorithm
//!
//! 1. The actors live in a map from key to actor (`KeyMap`: dashmap shards). An actor is a
//!    task on a tokio multi-thread runtime of `workers` threads and the sending half of its
//!    unbounded `tokio::sync::mpsc` channel.
//! 2. Submit, under the key's shard lock: if the key has no actor, make its channel and
//!    spawn its task; count the message as the actor's unfinished one and send it.
//! 3. The task receives its messages in order and runs each one: the handler, then, if it
//!    returned a pending step, `.await`s the step (a waiting message frees the runtime
//!    thread; tokio polls the step again when its waker fires, on a runtime thread).
//! 4. When it has finished its last unfinished message the task removes itself from the
//!    map, under the key's shard lock and only if nothing was sent meanwhile, and ends: an
//!    actor lives while its key has messages, as the mailboxes of the other designs do.
//!
//! A finished message's window credit is returned when the actor takes its next message,
//! or after the actor removed itself (as in `mailbox.rs`), so `drain` never sees a live
//! actor. A forced close wakes every actor waiting on a step (a `Notify`); the actor finds
//! the close raised and abandons the step, and discards what it receives after.
//!
//! # Ordering guarantee
//!
//! Per-key order is fixed at submit time: one channel per key, FIFO, and one task that runs
//! its messages one at a time. A new actor for a key is made only after the old one left
//! the map, which it does only once its last message finished.
//!
//! # Trade-offs
//!
//! A task spawn (an allocation) per activation and a channel hop per message; no
//! `throughput` limit: a busy actor keeps its runtime thread until its channel is empty
//! (tokio's cooperative budget makes the task yield now and then). tokio's LIFO slot runs
//! the most recently spawned actor first. This is what a program written against tokio
//! alone would do; the `tokio` strategy instead drives the shared mailbox machinery with
//! tokio tasks.
//!
//! # Why this is the idiom at its best
//!
//! - **tokio's own channel, unbounded.** The shared window already bounds what is in
//!   flight; a bounded channel would add a second backpressure that no other strategy has,
//!   and a send that can wait. `UnboundedSender::send` never waits and allocates only when
//!   the channel's block list grows.
//! - **A task per active key, not per message**, ended when its channel drains, so the
//!   runtime holds as many tasks as there are active keys (what an actor framework keeps
//!   alive), and an idle key costs nothing.
//! - **Steps are `.await`ed in the actor**, the plain async idiom: tokio reschedules the
//!   task on its waker, with no mailbox machinery in between.
//! - No `block_in_place` or `spawn_blocking`, for the reasons in `tokio_tasks.rs`.
//!
//! # References
//!
//! - tokio's `sync::mpsc` and multi-thread runtime (docs.rs/tokio).
//! - Alice Ryhl, "Actors with Tokio" (the one-task-and-channel-per-actor pattern).

use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::Notify;

use crate::events::{Event, EventSet};
use crate::executor::{BuiltIn, Core, Engine, Held};
use crate::tokio_tasks::{start_runtime, stop_runtime};
use crate::sync::KeyMap;
use crate::{Key, Message, Pending, StrategyId};

/// One active key's actor, as the map holds it.
#[derive(Debug)]
struct Actor {
    sender: UnboundedSender<Message>,
    /// Messages sent to this actor and not finished yet; also its identity.
    unfinished: Arc<AtomicUsize>,
}

/// What every actor task shares.
#[derive(Debug)]
struct Shared {
    core: Arc<Core>,
    actors: KeyMap<Key, Actor>,
    /// Woken by a forced close: every actor waiting on a step looks at the close.
    forced: Notify,
}

/// The `tokio-actors` strategy.
#[derive(Debug)]
pub(crate) struct TokioActors {
    shared: Arc<Shared>,
    handle: tokio::runtime::Handle,
    runtime: Mutex<Option<tokio::runtime::Runtime>>,
    started: Arc<AtomicUsize>,
}

impl BuiltIn for TokioActors {
    const ID: StrategyId = StrategyId::TokioActors;
    /// tokio's parks and wake-ups are its own.
    const EVENTS: EventSet = EventSet::MAILBOXES;
}

impl Engine for TokioActors {
    fn start(core: &Arc<Core>) -> Self {
        let (runtime, started) = start_runtime(core.config.workers, "tokio-actor");
        let shared =
            Arc::new(Shared { core: Arc::clone(core), actors: KeyMap::new(), forced: Notify::new() });
        Self {
            shared,
            handle: runtime.handle().clone(),
            runtime: Mutex::new(Some(runtime)),
            started,
        }
    }

    fn dispatch(&self, message: Message) {
        let shared = &self.shared;
        let spawn = || {
            shared.core.events.count(Event::Activation);
            let (sender, receiver) = unbounded_channel();
            let unfinished = Arc::new(AtomicUsize::new(0));
            let task = run_actor(Arc::clone(shared), message.key, Arc::clone(&unfinished), receiver);
            drop(self.handle.spawn(task)); // the actor reports nothing back
            Actor { sender, unfinished }
        };
        shared.actors.with_entry(message.key, spawn, |actor| {
            // Relaxed: read only under this key's lock (`retire`).
            actor.unfinished.fetch_add(1, Ordering::Relaxed);
            shared.core.events.count(Event::Hop);
            // The receiver lives until the actor left the map, which it cannot do while
            // this lock is held, so the send succeeds.
            let sent = actor.sender.send(message);
            debug_assert!(sent.is_ok(), "an actor in the map dropped its receiver");
        });
    }

    fn sweep(&self) {
        // Actors waiting on a step wake and abandon it; the others discard what they
        // receive from now on (`Core::start_holding`).
        self.shared.forced.notify_waiters();
    }

    fn stop(&self) {
        stop_runtime(&self.runtime); // nothing is in flight: every actor has ended
    }

    fn threads_started(&self) -> usize {
        self.started.load(Ordering::Relaxed)
    }

    fn live_mailboxes(&self) -> Option<usize> {
        Some(self.shared.actors.len())
    }
}

/// The task of `key`'s actor (module docs, steps 3 and 4).
async fn run_actor(
    shared: Arc<Shared>,
    key: Key,
    unfinished: Arc<AtomicUsize>,
    mut receiver: UnboundedReceiver<Message>,
) {
    let core = Arc::clone(&shared.core);
    let mut held = core.hold(key);
    while let Some(message) = receiver.recv().await {
        held.release(); // the key still has a message in flight: this one
        if let Some(step) = core.start_holding(&message, &mut held) {
            finish_step(&core, &shared.forced, step, &mut held).await;
        }
        // Relaxed: read only under this key's lock, which orders it.
        unfinished.fetch_sub(1, Ordering::Relaxed);
        if retire(&shared, key, &unfinished) {
            break;
        }
    }
    // `held` drops here: the last message's credit comes back after the actor left the map.
}

/// Awaits a pending step, containing its panics; a forced close abandons it.
async fn finish_step(core: &Core, forced: &Notify, step: Pending, held: &mut Held<'_>) {
    let mut step = Some(step);
    let mut closing = pin!(forced.notified());
    poll_fn(|cx| {
        let Some(pending) = step.as_mut() else { return Poll::Ready(()) };
        if core.poll_holding(pending, cx, held).is_ready() {
            return Poll::Ready(());
        }
        if core.is_forced() || closing.as_mut().poll(cx).is_ready() {
            if let Some(pending) = step.take() {
                core.abandon_holding(pending, held);
            }
            return Poll::Ready(());
        }
        Poll::Pending
    })
    .await;
}

/// Step 4: leaves the map if nothing was sent since the last message; whether it did.
fn retire(shared: &Shared, key: Key, unfinished: &Arc<AtomicUsize>) -> bool {
    let retired = shared.actors.remove_if(&key, |actor| {
        Arc::ptr_eq(&actor.unfinished, unfinished) && unfinished.load(Ordering::Relaxed) == 0
    });
    if retired {
        shared.core.events.count(Event::Retirement);
    }
    retired
}
