//! `conflict-backoff`: bystander completion time. 1% of the keys are troubled: each of
//! their messages fails a version check twice and backs off (pending waits of 1 ms, then
//! 2 ms, on the one shared harness [`Timer`]); every other message is a ~1 us CPU handler.
//! The whole workload is submitted as fast as the window admits, and the time measured is
//! from the first submit until every *bystander* message (one of an untroubled key) has
//! completed, read from the recorder's end times. A strategy whose waiting messages hold
//! back other keys (hash-serial groups, a window filled by queued bystanders) shows it
//! here; one that frees the worker during a wait finishes the bystanders in about the time
//! their CPU work takes. The troubled keys' own backoff chains finish later, in the drain,
//! outside the measured time.
//!
//! `inline` is skipped: it runs the handler on the submitting thread and so serialises
//! every wait, which measures the backoff schedule, not the strategy.
//!
//! The workload is smaller and faster than the suite's (4,000 messages, 1 ms first
//! backoff instead of 10 ms, closed loop instead of paced), so an iteration takes a few
//! milliseconds. The headline comparison (bystander latency percentiles under paced
//! arrivals, next to throughput, threads and correctness) comes from `keyed-bench run`.

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use harness::measure::handler::BenchHandler;
use harness::measure::recorder::{Clock, Recorder};
use harness::measure::timer::Timer;
use harness::workload::{self, ScenarioId, Sizes, Workload};
use strategies::{StrategyConfig, StrategyId};

/// The suite's default seed: every run of the bench offers the same messages.
const SEED: u64 = 42;

fn sizes() -> Sizes {
    Sizes {
        paced_messages: 4_000,
        small_keys: 1_000,
        troubled_pct: 1.0,
        backoff_ms: 1,
        ..Sizes::standard()
    }
}

/// The end of the last bystander message, in the recorder's clock.
fn last_bystander_end_ns(recorder: &Recorder, workload: &Workload) -> u64 {
    let mut last = 0;
    recorder.for_each_key(|id, timings| {
        if !workload.troubled[id] {
            last = timings.map(|timing| timing.end_ns).fold(last, u64::max);
        }
    });
    last
}

fn conflict_backoff(c: &mut Criterion) {
    let sizes = sizes();
    let timer = Timer::start();
    let workload = workload::generate(ScenarioId::ConflictBackoff, &sizes, SEED, 0.0)
        .pop()
        .expect("conflict-backoff has one workload");
    let clock = Clock::start();
    let recorder = Arc::new(Recorder::new(&workload.messages, workload.keys, clock));
    let troubled = workload.troubled.iter().filter(|&&troubled| troubled).count();
    let parameter = format!("troubled={troubled},backoff={}ms", sizes.backoff_ms);

    let mut group = c.benchmark_group(ScenarioId::ConflictBackoff.as_str());
    // Iterations take milliseconds to tens of milliseconds (and the drain after each adds
    // the troubled keys' backoff chains): flat sampling keeps the iteration count low.
    group.sampling_mode(SamplingMode::Flat);
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_secs(2));
    for &id in StrategyId::ALL.iter().filter(|&&id| id != StrategyId::Inline) {
        // Built outside the timed part: threads are started once.
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
                    let started = clock.now_ns();
                    for message in &workload.messages {
                        strategy.submit(*message).expect("open strategy accepts");
                    }
                    // The troubled keys finish here too, but only the bystanders count.
                    strategy.drain();
                    let finished = last_bystander_end_ns(&recorder, &workload);
                    total += Duration::from_nanos(finished.saturating_sub(started));
                }
                total
            });
        });
        strategy.close();
        if ran {
            let counts = recorder.correctness(0);
            assert!(counts.kept_promise(id.is_ordered()), "{id} on conflict-backoff: {counts:?}");
        }
        recorder.reset();
    }
    group.finish();
}

criterion_group!(benches, conflict_backoff);
criterion_main!(benches);
