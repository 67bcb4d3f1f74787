//! The tally of deliveries: how often each record reached a handler and was applied.

use crate::pipeline::log::Record;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// How often each record of the log reached a handler, was applied or dead-lettered, and
/// when it was first applied, over every incarnation: what was lost (neither applied nor
/// dead-lettered) and what was redelivered (delivered more than once).
#[derive(Debug)]
pub struct DeliveryTally {
    /// Per partition, per offset: handler calls for the record polled from its partition
    /// (the retry topic's deliveries are retries, counted by the consumer).
    pub(super) deliveries: Vec<Vec<AtomicU32>>,
    /// Per partition, per offset: applications to the projection.
    pub(super) applications: Vec<Vec<AtomicU32>>,
    /// Per partition, per offset: sends to the dead-letter topic.
    pub(super) dead_letters: Vec<Vec<AtomicU32>>,
    /// Per partition, per offset: nanoseconds since the pipeline's epoch, plus one, of the
    /// first application (0: never applied).
    pub(super) first_applied: Vec<Vec<AtomicU64>>,
    /// Applications of any record.
    pub(super) applied_total: AtomicU64,
}

/// A record's counters in a [`DeliveryTally`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivery {
    /// Handler calls.
    pub delivered: u32,
    /// Applications to the projection.
    pub applied: u32,
    /// Sends to the dead-letter topic.
    pub dead_lettered: u32,
}

impl DeliveryTally {
    /// A tally for a log whose partitions end at `end_offsets` (the log is produced
    /// before it is consumed).
    pub fn new(end_offsets: &[u64]) -> Self {
        let counters = || -> Vec<Vec<AtomicU32>> {
            end_offsets.iter().map(|&end| (0..end).map(|_| AtomicU32::new(0)).collect()).collect()
        };
        let first_applied =
            end_offsets.iter().map(|&end| (0..end).map(|_| AtomicU64::new(0)).collect()).collect();
        Self {
            deliveries: counters(),
            applications: counters(),
            dead_letters: counters(),
            first_applied,
            applied_total: AtomicU64::new(0),
        }
    }

    /// A record's slot in `counters`; `None` for a record outside the tally.
    pub(super) fn slot<T>(counters: &[Vec<T>], partition: u32, offset: u64) -> Option<&T> {
        counters.get(partition as usize)?.get(usize::try_from(offset).ok()?)
    }

    pub(super) fn count(counters: &[Vec<AtomicU32>], partition: u32, offset: u64) {
        if let Some(count) = Self::slot(counters, partition, offset) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Counts a delivery of `record` from the log to a handler (a consumer in another
    /// process reports its deliveries; this process's consumer counts its own).
    pub fn delivered(&self, record: &Record) {
        Self::count(&self.deliveries, record.partition, record.offset);
    }

    /// Counts an application of `record`, `at_ns` after the pipeline's epoch; whether it
    /// was the record's first.
    pub fn applied(&self, record: &Record, at_ns: u64) -> bool {
        Self::count(&self.applications, record.partition, record.offset);
        let first =
            Self::slot(&self.first_applied, record.partition, record.offset).is_some_and(|first| {
                first.compare_exchange(0, at_ns + 1, Ordering::Relaxed, Ordering::Relaxed).is_ok()
            });
        self.applied_total.fetch_add(1, Ordering::Relaxed);
        first
    }

    /// One record's counters (zero for a record outside the tally).
    pub fn of(&self, partition: u32, offset: u64) -> Delivery {
        let read = |counters: &[Vec<AtomicU32>]| {
            Self::slot(counters, partition, offset).map_or(0, |count| count.load(Ordering::Relaxed))
        };
        Delivery {
            delivered: read(&self.deliveries),
            applied: read(&self.applications),
            dead_lettered: read(&self.dead_letters),
        }
    }

    /// When the record was first applied, in nanoseconds since the pipeline's epoch.
    pub fn first_applied_ns(&self, partition: u32, offset: u64) -> Option<u64> {
        let at = Self::slot(&self.first_applied, partition, offset)?.load(Ordering::Relaxed);
        at.checked_sub(1)
    }

    /// Applications so far, of every record (a redelivered one counts each time).
    pub fn applied_total(&self) -> u64 {
        self.applied_total.load(Ordering::Relaxed)
    }

    /// Records neither applied nor dead-lettered (lost), and records delivered more than
    /// once (redelivered).
    pub fn lost_and_redelivered(&self) -> (u64, u64) {
        let settled = |(applied, dead): (&AtomicU32, &AtomicU32)| {
            applied.load(Ordering::Relaxed) > 0 || dead.load(Ordering::Relaxed) > 0
        };
        let lost = self
            .applications
            .iter()
            .flatten()
            .zip(self.dead_letters.iter().flatten())
            .filter(|&pair| !settled(pair))
            .count();
        let redelivered =
            self.deliveries.iter().flatten().filter(|count| count.load(Ordering::Relaxed) > 1);
        (lost as u64, redelivered.count() as u64)
    }

    /// Records sent to the dead-letter topic.
    pub fn dead_lettered(&self) -> u64 {
        let sent = self.dead_letters.iter().flatten();
        sent.filter(|count| count.load(Ordering::Relaxed) > 0).count() as u64
    }
}
