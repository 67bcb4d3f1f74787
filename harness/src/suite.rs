//! The suite: every selected (scenario, param) x strategy cell, measured in turn, then
//! `results.json`, `summary.md` and the histograms written to the output folder.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use strategies::{Job, Key, Message, Outcome, Strategy, StrategyConfig, StrategyId};

use crate::measure::handler::BenchHandler;
use crate::measure::recorder::{Clock, Recorder};
use crate::results::{hgrm, write_atomically, Meta, Results, RunResult, Skipped, SCHEMA};
use crate::measure::runner::{measure, Instruments, RunError};
use crate::workload::{generate, ScenarioId, Sizes, Workload};
use crate::report::summary::render_summary;
use crate::measure::system;

/// Messages of the no-op runs that measure the recorder's own cost.
const OVERHEAD_MESSAGES: u64 = 200_000;
/// Runs of each no-op measurement; the fastest counts.
const OVERHEAD_RUNS: usize = 3;
/// Messages of the `inline` run that measures saturation for `open-loop`.
const SATURATION_MESSAGES: usize = 50_000;

/// A validated run of the suite.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// Scenarios, in presentation order.
    pub scenarios: Vec<ScenarioId>,
    /// Strategies, in presentation order.
    pub strategies: Vec<StrategyId>,
    /// Workers, window, throughput, groups.
    pub strategy: StrategyConfig,
    /// Measured repetitions per cell.
    pub repeat: usize,
    /// Whether `--quick` sizes are in use (recorded in the results).
    pub quick: bool,
    /// Workload seed.
    pub seed: u64,
    /// Output folder.
    pub out: PathBuf,
    /// Workload sizes.
    pub sizes: Sizes,
    /// The command line, for the results' meta.
    pub command: String,
}

/// Why the suite stopped.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// A cell could not be measured.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The output could not be written.
    #[error("cannot write {path}")]
    Write {
        /// The file or folder.
        path: String,
        /// Why.
        source: std::io::Error,
    },
}

/// Why `inline` does not run a scenario, if it does not.
fn skip_reason(scenario: ScenarioId, strategy: StrategyId) -> Option<&'static str> {
    let waits = matches!(
        scenario,
        ScenarioId::ConflictBackoff | ScenarioId::HotBacklog | ScenarioId::AsyncIo
    );
    (strategy == StrategyId::Inline && waits).then_some(
        "inline runs every wait on the submitting thread, one after another: \
         not a contender where handlers wait",
    )
}

/// Creates the output folders, failing early (before any measurement) if it cannot, and
/// removes what an earlier run wrote there (`results.json`, `summary.md`,
/// `histograms/*.hgrm`; nothing else), so a run that fails leaves no complete-looking
/// results behind and a run never mixes its files with an earlier one's.
pub fn prepare_output(out: &std::path::Path) -> Result<(), SuiteError> {
    let histograms = out.join("histograms");
    let earlier_histograms = std::fs::read_dir(&histograms)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "hgrm"));
    let earlier = [out.join("results.json"), out.join("summary.md")];
    for previous in earlier.into_iter().chain(earlier_histograms) {
        match std::fs::remove_file(&previous) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => {
                let path = previous.display().to_string();
                return Err(SuiteError::Write { path, source: error });
            }
            _ => {}
        }
    }
    std::fs::create_dir_all(&histograms)
        .map_err(|source| SuiteError::Write { path: histograms.display().to_string(), source })?;
    let probe = out.join(".write-probe");
    std::fs::write(&probe, b"")
        .and_then(|()| std::fs::remove_file(&probe))
        .map_err(|source| SuiteError::Write { path: out.display().to_string(), source })
}

/// Reports progress: a bar on a terminal, plain lines otherwise.
struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: usize,
}

impl Progress {
    fn new(total: usize) -> Self {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = ProgressBar::new(total as u64);
            bar.set_style(
                ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                    .expect("valid progress template")
                    .progress_chars("=> "),
            );
            bar
        });
        Self { bar, total, done: 0 }
    }

    fn starting(&self, what: &str) {
        if let Some(bar) = &self.bar {
            bar.set_message(what.to_owned());
        }
    }

    fn finished(&mut self, what: &str, outcome: &str) {
        self.done += 1;
        match &self.bar {
            Some(bar) => {
                bar.inc(1);
                bar.println(format!("{what}: {outcome}"));
            }
            None => eprintln!("[{:>3}/{}] {what}: {outcome}", self.done, self.total),
        }
    }

    fn note(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => eprintln!("{line}"),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Runs the suite and writes its outputs. Returns the results and the summary text.
pub fn run_suite(config: &RunConfig) -> Result<(Results, String), SuiteError> {
    prepare_output(&config.out)?;
    let suite_started = Instant::now();
    let created = now_rfc3339();
    let instruments = Instruments::start();
    let workers = config.strategy.workers;
    let mut notes = Vec::new();
    if config.scenarios.contains(&ScenarioId::OpenLoop) {
        notes.push(format!(
            "open-loop saturation counts {} worker(s): min(workers, cores - 1), since the \
             producer thread needs a core of its own",
            saturation_workers(config)
        ));
    }

    let cells: usize = config
        .scenarios
        .iter()
        .map(|&scenario| params_of(scenario, &config.sizes) * config.strategies.len())
        .sum();
    let mut progress = Progress::new(cells);

    progress.note("measuring the recorder's own cost (inline, no-op handler)");
    let recorder_overhead_ns = Some(recorder_overhead_ns(&instruments));
    let saturation_per_s = if config.scenarios.contains(&ScenarioId::OpenLoop) {
        progress.note("measuring saturation (inline on uniform) for open-loop loads");
        Some(saturation(config, &instruments)?)
    } else {
        None
    };
    if config.scenarios.contains(&ScenarioId::AsyncIo)
        && config.sizes.async_keys != Sizes::published_async_io().1
    {
        notes.push(format!(
            "async-io ran a scaled-down sweep ({} messages, keys {:?}); the published \
             experiment is `keyed-bench run --scenario async-io --published-async-io`",
            config.sizes.async_messages, config.sizes.async_keys
        ));
    }

    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    let mut histogram_files = Vec::new();
    for &scenario in &config.scenarios {
        let workloads =
            generate(scenario, &config.sizes, config.seed, saturation_per_s.unwrap_or(1.0));
        for (index, workload) in workloads.iter().enumerate() {
            for &strategy in &config.strategies {
                let what = cell_name(workload, strategy);
                if let Some(reason) = skip_reason(scenario, strategy) {
                    if index == 0 {
                        skipped.push(Skipped {
                            scenario: scenario.as_str().into(),
                            strategy: strategy.as_str().into(),
                            reason: reason.into(),
                        });
                    }
                    progress.finished(&what, "skipped");
                    continue;
                }
                progress.starting(&what);
                let measurement =
                    measure(workload, strategy, config.strategy, config.repeat, &instruments)?;
                let (result, histograms) = RunResult::new(
                    workload,
                    strategy.as_str(),
                    &measurement,
                    workers,
                    config.strategy.max_in_flight,
                );
                progress.finished(&what, &outcome_line(&result));
                let stem = file_stem(workload, strategy);
                histogram_files.push((format!("{stem}.latency.hgrm"), hgrm(&histograms.latency)));
                if let Some(bystander) = &histograms.bystander {
                    histogram_files.push((format!("{stem}.bystander.hgrm"), hgrm(bystander)));
                }
                runs.push(result);
            }
        }
    }
    progress.finish();

    let results = Results {
        schema: SCHEMA.into(),
        meta: Meta {
            created,
            git_commit: system::git_commit(),
            rustc: system::rustc_version(),
            cpu_model: system::cpu_model(),
            cores: system::cores(),
            workers,
            window: config.strategy.max_in_flight,
            throughput: config.strategy.throughput,
            command: config.command.clone(),
            seed: config.seed,
            repeat: config.repeat,
            quick: config.quick,
            recorder_overhead_ns,
            saturation_per_s,
            suite_elapsed_s: suite_started.elapsed().as_secs_f64(),
            notes,
            groups_per_worker: Some(config.strategy.groups_per_worker),
            sizes: Some(config.sizes.clone()),
        },
        runs,
        skipped,
    };
    let summary = render_summary(&results);
    write_outputs(config, &results, &summary, &histogram_files)?;
    Ok((results, summary))
}

fn write_outputs(
    config: &RunConfig,
    results: &Results,
    summary: &str,
    histograms: &[(String, String)],
) -> Result<(), SuiteError> {
    let write = |path: PathBuf, contents: &[u8]| {
        write_atomically(&path, contents)
            .map_err(|source| SuiteError::Write { path: path.display().to_string(), source })
    };
    for (name, text) in histograms {
        write(config.out.join("histograms").join(name), text.as_bytes())?;
    }
    write(config.out.join("summary.md"), summary.as_bytes())?;
    // Last: a results.json exists only once everything it refers to does.
    let json = serde_json::to_vec_pretty(results).expect("results serialise");
    write(config.out.join("results.json"), &json)
}

/// Number of parameter values (workloads) a scenario generates.
fn params_of(scenario: ScenarioId, sizes: &Sizes) -> usize {
    match scenario {
        ScenarioId::HotBacklog => sizes.bursts.len(),
        ScenarioId::AsyncIo => sizes.async_keys.len(),
        ScenarioId::OpenLoop => sizes.loads.len(),
        _ => 1,
    }
}

fn cell_name(workload: &Workload, strategy: StrategyId) -> String {
    if workload.param.is_empty() {
        format!("{} {strategy}", workload.scenario)
    } else {
        format!("{} {} {strategy}", workload.scenario, workload.param)
    }
}

fn file_stem(workload: &Workload, strategy: StrategyId) -> String {
    let param: String =
        workload.param.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
    if param.is_empty() {
        format!("{}-{strategy}", workload.scenario)
    } else {
        format!("{}-{param}-{strategy}", workload.scenario)
    }
}

fn outcome_line(result: &RunResult) -> String {
    let correctness = if result.correctness.is_clean() {
        "ok".to_owned()
    } else {
        format!("{:?}", result.correctness)
    };
    format!(
        "{:.0} msg/s, p99 {:.1} us, threads {}/{}, efficiency {:.2}, {correctness}",
        result.throughput_per_s.median,
        result.latency_ns.p99 as f64 / 1e3,
        result.threads.reported,
        result.threads.observed,
        result.efficiency,
    )
}

/// The recorder's cost per message: `inline` with a no-op handler, with and without it.
fn recorder_overhead_ns(instruments: &Instruments) -> f64 {
    let messages: Vec<Message> = (0..OVERHEAD_MESSAGES)
        .map(|seq| Message {
            key: Key::new(0, seq % 64),
            seq: seq / 64,
            intended_ns: 0,
            job: Job::Noop,
        })
        .collect();
    let time_per_message = |executor: &dyn Strategy| {
        let started = Instant::now();
        for message in &messages {
            executor.submit(*message).expect("inline accepts while open");
        }
        started.elapsed().as_nanos() as f64 / messages.len() as f64
    };
    let config = StrategyConfig::with_workers(1);
    let bare = StrategyId::Inline
        .build(config, Arc::new(|_: &Message| Outcome::Done))
        .expect("valid settings");
    let recorder = Arc::new(Recorder::new(&messages, 64, Clock::start()));
    let recorded = StrategyId::Inline
        .build(
            config,
            Arc::new(BenchHandler::new(Arc::clone(&recorder), instruments.timer.clone())),
        )
        .expect("valid settings");
    let mut best_bare = f64::INFINITY;
    let mut best_recorded = f64::INFINITY;
    for _ in 0..OVERHEAD_RUNS {
        best_bare = best_bare.min(time_per_message(&*bare));
        recorder.reset();
        best_recorded = best_recorded.min(time_per_message(&*recorded));
    }
    (best_recorded - best_bare).max(0.0)
}

/// Saturation throughput of the `inline` reference x workers on `uniform`. The producer
/// thread needs a core of its own, so at most `cores - 1` workers count (at least one).
fn saturation(config: &RunConfig, instruments: &Instruments) -> Result<f64, SuiteError> {
    let sizes =
        Sizes { messages: config.sizes.messages.min(SATURATION_MESSAGES), ..config.sizes.clone() };
    let workload = generate(ScenarioId::Uniform, &sizes, config.seed, 1.0).remove(0);
    let measurement = measure(&workload, StrategyId::Inline, config.strategy, 1, instruments)?;
    let elapsed = measurement.samples[0].elapsed_s;
    Ok(workload.messages.len() as f64 / elapsed * saturation_workers(config) as f64)
}

/// Workers that count towards saturation: `min(workers, cores - 1)`, at least one.
fn saturation_workers(config: &RunConfig) -> usize {
    config.strategy.workers.min(system::cores().saturating_sub(1)).max(1)
}

/// The current UTC time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_rfc3339() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let (days, rest) = (seconds / 86_400, seconds % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_run_removes_only_what_an_earlier_run_wrote() {
        let out = std::env::temp_dir().join(format!("keyed-bench-prepare-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&out);
        std::fs::create_dir_all(out.join("histograms")).unwrap();
        let theirs = ["results.json", "summary.md", "histograms/uniform-inline.hgrm"];
        let others = ["notes.txt", "histograms/README", "plots.png"];
        for name in theirs.iter().chain(&others) {
            std::fs::write(out.join(name), b"earlier").unwrap();
        }
        prepare_output(&out).unwrap();
        for name in theirs {
            assert!(!out.join(name).exists(), "{name} from an earlier run was kept");
        }
        for name in others {
            assert!(out.join(name).exists(), "{name} is not ours to remove");
        }
        std::fs::remove_dir_all(&out).unwrap();
    }

    #[test]
    fn rfc3339_has_the_right_shape_and_year() {
        let now = now_rfc3339();
        assert_eq!(now.len(), 20, "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
        assert!(now.as_str() >= "2024-01-01", "{now}");
    }

    #[test]
    fn inline_is_skipped_only_where_handlers_wait() {
        assert!(skip_reason(ScenarioId::AsyncIo, StrategyId::Inline).is_some());
        assert!(skip_reason(ScenarioId::Uniform, StrategyId::Inline).is_none());
        assert!(skip_reason(ScenarioId::AsyncIo, StrategyId::KeyedMailbox).is_none());
    }
}

/// Why a cell could not be measured again.
#[derive(Debug, thiserror::Error)]
pub enum RemeasureError {
    /// The results file predates the recorded sizes, or names an unknown cell.
    #[error("cannot measure {cell} again: {reason}")]
    Unavailable {
        /// The cell.
        cell: String,
        /// Why.
        reason: String,
    },
    /// Measuring failed.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// Checks the settings and sizes a results file records as the command line's are checked,
/// so that measuring its cells again cannot panic or run away (a hand-edited or corrupt
/// file) of `strategies` on `scenarios`. A file that records no sizes passes: it cannot be
/// measured again at all.
pub fn check_recorded(
    meta: &Meta,
    strategies: &[StrategyId],
    scenarios: &[ScenarioId],
) -> Result<(), crate::cli::ArgError> {
    let in_file = |error: crate::cli::ArgError| crate::cli::ArgError::Recorded(Box::new(error));
    crate::cli::check("repeat", meta.repeat).map_err(in_file)?;
    let Some(sizes) = &meta.sizes else { return Ok(()) };
    crate::cli::check_sizes(sizes).map_err(in_file)?;
    let config = recorded_config(meta);
    crate::cli::check_settings(&config, strategies, scenarios, sizes).map_err(in_file)
}

/// The strategy settings a results file recorded (files from before `groups_per_worker`
/// was recorded get the default).
fn recorded_config(meta: &Meta) -> StrategyConfig {
    StrategyConfig {
        workers: meta.workers,
        max_in_flight: meta.window,
        throughput: meta.throughput,
        groups_per_worker: meta
            .groups_per_worker
            .unwrap_or(StrategyConfig::DEFAULT_GROUPS_PER_WORKER),
    }
}

/// Measures one (scenario, param) cell again for `strategies`, with the settings and sizes
/// recorded in `meta` (the gate's confirmation of a failing wall-clock rule).
pub fn remeasure(
    meta: &Meta,
    scenario: &str,
    param: &str,
    strategies: &[StrategyId],
) -> Result<Vec<RunResult>, RemeasureError> {
    let cell = format!("{scenario} {param}").trim_end().to_owned();
    let unavailable =
        |reason: &str| RemeasureError::Unavailable { cell: cell.clone(), reason: reason.into() };
    let scenario: ScenarioId = scenario.parse().map_err(|_| unavailable("unknown scenario"))?;
    check_recorded(meta, strategies, &[scenario])
        .map_err(|error| unavailable(&error.to_string()))?;
    let sizes =
        meta.sizes.as_ref().ok_or_else(|| unavailable("the results do not record sizes"))?;
    let workload = generate(scenario, sizes, meta.seed, meta.saturation_per_s.unwrap_or(1.0))
        .into_iter()
        .find(|workload| workload.param == param)
        .ok_or_else(|| unavailable("no such parameter"))?;
    let config = recorded_config(meta);
    let instruments = Instruments::start();
    strategies
        .iter()
        .map(|&strategy| {
            let measurement =
                measure(&workload, strategy, config, meta.repeat.max(1), &instruments)?;
            Ok(RunResult::new(
                &workload,
                strategy.as_str(),
                &measurement,
                meta.workers,
                meta.window,
            )
            .0)
        })
        .collect()
}
