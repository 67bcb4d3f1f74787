//! Every workload is generated from the seed: the messages of each scenario at the quick
//! sizes and seed 42 are pinned (a digest of every message, its key, sequence number,
//! intended time and job, and of the workload's keys, troubled keys, arrivals, window,
//! threads, state and driven plan). A change to generation that moves one message fails
//! here; one that is meant (a new workload) updates the pin and says why.
//!
//! Moved on purpose: conflict-backoff and hot-backlog gained their unstressed twins
//! (`stress=off`), ahead of their earlier workloads, which are unchanged; hot-key and saga
//! are new.

use harness::workload::{generate, ScenarioId, Sizes};

/// (scenario, messages, digest) at `Sizes::quick()`, seed 42, saturation 1e6 msg/s.
const PINNED: &[(&str, usize, u64)] = &[
    ("uniform", 40_000, 0x9d9231a4de4b8b19),
    ("zipf", 40_000, 0x334dd0c4ac15a75d),
    ("many-types", 40_000, 0xf97a18f3b21b67fb),
    ("conflict-backoff", 10_000, 0x96a8821861e99e95),
    ("long-sync", 5_000, 0xe88f9e6784608372),
    ("hot-backlog", 25_981, 0x8b5ba678f9da48c1),
    ("hot-key", 8_000, 0x55c15eb89626b8d5),
    ("async-io", 2_000, 0xb94ba0d18e001b63),
    ("async-io-zipf", 1_000, 0xc005fcaea9ef34b4),
    ("parallel-consumer", 2_000, 0xeb37403850072809),
    ("cold-command", 205_392, 0x65b5d929999af60a),
    ("saga", 4_000, 0x07101347ff001db1),
    ("open-loop", 40_000, 0x779b1caa88b22878),
    ("stateful", 20_000, 0x8916277c6d9de066),
    ("pipeline-crash", 0, 0xcbf29ce484222325),
    ("pipeline-retry", 0, 0xcbf29ce484222325),
    ("pipeline-expand", 0, 0xcbf29ce484222325),
    ("pipeline-reorder", 0, 0xcbf29ce484222325),
    ("pipeline-rebalance", 0, 0xcbf29ce484222325),
];

/// FNV-1a over `text`, continuing from `hash`.
fn fnv(mut hash: u64, text: &str) -> u64 {
    for byte in text.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

#[test]
fn the_seeded_workloads_are_the_pinned_ones() {
    let sizes = Sizes::quick();
    let mut moved = Vec::new();
    for &scenario in ScenarioId::ALL {
        let mut hash = 0xcbf2_9ce4_8422_2325;
        let mut messages = 0;
        for w in generate(scenario, &sizes, 42, 1e6) {
            let shape = format!(
                "{}|{}|{:?}|{:?}|{:?}|{:?}|{}|{:?}",
                w.param,
                w.keys,
                w.troubled,
                w.arrivals,
                w.window,
                w.workers,
                w.state_bytes,
                w.driven
            );
            hash = fnv(hash, &shape);
            if let Some(saga) = &w.saga {
                hash = fnv(hash, &format!("{saga:?}"));
            }
            for message in &w.messages {
                hash = fnv(hash, &format!("{message:?}"));
                messages += 1;
            }
        }
        let pinned = PINNED.iter().find(|(id, _, _)| *id == scenario.as_str());
        if pinned.map(|&(_, count, digest)| (count, digest)) != Some((messages, hash)) {
            moved.push(format!("(\"{scenario}\", {messages}, {hash:#018x}),"));
        }
    }
    assert!(moved.is_empty(), "messages moved or not pinned; now:\n{}", moved.join("\n"));
}
