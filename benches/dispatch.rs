//! Dispatch overhead of every strategy: a no-op handler, so the time per message is the
//! strategy's own cost (admission through the window, queueing, waking a worker, running,
//! completing). 1,000 and 100,000 keys, so mailboxes are created and retired as in real
//! traffic; 1 and 2 workers.
//!
//! This isolates per-message cost only; the headline comparison (throughput, tail latency,
//! head-of-line blocking, threads) comes from `keyed-bench run`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use strategies::{Job, Key, Message, Outcome, StrategyConfig, StrategyId};

/// Messages per timed batch; each batch ends with a drain.
const MESSAGES: u64 = 10_000;
/// Key counts: 1,000 keys, where a key's next message comes 1,000 messages later (its
/// mailbox has retired), and 100,000, where nearly every message meets a new key.
const KEYS: [u64; 2] = [1_000, 100_000];
/// Worker counts: 1 (no oversubscription with the producer on a 2-core machine) and 2.
const WORKERS: [usize; 2] = [1, 2];

fn dispatch(c: &mut Criterion) {
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
            for &id in StrategyId::ALL {
                // Built outside the timed part: threads are started once.
                let strategy = id
                    .build(
                        StrategyConfig::with_workers(workers),
                        Arc::new(|_: &Message| Outcome::Done),
                    )
                    .expect("default settings are valid");
                let name = BenchmarkId::new(id.as_str(), format!("keys={keys},workers={workers}"));
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
