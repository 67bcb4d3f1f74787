//! `keyed-bench`: the command line over the `harness` library.
//!
//! Each subcommand turns its arguments into a validated config (`harness::cli`), calls the
//! library and returns what to print, or why it could not. [`finish`] is the one place that
//! prints a result and maps it to an exit status: 0 done, 1 a failed verdict or run (a run
//! with a failed cell included), 2 bad input, 3 inconclusive (a pass that could not judge
//! everything: a gate rule with only void cells, `ab` cells with too few valid samples); a
//! run stopped by a signal exits with 128 + its number (130 SIGINT, 143 SIGTERM), and so
//! does `broker`, which serves until a signal comes.

#[cfg(unix)]
mod alloc;
mod signals;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Error;
use clap::{Parser, Subcommand};
use harness::ab::{run_ab, AbConfig, BuildInfo};
use harness::cli::ab::AbArgs;
use harness::cli::broker::BrokerArgs;
use harness::cli::compare::CompareArgs;
use harness::cli::export::ExportArgs;
use harness::cli::gate::GateArgs;
use harness::cli::history::HistoryArgs;
use harness::cli::kafka::{check_cluster, leftovers as cluster_leftovers};
use harness::cli::list::{list, ListArgs};
use harness::cli::plot::PlotArgs;
use harness::cli::resume::{remaining, resume, Resume};
use harness::cli::run::{render_cells, render_plan, RunArgs};
use harness::cli::soak::SoakArgs;
use harness::compare::{run_compare, CompareConfig};
use harness::config::RunConfig;
use harness::gate::{run_gate, GateConfig};
use harness::pipeline::transport::broker::BrokerConfig;
use harness::progress::Progress;
use harness::report::export::{export, ExportConfig};
use harness::report::history::{write_history, HistoryConfig};
use harness::report::html::{plot_and_report, PlotConfig};
use harness::results::fs::write_atomically;
use harness::results::Results;
use harness::soak::{run_soak, SoakConfig};
use harness::suite::{
    check_output, command_line, remeasure, run_suite_with, Control, Start, StopSignal, SuiteError,
};

/// Benchmark suite for executors of per-aggregate ordered messages.
///
/// With no subcommand, runs the default suite (every scenario, every strategy) into
/// results/latest/.
#[derive(Debug, Parser)]
#[command(name = "keyed-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run scenarios against strategies; write results.json, summary.md, histograms.
    Run(Box<RunArgs>),
    /// List every strategy and scenario, with descriptions and default sizes.
    List(ListArgs),
    /// Draw the charts (PNG and SVG) of a results file and write report.html.
    Plot(PlotArgs),
    /// Judge a results file against the rules of gates.toml: exit 0 if every rule holds,
    /// 1 if one fails, 2 on bad input.
    Gate(GateArgs),
    /// Compare two runs cell by cell, each metric judged faster, slower, within noise or
    /// too few samples to judge: exit 0, or 1 with --fail-on-regression and a cell slower
    /// by more than it, 2 on bad input, 3 with --fail-on-regression and no cell slower past
    /// it but a cell with fewer than 3 samples on a side, which it cannot judge, or no cell
    /// in both files.
    ///
    /// Cells are matched by scenario, param, strategy and, where both files record it, worker
    /// count; cells in one file only are listed, and so are the cells an incomplete file (a
    /// run stopped before them) lists as missing. A verdict of faster or slower needs at
    /// least 3 repetitions on each side (the default run's), a two-sided Welch's t-test on
    /// their logarithms significant at --alpha, and medians more than --threshold percent
    /// apart (docs/results.md, "Within noise"). Settings
    /// that differ between the runs are printed as a note first. Pipeline cells
    /// (pipelines[]) run once each: they are listed under their own heading, single-shot,
    /// with their change, and never judged. Where one run's pipeline cells consumed through
    /// the embedded log and the other's through Kafka (run --transport kafka), the note
    /// names both transports, and the pipeline cells are paired across the transport (by
    /// scenario, param, strategy and sweep point) to show what the broker changes: records
    /// lost and redelivered, commit lag p99, pauses and throughput, one column per
    /// transport (embedded, kafka) and the change from embedded to kafka.
    Compare(CompareArgs),
    /// Interleaved A/B of two builds: BASE (a commit, built as this binary was built) and
    /// this binary run the selected cells in turns, base, head, base, head, and each cell is
    /// judged against their noise: exit 0, or 1 with --fail-on-regression and a cell slower
    /// by more than it (or when a build or a run failed), 2 on bad input, 3 with
    /// --fail-on-regression and no cell slower past it but a cell with fewer than 3 valid
    /// samples on a side (void rounds), which it cannot judge.
    ///
    /// Its own flags go before the run flags, which follow BASE: `keyed-bench ab main
    /// --rounds 8 --fail-on-regression 10 --scenario uniform,zipf`. Each round runs
    /// `keyed-bench run [run flags] --repeat 1` with the base binary, then with this one; a
    /// cell gives one sample per side and round, none where its interference receipt says
    /// void. The verdict is compare's: the two-sided Welch's t-test at --alpha, its
    /// p-values Holm-corrected for the cells and metrics compared, and medians more than
    /// --threshold percent apart. The way to judge a pull request's wall-clock effect
    /// (docs/ab.md).
    Ab(Box<AbArgs>),
    /// Print a results file in Bencher's metric format or github-action-benchmark's.
    Export(ExportArgs),
    /// Every committed run on one static page: a table of the runs, then per scenario the
    /// metric its verdict ranks designs by, one chart per parameter, one line per ordered
    /// design across the runs in date order (exit 2 on bad input, such as a results file
    /// under the folder that cannot be read).
    ///
    /// Reads every results.json under --results (its latest/ left out) and writes one page
    /// with inline SVG charts and no script: a point is a cell's median over repetitions,
    /// filled where its interference receipt is clean, unmeasured or absent, hollow where
    /// disturbed, not drawn where void, with a tooltip and a link to its run's report. Every
    /// cell not drawn (void, another sweep point, a pipeline cell, a design not ranked) is
    /// listed on the page with why. The page holds nothing of the time it was made, so the
    /// same runs make the same bytes.
    History(HistoryArgs),
    /// Churn a million keys through each strategy (no mailbox or memory may be left), then
    /// soak a mixed workload with panics: exit 0 if every check holds, 1 if one fails, 2 on
    /// bad input.
    Soak(SoakArgs),
    /// Serve librdkafka's mock cluster, the Kafka-protocol broker `run --transport kafka`
    /// uses, to other clients (kcat, a Java consumer) until SIGINT or SIGTERM: exit 130 or
    /// 143 then, 2 on bad input (a port in use, a build without `--features kafka`).
    ///
    /// Prints `bootstrap=HOST:PORT[,HOST:PORT...]` as the first line of standard output,
    /// then what the mock serves and what it lacks on standard error. The brokers listen on
    /// 127.0.0.1 ports of the system's choosing; --port adds a fixed bootstrap port that
    /// relays to the first broker. The mock has no CreateTopics: a librdkafka producer
    /// creates a missing topic (4 partitions) through its metadata request, and --topic
    /// creates one at start.
    Broker(BrokerArgs),
}

/// What a command that ran to its end has to say.
struct Done {
    /// For standard output (a report, a table).
    stdout: String,
    /// For standard error, after it (what was written, what was skipped).
    notes: Vec<String>,
    /// Whether its verdict is a pass (exit 0) or a failure (exit 1).
    pass: bool,
    /// A pass that could not judge everything, with the line that says what (exit 3): gate
    /// rules whose cells were all void, `ab` and `compare` cells with too few samples.
    inconclusive: Option<String>,
}

impl Done {
    fn passed(stdout: String) -> Self {
        Self { stdout, notes: Vec::new(), pass: true, inconclusive: None }
    }
}

/// Why a command stopped.
enum Stop {
    /// Bad input: flags, files, an output that cannot be written (exit 2).
    BadInput(Error),
    /// The command failed while running (exit 1).
    Failed(Error),
    /// A run stopped short (by a signal, or by a cell that would not stop), its lines for
    /// standard error and its exit status.
    Interrupted(Vec<String>, u8),
}

fn bad_input(error: impl Into<Error>) -> Stop {
    Stop::BadInput(error.into())
}

/// Exit status for bad input (flags, files).
const BAD_INPUT: u8 = 2;

/// Exit status of a pass that could not judge everything: the gate's, `ab`'s and
/// `compare`'s alike.
const INCONCLUSIVE: u8 = harness::gate::ONLY_VOID;

/// An allocation that fails ends the run with a message and status 1, not an abort.
#[cfg(unix)]
#[global_allocator]
static ALLOCATOR: alloc::ExitWhenExhausted = alloc::ExitWhenExhausted;

fn main() -> ExitCode {
    let command = Cli::parse().command.unwrap_or_else(|| Command::Run(Box::default()));
    finish(match command {
        Command::Run(args) => run(*args),
        Command::List(args) => Ok(Done::passed(list(&args))),
        Command::Plot(args) => plot(args),
        Command::Gate(args) => gate(args),
        Command::Compare(args) => compare(args),
        Command::Ab(args) => ab(*args),
        Command::Export(args) => export_results(args),
        Command::History(args) => history(args),
        Command::Soak(args) => soak(args),
        Command::Broker(args) => broker(args),
    })
}

fn run(args: RunArgs) -> Result<Done, Stop> {
    let words: Vec<String> = std::env::args().collect();
    let command = command_line(words.iter().map(String::as_str));
    let dry_run = args.dry_run;
    let (config, earlier) = match args.resume.clone() {
        None => (RunConfig::try_from((args, command)).map_err(bad_input)?, None),
        Some(dir) => match resume(&dir, args, command).map_err(bad_input)? {
            Resume::Complete(line) => {
                return Ok(Done {
                    stdout: String::new(),
                    notes: vec![line],
                    pass: true,
                    inconclusive: None,
                });
            }
            Resume::Missing { config, earlier } => (*config, Some(*earlier)),
        },
    };
    if dry_run {
        let start = Start::of(config.overwrite, earlier.is_some());
        check_output(&config.out, start).map_err(bad_input)?;
        let text = match &earlier {
            Some(earlier) => render_cells(&config, &remaining(&config, earlier)),
            None => render_plan(&config),
        };
        return Ok(Done::passed(text));
    }
    let mut config = config;
    for line in check_cluster(&mut config).map_err(bad_input)? {
        eprintln!("{line}");
    }
    let stop = Arc::new(StopSignal::new());
    signals::stop_on_signals(Arc::clone(&stop), &config.out)
        .map_err(|error| Stop::Failed(Error::from(error).context("cannot handle signals")))?;
    let control = Control { stop: Some(&stop), earlier };
    let results = config.out.join("results.json");
    let outcome = run_suite_with(&config, &mut Progress::default(), control);
    for line in cluster_leftovers(&config) {
        eprintln!("{line}");
    }
    let outcome = outcome.map_err(|error| match error {
        error if error.is_bad_input() => bad_input(error),
        SuiteError::Abandoned { .. } => {
            let saved =
                format!("{} holds every cell done, and this one as failed", results.display());
            let lines = vec![format!("error: {error}"), saved, signals::resume_hint(&config.out)];
            Stop::Interrupted(lines, 1)
        }
        error => Stop::Failed(error.into()),
    })?;
    let (saves, save_s) = outcome.saves;
    let saved = format!(
        "saved {} after every cell: {saves} saves, {save_s:.2} s in all",
        results.display()
    );
    if let Some(by) = outcome.stopped_by {
        let (done, planned, missing) =
            outcome.results.meta.incomplete.as_ref().map_or((0, 0, 0), |left| {
                (left.cells_done, left.cells_planned, left.missing.len())
            });
        let lines = vec![
            saved,
            format!(
                "stopped by {by} with {done} of {planned} cells done; {} holds them, marked \
                 incomplete ({missing} missing)",
                results.display()
            ),
            signals::resume_hint(&config.out),
        ];
        return Err(Stop::Interrupted(lines, signals::status(&by)));
    }
    let mut notes = vec![saved, format!("wrote {}", results.display())];
    let failed = &outcome.results.failed;
    if !failed.is_empty() {
        let cells: Vec<String> =
            failed.iter().map(|cell| format!("{} ({})", cell.key(), cell.reason)).collect();
        notes.push(format!(
            "error: {} cell(s) made no progress and were stopped: {}; `keyed-bench run \
             --resume {}` runs them again",
            failed.len(),
            cells.join("; "),
            config.out.display()
        ));
    }
    let stdout = format!("{}\n", outcome.summary);
    Ok(Done { stdout, notes, pass: failed.is_empty(), inconclusive: None })
}

fn plot(args: PlotArgs) -> Result<Done, Stop> {
    let config = PlotConfig::try_from(args).map_err(bad_input)?;
    let outcome = plot_and_report(&config).map_err(|error| {
        if error.is_bad_input() {
            bad_input(error)
        } else {
            Stop::Failed(error.into())
        }
    })?;
    let mut notes: Vec<String> =
        outcome.skipped.iter().map(|note| format!("note: {note}")).collect();
    notes.push(format!(
        "wrote {} chart files to {} and {}",
        outcome.files.len(),
        config.out.display(),
        outcome.report.display()
    ));
    Ok(Done { stdout: String::new(), notes, pass: true, inconclusive: None })
}

fn gate(args: GateArgs) -> Result<Done, Stop> {
    let config = GateConfig::try_from(args).map_err(bad_input)?;
    let outcome = run_gate(
        &config,
        &mut |recorded, results, cell, strategies| {
            remeasure(recorded, results, cell, strategies)
                .map_err(|error| format!("{:#}", Error::from(error)))
        },
        &mut |line| eprintln!("gate: {line}"),
    )
    .map_err(bad_input)?;
    Ok(Done {
        stdout: outcome.report,
        notes: Vec::new(),
        pass: outcome.pass,
        inconclusive: (!outcome.only_void.is_empty())
            .then(|| harness::gate::only_void_note(&outcome.only_void)),
    })
}

fn compare(args: CompareArgs) -> Result<Done, Stop> {
    let config = CompareConfig::try_from(args).map_err(bad_input)?;
    let outcome = run_compare(&config).map_err(bad_input)?;
    Ok(Done {
        stdout: outcome.report,
        notes: Vec::new(),
        pass: outcome.pass,
        inconclusive: (!outcome.unjudged.is_empty())
            .then(|| harness::compare::unjudged_note(&outcome.unjudged)),
    })
}

/// How this binary was built (by build.rs): `ab` builds its base the same way.
fn this_build() -> BuildInfo {
    BuildInfo {
        rustc: env!("KEYED_BENCH_RUSTC").to_owned(),
        profile: env!("KEYED_BENCH_PROFILE").to_owned(),
        features: env!("KEYED_BENCH_FEATURES")
            .split(',')
            .filter(|feature| !feature.is_empty())
            .map(str::to_owned)
            .collect(),
    }
}

fn ab(args: AbArgs) -> Result<Done, Stop> {
    let config = AbConfig::try_from(args).map_err(bad_input)?;
    let outcome =
        run_ab(&config, &this_build(), &mut |line| eprintln!("ab: {line}")).map_err(|error| {
            if error.is_bad_input() {
                bad_input(error)
            } else {
                Stop::Failed(error.into())
            }
        })?;
    Ok(Done {
        stdout: outcome.report,
        notes: outcome.notes,
        pass: outcome.pass,
        inconclusive: (!outcome.unjudged.is_empty())
            .then(|| harness::ab::unjudged_note(&outcome.unjudged)),
    })
}

fn export_results(args: ExportArgs) -> Result<Done, Stop> {
    let config = ExportConfig::try_from(args).map_err(bad_input)?;
    let results = Results::read(&config.results).map_err(bad_input)?;
    let text = export(&results, config.format);
    let Some(out) = &config.out else { return Ok(Done::passed(text)) };
    write_atomically(out, text.as_bytes()).map_err(|error| {
        bad_input(Error::from(error).context(format!("cannot write --out {}", out.display())))
    })?;
    Ok(Done::passed(String::new()))
}

fn history(args: HistoryArgs) -> Result<Done, Stop> {
    let config = HistoryConfig::try_from(args).map_err(bad_input)?;
    // Every failure is bad input: a folder or file that cannot be read, a page that cannot
    // be written.
    let outcome = write_history(&config).map_err(bad_input)?;
    let mut notes = vec![format!(
        "read {} runs under {}; wrote {} with {} charts",
        outcome.runs,
        config.results.display(),
        outcome.out.display(),
        outcome.charts
    )];
    let total: usize = outcome.left_out.iter().map(|(_, count)| count).sum();
    notes.push(format!("left out {total} cells (listed on the page):"));
    notes.extend(outcome.left_out.iter().map(|(reason, count)| format!("  {count}: {reason}")));
    Ok(Done { stdout: String::new(), notes, pass: true, inconclusive: None })
}

fn soak(args: SoakArgs) -> Result<Done, Stop> {
    let config = SoakConfig::try_from(args).map_err(bad_input)?;
    let outcome = run_soak(&config, &mut |line| eprintln!("{line}")).map_err(bad_input)?;
    Ok(Done {
        stdout: outcome.render(),
        notes: Vec::new(),
        pass: outcome.passed(),
        inconclusive: None,
    })
}

fn broker(args: BrokerArgs) -> Result<Done, Stop> {
    let config = BrokerConfig::try_from(args).map_err(bad_input)?;
    serve(&config)
}

/// Serves the broker until a signal: the bootstrap line first on standard output, flushed,
/// then its help on standard error; the signal's status once it has stopped.
#[cfg(feature = "kafka")]
fn serve(config: &BrokerConfig) -> Result<Done, Stop> {
    use harness::pipeline::transport::broker::MockBroker;
    use std::io::Write as _;
    let stopped = signals::stop_broker_on_signals()
        .map_err(|error| Stop::Failed(Error::from(error).context("cannot handle signals")))?;
    let broker = MockBroker::start(config).map_err(|error| {
        if error.is_bad_input() {
            bad_input(error)
        } else {
            Stop::Failed(error.into())
        }
    })?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "bootstrap={}", broker.bootstrap_servers())
        .and_then(|()| stdout.flush())
        .map_err(|error| {
            bad_input(
                Error::from(error).context("cannot write the bootstrap line to standard output"),
            )
        })?;
    drop(stdout);
    for line in broker.help() {
        signals::say(&line);
    }
    let by =
        stopped.recv().map_err(|_| Stop::Failed(anyhow::anyhow!("the signal thread ended")))?;
    drop(broker);
    let line = format!("{by}: the broker stopped; what it held is gone");
    Err(Stop::Interrupted(vec![line], signals::status(by)))
}

/// A build without the Kafka transport has the command, and says how to build it.
#[cfg(not(feature = "kafka"))]
fn serve(_: &BrokerConfig) -> Result<Done, Stop> {
    Err(bad_input(harness::cli::broker::not_built()))
}

/// Prints what a command ended with and gives its exit status; an error is one line that
/// starts with `error: `, as clap's own errors do. The verdict decides the status even when
/// nobody reads the report (`| true`); a reader that stopped reading (`| head`) ends the
/// command quietly; any other failure to print (a full disk) is bad output, status 2.
fn finish(result: Result<Done, Stop>) -> ExitCode {
    let done = match result {
        Ok(done) => done,
        Err(Stop::BadInput(error)) => {
            eprintln!("error: {error:#}");
            return ExitCode::from(BAD_INPUT);
        }
        Err(Stop::Failed(error)) => {
            eprintln!("error: {error:#}");
            return ExitCode::FAILURE;
        }
        Err(Stop::Interrupted(lines, status)) => {
            for line in lines {
                signals::say(&line);
            }
            return ExitCode::from(status);
        }
    };
    let printed = emit(&done.stdout);
    for note in &done.notes {
        signals::say(note);
    }
    match (done.pass, printed) {
        (false, _) => ExitCode::FAILURE,
        (true, Err(status)) => status,
        (true, Ok(())) => match &done.inconclusive {
            None => ExitCode::SUCCESS,
            Some(note) => {
                signals::say(note);
                ExitCode::from(INCONCLUSIVE)
            }
        },
    }
}

/// Prints `text` on standard output; `Err` holds the status a failure to print gives.
fn emit(text: &str) -> Result<(), ExitCode> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Err(ExitCode::SUCCESS),
        Err(error) => {
            eprintln!("error: cannot write to standard output: {error}");
            Err(ExitCode::from(BAD_INPUT))
        }
    }
}
