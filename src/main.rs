//! `keyed-bench`: the command line over the `harness` library.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use harness::cli::RunArgs;
use harness::report::export::ExportFormat;
use harness::gate::GateArgs;
use harness::report::html::{plot_and_report, PlotArgs, PlotConfig};
use harness::soak::{run_soak, SoakArgs, SoakConfig};
use harness::suite::{run_suite, RunConfig};

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
    List,
    /// Draw the charts (PNG and SVG) of a results file and write report.html.
    Plot(PlotArgs),
    /// Judge a results file against the rules of gates.toml: exit 0 if every rule holds,
    /// 1 if one fails, 2 on bad input.
    Gate(GateArgs),
    /// Print a results file in Bencher's metric format or github-action-benchmark's.
    Export(ExportArgs),
    /// Churn a million keys through each strategy (no mailbox or memory may be left), then
    /// soak a mixed workload with panics: exit 0 if every check holds, 1 if one fails, 2 on
    /// bad input.
    Soak(SoakArgs),
}

/// Flags of `keyed-bench export`.
#[derive(Debug, clap::Args)]
struct ExportArgs {
    /// The results file.
    #[arg(long)]
    results: std::path::PathBuf,
    /// `bmf` (Bencher Metric Format) or `gab` (github-action-benchmark, bigger is better).
    #[arg(long, value_enum)]
    format: ExportFormat,
    /// Write to this file (whole or not at all) instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<std::path::PathBuf>,
}

/// Exit status for bad input (flags, files).
const BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::List) => emit(&format!(
            "{}\n{}",
            harness::report::catalog::strategies_table(),
            harness::report::catalog::scenarios_table()
        ))
        .map_or_else(|status| status, |()| ExitCode::SUCCESS),
        Some(Command::Run(args)) => run(*args),
        Some(Command::Plot(args)) => plot(args),
        Some(Command::Gate(args)) => gate(&args),
        Some(Command::Export(args)) => export(&args),
        Some(Command::Soak(args)) => soak(args),
        None => run(RunArgs::defaults()),
    }
}

fn run(args: RunArgs) -> ExitCode {
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let config = match RunConfig::try_from((args, command)) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("keyed-bench: {error}");
            return ExitCode::from(BAD_INPUT);
        }
    };
    match run_suite(&config) {
        Ok((_, summary)) => {
            if let Err(status) = emit(&format!("{summary}\n")) {
                return status;
            }
            eprintln!("wrote {}", config.out.join("results.json").display());
            ExitCode::SUCCESS
        }
        Err(error @ harness::suite::SuiteError::Write { .. }) => {
            eprintln!("keyed-bench: {:#}", anyhow::Error::from(error));
            ExitCode::from(BAD_INPUT)
        }
        Err(error) => {
            eprintln!("keyed-bench: {:#}", anyhow::Error::from(error));
            ExitCode::FAILURE
        }
    }
}

fn plot(args: PlotArgs) -> ExitCode {
    let config = match PlotConfig::try_from(args) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("keyed-bench: {error}");
            return ExitCode::from(BAD_INPUT);
        }
    };
    match plot_and_report(&config) {
        Ok(outcome) => {
            for skipped in &outcome.skipped {
                eprintln!("note: {skipped}");
            }
            eprintln!(
                "wrote {} chart files to {} and {}",
                outcome.files.len(),
                config.out.display(),
                outcome.report.display()
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            let bad_input = error.is_bad_input();
            eprintln!("keyed-bench: {:#}", anyhow::Error::from(error));
            ExitCode::from(if bad_input { BAD_INPUT } else { 1 })
        }
    }
}

fn gate(args: &GateArgs) -> ExitCode {
    match harness::gate::run_gate(args) {
        Ok(outcome) => {
            let written = emit(&outcome.report);
            if !outcome.pass {
                return ExitCode::FAILURE; // the verdict, even when nobody reads the report
            }
            written.err().unwrap_or(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("keyed-bench: {error}");
            ExitCode::from(BAD_INPUT)
        }
    }
}

fn export(args: &ExportArgs) -> ExitCode {
    match harness::results::Results::read(&args.results) {
        Ok(results) => {
            let text = harness::report::export::export(&results, args.format);
            let Some(out) = &args.out else {
                return emit(&text).map_or_else(|status| status, |()| ExitCode::SUCCESS);
            };
            match harness::results::write_atomically(out, text.as_bytes()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("keyed-bench: cannot write --out {}: {error}", out.display());
                    ExitCode::from(BAD_INPUT)
                }
            }
        }
        Err(error) => {
            eprintln!("keyed-bench: {error}");
            ExitCode::from(BAD_INPUT)
        }
    }
}

fn soak(args: SoakArgs) -> ExitCode {
    let config = match SoakConfig::try_from(args) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("keyed-bench: {error}");
            return ExitCode::from(BAD_INPUT);
        }
    };
    match run_soak(&config, &mut |line| eprintln!("{line}")) {
        Ok(outcome) => {
            let written = emit(&outcome.render());
            if !outcome.passed() {
                return ExitCode::FAILURE; // the verdict, even when nobody reads the table
            }
            written.err().unwrap_or(ExitCode::SUCCESS)
        }
        Err(error) => {
            eprintln!("keyed-bench: {:#}", anyhow::Error::from(error));
            ExitCode::from(BAD_INPUT)
        }
    }
}

/// Prints `text` on standard output. A reader that stopped reading (`| head`) ends the
/// command quietly; any other failure (a full disk) is reported as bad output, status 2.
fn emit(text: &str) -> Result<(), ExitCode> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Err(ExitCode::SUCCESS),
        Err(error) => {
            eprintln!("keyed-bench: cannot write to standard output: {error}");
            Err(ExitCode::from(BAD_INPUT))
        }
    }
}
