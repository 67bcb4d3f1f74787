//! `hybrid`: `keyed-mailbox`'s affinity, with a take where a worker would otherwise idle.
//!
//! # Algorithm
//!
//! 1. Everything `keyed-mailbox` does (`keyed_mailbox.rs`, steps 1-7): one set of `workers`
//!    threads, a lock-free FIFO of runnable mailboxes and a park slot per worker, per-key
//!    mailboxes bound to a worker by the same scan when they are created, fair turns of at
//!    most `throughput` messages, waits that give the worker back, the shared window.
//! 2. A worker whose own FIFO is empty looks at the other workers' FIFOs, from the next
//!    worker on, and takes the first mailbox it finds queued there (queued is runnable and
//!    not running: a running mailbox is in no FIFO). It looks on every look of its idle
//!    spin, so before it spins and before it parks.
//! 3. The taken mailbox's home becomes the taker: the taker runs the turn, requeues the
//!    mailbox to its own FIFO after it, and every later schedule of the mailbox (a new
//!    message, a finished wait) goes there.
//! 4. Only a worker's own FIFO wakes it: a push wakes the mailbox's home if it is parked,
//!    never another worker. A worker takes only when it is awake and dry, so no thread is
//!    woken to take.
//!
//! # Ordering guarantee
//!
//! `keyed-mailbox`'s: a mailbox is in at most one FIFO and held by one thread at a time
//! (`mailbox.rs`, its phase). A take is a pop from a multi-consumer queue: exactly one
//! thread, the owner or one taker, gets a queued mailbox, and it is `Scheduled` until that
//! thread runs it. The home changes only then, while no queue and no other thread holds the
//! mailbox; a waker or a submitter reads it later, through the mailbox's lock, so it
//! schedules the mailbox where its last holder put it.
//!
//! # Trade-offs
//!
//! Against `keyed-mailbox`: when the OS runs another thread in place of a worker, its
//! queued mailboxes no longer wait for it while another worker is dry (the loss
//! `keyed_mailbox.rs` explains), and a mailbox queued behind a long synchronous turn moves
//! to a free worker. The cost is a look at the other workers' queues each time a worker runs
//! dry (a cache miss each while they are busy), and a mailbox taken from a worker whose
//! caches held its key's state runs where they do not.
//!
//! Against `work-stealing`: affinity stays the default, so a key's messages stay on one
//! worker while it is busy and the cheap hand-off to a running worker's FIFO is kept; a take
//! moves a whole mailbox, not a slice of a deque, and only from the front of a FIFO (its
//! oldest runnable mailbox).
//!
//! A parked worker is not woken for another's backlog: where every worker but one parks,
//! the backlog waits for a busy worker to run dry, or for the binding scan to place new
//! mailboxes on the parked ones.
//!
//! Measured (`results/2026-12-06-vm-hybrid`, 2 workers sharing a 2-core VM with the
//! producer, two runs of 5 repetitions): on throughput, efficiency and cold-command rate it
//! reads at least 0.95x of the better of `keyed-mailbox` and `work-stealing` in 19 of 21
//! cells in the quieter run, and it recovers `keyed-mailbox`'s loss on `uniform`, `zipf`,
//! `many-types` and `stateful`. It does not on `hot-backlog` at bursts of 240 and 241 (the
//! shared window's stall, `keyed-mailbox`'s too) nor at 10 keys of `parallel-consumer`
//! (16 workers, blocked ones counted as running by the binding scan). The tail-latency cells
//! change verdict between runs on that machine.
//!
//! # References
//!
//! - docs/design.md section 3 (`keyed-mailbox`, the design it extends).
//! - tokio's and Go's schedulers: a worker that runs dry takes from another's run queue
//!   before it sleeps.

use crate::keyed_mailbox::KeyedMailbox;

/// The `hybrid` strategy: `keyed-mailbox`'s engine with the take of step 2
/// (`keyed_mailbox::take`).
pub(crate) type Hybrid = KeyedMailbox<true>;
