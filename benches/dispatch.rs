//! Dispatch overhead of every strategy: a no-op handler, so the time per message is the
//! strategy's own cost (admission through the window, queueing, waking a worker, running,
//! completing). 1,000 and 100,000 keys, so mailboxes are created and retired as in real
//! traffic; 1 and 2 workers. With 2 workers `keyed-mailbox+binding=round-robin` is the
//! binding ablation: new mailboxes go round-robin, with no scan of the workers' state.
//!
//! This isolates per-message cost only; the headline comparison (throughput, tail latency,
//! head-of-line blocking, threads) comes from `keyed-bench run`.
//!
//! # What a figure includes
//!
//! Criterion's time per message is one batch's wall time over its 10,000 messages: the
//! producer (this thread) submitting each message as it is, through the 256-message window,
//! then `drain` until every handler call has returned. The handler is a closure that
//! returns `Done`; keys go round-robin (`index % keys`), so with 1,000 keys every message
//! finds its key's mailbox retired and activates a new one. Built and warmed up outside the
//! timed part, with the reference's 20 us idle spin.
//!
//! A `keyed-bench run --scenario uniform --spin-ns 0` cell of the same keys and workers
//! times more, and other messages: every handler call records its start and end (the
//! recorder: two clock reads, the order checks, the message's slot), the producer reads the
//! clock for every message it sends (its intended time), keys are drawn at random (a
//! seventh of messages find their key's mailbox still active), and a repetition is 400,000
//! messages by default. docs/dispatch.md sets the two side by side, with the instructions
//! per message of each difference (`examples/dispatch_variants.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use strategies::{Binding, Job, Key, Message, Outcome, StrategyConfig, StrategyId};

/// Messages per timed batch; each batch ends with a drain.
const MESSAGES: u64 = 10_000;
/// Key counts: 1,000 keys, where a key's next message comes 1,000 messages later (its
/// mailbox has retired), and 100,000, where nearly every message meets a new key.
const KEYS: [u64; 2] = [1_000, 100_000];
/// Worker counts: 1 (no oversubscription with the producer on a 2-core machine) and 2.
const WORKERS: [usize; 2] = [1, 2];

fn dispatch(c: &mut Criterion) {
    eprintln!(
        "dispatch: no-op closure handler (no recorder), round-robin keys, messages sent \
         unstamped, 10,000 per batch and its drain; not a `keyed-bench run` cell \
         (docs/dispatch.md)"
    );
    let mut group = c.benchmark_group("dispatch");
    group.throughput(Throughput::Elements(MESSAGES));
    group.sample_size(10).warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    for keys in KEYS {
        let messages: Vec<Message> = (0..MESSAGES)
            .map(|index| Message {
                key: Key::new(0, index % keys),
                seq: index / keys,
                intended_ns: 0,
                job: Job::Noop,
            })
            .collect();
        for workers in WORKERS {
            // Every strategy as designed, then keyed-mailbox's binding ablation (with one
            // worker there is nothing to bind).
            let ablation = (workers > 1).then_some(StrategyId::KeyedMailbox);
            let designs = StrategyId::ALL.iter().map(|&id| (id, Binding::Reference));
            for (id, binding) in designs.chain(ablation.map(|id| (id, Binding::RoundRobin))) {
                // Built outside the timed part: threads are started once.
                let config = StrategyConfig { binding, ..StrategyConfig::with_workers(workers) };
                let strategy = id
                    .build(config, Arc::new(|_: &Message| Outcome::Done))
                    .expect("default settings are valid");
                let label = match binding {
                    Binding::Reference => id.as_str().to_owned(),
                    ablation => format!("{id}+binding={ablation}"),
                };
                let name = BenchmarkId::new(label, format!("keys={keys},workers={workers}"));
                group.bench_function(name, |bencher| {
                    bencher.iter_custom(|iterations| {
                        let started = Instant::now();
                        for _ in 0..iterations {
                            for message in &messages {
                                strategy.submit(*message).expect("open strategy accepts");
                            }
                            strategy.drain();
                        }
                        started.elapsed()
                    });
                });
                strategy.close();
            }
        }
    }
    group.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
