//! `keyed-bench`: the command line over the `harness` library.

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use harness::cli::RunArgs;
use harness::report::{plot_and_report, PlotArgs, PlotConfig};
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
}

/// Exit status for bad input (flags, files).
const BAD_INPUT: u8 = 2;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::List) => {
            print!(
                "{}\n{}",
                harness::catalog::strategies_table(),
                harness::catalog::scenarios_table()
            );
            ExitCode::SUCCESS
        }
        Some(Command::Run(args)) => run(*args),
        Some(Command::Plot(args)) => plot(args),
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
            println!("{summary}");
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
