//! Benchmark an executor of your own beside the built-in designs.
//!
//! `big-lock` is written here, outside the `strategies` crate, on its public engine API: a
//! deliberately naive design whose per-key mailboxes all sit in one map behind one mutex,
//! and whose workers block on a message's wait instead of moving on to another key. It
//! keeps per-key order, so it is an honest contender; the suite shows what the lock and the
//! blocked workers cost.
//!
//! ```text
//! cargo run --release --example big_lock                 # the default suite, a few minutes
//! cargo run --release --example big_lock -- --quick      # about a minute
//! cargo run --release --example big_lock -- --scenario async-io --strategy big-lock,keyed-mailbox
//! ```
//!
//! It takes every flag of `keyed-bench run`. It first runs the exported conformance check
//! on `big-lock`, then the suite (into `results/big-lock/` unless `--out` says otherwise),
//! the charts, `report.html` and the gates. The folder is a normal results folder:
//! `keyed-bench plot`, `compare`, `export` and `gate` read it as any other.

use std::collections::{HashMap, VecDeque};
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Wake, Waker};
use std::thread::{self, JoinHandle, Thread};
use std::time::Duration;

use strategies::engine::{Core, Engine, Held};
use strategies::{conformance, Descriptor, Design, Family, Key, Message, Threads};

/// The id the suite, the results and the charts know the design by.
const ID: &str = "big-lock";

/// How long a blocked worker sleeps between two looks at a forced close.
const FORCED_POLL: Duration = Duration::from_millis(1);

/// One key's messages not yet run, and whether a worker is running one of them now.
#[derive(Default)]
struct Mailbox {
    queued: VecDeque<Message>,
    busy: bool,
}

/// Everything the workers share, under the one lock.
#[derive(Default)]
struct State {
    mailboxes: HashMap<Key, Mailbox>,
    /// Keys with queued messages and no worker, in the order they became runnable. A key is
    /// here at most once, and never while busy: that is what keeps its order.
    runnable: VecDeque<Key>,
    stopping: bool,
}

struct Shared {
    core: Arc<Core>,
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A worker: takes a runnable key, runs its next message to the end (waits included),
    /// then gives the key back if it has more.
    fn work(&self) {
        let mut state = self.lock();
        loop {
            let Some(key) = state.runnable.pop_front() else {
                if state.stopping {
                    return;
                }
                state = self.wake.wait(state).unwrap_or_else(PoisonError::into_inner);
                continue;
            };
            let mailbox = state.mailboxes.get_mut(&key).expect("a runnable key has a mailbox");
            let message = mailbox.queued.pop_front().expect("a runnable key has a message");
            mailbox.busy = true;
            drop(state);
            // The message's window credit is held until its mailbox is retired (or handed
            // back), so that `drain` never returns while the mailbox is still live.
            let mut held = self.core.hold(key);
            self.run(&message, &mut held);
            state = self.lock();
            let mailbox = state.mailboxes.get_mut(&key).expect("a busy key keeps its mailbox");
            mailbox.busy = false;
            if mailbox.queued.is_empty() {
                state.mailboxes.remove(&key);
            } else {
                state.runnable.push_back(key);
            }
            // Outside the lock: a returned credit may admit a queued message, which
            // dispatches (and takes the lock).
            drop(state);
            held.release();
            state = self.lock();
        }
    }

    /// Runs one message on this thread, blocking it through the message's wait; its credit
    /// stays in `held`.
    fn run(&self, message: &Message, held: &mut Held<'_>) {
        let Some(mut step) = self.core.start_holding(message, held) else { return };
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        let mut cx = Context::from_waker(&waker);
        while self.core.poll_holding(&mut step, &mut cx, held).is_pending() {
            if self.core.is_forced() {
                self.core.abandon_holding(step, held);
                return;
            }
            thread::park_timeout(FORCED_POLL);
        }
    }
}

/// Wakes the worker that is blocked on a step.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// The engine: `workers` threads over [`Shared`].
struct BigLock {
    shared: Arc<Shared>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    started: usize,
}

impl Engine for BigLock {
    fn start(core: &Arc<Core>) -> Self {
        let shared = Arc::new(Shared {
            core: Arc::clone(core),
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        });
        let workers = core.config().workers;
        let threads = (0..workers)
            .map(|index| {
                let shared = Arc::clone(&shared);
                thread::Builder::new()
                    .name(format!("{ID}-{index}"))
                    .spawn(move || shared.work())
                    .expect("a worker thread starts")
            })
            .collect();
        Self { shared, threads: Mutex::new(threads), started: workers }
    }

    fn dispatch(&self, message: Message) {
        let mut state = self.shared.lock();
        let mailbox = state.mailboxes.entry(message.key).or_default();
        mailbox.queued.push_back(message);
        if !mailbox.busy && mailbox.queued.len() == 1 {
            state.runnable.push_back(message.key);
            drop(state);
            self.shared.wake.notify_one();
        }
    }

    fn sweep(&self) {
        let mut dropped = Vec::new();
        {
            let mut state = self.shared.lock();
            state.runnable.clear();
            state.mailboxes.retain(|key, mailbox| {
                dropped.push((*key, mailbox.queued.len() as u64));
                mailbox.queued.clear();
                mailbox.busy
            });
        }
        // Outside the lock: a returned credit may admit a queued message, which dispatches.
        for (key, count) in dropped {
            self.shared.core.discard(key, count);
        }
    }

    fn stop(&self) {
        self.shared.lock().stopping = true;
        self.shared.wake.notify_all();
        let threads =
            std::mem::take(&mut *self.threads.lock().unwrap_or_else(PoisonError::into_inner));
        for thread in threads {
            thread.join().expect("a worker thread panicked");
        }
    }

    fn threads_started(&self) -> usize {
        self.started
    }

    fn live_mailboxes(&self) -> Option<usize> {
        Some(self.shared.lock().mailboxes.len())
    }
}

fn main() -> ExitCode {
    let descriptor = Descriptor::custom(
        ID,
        "example: per-key mailboxes in one map behind one mutex; a wait blocks its worker",
        Family::Mailboxes,
        true,
        Threads::SharedPool,
    );
    let design = Design::register_engine::<BigLock>(descriptor).expect("`big-lock` is free");
    // Every flag of `keyed-bench run`, read first so that `--help` and bad input answer at
    // once; the results go to results/big-lock unless --out says.
    let out = std::path::PathBuf::from(format!("results/{ID}"));
    let config = harness::bench::config_from_command_line(Some(&out));

    eprintln!("checking that {ID} keeps the contract ...");
    match conformance::check(design) {
        Ok(passed) => eprintln!("{passed}"),
        Err(failed) => {
            eprintln!("{failed}");
            return ExitCode::FAILURE;
        }
    }

    harness::bench::main_with(&config)
}
