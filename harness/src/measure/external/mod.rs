//! Designs that run in another process: `--external NAME=COMMAND` names a driver, a
//! program in any language that runs an executor and speaks the protocol of
//! docs/external.md over its standard input and output.
//!
//! - `protocol`: the lines both ways, written and read in one place;
//! - `driver`: the driver's process: started, fed a cell, read, stopped, its CPU and
//!   threads read from `/proc`;
//! - `replay`: a repetition's records checked and turned into a [`Sample`],
//!   through the same recorder and histograms as an in-process design's.
//!
//! A driver is asked for its hello once, when its flag is read ([`register`]); from then
//! on its design is selected, charted and judged like any other ([`Design::is_external`]),
//! and the runner hands its cells here ([`measure`]).
//!
//! [`Sample`]: super::measurement::Sample

pub mod consume;
mod driver;
pub mod protocol;
mod replay;

use std::path::Path;
use std::sync::{Arc, PoisonError, RwLock};

use sha2::{Digest, Sha256};
use strategies::{Descriptor, Design, Family, StrategyConfig, Threads};

pub use driver::{describe, Session};
use protocol::{CellInput, Hello};

use super::measurement::{warmup_messages, Measurement, Repetitions, RunError, PACE_LEAD_NS};
pub use crate::results::designs::ExternalRecord;
use crate::watch::Watch;
use crate::workload::{Arrivals, ScenarioId, Workload};

/// A design run by a driver process.
#[derive(Debug)]
pub struct External {
    /// Its design (registered with [`Design::register_external`]).
    pub design: Design,
    /// What results record of it.
    pub record: ExternalRecord,
    /// What its driver said of itself.
    pub hello: Hello,
}

/// The external designs of this process, in registration order.
static EXTERNALS: RwLock<Vec<Arc<External>>> = RwLock::new(Vec::new());

/// Why an external design could not be registered (exit 2: the flag is wrong).
#[derive(Debug, thiserror::Error)]
pub enum ExternalError {
    /// Not `NAME=COMMAND`.
    #[error("--external {given:?}: expected NAME=COMMAND (a design id, `=`, then the command that starts its driver)")]
    Syntax {
        /// What was given.
        given: String,
    },
    /// The driver did not give a valid hello.
    #[error("--external {name}: {why}")]
    Driver {
        /// The design's name.
        name: String,
        /// Why, with the driver's last words.
        why: String,
    },
}

/// Registers the design `spec` (`NAME=COMMAND`) names: asks its driver for its hello,
/// hashes its sources and registers its descriptor. Registered already with the same
/// command (a resumed run reads its flags twice): the design as it was.
pub fn register(spec: &str) -> Result<Arc<External>, ExternalError> {
    let syntax = || ExternalError::Syntax { given: spec.to_owned() };
    let (name, command) = spec.split_once('=').ok_or_else(syntax)?;
    let (name, command) = (name.trim(), command.trim());
    if name.is_empty() || command.is_empty() {
        return Err(syntax());
    }
    if let Some(known) = find_named(name) {
        if known.record.command == command {
            return Ok(known);
        }
    }
    let failed = |why: String| ExternalError::Driver { name: name.to_owned(), why };
    let hello = describe(command).map_err(failed)?;
    let source_sha256 = hash_sources(&hello.sources).map_err(failed)?;
    let descriptor = Descriptor::custom(
        name.to_owned(),
        format!("{} (external: {})", hello.name, hello.version),
        hello.family.parse::<Family>().map_err(|error| failed(format!("its family: {error}")))?,
        hello.ordered,
        hello
            .threads
            .parse::<Threads>()
            .map_err(|error| failed(format!("its threads: {error}")))?,
    );
    let design =
        Design::register_external(descriptor).map_err(|error| failed(error.to_string()))?;
    let record = ExternalRecord {
        command: command.to_owned(),
        version: hello.version.clone(),
        wait: hello.wait.clone(),
        sources: hello.sources.clone(),
        source_sha256,
        protocol: 1,
    };
    let external = Arc::new(External { design, record, hello });
    EXTERNALS.write().unwrap_or_else(PoisonError::into_inner).push(Arc::clone(&external));
    Ok(external)
}

fn find_named(name: &str) -> Option<Arc<External>> {
    let externals = EXTERNALS.read().unwrap_or_else(PoisonError::into_inner);
    externals.iter().find(|external| external.design.as_str() == name).cloned()
}

/// The external design `design` is, if it is one of this process's.
pub fn find(design: Design) -> Option<Arc<External>> {
    design.is_external().then(|| find_named(design.as_str())).flatten()
}

/// The commit policy external design `design`'s own commits follow, if its driver is a
/// consumer (its hello's `consumes`).
pub fn consumer_policy(design: Design) -> Option<crate::results::CommitPolicy> {
    find(design)?.hello.consumes.as_ref().map(|consumes| consumes.policy)
}

/// The record of external design `id`, if this process registered one.
pub fn record_of(id: &str) -> Option<ExternalRecord> {
    find_named(id).map(|external| external.record.clone())
}

/// The SHA-256 of `sources` (files, or folders walked in name order), relative to the
/// working directory: each file's path, a zero byte, its length and its bytes.
pub fn hash_sources(sources: &[String]) -> Result<String, String> {
    let mut files = Vec::new();
    for source in sources {
        collect_files(Path::new(source), &mut files)
            .map_err(|error| format!("its source {source}: {error}"))?;
    }
    files.sort();
    let mut hasher = Sha256::new();
    for file in &files {
        let bytes = std::fs::read(file).map_err(|error| format!("{}: {error}", file.display()))?;
        hasher.update(file.to_string_lossy().as_bytes());
        hasher.update([0]);
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    Ok(hasher.finalize().iter().map(|byte| format!("{byte:02x}")).collect())
}

/// Folders a source walk never enters: build outputs and version control.
const NOT_SOURCE: [&str; 3] = ["target", ".git", "node_modules"];

fn collect_files(path: &Path, files: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
    let metadata = std::fs::metadata(path)?;
    if metadata.is_file() {
        files.push(path.to_path_buf());
        return Ok(());
    }
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let name = entry.file_name();
        if NOT_SOURCE.iter().any(|skip| name == *skip) {
            continue;
        }
        collect_files(&entry.path(), files)?;
    }
    Ok(())
}

/// Why external design `strategy` does not run `scenario`, if it does not: its driver
/// runs no such arrivals, or the scenario is a pipeline other than pipeline-crash (which
/// only a consumer driver runs).
pub fn skip_reason(scenario: ScenarioId, strategy: Design) -> Option<&'static str> {
    let external = find(strategy)?;
    let consumer = external.hello.consumes.is_some();
    let Some(generator) = scenario.generator() else {
        return match (consumer, scenario.consumer_driver()) {
            (true, true) => None,
            (true, false) => Some(
                "a consumer driver runs pipeline-crash: the protocol carries one consumer's \
                 crash and restart, not a group, a retry topic or a producer",
            ),
            (false, _) => Some(
                "an external executor runs the measured scenarios; a pipeline consumes a log, \
                 which only a consumer driver (`consumes` in its hello) does",
            ),
        };
    };
    if consumer && external.hello.arrivals.is_empty() {
        return Some("its driver is a consumer of a log: it runs pipeline-crash alone");
    }
    let (kind, reason) = match generator.arrivals {
        Arrivals::Closed => ("closed", "its driver does not run closed-loop arrivals"),
        Arrivals::Paced => ("paced", "its driver does not run paced arrivals"),
        Arrivals::Driven => ("driven", "its driver does not run completion-driven arrivals"),
    };
    if !external.hello.runs(kind) {
        return Some(reason);
    }
    (scenario.resubmits() && !external.hello.runs("saga"))
        .then_some("its driver does not run saga chains (re-entrant submissions)")
}

/// Measures external design `external` on `workload` through its driver: one process for
/// the cell, its warm-up, `plan.repeat` repetitions, each checked and measured as an
/// in-process design's (no counted repetition: the driver's executor counts nothing here).
pub fn measure(
    external: &External,
    workload: &Workload,
    config: StrategyConfig,
    plan: Repetitions,
    watch: &Watch,
) -> Result<Measurement, RunError> {
    let input = cell_input(workload, config, plan, external.hello.producers);
    // Every repetition's messages are reported; the warm-up's are not.
    let reported =
        if workload.driven.is_some() { 0 } else { plan.repeat * workload.messages.len() };
    watch.expect(reported as u64);
    let strategy = external.design;
    let fail = |reason: String| RunError::External { strategy, reason };
    let mut session =
        driver::Session::start(&external.record.command, &input, watch).map_err(fail)?;
    let measured = replay::measure_session(&mut session, workload, &input, watch);
    if watch.is_cancelled() {
        return Err(RunError::Cancelled { strategy }); // the session's drop kills the driver
    }
    match measured {
        Ok(measurement) => session.finish().map(|()| measurement).map_err(fail),
        Err(why) => Err(fail(why)),
    }
}

/// What the driver gets for `workload`'s cell.
fn cell_input(
    workload: &Workload,
    config: StrategyConfig,
    plan: Repetitions,
    producers: usize,
) -> CellInput {
    let paced = workload.arrivals == Arrivals::Paced;
    let messages = workload
        .messages
        .iter()
        .map(|message| {
            let intended_ns = if paced { message.intended_ns + PACE_LEAD_NS } else { 0 };
            strategies::Message { intended_ns, ..*message }
        })
        .collect();
    let driven = workload.driven.as_ref();
    CellInput {
        scenario: workload.scenario.to_string(),
        param: workload.param.clone(),
        workers: workload.workers.unwrap_or(config.workers),
        window: workload.window.unwrap_or(config.max_in_flight),
        throughput: config.throughput,
        repeat: plan.repeat,
        warmup: warmup_messages(workload.messages.len()),
        producers: if workload.driven.is_some() { 1 } else { plan.producers.min(producers) },
        arrivals: match workload.arrivals {
            Arrivals::Closed => "closed",
            Arrivals::Paced => "paced",
            Arrivals::Driven => "driven",
        }
        .into(),
        keys: workload.keys,
        state_bytes: workload.state_bytes,
        messages,
        saga: workload.saga.map(|saga| (saga.key, saga.steps, saga.job)),
        chains: driven.map(|plan| plan.chains.clone()).unwrap_or_default(),
        hot: driven.and_then(|plan| plan.hot).map(|hot| (hot.key, hot.outstanding, hot.job)),
        senders: driven.map(|plan| plan.senders.clone()).unwrap_or_default(),
        duration_ns: driven.map_or(0, |plan| plan.duration_ns),
    }
}
