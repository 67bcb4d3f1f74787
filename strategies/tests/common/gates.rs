//! Gates: numbered barriers a test opens when it is ready. A handler blocks its worker on
//! one, or a pending step waits for one; dropping the fixture opens them all.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::lock;

/// The longest a handler blocks on a closed gate, so a failed test cannot hang a worker
/// forever (a passing test always opens its gates much earlier).
const GATE_LIMIT: Duration = Duration::from_secs(60);

#[derive(Debug, Default)]
struct GateState {
    open: HashSet<u32>,
    /// Set when the fixture is dropped: every gate is open from then on.
    all_open: bool,
    /// Pending steps waiting for a gate.
    wakers: HashMap<u32, Vec<Waker>>,
}

impl GateState {
    fn is_open(&self, gate: u32) -> bool {
        self.all_open || self.open.contains(&gate)
    }
}

/// Numbered gates that handlers wait on until the test opens them.
#[derive(Debug, Default)]
pub struct Gates {
    state: Mutex<GateState>,
    opened: Condvar,
}

impl Gates {
    /// Opens `gate`: blocked handlers return, pending steps complete.
    pub fn open(&self, gate: u32) {
        let wakers = {
            let mut state = lock(&self.state);
            state.open.insert(gate);
            state.wakers.remove(&gate).unwrap_or_default()
        };
        self.opened.notify_all();
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Opens every gate, now and later.
    pub fn open_all(&self) {
        let wakers: Vec<Waker> = {
            let mut state = lock(&self.state);
            state.all_open = true;
            state.wakers.drain().flat_map(|(_, wakers)| wakers).collect()
        };
        self.opened.notify_all();
        wakers.into_iter().for_each(Waker::wake);
    }

    /// Blocks the calling thread until `gate` is open (at most [`GATE_LIMIT`]).
    pub(super) fn block(&self, gate: u32) {
        let deadline = Instant::now() + GATE_LIMIT;
        let mut state = lock(&self.state);
        while !state.is_open(gate) {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            state = self
                .opened
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// A future that completes when `gate` opens.
    pub(super) fn opened(self: &Arc<Self>, gate: u32) -> GateOpened {
        GateOpened { gates: Arc::clone(self), gate }
    }
}

/// The future of [`Gates::opened`].
pub(super) struct GateOpened {
    gates: Arc<Gates>,
    gate: u32,
}

impl Future for GateOpened {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = lock(&self.gates.state);
        if state.is_open(self.gate) {
            return Poll::Ready(());
        }
        let wakers = state.wakers.entry(self.gate).or_default();
        if !wakers.iter().any(|waker| waker.will_wake(cx.waker())) {
            wakers.push(cx.waker().clone());
        }
        Poll::Pending
    }
}
