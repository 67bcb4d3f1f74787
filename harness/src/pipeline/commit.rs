//! Per-partition completion tracking and the three commit policies: what a consumer that
//! runs records out of order (different keys in parallel) may tell the group it has done.
//!
//! # Protocol
//!
//! 1. On assignment (first start, restart or rebalance) the consumer builds a
//!    [`PartitionProgress`] with [`PartitionProgress::resume`] from the partition's
//!    committed [`Commit`] (or none) and the policy. It seeks to
//!    [`PartitionProgress::resume_offset`]; under `contiguous+metadata` the completed
//!    offsets above it are decoded from the commit's metadata.
//! 2. For every polled record it calls [`PartitionProgress::polled`]; `false` means the
//!    record completed before the restart and must be skipped
//!    ([`PartitionProgress::already_done`]).
//! 3. When the handler finishes a record it calls [`PartitionProgress::completed`]. The
//!    progress keeps the *contiguous offset* (every offset below it completed) and the
//!    completed offsets above it, as merged ranges.
//! 4. Periodically the consumer commits [`PartitionProgress::commit`]:
//!    - `contiguous`: the contiguous offset. Safe: nothing below it is incomplete. A crash
//!      redelivers every record from it on, completed ones included.
//!    - `contiguous+metadata`: the contiguous offset, plus the completed offsets above it in
//!      the metadata. Safe, and a crash redelivers only the incomplete records.
//!    - `highest-completed`: the offset after the highest completed one. Unsafe: a crash
//!      skips every incomplete record below it, for good.
//! 5. Under `contiguous+metadata`, when the metadata's text would take more than 75% of the
//!    metadata limit while the record at the gap (the contiguous offset) is in flight,
//!    [`PartitionProgress::needs_pause`] turns on and the consumer pauses the partition
//!    until the gap closes (the contiguous offset moves up and the encoding shrinks). A
//!    record at the gap that has not been polled (a consumer resumed from full metadata
//!    seeks to it) never pauses the partition: only a poll can start it. Records already
//!    in flight may still complete; if the text then passes the limit itself, only the
//!    lowest completed offsets that fit are written, so a crash redelivers the rest: more
//!    duplicates, never a skipped record.
//!
//! The limit counts the metadata as the broker stores it: text, the binary encoding in
//! base64, so the encoding itself gets three quarters of it. The metadata's two encodings,
//! how they are truncated and written as text, are described in [`super::metadata`].

use std::collections::BTreeSet;

use super::metadata::{self, MetadataError, RangeSet};
use super::transport::Commit;
use crate::results::CommitPolicy;

/// The default metadata limit, in bytes of text (Kafka's `offset.metadata.max.bytes` is
/// 4,096).
pub const DEFAULT_METADATA_LIMIT_BYTES: usize = 4_096;
/// The smallest metadata limit, in bytes of text: the smallest non-empty encoding (a tag
/// and one bitset byte, the 8 offsets after the committed one) must fit, and its 2 bytes
/// take 3 characters of base64. At 3 the partition pauses whenever anything above the gap
/// completed while the gap is in flight (3 characters are past 75% of 3); from 4 on the
/// smallest encoding stays below the back-pressure threshold.
pub const MIN_METADATA_LIMIT: usize = 3;

/// A commit-tracking mistake or a commit that cannot be read back.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommitError {
    /// The metadata limit is below [`MIN_METADATA_LIMIT`].
    #[error("metadata limit of {given} bytes is below the minimum of {min} bytes")]
    MetadataLimitTooSmall {
        /// The limit given.
        given: usize,
        /// [`MIN_METADATA_LIMIT`].
        min: usize,
    },
    /// The committed metadata cannot be decoded.
    #[error(transparent)]
    CorruptMetadata(#[from] MetadataError),
}

/// The most bytes of metadata text `contiguous+metadata` may write in one commit (what a
/// broker counts against `offset.metadata.max.bytes`), validated against
/// [`MIN_METADATA_LIMIT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MetadataLimit(usize);

impl MetadataLimit {
    /// [`DEFAULT_METADATA_LIMIT_BYTES`].
    pub const DEFAULT: MetadataLimit = MetadataLimit(DEFAULT_METADATA_LIMIT_BYTES);

    /// A limit of `bytes`; fails below [`MIN_METADATA_LIMIT`].
    pub fn new(bytes: usize) -> Result<Self, CommitError> {
        if bytes < MIN_METADATA_LIMIT {
            return Err(CommitError::MetadataLimitTooSmall {
                given: bytes,
                min: MIN_METADATA_LIMIT,
            });
        }
        Ok(Self(bytes))
    }

    /// The limit, in bytes of text.
    pub const fn bytes(self) -> usize {
        self.0
    }

    /// The most bytes the binary encoding may take: three quarters of the limit, whose
    /// base64 text fits it.
    pub const fn binary_budget(self) -> usize {
        metadata::binary_budget(self.0)
    }

    /// Whether metadata text of `len` bytes takes more than 75% of the limit.
    fn past_pause_threshold(self, len: usize) -> bool {
        len.saturating_mul(4) > self.0.saturating_mul(3)
    }
}

impl Default for MetadataLimit {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One partition's progress: what was polled, what completed, and what may be committed.
#[derive(Clone, Debug)]
pub struct PartitionProgress {
    /// Which commit [`PartitionProgress::commit`] builds.
    policy: CommitPolicy,
    /// The most metadata bytes a commit may carry; past 75% of it the partition pauses.
    limit: MetadataLimit,
    /// Where the consumer seeks on resuming: the committed offset.
    resume_offset: u64,
    /// Every offset below it completed: the `contiguous` commit. It is itself incomplete.
    contiguous: u64,
    /// Completed offsets above `contiguous` (never `contiguous` itself).
    done_above: RangeSet,
    /// Polled offsets that have not completed yet.
    in_flight: BTreeSet<u64>,
    /// The highest offset completed since the resume, or carried in its metadata.
    highest_completed: Option<u64>,
}

impl PartitionProgress {
    /// The progress of a partition whose group commit is `commit` (none: never committed,
    /// start at 0). Under `contiguous+metadata` the completed offsets in the metadata are
    /// decoded and will be skipped; the other policies ignore metadata.
    pub fn resume(
        commit: Option<&Commit>,
        policy: CommitPolicy,
        limit: MetadataLimit,
    ) -> Result<Self, CommitError> {
        let resume_offset = commit.map_or(0, |commit| commit.offset);
        let done_above = match commit {
            Some(commit) if policy == CommitPolicy::ContiguousMetadata => {
                metadata::decode(commit.offset, &metadata::from_text(&commit.metadata)?)?
            }
            _ => RangeSet::default(),
        };
        Ok(Self {
            policy,
            limit,
            resume_offset,
            contiguous: resume_offset,
            highest_completed: done_above.max(),
            done_above,
            in_flight: BTreeSet::new(),
        })
    }

    /// The policy commits follow.
    pub fn policy(&self) -> CommitPolicy {
        self.policy
    }

    /// The offset to seek to after [`PartitionProgress::resume`]: the committed offset.
    pub fn resume_offset(&self) -> u64 {
        self.resume_offset
    }

    /// Whether `offset` is known to have completed (below the contiguous offset, or
    /// completed above it, before the restart or since): the consumer skips it.
    pub fn already_done(&self, offset: u64) -> bool {
        offset < self.contiguous || self.done_above.contains(offset)
    }

    /// Records that `offset` was polled. `false`: it already completed and must be skipped.
    pub fn polled(&mut self, offset: u64) -> bool {
        if self.already_done(offset) {
            return false;
        }
        self.in_flight.insert(offset);
        true
    }

    /// Records that `offset` completed. `false`: it had completed already (a duplicate).
    pub fn completed(&mut self, offset: u64) -> bool {
        self.in_flight.remove(&offset);
        if self.already_done(offset) {
            return false;
        }
        self.highest_completed = Some(self.highest_completed.map_or(offset, |h| h.max(offset)));
        if offset == self.contiguous {
            self.contiguous = self.done_above.take_range_at(offset + 1).unwrap_or(offset + 1);
        } else {
            self.done_above.insert(offset);
        }
        true
    }

    /// What to commit now, by the policy (see the module docs).
    pub fn commit(&self) -> Commit {
        match self.policy {
            CommitPolicy::Contiguous | CommitPolicy::HighestCompleted => {
                Commit::offset(self.committed_offset())
            }
            CommitPolicy::ContiguousMetadata => {
                let budget = self.limit.binary_budget();
                let encoded = metadata::encode(self.contiguous, &self.done_above, budget);
                Commit { offset: self.contiguous, metadata: metadata::to_text(&encoded.bytes) }
            }
        }
    }

    /// The offset [`PartitionProgress::commit`] would commit, without encoding metadata.
    pub fn committed_offset(&self) -> u64 {
        match self.policy {
            CommitPolicy::Contiguous | CommitPolicy::ContiguousMetadata => self.contiguous,
            CommitPolicy::HighestCompleted => {
                self.highest_completed.map_or(self.contiguous, |h| self.contiguous.max(h + 1))
            }
        }
    }

    /// The offset below which every offset completed.
    pub fn contiguous_offset(&self) -> u64 {
        self.contiguous
    }

    /// The highest completed offset, if any completed (or was carried in the metadata).
    pub fn highest_completed(&self) -> Option<u64> {
        self.highest_completed
    }

    /// Polled records that have not completed.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether the consumer should stop polling the partition: under `contiguous+metadata`,
    /// the metadata's text would take more than 75% of the limit and the record at the gap (the
    /// contiguous offset) is in flight, so that the gap can close without another poll.
    /// Turns off again once the gap closes enough, and whenever the record at the gap has
    /// not been polled yet (a consumer resumed from full metadata, or one whose gap moved
    /// up to a record it has not reached): pausing then would wait for ever on a record
    /// that only a poll can start. Always off under the other policies.
    pub fn needs_pause(&self) -> bool {
        self.policy == CommitPolicy::ContiguousMetadata
            && self.in_flight.contains(&self.contiguous)
            && self.limit.past_pause_threshold(self.encoded_len())
    }

    /// The bytes of text the metadata needs for every completed offset above the
    /// contiguous one (0 when none), counted only up to just past the limit: a value above
    /// the limit means the commit will be truncated.
    pub fn encoded_len(&self) -> usize {
        let cap = self.limit.binary_budget() + 1;
        metadata::text_len(metadata::encoded_len(self.contiguous, &self.done_above, cap))
    }

    /// Committed-offset lag: `(highest completed offset + 1) - committed offset`, 0 when
    /// nothing completed above the commit. How far the commit trails the work done.
    pub fn lag(&self) -> u64 {
        self.highest_completed.map_or(0, |h| (h + 1).saturating_sub(self.committed_offset()))
    }

    /// Offsets below the highest completed one that have not completed (in flight, or not
    /// run again yet after a restart): what a `highest-completed` commit skips on a crash.
    pub fn incomplete_below_highest(&self) -> u64 {
        match self.highest_completed {
            Some(h) if h >= self.contiguous => (h + 1 - self.contiguous) - self.done_above.len,
            _ => 0,
        }
    }

    /// Completed records that a crash now, and a restart from [`PartitionProgress::commit`],
    /// would run again: every completed offset above the contiguous one under
    /// `contiguous`, those the metadata had no room for under `contiguous+metadata`, none
    /// under `highest-completed`.
    pub fn redelivered_if_crashed(&self) -> u64 {
        match self.policy {
            CommitPolicy::Contiguous => self.done_above.len,
            CommitPolicy::ContiguousMetadata => {
                let budget = self.limit.binary_budget();
                self.done_above.len
                    - metadata::encode(self.contiguous, &self.done_above, budget).kept
            }
            CommitPolicy::HighestCompleted => 0,
        }
    }

    /// Incomplete records that a crash now would skip for good: those below a
    /// `highest-completed` commit; none under the safe policies.
    pub fn skipped_if_crashed(&self) -> u64 {
        match self.policy {
            CommitPolicy::HighestCompleted => self.incomplete_below_highest(),
            CommitPolicy::Contiguous | CommitPolicy::ContiguousMetadata => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    use crate::pipeline::metadata::{TAG_BITSET, TAG_RUN_LENGTH};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn fresh(policy: CommitPolicy) -> PartitionProgress {
        PartitionProgress::resume(None, policy, MetadataLimit::DEFAULT).unwrap()
    }

    /// What a restart from `commit` runs again of offsets `0..end`.
    fn redelivered(commit: &Commit, policy: CommitPolicy, end: u64) -> Vec<u64> {
        let mut restarted =
            PartitionProgress::resume(Some(commit), policy, MetadataLimit::DEFAULT).unwrap();
        (restarted.resume_offset()..end).filter(|&offset| restarted.polled(offset)).collect()
    }

    #[test]
    fn failed_offsets_two_and_four_under_each_policy() {
        let mut outcomes = BTreeMap::new();
        for policy in CommitPolicy::ALL {
            let mut progress = fresh(policy);
            for offset in 0..10 {
                assert!(progress.polled(offset));
            }
            for offset in (0..10).filter(|offset| ![2, 4].contains(offset)) {
                assert!(progress.completed(offset));
            }
            let commit = progress.commit();
            outcomes.insert(policy, (commit.clone(), redelivered(&commit, policy, 10)));
        }

        let (contiguous, again) = &outcomes[&CommitPolicy::Contiguous];
        assert_eq!(*contiguous, Commit::offset(2));
        assert_eq!(*again, (2..10).collect::<Vec<_>>());
        assert_eq!(again.len(), 8);

        let (with_metadata, again) = &outcomes[&CommitPolicy::ContiguousMetadata];
        assert_eq!(with_metadata.offset, 2);
        // 3, 5, 6, 7, 8, 9 completed: bits 0, 2, 3, 4, 5, 6 of one bitset byte.
        assert_eq!(with_metadata.metadata, metadata::to_text(&[TAG_BITSET, 0b0111_1101]));
        assert_eq!(*again, [2, 4]);

        let (highest, again) = &outcomes[&CommitPolicy::HighestCompleted];
        assert_eq!(*highest, Commit::offset(10));
        assert!(again.is_empty());
        let completed: Vec<u64> = (0..10).filter(|offset| ![2, 4].contains(offset)).collect();
        let lost: Vec<u64> = (0..10)
            .filter(|offset| !completed.contains(offset) && !again.contains(offset))
            .collect();
        assert_eq!(lost, [2, 4]);
    }

    #[test]
    fn crash_metrics_tell_the_policies_apart() {
        let build = |policy| {
            let mut progress = fresh(policy);
            for offset in 0..10 {
                progress.polled(offset);
            }
            for offset in (0..10).filter(|offset| ![2, 4].contains(offset)) {
                progress.completed(offset);
            }
            progress
        };
        let contiguous = build(CommitPolicy::Contiguous);
        assert_eq!(contiguous.lag(), 8);
        assert_eq!(contiguous.incomplete_below_highest(), 2);
        assert_eq!(contiguous.redelivered_if_crashed(), 6);
        assert_eq!(contiguous.skipped_if_crashed(), 0);
        assert_eq!(contiguous.in_flight(), 2);

        let metadata = build(CommitPolicy::ContiguousMetadata);
        assert_eq!(metadata.lag(), 8);
        assert_eq!(metadata.redelivered_if_crashed(), 0);
        assert_eq!(metadata.skipped_if_crashed(), 0);

        let highest = build(CommitPolicy::HighestCompleted);
        assert_eq!(highest.lag(), 0);
        assert_eq!(highest.redelivered_if_crashed(), 0);
        assert_eq!(highest.skipped_if_crashed(), 2);
    }

    #[test]
    fn the_contiguous_offset_jumps_once_the_gap_closes() {
        let mut progress = fresh(CommitPolicy::ContiguousMetadata);
        for offset in 0..6 {
            progress.polled(offset);
        }
        for offset in [1, 2, 3, 5] {
            progress.completed(offset);
        }
        assert_eq!(progress.contiguous_offset(), 0);
        assert!(progress.completed(0));
        assert_eq!(progress.contiguous_offset(), 4);
        assert!(progress.completed(4));
        assert_eq!(progress.commit(), Commit::offset(6));
        assert_eq!(progress.lag(), 0);
        assert!(!progress.completed(3), "a second completion is a duplicate");
        assert_eq!(progress.in_flight(), 0);
    }

    #[test]
    fn resume_skips_what_the_metadata_says_completed() {
        let metadata = metadata::to_text(&[TAG_RUN_LENGTH, 4, 2, 0, 1]);
        let commit = Commit { offset: 100, metadata };
        let progress = PartitionProgress::resume(
            Some(&commit),
            CommitPolicy::ContiguousMetadata,
            MetadataLimit::DEFAULT,
        )
        .unwrap();
        assert_eq!(progress.resume_offset(), 100);
        let done: Vec<u64> = (95..115).filter(|&offset| progress.already_done(offset)).collect();
        assert_eq!(done, [95, 96, 97, 98, 99, 105, 106, 107]);
        // The other policies read no metadata.
        let plain = PartitionProgress::resume(
            Some(&commit),
            CommitPolicy::Contiguous,
            MetadataLimit::DEFAULT,
        )
        .unwrap();
        assert!(!plain.already_done(105));
    }

    #[test]
    fn random_completions_survive_a_commit_and_a_resume_in_the_smaller_encoding() {
        let mut rng = ChaCha8Rng::seed_from_u64(0xc0ffee);
        let (mut bitsets, mut run_lengths) = (0, 0);
        for trial in 0..150 {
            let base = rng.gen_range(0..1_000_000_u64);
            let span = rng.gen_range(2..2_000_u64);
            let density = [0.9, 0.5, 0.005][trial % 3];
            let completed: Vec<u64> =
                (base + 1..base + span).filter(|_| rng.gen_bool(density)).collect();
            let mut progress = PartitionProgress::resume(
                Some(&Commit::offset(base)),
                CommitPolicy::ContiguousMetadata,
                MetadataLimit::DEFAULT,
            )
            .unwrap();
            for &offset in &completed {
                assert!(progress.polled(offset));
                assert!(progress.completed(offset));
            }
            let commit = progress.commit();
            assert_eq!(commit.offset, base);
            let smaller = metadata::encoded_len(base, &progress.done_above, usize::MAX);
            assert_eq!(commit.metadata.len(), metadata::text_len(smaller));
            match metadata::from_text(&commit.metadata).unwrap().first() {
                Some(&TAG_BITSET) => bitsets += 1,
                Some(&TAG_RUN_LENGTH) => run_lengths += 1,
                Some(tag) => panic!("unexpected tag {tag}"),
                None => assert!(completed.is_empty()),
            }
            let resumed = PartitionProgress::resume(
                Some(&commit),
                CommitPolicy::ContiguousMetadata,
                MetadataLimit::DEFAULT,
            )
            .unwrap();
            let done: Vec<u64> =
                (base..base + span).filter(|&offset| resumed.already_done(offset)).collect();
            assert_eq!(done, completed);
        }
        assert!(bitsets > 10 && run_lengths > 10, "{bitsets} bitsets, {run_lengths} run-lengths");
    }

    #[test]
    fn back_pressure_turns_on_past_three_quarters_of_the_limit() {
        let limit = MetadataLimit::new(16).unwrap();
        let mut progress =
            PartitionProgress::resume(None, CommitPolicy::ContiguousMetadata, limit).unwrap();
        for offset in 0..=100 {
            progress.polled(offset);
        }
        // Every other offset completes: the bitset wins, 8 offsets a byte. Up to offset 64
        // (bit 63, 8 bytes and the tag: 9 bytes, 12 characters of base64, exactly 75% of 16)
        // there is no pause.
        for offset in (2..=64).step_by(2) {
            progress.completed(offset);
            assert!(!progress.needs_pause(), "paused at offset {offset}");
        }
        assert_eq!(progress.encoded_len(), 12);
        progress.completed(66);
        assert_eq!(progress.encoded_len(), 14, "10 bytes");
        assert!(progress.needs_pause());
        // Closing the gap shrinks the encoding and lifts the pause.
        for offset in (1..=11).step_by(2).chain([0]) {
            progress.completed(offset);
        }
        assert_eq!(progress.contiguous_offset(), 13);
        assert!(!progress.needs_pause());
        // The other policies never pause.
        let mut plain = PartitionProgress::resume(None, CommitPolicy::Contiguous, limit).unwrap();
        for offset in (2..=200).step_by(2) {
            plain.completed(offset);
        }
        assert!(!plain.needs_pause());
    }

    #[test]
    fn a_consumer_resumed_from_full_metadata_polls_its_gap_before_it_pauses() {
        let limit = MetadataLimit::new(16).unwrap();
        let mut before =
            PartitionProgress::resume(None, CommitPolicy::ContiguousMetadata, limit).unwrap();
        for offset in 0..=100 {
            before.polled(offset);
        }
        for offset in (2..=90).step_by(2) {
            before.completed(offset);
        }
        assert!(before.needs_pause());
        // A crash: the new consumer starts from the commit, the gap at offset 0 unpolled.
        let commit = before.commit();
        let mut after =
            PartitionProgress::resume(Some(&commit), CommitPolicy::ContiguousMetadata, limit)
                .unwrap();
        assert_eq!(after.resume_offset(), 0);
        assert!(!after.needs_pause(), "paused before the record at the gap was polled");
        assert!(after.polled(0));
        assert!(after.needs_pause(), "the gap is in flight: the metadata is still full");
        after.completed(0);
        // The gap moves up to offset 1, which this consumer has not polled yet.
        assert_eq!(after.contiguous_offset(), 1);
        assert!(!after.needs_pause());
    }

    #[test]
    fn past_the_limit_only_the_lowest_completions_are_kept() {
        let limit = MetadataLimit::new(MIN_METADATA_LIMIT).unwrap();
        let mut progress =
            PartitionProgress::resume(None, CommitPolicy::ContiguousMetadata, limit).unwrap();
        let completed: Vec<u64> = (1..200).step_by(3).collect();
        for &offset in &completed {
            progress.completed(offset);
        }
        assert!(progress.encoded_len() > limit.bytes());
        let commit = progress.commit();
        assert!(commit.metadata.len() <= limit.bytes());
        let kept = metadata::decode_metadata(commit.offset, &commit.metadata).unwrap();
        assert!(!kept.is_empty());
        assert_eq!(kept, completed[..kept.len()], "a prefix of the completions");
        assert_eq!(progress.redelivered_if_crashed(), (completed.len() - kept.len()) as u64);
    }

    #[test]
    fn a_limit_below_the_minimum_is_rejected() {
        let error = MetadataLimit::new(MIN_METADATA_LIMIT - 1).unwrap_err();
        assert_eq!(error, CommitError::MetadataLimitTooSmall { given: 2, min: MIN_METADATA_LIMIT });
        assert_eq!(error.to_string(), "metadata limit of 2 bytes is below the minimum of 3 bytes");
        assert_eq!(MetadataLimit::new(MIN_METADATA_LIMIT).unwrap().bytes(), 3);
        assert_eq!(MetadataLimit::default().bytes(), 4_096);
    }

    #[test]
    fn corrupt_metadata_fails_the_resume() {
        let commit = Commit { offset: 5, metadata: metadata::to_text(&[9, 1]) };
        let error = PartitionProgress::resume(
            Some(&commit),
            CommitPolicy::ContiguousMetadata,
            MetadataLimit::DEFAULT,
        )
        .unwrap_err();
        assert_eq!(
            error,
            CommitError::CorruptMetadata(MetadataError { reason: "unknown encoding tag" })
        );
        assert_eq!(error.to_string(), "commit metadata is corrupt: unknown encoding tag");
        let binary = Commit { offset: 5, metadata: "\u{1}\u{7d}".into() };
        let error = PartitionProgress::resume(
            Some(&binary),
            CommitPolicy::ContiguousMetadata,
            MetadataLimit::DEFAULT,
        )
        .unwrap_err();
        assert_eq!(error.to_string(), "commit metadata is corrupt: it is not unpadded base64");
        // A policy that reads no metadata does not care.
        assert!(PartitionProgress::resume(
            Some(&commit),
            CommitPolicy::Contiguous,
            MetadataLimit::DEFAULT
        )
        .is_ok());
    }

    #[test]
    fn policy_names_parse_print_and_serialize_alike() {
        for policy in CommitPolicy::ALL {
            assert_eq!(policy.as_str().parse::<CommitPolicy>(), Ok(policy));
            assert_eq!(policy.to_string(), policy.as_str());
            assert_eq!(serde_json::to_string(&policy).unwrap(), format!("\"{policy}\""));
            assert_eq!(
                serde_json::from_str::<CommitPolicy>(&format!("\"{policy}\"")).unwrap(),
                policy
            );
        }
        let error = "latest".parse::<CommitPolicy>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown commit policy `latest`; valid policies: contiguous, contiguous+metadata, \
             highest-completed"
        );
    }
}
