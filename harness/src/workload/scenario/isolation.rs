//! Isolation stressors: one key under stress beside bystander keys, each scenario with its
//! unstressed twin ([`UNSTRESSED`]), the same bystanders at the same times without the
//! stress, so that `results::isolation` can divide the bystanders' p99 under the stress by
//! the same design's p99 without it, in the same run.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use strategies::Job;

use super::sizes::Sizes;
use super::{
    no_state, one_type, Generator, Handlers, Kind, Metric, ScenarioId, ScenarioSpec,
    TWICE_UNSTRESSED, UNSTRESSED,
};
use crate::workload::arrivals::{Arrivals, Saga};
use crate::workload::work::{busiest_of_random, NS_PER_MS};
use crate::workload::{Variant, Work, Workload, WorkloadSpec};

/// The share of hot-key's messages that go to its hot key.
pub const HOT_KEY_SHARE: f64 = 0.2;

/// A hot key starving the others.
pub(super) const HOT_KEY: ScenarioSpec = ScenarioSpec {
    id: "hot-key",
    description: "one key takes 20% of the paced messages, the rest uniform over the bystander \
                  keys: does a hot key starve the others",
    kind: Kind::Measured(Generator {
        arrivals: Arrivals::Paced,
        loads_of_saturation: false,
        workloads: |id, sizes| stressed_and_twin(id, 1 + sizes.hot_key_keys),
        messages: |_, sizes| sizes.hot_key_messages,
        expected_work: hot_key_work,
        generate: hot_key,
        state_bytes_per_key: no_state,
    }),
    handlers: Handlers::Compute,
    // A hot key beside bystanders: how long the bystanders wait.
    headline: Some(Metric::BystanderP99),
    stream: 17,
    workers: None,
    window: None,
    aggregate_types: one_type,
    note: None,
    isolation: TWICE_UNSTRESSED,
    grows_partitions: false,
    resubmits: false,
    consumer_driver: false,
    charts: super::Charts::NONE,
    summary: super::SummaryExtra::None,
};

/// A stressor's two workloads over `keys` keys: its unstressed twin, then `stress=on`. Key 0
/// is the stressed key in both (troubled, so never a bystander).
fn stressed_and_twin(id: ScenarioId, keys: usize) -> Vec<WorkloadSpec> {
    vec![
        WorkloadSpec::new(id, UNSTRESSED.to_owned(), Variant::Stress(false), keys),
        WorkloadSpec::new(id, "stress=on".to_owned(), Variant::Stress(true), keys),
    ]
}

/// The interval between hot-key's paced messages at `--hot-key-rate`.
fn hot_key_interval_ns(sizes: &Sizes) -> f64 {
    (1e9 / sizes.hot_key_rate).max(1.0)
}

fn hot_key_work(spec: &WorkloadSpec, sizes: &Sizes, _: f64) -> Work {
    let messages = sizes.hot_key_messages as f64;
    let spin = f64::from(sizes.hot_key_spin_ns);
    let mut work = Work::computing(messages * spin);
    let busiest = if spec.variant == Variant::Stress(true) {
        messages * HOT_KEY_SHARE
    } else {
        busiest_of_random(messages, spec.keys)
    };
    work.longest_chain_ns = busiest * spin;
    work.last_arrival_ns = (messages - 1.0).max(0.0) * hot_key_interval_ns(sizes);
    work
}

/// `--hot-key-messages` paced at `--hot-key-rate`, each spinning `--hot-key-spin-ns`. With
/// the stress on, each goes to key 0 with probability [`HOT_KEY_SHARE`], else to a bystander
/// drawn uniformly; its twin draws every message uniformly over all the keys, so the load is
/// the same and only its concentration on key 0 differs.
fn hot_key(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    rng: &mut ChaCha8Rng,
    _: f64,
    workload: &mut Workload,
) {
    let stressed = spec.variant == Variant::Stress(true);
    workload.troubled[0] = true;
    let spin = Job::Spin { ns: sizes.hot_key_spin_ns };
    let interval = hot_key_interval_ns(sizes);
    let mut seqs = vec![0; spec.keys];
    for index in 0..sizes.hot_key_messages {
        let id = if stressed {
            if rng.gen_bool(HOT_KEY_SHARE) {
                0
            } else {
                1 + rng.gen_range(0..spec.keys - 1)
            }
        } else {
            rng.gen_range(0..spec.keys)
        };
        workload.push(&mut seqs, 0, id, (index as f64 * interval) as u64, spin);
    }
}

/// A saga sending its next command from each completion, beside keys of its hash group.
pub(super) const SAGA: ScenarioSpec = ScenarioSpec {
    id: "saga",
    description: "a saga key whose handler waits, then sends its next command from its own \
                  completion, beside paced bystanders hashed to its group: does a re-entrant \
                  chain starve its group",
    kind: Kind::Measured(Generator {
        arrivals: Arrivals::Paced,
        loads_of_saturation: false,
        workloads: |id, sizes| stressed_and_twin(id, saga_key_space(sizes)),
        messages: |_, sizes| sizes.saga_messages,
        expected_work: saga_work,
        generate: saga,
        state_bytes_per_key: no_state,
    }),
    handlers: Handlers::Wait,
    // A re-entrant chain beside keys of its group: how long those keys wait.
    headline: Some(Metric::BystanderP99),
    stream: 18,
    workers: None,
    window: None,
    aggregate_types: one_type,
    note: None,
    isolation: TWICE_UNSTRESSED,
    grows_partitions: false,
    resubmits: true,
    consumer_driver: false,
    charts: super::Charts::NONE,
    summary: super::SummaryExtra::None,
};

/// The groups saga's bystanders are picked for: a bystander's hash agrees with the saga
/// key's modulo this, so it shares the saga's group whenever the group count divides it (the
/// hash-group designs' 64 groups per worker on 1, 2, 4, 8 or 16 workers).
const SAGA_GROUPS: usize = 1_024;

/// The saga key's aggregate id.
const SAGA_KEY: u64 = 0;

/// saga's bystander keys: the first `--saga-keys` ids that share the saga key's group.
fn saga_bystanders(sizes: &Sizes) -> Vec<usize> {
    let group = strategies::group_of(SAGA_KEY, SAGA_GROUPS);
    (1..)
        .filter(|&id| strategies::group_of(id as u64, SAGA_GROUPS) == group)
        .take(sizes.saga_keys)
        .collect()
}

/// saga's keys: every id up to its last bystander (those between have no messages).
fn saga_key_space(sizes: &Sizes) -> usize {
    saga_bystanders(sizes).last().map_or(1, |last| last + 1)
}

/// The interval between saga's paced bystander messages at `--saga-rate`.
fn saga_interval_ns(sizes: &Sizes) -> f64 {
    (1e9 / sizes.saga_rate).max(1.0)
}

/// The saga's messages per repetition: enough waits of `--saga-wait-ms` to outlast the
/// bystanders' arrivals.
fn saga_steps(sizes: &Sizes) -> u64 {
    let span_ns = (sizes.saga_messages as f64 - 1.0).max(0.0) * saga_interval_ns(sizes);
    (span_ns / (sizes.saga_wait_ms as f64 * NS_PER_MS)).ceil() as u64 + 1
}

/// The bystanders' work: the saga's chain is made as it runs, so the plan's estimate, like
/// the generated messages, holds the bystanders only.
fn saga_work(_: &WorkloadSpec, sizes: &Sizes, _: f64) -> Work {
    let messages = sizes.saga_messages as f64;
    let spin = f64::from(sizes.spin_ns);
    let mut work = Work::computing(messages * spin);
    work.longest_chain_ns = busiest_of_random(messages, sizes.saga_keys) * spin;
    work.last_arrival_ns = (messages - 1.0).max(0.0) * saga_interval_ns(sizes);
    work
}

/// `--saga-messages` bystander messages paced at `--saga-rate`, each spinning `--spin-ns`,
/// uniform over the bystanders; with the stress on, key 0 runs a chain of waits of
/// `--saga-wait-ms`, each sending the next from its completion for as long as the bystanders
/// arrive. Its twin has the same bystanders and no chain.
fn saga(spec: &WorkloadSpec, sizes: &Sizes, rng: &mut ChaCha8Rng, _: f64, workload: &mut Workload) {
    let bystanders = saga_bystanders(sizes);
    workload.troubled[SAGA_KEY as usize] = true;
    if spec.variant == Variant::Stress(true) {
        let wait = Job::Wait { ns: (sizes.saga_wait_ms * NS_PER_MS as u64) as u32 };
        workload.saga = Some(Saga { key: SAGA_KEY, steps: saga_steps(sizes), job: wait });
    }
    let spin = Job::Spin { ns: sizes.spin_ns };
    let interval = saga_interval_ns(sizes);
    let mut seqs = vec![0; spec.keys];
    for index in 0..sizes.saga_messages {
        let id = bystanders[rng.gen_range(0..bystanders.len())];
        workload.push(&mut seqs, 0, id, (index as f64 * interval) as u64, spin);
    }
}
