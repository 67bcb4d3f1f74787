//! Hash-serial groups pinned to threads: the machinery of `group-by` and `per-type-pool`.
//!
//! # Protocol
//!
//! 1. A pool has `workers` threads (*lanes*), each fed by its own unbounded flume channel,
//!    and `groups_per_worker x workers` serial groups. A message belongs to group
//!    `floor_mod(hash(aggregate id), groups)` (the id alone, as in the legacy design) and
//!    group `g` is pinned to lane `g % workers`, which alone touches the group's state, so
//!    group state needs no lock.
//! 2. A lane runs a message at once if its group is free. If its handler returns pending,
//!    the lane polls the step once with the group's waker and, if it is not ready, stores
//!    it: the group is now *blocked* (the lane is not) and later messages of the group
//!    queue in its backlog.
//! 3. The waker sends `Resume(group)` down the lane's channel. The lane polls the step;
//!    when it is ready the group runs its backlog in order until empty or blocked again
//!    (like Reactor's `concatMap`: the next starts only when the previous completes).
//!
//! Per-key order follows from per-group order: a key always maps to the same group, and a
//! group runs one message at a time in arrival order. Because only the lane thread touches
//! a group, a wake that races with storing the step is just a message that the lane reads
//! after it stored it: no wake-up is lost.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};

use crate::events::Event;
use crate::executor::{Core, Threads};
use crate::hash::mix64;
use crate::{Key, Message, Pending};

/// The group of an aggregate id among `groups` hash-serial groups (`group-by`,
/// `per-type-pool`): `floor_mod(hash(id), groups)`, never negative. Public so that a
/// workload can place keys in one group on purpose.
pub fn group_of(aggregate_id: u64, groups: usize) -> usize {
    let hash = mix64(aggregate_id);
    // Read as a signed hash, as Java's `Math.floorMod(hashCode, groups)` does.
    (hash as i64).rem_euclid(groups as i64) as usize
}

/// Work for one lane.
enum Task {
    /// Run (or queue) an admitted message.
    Run(Message),
    /// The pending step of local group `usize` was woken.
    Resume(usize),
    /// Forced close: discard backlogs and abandon pending steps.
    Sweep,
    /// Exit the lane loop.
    Stop,
}

/// One serial group, owned by its lane thread.
#[derive(Default)]
struct Group {
    /// Messages waiting for the group's current step to complete.
    backlog: VecDeque<Message>,
    /// The step the group is blocked on.
    pending: Option<(Key, Pending)>,
    /// Made on the group's first pending step and reused after.
    waker: Option<Waker>,
}

/// A pool of lanes with hash-serial groups pinned to them.
#[derive(Debug)]
pub(crate) struct GroupPool {
    lanes: Vec<flume::Sender<Task>>,
    /// Per lane: a `Sweep` is queued and not yet processed (so repeated sweeps of a forced
    /// close do not pile up behind a long handler).
    sweep_queued: Vec<Arc<AtomicBool>>,
    groups: usize,
}

impl GroupPool {
    /// Starts `workers` lane threads, named `{name}-{lane}`, into `threads`.
    pub(crate) fn start(core: &Arc<Core>, name: &str, threads: &Threads) -> Self {
        let workers = core.config.workers;
        let per_lane = core.config.groups_per_worker;
        let mut lanes = Vec::with_capacity(workers);
        let mut sweep_queued = Vec::with_capacity(workers);
        for lane in 0..workers {
            let (sender, receiver) = flume::unbounded();
            let queued = Arc::new(AtomicBool::new(false));
            let lane_loop = Lane {
                core: Arc::clone(core),
                sender: sender.clone(),
                sweep_queued: Arc::clone(&queued),
                groups: (0..per_lane).map(|_| Group::default()).collect(),
            };
            threads.spawn(format!("{name}-{lane}"), move || lane_loop.run(&receiver));
            lanes.push(sender);
            sweep_queued.push(queued);
        }
        Self { lanes, sweep_queued, groups: per_lane * workers }
    }

    /// Sends an admitted message to the lane of its group.
    pub(crate) fn dispatch(&self, message: Message) {
        let group = group_of(message.key.aggregate_id, self.groups);
        self.send(group % self.lanes.len(), Task::Run(message));
    }

    /// Asks every lane to discard its backlogs and abandon its pending steps.
    pub(crate) fn sweep(&self) {
        for (lane, queued) in self.sweep_queued.iter().enumerate() {
            // AcqRel: the Acquire half pairs with the Release store in `Lane::run` that
            // clears the flag as the lane takes the previous `Sweep`.
            if !queued.swap(true, Ordering::AcqRel) {
                self.send(lane, Task::Sweep);
            }
        }
    }

    /// Asks every lane to exit; the caller joins the threads.
    pub(crate) fn stop(&self) {
        for lane in 0..self.lanes.len() {
            self.send(lane, Task::Stop);
        }
    }

    fn send(&self, lane: usize, task: Task) {
        // A lane only exits on `Stop`, after which nothing is sent.
        let _ = self.lanes[lane].send(task);
    }
}

/// One lane thread's state: the groups pinned to it.
struct Lane {
    core: Arc<Core>,
    /// This lane's own channel, for the wakers of its groups.
    sender: flume::Sender<Task>,
    /// Cleared when this lane takes a `Sweep`, so the next one is sent.
    sweep_queued: Arc<AtomicBool>,
    /// Local group `i` is global group `i * workers + lane`.
    groups: Vec<Group>,
}

impl Lane {
    fn run(mut self, receiver: &flume::Receiver<Task>) {
        let workers = self.core.config.workers;
        while let Ok(task) = receiver.recv() {
            if matches!(task, Task::Run(_) | Task::Resume(_)) {
                self.core.events.count(Event::Hop); // a message or a resume came over the lane
            }
            match task {
                Task::Run(message) => {
                    let groups = self.core.config.groups_per_worker * workers;
                    let local = group_of(message.key.aggregate_id, groups) / workers;
                    let group = &self.groups[local];
                    if group.pending.is_some() || !group.backlog.is_empty() {
                        self.groups[local].backlog.push_back(message);
                    } else {
                        self.start(local, &message);
                    }
                }
                Task::Resume(local) => self.resume(local),
                Task::Sweep => {
                    // Release: pairs with the AcqRel swap in `GroupPool::sweep`.
                    self.sweep_queued.store(false, Ordering::Release);
                    self.sweep();
                }
                Task::Stop => return,
            }
        }
    }

    /// Runs `message` in group `local`, blocking the group if its step is pending.
    fn start(&mut self, local: usize, message: &Message) {
        if let Some(step) = self.core.start(message) {
            self.poll(local, message.key, step);
        }
    }

    /// Polls a step of group `local`; stores it (group blocked) if it is not ready.
    fn poll(&mut self, local: usize, key: Key, mut step: Pending) {
        let sender = &self.sender;
        let group = &mut self.groups[local];
        let waker = group.waker.get_or_insert_with(|| {
            Waker::from(Arc::new(GroupWaker { lane: sender.clone(), group: local }))
        });
        let mut cx = Context::from_waker(waker);
        if self.core.poll(key, &mut step, &mut cx).is_pending() {
            if self.core.is_forced() {
                self.core.abandon(key, step);
            } else {
                group.pending = Some((key, step));
            }
        }
    }

    /// The group's step was woken: poll it, and if it is done run the backlog.
    fn resume(&mut self, local: usize) {
        let Some((key, step)) = self.groups[local].pending.take() else {
            return; // a late or repeated wake
        };
        self.poll(local, key, step);
        while self.groups[local].pending.is_none() {
            let Some(message) = self.groups[local].backlog.pop_front() else { break };
            self.start(local, &message);
        }
    }

    fn sweep(&mut self) {
        for group in &mut self.groups {
            for message in group.backlog.drain(..) {
                self.core.discard(message.key, 1);
            }
            if let Some((key, step)) = group.pending.take() {
                self.core.abandon(key, step);
            }
        }
    }
}

/// Wakes a blocked group by sending `Resume` to its lane.
struct GroupWaker {
    lane: flume::Sender<Task>,
    group: usize,
}

impl Wake for GroupWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // After `Stop` the lane is gone and nothing is in flight: the wake is moot.
        let _ = self.lane.send(Task::Resume(self.group));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_of_is_stable_and_in_range() {
        for id in [0, 1, 42, u64::MAX, i64::MAX as u64 + 1] {
            let group = group_of(id, 128);
            assert!(group < 128);
            assert_eq!(group, group_of(id, 128));
        }
    }

    #[test]
    fn group_of_spreads_ids() {
        let mut counts = [0usize; 16];
        for id in 0..16_000 {
            counts[group_of(id, 16)] += 1;
        }
        assert!(counts.iter().all(|&count| (800..1200).contains(&count)), "{counts:?}");
    }
}
