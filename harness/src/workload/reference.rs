//! Published figures of reference systems (docs/design.md section 5), in one place, read by
//! the scenarios that reproduce their experiments, the summary and the charts.

use super::Sizes;

/// Elapsed seconds of the Confluent Parallel Consumer's KEY mode by number of keys, from
/// its README table, produced by its key-count performance test: 10,000 messages, each
/// handler blocking its thread a whole number of milliseconds uniform in 0..=4, a pool of
/// 16 threads, at most 100 in flight, keys drawn at random per message, one run per cell
/// (docs/design.md section 5.1). `parallel-consumer` runs the same experiment.
pub const PARALLEL_CONSUMER_KEY_MODE_S: &[(usize, f64)] = &[
    (1, 26.7),
    (2, 13.6),
    (5, 5.9),
    (10, 3.3),
    (20, 2.24),
    (50, 2.20),
    (100, 2.18),
    (1_000, 2.06),
    (10_000, 2.13),
];
/// The same experiment's PARTITION mode (the partition as one serial stream), seconds.
pub const PARALLEL_CONSUMER_PARTITION_S: f64 = 22.2;
/// The same experiment's UNORDERED mode, seconds.
pub const PARALLEL_CONSUMER_UNORDERED_S: f64 = 2.83;
/// Messages of that experiment.
pub const PARALLEL_CONSUMER_MESSAGES: usize = 10_000;
/// Its thread pool.
pub const PARALLEL_CONSUMER_THREADS: usize = 16;
/// Its most messages in flight (`maxConcurrency`).
pub const PARALLEL_CONSUMER_WINDOW: usize = 100;
/// Its longest blocking sleep, in whole milliseconds (uniform from 0).
pub const PARALLEL_CONSUMER_MAX_BLOCK_MS: u64 = 4;

/// `sizes` with the published experiment's messages and key counts, as
/// `--published-parallel-consumer` sets them (threads, window and sleeps are already the
/// published ones by default).
pub fn with_parallel_consumer_sizes(sizes: &mut Sizes) {
    sizes.pc_messages = PARALLEL_CONSUMER_MESSAGES;
    sizes.pc_keys = PARALLEL_CONSUMER_KEY_MODE_S.iter().map(|&(keys, _)| keys).collect();
}

/// Whether `sizes` run exactly the published experiment's workload (any subset of its key
/// counts): only then may a published figure stand beside a measured one.
pub fn is_parallel_consumer_experiment(sizes: &Sizes) -> bool {
    sizes.pc_messages == PARALLEL_CONSUMER_MESSAGES
        && sizes.pc_threads == PARALLEL_CONSUMER_THREADS
        && sizes.pc_window == PARALLEL_CONSUMER_WINDOW
        && sizes.pc_max_block_ms == PARALLEL_CONSUMER_MAX_BLOCK_MS
}

/// Wow's 9.3 release notes, `MixedWorkloadDispatchBenchmark` (JMH): cold commands to new
/// aggregates beside 128 slow aggregates that each wait 5 ms, 9.3 (keyed mailboxes) against
/// 9.2 (per-type pools with hash-serial groups), by senders: (senders, ops/s on 9.2, ops/s
/// on 9.3), on the release's 4-core CI runners (docs/design.md section 5.4).
pub const WOW_COLD_COMMAND_4_CORES: &[(usize, f64, f64)] =
    &[(1, 348.0, 29_447.0), (3, 991.0, 78_597.0)];
/// The same benchmark on a 14-core laptop.
pub const WOW_COLD_COMMAND_14_CORES: &[(usize, f64, f64)] =
    &[(1, 4_900.0, 71_000.0), (3, 11_700.0, 186_000.0)];
/// The slow aggregates of those figures.
pub const WOW_COLD_COMMAND_SLOW: usize = 128;

/// Wow's published figures for `senders` at [`WOW_COLD_COMMAND_SLOW`] slow aggregates, on
/// each machine they were measured on: (cores, ops/s on 9.2, ops/s on 9.3).
pub fn wow_cold_command(senders: usize) -> Vec<(usize, f64, f64)> {
    let machines = [(4, WOW_COLD_COMMAND_4_CORES), (14, WOW_COLD_COMMAND_14_CORES)];
    let published = machines.into_iter().filter_map(|(cores, table)| {
        table.iter().find(|row| row.0 == senders).map(|&(_, old, new)| (cores, old, new))
    });
    published.collect()
}

/// The published KEY-mode seconds for `keys` keys, if the table has that key count.
pub fn parallel_consumer_key_mode_s(keys: usize) -> Option<f64> {
    PARALLEL_CONSUMER_KEY_MODE_S.iter().find(|&&(k, _)| k == keys).map(|&(_, seconds)| seconds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_preset_is_the_published_experiment_and_the_default_is_not() {
        let mut sizes = Sizes::standard();
        assert!(!is_parallel_consumer_experiment(&sizes));
        with_parallel_consumer_sizes(&mut sizes);
        assert!(is_parallel_consumer_experiment(&sizes));
        assert_eq!(sizes.pc_keys, [1, 2, 5, 10, 20, 50, 100, 1_000, 10_000]);
        sizes.validate().unwrap();
    }
}
