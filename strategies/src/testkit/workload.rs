//! Workloads: a seeded generator and per-key sequence numbers.

use std::collections::HashMap;

use crate::{Job, Key, Message};

/// A small deterministic generator (SplitMix64): the same seed gives the same workload on
/// every run and every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub const fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..bound` (`bound` > 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.below(high - low + 1)
    }

    /// True `percent` times in a hundred.
    pub fn percent(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// True with probability `p` (0 to 1).
    pub fn chance(&mut self, p: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < p
    }

    /// Shuffles `items` in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i as u64 + 1) as usize;
            items.swap(i, j);
        }
    }
}

/// Hands out per-key sequence numbers (0, 1, 2, ...) in the order messages are made, so a
/// stream built with it is in submission order per key.
#[derive(Clone, Debug, Default)]
pub struct Sequencer {
    next: HashMap<Key, u64>,
}

impl Sequencer {
    /// The next message of `key`.
    pub fn next(&mut self, key: Key, job: Job) -> Message {
        let seq = self.next.entry(key).or_insert(0);
        let message = Message { key, seq: *seq, intended_ns: 0, job };
        *seq += 1;
        message
    }

    /// `count` messages of `key`, each with the job `job(i)`.
    pub fn run_of(&mut self, key: Key, count: usize, job: impl Fn(usize) -> Job) -> Vec<Message> {
        (0..count).map(|i| self.next(key, job(i))).collect()
    }

    /// `per_key` messages of each key, interleaved at random, jobs from `job`.
    pub fn shuffled(
        &mut self,
        rng: &mut Rng,
        keys: &[Key],
        per_key: usize,
        mut job: impl FnMut(&mut Rng) -> Job,
    ) -> Vec<Message> {
        let mut order: Vec<Key> =
            keys.iter().flat_map(|&key| std::iter::repeat_n(key, per_key)).collect();
        rng.shuffle(&mut order);
        order.into_iter().map(|key| self.next(key, job(rng))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generator_repeats_for_a_seed_and_stays_in_range() {
        let draw = |seed| {
            let mut rng = Rng::new(seed);
            (0..100).map(|_| rng.between(3, 9)).collect::<Vec<_>>()
        };
        assert_eq!(draw(1), draw(1));
        assert_ne!(draw(1), draw(2));
        assert!(draw(1).iter().all(|n| (3..=9).contains(n)));
        let mut items: Vec<u32> = (0..50).collect();
        Rng::new(4).shuffle(&mut items);
        assert_ne!(items, (0..50).collect::<Vec<_>>());
        items.sort_unstable();
        assert_eq!(items, (0..50).collect::<Vec<_>>());
    }
}
