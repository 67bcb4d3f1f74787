//! Closed-loop throughput of every strategy on the `uniform`, `zipf` and `many-types`
//! workloads: ~1 us CPU handlers (the harness [`BenchHandler`], recording every message
//! and checking per-key order), submitted as fast as the window admits, then drained.
//! One group per workload, one benchmark per strategy.
//!
//! This isolates saturation throughput on a smaller workload than the suite's (20,000
//! messages per iteration, so an iteration takes tens of milliseconds); the strategy is
//! built once per group, outside the timed part, and the recorder is reset between
//! iterations while the strategy is drained. After a strategy's last iteration the
//! recorder's counts are checked (nothing lost or duplicated; in order where promised), so
//! `cargo test --benches` doubles as a smoke test. The per-message cost alone (no-op
//! handler) is the `dispatch` bench. The headline comparison (throughput, tail latency,
//! head-of-line blocking, threads, correctness) comes from `keyed-bench run`.
//!
//! One workload: `cargo bench --bench throughput -- uniform`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use harness::measure::handler::BenchHandler;
use harness::measure::recorder::{Clock, Recorder};
use harness::measure::timer::Timer;
use harness::workload::{self, ScenarioId, Sizes, Workload};
use strategies::{StrategyConfig, StrategyId};

/// The suite's default seed: every run of the bench offers the same messages.
const SEED: u64 = 42;
/// Messages per iteration (the suite runs 200,000).
const MESSAGES: usize = 20_000;

fn sizes() -> Sizes {
    Sizes { messages: MESSAGES, ..Sizes::standard() }
}

/// The criterion parameter of a workload: what varies its shape.
fn parameter(workload: &Workload, sizes: &Sizes) -> String {
    match workload.scenario {
        ScenarioId::ManyTypes => format!("types={},keys={}", sizes.types, workload.keys),
        ScenarioId::Zipf => format!("keys={},s={}", workload.keys, sizes.zipf_s),
        _ => format!("keys={}", workload.keys),
    }
}

/// Checks the last iteration: every message ran once, and in order where promised.
fn check(recorder: &Recorder, id: StrategyId, scenario: ScenarioId) {
    let counts = recorder.correctness(0);
    assert!(counts.kept_promise(id.is_ordered()), "{id} on {scenario}: {counts:?}");
}

fn throughput(c: &mut Criterion) {
    let sizes = sizes();
    let timer = Timer::start();
    for scenario in [ScenarioId::Uniform, ScenarioId::Zipf, ScenarioId::ManyTypes] {
        let workload = workload::generate(scenario, &sizes, SEED, 0.0)
            .pop()
            .expect("closed-loop scenarios have one workload");
        let recorder = Arc::new(Recorder::new(&workload.messages, workload.keys, Clock::start()));
        let parameter = parameter(&workload, &sizes);

        let mut group = c.benchmark_group(scenario.as_str());
        group.throughput(Throughput::Elements(workload.messages.len() as u64));
        // Iterations take tens of milliseconds: flat sampling, ten samples.
        group.sampling_mode(SamplingMode::Flat);
        group.sample_size(10);
        group.warm_up_time(Duration::from_millis(500));
        group.measurement_time(Duration::from_secs(3));
        for &id in StrategyId::ALL {
            // Built outside the timed part: threads are started once per group.
            let handler = Arc::new(BenchHandler::new(Arc::clone(&recorder), timer.clone()));
            let strategy =
                id.build(StrategyConfig::default(), handler).expect("default settings are valid");
            let mut ran = false;
            group.bench_function(BenchmarkId::new(id.as_str(), &parameter), |bencher| {
                ran = true;
                bencher.iter_custom(|iterations| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iterations {
                        // Drained: nothing is in flight, so the recorder may be reset.
                        recorder.reset();
                        let started = Instant::now();
                        for message in &workload.messages {
                            strategy.submit(*message).expect("open strategy accepts");
                        }
                        strategy.drain();
                        total += started.elapsed();
                    }
                    total
                });
            });
            strategy.close();
            if ran {
                check(&recorder, id, scenario);
            }
            recorder.reset();
        }
        group.finish();
    }
}

criterion_group!(benches, throughput);
criterion_main!(benches);
