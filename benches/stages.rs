//! The stages of a message's dispatch, one at a time, so that a strategy's `dispatch` time
//! per message can be read as a sum (weighted by its events per message, which
//! `keyed-bench run` reports in its breakdown):
//!
//! - `admission`: a window credit taken and returned (every message);
//! - `activation`: a mailbox entering the map and leaving it (every activation);
//! - `hop/running`: a push to a worker that is busy or spinning, and the worker's pop
//!   (every hop that wakes nobody), timed over a stream of pushes;
//! - `hop/wake-parked`: a push that must wake a parked worker, until the worker has the
//!   item (every wake-up), one at a time;
//! - `recorder`: the harness recording a message's start and end (every message of a
//!   `keyed-bench run`, none in `dispatch`).
//!
//! The stages run the strategies' own code (`strategies::stages`). On a 2-core machine
//! the two hop stages give the worker a core of its own.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use harness::measure::recorder::{Clock, Recorder};
use strategies::stages::{ActivationStage, AdmissionStage, HopStage};
use strategies::{Job, Key, Message};

/// Items per timed batch of the streaming stages.
const BATCH: u64 = 10_000;

fn stages(c: &mut Criterion) {
    let mut group = c.benchmark_group("stages");
    group.sample_size(20).warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(2));

    group.throughput(Throughput::Elements(1));
    let window = AdmissionStage::new(256);
    group.bench_function("admission", |bencher| bencher.iter(|| window.admit_and_finish()));

    let activation = ActivationStage::default();
    let mut id = 0u64;
    group.bench_function("activation", |bencher| {
        bencher.iter(|| {
            id = id.wrapping_add(1) % 1_000;
            activation.activate_and_retire(Key::new(0, id));
        });
    });

    group.throughput(Throughput::Elements(BATCH));
    // A spin far longer than a batch: the worker never parks while it is fed.
    let running = HopStage::start(1_000_000);
    group.bench_function("hop/running", |bencher| {
        bencher.iter_custom(|iterations| {
            let started = Instant::now();
            for _ in 0..iterations {
                let target = running.received() + BATCH;
                for item in 0..BATCH {
                    running.hop(item);
                }
                running.wait_received(target);
            }
            started.elapsed()
        });
    });
    drop(running);

    group.throughput(Throughput::Elements(1));
    let parked = HopStage::start(0);
    group.bench_function("hop/wake-parked", |bencher| {
        bencher.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for item in 0..iterations {
                parked.wait_parked();
                let target = parked.received() + 1;
                let started = Instant::now();
                parked.hop(item);
                parked.wait_received(target);
                total += started.elapsed();
            }
            total
        });
    });
    drop(parked);

    group.throughput(Throughput::Elements(BATCH));
    let messages: Vec<Message> = (0..BATCH)
        .map(|index| Message {
            key: Key::new(0, index % 1_000),
            seq: index / 1_000,
            intended_ns: 0,
            job: Job::Noop,
        })
        .collect();
    let recorder = Recorder::new(&messages, 1_000, Clock::start());
    group.bench_function("recorder", |bencher| {
        bencher.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                recorder.reset();
                let started = Instant::now();
                for message in &messages {
                    let token = recorder.start(message);
                    recorder.end(token, message);
                }
                total += started.elapsed();
            }
            total
        });
    });
    group.finish();
}

criterion_group!(benches, stages);
criterion_main!(benches);
