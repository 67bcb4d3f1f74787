//! A fast, fixed hash for keys and aggregate ids. Keys are benchmark data, not
//! attacker-controlled input, so a multiply-mix beats SipHash's denial-of-service
//! resistance here: the mailbox map hashes every message twice. Also FNV-1a, the fixed
//! hash that picks a custom strategy's plot colour from its id.

use std::hash::{BuildHasher, Hasher};

/// splitmix64's finaliser: a well-mixed 64-bit hash of `value`.
pub(crate) fn mix64(value: u64) -> u64 {
    let mut hash = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// 64-bit FNV-1a of `bytes`: fixed constants, no seed, so the same bytes hash alike on
/// every run and machine (a custom strategy keeps its plot colour).
pub(crate) fn fnv1a(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, &byte| (hash ^ u64::from(byte)).wrapping_mul(PRIME))
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

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        // The published 64-bit FNV-1a test vectors.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }
}
