//! `hybrid`'s take (`hybrid.rs`, steps 2-3): a worker whose FIFO is empty takes the first
//! mailbox queued on another worker's FIFO of the affinity placement, and becomes its home.

use std::sync::Arc;

use super::Affinity;
use crate::mailbox::Mailbox;

/// Step 2: a mailbox queued on another worker's FIFO than `taker`'s, from the next worker
/// on, now homed on `taker` (step 3); `None` if every other FIFO is empty.
pub(crate) fn take(placement: &Affinity, taker: usize) -> Option<Arc<Mailbox>> {
    let count = placement.workers.len();
    (1..count).map(|offset| (taker + offset) % count).find_map(|victim| {
        let mailbox = placement.workers[victim].runnable.pop()?;
        mailbox.move_home(taker);
        Some(mailbox)
    })
}
