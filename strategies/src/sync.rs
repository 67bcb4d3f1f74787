//! The synchronisation the executor core is built from: `std`, crossbeam and dashmap in
//! normal builds, [loom](https://docs.rs/loom) under `cfg(loom)`.
//!
//! `scripts/loom.sh` builds the crate with `--cfg loom`; the models in `loom_models/`
//! then explore the interleavings of the code we wrote ourselves (the mailbox state
//! machine, park/unpark, the admission window, the close protocol) with every lock,
//! atomic, park and spawn below replaced by its loom twin. Lock-free containers loom cannot
//! see inside (`DashMap`, `ArrayQueue`, `SegQueue`) become a loom mutex around a plain
//! collection with the same small interface, and capacities shrink so that the models
//! stay small.
//!
//! Only the modules under model use this shim; the other strategies (groups, pools, tokio,
//! rayon) keep plain `std` types and never run under loom.

#[cfg(loom)]
use std::collections::VecDeque;
use std::hash::Hash;

#[cfg(not(loom))]
pub(crate) use std::{
    sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering},
    sync::{Condvar, Mutex, MutexGuard},
    thread,
};

#[cfg(loom)]
pub(crate) use loom::{
    sync::atomic::{fence, AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering},
    sync::{Condvar, Mutex, MutexGuard},
    thread,
};

// Thread-locals: loom gives each modelled thread its own (the re-entrancy marks of
// `executor.rs`).
#[cfg(not(loom))]
pub(crate) use std::thread_local;

#[cfg(loom)]
pub(crate) use loom::thread_local;

/// Locks `mutex`, ignoring poisoning: handler panics are contained before they can poison
/// a lock of ours, and every critical section leaves its data consistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits a little before looking again (a forced close between two sweeps). Under loom a
/// yield, so that the model scheduler runs the other threads.
pub(crate) fn pause(duration: std::time::Duration) {
    #[cfg(not(loom))]
    thread::sleep(duration);
    #[cfg(loom)]
    {
        let _ = duration;
        thread::yield_now();
    }
}

/// A concurrent map from key to value; the mailbox map.
#[derive(Debug)]
pub(crate) struct KeyMap<K: Eq + Hash, V> {
    #[cfg(not(loom))]
    map: dashmap::DashMap<K, V, crate::hash::BuildKeyHasher>,
    #[cfg(loom)]
    map: Mutex<std::collections::HashMap<K, V, crate::hash::BuildKeyHasher>>,
}

impl<K: Eq + Hash, V> KeyMap<K, V> {
    pub(crate) fn new() -> Self {
        #[cfg(not(loom))]
        let map = dashmap::DashMap::with_hasher(crate::hash::BuildKeyHasher);
        #[cfg(loom)]
        let map = Mutex::new(std::collections::HashMap::with_hasher(crate::hash::BuildKeyHasher));
        Self { map }
    }

    /// Calls `f` with the value of `key`, inserting `make()` first if there is none. The
    /// key's lock (a shard, or the whole map under loom) is held during `f`.
    pub(crate) fn with_entry<R>(
        &self,
        key: K,
        make: impl FnOnce() -> V,
        f: impl FnOnce(&V) -> R,
    ) -> R {
        #[cfg(not(loom))]
        {
            f(self.map.entry(key).or_insert_with(make).value())
        }
        #[cfg(loom)]
        {
            f(lock(&self.map).entry(key).or_insert_with(make))
        }
    }

    /// Calls `f` with the value of `key` if there is one, under the key's lock (shared,
    /// normally: a shard's read lock); `None` if there is none.
    pub(crate) fn with_existing<R>(&self, key: &K, f: impl FnOnce(&V) -> R) -> Option<R> {
        #[cfg(not(loom))]
        {
            self.map.get(key).map(|entry| f(entry.value()))
        }
        #[cfg(loom)]
        {
            lock(&self.map).get(key).map(f)
        }
    }

    /// Removes `key` if `remove` says so, deciding under the key's lock; whether it did.
    pub(crate) fn remove_if(&self, key: &K, remove: impl FnOnce(&V) -> bool) -> bool {
        #[cfg(not(loom))]
        {
            self.map.remove_if(key, |_, value| remove(value)).is_some()
        }
        #[cfg(loom)]
        {
            let mut map = lock(&self.map);
            let found = map.get(key).is_some_and(remove);
            if found {
                map.remove(key);
            }
            found
        }
    }

    /// Calls `f` for every value, each under its key's lock.
    pub(crate) fn for_each(&self, mut f: impl FnMut(&V)) {
        #[cfg(not(loom))]
        for entry in self.map.iter() {
            f(entry.value());
        }
        #[cfg(loom)]
        for value in lock(&self.map).values() {
            f(value);
        }
    }

    /// Entries now.
    pub(crate) fn len(&self) -> usize {
        #[cfg(not(loom))]
        {
            self.map.len()
        }
        #[cfg(loom)]
        {
            lock(&self.map).len()
        }
    }
}

/// Lock-free queues: crossbeam's normally; under loom, a loom mutex around a `VecDeque`
/// with the same interface (an `ArrayQueue` holds at most one item there).
#[cfg(not(loom))]
pub(crate) use crossbeam_queue::{ArrayQueue, SegQueue};

#[cfg(loom)]
pub(crate) use loom_queues::{ArrayQueue, SegQueue};

#[cfg(loom)]
mod loom_queues {
    use super::{lock, Mutex, VecDeque};

    /// `crossbeam_queue::SegQueue` under loom.
    #[derive(Debug)]
    pub(crate) struct SegQueue<T>(Mutex<VecDeque<T>>);

    impl<T> Default for SegQueue<T> {
        fn default() -> Self {
            Self::new()
        }
    }

    impl<T> SegQueue<T> {
        pub(crate) fn new() -> Self {
            Self(Mutex::new(VecDeque::new()))
        }

        pub(crate) fn push(&self, item: T) {
            lock(&self.0).push_back(item);
        }

        pub(crate) fn pop(&self) -> Option<T> {
            lock(&self.0).pop_front()
        }

        pub(crate) fn is_empty(&self) -> bool {
            lock(&self.0).is_empty()
        }
    }

    /// `crossbeam_queue::ArrayQueue` under loom, shrunk to one item.
    #[derive(Debug)]
    pub(crate) struct ArrayQueue<T>(Mutex<VecDeque<T>>);

    impl<T> ArrayQueue<T> {
        pub(crate) fn new(_capacity: usize) -> Self {
            Self(Mutex::new(VecDeque::new()))
        }

        pub(crate) fn push(&self, item: T) -> Result<(), T> {
            let mut queue = lock(&self.0);
            if !queue.is_empty() {
                return Err(item);
            }
            queue.push_back(item);
            Ok(())
        }

        pub(crate) fn pop(&self) -> Option<T> {
            lock(&self.0).pop_front()
        }
    }
}
