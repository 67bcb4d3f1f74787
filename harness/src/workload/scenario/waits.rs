//! Key-count sweeps of handlers that wait off the thread (async-io, async-io-zipf) or block
//! it (parallel-consumer), each through a small window of its own.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Zipf};
use strategies::Job;

use super::sizes::Sizes;
use super::{no_state, one_type, ElapsedBound, Generator, Handlers, Kind, Metric, ScenarioSpec};
use crate::workload::arrivals::Arrivals;
use crate::workload::reference::is_parallel_consumer_experiment;
use crate::workload::work::{busiest_of_random, zipf_top_share, NS_PER_MS};
use crate::workload::{Work, Workload, WorkloadSpec};

/// What waits cost per key.
pub(super) const ASYNC_IO: ScenarioSpec = ScenarioSpec {
    id: "async-io",
    description: "random 0-5 ms pending (non-blocking) handlers, window 100, by key count: what \
                  waits cost per key",
    kind: Kind::Measured(ROUND_ROBIN_WAITS),
    handlers: Handlers::Wait,
    // Non-blocking waits by key count: how close to the ideal bound the run finishes.
    headline: Some(Metric::Efficiency),
    stream: 6,
    workers: None,
    window: Some(|sizes| sizes.async_window),
    aggregate_types: one_type,
    note: None,
    isolation: None,
    grows_partitions: false,
    resubmits: false,
    consumer_driver: false,
    charts: super::Charts {
        price_of_order: true,
        elapsed_vs_keys: Some(ElapsedBound::Waits),
        ..super::Charts::NONE
    },
    summary: super::SummaryExtra::KeySweep,
};

/// What per-key order costs under skewed keys.
pub(super) const ASYNC_IO_ZIPF: ScenarioSpec = ScenarioSpec {
    id: "async-io-zipf",
    description: "async-io with Zipf keys (s = 1.1 over 200 keys): what per-key order costs \
                  under skewed keys",
    kind: Kind::Measured(Generator {
        workloads: |id, sizes| WorkloadSpec::by_keys(id, &sizes.async_zipf_keys),
        expected_work: |spec, sizes, _| async_work(spec, sizes, true),
        generate: |spec, sizes, rng, _, workload| fill_async(spec, sizes, rng, workload, true),
        ..ROUND_ROBIN_WAITS
    }),
    // The same under skewed keys.
    stream: 8,
    charts: super::Charts { elapsed_vs_keys: Some(ElapsedBound::SkewedWaits), ..ASYNC_IO.charts },
    summary: super::SummaryExtra::KeySweep,
    ..ASYNC_IO
};

/// The Parallel Consumer's published key-count experiment.
pub(super) const PARALLEL_CONSUMER: ScenarioSpec = ScenarioSpec {
    id: "parallel-consumer",
    description: "handlers block their thread 0-4 ms, 16 threads, window 100, random keys: the \
                  Parallel Consumer's published experiment",
    kind: Kind::Measured(Generator {
        arrivals: Arrivals::Closed,
        loads_of_saturation: false,
        workloads: |id, sizes| WorkloadSpec::by_keys(id, &sizes.pc_keys),
        messages: |_, sizes| sizes.pc_messages,
        expected_work: parallel_consumer_work,
        generate: parallel_consumer,
        state_bytes_per_key: no_state,
    }),
    handlers: Handlers::Block,
    // Blocking handlers, the Parallel Consumer's experiment: elapsed against the floor.
    headline: Some(Metric::Efficiency),
    stream: 9,
    workers: Some(|sizes| sizes.pc_threads),
    window: Some(|sizes| sizes.pc_window),
    note: Some(parallel_consumer_note),
    charts: super::Charts {
        elapsed_vs_keys: Some(ElapsedBound::BlockingPool),
        ..super::Charts::NONE
    },
    summary: super::SummaryExtra::ParallelConsumer,
    ..ASYNC_IO
};

/// async-io's generator: `--async-messages` waits over each of `--async-keys`,
/// round-robin; async-io-zipf's draws its keys by Zipf instead.
const ROUND_ROBIN_WAITS: Generator = Generator {
    arrivals: Arrivals::Closed,
    loads_of_saturation: false,
    workloads: |id, sizes| WorkloadSpec::by_keys(id, &sizes.async_keys),
    messages: |_, sizes| sizes.async_messages,
    expected_work: |spec, sizes, _| async_work(spec, sizes, false),
    generate: |spec, sizes, rng, _, workload| fill_async(spec, sizes, rng, workload, false),
    state_bytes_per_key: no_state,
};

/// The work of an async-io workload, its keys drawn by Zipf or round-robin.
fn async_work(spec: &WorkloadSpec, sizes: &Sizes, zipf_keys: bool) -> Work {
    let messages = sizes.async_messages as f64;
    let max = sizes.async_max_wait_ms as f64 * NS_PER_MS;
    // Waits are uniform in 0..=max: mean max / 2, spread max / sqrt(12).
    let mut work = Work::default();
    work.add_wait(messages * max / 2.0);
    let busiest = if zipf_keys {
        messages * zipf_top_share(spec.keys, sizes.zipf_s)
    } else {
        // Round-robin: every key gets its share exactly.
        (messages / spec.keys as f64).ceil()
    };
    let spread = busiest.sqrt() * max / 12f64.sqrt();
    let keys = spec.keys as f64;
    work.longest_chain_ns = busiest * max / 2.0 + spread * (2.0 * keys.max(1.0).ln()).sqrt();
    work
}

/// The non-blocking key sweeps: each message waits uniformly 0..=`--async-max-wait-ms`;
/// keys round-robin (async-io, as records spread over keys by a producer) or Zipf
/// (async-io-zipf).
fn fill_async(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    rng: &mut ChaCha8Rng,
    workload: &mut Workload,
    zipf_keys: bool,
) {
    let keys = spec.keys;
    let zipf = Zipf::new(keys as u64, sizes.zipf_s).expect("validated zipf exponent");
    let max_wait_ns = sizes.async_max_wait_ms * NS_PER_MS as u64;
    let mut seqs = vec![0; keys];
    for index in 0..sizes.async_messages {
        let id = if zipf_keys { zipf.sample(rng) as usize - 1 } else { index % keys };
        let wait = rng.gen_range(0..=max_wait_ns) as u32;
        workload.push(&mut seqs, 0, id, 0, Job::Wait { ns: wait });
    }
}

fn parallel_consumer_work(spec: &WorkloadSpec, sizes: &Sizes, _: f64) -> Work {
    let messages = sizes.pc_messages as f64;
    // Whole milliseconds, uniform in 0..=max.
    let mean = sizes.pc_max_block_ms as f64 / 2.0 * NS_PER_MS;
    Work {
        thread_ns: messages * mean,
        longest_chain_ns: busiest_of_random(messages, spec.keys) * mean,
        ..Work::default()
    }
}

/// The published test: keys drawn at random per message, each handler blocking its thread
/// a whole number of milliseconds, uniform in 0..=max.
fn parallel_consumer(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    rng: &mut ChaCha8Rng,
    _: f64,
    workload: &mut Workload,
) {
    let mut seqs = vec![0; spec.keys];
    for _ in 0..sizes.pc_messages {
        let id = rng.gen_range(0..spec.keys);
        let ms = rng.gen_range(0..=sizes.pc_max_block_ms);
        let job = Job::Block { ns: (ms * NS_PER_MS as u64) as u32 };
        workload.push(&mut seqs, 0, id, 0, job);
    }
}

/// The note of a scaled-down run: no published figure is shown beside it.
fn parallel_consumer_note(sizes: &Sizes) -> Option<String> {
    (!is_parallel_consumer_experiment(sizes)).then(|| {
        format!(
            "parallel-consumer ran a scaled-down sweep ({} messages, keys {:?}), so no \
             published figure is shown beside it; the published experiment is `keyed-bench \
             run --scenario parallel-consumer --published-parallel-consumer`",
            sizes.pc_messages, sizes.pc_keys
        )
    })
}
