//! Published figures of reference systems (docs/design.md section 5), in one place, read by
//! the scenarios that reproduce their experiments, the summary and the charts.

/// Elapsed seconds of the Confluent Parallel Consumer's KEY mode by number of keys, from
/// its README table (10,000 messages, max concurrency 100; docs/design.md section 5 says
/// exactly how it was measured).
pub const PARALLEL_CONSUMER_KEY_MODE_S: &[(usize, f64)] =
    &[(1, 26.7), (2, 13.6), (5, 5.9), (10, 3.3), (20, 2.24), (1_000, 2.06), (10_000, 2.13)];
/// The same experiment's PARTITION mode, in seconds.
pub const PARALLEL_CONSUMER_PARTITION_S: f64 = 22.2;
/// The same experiment's UNORDERED mode, in seconds.
pub const PARALLEL_CONSUMER_UNORDERED_S: f64 = 2.83;
/// Messages of that experiment.
pub const PARALLEL_CONSUMER_MESSAGES: usize = 10_000;

/// The messages and key counts of the published key-count experiment, as
/// `--published-async-io` sets them.
pub fn parallel_consumer_sizes() -> (usize, Vec<usize>) {
    let keys = PARALLEL_CONSUMER_KEY_MODE_S.iter().map(|&(keys, _)| keys).collect();
    (PARALLEL_CONSUMER_MESSAGES, keys)
}

/// The published KEY-mode seconds for `keys` keys, if the table has that key count.
pub fn parallel_consumer_key_mode_s(keys: usize) -> Option<f64> {
    PARALLEL_CONSUMER_KEY_MODE_S.iter().find(|&&(k, _)| k == keys).map(|&(_, seconds)| seconds)
}
