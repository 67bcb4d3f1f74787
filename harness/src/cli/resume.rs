//! `keyed-bench run --resume DIR`: the run `DIR/results.json` records, checked before
//! anything is measured against the flags given beside `--resume`, this build and this
//! machine.
//!
//! A file is resumed while it has cells missing (`meta.incomplete`) or failed (`failed[]`):
//! the resumed run runs both.
//!
//! The recorded settings are the run's: a flag given beside `--resume` must agree with
//! them, and one not given takes the recorded value. A resumed file claims one build and
//! one machine for all its cells, so the commit (compared without its `-dirty` mark),
//! `rustc`, the CPU model and the core count must also be the recorded ones.

use std::path::Path;

use strategies::Design;

use super::run::RunArgs;
use crate::config::{RunConfig, SettingError};
use crate::limits::settings::{list, resume_values, run_settings};
use crate::measure::system;
use crate::results::designs::DesignRecord;
use crate::results::incomplete::commit_hash;
use crate::results::{ReadError, Results};
use crate::suite::agree::disagreements;
use crate::suite::ledger::match_earlier;
use crate::suite::{plan, Cell};
use crate::workload::reference::with_parallel_consumer_sizes;
use crate::workload::{ScenarioId, Sizes};

/// What `--resume DIR` found.
#[derive(Debug)]
pub enum Resume {
    /// The file is complete: nothing to run. The line to say so.
    Complete(String),
    /// The run to go on with (the recorded settings, writing into `DIR`) and the earlier
    /// sessions' results.
    Missing {
        /// The recorded run, with this session's command line.
        config: Box<RunConfig>,
        /// What `DIR/results.json` holds.
        earlier: Box<Results>,
    },
}

/// A setting, or a fact of the build or the machine, that differs from the recorded one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Difference {
    /// The flag (`--workers`) or the fact (`commit`).
    pub what: String,
    /// The recorded value.
    pub recorded: String,
    /// This session's.
    pub now: String,
}

/// Why a run cannot be resumed (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// `--out` names another folder than `--resume`.
    #[error("--resume {dir} writes into {dir}; --out names another folder, {out}")]
    OtherOut {
        /// The folder to resume.
        dir: String,
        /// The `--out` given.
        out: String,
    },
    /// The results file cannot be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A flag given beside `--resume` is not valid.
    #[error(transparent)]
    Setting(#[from] SettingError),
    /// The file lacks what a resumed run needs, or records what this build cannot run.
    #[error("cannot resume {path}: {why}")]
    Unresumable {
        /// The results file.
        path: String,
        /// Why.
        why: String,
    },
    /// The flags, the build or the machine differ from the recorded ones.
    #[error("{}", differences_text(dir, differences, command))]
    Differs {
        /// The folder to resume.
        dir: String,
        /// Each difference.
        differences: Vec<Difference>,
        /// The recorded command line.
        command: String,
    },
}

fn differences_text(dir: &str, differences: &[Difference], command: &str) -> String {
    let mut text = format!("cannot resume {dir}: its run differs from this one:\n");
    for difference in differences {
        text.push_str(&format!(
            "  {}: recorded {}, {} {}\n",
            difference.what,
            difference.recorded,
            if difference.what.starts_with("--") { "given" } else { "here" },
            difference.now
        ));
    }
    text.push_str(&format!("the run was started with: {command}\n"));
    if differences.iter().all(|difference| difference.what.starts_with("--")) {
        text.push_str(&format!(
            "flags left out take the recorded values: keyed-bench run --resume {dir}"
        ));
    } else {
        text.push_str(
            "a resumed file must come from one build on one machine: run it again from \
             scratch here, or resume it where it was started",
        );
    }
    text
}

/// The flags a command line gives (`--workers 4` and `--workers=4` give `workers`), beside
/// its first word (the program).
fn given_flags(command: &str) -> Vec<&str> {
    command
        .split_whitespace()
        .skip(1)
        .filter_map(|word| word.strip_prefix("--"))
        .map(|flag| flag.split_once('=').map_or(flag, |(name, _)| name))
        .collect()
}

/// Whether two paths name one folder.
fn same_folder(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

// `SETTINGS`: each run setting's flag and value, from the run settings table.
run_settings!(all => resume_values);

/// The value of the setting `flag` sets in `config`, as it is compared and shown; `None`
/// for a flag that is not a setting of the cells (`--out`, a size: see [`size_differences`]).
fn setting(flag: &str, config: &RunConfig) -> Option<String> {
    let (_, value) = SETTINGS.iter().find(|(name, _)| *name == flag)?;
    Some(value(config))
}

/// The `-X` settings given on `command` where they differ from the recorded ones (secrets,
/// which the results do not hold, aside: see [`give_back_secrets`]).
fn client_differences(recorded: &RunConfig, this: &RunConfig, command: &str) -> Vec<Difference> {
    let given = command.split_whitespace().any(|word| word.starts_with("-X"));
    let open = |config: &RunConfig| -> Vec<String> {
        let settings = config.kafka.client.iter().filter(|setting| !setting.is_secret());
        settings.map(ToString::to_string).collect()
    };
    let (before, now) = (open(recorded), open(this));
    if !given || before == now {
        return Vec::new();
    }
    let shown = |settings: Vec<String>| {
        if settings.is_empty() {
            "none".into()
        } else {
            settings.join(" ")
        }
    };
    vec![Difference { what: "-X".into(), recorded: shown(before), now: shown(now) }]
}

/// The sizes that the size flags given (`args`) would change in the recorded `sizes`, each
/// by its flag.
fn size_differences(sizes: &Sizes, args: &RunArgs, given: &[&str]) -> Vec<Difference> {
    let mut overlaid = sizes.clone();
    if given.contains(&"published-parallel-consumer") {
        with_parallel_consumer_sizes(&mut overlaid);
    }
    args.sizes.apply(&mut overlaid);
    let as_object = |sizes: &Sizes| match serde_json::to_value(sizes) {
        Ok(serde_json::Value::Object(fields)) => fields,
        _ => serde_json::Map::new(),
    };
    let (recorded, now) = (as_object(sizes), as_object(&overlaid));
    recorded
        .iter()
        .filter(|(name, value)| now.get(*name) != Some(*value))
        .map(|(name, value)| Difference {
            what: format!("--{}", name.replace('_', "-")),
            recorded: as_flag(value),
            now: now.get(name).map_or_else(|| "absent".into(), as_flag),
        })
        .collect()
}

/// A size as its flag takes it: a list comma-separated (`10,20`), a number as it is.
fn as_flag(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Array(items) => {
            items.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
        }
        other => other.to_string(),
    }
}

/// The run `results` records, writing into `dir`; `path` names the file in errors.
fn recorded_run(results: &Results, dir: &Path, path: &str) -> Result<RunConfig, ResumeError> {
    let unresumable = |why: String| ResumeError::Unresumable { path: path.to_owned(), why };
    let meta = &results.meta;
    let (Some(scenarios), Some(strategies), Some(breakdown)) =
        (&meta.scenarios, &meta.strategies, meta.breakdown)
    else {
        return Err(unresumable(
            "it does not record its scenarios, strategies and breakdown (it was written \
             before they were recorded)"
                .into(),
        ));
    };
    let scenarios = scenarios
        .iter()
        .map(|id| id.parse::<ScenarioId>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| unresumable(error.to_string()))?;
    let strategies = strategies
        .iter()
        .map(|id| id.parse::<Design>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| unresumable(error.to_string()))?;
    let mut config = RunConfig::from_recorded(meta, scenarios, strategies)
        .map_err(|error| unresumable(error.to_string()))?;
    config.breakdown = breakdown;
    config.out = dir.to_path_buf();
    Ok(config)
}

/// The build and machine facts of `results` that differ from this process's.
fn build_differences(results: &Results) -> Vec<Difference> {
    let meta = &results.meta;
    let commit = system::git_commit();
    let mut differences = Vec::new();
    let mut differ = |what: &str, recorded: &str, now: String| {
        differences.push(Difference { what: what.into(), recorded: recorded.into(), now });
    };
    if commit_hash(&meta.git_commit) != commit_hash(&commit) {
        differ("commit", &meta.git_commit, commit);
    }
    let rustc = system::rustc_version();
    if meta.rustc != rustc {
        differ("rustc", &meta.rustc, rustc);
    }
    let cpu = system::cpu_model();
    if meta.cpu_model != cpu {
        differ("CPU", &meta.cpu_model, cpu);
    }
    if meta.cores != system::cores() {
        differ("cores", &meta.cores.to_string(), system::cores().to_string());
    }
    differences
}

/// The secret `-X` settings of the recorded run (its results hold their keys only), taken
/// from this command line, which must give each again.
fn give_back_secrets(
    recorded: &mut RunConfig,
    earlier: &Results,
    this: &RunConfig,
) -> Result<(), String> {
    let Some(transport) = &earlier.meta.transport else {
        return Ok(());
    };
    for kept in &transport.user_settings {
        let Some(key) = kept.strip_suffix("=<secret>") else {
            continue;
        };
        let given = this.kafka.client.iter().find(|setting| setting.key == key);
        let Some(given) = given else {
            return Err(format!(
                "it was run with the secret -X {key}, which its results do not hold: give it \
                 again (--transport kafka -X {key}=...)"
            ));
        };
        recorded.kafka.client.push(given.clone());
    }
    Ok(())
}

/// Checks that every external design `earlier` measured was given again with
/// `--external`: a resumed run never runs a command read from a results file.
fn external_designs(earlier: &Results) -> Result<(), String> {
    for design in &earlier.meta.designs {
        let Some(record) = &design.external else { continue };
        if crate::measure::external::record_of(&design.id).is_none() {
            return Err(format!(
                "it measured the external design `{id}`, run by `{command}`; a resumed run \
                 never runs a command read from its results: give it again with \
                 --external '{id}={command}'",
                id = design.id,
                command = record.command
            ));
        }
    }
    Ok(())
}

/// How the descriptor this session's driver gives design `recorded` differs from the
/// recorded one, if it does.
fn descriptor_difference(recorded: &DesignRecord) -> Option<Difference> {
    let known = Design::find(&recorded.id)?;
    let now = DesignRecord {
        external: recorded.external.clone(),
        ..DesignRecord::of(known.descriptor())
    };
    let show = |record: &DesignRecord| {
        format!(
            "{} ({}, {}, ordered {})",
            record.description, record.family, record.threads, record.ordered
        )
    };
    (now != *recorded).then(|| Difference {
        what: format!("{}'s descriptor", recorded.id),
        recorded: show(recorded),
        now: show(&now),
    })
}

/// How this session's external designs differ from the recorded ones: their command, or
/// their driver's version or sources.
fn external_differences(earlier: &Results) -> Vec<Difference> {
    let mut differences = Vec::new();
    for design in &earlier.meta.designs {
        let (Some(recorded), Some(now)) =
            (&design.external, crate::measure::external::record_of(&design.id))
        else {
            continue;
        };
        let id = &design.id;
        differences.extend(descriptor_difference(design));
        for (what, before, after) in [
            (format!("--external {id}"), &recorded.command, &now.command),
            (format!("{id}'s driver version"), &recorded.version, &now.version),
            (format!("{id}'s source SHA-256"), &recorded.source_sha256, &now.source_sha256),
        ] {
            if before != after {
                differences.push(Difference { what, recorded: before.clone(), now: after.clone() });
            }
        }
    }
    differences
}

/// Reads `dir/results.json` and checks it against `args` (the flags of this run, with
/// `command` its command line), this build and this machine: the run to go on with, or
/// that there is none.
pub fn resume(dir: &Path, args: RunArgs, command: String) -> Result<Resume, ResumeError> {
    let given = given_flags(&command);
    if given.contains(&"out") && !same_folder(&args.out, dir) {
        let (dir, out) = (dir.display().to_string(), args.out.display().to_string());
        return Err(ResumeError::OtherOut { dir, out });
    }
    let file = dir.join("results.json");
    let path = file.display().to_string();
    let mut flags = RunArgs { out: dir.to_path_buf(), resume: None, ..args };
    flags.dry_run = false;
    // Before the file is read: its external designs must be this session's `--external`
    // ones (known to run), not designs known from the file only.
    let this = RunConfig::try_from((flags.clone(), command.clone()))?;
    let earlier = Results::read(&file)?;
    if earlier.is_finished() {
        let cells = earlier.runs.len() + earlier.pipelines.len();
        return Ok(Resume::Complete(format!(
            "{path} is complete ({cells} cells measured or run): nothing to resume"
        )));
    }
    let mut recorded = recorded_run(&earlier, dir, &path)?;
    external_designs(&earlier)
        .map_err(|why| ResumeError::Unresumable { path: path.clone(), why })?;
    let mut differences: Vec<Difference> = given
        .iter()
        .filter_map(|flag| {
            let (before, now) = (setting(flag, &recorded)?, setting(flag, &this)?);
            (before != now).then(|| Difference { what: format!("--{flag}"), recorded: before, now })
        })
        .collect();
    differences.extend(size_differences(&recorded.sizes, &flags, &given));
    differences.extend(client_differences(&recorded, &this, &command));
    differences.extend(build_differences(&earlier));
    differences.extend(external_differences(&earlier));
    if !differences.is_empty() {
        let (dir, command) = (dir.display().to_string(), earlier.meta.command.clone());
        return Err(ResumeError::Differs { dir, differences, command });
    }
    let plan = plan(&recorded, earlier.meta.saturation_per_s);
    let matched = match_earlier(&plan.cells, &earlier);
    let disagree = disagreements(&plan, &matched, &recorded);
    if !disagree.is_empty() {
        let listed: Vec<String> = disagree.iter().map(ToString::to_string).collect();
        return Err(ResumeError::Unresumable {
            path,
            why: format!(
                "its cells disagree with the settings it records (`meta`), so cells measured \
                 now would not be of the same run:\n  {}",
                listed.join("\n  ")
            ),
        });
    }
    give_back_secrets(&mut recorded, &earlier, &this)
        .map_err(|why| ResumeError::Unresumable { path: path.clone(), why })?;
    recorded.command = command;
    // Not a setting of the cells: this session's own.
    recorded.watchdog = this.watchdog;
    Ok(Resume::Missing { config: Box::new(recorded), earlier: Box::new(earlier) })
}

/// The cells a resumed run of `config` runs: those of its plan that `earlier` lacks, and
/// those it records as failed.
pub fn remaining(config: &RunConfig, earlier: &Results) -> Vec<Cell> {
    let cells = plan(config, earlier.meta.saturation_per_s).cells;
    let matched = match_earlier(&cells, earlier);
    let mut done = vec![false; cells.len()];
    let places = matched.runs.iter().map(|(index, _)| *index);
    let places = places.chain(matched.pipelines.iter().map(|(index, _)| *index));
    for index in places.chain(matched.skipped.iter().copied()) {
        done[index] = true;
    }
    cells.into_iter().zip(done).filter(|(_, done)| !done).map(|(cell, _)| cell).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flags of `run` that are neither a run setting ([`SETTINGS`]) nor a size
    /// ([`size_differences`]), each with why a resumed run does not compare it as one. A test
    /// holds every flag of `run` to one of the three, so that a new flag cannot be left out of
    /// a resume's comparison unnoticed.
    const NOT_SETTINGS: &[(&str, &str)] = &[
        ("external", "given again, never read from a file: compared by external_differences"),
        ("out", "the folder resumed"),
        ("overwrite", "refused beside --resume"),
        ("resume", "the folder resumed"),
        ("dry-run", "lists the cells of this session"),
        ("cell-timeout", "this session's watchdog"),
        ("revalidate", "how often this session measures a void cell again"),
        ("max-memory-mib", "this session's memory limit"),
        ("published-parallel-consumer", "a set of sizes, compared as sizes"),
        ("published-async-io", "removed; refused"),
        ("help", "clap's"),
    ];

    #[test]
    fn flags_are_read_from_the_command_line_with_or_without_a_value() {
        let command = "keyed-bench run --quick --workers=4 --out x --resume x 7 -v";
        assert_eq!(given_flags(command), ["quick", "workers", "out", "resume"]);
        assert!(given_flags("--quick").is_empty(), "the first word is the program");
    }

    #[test]
    fn only_the_sizes_a_flag_changes_differ() {
        let sizes = Sizes::quick();
        let args = RunArgs {
            sizes: crate::workload::SizeArgs {
                messages: Some(sizes.messages),
                keys: Some(vec![sizes.keys[0] + 1]),
                ..Default::default()
            },
            ..RunArgs::defaults()
        };
        let differences = size_differences(&sizes, &args, &["messages", "keys"]);
        assert_eq!(differences.len(), 1, "{differences:?}");
        assert_eq!(differences[0].what, "--keys");
        assert_eq!(differences[0].now, (sizes.keys[0] + 1).to_string());
        let published =
            size_differences(&sizes, &RunArgs::defaults(), &["published-parallel-consumer"]);
        let named: Vec<&str> = published.iter().map(|d| d.what.as_str()).collect();
        assert!(named.contains(&"--pc-messages") && named.contains(&"--pc-keys"), "{named:?}");
    }

    /// The settings a run records but that `RunConfig::from_recorded` does not read back,
    /// each with why.
    const NOT_READ_BACK: &[(&str, &str)] = &[(
        "no-breakdown",
        "a run measured again to confirm a gate counts no events; a resume takes meta.breakdown",
    )];

    /// The config of `keyed-bench run` with `flags`.
    fn run_config(flags: &[&str]) -> RunConfig {
        #[derive(clap::Parser)]
        struct Run {
            #[command(flatten)]
            run: RunArgs,
        }
        let words = std::iter::once("keyed-bench").chain(flags.iter().copied());
        let args = <Run as clap::Parser>::try_parse_from(words).expect("valid flags").run;
        RunConfig::try_from((args, flags.join(" "))).expect("a valid run")
    }

    /// Records `config` as a run's meta does, reads it back as a re-measurement does, and
    /// returns every setting whose value differs.
    fn not_read_back(config: &RunConfig) -> Vec<String> {
        lost(config, &crate::suite::meta::suite_meta(config, "t".into(), None, None, Vec::new()))
    }

    /// The settings of `config` that a re-measurement of `meta` does not run with.
    fn lost(config: &RunConfig, meta: &crate::results::Meta) -> Vec<String> {
        let (scenarios, strategies) = (config.scenarios.clone(), config.strategies.clone());
        let back = RunConfig::from_recorded(meta, scenarios, strategies).expect("readable");
        SETTINGS
            .iter()
            .filter(|(flag, _)| !NOT_READ_BACK.iter().any(|(name, _)| name == flag))
            .filter(|(_, value)| value(config) != value(&back))
            .map(|(flag, value)| {
                format!("--{flag}: ran {}, read back {}", value(config), value(&back))
            })
            .collect()
    }

    #[test]
    fn every_setting_a_run_records_is_read_back_as_it_ran() {
        let defaults = run_config(&[]);
        let changed = run_config(&[
            "--scenario=uniform,pipeline-crash",
            "--strategy=keyed-mailbox,group-by",
            "--commit-policy=highest-completed",
            "--retry-policy=retry-topic",
            "--workers=3,2",
            "--window=64,32",
            "--throughput=7,9",
            "--idle-spin-us=5,0",
            "--max-cells=1999",
            "--groups-per-worker=3",
            "--window-scope=strategy",
            "--binding=round-robin",
            "--producers=2",
            "--timer-threads=3",
            "--repeat=2",
            "--no-breakdown",
            "--quick",
            "--seed=9",
        ]);
        let unchanged: Vec<&str> = SETTINGS
            .iter()
            .filter(|(flag, value)| {
                value(&defaults) == value(&changed)
                    && !NOT_READ_BACK.iter().any(|(name, _)| name == flag)
            })
            .map(|(flag, _)| *flag)
            .collect();
        // The transport's settings are recorded only where the run consumes from Kafka.
        let transport = [
            "transport",
            "kafka-timeout-ms",
            "bootstrap-servers",
            "replication-factor",
            "group-protocol",
            "keep-topics",
        ];
        assert!(
            unchanged.iter().all(|flag| transport.contains(flag)),
            "settings this test leaves at their defaults, which a lost value would not show: \
             {unchanged:?}"
        );
        for config in [&defaults, &changed] {
            let lost = not_read_back(config);
            assert!(lost.is_empty(), "settings a re-measurement does not take back: {lost:#?}");
        }
    }

    #[cfg(feature = "kafka")]
    #[test]
    fn the_transport_s_settings_are_read_back_as_they_ran() {
        let config = run_config(&[
            "--transport=kafka",
            "--kafka-timeout-ms=1234",
            "--replication-factor=2",
            "--group-protocol=classic",
        ]);
        let lost = not_read_back(&config);
        assert!(lost.is_empty(), "settings a re-measurement does not take back: {lost:#?}");
    }

    #[test]
    fn a_setting_not_recorded_is_found() {
        let config = run_config(&["--producers=2", "--seed=9"]);
        let mut meta = crate::suite::meta::suite_meta(&config, "t".into(), None, None, Vec::new());
        assert!(lost(&config, &meta).is_empty());
        (meta.producers, meta.seed) = (None, 1);
        let lost = lost(&config, &meta);
        assert_eq!(lost, ["--producers: ran 2, read back 1", "--seed: ran 9, read back 1"]);
    }

    #[test]
    fn every_flag_of_run_is_a_setting_a_size_or_said_not_to_be() {
        let command = <RunArgs as clap::Args>::augment_args(clap::Command::new("run"));
        let sizes =
            <crate::workload::SizeArgs as clap::Args>::augment_args(clap::Command::new("sizes"));
        let size_flags: Vec<&str> =
            sizes.get_arguments().filter_map(|arg| arg.get_long()).collect();
        let config = RunConfig::try_from((RunArgs::defaults(), "test".to_owned())).unwrap();
        let unclassified: Vec<&str> = command
            .get_arguments()
            .filter_map(|arg| arg.get_long())
            .filter(|flag| setting(flag, &config).is_none())
            .filter(|flag| !size_flags.contains(flag))
            .filter(|flag| !NOT_SETTINGS.iter().any(|(name, _)| name == flag))
            .collect();
        assert!(
            unclassified.is_empty(),
            "flags a resumed run would neither compare nor know to ignore: {unclassified:?}; \
             add each to the run settings table (limits/settings.rs), or to NOT_SETTINGS saying why"
        );
    }

    #[test]
    fn every_setting_flag_is_a_flag_of_run() {
        let command = <RunArgs as clap::Args>::augment_args(clap::Command::new("run"));
        let config = RunConfig::try_from((RunArgs::defaults(), "test".to_owned())).unwrap();
        let flags: Vec<&str> = command.get_arguments().filter_map(|arg| arg.get_long()).collect();
        let settings: Vec<&&str> =
            flags.iter().filter(|flag| setting(flag, &config).is_some()).collect();
        assert_eq!(settings.len(), SETTINGS.len(), "{settings:?}");
        assert_eq!(settings.len(), 24, "{settings:?}");
    }

    /// Each setting's flag of `run`, as clap builds the command, has its row's help: the
    /// row is the one place of a setting's name and help.
    #[test]
    fn every_setting_flag_has_its_rows_help() {
        #[derive(clap::Parser)]
        struct Run {
            #[command(flatten)]
            run: RunArgs,
        }
        let command = <Run as clap::CommandFactory>::command();
        for row in crate::limits::settings::RUN_SETTINGS {
            let arg = command
                .get_arguments()
                .find(|arg| arg.get_long() == Some(row.flag))
                .unwrap_or_else(|| panic!("--{} is a flag of run", row.flag));
            let text = |help: Option<&clap::builder::StyledStr>| help.map(ToString::to_string);
            assert_eq!(text(arg.get_help()).as_deref(), Some(row.help), "--{}", row.flag);
            assert_eq!(text(arg.get_long_help()).as_deref(), row.long_help, "--{}", row.flag);
        }
    }

    /// The cells of a committed run of every scenario, matched to the plan of the settings
    /// its file records: they agree, and a doctored cell is named with its field.
    #[test]
    fn a_files_cells_agree_with_its_settings_unless_doctored() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../results/2026-12-01-vm-5");
        let mut results = Results::read(&path.join("results.json")).unwrap();
        // The default suite, from before its selection was recorded.
        let ran: Vec<&str> = results.runs.iter().map(|run| run.strategy.as_str()).collect();
        let built_in = Design::built_ins().map(|id| id.to_string());
        results.meta.strategies = Some(built_in.filter(|id| ran.contains(&id.as_str())).collect());
        results.meta.scenarios = Some(ScenarioId::ALL.iter().map(ToString::to_string).collect());
        results.meta.breakdown = Some(true);
        let disagreements = |results: &Results| {
            let config = recorded_run(results, &path, "results.json").unwrap();
            let plan = plan(&config, results.meta.saturation_per_s);
            let matched = match_earlier(&plan.cells, results);
            disagreements(&plan, &matched, &config)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
        };
        assert_eq!(disagreements(&results), Vec::<String>::new());
        let mut doctored = results.clone();
        doctored.runs[0].messages += 1;
        doctored.pipelines[0].keys += 1;
        let found = disagreements(&doctored);
        assert_eq!(found.len(), 2, "{found:#?}");
        let cell = |run: &crate::results::PipelineRun| {
            crate::results::CellKey::recorded(&run.scenario, &run.param, &run.strategy).to_string()
        };
        assert!(found[0].contains("messages is ") && found[0].contains(&results.runs[0].strategy));
        assert!(found[1].starts_with(&format!("cell `{}`: keys is ", cell(&results.pipelines[0]))));
    }
}
