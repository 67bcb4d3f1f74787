//! A fast, fixed hash for keys and aggregate ids. Keys are benchmark data, not
//! attacker-controlled input, so a multiply-mix beats SipHash's denial-of-service
//! resistance here: the mailbox map hashes every message twice.

use std::hash::{BuildHasher, Hasher};

/// splitmix64's finaliser: a well-mixed 64-bit hash of `value`.
pub(crate) fn mix64(value: u64) -> u64 {
    let mut hash = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// Builds [`KeyHasher`]s; the hasher of the mailbox map.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BuildKeyHasher;

impl BuildHasher for BuildKeyHasher {
    type Hasher = KeyHasher;

    fn build_hasher(&self) -> KeyHasher {
        KeyHasher(0)
    }
}

/// Folds each integer in with a rotate-xor-multiply step and finishes with [`mix64`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KeyHasher(u64);

impl KeyHasher {
    fn fold(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(26) ^ value).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

impl Hasher for KeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.fold(u64::from_le_bytes(word));
        }
    }

    fn write_u32(&mut self, value: u32) {
        self.fold(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.fold(value);
    }

    fn finish(&self) -> u64 {
        mix64(self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Key;

    #[test]
    fn keys_spread_over_shards() {
        let mut shards = [0usize; 16];
        for id in 0..16_000 {
            let hash = BuildKeyHasher.hash_one(Key::new(0, id));
            shards[(hash >> 60) as usize] += 1;
        }
        assert!(shards.iter().all(|&count| (800..1200).contains(&count)), "{shards:?}");
        assert_ne!(
            BuildKeyHasher.hash_one(Key::new(0, 1)),
            BuildKeyHasher.hash_one(Key::new(1, 0))
        );
    }
}
