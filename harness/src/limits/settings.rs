//! Every run setting, declared once.
//!
//! One row of the `run_settings!` table below is everything about a setting that a run
//! records and that a later command checks: the `keyed-bench run` flag it comes from, the
//! `meta` field `compare` lists when two runs differ in it, the value `run --resume`
//! compares with the recorded one, and the part it takes in the summary's settings line
//! (and the report's shorter one). A swept setting (a list-valued strategy setting) is also
//! a field of a sweep point, of a cell's recorded `settings` and of its sweep label
//! (`workers=4`), which the cells' agreement check compares.
//!
//! The table is one macro that hands its rows to a generator: each file that needs a part
//! of every setting invokes `run_settings!(all => generator)` (or `swept =>`, the swept
//! rows alone) with one of the generators below, and the generated code names the types
//! of that file (`Meta`, `RunConfig`, `StrategyConfig`, ...) as they are in scope there.
//! A first pass (`generate::normalise!`) spells every row out in one form, each optional
//! part an explicit bracket that is empty where the row has none, so that each generator
//! matches that one form once.
//! Adding a setting is adding a row; no check can forget it:
//!
//! - `setting_descriptors!`: [`RUN_SETTINGS`], each setting's flag and `meta` field
//!   (`compare` lists the fields that differ, in their `at` order);
//! - `sweep_types!` (`sweep.rs`): `Sweep`, `Point` and `Uses`, their points and labels;
//! - `cell_settings_type!` (`results/cell.rs`): `CellSettings` and `SWEEP_SETTINGS`;
//! - `agree_settings!` (`suite/agree.rs`): a cell's recorded settings against its plan;
//! - `settings_lines!` (`results/meta.rs`): the settings line (in `line` order) and its
//!   brief form (the parts marked `in brief`);
//! - `resume_values!` (`cli/resume.rs`): each setting's value as `--resume` compares it.
//!
//! - `setting_ranges!` (`limits`): [`SETTING_RANGES`](super::SETTING_RANGES), the range of
//!   each row that declares one.
//!
//! The flags themselves and their help are `cli/run.rs`'s: tests in `cli/resume.rs` hold
//! every flag of `run` to a row, a size, or a reason it is neither, and a test in
//! `cli/run.rs` every range to its flag's help.

/// One run setting, as the table declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSetting {
    /// The flag of `keyed-bench run`, without its dashes.
    pub flag: &'static str,
    /// The `meta` field that records it and its place among the settings `compare` lists
    /// when two runs differ in them; `None` where `compare` does not list it.
    pub compared: Option<(&'static str, u32)>,
    /// Whether it is a list-valued strategy setting that a run sweeps.
    pub swept: bool,
    /// Its place in the settings line, where it has one.
    pub line: Option<u32>,
}

/// The table of run settings. A row of the `swept` rows (list-valued strategy settings, in
/// the order a sweep's points vary them, slowest first):
///
/// ```text
/// field: type {
///     flag "name", strategy StrategyConfig's field, [fixed by scenario Uses's field,]
///     [range min => max,]
///     [meta "meta field" at place among compare's settings,]
///     resume |config| its value in a RunConfig, as `--resume` compares it,
///     [line place [in brief] |meta, swept| its part of the settings line (an Option), [brief part,]]
/// }
/// ```
///
/// A row of the `single` rows is the same without its type, `strategy` and `fixed by`.
///
/// `run_settings!(all => generator plus { swept { rows } single { rows } })` gives the
/// generator the table with more rows after each part's own: the tests add a setting so.
macro_rules! run_settings {
    (swept => $generate:ident $(plus $plus:tt)?) => {
        $crate::limits::settings::run_settings!(@rows (swept $generate) [$($plus)?]);
    };
    (all => $generate:ident $(plus $plus:tt)?) => {
        $crate::limits::settings::run_settings!(@rows (all $generate) [$($plus)?]);
    };
    (all => $generate:ident $(plus $plus:tt)? with $($extra:tt)*) => {
        $crate::limits::settings::run_settings!(
            @rows (all $generate ($($extra)*)) [$($plus)?]
        );
    };
    (@rows $then:tt [$({ swept { $($swept:tt)* } single { $($single:tt)* } })?]) => {
        $crate::limits::settings::generate::normalise! { $then
            swept {
                workers: usize {
                    flag "workers", strategy workers, fixed by scenario workers,
                    range 1 => StrategyConfig::MAX_WORKERS,
                    meta "workers" at 0,
                    resume |config| list(&config.sweep.workers),
                    line 0 in brief |meta, swept|
                        Some(format!("workers {}", swept.show("workers", meta.workers))),
                }
                throughput: usize {
                    flag "throughput", strategy throughput,
                    range 1 => 1 << 20,
                    meta "throughput" at 2,
                    resume |config| list(&config.sweep.throughput),
                    line 3 in brief |meta, swept|
                        Some(format!("throughput {}", swept.show("throughput", meta.throughput))),
                }
                window: usize {
                    flag "window", strategy max_in_flight, fixed by scenario window,
                    range 1 => MAX_WINDOW,
                    meta "window" at 1,
                    resume |config| list(&config.sweep.window),
                    line 2 in brief |meta, swept| Some(format!(
                        "window {} ({})",
                        swept.show("window", meta.window),
                        WindowScopeSetting::line(meta.window_scope)
                    )),
                    brief Some(format!("window {}", swept.show("window", meta.window))),
                }
                idle_spin_us: u32 {
                    flag "idle-spin-us", strategy idle_spin_us,
                    range 0 => StrategyConfig::MAX_IDLE_SPIN_US as usize,
                    meta "idle_spin_us" at 9,
                    resume |config| list(&config.sweep.idle_spin_us),
                    line 4 |meta, swept| Some(match meta.idle_spin_us {
                        Some(us) => format!("idle spin {} us", swept.show("idle-spin-us", us)),
                        None => "idle spin a fixed backoff".to_owned(),
                    }),
                }
                $($($swept)*)?
            }
            single {
                scenario {
                    flag "scenario",
                    resume |config| list(&config.scenarios),
                }
                strategy {
                    flag "strategy",
                    resume |config| list(&config.strategies),
                }
                commit_policy {
                    flag "commit-policy",
                    meta "commit_policies" at 12,
                    resume |config| list(&config.commit_policies),
                }
                retry_policy {
                    flag "retry-policy",
                    meta "retry_policies" at 13,
                    resume |config| list(&config.retry_policies),
                }
                max_cells {
                    flag "max-cells",
                    resume |config| config.sweep.max_cells.to_string(),
                }
                groups_per_worker {
                    flag "groups-per-worker",
                    range 1 => 1 << 16,
                    meta "groups_per_worker" at 8,
                    resume |config| config.strategy.groups_per_worker.to_string(),
                }
                window_scope {
                    flag "window-scope",
                    meta "window_scope" at 10,
                    resume |config| {
                        config.strategy.window_scope.map_or("default".into(), |s| s.to_string())
                    },
                }
                binding {
                    flag "binding",
                    meta "binding" at 11,
                    resume |config| config.strategy.binding.to_string(),
                    line 8 |meta, _swept| match meta.binding {
                        Some(binding) if binding != Binding::Reference => Some(format!(
                            "keyed-mailbox binding {binding} (an ablation, not the design)"
                        )),
                        _ => None,
                    },
                }
                producers {
                    flag "producers",
                    range 1 => MAX_PRODUCERS,
                    meta "producers" at 6,
                    resume |config| config.producers.to_string(),
                    line 1 |meta, _swept| Some(format!("producers {}", meta.producers.unwrap_or(1))),
                }
                timer_threads {
                    flag "timer-threads",
                    range 1 => 64,
                    meta "timer_threads" at 7,
                    resume |config| config.timer_threads.to_string(),
                }
                repeat {
                    flag "repeat",
                    range 1 => MAX_REPEAT,
                    meta "repeat" at 4,
                    resume |config| config.repeat.to_string(),
                    line 5 in brief |meta, _swept| Some(format!("repeat {}", meta.repeat)),
                }
                no_breakdown {
                    flag "no-breakdown",
                    resume |config| (!config.breakdown).to_string(),
                }
                quick {
                    flag "quick",
                    meta "quick" at 5,
                    resume |config| config.quick.to_string(),
                    line 7 in brief |meta, _swept| meta.quick.then(|| "quick sizes".to_owned()),
                }
                seed {
                    flag "seed",
                    meta "seed" at 3,
                    resume |config| config.seed.to_string(),
                    line 6 in brief |meta, _swept| Some(format!("seed {}", meta.seed)),
                }
                transport {
                    flag "transport",
                    resume |config| config.transport.to_string(),
                }
                kafka_timeout_ms {
                    flag "kafka-timeout-ms",
                    resume |config| config.kafka_timeout.as_millis().to_string(),
                }
                bootstrap_servers {
                    flag "bootstrap-servers",
                    resume |config| {
                        let cluster = config.kafka.cluster.as_ref();
                        cluster.map_or("none".into(), |cluster| cluster.bootstrap.clone())
                    },
                }
                replication_factor {
                    flag "replication-factor",
                    resume |config| config.kafka.replication_factor.to_string(),
                }
                group_protocol {
                    flag "group-protocol",
                    resume |config| config.kafka.group_protocol.to_string(),
                }
                keep_topics {
                    flag "keep-topics",
                    resume |config| {
                        let cluster = config.kafka.cluster.as_ref();
                        cluster.is_some_and(|cluster| cluster.keep_topics).to_string()
                    },
                }
                $($($single)*)?
            }
        }
    };
}
pub(crate) use run_settings;

pub mod generate;

use generate::setting_descriptors;
pub(crate) use generate::{
    agree_settings, cell_settings_type, resume_values, setting_ranges, settings_lines, sweep_types,
};

run_settings!(all => setting_descriptors);

#[cfg(test)]
mod tests;
