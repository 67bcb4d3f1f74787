//! Wow's mixed-workload benchmark: senders that each send a command to a new aggregate and
//! wait until it is handled, beside slow aggregates always waiting and a hot one.

use rand_chacha::ChaCha8Rng;
use strategies::Job;

use super::sizes::Sizes;
use super::{no_state, one_type, Generator, Handlers, Kind, Metric, ScenarioId, ScenarioSpec};
use crate::workload::arrivals::{Arrivals, Driven, HotChain};
use crate::workload::work::NS_PER_MS;
use crate::workload::{Variant, Work, Workload, WorkloadSpec};

/// Commands to new aggregates beside waiting ones.
pub(super) const COLD_COMMAND: ScenarioSpec = ScenarioSpec {
    id: "cold-command",
    description: "commands to new aggregates beside slow ones waiting 5 ms and a hot one: Wow's \
                  mixed-workload benchmark",
    kind: Kind::Measured(Generator {
        arrivals: Arrivals::Driven,
        loads_of_saturation: false,
        workloads,
        messages,
        // Completion-driven: it runs for its duration, which is its bound.
        expected_work: |_, sizes, _| Work {
            driven_ns: Some(sizes.cold_duration_ms as f64 * NS_PER_MS),
            ..Work::default()
        },
        generate,
        state_bytes_per_key: no_state,
    }),
    handlers: Handlers::Wait,
    // Commands to new aggregates beside slow ones: cold commands handled per second.
    headline: Some(Metric::ColdRate),
    stream: 10,
    workers: None,
    window: None,
    aggregate_types: one_type,
    note: None,
    isolation: None,
    grows_partitions: false,
    resubmits: false,
    consumer_driver: false,
    charts: super::Charts { cold_command_ratio: true, ..super::Charts::NONE },
    summary: super::SummaryExtra::ColdCommand,
};

/// Cold commands one sender may send in a cell: more than any strategy here handles in
/// `--cold-duration-ms` (1M/s), so a sender never runs out before its time is up.
fn commands_per_sender(sizes: &Sizes) -> usize {
    const COLD_COMMANDS_PER_MS: u64 = 1_000;
    (sizes.cold_duration_ms * COLD_COMMANDS_PER_MS) as usize + 16
}

/// Messages each slow aggregate has: it cannot send faster than one per wait.
fn messages_per_chain(sizes: &Sizes) -> usize {
    (sizes.cold_duration_ms / sizes.cold_wait_ms) as usize + 2
}

fn workloads(id: ScenarioId, sizes: &Sizes) -> Vec<WorkloadSpec> {
    sizes
        .cold_slow
        .iter()
        .flat_map(|&slow| sizes.cold_senders.iter().map(move |&senders| (slow, senders)))
        .map(|(slow, senders)| {
            let param = format!("slow={slow},senders={senders}");
            let keys = slow + 1 + senders * commands_per_sender(sizes);
            WorkloadSpec::new(id, param, Variant::Cold { slow, senders }, keys)
        })
        .collect()
}

fn messages(spec: &WorkloadSpec, sizes: &Sizes) -> usize {
    let Variant::Cold { slow, senders } = spec.variant else { return 0 };
    slow * messages_per_chain(sizes) + senders * commands_per_sender(sizes)
}

/// One cell: `slow` aggregates each waiting `cold_wait_ms` on one message at a time, a hot
/// aggregate kept at `cold_hot_outstanding` short messages, and `senders` senders each
/// sending a command to a new aggregate and waiting until it is handled. Keys: the slow
/// aggregates `0..slow`, the hot one `slow`, then the cold commands.
fn generate(
    spec: &WorkloadSpec,
    sizes: &Sizes,
    _: &mut ChaCha8Rng,
    _: f64,
    workload: &mut Workload,
) {
    let Variant::Cold { slow, senders } = spec.variant else { return };
    let per_sender = commands_per_sender(sizes);
    let per_chain = messages_per_chain(sizes);
    let mut seqs = vec![0; workload.keys];
    let wait = Job::Wait { ns: (sizes.cold_wait_ms * NS_PER_MS as u64) as u32 };
    let mut chains = Vec::with_capacity(slow);
    for id in 0..slow {
        workload.troubled[id] = true;
        let first = workload.messages.len();
        for _ in 0..per_chain {
            workload.push(&mut seqs, 0, id, 0, wait);
        }
        chains.push(first..workload.messages.len());
    }
    workload.troubled[slow] = true;
    let hot = (sizes.cold_hot_outstanding > 0).then_some(HotChain {
        key: slow as u64,
        outstanding: sizes.cold_hot_outstanding,
        job: Job::Spin { ns: sizes.cold_hot_spin_ns },
    });
    let command = Job::Spin { ns: sizes.spin_ns };
    let mut sender_ranges = Vec::with_capacity(senders);
    for sender in 0..senders {
        let first = workload.messages.len();
        for command_index in 0..per_sender {
            workload.push(&mut seqs, 0, slow + 1 + sender * per_sender + command_index, 0, command);
        }
        sender_ranges.push(first..workload.messages.len());
    }
    workload.driven = Some(Driven {
        chains,
        hot,
        senders: sender_ranges,
        duration_ns: sizes.cold_duration_ms * NS_PER_MS as u64,
    });
}
