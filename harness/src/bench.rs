//! Benchmark designs of your own beside the built-in ones: one call runs the suite, writes
//! results.json, summary.md, the charts and report.html, and judges the run against
//! gates.toml, exactly as `keyed-bench run`, `plot` and `gate` would.
//!
//! Register the design first ([`strategies::Design::register`] or
//! [`strategies::Design::register_engine`]): from then on `--strategy` knows its id and
//! `--strategy all` (the default) includes it after the built-in ones. Reports and gates
//! read its descriptor from the results file (`meta.designs[]`), so a later
//! `keyed-bench plot`, `compare`, `export` or `gate` on the folder shows it too; only a
//! gate's confirmation re-measurement needs the process that can build it.
//!
//! A program's `main` hands over with [`main`]: every flag of `keyed-bench run` works on
//! its command line (`--quick`, `--scenario`, `--out`, ...):
//!
//! ```no_run
//! # use strategies::{Descriptor, Design, Family, Threads, StrategyId};
//! fn main() -> std::process::ExitCode {
//!     let mine =
//!         Descriptor::custom("mine", "my executor", Family::Mailboxes, true, Threads::SharedPool);
//!     Design::register(mine, |config, handler| StrategyId::WorkStealing.build(config, handler))
//!         .expect("a free id");
//!     harness::bench::main()
//! }
//! ```
//!
//! A test or a program that builds its own settings calls [`run`] with a [`RunConfig`].

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

use crate::cli::RunArgs;
use crate::config::{RunConfig, SettingError};
use crate::gate::{run_gate, Format, GateConfig, Rules, DEFAULT_CONFIRM};
use crate::progress::Progress;
use crate::report::html::{plot_and_report, PlotConfig, ReportError};
use crate::suite::{command_line, remeasure, run_suite, SuiteError};

/// What [`run`] wrote and concluded.
#[derive(Debug)]
pub struct BenchOutcome {
    /// The results file.
    pub results: PathBuf,
    /// The HTML report.
    pub report: PathBuf,
    /// summary.md's text.
    pub summary: String,
    /// The gate's report (text), judged against gates.toml of the working directory or the
    /// project's built-in rules, or why the rules could not judge this run.
    pub gate: Result<String, String>,
    /// Whether every gate rule held (false where they could not judge).
    pub gate_passed: bool,
    /// The wall-clock rules whose every cell was void: not judged (exit 3).
    pub gate_only_void: Vec<String>,
}

/// Why [`run`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A flag or setting is invalid (exit 2).
    #[error(transparent)]
    Setting(#[from] SettingError),
    /// The suite could not run or write its outputs.
    #[error(transparent)]
    Suite(#[from] SuiteError),
    /// The charts or the report could not be made.
    #[error(transparent)]
    Report(#[from] ReportError),
}

/// Runs the suite `config` selects (as `keyed-bench run`, its watchdog included: a cell
/// that makes no progress is recorded as failed, and one that will not stop ends the run
/// with [`SuiteError::Abandoned`], its thread left behind in this process), draws its
/// charts and report,
/// and judges it against `gates.toml` (and `gates-baseline.json`) of the working
/// directory, or the project's rules built in where it has none, re-measuring a failing wall-clock rule as `keyed-bench gate` does. Progress
/// goes to standard error.
pub fn run(config: &RunConfig) -> Result<BenchOutcome, BenchError> {
    let (_, summary) = run_suite(config, &mut Progress::default())?;
    let results = config.out.join("results.json");
    let plot = PlotConfig {
        input: results.clone(),
        out: config.out.join("plots"),
        report: config.out.join("report.html"),
        summary: None,
    };
    let report = plot_and_report(&plot)?.report;
    let gate = GateConfig {
        results: results.clone(),
        rules: Rules::default_here(),
        format: Format::Text,
        confirm: DEFAULT_CONFIRM,
        update_baseline: false,
        allow_incomplete: false,
    };
    let verdict = run_gate(
        &gate,
        &mut |recorded, results, cell, strategies| {
            remeasure(recorded, results, cell, strategies).map_err(|error| error.to_string())
        },
        &mut |line| eprintln!("gate: {line}"),
    );
    let (gate, gate_passed, gate_only_void) = match verdict {
        Ok(verdict) => (Ok(verdict.report), verdict.pass, verdict.only_void),
        Err(error) => (Err(chain(&error)), false, Vec::new()),
    };
    Ok(BenchOutcome { results, report, summary, gate, gate_passed, gate_only_void })
}

/// The flags of `keyed-bench run`, as a program of one's own takes them.
#[derive(Parser, Debug)]
#[command(
    about = "Benchmark registered designs beside the built-in ones (the flags of `keyed-bench run`)"
)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

/// The settings this program's command line gives, `keyed-bench run`'s flags; where
/// `--out` is not given, `default_out` if set. Bad input ends the process as `keyed-bench`
/// would: the message and exit status 2 (`--help`: the flags and 0). `--dry-run` prints
/// the cells the run would run and ends the process with 0; `--resume` is refused (exit
/// 2): resuming is `keyed-bench run --resume`'s.
pub fn config_from_command_line(default_out: Option<&Path>) -> RunConfig {
    let mut args = Cli::parse().run;
    if args.resume.is_some() {
        eprintln!(
            "error: --resume: harness::bench does not resume a stopped run; run this \
             program again with a fresh --out"
        );
        std::process::exit(2)
    }
    let dry_run = args.dry_run;
    let given_out = std::env::args().any(|arg| arg == "--out" || arg.starts_with("--out="));
    if let (Some(out), false) = (default_out, given_out) {
        args.out = out.to_path_buf();
    }
    let words: Vec<String> = std::env::args().collect();
    let command = command_line(words.iter().map(String::as_str));
    let config = RunConfig::try_from((args, command)).unwrap_or_else(|error| {
        eprintln!("error: {}", chain(&error));
        std::process::exit(2)
    });
    if dry_run {
        print!("{}", crate::cli::run::render_plan(&config));
        std::process::exit(0)
    }
    config
}

/// A program's `main` for benchmarking registered designs: reads `keyed-bench run`'s
/// flags from the command line ([`config_from_command_line`]) and runs [`main_with`].
pub fn main() -> ExitCode {
    main_with(&config_from_command_line(None))
}

/// [`run`] as a program's `main` would end: prints the summary and the gate's verdict,
/// says where the files are, and gives the exit status `keyed-bench` would (0: done and
/// every rule held, 1: a rule failed or the run failed, 2: bad input, 3: a wall-clock rule
/// had only void cells).
pub fn main_with(config: &RunConfig) -> ExitCode {
    match run(config) {
        Ok(outcome) => {
            println!("{}", outcome.summary);
            eprintln!("wrote {} and {}", outcome.results.display(), outcome.report.display());
            match &outcome.gate {
                Ok(report) => {
                    println!("{report}");
                    match (outcome.gate_passed, outcome.gate_only_void.as_slice()) {
                        (false, _) => ExitCode::FAILURE,
                        (true, []) => ExitCode::SUCCESS,
                        (true, rules) => {
                            eprintln!("{}", crate::gate::only_void_note(rules));
                            ExitCode::from(crate::gate::ONLY_VOID)
                        }
                    }
                }
                Err(why) => {
                    // Rules that cannot judge the run (a broken gates.toml here): not a
                    // pass.
                    eprintln!("error: the gate cannot judge the run: {why}");
                    ExitCode::from(2)
                }
            }
        }
        Err(error) => {
            eprintln!("error: {}", chain(&error));
            let bad_input = match &error {
                BenchError::Setting(_) => true,
                BenchError::Suite(error) => error.is_bad_input(),
                _ => false,
            };
            ExitCode::from(if bad_input { 2 } else { 1 })
        }
    }
}

/// An error and its sources, `: `-separated.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
