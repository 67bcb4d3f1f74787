//! Every run setting, declared once.
//!
//! One row of the `run_settings!` table below is everything about a setting that a run
//! records and that a later command checks: the `keyed-bench run` flag it comes from, with
//! the help `run -h` and `run --help` print for it, the `meta` field `compare` lists when two runs differ in it, the value `run --resume`
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
//! - `setting_descriptors!`: [`RUN_SETTINGS`], each setting's flag, help and `meta` field
//!   (`compare` lists the fields that differ, in their `at` order);
//! - `flag_constants!`: [`FLAGS`], each setting's [`Flag`] by the row's name, the name and
//!   help its clap field of `RunArgs` (`cli/run.rs`, `cli/kafka.rs`) takes;
//! - `sweep_types!` (`sweep.rs`): `Sweep`, `Point` and `Uses`, their points and labels, and each
//!   point's values by flag;
//! - `cell_settings_type!` (`results/cell.rs`): `CellSettings` and `SWEEP_SETTINGS`;
//! - `agree_settings!` (`suite/agree.rs`): a cell's recorded settings against its plan;
//! - `settings_lines!` (`results/meta.rs`): the settings line (in `line` order) and its
//!   brief form (the parts marked `in brief`);
//! - `resume_values!` (`cli/resume.rs`): each setting's value as `--resume` compares it;
//! - `meta_record!` (`suite/meta.rs`): the `meta` a run writes, each row's `record` fields
//!   (the compiler names a `Meta` field that no row and no fixed field fills);
//! - `read_recorded!` (`config.rs`): each row's `read`, the setting as
//!   `RunConfig::from_recorded` takes it back from a results file. A test in
//!   `cli/resume.rs` records a run with every setting changed and reads it back: a row that
//!   records without reading, or reads what it did not record, fails it.
//!
//! - `setting_ranges!` (`limits`): [`SETTING_RANGES`](super::SETTING_RANGES), the range of
//!   each row that declares one.
//!
//! The clap fields themselves (value parser, default, heading, their order in `--help`) are
//! `cli/run.rs`'s and `cli/kafka.rs`'s; each takes its name and help from its row's
//! [`FLAGS`] field, and has no help of its own. Tests in `cli/resume.rs` hold every flag of
//! `run` to a row, a size, or a reason it is neither, and every setting flag's help to its
//! row's; a test in `cli/run.rs` holds every range to its flag's help.

/// One run setting, as the table declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunSetting {
    /// The flag of `keyed-bench run`, without its dashes.
    pub flag: &'static str,
    /// The flag's help, as `run -h` prints it (its first paragraph, without a closing
    /// period).
    pub help: &'static str,
    /// The flag's whole help, as `run --help` prints it, where it has more than one
    /// paragraph.
    pub long_help: Option<&'static str>,
    /// The `meta` field that records it and its place among the settings `compare` lists
    /// when two runs differ in them; `None` where `compare` does not list it.
    pub compared: Option<(&'static str, u32)>,
    /// Whether it is a list-valued strategy setting that a run sweeps.
    pub swept: bool,
    /// Its place in the settings line, where it has one.
    pub line: Option<u32>,
}

/// A run setting's flag of `keyed-bench run`: the name and help that its clap field takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag {
    /// The flag, without its dashes.
    pub name: &'static str,
    /// Its help, as `run -h` prints it.
    pub help: &'static str,
    /// Its whole help, as `run --help` prints it, where that is more than `help`.
    pub long_help: Option<&'static str>,
}

/// The table of run settings. A row of the `swept` rows (list-valued strategy settings, in
/// the order a sweep's points vary them, slowest first):
///
/// ```text
/// field: type {
///     flag "name", strategy StrategyConfig's field, [fixed by scenario Uses's field,]
///     help "what `run -h` prints", [long help "what `run --help` prints",]
///     [range min => max,]
///     [meta "meta field" at place among compare's settings,]
///     resume |config| its value in a RunConfig, as `--resume` compares it,
///     [record |config| { meta field: its value in a run's meta, ... },]
///     [read |meta, config| { sets its value in config from what meta recorded },]
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
        $crate::limits::settings::run_settings! {
            @rows (all $generate ($($extra)*)) [$($plus)?]
        }
    };
    (@rows $then:tt [$({ swept { $($swept:tt)* } single { $($single:tt)* } })?]) => {
        $crate::limits::settings::generate::normalise! { $then
            swept {
                workers: usize {
                    flag "workers", strategy workers, fixed by scenario workers,
                    help "Worker threads per pool [1..=4096] [default: available cores]. A \
                          comma-separated list sweeps them (as --throughput, --window and \
                          --idle-spin-us): the suite runs every point of their cross product",
                    range 1 => StrategyConfig::MAX_WORKERS,
                    meta "workers" at 0,
                    resume |config| list(&config.sweep.workers),
                    record |config| { workers: config.strategy.workers },
                    read |meta, config| { config.strategy.workers = meta.workers; },
                    line 0 in brief |meta, swept|
                        Some(format!("workers {}", swept.show("workers", meta.workers))),
                }
                throughput: usize {
                    flag "throughput", strategy throughput,
                    help "Messages a mailbox runs per turn [1..=1048576]. A list sweeps it",
                    range 1 => 1 << 20,
                    meta "throughput" at 2,
                    resume |config| list(&config.sweep.throughput),
                    record |config| { throughput: config.strategy.throughput },
                    read |meta, config| { config.strategy.throughput = meta.throughput; },
                    line 3 in brief |meta, swept|
                        Some(format!("throughput {}", swept.show("throughput", meta.throughput))),
                }
                window: usize {
                    flag "window", strategy max_in_flight, fixed by scenario window,
                    help "Admission window: most unfinished messages at once [1..=2097151] \
                          [default: 256]. Given, it replaces the window async-io, async-io-zipf \
                          and parallel-consumer have of their own. A list sweeps it",
                    range 1 => MAX_WINDOW,
                    meta "window" at 1,
                    resume |config| list(&config.sweep.window),
                    record |config| { window: config.strategy.max_in_flight },
                    read |meta, config| { config.strategy.max_in_flight = meta.window; },
                    line 2 in brief |meta, swept| Some(format!(
                        "window {} ({})",
                        swept.show("window", meta.window),
                        WindowScopeSetting::line(meta.window_scope)
                    )),
                    brief Some(format!("window {}", swept.show("window", meta.window))),
                }
                idle_spin_us: u32 {
                    flag "idle-spin-us", strategy idle_spin_us,
                    help "Microseconds an idle mailbox worker (keyed-mailbox, work-stealing) \
                          spins for new work before it parks; 0 parks at once. Not the handlers' \
                          CPU (--spin-ns) [0..=1000]. A list sweeps it",
                    range 0 => StrategyConfig::MAX_IDLE_SPIN_US as usize,
                    meta "idle_spin_us" at 9,
                    resume |config| list(&config.sweep.idle_spin_us),
                    record |config| { idle_spin_us: Some(config.strategy.idle_spin_us) },
                    read |meta, config| {
                        // Files from before the setting spun a fixed exponential backoff
                        // instead; the default is the nearest there is.
                        config.strategy.idle_spin_us =
                            meta.idle_spin_us.unwrap_or(StrategyConfig::DEFAULT_IDLE_SPIN_US);
                    },
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
                    help "Scenarios to run, comma-separated, each once, or `all`",
                    resume |config| list(&config.scenarios),
                    // Not read back: a measured-again run is given the scenarios it measures.
                    record |config| {
                        scenarios: Some(config.scenarios.iter().map(|id| id.as_str().into()).collect()),
                    },
                }
                strategy {
                    flag "strategy",
                    help "Strategies to run, comma-separated, each once, or `all`",
                    resume |config| list(&config.strategies),
                    // Not read back: a measured-again run is given the strategies it measures.
                    record |config| {
                        strategies: Some(config.strategies.iter().map(|id| id.as_str().into()).collect()),
                        designs: designs_of(&config.strategies),
                    },
                }
                commit_policy {
                    flag "commit-policy",
                    help "Commit policies of pipeline-crash and pipeline-rebalance, \
                          comma-separated, each once, or `all`: contiguous, contiguous+metadata, \
                          highest-completed (the other pipeline scenarios commit contiguous)",
                    meta "commit_policies" at 12,
                    resume |config| list(&config.commit_policies),
                    record |config| { commit_policies: Some(config.commit_policies.clone()) },
                    read |meta, config| {
                        config.commit_policies =
                            meta.commit_policies.clone().unwrap_or_else(|| CommitPolicy::ALL.to_vec());
                    },
                }
                retry_policy {
                    flag "retry-policy",
                    help "Retry policies of pipeline-retry, comma-separated, each once, or \
                          `all`: retry-in-place, pause-partition, retry-topic",
                    meta "retry_policies" at 13,
                    resume |config| list(&config.retry_policies),
                    record |config| { retry_policies: Some(config.retry_policies.clone()) },
                    read |meta, config| {
                        config.retry_policies =
                            meta.retry_policies.clone().unwrap_or_else(|| RetryPolicy::ALL.to_vec());
                    },
                }
                max_cells {
                    flag "max-cells",
                    help "The most cells a run may have: a sweep whose cross product exceeds it \
                          is refused before anything is measured [default: 2000]",
                    resume |config| config.sweep.max_cells.to_string(),
                    // Recorded, and read back, with the sweep (`meta.sweep`).
                }
                groups_per_worker {
                    flag "groups-per-worker",
                    help "Hash-serial groups per worker (group-by, per-type-pool) [1..=65536]",
                    range 1 => 1 << 16,
                    meta "groups_per_worker" at 8,
                    resume |config| config.strategy.groups_per_worker.to_string(),
                    record |config| { groups_per_worker: Some(config.strategy.groups_per_worker) },
                    read |meta, config| {
                        config.strategy.groups_per_worker = meta
                            .groups_per_worker
                            .unwrap_or(StrategyConfig::DEFAULT_GROUPS_PER_WORKER);
                    },
                }
                window_scope {
                    flag "window-scope",
                    help "Which messages share one admission window: `strategy` (one window, one \
                          receiver) or `type` (one window of --window messages per aggregate \
                          type, as the legacy per-type dispatchers had) [default: type for \
                          per-type-pool, strategy for the others]",
                    meta "window_scope" at 10,
                    resume |config| {
                        config.strategy.window_scope.map_or("default".into(), |s| s.to_string())
                    },
                    record |config| {
                        window_scope: Some(WindowScopeSetting::from(config.strategy.window_scope)),
                    },
                    read |meta, config| { config.strategy.window_scope = meta.window_scope(); },
                }
                binding {
                    flag "binding",
                    help "How keyed-mailbox binds a new key's mailbox to a worker: `reference` \
                          (the design's scan for a running worker with an empty queue, then a \
                          parked one) or `round-robin` (an ablation that looks at no worker, to \
                          measure what the scan costs and buys)",
                    meta "binding" at 11,
                    resume |config| config.strategy.binding.to_string(),
                    record |config| { binding: Some(config.strategy.binding) },
                    read |meta, config| { config.strategy.binding = meta.binding.unwrap_or_default(); },
                    line 8 |meta, _swept| match meta.binding {
                        Some(binding) if binding != Binding::Reference => Some(format!(
                            "keyed-mailbox binding {binding} (an ablation, not the design)"
                        )),
                        _ => None,
                    },
                }
                producers {
                    flag "producers",
                    help "Threads that submit the workload, each the keys `key % N` of it, as \
                          several receivers would (completion-driven scenarios keep one driver) \
                          [1..=64]",
                    range 1 => MAX_PRODUCERS,
                    meta "producers" at 6,
                    resume |config| config.producers.to_string(),
                    record |config| { producers: Some(config.producers) },
                    read |meta, config| { config.producers = meta.producers.unwrap_or(1); },
                    line 1 |meta, _swept| Some(format!("producers {}", meta.producers.unwrap_or(1))),
                }
                timer_threads {
                    flag "timer-threads",
                    help "Threads of the harness timer that completes every pending step \
                          [1..=64]",
                    range 1 => 64,
                    meta "timer_threads" at 7,
                    resume |config| config.timer_threads.to_string(),
                    record |config| { timer_threads: Some(config.timer_threads) },
                    read |meta, config| {
                        config.timer_threads = meta.timer_threads.unwrap_or(DEFAULT_TIMER_THREADS);
                    },
                }
                repeat {
                    flag "repeat",
                    help "Measured repetitions per cell [1..=1000] [default: 3, or 1 with \
                          --quick]",
                    range 1 => MAX_REPEAT,
                    meta "repeat" at 4,
                    resume |config| config.repeat.to_string(),
                    record |config| { repeat: config.repeat },
                    read |meta, config| { config.repeat = meta.repeat; },
                    line 5 in brief |meta, _swept| Some(format!("repeat {}", meta.repeat)),
                }
                no_breakdown {
                    flag "no-breakdown",
                    help "Skip the cost breakdown: the one untimed repetition per cell that \
                          counts each strategy's wake-ups, parks, mailbox activations and \
                          retirements, and hops",
                    resume |config| (!config.breakdown).to_string(),
                    // Not read back: a run measured again to confirm a gate counts no events, and
                    // `run --resume` takes the recorded breakdown itself.
                    record |config| { breakdown: Some(config.breakdown) },
                }
                quick {
                    flag "quick",
                    help "Smaller sizes and one repetition: a smoke run in about a minute",
                    meta "quick" at 5,
                    resume |config| config.quick.to_string(),
                    record |config| { quick: config.quick },
                    read |meta, config| { config.quick = meta.quick; },
                    line 7 in brief |meta, _swept| meta.quick.then(|| "quick sizes".to_owned()),
                }
                seed {
                    flag "seed",
                    help "Workload seed: the same seed gives every strategy the same messages",
                    meta "seed" at 3,
                    resume |config| config.seed.to_string(),
                    record |config| { seed: config.seed },
                    read |meta, config| { config.seed = meta.seed; },
                    line 6 in brief |meta, _swept| Some(format!("seed {}", meta.seed)),
                }
                transport {
                    flag "transport",
                    help "What the pipeline scenarios consume through: `embedded` (the \
                          in-process log) or `kafka` (Kafka's protocol through librdkafka, on an \
                          in-process mock cluster of 3 brokers per cell or on your cluster with \
                          --bootstrap-servers; needs a build with `--features kafka`). One per \
                          run",
                    resume |config| config.transport.to_string(),
                    // The transport's record holds the Kafka rows below too: their timeout, cluster,
                    // replication, group protocol and topics.
                    record |config| { transport: transport_meta(config) },
                    read |meta, config| {
                        let transport = meta.transport.as_ref();
                        config.transport = transport.map(|transport| transport.kind).unwrap_or_default();
                        config.kafka_timeout = transport.map_or(DEFAULT_KAFKA_TIMEOUT, |transport| {
                            std::time::Duration::from_millis(transport.timeout_ms)
                        });
                        config.kafka = transport.map(kafka_options).transpose()?.unwrap_or_default();
                    },
                }
                kafka_timeout_ms {
                    flag "kafka-timeout-ms",
                    help "How long one request to the broker may take under `--transport kafka` \
                          (produce, commit, offset fetch, seek), in milliseconds",
                    resume |config| config.kafka_timeout.as_millis().to_string(),
                }
                bootstrap_servers {
                    flag "bootstrap-servers",
                    help "Use your Kafka cluster at these brokers under `--transport kafka` \
                          instead of a mock cluster per cell: each cell makes a topic and a \
                          group there, named after a prefix unique to the run, and deletes them \
                          afterwards (see --keep-topics). The run first checks that the cluster \
                          answers within --kafka-timeout-ms and lets it make and delete a topic",
                    resume |config| {
                        let cluster = config.kafka.cluster.as_ref();
                        cluster.map_or("none".into(), |cluster| cluster.bootstrap.clone())
                    },
                }
                replication_factor {
                    flag "replication-factor",
                    help "Replicas of each topic the run makes [default: 1 on the mock, 3 on a \
                          cluster; the mock has 3 brokers]",
                    resume |config| config.kafka.replication_factor.to_string(),
                }
                group_protocol {
                    flag "group-protocol",
                    help "The consumer group protocol: `consumer` (KIP-848; needs Kafka 4.0 or \
                          later) or `classic` [default: consumer]",
                    resume |config| config.kafka.group_protocol.to_string(),
                }
                keep_topics {
                    flag "keep-topics",
                    help "Keep the run's topics and groups on the cluster (--bootstrap-servers) \
                          instead of deleting them after each cell",
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

pub(crate) use generate::{
    agree_settings, cell_settings_type, meta_record, read_recorded, resume_values, setting_ranges,
    settings_lines, sweep_types,
};
use generate::{flag_constants, setting_descriptors};

run_settings!(all => setting_descriptors);
run_settings!(all => flag_constants);

/// Items, comma-separated, as a list flag takes them: a list setting's value as
/// `resume_values!` compares it.
pub(crate) fn list<T: std::fmt::Display>(items: &[T]) -> String {
    items.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

/// `field is R, but the recorded settings give P`, pushed to `whys` where they differ: one
/// check of `agree_settings!`.
pub(crate) fn differ<T: PartialEq + std::fmt::Display>(
    whys: &mut Vec<String>,
    field: &str,
    recorded: T,
    planned: T,
) {
    if recorded != planned {
        whys.push(format!("{field} is {recorded}, but the recorded settings give {planned}"));
    }
}

#[cfg(test)]
mod tests;
