//! `keyed-bench run` (and `keyed-bench` with no subcommand): clap-derived raw values, then a
//! `TryFrom` into the validated [`RunConfig`]; and what `--dry-run` prints.

use std::path::PathBuf;

use clap::Args;
use strategies::{Binding, StrategyConfig, WindowScope};

use super::flags::{number, parse_duration};
use super::parse_strategies;
use crate::config::{check_setting, parse_list, RunConfig, SettingError};
use crate::limits::settings::FLAGS;
use crate::limits::NumberParser;
use crate::pipeline::TransportKind;
use crate::progress::clock;
use crate::results::{CommitPolicy, RetryPolicy};
use crate::suite::{
    plan, Cell, CELL_OVERHEAD_S, PIPELINE_RECORD_S, REFERENCE_SATURATION_PER_WORKER,
};
use crate::sweep::Sweep;
use crate::watch::Watchdog;
use crate::workload::reference::with_parallel_consumer_sizes;
use crate::workload::{ScenarioId, SizeArgs, Sizes};

/// Flags of `keyed-bench run` (and of `keyed-bench` with no subcommand).
#[derive(Args, Clone, Debug, PartialEq)]
pub struct RunArgs {
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.scenario.name, help = FLAGS.scenario.help,
          long_help = FLAGS.scenario.long_help,
          help_heading = "Selection", default_value = "all", value_name = "a,b|all")]
    pub scenario: String,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.strategy.name, help = FLAGS.strategy.help,
          long_help = FLAGS.strategy.long_help,
          help_heading = "Selection", default_value = "all", value_name = "x,y|all")]
    pub strategy: String,
    /// A design that runs in another process, in any language: NAME=COMMAND starts its
    /// driver (COMMAND split into words as a shell would, run without a shell), which speaks
    /// the external-design protocol of docs/external.md. NAME joins --strategy's ids (and `all`); it runs the measured
    /// scenarios whose arrivals its driver declares. Repeat the flag for several.
    #[arg(long, help_heading = "Selection", value_name = "NAME=COMMAND")]
    pub external: Vec<String>,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.commit_policy.name, help = FLAGS.commit_policy.help,
          long_help = FLAGS.commit_policy.long_help,
          help_heading = "Selection", default_value = "all", value_name = "a,b|all")]
    pub commit_policy: String,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.retry_policy.name, help = FLAGS.retry_policy.help,
          long_help = FLAGS.retry_policy.long_help,
          help_heading = "Selection", default_value = "all", value_name = "a,b|all")]
    pub retry_policy: String,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(
        long = FLAGS.workers.name, help = FLAGS.workers.help, long_help = FLAGS.workers.long_help,
        help_heading = "Executor settings",
        value_delimiter = ',',
        value_name = "N[,N...]",
        value_parser = number::<usize>("workers"),
        allow_hyphen_values = true
    )]
    pub workers: Vec<usize>,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(
        long = FLAGS.window.name, help = FLAGS.window.help, long_help = FLAGS.window.long_help,
        help_heading = "Executor settings",
        value_delimiter = ',',
        value_name = "N[,N...]",
        value_parser = number::<usize>("window"),
        allow_hyphen_values = true
    )]
    pub window: Vec<usize>,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.throughput.name, help = FLAGS.throughput.help,
          long_help = FLAGS.throughput.long_help,
          help_heading = "Executor settings", value_delimiter = ',', value_name = "N[,N...]",
          default_values_t = [StrategyConfig::DEFAULT_THROUGHPUT],
          value_parser = number::<usize>("throughput"), allow_hyphen_values = true)]
    pub throughput: Vec<usize>,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.groups_per_worker.name, help = FLAGS.groups_per_worker.help,
          long_help = FLAGS.groups_per_worker.long_help,
          help_heading = "Executor settings",
          default_value_t = StrategyConfig::DEFAULT_GROUPS_PER_WORKER,
          value_parser = number::<usize>("groups-per-worker"), allow_negative_numbers = true)]
    pub groups_per_worker: usize,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.idle_spin_us.name, help = FLAGS.idle_spin_us.help,
          long_help = FLAGS.idle_spin_us.long_help,
          help_heading = "Executor settings", value_delimiter = ',', value_name = "N[,N...]",
          default_values_t = [StrategyConfig::DEFAULT_IDLE_SPIN_US],
          value_parser = number::<u32>("idle-spin-us"), allow_hyphen_values = true)]
    pub idle_spin_us: Vec<u32>,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.max_cells.name, help = FLAGS.max_cells.help,
          long_help = FLAGS.max_cells.long_help,
          help_heading = "Run control", default_value_t = crate::sweep::DEFAULT_MAX_CELLS,
          value_parser = NumberParser::<usize>::whole("max-cells", usize::MAX as u64),
          allow_negative_numbers = true)]
    pub max_cells: usize,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.window_scope.name, help = FLAGS.window_scope.help,
          long_help = FLAGS.window_scope.long_help,
          help_heading = "Executor settings", value_name = "strategy|type")]
    pub window_scope: Option<WindowScope>,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.binding.name, help = FLAGS.binding.help,
          long_help = FLAGS.binding.long_help,
          help_heading = "Executor settings", value_name = "reference|round-robin",
          default_value_t = Binding::Reference)]
    pub binding: Binding,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.producers.name, help = FLAGS.producers.help,
          long_help = FLAGS.producers.long_help,
          help_heading = "Run control", default_value_t = 1,
          value_parser = number::<usize>("producers"), allow_negative_numbers = true)]
    pub producers: usize,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.timer_threads.name, help = FLAGS.timer_threads.help,
          long_help = FLAGS.timer_threads.long_help,
          help_heading = "Run control",
          default_value_t = crate::measure::timer::DEFAULT_TIMER_THREADS,
          value_parser = number::<usize>("timer-threads"), allow_negative_numbers = true)]
    pub timer_threads: usize,
    /// Times a cell whose interference receipt says `void` (other processes or the
    /// hypervisor took a quarter of this process's CPUs) is measured again; a cell still
    /// void is kept with its reasons and left out of rankings [0..=10].
    #[arg(long, help_heading = "Run control", default_value_t = crate::config::DEFAULT_REVALIDATE,
          value_parser = number::<usize>("revalidate"), allow_negative_numbers = true)]
    pub revalidate: usize,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.repeat.name, help = FLAGS.repeat.help,
          long_help = FLAGS.repeat.long_help,
          help_heading = "Run control", value_parser = number::<usize>("repeat"),
          allow_negative_numbers = true)]
    pub repeat: Option<usize>,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.no_breakdown.name, help = FLAGS.no_breakdown.help,
          long_help = FLAGS.no_breakdown.long_help,
          help_heading = "Run control")]
    pub no_breakdown: bool,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.quick.name, help = FLAGS.quick.help,
          long_help = FLAGS.quick.long_help,
          help_heading = "Run control")]
    pub quick: bool,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.seed.name, help = FLAGS.seed.help,
          long_help = FLAGS.seed.long_help,
          help_heading = "Run control", default_value_t = 42,
          value_parser = NumberParser::<u64>::whole("seed", u64::MAX), allow_negative_numbers = true)]
    pub seed: u64,
    /// The most memory the largest cell may need, in MiB (its workload and its keys' state,
    /// or its pipeline's log and projection, estimated from the sizes before anything is
    /// generated); a run past it is refused [default: the memory the machine has available
    /// now].
    #[arg(long, help_heading = "Run control", value_name = "MIB",
          value_parser = NumberParser::<u64>::whole("max-memory-mib", u64::MAX),
          allow_negative_numbers = true)]
    pub max_memory_mib: Option<u64>,
    /// Stop a cell that finishes no unit of work (a message, a pipeline record) for this
    /// long, record it as failed with the reason, and go on with the next: numbers with
    /// units, from 1ms to 24h (`90s`, `10m`) [default: each cell's own, 10 x the longer of
    /// its expected time and the longest single wait its sizes allow, at least 60s].
    #[arg(long, help_heading = "Run control", value_name = "DURATION")]
    pub cell_timeout: Option<String>,
    /// Output folder (created if missing; must not be a file). One run at a time writes
    /// there; a complete earlier run of the suite's own files is replaced, an incomplete
    /// one or others' files are refused (see --overwrite).
    #[arg(long, help_heading = "Run control", default_value = crate::results::fs::RUN_OUT)]
    pub out: PathBuf,
    /// Start afresh in an output folder that holds an incomplete run (its cells are lost)
    /// or files the suite did not write (kept: only the suite's own files are replaced).
    #[arg(long, help_heading = "Run control", conflicts_with = "resume")]
    pub overwrite: bool,

    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.transport.name, help = FLAGS.transport.help,
          long_help = FLAGS.transport.long_help,
          help_heading = "Pipeline", value_enum, default_value_t = TransportKind::Embedded)]
    pub transport: TransportKind,
    // Its name and help: its row of the run settings table (limits/settings.rs).
    #[arg(long = FLAGS.kafka_timeout_ms.name, help = FLAGS.kafka_timeout_ms.help,
          long_help = FLAGS.kafka_timeout_ms.long_help,
          help_heading = "Pipeline", default_value_t = 10_000, value_name = "MS",
          value_parser = NumberParser::<u64>::whole("kafka-timeout-ms", 3_600_000),
          allow_negative_numbers = true)]
    pub kafka_timeout_ms: u64,
    /// The Kafka broker and its clients' settings.
    #[command(flatten)]
    pub kafka: super::kafka::KafkaArgs,

    /// Every workload size.
    #[command(flatten)]
    pub sizes: SizeArgs,
    /// The Parallel Consumer's published experiment at full size: parallel-consumer with
    /// 10,000 messages and keys 1,2,5,10,20,50,100,1000,10000, one repetition unless
    /// --repeat says otherwise (several minutes; not with --pc-messages, --pc-keys or --quick).
    #[arg(long, help_heading = "Sizes")]
    pub published_parallel_consumer: bool,
    /// Removed: async-io is not the published experiment (see
    /// --published-parallel-consumer).
    #[arg(long, hide = true)]
    pub published_async_io: bool,
    /// Check every flag as a run would, then list the cells it would run and an estimated
    /// duration, and exit without measuring or writing anything (no output folder).
    ///
    /// Each cell is listed with its scenario, parameter, strategy and repetitions; a
    /// skipped cell with the reason the run would give. The estimate is, per cell, the
    /// workload's ideal bound (the time no strategy can beat) x its repetitions, plus the
    /// breakdown repetition's share of the workload, plus a fixed overhead per cell. A
    /// pipeline cell counts its consumers one after another, each its records at a fixed
    /// time per record (records / --pipeline-rate where paced) plus what it waits on: its
    /// slow records, its failing records' backoffs and whole commit intervals. Both fixed
    /// parts, and the saturation per worker that open-loop's rates
    /// assume (a run measures it first), come from the reference run
    /// results/2026-12-01-vm-5 (the default suite on 2 cores, 2 workers; see its
    /// summary.md). The bound holds on any machine; the fixed parts are the reference
    /// machine's and move with the machine's cores and speed.
    #[arg(long, help_heading = "Run control")]
    pub dry_run: bool,
    /// Go on with the run whose output folder DIR holds an incomplete results.json (a run
    /// stopped by a signal, or that failed) or one with failed cells: run only its missing
    /// and failed cells, with the settings it records, into DIR, and merge them with its
    /// earlier cells in the usual order. Exits 0 at once if every cell is done and none
    /// failed. Flags given beside it must agree with the
    /// recorded ones (those not given take them), and the commit (without its -dirty mark),
    /// rustc, CPU and cores must be the recorded ones, and every cell the file holds must
    /// be one its recorded settings plan, recording what they give it (messages, workers,
    /// records, keys, ...); otherwise it exits 2, naming each difference, before measuring.
    /// With --dry-run, lists the missing cells.
    #[arg(long, help_heading = "Run control", value_name = "DIR")]
    pub resume: Option<PathBuf>,
}

impl RunArgs {
    /// The values of `keyed-bench run` with no flags: the default suite.
    pub fn defaults() -> Self {
        #[derive(clap::Parser)]
        struct Defaults {
            #[command(flatten)]
            run: RunArgs,
        }
        <Defaults as clap::Parser>::parse_from(["keyed-bench"]).run
    }
}

impl Default for RunArgs {
    fn default() -> Self {
        Self::defaults()
    }
}

/// Rejects an output folder that can never be one: an empty path, or an existing file.
fn check_out(out: &std::path::Path) -> Result<(), SettingError> {
    let given = out.display().to_string();
    if out.as_os_str().is_empty() {
        return Err(SettingError::Out {
            given,
            why: "is empty; give the folder to write results to",
        });
    }
    if out.exists() && !out.is_dir() {
        return Err(SettingError::Out {
            given,
            why: "is a file; expected a folder for the results",
        });
    }
    Ok(())
}

impl TryFrom<(RunArgs, String)> for RunConfig {
    type Error = SettingError;

    /// Validates `args`; `command` is the command line, kept in the results.
    fn try_from((args, command): (RunArgs, String)) -> Result<Self, SettingError> {
        let scenarios = parse_list("scenario", &args.scenario, ScenarioId::ALL)?;
        for spec in &args.external {
            crate::measure::external::register(spec)
                .map_err(|error| SettingError::External(error.to_string()))?;
        }
        let strategies = parse_strategies(std::slice::from_ref(&args.strategy))?;
        let commit_policies = parse_list("commit-policy", &args.commit_policy, &CommitPolicy::ALL)?;
        let retry_policies = parse_list("retry-policy", &args.retry_policy, &RetryPolicy::ALL)?;
        check_published(&args)?;
        check_out(&args.out)?;
        let published = args.published_parallel_consumer;
        let sizes = sizes_of(&args);
        let sweep = sweep_of(&args)?;
        let cell_timeout = args.cell_timeout.as_deref().map(cell_timeout).transpose()?;
        let config = RunConfig {
            scenarios,
            strategies,
            commit_policies,
            retry_policies,
            strategy: StrategyConfig {
                workers: sweep.workers[0],
                max_in_flight: sweep.window[0],
                throughput: sweep.throughput[0],
                groups_per_worker: args.groups_per_worker,
                idle_spin_us: sweep.idle_spin_us[0],
                window_scope: args.window_scope,
                binding: args.binding,
            },
            sweep,
            repeat: args.repeat.unwrap_or(if args.quick || published { 1 } else { 3 }),
            breakdown: !args.no_breakdown,
            producers: args.producers,
            timer_threads: args.timer_threads,
            revalidate: args.revalidate,
            quick: args.quick,
            seed: args.seed,
            out: args.out,
            overwrite: args.overwrite,
            sizes,
            command,
            watchdog: Watchdog { cell_timeout, ..Watchdog::default() },
            transport: args.transport,
            kafka_timeout: std::time::Duration::from_millis(args.kafka_timeout_ms.max(1)),
            broker_fault: None,
            kafka: args.kafka.options(args.transport)?,
        };
        config.validate()?;
        check_transport(&config)?;
        let plan = plan(&config, None);
        check_cell_count(&config, plan.len())?;
        check_memory(&plan, args.max_memory_mib)?;
        Ok(config)
    }
}

/// Refuses `--transport kafka` in a build without it, and a pipeline log whose fullest
/// partition would pass what the mock cluster keeps of one.
fn check_transport(config: &RunConfig) -> Result<(), SettingError> {
    if config.transport != TransportKind::Kafka {
        return Ok(());
    }
    if !config.transport.is_built() {
        return Err(SettingError::Unbuilt {
            flag: "transport",
            value: "kafka",
            how: "cargo build --release --features kafka (or cargo run --release --features \
                  kafka -- run ...); the build compiles librdkafka and needs gcc, g++, make, \
                  pkg-config and python3",
        });
    }
    let sizes = &config.sizes;
    let pipelines = config.scenarios.iter().any(|scenario| scenario.is_pipeline());
    let per_partition =
        (sizes.pipeline_records as u64).div_ceil(u64::from(sizes.partitions.max(1)));
    // Kafka's partitioner spreads keys unevenly: a quarter more than the mean is allowed for.
    let bytes = per_partition.saturating_mul(5).div_ceil(4).saturating_mul(MOCK_RECORD_BYTES);
    if pipelines && config.kafka.is_mock() && bytes > MOCK_PARTITION_BYTES {
        return Err(SettingError::MockVolume {
            records: sizes.pipeline_records,
            partitions: sizes.partitions,
            bytes,
            max: MOCK_PARTITION_BYTES,
        });
    }
    Ok(())
}

/// Bytes of one pipeline record on the mock cluster, batch framing included.
const MOCK_RECORD_BYTES: u64 = 64;

/// Bytes the mock cluster keeps of one partition's log.
const MOCK_PARTITION_BYTES: u64 = 5 * 1024 * 1024;

/// `--cell-timeout`'s value: a duration with units, from 1 ms to 24 h.
fn cell_timeout(given: &str) -> Result<std::time::Duration, SettingError> {
    parse_duration(given).ok_or_else(|| SettingError::OutOfRange {
        flag: "cell-timeout",
        value: format!("`{given}`"),
        expected: "numbers with units (ms, s, m, h) from 1ms to 24h, e.g. 90s or 10m".into(),
    })
}

/// Rejects the removed `--published-async-io`, and `--published-parallel-consumer` beside
/// a flag that sets what it sets.
fn check_published(args: &RunArgs) -> Result<(), SettingError> {
    if args.published_async_io {
        return Err(SettingError::Removed {
            flag: "published-async-io",
            why: "async-io runs non-blocking waits, a different experiment from the \
                  published table",
            instead: "--scenario parallel-consumer --published-parallel-consumer",
        });
    }
    if !args.published_parallel_consumer {
        return Ok(());
    }
    let why = "--published-parallel-consumer runs the published experiment at its own \
               messages and keys";
    // --quick's smaller parallel-consumer sizes are not the published experiment: refused,
    // rather than one of the two flags silently ignored.
    let given = [
        ("pc-messages", args.sizes.pc_messages.is_some()),
        ("pc-keys", args.sizes.pc_keys.is_some()),
        ("quick", args.quick),
    ];
    match given.into_iter().find(|(_, given)| *given) {
        Some((other, _)) => {
            Err(SettingError::Conflict { flag: "published-parallel-consumer", other, why })
        }
        None => Ok(()),
    }
}

/// The workload sizes: `--quick`'s or the standard ones, the published experiment's where
/// asked, then every size flag given; a topic expansion not given doubles the partitions
/// where the sizes would not grow the topic.
fn sizes_of(args: &RunArgs) -> Sizes {
    let mut sizes = if args.quick { Sizes::quick() } else { Sizes::standard() };
    if args.published_parallel_consumer {
        with_parallel_consumer_sizes(&mut sizes);
    }
    let expand_to_given = args.sizes.expand_to.is_some();
    args.sizes.apply(&mut sizes);
    if !expand_to_given && sizes.expand_to <= sizes.partitions {
        sizes.expand_to = sizes.partitions.saturating_mul(2);
    }
    sizes
}

/// The swept settings, each list checked; a setting not given has its default alone.
fn sweep_of(args: &RunArgs) -> Result<Sweep, SettingError> {
    Ok(Sweep {
        workers: setting_list("workers", &args.workers, crate::measure::system::cores())?,
        throughput: setting_list(
            "throughput",
            &args.throughput,
            StrategyConfig::DEFAULT_THROUGHPUT,
        )?,
        window: setting_list("window", &args.window, StrategyConfig::DEFAULT_MAX_IN_FLIGHT)?,
        idle_spin_us: setting_list(
            "idle-spin-us",
            &args.idle_spin_us,
            StrategyConfig::DEFAULT_IDLE_SPIN_US,
        )?,
        window_given: !args.window.is_empty(),
        max_cells: args.max_cells,
    })
}

/// Refuses a run of more cells than `--max-cells`.
fn check_cell_count(config: &RunConfig, cells: usize) -> Result<(), SettingError> {
    if cells <= config.sweep.max_cells {
        return Ok(());
    }
    Err(SettingError::TooMany {
        what: "the run's cell count",
        value: format!(
            "{cells} ({} scenarios x {} strategies x their params x the points of the sweep: \
             {})",
            config.scenarios.len(),
            config.strategies.len(),
            config.sweep.points(crate::sweep::Uses::ALL).len()
        ),
        max: config.sweep.max_cells,
        why: "a run this large is refused unless --max-cells raises the limit",
    })
}

/// Refuses a plan whose largest cell would need more memory than `max_mib`, or than the
/// machine has available where no bound is given (no bound where neither is known).
fn check_memory(plan: &crate::suite::Plan, max_mib: Option<u64>) -> Result<(), SettingError> {
    const MIB: u64 = 1 << 20;
    let available = || crate::measure::system::available_bytes().map(|bytes| bytes / MIB);
    let (Some(max), Some((cell, bytes))) = (max_mib.or_else(available), plan.largest_memory())
    else {
        return Ok(());
    };
    let needed = bytes.div_ceil(MIB);
    if needed <= max {
        return Ok(());
    }
    Err(SettingError::TooMany {
        what: "the memory of the largest cell",
        value: format!("about {needed} MiB ({})", cell.key),
        max: usize::try_from(max).unwrap_or(usize::MAX),
        why: if max_mib.is_some() {
            "lower its sizes (--messages, --pipeline-records, ...), or raise --max-memory-mib"
        } else {
            "more than the machine has available now; lower its sizes (--messages, \
             --pipeline-records, ...), or set --max-memory-mib"
        },
    })
}

/// A list-valued setting: each value checked against its flag's range, none twice;
/// `default` when the flag was not given.
fn setting_list<T>(flag: &'static str, given: &[T], default: T) -> Result<Vec<T>, SettingError>
where
    T: Copy + PartialEq + std::fmt::Display + crate::limits::FlagValue,
{
    if given.is_empty() {
        return Ok(vec![default]);
    }
    for (index, value) in given.iter().enumerate() {
        check_setting(flag, *value)?;
        if given[..index].contains(value) {
            return Err(SettingError::Duplicate { flag, value: value.to_string() });
        }
    }
    Ok(given.to_vec())
}

/// What `keyed-bench run --dry-run` prints: every cell `config` would run, one a line, the
/// number of cells and an estimated duration with its basis (see `--dry-run`'s help).
pub fn render_plan(config: &RunConfig) -> String {
    render_cells(config, &plan(config, None).cells)
}

/// [`render_plan`] of `cells`, some of `config`'s (the missing cells of a resumed run).
pub fn render_cells(config: &RunConfig, cells: &[Cell]) -> String {
    let mut out = String::from(
        "dry run: nothing is measured or written; these are the cells the run would run\n",
    );
    for cell in cells {
        let param = cell.key.full_param();
        let param = if param.is_empty() { "-" } else { &param };
        let what = match cell.skipped {
            Some(reason) => format!("skipped: {reason}"),
            None => {
                let reps = match (cell.scenario.is_pipeline(), cell.repetitions) {
                    (true, _) => "1 run".to_owned(),
                    (false, 1) => "1 repetition".to_owned(),
                    (false, n) => format!("{n} repetitions"),
                };
                let breakdown = if cell.breakdown { " + breakdown" } else { "" };
                format!("{reps}{breakdown}, ~{:.2} s", cell.estimate_s)
            }
        };
        let (scenario, strategy) = (cell.scenario.as_str(), cell.strategy.as_str());
        out.push_str(&format!("{scenario:<18} {param:<28} {strategy:<14} {what}\n"));
    }
    let skipped = cells.iter().filter(|cell| cell.skipped.is_some()).count();
    let estimate_s: f64 = cells.iter().map(|cell| cell.estimate_s).sum();
    let bound_s: f64 = cells.iter().map(|cell| cell.bound_s).sum();
    out.push_str(&format!(
        "{} cells: {} to run, {skipped} skipped\n",
        cells.len(),
        cells.len() - skipped
    ));
    out.push_str(&format!(
        "estimated duration: about {} on a 2-core machine like the reference run's (this one \
         has {} cores, --workers {}); the ideal bound alone is {}\n",
        clock(estimate_s),
        crate::measure::system::cores(),
        config.sweep.workers.iter().map(usize::to_string).collect::<Vec<_>>().join(","),
        clock(bound_s)
    ));
    out.push_str(&format!(
        "basis: per cell, the workload's ideal bound x its repetitions (plus the breakdown \
         repetition's share of the workload), plus {CELL_OVERHEAD_S} s measured per cell on the \
         reference run (the default suite: 270 s for 378 cells, 2 cores, 2 workers); pipeline \
         cells: their consumers one after another, each {:.1} us per record (records / \
         --pipeline-rate where paced) plus its waits: slow records, retry backoffs, whole \
         commit intervals. The bound holds on any machine; the per-cell part moves with its \
         cores and speed\n",
        PIPELINE_RECORD_S * 1e6
    ));
    if config.scenarios.iter().any(|s| s.loads_of_saturation()) {
        out.push_str(&format!(
            "open-loop's rates assume the reference run's saturation, {REFERENCE_SATURATION_PER_WORKER:.0} \
             msg/s per counted worker; a run measures it first\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{flag_ranges, MAX_KEYS};
    use strategies::StrategyId;

    fn args() -> RunArgs {
        RunArgs::defaults()
    }

    fn sizes(set: impl FnOnce(&mut SizeArgs)) -> SizeArgs {
        let mut sizes = SizeArgs::default();
        set(&mut sizes);
        sizes
    }

    fn config(args: RunArgs) -> Result<RunConfig, SettingError> {
        RunConfig::try_from((args, "test".into()))
    }

    #[test]
    fn the_embedded_transport_is_the_default_and_recorded_nowhere() {
        let config = config(args()).unwrap();
        assert_eq!(config.transport, TransportKind::Embedded);
    }

    #[cfg(not(feature = "kafka"))]
    #[test]
    fn kafka_in_a_build_without_it_is_refused_with_how_to_build_it() {
        let error = config(RunArgs { transport: TransportKind::Kafka, ..args() }).unwrap_err();
        let message = error.to_string();
        assert!(message.starts_with("--transport kafka is not in this build"), "{message}");
        assert!(message.contains("--features kafka"), "{message}");
    }

    #[cfg(feature = "kafka")]
    #[test]
    fn a_log_past_the_mock_is_refused_naming_the_flags() {
        let big = sizes(|sizes| {
            sizes.pipeline_records = Some(1_000_000);
            sizes.partitions = Some(4);
        });
        let given = RunArgs { transport: TransportKind::Kafka, sizes: big, ..args() };
        let message = config(given).unwrap_err().to_string();
        assert!(message.contains("--pipeline-records 1000000 over --partitions 4"), "{message}");
        let fits = RunArgs { transport: TransportKind::Kafka, quick: true, ..args() };
        assert_eq!(config(fits).unwrap().transport, TransportKind::Kafka);
    }

    #[test]
    fn the_dry_run_lists_every_cell_and_an_estimate() {
        let config = config(RunArgs { quick: true, ..args() }).unwrap();
        let text = render_plan(&config);
        let cells = plan(&config, None).cells;
        assert_eq!(text.lines().count(), cells.len() + 4 + 1, "{text}");
        for scenario in ScenarioId::ALL {
            assert!(text.lines().any(|line| line.starts_with(scenario.as_str())), "{scenario}");
        }
        assert!(text.contains(&format!("{} cells:", cells.len())), "{text}");
        assert!(text.contains("estimated duration: about "), "{text}");
        let skipped = cells.iter().filter(|cell| cell.skipped.is_some());
        assert!(skipped.clone().all(|cell| cell.estimate_s == 0.0));
        assert!(skipped.clone().all(|cell| cell.strategy == StrategyId::Inline));
        assert!(cells
            .iter()
            .filter(|cell| cell.skipped.is_none())
            .all(|cell| { cell.estimate_s >= cell.bound_s + CELL_OVERHEAD_S - 1e-12 }));
    }

    #[test]
    fn defaults_select_everything() {
        let config = config(args()).unwrap();
        assert_eq!(config.scenarios.len(), ScenarioId::ALL.len());
        assert_eq!(config.strategies.len(), StrategyId::ALL.len());
        assert_eq!(config.repeat, 3);
    }

    #[test]
    fn quick_means_one_repeat_and_smaller_sizes() {
        let config = config(RunArgs { quick: true, ..args() }).unwrap();
        assert_eq!(config.repeat, 1);
        assert!(config.sizes.messages < Sizes::standard().messages);
    }

    #[test]
    fn commit_policies_are_all_three_unless_listed() {
        assert_eq!(config(args()).unwrap().commit_policies, CommitPolicy::ALL);
        let given = RunArgs { commit_policy: "highest-completed,contiguous".into(), ..args() };
        assert_eq!(
            config(given).unwrap().commit_policies,
            [CommitPolicy::HighestCompleted, CommitPolicy::Contiguous]
        );
        let twice = RunArgs { commit_policy: "contiguous,contiguous".into(), ..args() };
        let error = config(twice).unwrap_err().to_string();
        assert!(error.contains("--commit-policy") && error.contains("contiguous"), "{error}");
        let unknown = RunArgs { commit_policy: "newest".into(), ..args() };
        let error = config(unknown).unwrap_err().to_string();
        assert!(error.contains("contiguous+metadata"), "{error}");
    }

    #[test]
    fn the_binding_is_the_reference_rule_unless_the_ablation_is_asked_for() {
        assert_eq!(config(args()).unwrap().strategy.binding, Binding::Reference);
        #[derive(clap::Parser)]
        struct Run {
            #[command(flatten)]
            run: RunArgs,
        }
        let parse = |value: &str| {
            <Run as clap::Parser>::try_parse_from(["keyed-bench", "--binding", value])
                .map(|parsed| parsed.run.binding)
                .map_err(|error| error.to_string())
        };
        assert_eq!(parse("round-robin"), Ok(Binding::RoundRobin));
        assert_eq!(parse("reference"), Ok(Binding::Reference));
        let error = parse("hash").unwrap_err();
        assert!(error.contains("--binding") && error.contains("reference, round-robin"), "{error}");
        let given = RunArgs { binding: Binding::RoundRobin, ..args() };
        assert_eq!(config(given).unwrap().strategy.binding, Binding::RoundRobin);
    }

    #[test]
    fn the_window_scope_is_each_strategys_default_unless_given() {
        assert_eq!(config(args()).unwrap().strategy.window_scope, None);
        #[derive(clap::Parser)]
        struct Run {
            #[command(flatten)]
            run: RunArgs,
        }
        let parse = |value: &str| {
            <Run as clap::Parser>::try_parse_from(["keyed-bench", "--window-scope", value])
                .map(|parsed| parsed.run.window_scope)
                .map_err(|error| error.to_string())
        };
        assert_eq!(parse("type"), Ok(Some(WindowScope::Type)));
        assert_eq!(parse("strategy"), Ok(Some(WindowScope::Strategy)));
        let error = parse("key").unwrap_err();
        assert!(error.contains("--window-scope") && error.contains("strategy, type"), "{error}");
        let given = RunArgs { window_scope: Some(WindowScope::Type), ..args() };
        assert_eq!(config(given).unwrap().strategy.window_scope, Some(WindowScope::Type));
    }

    #[test]
    fn unknown_ids_name_the_valid_ones() {
        let error = config(RunArgs { scenario: "uniform,bogus".into(), ..args() }).unwrap_err();
        assert!(
            error.to_string().contains("`bogus`") && error.to_string().contains("zipf"),
            "{error}"
        );
        let error = config(RunArgs { strategy: "keyed".into(), ..args() }).unwrap_err();
        assert!(error.to_string().contains("keyed-mailbox"), "{error}");
    }

    #[test]
    fn zero_and_absurd_sizes_are_rejected_by_name() {
        let cases = [
            RunArgs { workers: vec![0], ..args() },
            RunArgs { window: vec![0], ..args() },
            RunArgs { repeat: Some(0), ..args() },
            RunArgs { sizes: sizes(|s| s.messages = Some(0)), ..args() },
            RunArgs { sizes: sizes(|s| s.keys = Some(vec![MAX_KEYS + 1])), ..args() },
            RunArgs { sizes: sizes(|s| s.loads = Some(vec![])), ..args() },
            RunArgs { sizes: sizes(|s| s.bursts = Some(vec![0])), ..args() },
            RunArgs { sizes: sizes(|s| s.rate = Some(f64::NAN)), ..args() },
        ];
        let flags = ["workers", "window", "repeat", "messages", "keys", "loads", "bursts", "rate"];
        for (case, flag) in cases.into_iter().zip(flags) {
            let error = config(case).unwrap_err().to_string();
            assert!(error.starts_with(&format!("--{flag} ")), "{error}");
        }
    }

    #[test]
    fn every_range_is_stated_in_its_flag_help() {
        let command = <RunArgs as clap::Args>::augment_args(clap::Command::new("run"));
        for range in flag_ranges() {
            let arg = command
                .get_arguments()
                .find(|arg| arg.get_long() == Some(range.flag))
                .unwrap_or_else(|| panic!("--{} is a flag", range.flag));
            let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
            assert!(help.contains(&format!("[{}]", range.text())), "--{}: {help}", range.flag);
        }
    }

    #[test]
    fn lists_reject_empty_entries_duplicates_and_all_among_others() {
        let cases = [
            (RunArgs { scenario: "".into(), ..args() }, "--scenario `` has an empty entry"),
            (
                RunArgs { scenario: "uniform,".into(), ..args() },
                "--scenario `uniform,` has an empty",
            ),
            (RunArgs { strategy: "inline,,tokio".into(), ..args() }, "--strategy `inline,,tokio`"),
            (RunArgs { scenario: "zipf, zipf".into(), ..args() }, "--scenario names `zipf` twice"),
            (RunArgs { strategy: "all,inline".into(), ..args() }, "--strategy: `all` selects"),
            (
                RunArgs { sizes: sizes(|s| s.bursts = Some(vec![5, 7, 5])), ..args() },
                "--bursts names `5` twice",
            ),
            (
                RunArgs { sizes: sizes(|s| s.async_keys = Some(vec![20, 20])), ..args() },
                "--async-keys names `20` twice",
            ),
            (
                RunArgs { sizes: sizes(|s| s.loads = Some(vec![0.5, 0.5])), ..args() },
                "--loads names `0.5` twice",
            ),
        ];
        for (case, expected) in cases {
            let error = config(case).unwrap_err().to_string();
            assert!(error.starts_with(expected), "{expected}: {error}");
        }
    }

    #[test]
    fn conflicting_flags_are_named() {
        let error = config(RunArgs {
            published_parallel_consumer: true,
            sizes: sizes(|s| s.pc_keys = Some(vec![3])),
            ..args()
        })
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with("--published-parallel-consumer cannot be combined with --pc-keys"),
            "{error}"
        );
        let error = config(RunArgs {
            published_parallel_consumer: true,
            sizes: sizes(|s| s.pc_messages = Some(10)),
            ..args()
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("--pc-messages"), "{error}");
    }

    #[test]
    fn the_removed_async_io_preset_names_its_successor() {
        let error = config(RunArgs { published_async_io: true, ..args() }).unwrap_err();
        let error = error.to_string();
        assert!(error.starts_with("--published-async-io was removed"), "{error}");
        assert!(error.contains("--published-parallel-consumer"), "{error}");
    }

    #[test]
    fn products_past_what_can_run_are_rejected() {
        let threads = RunArgs {
            scenario: "many-types".into(),
            strategy: "per-type-pool".into(),
            sizes: sizes(|s| s.types = Some(100_000)),
            workers: vec![2],
            ..args()
        };
        let error = config(threads.clone()).unwrap_err().to_string();
        assert!(error.starts_with("--types x --workers is 100000 x 2 = 200000"), "{error}");
        // The same sizes are fine where per-type-pool does not meet many-types.
        config(RunArgs { strategy: "keyed-mailbox".into(), ..threads }).unwrap();
        let groups = RunArgs {
            strategy: "group-by".into(),
            workers: vec![4096],
            groups_per_worker: 65_536,
            ..args()
        };
        let error = config(groups).unwrap_err().to_string();
        assert!(error.contains("4096 x 65536 = 268435456"), "{error}");
        let keys = RunArgs {
            sizes: sizes(|s| (s.types, s.keys_per_type) = (Some(100_000), Some(10_000))),
            ..args()
        };
        let error = config(keys).unwrap_err().to_string();
        assert!(error.starts_with("--types x --keys-per-type is 100000 x 10000"), "{error}");
    }

    #[test]
    fn an_output_that_cannot_be_a_folder_is_rejected() {
        let error = config(RunArgs { out: PathBuf::new(), ..args() }).unwrap_err().to_string();
        assert!(error.starts_with("--out `` is empty"), "{error}");
        let file =
            std::env::temp_dir().join(format!("keyed-bench-out-file-{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        let error = config(RunArgs { out: file.clone(), ..args() }).unwrap_err().to_string();
        std::fs::remove_file(&file).ok();
        assert!(error.contains("is a file"), "{error}");
    }

    #[test]
    fn published_parallel_consumer_sets_the_experiment() {
        let config = config(RunArgs { published_parallel_consumer: true, ..args() }).unwrap();
        assert_eq!(config.sizes.pc_messages, 10_000);
        assert_eq!(config.sizes.pc_keys, [1, 2, 5, 10, 20, 50, 100, 1_000, 10_000]);
        assert_eq!(config.repeat, 1);
    }
}
