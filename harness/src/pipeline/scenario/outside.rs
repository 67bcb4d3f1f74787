//! pipeline-crash's cell for a consumer in another process: a consumer driver
//! (docs/external.md, "Consumers") such as Parallel Consumer, on a Kafka cluster, with its
//! own executor and its own commits.
//!
//! 1. The log is produced to the cell's topic as for the suite's own consumers.
//! 2. The driver is started on the topic and the cell's group. Each line it writes is a
//!    fact the harness checks against the log: `s P O` (a handler started the record: a
//!    delivery) and `a P O KEY VERSION` (it applied it: the harness applies the record to
//!    the cell's projection then, in the order the lines come).
//! 3. After `--crash-after` applied records the driver's process group is killed (SIGKILL:
//!    nothing of it runs on, no close, no last commit); what it wrote before is still read.
//! 4. A second driver joins the same group. It gets the partitions once the group gives
//!    up on the killed member (its session timeout), and resumes from the commits the first
//!    one left. Once every record has been applied at least once it is asked to `stop`
//!    (closing its consumer, which commits what completed), and says `done`. A driver that
//!    falls quiet with records never applied is stopped too, and they count as lost.
//! 5. The group's commits are read from outside the group every commit interval while
//!    either runs: the commit lag is `(highest applied offset + 1) - committed offset`
//!    summed over partitions, as the suite's consumers compute it from what they commit.
//! 6. The result is summarized as any pipeline-crash cell's (module `crash`).
//!
//! A line that cannot be true (a record not in the log, one applied that was not started,
//! a key or version the record does not carry) fails the cell with the driver's last words.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::cell::CellContext;
use super::waits::Waits;
use crate::measure::external::consume::{parse_consumer_line, ConsumeInput, ConsumerLine, STOP};
use crate::measure::external::{External, Session};
use crate::pipeline::consumer::{ConsumerError, Pipeline};
use crate::pipeline::log::Record;
use crate::pipeline::transport::{Backend, Commit, Endpoint, Transport};
use crate::results::{IncarnationReport, LagPoint};

/// How long the restarted driver may write nothing, beyond its session timeout, while
/// records are still unapplied, before it is stopped and they count as lost.
const QUIET_AFTER_SESSION: Duration = Duration::from_secs(10);

/// The shortest interval at which the group's commits are read.
const MIN_COMMIT_READ: Duration = Duration::from_millis(5);

/// One pipeline-crash cell of consumer driver `external`: a driver killed after
/// `--crash-after` applications, then one that resumes from its commits to the end. The
/// pipeline they leave and their incarnations, which the crash cell summarizes.
pub(super) fn crash_cell<B: Backend>(
    cell: &CellContext<'_, B>,
    external: &External,
) -> Result<(Pipeline, Vec<IncarnationReport>), ConsumerError> {
    let (pipeline, transport) = cell.open()?;
    let endpoint = transport.endpoint().ok_or_else(|| {
        ConsumerError::External("a consumer driver needs the log on a Kafka cluster".into())
    })?;
    let driver = Driver::new(cell, &pipeline, &transport, &endpoint, external);
    let crash_after = cell.sizes().crash_after as u64;
    let incarnations =
        vec![driver.incarnation(0, Some(crash_after))?, driver.incarnation(1, None)?];
    Ok((pipeline, incarnations))
}

/// What every driver process of a cell shares.
struct Driver<'a, T: Transport> {
    pipeline: &'a Pipeline,
    transport: &'a T,
    command: &'a str,
    input: ConsumeInput,
    session_timeout: Duration,
    commit_read: Duration,
    /// Records no incarnation applied yet.
    unapplied: AtomicU64,
}

impl<'a, T: Transport> Driver<'a, T> {
    fn new<B: Backend>(
        cell: &CellContext<'_, B>,
        pipeline: &'a Pipeline,
        transport: &'a T,
        endpoint: &Endpoint,
        external: &'a External,
    ) -> Self {
        let (bench, sizes) = (cell.bench, cell.sizes());
        let waits = Waits::of(sizes);
        let slow = pipeline
            .log
            .iter()
            .flatten()
            .filter(|record| waits.is_slow(record))
            .map(|record| (record.partition, record.offset, nanos(waits.slow)))
            .collect();
        let input = ConsumeInput {
            scenario: cell.scenario.as_str().into(),
            param: cell.param.name(),
            incarnation: 0,
            bootstrap: endpoint.bootstrap.clone(),
            topic: endpoint.topic.clone(),
            group: endpoint.group.clone(),
            session_timeout_ms: endpoint.session_timeout_ms,
            partitions: pipeline.partitions(),
            records: pipeline.records(),
            workers: bench.strategy_config.workers,
            window: bench.strategy_config.max_in_flight,
            spin_ns: sizes.spin_ns.into(),
            slow,
        };
        Self {
            pipeline,
            transport,
            command: &external.record.command,
            input,
            session_timeout: Duration::from_millis(endpoint.session_timeout_ms),
            commit_read: waits.commit_interval.max(MIN_COMMIT_READ),
            unapplied: AtomicU64::new(pipeline.records()),
        }
    }

    /// Runs one driver process: until `crash_after` applications and then killed, or
    /// (`None`) to the end and stopped; the group's commits are read beside it.
    fn incarnation(
        &self,
        number: u32,
        crash_after: Option<u64>,
    ) -> Result<IncarnationReport, ConsumerError> {
        let input = ConsumeInput { incarnation: number, ..self.input.clone() };
        let started_at_s = self.pipeline.epoch.elapsed().as_secs_f64();
        let mut session = Session::start_consumer(self.command, &input, &self.pipeline.watch)
            .map_err(ConsumerError::External)?;
        // From its hello on (its runtime started): joining the group, and after the crash
        // waiting for the group to give up on the killed member, count, as a restarted
        // consumer of this process counts them from its first poll.
        let began = Instant::now();
        let highest: Vec<AtomicU64> =
            (0..self.pipeline.partitions()).map(|_| AtomicU64::new(0)).collect();
        let done = AtomicBool::new(false);
        let (run, ticks) = std::thread::scope(|scope| {
            let reader = scope.spawn(|| self.read_commits(&highest, &done));
            let run = self.follow(&mut session, crash_after, &highest, began);
            done.store(true, Ordering::Release);
            (run, reader.join().unwrap_or_else(|_| Ticks::new(highest.len())))
        });
        let run = run?;
        if crash_after.is_none() {
            session.finish().map_err(ConsumerError::External)?;
        }
        let commits = self.transport.group_commits()?;
        Ok(run.report(started_at_s, &commits, ticks))
    }

    /// Reads the driver's lines until its output ends: kills it at the crash point, or
    /// stops it once every record was applied (or once it fell quiet).
    fn follow(
        &self,
        session: &mut Session,
        crash_after: Option<u64>,
        highest: &[AtomicU64],
        began: Instant,
    ) -> Result<Run, ConsumerError> {
        let mut run = Run::new(self.pipeline, began);
        let mut stopping = false;
        loop {
            // The restarted driver's quiet spell, before it is stopped; otherwise the
            // session's own silence limit.
            let quiet = match (crash_after, stopping) {
                (None, false) => self.session_timeout + QUIET_AFTER_SESSION,
                _ => Duration::MAX,
            };
            let line = match session.next_line_within(quiet).map_err(ConsumerError::External)? {
                Some(Some(line)) => line,
                Some(None) => break,
                None if crash_after.is_none() && !stopping => {
                    // Quiet with records never applied: they are lost; stop it.
                    session.send(STOP);
                    stopping = true;
                    continue;
                }
                None => continue,
            };
            let fact = parse_consumer_line(&line).map_err(|why| fail(session, &why))?;
            match fact {
                ConsumerLine::Done if stopping => run.ended = Some(Instant::now()),
                ConsumerLine::Done => return Err(fail(session, "it said `done` before `stop`")),
                fact => self.take(&mut run, fact, highest).map_err(|why| fail(session, &why))?,
            }
            match crash_after {
                Some(after) if run.applied >= after && run.ended.is_none() => {
                    session.kill();
                    run.ended = Some(Instant::now());
                }
                None if !stopping && self.unapplied.load(Ordering::Relaxed) == 0 => {
                    session.send(STOP);
                    stopping = true;
                }
                _ => {}
            }
        }
        if crash_after.is_none() && run.ended.is_none() {
            return Err(fail(session, "its output ended before `done`"));
        }
        run.ended.get_or_insert_with(Instant::now);
        Ok(run)
    }

    /// Checks `fact` against the log and the incarnation so far, and records it.
    fn take(&self, run: &mut Run, fact: ConsumerLine, highest: &[AtomicU64]) -> Result<(), String> {
        match fact {
            ConsumerLine::Started { partition, offset } => {
                let record = self.record(partition, offset)?;
                if !run.in_flight.insert((partition, offset)) {
                    return Err(format!("it started {partition}/{offset} twice at once"));
                }
                run.started += 1;
                self.pipeline.tally.delivered(&record);
            }
            ConsumerLine::Applied { partition, offset, key, version } => {
                let record = self.record(partition, offset)?;
                if !run.in_flight.remove(&(partition, offset)) {
                    return Err(format!(
                        "it applied {partition}/{offset}, which it had not started"
                    ));
                }
                if (record.key, record.version) != (key, version) {
                    return Err(format!(
                        "it applied {partition}/{offset} as key {key} version {version}; the \
                         record is key {} version {}",
                        record.key, record.version
                    ));
                }
                self.apply(record);
                run.applied += 1;
                run.applied_offsets[partition as usize].push(offset);
                // Relaxed: the commit reader reads it alone, as a sample.
                highest[partition as usize].fetch_max(offset + 1, Ordering::Relaxed);
            }
            ConsumerLine::Done => {}
        }
        Ok(())
    }

    /// The effect of an applied record: the projection, the tally, the watch.
    fn apply(&self, record: Record) {
        self.pipeline.projection.apply(record);
        if self.pipeline.tally.applied(&record, self.pipeline.now_ns()) {
            self.unapplied.fetch_sub(1, Ordering::Relaxed);
        }
        self.pipeline.watch.advance();
    }

    /// The log's record at `partition`/`offset`, or why there is none.
    fn record(&self, partition: u32, offset: u64) -> Result<Record, String> {
        let partitions = self.pipeline.partitions();
        let records = self.pipeline.log.get(partition as usize).ok_or_else(|| {
            format!("partition {partition} is not in the log ({partitions} partitions)")
        })?;
        usize::try_from(offset).ok().and_then(|at| records.get(at)).copied().ok_or_else(|| {
            format!(
                "offset {offset} is not in partition {partition} (it ends at {})",
                records.len()
            )
        })
    }

    /// Reads the group's commits every commit interval until `done`.
    fn read_commits(&self, highest: &[AtomicU64], done: &AtomicBool) -> Ticks {
        let mut ticks = Ticks::new(highest.len());
        while !done.load(Ordering::Acquire) {
            let at = Instant::now();
            if let Ok(commits) = self.transport.group_commits() {
                let highest: Vec<u64> =
                    highest.iter().map(|next| next.load(Ordering::Relaxed)).collect();
                let at_s = at.duration_since(self.pipeline.epoch).as_secs_f64();
                ticks.tick(at, at_s, &commits, &highest);
            }
            std::thread::sleep(self.commit_read.saturating_sub(at.elapsed()));
        }
        ticks
    }
}

/// What one driver process did, as its lines said.
struct Run {
    /// Records started and not yet applied.
    in_flight: HashSet<(u32, u64)>,
    started: u64,
    applied: u64,
    /// Per partition, the offsets it applied.
    applied_offsets: Vec<Vec<u64>>,
    /// When it said its hello.
    began: Instant,
    /// When it was killed, or said `done`.
    ended: Option<Instant>,
}

impl Run {
    fn new(pipeline: &Pipeline, began: Instant) -> Self {
        Self {
            in_flight: HashSet::new(),
            started: 0,
            applied: 0,
            applied_offsets: vec![Vec::new(); pipeline.partitions() as usize],
            began,
            ended: None,
        }
    }

    /// Its report: `commits` are the group's once it ended, `ticks` what the commit reader
    /// saw while it ran.
    fn report(
        self,
        started_at_s: f64,
        commits: &[Option<Commit>],
        ticks: Ticks,
    ) -> IncarnationReport {
        let committed =
            |partition: usize| commits.get(partition).cloned().flatten().map_or(0, |c| c.offset);
        let uncommitted_at_end = self
            .applied_offsets
            .iter()
            .enumerate()
            .map(|(partition, offsets)| {
                offsets.iter().filter(|&&offset| offset >= committed(partition)).count() as u64
            })
            .sum();
        let ended = self.ended.unwrap_or_else(Instant::now);
        let elapsed_s = ended.saturating_duration_since(self.began).as_secs_f64();
        IncarnationReport {
            member: 0,
            polled: self.started,
            submitted: self.started,
            completed: self.applied,
            commits: ticks.commits,
            lag_timeline: ticks.lag_timeline,
            longest_freeze_s: ticks.longest_freeze.as_secs_f64(),
            max_metadata_bytes: ticks.max_metadata_bytes,
            uncommitted_at_end,
            in_flight_at_end: self.in_flight.len() as u64,
            started_at_s,
            elapsed_s,
            ..IncarnationReport::default()
        }
    }
}

/// What the reads of the group's commits saw over one incarnation.
struct Ticks {
    lag_timeline: Vec<LagPoint>,
    /// Changes of a partition's commit seen.
    commits: u64,
    longest_freeze: Duration,
    max_metadata_bytes: usize,
    /// Per partition: the commit last seen, since when, and the highest applied then.
    last: Vec<(Option<Commit>, Instant, u64)>,
}

impl Ticks {
    fn new(partitions: usize) -> Self {
        Self {
            lag_timeline: Vec::new(),
            commits: 0,
            longest_freeze: Duration::ZERO,
            max_metadata_bytes: 0,
            last: vec![(None, Instant::now(), 0); partitions],
        }
    }

    /// One read at `at`: `commits` per partition, `highest` applied offset + 1 per
    /// partition (0: none yet).
    fn tick(&mut self, at: Instant, at_s: f64, commits: &[Option<Commit>], highest: &[u64]) {
        let mut lag = 0;
        for (partition, (commit, &next)) in commits.iter().zip(highest).enumerate() {
            let (last, since, last_next) = &mut self.last[partition];
            let offset = commit.as_ref().map(|commit| commit.offset);
            if offset != last.as_ref().map(|commit| commit.offset) {
                (*since, *last_next) = (at, next);
            } else if next != *last_next {
                self.longest_freeze = self.longest_freeze.max(at - *since);
            }
            if commit != last {
                self.commits += 1;
                last.clone_from(commit);
            }
            let committed = commit.as_ref().map_or(0, |commit| commit.offset);
            let metadata = commit.as_ref().map_or(0, |commit| commit.metadata.len());
            self.max_metadata_bytes = self.max_metadata_bytes.max(metadata);
            lag += next.saturating_sub(committed);
        }
        self.lag_timeline.push(LagPoint { at_s, lag });
    }
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// `why`, with the driver's status and last words.
fn fail(session: &mut Session, why: &str) -> ConsumerError {
    ConsumerError::External(session.why(why))
}
