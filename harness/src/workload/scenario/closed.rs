//! Closed-loop scenarios of CPU handlers: messages offered as fast as the strategy admits
//! them, each spinning `--spin-ns`.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Zipf};
use strategies::Job;

use super::sizes::Sizes;
use super::{no_state, one_type, Generator, Handlers, Kind, Metric, ScenarioId, ScenarioSpec};
use crate::workload::arrivals::Arrivals;
use crate::workload::param::key_param;
use crate::workload::work::{busiest_of_random, zipf_top_share};
use crate::workload::{Variant, Work, Workload, WorkloadSpec, STATE_LINE_BYTES};

/// Raw throughput: uniform keys.
pub(super) const UNIFORM: ScenarioSpec = ScenarioSpec {
    id: "uniform",
    description: "uniform keys, ~1 us CPU handlers: raw throughput and dispatch cost",
    kind: Kind::Measured(KEYED),
    handlers: Handlers::Compute,
    // Raw dispatch cost of ~1 us handlers: messages per second.
    headline: Some(Metric::Throughput),
    stream: 0,
    workers: None,
    window: None,
    aggregate_types: one_type,
    note: None,
    isolation: None,
    grows_partitions: false,
    resubmits: false,
    consumer_driver: false,
    charts: super::Charts {
        price_of_order: true,
        keys_sweep: true,
        breakdown: true,
        ..super::Charts::NONE
    },
    summary: super::SummaryExtra::DispatchBench,
};

/// Hot keys: Zipf-distributed keys.
pub(super) const ZIPF: ScenarioSpec = ScenarioSpec {
    id: "zipf",
    description: "Zipf-distributed keys (hot keys), ~1 us handlers: fairness under skew",
    kind: Kind::Measured(Generator { expected_work: zipf_work, generate: zipf, ..KEYED }),
    // Hot keys: how much of the uniform rate survives skew.
    headline: Some(Metric::Throughput),
    stream: 1,
    charts: super::Charts { turn_length: true, breakdown: false, ..UNIFORM.charts },
    summary: super::SummaryExtra::None,
    ..UNIFORM
};

/// Many aggregate types.
pub(super) const MANY_TYPES: ScenarioSpec = ScenarioSpec {
    id: "many-types",
    description: "many aggregate types, ~1 us handlers: thread count",
    kind: Kind::Measured(Generator {
        workloads: many_types_workloads,
        generate: many_types,
        ..KEYED
    }),
    // Many aggregate types: the rate with one pool per type against shared pools.
    headline: Some(Metric::Throughput),
    stream: 2,
    aggregate_types: |sizes| sizes.types,
    charts: super::Charts { threads: true, ..super::Charts::NONE },
    summary: super::SummaryExtra::None,
    ..UNIFORM
};

/// State owned per aggregate.
pub(super) const STATEFUL: ScenarioSpec = ScenarioSpec {
    id: "stateful",
    description: "every aggregate owns a block of state its handler reads and updates, by key \
                  count: where affinity should pay",
    kind: Kind::Measured(Generator {
        workloads: |id, sizes| WorkloadSpec::by_keys(id, &sizes.stateful_keys),
        messages: |_, sizes| sizes.stateful_messages,
        expected_work: |spec, sizes, _| random_keys_work(sizes.stateful_messages, spec, sizes),
        generate: stateful,
        state_bytes_per_key: |sizes| sizes.state_kib * 1024,
        ..KEYED
    }),
    // State owned per aggregate: the rate where cache affinity should pay.
    headline: Some(Metric::Throughput),
    stream: 11,
    charts: super::Charts::NONE,
    summary: super::SummaryExtra::None,
    ..UNIFORM
};

/// uniform's generator: `--messages` over each of `--keys`, drawn uniformly.
const KEYED: Generator = Generator {
    arrivals: Arrivals::Closed,
    loads_of_saturation: false,
    workloads: |id, sizes| {
        sizes
            .keys
            .iter()
            .map(|&keys| WorkloadSpec::new(id, key_param(sizes, keys), Variant::Keys(keys), keys))
            .collect()
    },
    messages: |_, sizes| sizes.messages,
    expected_work: |spec, sizes, _| random_keys_work(sizes.messages, spec, sizes),
    generate: uniform,
    state_bytes_per_key: no_state,
};

/// zipf's busiest key is the hottest rank's: a share 1 / H(keys, s) of the messages.
fn zipf_work(spec: &WorkloadSpec, sizes: &Sizes, _: f64) -> Work {
    let messages = sizes.messages as f64;
    let mut work = Work::computing(messages * f64::from(sizes.spin_ns));
    let busiest = messages * zipf_top_share(spec.keys, sizes.zipf_s);
    work.longest_chain_ns = busiest * f64::from(sizes.spin_ns);
    work
}

fn many_types_workloads(id: ScenarioId, sizes: &Sizes) -> Vec<WorkloadSpec> {
    let keys = sizes.types * sizes.keys_per_type;
    vec![WorkloadSpec::new(id, String::new(), Variant::Single, keys)]
}

/// The work of `messages` spins of `--spin-ns` on keys drawn uniformly at random.
fn random_keys_work(messages: usize, spec: &WorkloadSpec, sizes: &Sizes) -> Work {
    let spin = f64::from(sizes.spin_ns);
    let mut work = Work::computing(messages as f64 * spin);
    work.longest_chain_ns = busiest_of_random(messages as f64, spec.keys) * spin;
    work
}

fn uniform(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    rng: &mut ChaCha8Rng,
    _: f64,
    workload: &mut Workload,
) {
    random_spins(spec, sizes, rng, workload, |_| 0);
}

/// `--messages` spins on keys drawn uniformly at random, each key of the aggregate type
/// `type_of` gives it.
fn random_spins(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    rng: &mut ChaCha8Rng,
    workload: &mut Workload,
    type_of: impl Fn(usize) -> u32,
) {
    let spin = Job::Spin { ns: sizes.spin_ns };
    let mut seqs = vec![0; spec.keys];
    for _ in 0..sizes.messages {
        let id = rng.gen_range(0..spec.keys);
        workload.push(&mut seqs, type_of(id), id, 0, spin);
    }
}

fn zipf(spec: &WorkloadSpec, sizes: &Sizes, rng: &mut ChaCha8Rng, _: f64, workload: &mut Workload) {
    let keys = spec.keys;
    // The hottest 1% (ids 0.., Zipf's ranks 1..): bystander latency is that of the other
    // keys, what fairness costs or buys them.
    workload.troubled[..keys.div_ceil(100)].fill(true);
    let spin = Job::Spin { ns: sizes.spin_ns };
    let zipf = Zipf::new(keys as u64, sizes.zipf_s).expect("validated zipf exponent");
    let mut seqs = vec![0; keys];
    for _ in 0..sizes.messages {
        let id = zipf.sample(rng) as usize - 1;
        workload.push(&mut seqs, 0, id, 0, spin);
    }
}

fn many_types(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    rng: &mut ChaCha8Rng,
    _: f64,
    workload: &mut Workload,
) {
    random_spins(spec, sizes, rng, workload, |id| (id / sizes.keys_per_type) as u32);
}

fn stateful(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    rng: &mut ChaCha8Rng,
    _: f64,
    workload: &mut Workload,
) {
    workload.state_bytes = spec.state_bytes_per_key(sizes);
    let touch = Job::Touch {
        lines: (workload.state_bytes / STATE_LINE_BYTES) as u32,
        spin_ns: sizes.spin_ns,
    };
    let mut seqs = vec![0; spec.keys];
    for _ in 0..sizes.stateful_messages {
        workload.push(&mut seqs, 0, rng.gen_range(0..spec.keys), 0, touch);
    }
}
