//! `keyed-bench`: the command line over the `harness` library.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Benchmark suite for executors of per-aggregate ordered messages.
#[derive(Debug, Parser)]
#[command(name = "keyed-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// List every strategy with a one-line description.
    List,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::List => print!("{}", harness::catalog::strategies_table()),
    }
    ExitCode::SUCCESS
}
