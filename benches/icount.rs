//! Instruction counts of the dispatch path, its stages and the pipeline's bookkeeping,
//! under callgrind (through gungraun): figures that do not depend on the machine's load,
//! for the regression gate of `scripts/icount.sh` (docs/instruction-counts.md).
//!
//! # What is counted
//!
//! Each benchmark counts one fixed section and nothing else:
//!
//! - `dispatch`, one per strategy: one worker, idle spin 0, 1,000 keys round-robin, a
//!   batch of 10,000 no-op messages from the first `submit` until `drain` returns, on every
//!   thread (the producer, the workers, a runtime's own threads);
//! - `admission`, `activation`: 10,000 window credits taken and returned, 10,000 mailboxes
//!   activated and retired (`strategies::stages`, as in `benches/stages.rs`);
//! - `hop/stream`: 10,000 items pushed to a worker that parks at once when idle, until it
//!   has taken them all; `hop/wake-parked`: 1,000 items, each pushed to the worker once it
//!   is parked, until it has taken it (waiting by yielding the thread, counted);
//! - `recorder`: the harness recording the start and end of 10,000 messages;
//! - `commit-tracker`: 10,000 offsets polled, then completed in blocks of 16 taken from
//!   the highest down (`contiguous+metadata`'s tracking);
//! - `metadata-encoder`: 100 commits of a partition whose completed offsets above the gap
//!   need both encodings' work (a dense stretch and long runs);
//! - `projection-apply`: 5,000 records of 1,000 keys applied to the version-aware
//!   projection, each key's second and third versions swapped (a gap, stashed, then closed).
//!
//! Instrumentation is off until the benchmark function turns it on (callgrind's
//! `--instr-atstart=no` and a client request), and it is turned off before the function
//! returns: building a strategy, starting its threads, a warm-up batch (gungraun's `setup`)
//! and closing it (`teardown`) are not counted, and neither is anything of gungraun's own.
//!
//! # Work, not contention
//!
//! Valgrind runs one thread at a time. These counts are the instructions the work takes,
//! not what contention, cache misses or a busy machine cost: a change that adds a lock
//! round trip shows up here as its few instructions, and a change in how threads wait for
//! each other shows up only as far as it changes the instructions run. The wall-clock
//! benches and gates judge the rest.
//!
//! Run it with `scripts/icount.sh`, which compares it with `benches/icount-baseline.json`;
//! it needs valgrind and `gungraun-runner` of the same version as the `gungraun` crate.

use std::hint::black_box;
use std::sync::Arc;

use gungraun::{
    library_benchmark, library_benchmark_group, main, Callgrind, EntryPoint, LibraryBenchmarkConfig,
};
use harness::measure::recorder::{Clock, Recorder};
use harness::pipeline::{MetadataLimit, PartitionProgress, Projection, Record};
use harness::results::CommitPolicy;
use strategies::stages::{ActivationStage, AdmissionStage, HopStage};
use strategies::{Job, Key, Message, Outcome, Strategy, StrategyConfig, StrategyId};

/// Messages (and items, offsets, credits) of one counted batch.
const BATCH: u64 = 10_000;
/// Keys of the dispatch batch: round-robin, so every message finds its key's mailbox
/// retired, as in the criterion `dispatch` bench.
const KEYS: u64 = 1_000;
/// Hops of `hop/wake-parked`, one at a time.
const WAKES: u64 = 1_000;

#[path = "support/callgrind.rs"]
mod callgrind;

/// The 10,000 no-op messages of a dispatch batch.
fn dispatch_messages() -> Vec<Message> {
    (0..BATCH)
        .map(|index| Message {
            key: Key::new(0, index % KEYS),
            seq: index / KEYS,
            intended_ns: 0,
            job: Job::Noop,
        })
        .collect()
}

/// A strategy with one worker that parks at once when idle, warmed up with one batch (its
/// spare mailboxes and queues allocated), and the batch to count.
fn start_strategy(id: StrategyId) -> (Box<dyn Strategy>, Vec<Message>) {
    let config = StrategyConfig { idle_spin_us: 0, ..StrategyConfig::with_workers(1) };
    let strategy = id
        .build(config, Arc::new(|_: &Message| Outcome::Done))
        .expect("one worker, spin 0: valid settings");
    let messages = dispatch_messages();
    submit_and_drain(strategy.as_ref(), &messages);
    (strategy, messages)
}

fn submit_and_drain(strategy: &dyn Strategy, messages: &[Message]) {
    for message in messages {
        strategy.submit(*message).expect("an open strategy accepts");
    }
    strategy.drain();
}

fn close_strategy(strategy: Box<dyn Strategy>) {
    strategy.close();
}

#[library_benchmark]
#[bench::per_type_pool(args = (StrategyId::PerTypePool), setup = start_strategy, teardown = close_strategy)]
#[bench::group_by(args = (StrategyId::GroupBy), setup = start_strategy, teardown = close_strategy)]
#[bench::work_stealing(args = (StrategyId::WorkStealing), setup = start_strategy, teardown = close_strategy)]
#[bench::keyed_mailbox(args = (StrategyId::KeyedMailbox), setup = start_strategy, teardown = close_strategy)]
#[bench::hybrid(args = (StrategyId::Hybrid), setup = start_strategy, teardown = close_strategy)]
#[bench::tokio(args = (StrategyId::Tokio), setup = start_strategy, teardown = close_strategy)]
#[bench::rayon(args = (StrategyId::Rayon), setup = start_strategy, teardown = close_strategy)]
#[bench::tokio_actors(args = (StrategyId::TokioActors), setup = start_strategy, teardown = close_strategy)]
#[bench::inline(args = (StrategyId::Inline), setup = start_strategy, teardown = close_strategy)]
#[bench::thread_pool(args = (StrategyId::ThreadPool), setup = start_strategy, teardown = close_strategy)]
fn dispatch(input: (Box<dyn Strategy>, Vec<Message>)) -> Box<dyn Strategy> {
    let (strategy, messages) = input;
    callgrind::start();
    submit_and_drain(strategy.as_ref(), black_box(&messages));
    callgrind::stop();
    strategy
}

#[library_benchmark]
#[bench::window(AdmissionStage::new(256))]
fn admission(window: AdmissionStage) -> AdmissionStage {
    callgrind::start();
    for _ in 0..BATCH {
        black_box(&window).admit_and_finish();
    }
    callgrind::stop();
    window
}

/// The activation stage, warmed up: its spare mailboxes exist.
fn warm_activation() -> ActivationStage {
    let stage = ActivationStage::default();
    for id in 0..KEYS {
        stage.activate_and_retire(Key::new(0, id));
    }
    stage
}

#[library_benchmark]
#[bench::map(setup = warm_activation)]
fn activation(stage: ActivationStage) -> ActivationStage {
    callgrind::start();
    for index in 0..BATCH {
        stage.activate_and_retire(Key::new(0, black_box(index % KEYS)));
    }
    callgrind::stop();
    stage
}

/// A hop worker that parks at once when idle, parked before the count starts.
fn parked_hop_worker() -> HopStage {
    let stage = HopStage::start(0);
    stage.wait_parked();
    stage
}

/// Yields the thread until the worker has taken `count` items in all: under valgrind a
/// yield hands the (one) running slot to the worker, where a spin would run a whole time
/// slice.
fn yield_until_received(stage: &HopStage, count: u64) {
    while stage.received() < count {
        std::thread::yield_now();
    }
}

#[library_benchmark]
#[bench::stream(setup = parked_hop_worker)]
fn hop_stream(stage: HopStage) -> HopStage {
    callgrind::start();
    let target = stage.received() + BATCH;
    for item in 0..BATCH {
        stage.hop(black_box(item));
    }
    yield_until_received(&stage, target);
    callgrind::stop();
    stage
}

#[library_benchmark]
#[bench::wake_parked(setup = parked_hop_worker)]
fn hop_wake_parked(stage: HopStage) -> HopStage {
    callgrind::start();
    for item in 0..WAKES {
        stage.wait_parked();
        let target = stage.received() + 1;
        stage.hop(black_box(item));
        yield_until_received(&stage, target);
    }
    callgrind::stop();
    stage
}

/// A recorder over the dispatch batch's keys, and the batch.
fn new_recorder() -> (Recorder, Vec<Message>) {
    let messages = dispatch_messages();
    let recorder = Recorder::new(&messages, KEYS as usize, Clock::start());
    (recorder, messages)
}

#[library_benchmark]
#[bench::start_end(setup = new_recorder)]
fn recorder(input: (Recorder, Vec<Message>)) -> Recorder {
    let (recorder, messages) = input;
    callgrind::start();
    for message in black_box(&messages) {
        let token = recorder.start(message);
        recorder.end(token, message);
    }
    callgrind::stop();
    recorder
}

fn fresh_progress() -> PartitionProgress {
    PartitionProgress::resume(None, CommitPolicy::ContiguousMetadata, MetadataLimit::DEFAULT)
        .expect("no commit to decode")
}

/// Offsets `0..BATCH` in blocks of 16, each block from its highest offset down: every
/// completion but a block's last lands above the gap, and the last closes it.
fn completion_order() -> Vec<u64> {
    (0..BATCH / 16).flat_map(|block| (0..16).rev().map(move |index| block * 16 + index)).collect()
}

#[library_benchmark]
#[bench::blocks_of_16(setup = completion_order)]
fn commit_tracker(order: Vec<u64>) -> PartitionProgress {
    callgrind::start();
    let mut progress = fresh_progress();
    for offset in 0..BATCH {
        progress.polled(black_box(offset));
    }
    for &offset in &order {
        progress.completed(black_box(offset));
    }
    callgrind::stop();
    progress
}

/// A partition whose offset 0 is still in flight, above it 1,000 offsets with every
/// seventh incomplete (dense: the bitset's case), then 4,000 in runs of 100 completed
/// after one incomplete (the run-length case).
fn gapped_progress() -> PartitionProgress {
    let mut progress = fresh_progress();
    for offset in 0..5_001 {
        progress.polled(offset);
    }
    let dense = (1..=1_000).filter(|offset| offset % 7 != 0);
    let runs = (1_001..=5_000).filter(|offset| offset % 101 != 0);
    for offset in dense.chain(runs) {
        progress.completed(offset);
    }
    progress
}

#[library_benchmark]
#[bench::dense_and_runs(setup = gapped_progress)]
fn metadata_encoder(progress: PartitionProgress) -> PartitionProgress {
    callgrind::start();
    for _ in 0..100 {
        black_box(black_box(&progress).commit());
    }
    callgrind::stop();
    progress
}

/// 5,000 records: versions 1 to 5 of keys 0 to 999, one version of every key at a time,
/// each key's version 3 arriving before its version 2.
fn projection_records() -> (Projection, Vec<Record>) {
    let arrival = [1, 3, 2, 4, 5];
    let records = arrival
        .iter()
        .flat_map(|&version| (0..KEYS).map(move |key| (key, version)))
        .enumerate()
        .map(|(offset, (key, version))| Record {
            partition: 0,
            offset: offset as u64,
            key,
            version,
            payload_bytes: 100,
            produce_ns: 0,
        })
        .collect();
    (Projection::new(), records)
}

#[library_benchmark]
#[bench::swapped_versions(setup = projection_records)]
fn projection_apply(input: (Projection, Vec<Record>)) -> Projection {
    let (projection, records) = input;
    callgrind::start();
    for record in black_box(&records) {
        black_box(projection.apply(*record));
    }
    callgrind::stop();
    projection
}

library_benchmark_group!(name = executors; benchmarks = dispatch);
library_benchmark_group!(
    name = stages;
    benchmarks = admission, activation, hop_stream, hop_wake_parked, recorder
);
library_benchmark_group!(
    name = pipeline;
    benchmarks = commit_tracker, metadata_encoder, projection_apply
);

main!(
    // Counting starts and stops with the client requests above, on every thread: no entry
    // point toggle, collection on, instrumentation off until started. No cache simulation:
    // the gate reads instructions only.
    config = LibraryBenchmarkConfig::default().tool(
        Callgrind::with_args(["--instr-atstart=no", "--collect-atstart=yes", "--cache-sim=no"])
            .entry_point(EntryPoint::None)
    );
    library_benchmark_groups = executors, stages, pipeline
);
