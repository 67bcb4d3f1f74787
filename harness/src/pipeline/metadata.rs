//! The commit metadata of `contiguous+metadata`: the completed offsets above the committed
//! one, in the smaller of two encodings, and the offset set they are built from.
//!
//! # Encoding
//!
//! Relative to the committed offset `c` (which is always incomplete), the completed offsets
//! above it are written in whichever of two encodings is smaller (the bitset on a tie),
//! after a one-byte tag. Nothing completed above `c` is written as empty metadata.
//!
//! - [`TAG_BITSET`]: bit `j` of byte `i` (least significant first) is set when offset
//!   `c + 1 + 8i + j` completed; the last byte holds the highest completed offset.
//! - [`TAG_RUN_LENGTH`]: from `c + 1` on, pairs of unsigned LEB128 varints: the number of
//!   incomplete offsets, then the number of completed ones that follow; the first count may
//!   be 0, every later one is at least 1.
//!
//! Dense completions favour the bitset (8 offsets a byte); long runs and sparse islands
//! favour run-length (a few bytes per run, whatever its length).
//!
//! # Truncation
//!
//! When neither encoding fits the limit, the one of the two cut to the limit that keeps
//! more completed offsets is written; both keep only the lowest ones (a prefix), so a
//! restart runs the rest again: duplicates, never a skipped record.
//!
//! # Text
//!
//! A Kafka client commits metadata as a string, and the broker refuses one longer than
//! `offset.metadata.max.bytes`. The encoding is therefore committed as unpadded standard
//! base64 ([`to_text`]): `n` bytes take `ceil(4n / 3)` characters ([`text_len`]), so a
//! limit of `L` text bytes leaves the encoding `floor(3L / 4)` bytes ([`binary_budget`]),
//! the most whose text still fits.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine as _;

/// The first metadata byte of the bitset encoding.
pub const TAG_BITSET: u8 = 1;
/// The first metadata byte of the run-length encoding.
pub const TAG_RUN_LENGTH: u8 = 2;

/// Commit metadata that is not an encoding this module writes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("commit metadata is corrupt: {reason}")]
pub struct MetadataError {
    /// What is wrong with it.
    pub reason: &'static str,
}

/// A set of offsets kept as disjoint, non-adjacent half-open ranges, so that long runs of
/// completions cost one entry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct RangeSet {
    /// `start -> end` (exclusive); no two ranges touch, or they would be one.
    ranges: BTreeMap<u64, u64>,
    /// How many offsets the ranges hold.
    pub(super) len: u64,
}

impl RangeSet {
    /// Whether `offset` is held.
    pub(super) fn contains(&self, offset: u64) -> bool {
        self.ranges.range(..=offset).next_back().is_some_and(|(_, &end)| offset < end)
    }

    /// Adds `offset`; `false` when it was there already.
    pub(super) fn insert(&mut self, offset: u64) -> bool {
        if self.contains(offset) {
            return false;
        }
        let before = self.ranges.range(..offset).next_back().map(|(&start, &end)| (start, end));
        let after_end = self.ranges.get(&(offset + 1)).copied();
        let start = match before {
            Some((start, end)) if end == offset => start,
            _ => offset,
        };
        let end = match after_end {
            Some(end) => {
                self.ranges.remove(&(offset + 1));
                end
            }
            None => offset + 1,
        };
        self.ranges.insert(start, end);
        self.len += 1;
        true
    }

    /// Removes the range starting at `start`, if there is one, and returns its end.
    pub(super) fn take_range_at(&mut self, start: u64) -> Option<u64> {
        let end = self.ranges.remove(&start)?;
        self.len -= end - start;
        Some(end)
    }

    /// Adds `start..end`, which lies at or above every range already held (decoding).
    pub(super) fn push_range(&mut self, start: u64, end: u64) {
        if end <= start {
            return;
        }
        match self.ranges.iter_mut().next_back() {
            Some((_, last_end)) if *last_end == start => *last_end = end,
            _ => {
                self.ranges.insert(start, end);
            }
        }
        self.len += end - start;
    }

    /// The highest offset held.
    pub(super) fn max(&self) -> Option<u64> {
        self.ranges.values().next_back().map(|&end| end - 1)
    }

    /// The ranges, ascending, as `(start, end)` with `end` exclusive.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().map(|(&start, &end)| (start, end))
    }
}

/// The completed offsets above `commit_offset` that the committed text `metadata` records,
/// ascending: what a `contiguous+metadata` consumer skips after resuming from that commit.
pub fn decode_metadata(commit_offset: u64, metadata: &str) -> Result<Vec<u64>, MetadataError> {
    let set = decode(commit_offset, &from_text(metadata)?)?;
    Ok(set.iter().flat_map(|(start, end)| start..end).collect())
}

/// The text a commit carries for the encoding `bytes`: unpadded standard base64.
pub fn to_text(bytes: &[u8]) -> String {
    STANDARD_NO_PAD.encode(bytes)
}

/// The encoding a commit's text carries.
pub(super) fn from_text(text: &str) -> Result<Vec<u8>, MetadataError> {
    STANDARD_NO_PAD.decode(text).map_err(|_| MetadataError { reason: "it is not unpadded base64" })
}

/// The text bytes [`to_text`] makes of `bytes` bytes: `ceil(4 x bytes / 3)`.
pub const fn text_len(bytes: usize) -> usize {
    bytes.saturating_mul(4).div_ceil(3)
}

/// The most encoding bytes whose text fits in `text` bytes: `floor(3 x text / 4)`.
pub const fn binary_budget(text: usize) -> usize {
    text.saturating_mul(3) / 4
}

/// An encoding, and how many completed offsets it kept (all, unless truncated).
pub(super) struct Encoded {
    /// The metadata to commit.
    pub(super) bytes: Vec<u8>,
    /// How many completed offsets it records.
    pub(super) kept: u64,
}

/// The smaller encoding of `done` above `base` (the bitset on a tie); past `limit` bytes,
/// the one of the two truncated encodings that keeps more of the lowest completed offsets.
pub(super) fn encode(base: u64, done: &RangeSet, limit: usize) -> Encoded {
    let Some(max) = done.max() else {
        return Encoded { bytes: Vec::new(), kept: 0 };
    };
    let bits_len = bitset_len(base, max);
    let runs_len = run_length_len(base, done, limit);
    if bits_len <= limit.min(runs_len) {
        return bitset(base, done, bits_len - 1);
    }
    if runs_len <= limit {
        return run_length(base, done, limit);
    }
    let bits = bitset(base, done, limit - 1);
    let runs = run_length(base, done, limit);
    if runs.kept > bits.kept {
        runs
    } else {
        bits
    }
}

/// The bytes the smaller encoding of `done` above `base` needs, 0 for none, counted only
/// until it passes `cap` (a value above `cap` means only that it does not fit).
pub(super) fn encoded_len(base: u64, done: &RangeSet, cap: usize) -> usize {
    match done.max() {
        Some(max) => bitset_len(base, max).min(run_length_len(base, done, cap)),
        None => 0,
    }
}

/// The bitset's length with its tag, for highest completed offset `max` above `base`.
fn bitset_len(base: u64, max: u64) -> usize {
    let payload = (max - base - 1) / 8 + 1;
    usize::try_from(payload).unwrap_or(usize::MAX).saturating_add(1)
}

/// The bitset of the offsets of `done` in its first `payload` bytes.
fn bitset(base: u64, done: &RangeSet, payload: usize) -> Encoded {
    let mut bytes = vec![0_u8; payload + 1];
    bytes[0] = TAG_BITSET;
    let covered = (payload as u64) * 8;
    let mut kept = 0;
    'ranges: for (start, end) in done.iter() {
        for offset in start..end {
            let bit = offset - base - 1;
            if bit >= covered {
                break 'ranges;
            }
            bytes[1 + (bit / 8) as usize] |= 1 << (bit % 8);
            kept += 1;
        }
    }
    // A truncated bitset whose last bytes are empty is trimmed to its last set bit.
    while bytes.len() > 1 && bytes[bytes.len() - 1] == 0 {
        bytes.pop();
    }
    if bytes.len() == 1 {
        bytes.clear();
    }
    Encoded { bytes, kept }
}

/// The run-length encoding of `done`, stopping before a pair would take it past `budget`
/// bytes; empty when not even one pair fits.
fn run_length(base: u64, done: &RangeSet, budget: usize) -> Encoded {
    let mut bytes = vec![TAG_RUN_LENGTH];
    let mut kept = 0;
    let mut cursor = base + 1;
    for (start, end) in done.iter() {
        let pair = varint_len(start - cursor) + varint_len(end - start);
        if bytes.len() + pair > budget {
            break;
        }
        push_varint(&mut bytes, start - cursor);
        push_varint(&mut bytes, end - start);
        kept += end - start;
        cursor = end;
    }
    if kept == 0 {
        bytes.clear();
    }
    Encoded { bytes, kept }
}

/// The run-length encoding's length with its tag, counted only until it passes `cap`.
fn run_length_len(base: u64, done: &RangeSet, cap: usize) -> usize {
    let mut len = 1;
    let mut cursor = base + 1;
    for (start, end) in done.iter() {
        len += varint_len(start - cursor) + varint_len(end - start);
        if len > cap {
            break;
        }
        cursor = end;
    }
    len
}

/// The bytes `value` takes as an unsigned LEB128 varint.
fn varint_len(mut value: u64) -> usize {
    let mut len = 1;
    while value >= 0x80 {
        value >>= 7;
        len += 1;
    }
    len
}

/// Appends `value` as an unsigned LEB128 varint: 7 bits a byte, least significant first,
/// the high bit set on every byte but the last.
fn push_varint(bytes: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        bytes.push((value as u8 & 0x7f) | 0x80);
        value >>= 7;
    }
    bytes.push(value as u8);
}

/// Reads the unsigned LEB128 varint at `*at` and moves `*at` past it.
fn read_varint(bytes: &[u8], at: &mut usize) -> Result<u64, MetadataError> {
    let mut value: u64 = 0;
    for shift in (0..64).step_by(7) {
        let &byte =
            bytes.get(*at).ok_or(MetadataError { reason: "a run-length varint is cut short" })?;
        *at += 1;
        let bits = u64::from(byte & 0x7f);
        if shift == 63 && bits > 1 {
            break;
        }
        value |= bits << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(MetadataError { reason: "a run-length varint overflows 64 bits" })
}

/// The completed offsets above `base` that `metadata` records, as ranges.
pub(super) fn decode(base: u64, metadata: &[u8]) -> Result<RangeSet, MetadataError> {
    let Some((&tag, payload)) = metadata.split_first() else {
        return Ok(RangeSet::default());
    };
    match tag {
        TAG_BITSET => decode_bitset(base, payload),
        TAG_RUN_LENGTH => decode_run_length(base, payload),
        _ => Err(MetadataError { reason: "unknown encoding tag" }),
    }
}

fn overflow() -> MetadataError {
    MetadataError { reason: "an offset overflows 64 bits" }
}

/// A bitset's offsets: bit `b` of byte `i` set means offset `base + 1 + 8 * i + b` is
/// completed.
fn decode_bitset(base: u64, payload: &[u8]) -> Result<RangeSet, MetadataError> {
    let mut set = RangeSet::default();
    for (index, byte) in payload.iter().enumerate() {
        for bit in 0..8 {
            if byte & (1 << bit) == 0 {
                continue;
            }
            let offset = (index as u64 * 8 + bit)
                .checked_add(base)
                .and_then(|offset| offset.checked_add(1))
                .filter(|&offset| offset < u64::MAX)
                .ok_or_else(overflow)?;
            set.push_range(offset, offset + 1);
        }
    }
    Ok(set)
}

/// A run-length encoding's offsets: from `base + 1` on, pairs of varints, the length of a
/// run of incomplete offsets, then of the completed run after it.
fn decode_run_length(base: u64, payload: &[u8]) -> Result<RangeSet, MetadataError> {
    let mut set = RangeSet::default();
    let mut at = 0;
    let mut cursor = base.checked_add(1).ok_or_else(overflow)?;
    while at < payload.len() {
        let gap = read_varint(payload, &mut at)?;
        if at == payload.len() {
            return Err(MetadataError {
                reason: "a run of incomplete offsets has no completed run after it",
            });
        }
        let run = read_varint(payload, &mut at)?;
        let start = cursor.checked_add(gap).ok_or_else(overflow)?;
        let end = start.checked_add(run).ok_or_else(overflow)?;
        set.push_range(start, end);
        cursor = end;
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The offsets the encoding `bytes` records above `base`.
    fn decoded(base: u64, bytes: &[u8]) -> Result<Vec<u64>, MetadataError> {
        Ok(decode(base, bytes)?.iter().flat_map(|(start, end)| start..end).collect())
    }

    fn set_of(offsets: &[u64]) -> RangeSet {
        let mut set = RangeSet::default();
        for &offset in offsets {
            set.insert(offset);
        }
        set
    }

    /// Random runs of offsets in `1..=span`, with random gaps between them.
    fn clustered(rng: &mut ChaCha8Rng, span: u64) -> Vec<u64> {
        let mut offsets = Vec::new();
        let mut at = rng.gen_range(1..50_u64);
        while at <= span {
            let run = rng.gen_range(1..200_u64);
            offsets.extend(at..(at + run).min(span + 1));
            at += run + rng.gen_range(1..300_u64);
        }
        offsets
    }

    /// Random completion sets: dense, sparse and clustered, each above a random base.
    fn random_sets(rng: &mut ChaCha8Rng, count: usize) -> Vec<(u64, Vec<u64>)> {
        (0..count)
            .map(|trial| {
                let base = rng.gen_range(0..1_000_000_u64);
                let span = rng.gen_range(1..3_000_u64);
                let offsets = match trial % 3 {
                    0 => (1..=span).filter(|_| rng.gen_bool(0.6)).collect::<Vec<_>>(),
                    1 => (1..=span).filter(|_| rng.gen_bool(0.01)).collect(),
                    _ => clustered(rng, span),
                };
                (base, offsets.into_iter().map(|relative| base + relative).collect())
            })
            .filter(|(_, offsets): &(u64, Vec<u64>)| !offsets.is_empty())
            .collect()
    }

    #[test]
    fn both_encodings_round_trip_and_the_smaller_is_chosen() {
        let mut rng = ChaCha8Rng::seed_from_u64(0x5eed);
        let (mut bitsets, mut run_lengths) = (0, 0);
        for (base, offsets) in random_sets(&mut rng, 300) {
            let done = set_of(&offsets);
            let max = *offsets.last().unwrap();
            let bits = bitset(base, &done, bitset_len(base, max) - 1);
            let runs = run_length(base, &done, usize::MAX);
            assert_eq!(bits.bytes.len(), bitset_len(base, max));
            assert_eq!(runs.bytes.len(), run_length_len(base, &done, usize::MAX));
            assert_eq!(decoded(base, &bits.bytes).unwrap(), offsets);
            assert_eq!(decoded(base, &runs.bytes).unwrap(), offsets);

            let chosen = encode(base, &done, DEFAULT_LIMIT);
            let smaller = bits.bytes.len().min(runs.bytes.len());
            assert_eq!(chosen.bytes.len(), smaller);
            assert_eq!(chosen.kept, offsets.len() as u64);
            assert_eq!(encoded_len(base, &done, DEFAULT_LIMIT + 1), smaller);
            assert_eq!(decoded(base, &chosen.bytes).unwrap(), offsets);
            match chosen.bytes[0] {
                TAG_BITSET => bitsets += 1,
                TAG_RUN_LENGTH => run_lengths += 1,
                tag => panic!("unexpected tag {tag}"),
            }
        }
        assert!(bitsets > 10 && run_lengths > 10, "{bitsets} bitsets, {run_lengths} run-lengths");
    }

    const DEFAULT_LIMIT: usize = 4_096;

    #[test]
    fn a_long_run_far_above_the_gap_is_run_length_encoded() {
        let done = set_of(&(1_000..1_100).collect::<Vec<_>>());
        // 999 incomplete (two varint bytes: 0xe7 0x07), then 100 completed.
        assert_eq!(encode(0, &done, DEFAULT_LIMIT).bytes, [TAG_RUN_LENGTH, 0xe7, 0x07, 100]);
        assert_eq!(bitset_len(0, 1_099), 139);
    }

    #[test]
    fn nothing_completed_is_empty_metadata() {
        let encoded = encode(7, &RangeSet::default(), DEFAULT_LIMIT);
        assert!(encoded.bytes.is_empty());
        assert_eq!(encoded_len(7, &RangeSet::default(), DEFAULT_LIMIT), 0);
        assert_eq!(decoded(7, &[]).unwrap(), Vec::<u64>::new());
    }

    #[test]
    fn past_the_limit_only_the_lowest_completions_are_kept() {
        let completed: Vec<u64> = (1..200).step_by(3).collect();
        let done = set_of(&completed);
        let encoded = encode(0, &done, 3);
        assert!(encoded.bytes.len() <= 3);
        let kept = decoded(0, &encoded.bytes).unwrap();
        assert_eq!(kept.len() as u64, encoded.kept);
        // Two bitset bytes: offsets 1 to 16, of which 1, 4, 7, 10, 13, 16 completed.
        assert_eq!(kept, [1, 4, 7, 10, 13, 16]);
        assert_eq!(kept, completed[..kept.len()], "a prefix of the completions");
    }

    #[test]
    fn corrupt_metadata_is_refused() {
        let reason = |metadata: &[u8]| decoded(5, metadata).unwrap_err().reason;
        assert_eq!(reason(&[9, 1]), "unknown encoding tag");
        assert!(reason(&[TAG_RUN_LENGTH, 3]).contains("no completed run"));
        assert!(reason(&[TAG_RUN_LENGTH, 0x80]).contains("cut short"));
        let too_long =
            [TAG_RUN_LENGTH, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1];
        assert!(reason(&too_long).contains("overflows"));
        // Two gaps of 2^63 - 1 offsets each carry the offsets past u64::MAX.
        let gap = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
        let mut past_the_end = vec![TAG_RUN_LENGTH];
        for _ in 0..2 {
            past_the_end.extend(gap);
            past_the_end.push(1);
        }
        assert_eq!(reason(&past_the_end), "an offset overflows 64 bits");
        assert_eq!(
            decoded(5, &[9]).unwrap_err().to_string(),
            "commit metadata is corrupt: unknown encoding tag"
        );
    }

    #[test]
    fn range_set_merges_neighbours() {
        let mut set = RangeSet::default();
        for offset in [5, 7, 6, 1, 3, 2] {
            assert!(set.insert(offset));
        }
        assert!(!set.insert(6));
        assert!(set.contains(2) && !set.contains(4) && !set.contains(8));
        assert_eq!(set.iter().collect::<Vec<_>>(), [(1, 4), (5, 8)]);
        assert_eq!(set.len, 6);
        assert_eq!(set.take_range_at(1), Some(4));
        assert_eq!(set.take_range_at(2), None);
        assert_eq!(set.len, 3);
        assert_eq!(set.max(), Some(7));
        set.push_range(8, 10);
        set.push_range(12, 13);
        assert_eq!(set.iter().collect::<Vec<_>>(), [(5, 10), (12, 13)]);
        assert_eq!(set.len, 6);
    }

    #[test]
    fn the_text_is_unpadded_base64_within_the_limit() {
        let done = set_of(&[3, 5, 6, 7, 8, 9]);
        let encoded = encode(2, &done, DEFAULT_LIMIT);
        let text = to_text(&encoded.bytes);
        assert_eq!(text, "AX0", "the tag 0x01 and the byte 0b0111_1101");
        assert_eq!(text.len(), text_len(encoded.bytes.len()));
        assert_eq!(decode_metadata(2, &text).unwrap(), [3, 5, 6, 7, 8, 9]);
        assert_eq!(decode_metadata(2, "").unwrap(), Vec::<u64>::new());
        assert_eq!(decode_metadata(2, "AX0=").unwrap_err().reason, "it is not unpadded base64");
        assert_eq!(decode_metadata(2, "A").unwrap_err().reason, "it is not unpadded base64");
        // The budget is the most bytes whose text fits: one byte more does not.
        for limit in 3..200 {
            let budget = binary_budget(limit);
            assert!(text_len(budget) <= limit, "limit {limit}");
            assert!(text_len(budget + 1) > limit, "limit {limit}");
        }
        assert_eq!(binary_budget(4_096), 3_072);
    }
}
