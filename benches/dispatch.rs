//! Dispatch overhead of every strategy: a no-op handler, so the time per message is the
//! strategy's own cost (admission through the window, queueing, waking a worker, running,
//! completing). 1,000 keys, so mailboxes are created and retired as in real traffic.
//!
//! This isolates per-message cost only; the headline comparison (throughput, tail latency,
//! head-of-line blocking, threads) comes from `keyed-bench run`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use strategies::{Job, Key, Message, Outcome, StrategyConfig, StrategyId};

/// Messages per timed batch; each batch ends with a drain.
const MESSAGES: u64 = 10_000;
const KEYS: u64 = 1_000;

fn dispatch(c: &mut Criterion) {
    let mut group = c.benchmark_group("dispatch");
    group.throughput(Throughput::Elements(MESSAGES));
    group.sample_size(10).warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));
    let messages: Vec<Message> = (0..MESSAGES)
        .map(|index| Message {
            key: Key::new(0, index % KEYS),
            seq: index / KEYS,
            intended_ns: 0,
            job: Job::Noop,
        })
        .collect();
    for &id in StrategyId::ALL {
        // Built outside the timed part: threads are started once.
        let strategy = id
            .build(StrategyConfig::default(), Arc::new(|_: &Message| Outcome::Done))
            .expect("default settings are valid");
        group.bench_function(BenchmarkId::new(id.as_str(), format!("keys={KEYS}")), |bencher| {
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
    group.finish();
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
