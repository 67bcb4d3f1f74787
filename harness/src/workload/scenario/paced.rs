//! Paced scenarios: each message is due at its intended time, sent then and never skipped
//! when late (no coordinated omission), so a stall shows in every message behind it.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use strategies::Job;

use super::sizes::Sizes;
use super::{
    no_state, one_type, Generator, Handlers, Kind, Metric, ScenarioId, ScenarioSpec,
    TWICE_UNSTRESSED, UNSTRESSED,
};
use crate::workload::arrivals::Arrivals;
use crate::workload::param::key_param;
use crate::workload::work::{busiest_of_random, busiest_of_random_among, NS_PER_MS};
use crate::workload::{Variant, Work, Workload, WorkloadSpec};

/// Head-of-line blocking under waits.
pub(super) const CONFLICT_BACKOFF: ScenarioSpec = ScenarioSpec {
    id: "conflict-backoff",
    description: "1% of keys fail a version check twice and back off (pending 10 ms, 20 ms): \
                  head-of-line blocking",
    kind: Kind::Measured(Generator { workloads: conflict_workloads, ..PACED_SMALL_KEYS }),
    handlers: Handlers::Wait,
    // Backoffs of a few keys: how long the untroubled keys wait behind them.
    headline: Some(Metric::BystanderP99),
    stream: 3,
    workers: None,
    window: None,
    aggregate_types: one_type,
    note: None,
    // Keys that wait must not hold up the others by more than this (the stressed cell keeps
    // its empty param; its twin's troubled keys spin instead of backing off).
    isolation: TWICE_UNSTRESSED,
    grows_partitions: false,
    resubmits: false,
    consumer_driver: false,
    charts: super::Charts { head_of_line: true, price_of_order: true, ..super::Charts::NONE },
    summary: super::SummaryExtra::None,
};

/// The cost of no stealing.
pub(super) const LONG_SYNC: ScenarioSpec = ScenarioSpec {
    id: "long-sync",
    description: "0.2% of messages spin 2 ms synchronously: the cost of no stealing",
    kind: Kind::Measured(Generator {
        expected_work: long_sync_work,
        generate: long_sync,
        ..PACED_SMALL_KEYS
    }),
    handlers: Handlers::Compute,
    // Rare 2 ms synchronous handlers: the rate that stealing (or its absence) leaves.
    headline: Some(Metric::Throughput),
    stream: 4,
    charts: super::Charts { head_of_line: true, ..super::Charts::NONE },
    isolation: None,
    grows_partitions: false,
    resubmits: false,
    consumer_driver: false,
    summary: super::SummaryExtra::None,
    ..CONFLICT_BACKOFF
};

/// The shared-window stall.
pub(super) const HOT_BACKLOG: ScenarioSpec = ScenarioSpec {
    id: "hot-backlog",
    description: "one key gets a burst of 1 ms pending messages while bystanders arrive: the \
                  shared-window stall",
    kind: Kind::Measured(Generator {
        workloads: |id, sizes| {
            let keys = sizes.small_keys + 1;
            let burst = |&burst| {
                WorkloadSpec::new(id, format!("burst={burst}"), Variant::Burst(burst), keys)
            };
            // The unstressed twin first: the same bystanders, no burst.
            let twin = WorkloadSpec::new(id, UNSTRESSED.to_owned(), Variant::Burst(0), keys);
            std::iter::once(twin).chain(sizes.bursts.iter().map(burst)).collect()
        },
        messages: |spec, sizes| match spec.variant {
            Variant::Burst(burst) => burst + sizes.bystanders,
            _ => sizes.bystanders,
        },
        expected_work: hot_backlog_work,
        generate: hot_backlog,
        ..PACED_SMALL_KEYS
    }),
    // One key's burst of pending messages: the bystanders' stall behind a shared window.
    headline: Some(Metric::BystanderP99),
    stream: 5,
    charts: super::Charts { head_of_line: true, burst_cliff: true, ..super::Charts::NONE },
    summary: super::SummaryExtra::None,
    ..CONFLICT_BACKOFF
};

/// Latency against offered load.
pub(super) const OPEN_LOOP: ScenarioSpec = ScenarioSpec {
    id: "open-loop",
    description: "constant-rate arrivals at fractions of saturation: latency vs offered load",
    kind: Kind::Measured(Generator {
        arrivals: Arrivals::Paced,
        loads_of_saturation: true,
        workloads: open_loop_workloads,
        messages: |_, sizes| sizes.open_messages,
        expected_work: open_loop_work,
        generate: open_loop,
        state_bytes_per_key: no_state,
    }),
    handlers: Handlers::Compute,
    // Constant-rate arrivals: the tail latency at each offered load.
    headline: Some(Metric::P99),
    stream: 7,
    charts: super::Charts {
        price_of_order: true,
        keys_sweep: true,
        latency_vs_load: true,
        ..super::Charts::NONE
    },
    isolation: None,
    grows_partitions: false,
    resubmits: false,
    consumer_driver: false,
    summary: super::SummaryExtra::None,
    ..CONFLICT_BACKOFF
};

/// conflict-backoff's and long-sync's: `--paced-messages` over `--small-keys`.
const PACED_SMALL_KEYS: Generator = Generator {
    arrivals: Arrivals::Paced,
    loads_of_saturation: false,
    workloads: small_keys,
    messages: |_, sizes| sizes.paced_messages,
    expected_work: conflict_work,
    generate: conflict_backoff,
    state_bytes_per_key: no_state,
};

/// conflict-backoff's workloads: its unstressed twin (the same arrivals, the troubled keys
/// spinning like the others), then the stressed workload under its original empty param.
fn conflict_workloads(id: ScenarioId, sizes: &Sizes) -> Vec<WorkloadSpec> {
    let keys = sizes.small_keys;
    vec![
        WorkloadSpec::new(id, UNSTRESSED.to_owned(), Variant::Stress(false), keys),
        WorkloadSpec::new(id, String::new(), Variant::Stress(true), keys),
    ]
}

fn small_keys(id: ScenarioId, sizes: &Sizes) -> Vec<WorkloadSpec> {
    vec![WorkloadSpec::new(id, String::new(), Variant::Single, sizes.small_keys)]
}

/// Nanoseconds from the first paced message to the last of `messages` at `--rate`.
fn paced_span_ns(messages: usize, sizes: &Sizes) -> f64 {
    messages.saturating_sub(1) as f64 * 1e9 / sizes.rate
}

/// The interval between paced messages at `--rate`.
fn paced_interval_ns(sizes: &Sizes) -> f64 {
    (1e9 / sizes.rate).max(1.0)
}

/// The troubled keys of conflict-backoff: `--troubled-pct` of the keys, at least one.
fn troubled_keys(keys: usize, sizes: &Sizes) -> usize {
    ((keys as f64 * sizes.troubled_pct / 100.0).round() as usize).max(1)
}

fn conflict_work(spec: &WorkloadSpec, sizes: &Sizes, _: f64) -> Work {
    let spin = f64::from(sizes.spin_ns);
    let messages = sizes.paced_messages as f64;
    let keys = spec.keys as f64;
    let troubled = (troubled_keys(spec.keys, sizes) as f64).min(keys);
    if spec.variant == Variant::Stress(false) {
        let mut work = Work::computing(messages * spin);
        work.longest_chain_ns = busiest_of_random(messages, spec.keys) * spin;
        work.last_arrival_ns = paced_span_ns(sizes.paced_messages, sizes);
        return work;
    }
    let share = troubled / keys;
    // Each troubled message runs three times and backs off twice (1x, then 2x).
    let backoff = sizes.backoff_ms as f64 * NS_PER_MS;
    let mut work = Work::computing(messages * (1.0 - share) * spin + messages * share * 3.0 * spin);
    work.add_wait(messages * share * 3.0 * backoff);
    let per_key = busiest_of_random_among(messages, keys, troubled);
    work.longest_chain_ns = per_key * (3.0 * backoff + 3.0 * spin);
    work.last_arrival_ns = paced_span_ns(sizes.paced_messages, sizes);
    work
}

fn conflict_backoff(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    rng: &mut ChaCha8Rng,
    _: f64,
    workload: &mut Workload,
) {
    let keys = spec.keys;
    let troubled = troubled_keys(keys, sizes);
    // Spread the troubled keys over the id space (ids 0, k, 2k, ...).
    let stride = keys / troubled;
    for index in 0..troubled {
        workload.troubled[index * stride] = true;
    }
    let spin = Job::Spin { ns: sizes.spin_ns };
    let retry = Job::Retry {
        retries: 2,
        backoff_ns: (sizes.backoff_ms * NS_PER_MS as u64) as u32,
        spin_ns: sizes.spin_ns,
    };
    // The unstressed twin keeps the troubled keys (the same bystanders) but not their retries.
    let stressed = spec.variant != Variant::Stress(false);
    let mut seqs = vec![0; keys];
    for index in 0..sizes.paced_messages {
        let id = rng.gen_range(0..keys);
        let job = if stressed && workload.troubled[id] { retry } else { spin };
        let at = (index as f64 * paced_interval_ns(sizes)) as u64;
        workload.push(&mut seqs, 0, id, at, job);
    }
}

fn long_sync_work(spec: &WorkloadSpec, sizes: &Sizes, _: f64) -> Work {
    let spin = f64::from(sizes.spin_ns);
    let messages = sizes.paced_messages as f64;
    let long = sizes.long_ms as f64 * NS_PER_MS;
    let longs = messages * sizes.long_pct / 100.0;
    let mut work = Work::computing((messages - longs) * spin + longs * long);
    let busiest = busiest_of_random(longs, spec.keys).max(longs.min(1.0));
    work.longest_chain_ns = busiest * long;
    work.last_arrival_ns = paced_span_ns(sizes.paced_messages, sizes);
    work
}

fn long_sync(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    rng: &mut ChaCha8Rng,
    _: f64,
    workload: &mut Workload,
) {
    let spin = Job::Spin { ns: sizes.spin_ns };
    let long = Job::Spin { ns: (sizes.long_ms * NS_PER_MS as u64) as u32 };
    let mut seqs = vec![0; spec.keys];
    for index in 0..sizes.paced_messages {
        let id = rng.gen_range(0..spec.keys);
        let job = if rng.gen_bool(sizes.long_pct / 100.0) {
            workload.troubled[id] = true;
            long
        } else {
            spin
        };
        let at = (index as f64 * paced_interval_ns(sizes)) as u64;
        workload.push(&mut seqs, 0, id, at, job);
    }
}

fn hot_backlog_work(spec: &WorkloadSpec, sizes: &Sizes, _: f64) -> Work {
    let Variant::Burst(burst) = spec.variant else { return Work::default() };
    let hot = burst as f64 * sizes.hot_wait_ms as f64 * NS_PER_MS;
    let mut work = Work::computing(sizes.bystanders as f64 * f64::from(sizes.spin_ns));
    work.add_wait(hot);
    let bystander = busiest_of_random(sizes.bystanders as f64, sizes.small_keys);
    work.longest_chain_ns = hot.max(bystander * f64::from(sizes.spin_ns));
    work.last_arrival_ns = paced_span_ns(sizes.bystanders, sizes);
    work
}

fn hot_backlog(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    rng: &mut ChaCha8Rng,
    _: f64,
    workload: &mut Workload,
) {
    let Variant::Burst(burst) = spec.variant else { return };
    // Key 0 is hot; bystanders are 1..=small_keys.
    workload.troubled[0] = true;
    let hot = Job::Wait { ns: (sizes.hot_wait_ms * NS_PER_MS as u64) as u32 };
    let spin = Job::Spin { ns: sizes.spin_ns };
    let mut seqs = vec![0; spec.keys];
    for _ in 0..burst {
        workload.push(&mut seqs, 0, 0, 0, hot);
    }
    for index in 0..sizes.bystanders {
        let id = 1 + rng.gen_range(0..sizes.small_keys);
        let at = (index as f64 * paced_interval_ns(sizes)) as u64;
        workload.push(&mut seqs, 0, id, at, spin);
    }
}

fn open_loop_workloads(id: ScenarioId, sizes: &Sizes) -> Vec<WorkloadSpec> {
    sizes
        .keys
        .iter()
        .flat_map(|&keys| sizes.loads.iter().map(move |&load| (keys, load)))
        .map(|(keys, load)| {
            let param = match key_param(sizes, keys) {
                keys if keys.is_empty() => format!("load={load}"),
                keys => format!("{keys} load={load}"),
            };
            WorkloadSpec::new(id, param, Variant::Load { keys, load }, keys)
        })
        .collect()
}

/// The rate of an open-loop workload: its load of `saturation`, at least 1/s.
fn open_loop_rate(spec: &WorkloadSpec, saturation: f64) -> f64 {
    let load = match spec.variant {
        Variant::Load { load, .. } => load,
        _ => 1.0,
    };
    (saturation * load).max(1.0)
}

fn open_loop_work(spec: &WorkloadSpec, sizes: &Sizes, saturation: f64) -> Work {
    let messages = sizes.open_messages as f64;
    let spin = f64::from(sizes.spin_ns);
    let mut work = Work::computing(messages * spin);
    work.longest_chain_ns = busiest_of_random(messages, spec.keys) * spin;
    work.last_arrival_ns = (messages - 1.0).max(0.0) * 1e9 / open_loop_rate(spec, saturation);
    work
}

fn open_loop(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    rng: &mut ChaCha8Rng,
    saturation: f64,
    workload: &mut Workload,
) {
    let interval_ns = 1e9 / open_loop_rate(spec, saturation);
    let spin = Job::Spin { ns: sizes.spin_ns };
    let mut seqs = vec![0; spec.keys];
    for index in 0..sizes.open_messages {
        let id = rng.gen_range(0..spec.keys);
        let at = (index as f64 * interval_ns) as u64;
        workload.push(&mut seqs, 0, id, at, spin);
    }
}
