//! Step 3: one record in the handler, its failed attempts retried by the policy.

use super::config::Treatment;
use super::pipeline::since_ns;
use super::shared::{Effect, Origin, Shared};
use super::tally::DeliveryTally;
use crate::measure::handler::spin;
use crate::pipeline::log::Record;
use crate::results::RetryPolicy;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use strategies::{Message, Outcome};

/// The log is consumed but the crash point was not reached: waits until it is, or until no
/// record completed for `idle`, and then crashes.
pub(super) fn wait_for_crash(shared: &Shared, idle: Duration) {
    let mut seen = shared.completed.load(Ordering::Relaxed);
    let mut since = Instant::now();
    while !shared.is_dead() && !shared.watch.is_cancelled() {
        thread::sleep(Duration::from_micros(500));
        let now = shared.completed.load(Ordering::Relaxed);
        if now != seen {
            (seen, since) = (now, Instant::now());
        } else if since.elapsed() >= idle {
            return;
        }
    }
}

/// Step 3: one record in the handler.
pub(super) fn handle(shared: &Arc<Shared>, message: &Message) -> Outcome {
    if shared.is_dead() {
        return Outcome::Done; // the consumer is dead: nothing it would still run happens
    }
    let Some((record, origin)) = shared.record_of(message) else {
        return Outcome::Done;
    };
    if origin == Origin::Log {
        // A delivery from the log; the retry topic's are retries, not redeliveries.
        DeliveryTally::count(&shared.tally.deliveries, record.partition, record.offset);
    }
    let spin_ns = shared.config.spin_ns;
    match (shared.treat)(&record) {
        Treatment::Stall => Outcome::Pending(Box::pin(std::future::pending())),
        Treatment::Run => {
            spin(spin_ns);
            shared.finish(record, Effect::Apply, origin);
            Outcome::Done
        }
        Treatment::Wait(after) => {
            spin(spin_ns);
            let sleep = shared.timer.sleep(after);
            let shared = Arc::clone(shared);
            Outcome::Pending(Box::pin(async move {
                sleep.await;
                shared.finish(record, Effect::Apply, origin);
            }))
        }
        Treatment::Fail { failures } => attempt_failing(shared, record, failures, origin),
    }
}

/// Step 3 for a record whose first `failures` attempts fail, by the retry policy (see
/// `retry`).
pub(super) fn attempt_failing(
    shared: &Arc<Shared>,
    record: Record,
    failures: u32,
    origin: Origin,
) -> Outcome {
    let retry = shared.config.retry;
    spin(shared.config.spin_ns);
    let (partition, offset) = (record.partition as usize, record.offset as usize);
    if retry.policy == RetryPolicy::RetryTopic {
        let attempt = shared.attempts[partition][offset].fetch_add(1, Ordering::Relaxed) + 1;
        if attempt > 1 {
            shared.retries.fetch_add(1, Ordering::Relaxed);
        }
        if attempt > failures {
            shared.finish(record, Effect::Apply, origin);
        } else if retry.gives_up_after(attempt) {
            shared.finish(record, Effect::DeadLetter, origin);
        } else {
            if origin == Origin::Log {
                shared.retries_outstanding.fetch_add(1, Ordering::Relaxed);
            }
            // In the retry topic before its offset is done: a commit never skips it.
            let due = since_ns(shared.epoch).saturating_add(
                u64::try_from(retry.backoff_after(attempt).as_nanos()).unwrap_or(u64::MAX),
            );
            if let Err(error) = shared.side.retry(&record, due) {
                shared.side_failure.lock().get_or_insert(error);
            }
            if origin == Origin::Log {
                shared.finish(record, Effect::Handoff, origin);
            }
        }
        return Outcome::Done;
    }
    let pause = retry.policy == RetryPolicy::PausePartition;
    if pause {
        shared.failing[partition].fetch_add(1, Ordering::AcqRel);
    }
    let shared = Arc::clone(shared);
    Outcome::Pending(Box::pin(async move {
        let mut attempt = 1; // the one that just failed
        let effect = loop {
            if retry.gives_up_after(attempt) {
                break Effect::DeadLetter;
            }
            shared.timer.sleep(retry.backoff_after(attempt)).await;
            if shared.is_dead() {
                break Effect::Handoff; // nothing happens: `finish` sees the death
            }
            attempt += 1;
            shared.retries.fetch_add(1, Ordering::Relaxed);
            spin(shared.config.spin_ns);
            if attempt > failures {
                break Effect::Apply;
            }
        };
        shared.finish(record, effect, origin);
        if pause {
            shared.failing[partition].fetch_sub(1, Ordering::AcqRel);
        }
    }))
}
