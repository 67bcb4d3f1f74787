//! The window scope: which admitted messages share one admission window ([`Window`]).
//!
//! - [`WindowScope::Strategy`]: one window for the whole strategy (one receiver requests
//!   every message). Every operation goes straight to it.
//! - [`WindowScope::Type`]: one window per aggregate type, opened on the type's first
//!   message, each with the full `max_in_flight` (the legacy design, where each type had
//!   its own dispatcher). A message takes its credit from its type's window and returns it
//!   there, so a key that holds its window stalls only the keys of its type.
//!
//! # Per-type windows
//!
//! The windows live in a concurrent map from type to window, which is only ever added to
//! while the strategy lives. Beside each window's own protocol (`window.rs`) two rules make
//! the set behave as one strategy:
//!
//! 1. **Close.** `close` raises the set's closed flag and then closes every window in the
//!    map. A window is created under its map entry's lock and closed at once if the flag is
//!    up by then; a window created before the flag went up is in the map by the time the
//!    walk reaches its entry (the walk takes the same lock). So after `close` every window,
//!    present or future, refuses admissions.
//! 2. **Empty.** A handler of one type may submit into another type's window, so windows
//!    found empty one after another do not prove the set empty at once: a message may have
//!    moved into a window already looked at. The set therefore counts its *unfinished*
//!    messages (accepted, admitted or queued, and not finished or discarded): a submission
//!    adds one before it asks its window (and takes it back if the window refuses), a
//!    finish removes one after its window counted it. `wait_empty` returns when the count
//!    is zero; until then it sleeps on the windows' own `wait_empty` (one of them holds the
//!    unfinished message), so it blocks rather than spins. The count's read-modify-writes
//!    form one release sequence, so a `wait_empty` that reads zero sees everything every
//!    finished message did.
//!
//! Admission looks the window up under the entry's shared lock. An outside submission that
//! finds no credit must block: it takes its own reference to the window and blocks on it
//! after the lock is released, so a blocked submitter never holds the map.

use std::sync::Arc;

use crate::sync::{thread, AtomicBool, AtomicU64, KeyMap, Ordering};
use crate::window::{Admission, Window, WindowClosed};
use crate::{Key, Message, WindowScope};

/// The admission windows of one strategy, in its scope (module docs).
#[derive(Debug)]
pub(crate) enum Windows {
    /// [`WindowScope::Strategy`].
    One(Window),
    /// [`WindowScope::Type`].
    PerType(PerType),
}

/// One window per aggregate type (module docs, "Per-type windows").
#[derive(Debug)]
pub(crate) struct PerType {
    max_in_flight: usize,
    windows: KeyMap<u32, Arc<Window>>,
    /// Raised by `close`: a window created from now on is created closed.
    closed: AtomicBool,
    /// Messages accepted and not yet finished (or discarded), over every window.
    unfinished: AtomicU64,
}

/// What one admission attempt inside a map lock decided.
enum Attempt {
    Done(Result<Admission, WindowClosed>),
    /// No credit, and the submission may block: block on this window, outside the lock.
    Block(Arc<Window>),
}

impl Windows {
    /// The windows of a strategy with `max_in_flight` credits per window.
    pub(crate) fn new(scope: WindowScope, max_in_flight: usize) -> Self {
        match scope {
            WindowScope::Strategy => Self::One(Window::new(max_in_flight)),
            WindowScope::Type => Self::PerType(PerType {
                max_in_flight,
                windows: KeyMap::new(),
                closed: AtomicBool::new(false),
                unfinished: AtomicU64::new(0),
            }),
        }
    }

    pub(crate) fn scope(&self) -> WindowScope {
        match self {
            Self::One(_) => WindowScope::Strategy,
            Self::PerType(_) => WindowScope::Type,
        }
    }

    /// Admits `message` into its window: takes a credit if one is free; otherwise, when
    /// `reentrant()` says the caller is one of the strategy's own handler calls, queues it
    /// there ([`Window::admit_or_queue`]), and else blocks for a credit.
    #[inline]
    pub(crate) fn admit(
        &self,
        message: Message,
        reentrant: impl FnOnce() -> bool,
        timed: impl FnOnce() -> bool,
    ) -> Result<Admission, WindowClosed> {
        match self {
            Self::One(window) => match attempt(window, message, reentrant) {
                Some(done) => done,
                None => block(window, timed),
            },
            Self::PerType(set) => set.admit(message, reentrant, timed),
        }
    }

    /// Returns the credit of a finished message of `key` to its window and, if that let
    /// queued messages in, calls `serve` with the window (the caller admits them with
    /// [`Window::admit_queued`]).
    #[inline]
    pub(crate) fn finish(&self, key: Key, serve: impl FnOnce(&Window)) {
        match self {
            Self::One(window) => {
                if window.finish() {
                    serve(window);
                }
            }
            Self::PerType(set) => {
                let found = set.windows.with_existing(&key.aggregate_type, |window| {
                    if window.finish() {
                        serve(window);
                    }
                });
                debug_assert!(found.is_some(), "a message finished in a window never opened");
                // AcqRel: one release sequence over every finish (module docs, rule 2).
                set.unfinished.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// Refuses every later admission, also into windows not opened yet (rule 1), and fails
    /// the blocked ones.
    pub(crate) fn close(&self) {
        match self {
            Self::One(window) => window.close(),
            Self::PerType(set) => {
                // SeqCst: pairs with the load in `PerType::open` (also ordered by the
                // entry's lock, see the module docs).
                set.closed.store(true, Ordering::SeqCst);
                set.windows.for_each(|window| window.close());
            }
        }
    }

    /// Blocks until every accepted message has finished, queued ones included.
    pub(crate) fn wait_empty(&self) {
        match self {
            Self::One(window) => window.wait_empty(),
            Self::PerType(set) => {
                // Acquire: reads the end of the finishes' release sequence (rule 2).
                while set.unfinished.load(Ordering::Acquire) != 0 {
                    for window in set.snapshot() {
                        window.wait_empty();
                    }
                    // Every window was empty once, but a message may have moved between
                    // them, or a finish not yet have taken itself off the count.
                    thread::yield_now();
                }
            }
        }
    }

    /// Forced close: empties every admission queue; how many messages it dropped.
    pub(crate) fn discard_queued(&self) -> u64 {
        match self {
            Self::One(window) => window.discard_queued(),
            Self::PerType(set) => {
                let mut discarded = 0;
                set.windows.for_each(|window| discarded += window.discard_queued());
                set.unfinished.fetch_sub(discarded, Ordering::AcqRel);
                discarded
            }
        }
    }

    /// Admitted messages not finished yet, over every window.
    pub(crate) fn in_flight(&self) -> usize {
        self.fold(0, |sum, window| sum + window.in_flight())
    }

    /// The most messages in flight at once in any one window.
    pub(crate) fn peak_in_flight(&self) -> usize {
        self.fold(0, |peak, window| peak.max(window.peak_in_flight()))
    }

    /// The most messages that waited in any one admission queue at once.
    pub(crate) fn peak_queued(&self) -> usize {
        self.fold(0, |peak, window| peak.max(window.peak_queued()))
    }

    /// Nanoseconds outside submitters have spent blocked on a full window so far, summed
    /// over every window.
    pub(crate) fn blocked_ns(&self) -> u64 {
        self.fold(0, |sum, window| sum + window.blocked_ns())
    }

    /// Messages that went through an admission queue so far, over every window.
    pub(crate) fn queued_total(&self) -> u64 {
        self.fold(0, |sum, window| sum + window.queued_total())
    }

    /// The one window of a strategy-scoped set (the models inspect its fields).
    #[cfg(all(test, loom))]
    pub(crate) fn single(&self) -> &Window {
        match self {
            Self::One(window) => window,
            Self::PerType(_) => panic!("a per-type set has no single window"),
        }
    }

    /// Windows opened so far.
    pub(crate) fn count(&self) -> usize {
        match self {
            Self::One(_) => 1,
            Self::PerType(set) => set.windows.len(),
        }
    }

    fn fold<T: Copy>(&self, init: T, mut f: impl FnMut(T, &Window) -> T) -> T {
        match self {
            Self::One(window) => f(init, window),
            Self::PerType(set) => {
                let mut acc = init;
                set.windows.for_each(|window| acc = f(acc, window));
                acc
            }
        }
    }
}

impl PerType {
    fn admit(
        &self,
        message: Message,
        reentrant: impl FnOnce() -> bool,
        timed: impl FnOnce() -> bool,
    ) -> Result<Admission, WindowClosed> {
        // AcqRel: counted before any window can hold it (module docs, rule 2).
        self.unfinished.fetch_add(1, Ordering::AcqRel);
        let aggregate_type = message.key.aggregate_type;
        let mut reentrant = Some(reentrant);
        let mut decide = |window: &Arc<Window>| {
            let reentrant = reentrant.take().expect("one attempt per submission");
            match attempt(window, message, reentrant) {
                Some(done) => Attempt::Done(done),
                None => Attempt::Block(Arc::clone(window)),
            }
        };
        let decided = match self.windows.with_existing(&aggregate_type, &mut decide) {
            Some(decided) => decided,
            None => self.windows.with_entry(aggregate_type, || self.open(), decide),
        };
        let admitted = match decided {
            Attempt::Done(done) => done,
            Attempt::Block(window) => block(&window, timed),
        };
        if admitted.is_err() {
            self.unfinished.fetch_sub(1, Ordering::AcqRel);
        }
        admitted
    }

    /// A new type's window, under its entry's lock; closed if the set is (rule 1).
    fn open(&self) -> Arc<Window> {
        let window = Window::new(self.max_in_flight);
        // SeqCst: pairs with the store in `Windows::close`.
        if self.closed.load(Ordering::SeqCst) {
            window.close();
        }
        Arc::new(window)
    }

    fn snapshot(&self) -> Vec<Arc<Window>> {
        let mut windows = Vec::with_capacity(self.windows.len());
        self.windows.for_each(|window| windows.push(Arc::clone(window)));
        windows
    }
}

/// An outside submission that found no free credit: blocks for one, timed when `timed`
/// says the cost breakdown is counting (asked only here, off the admission's fast path).
fn block(window: &Window, timed: impl FnOnce() -> bool) -> Result<Admission, WindowClosed> {
    let admitted = if timed() { window.admit_timed() } else { window.admit() };
    admitted.map(|()| Admission::Admitted)
}

/// One non-blocking attempt at `window`: `Some` when decided (a credit taken, the message
/// queued, or the window closed), `None` when the caller must block for a credit.
#[inline]
fn attempt(
    window: &Window,
    message: Message,
    reentrant: impl FnOnce() -> bool,
) -> Option<Result<Admission, WindowClosed>> {
    match window.try_admit() {
        Ok(true) => Some(Ok(Admission::Admitted)),
        Err(closed) => Some(Err(closed)),
        Ok(false) if reentrant() => Some(window.admit_or_queue(message)),
        Ok(false) => None,
    }
}
