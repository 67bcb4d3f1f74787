//! The command line, one file per subcommand (as ripgrep's `flags/`): each holds its
//! clap-derived arguments and their `TryFrom` into the validated configuration the library
//! runs on. Bad input is rejected there, naming the flag, the value and the valid ones.
//!
//! - `flags`: the flag parsers several subcommands share (a ranged number, a duration);
//! - `run`: `keyed-bench run` (and no subcommand), into [`crate::config::RunConfig`];
//! - `resume`: `keyed-bench run --resume DIR`, the run a results file records, checked;
//! - `plot`: `keyed-bench plot`, into [`crate::report::html::PlotConfig`];
//! - `gate`: `keyed-bench gate`, into [`crate::gate::GateConfig`];
//! - `compare`: `keyed-bench compare`, into [`crate::compare::CompareConfig`];
//! - `ab`: `keyed-bench ab`, into [`crate::ab::AbConfig`];
//! - `soak`: `keyed-bench soak`, into [`crate::soak::SoakConfig`];
//! - `export`: `keyed-bench export`, into [`crate::report::export::ExportConfig`];
//! - `history`: `keyed-bench history`, into [`crate::report::history::HistoryConfig`];
//! - `broker`: `keyed-bench broker`, into [`crate::pipeline::transport::broker::BrokerConfig`];
//! - `list`: `keyed-bench list`.

pub mod ab;
pub mod broker;
pub mod compare;
pub mod export;
pub mod flags;
pub mod gate;
pub mod history;
pub mod kafka;
pub mod list;
pub mod plot;
pub mod resume;
pub mod run;
pub mod soak;

pub use run::RunArgs;
use strategies::Design;

use crate::limits::{parse_list, SettingError};

/// The strategies `--strategy` names, the one parsing of it for every command: each given
/// value is a comma-separated list of ids or `all`; no id may be named twice, across values
/// either.
pub fn parse_strategies(given: &[String]) -> Result<Vec<Design>, SettingError> {
    let mut strategies = Vec::new();
    for value in given {
        for id in parse_list("strategy", value, &Design::all())? {
            if strategies.contains(&id) {
                return Err(SettingError::Duplicate { flag: "strategy", value: id.to_string() });
            }
            strategies.push(id);
        }
    }
    Ok(strategies)
}
