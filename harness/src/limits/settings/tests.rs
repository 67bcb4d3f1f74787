use super::generate::advance;
use super::{Flag, RunSetting};

/// The real table, plus a swept setting (`pause-us`) and a single one (`label`) that it does
/// not have, given to every generator as the real table is: declared once, each shows up
/// in every generated place beside the real ones.
macro_rules! with_extra_rows {
    ($kind:ident => $generate:ident $($with:tt)*) => {
        $crate::limits::settings::run_settings! { $kind => $generate plus {
            swept {
                pause_us: u32 {
                    flag "pause-us", strategy pause_us,
                    help "Microseconds to pause between turns [0..=1000]",
                    range 0 => 1_000,
                    meta "pause_us" at 14,
                    resume |config| list(&config.sweep.pause_us),
                    record |config| { pause_us: config.strategy.pause_us },
                    read |meta, config| { config.strategy.pause_us = meta.pause_us; },
                    line 9 |meta, swept|
                        Some(format!("pause {} us", swept.show("pause-us", meta.pause_us))),
                }
            }
            single {
                label {
                    flag "label",
                    help "A label for the run",
                    long help "A label for the run.\n\nThe summary's settings line states it",
                    meta "label" at 15,
                    resume |config| config.label.clone(),
                    record |config| { label: config.label.clone() },
                    read |meta, config| { config.label = meta.label.clone(); },
                    line 10 in brief |meta, _swept| Some(format!("label {}", meta.label)),
                }
            }
        } $($with)* }
    };
}

/// What the generated code names, as the files that expand the real table have them, with
/// the fields of the two extra rows.
#[allow(dead_code)]
mod generated {
    use std::fmt::Display;
    use std::time::Duration;

    use serde::{Deserialize, Serialize};
    use strategies::{Binding, MAX_WINDOW};

    use super::super::super::{FlagRange, MAX_PRODUCERS, MAX_REPEAT};
    use super::super::setting_descriptors;
    use super::RunSetting;
    use crate::limits::settings::{
        agree_settings, cell_settings_type, differ, flag_constants, list, meta_record,
        read_recorded, resume_values, setting_ranges, settings_lines, sweep_types, Flag,
    };

    pub const DEFAULT_MAX_CELLS: usize = 10;

    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    pub struct StrategyConfig {
        pub workers: usize,
        pub max_in_flight: usize,
        pub throughput: usize,
        pub idle_spin_us: u32,
        pub pause_us: u32,
        pub groups_per_worker: usize,
        pub window_scope: Option<u8>,
        pub binding: Binding,
    }

    impl StrategyConfig {
        pub const MAX_WORKERS: usize = 4;
        pub const MAX_IDLE_SPIN_US: u32 = 5;
        pub const DEFAULT_IDLE_SPIN_US: u32 = 2;
        pub const DEFAULT_GROUPS_PER_WORKER: usize = 3;
    }

    pub const DEFAULT_TIMER_THREADS: usize = 1;
    pub const DEFAULT_KAFKA_TIMEOUT: Duration = Duration::from_millis(7);

    pub struct CommitPolicy;
    pub struct RetryPolicy;

    impl CommitPolicy {
        pub const ALL: &'static [String] = &[];
    }

    impl RetryPolicy {
        pub const ALL: &'static [String] = &[];
    }

    #[derive(Clone, Copy)]
    pub struct WindowScopeSetting(Option<u8>);

    impl From<Option<u8>> for WindowScopeSetting {
        fn from(scope: Option<u8>) -> Self {
            Self(scope)
        }
    }

    pub struct TransportMeta {
        pub kind: &'static str,
        pub timeout_ms: u64,
    }

    pub struct RecordedError;

    pub fn designs_of(strategies: &[String]) -> Vec<String> {
        strategies.to_vec()
    }

    pub fn transport_meta(config: &RunConfig) -> Option<TransportMeta> {
        let timeout_ms = config.kafka_timeout.as_millis() as u64;
        (config.transport != "embedded")
            .then_some(TransportMeta { kind: config.transport, timeout_ms })
    }

    pub fn kafka_options(_: &TransportMeta) -> Result<Kafka, RecordedError> {
        Ok(Kafka::default())
    }

    impl WindowScopeSetting {
        pub fn line(_: Option<Self>) -> String {
            "its scope".to_owned()
        }
    }

    #[derive(Default)]
    pub struct Meta {
        pub scenarios: Option<Vec<String>>,
        pub strategies: Option<Vec<String>>,
        pub designs: Vec<String>,
        pub commit_policies: Option<Vec<String>>,
        pub retry_policies: Option<Vec<String>>,
        pub groups_per_worker: Option<usize>,
        pub timer_threads: Option<usize>,
        pub breakdown: Option<bool>,
        pub transport: Option<TransportMeta>,
        pub workers: usize,
        pub window: usize,
        pub throughput: usize,
        pub window_scope: Option<WindowScopeSetting>,
        pub idle_spin_us: Option<u32>,
        pub binding: Option<Binding>,
        pub producers: Option<usize>,
        pub repeat: usize,
        pub quick: bool,
        pub seed: u64,
        pub pause_us: u32,
        pub label: String,
    }

    impl Meta {
        pub fn window_scope(&self) -> Option<u8> {
            self.window_scope.and_then(|scope| scope.0)
        }
    }

    pub struct SweptSettings(pub Vec<(&'static str, Vec<String>)>);

    impl SweptSettings {
        pub fn show(&self, setting: &str, single: impl Display) -> String {
            match self.0.iter().find(|(name, _)| *name == setting) {
                Some((_, values)) => format!("[{}]", values.join(", ")),
                None => single.to_string(),
            }
        }
    }

    pub struct Cluster {
        pub bootstrap: String,
        pub keep_topics: bool,
    }

    #[derive(Default)]
    pub struct Kafka {
        pub cluster: Option<Cluster>,
        pub replication_factor: u16,
        pub group_protocol: String,
    }

    pub struct RunConfig {
        pub sweep: Sweep,
        pub scenarios: Vec<String>,
        pub strategies: Vec<String>,
        pub commit_policies: Vec<String>,
        pub retry_policies: Vec<String>,
        pub strategy: StrategyConfig,
        pub producers: usize,
        pub timer_threads: usize,
        pub repeat: usize,
        pub breakdown: bool,
        pub quick: bool,
        pub seed: u64,
        pub transport: &'static str,
        pub kafka_timeout: Duration,
        pub kafka: Kafka,
        pub label: String,
    }

    with_extra_rows!(all => setting_descriptors);
    with_extra_rows!(all => flag_constants);
    with_extra_rows!(swept => sweep_types);
    with_extra_rows!(swept => cell_settings_type);
    with_extra_rows!(swept => agree_settings);
    with_extra_rows!(all => settings_lines);
    with_extra_rows!(all => resume_values);
    with_extra_rows!(all => setting_ranges with FlagRange::int("other", 0, 1));
    with_extra_rows!(all => read_recorded);

    /// The meta a run of `config` records (no field but the rows').
    pub fn record(config: &RunConfig) -> Meta {
        with_extra_rows!(all => meta_record with config, {})
    }

    /// `config` with every setting `meta` records read back into it.
    pub fn read(meta: &Meta, mut config: RunConfig) -> RunConfig {
        assert!(read_settings(meta, &mut config).is_ok());
        config
    }

    pub fn agree(recorded: &CellSettings, planned: &CellSettings) -> Vec<String> {
        let mut whys = Vec::new();
        settings_fields(&mut whys, Some(recorded), planned);
        whys
    }

    pub fn resume_count() -> usize {
        SETTINGS.len()
    }

    pub fn resume(flag: &str, config: &RunConfig) -> Option<String> {
        SETTINGS.iter().find(|(name, _)| *name == flag).map(|(_, value)| value(config))
    }

    pub fn config(sweep: Sweep) -> RunConfig {
        RunConfig {
            sweep,
            scenarios: Vec::new(),
            strategies: Vec::new(),
            commit_policies: Vec::new(),
            retry_policies: Vec::new(),
            strategy: StrategyConfig::default(),
            producers: 1,
            timer_threads: 1,
            repeat: 1,
            breakdown: true,
            quick: false,
            seed: 1,
            transport: "embedded",
            kafka_timeout: Duration::from_millis(1),
            kafka: Kafka { cluster: None, replication_factor: 1, group_protocol: "x".to_owned() },
            label: "a label".to_owned(),
        }
    }
}

use generated::*;

#[test]
fn a_setting_declared_once_is_in_every_generated_place() {
    // Its flag and the meta field compare lists, in its place, after the real table's.
    let flags =
        |settings: &[RunSetting]| -> Vec<&str> { settings.iter().map(|s| s.flag).collect() };
    let real = super::RUN_SETTINGS;
    let swept = real.iter().filter(|setting| setting.swept).count();
    let mut expected = flags(real);
    expected.insert(swept, "pause-us");
    expected.push("label");
    assert_eq!(flags(RUN_SETTINGS), expected);
    let pause = RUN_SETTINGS[swept];
    assert_eq!(pause.compared, Some(("pause_us", 14)));
    assert_eq!((pause.swept, pause.line), (true, Some(9)));
    let label = RUN_SETTINGS.last().unwrap();
    assert_eq!((label.compared, label.swept, label.line), (Some(("label", 15)), false, Some(10)));
    // Its flag's name and help, as a clap field takes them, and as the descriptors hold them.
    let pause_flag = Flag {
        name: "pause-us",
        help: "Microseconds to pause between turns [0..=1000]",
        long_help: None,
    };
    assert_eq!(FLAGS.pause_us, pause_flag);
    assert_eq!((pause.help, pause.long_help), (pause_flag.help, None));
    let long = "A label for the run.\n\nThe summary's settings line states it";
    let label_flag = Flag { name: "label", help: "A label for the run", long_help: Some(long) };
    assert_eq!(FLAGS.label, label_flag);
    assert_eq!((label.help, label.long_help), (label_flag.help, Some(long)));
    assert_eq!(FLAGS.workers.name, "workers");
    assert_eq!(FLAGS.workers.help, super::FLAGS.workers.help);
    // A sweep of it: points, labels, the strategy settings of a point.
    let strategy = StrategyConfig { workers: 2, pause_us: 1, ..StrategyConfig::default() };
    let sweep = Sweep { pause_us: vec![0, 5], ..Sweep::single(&strategy) };
    assert_eq!(Sweep::single(&strategy).pause_us, [1]);
    assert_eq!(sweep.swept().collect::<Vec<_>>(), ["pause-us"]);
    let points = sweep.points(Uses::ALL);
    assert_eq!(points.len(), 2);
    assert_eq!((points[1].workers, points[1].pause_us), (2, 5));
    assert_eq!(sweep.label(&points[1], Uses::ALL), "pause-us=5");
    assert_eq!(sweep.first_point(), Some(points[0]));
    let values = points[1].values();
    assert_eq!(values.len(), swept + 1);
    assert_eq!(values.first(), Some(&("workers", "2".to_owned())));
    assert_eq!(values.last(), Some(&("pause-us", "5".to_owned())));
    assert_eq!(points[1].apply(StrategyConfig::default()).pause_us, 5);
    // A cell's recorded settings, its label's names, and the agreement check.
    assert_eq!(SWEEP_SETTINGS.last(), Some(&"pause-us"));
    assert_eq!(SWEEP_SETTINGS.len(), swept + 1);
    let planned = CellSettings {
        workers: 1,
        throughput: 1,
        window: 1,
        idle_spin_us: 0,
        pause_us: 0,
        sweep: String::new(),
    };
    let recorded = CellSettings { pause_us: 5, ..planned.clone() };
    assert_eq!(recorded.values().last(), Some(&("pause-us", "5".to_owned())));
    assert_eq!(
        agree(&recorded, &planned),
        ["settings.pause_us is 5, but the recorded settings give 0"]
    );
    // The values a resumed run compares.
    assert_eq!(resume("pause-us", &config(sweep.clone())).as_deref(), Some("0,5"));
    assert_eq!(resume("label", &config(sweep.clone())).as_deref(), Some("a label"));
    assert_eq!(resume_count(), real.len() + 2);
    // Its range, among the real ones and before those given after the table.
    let ranges: Vec<&str> = SETTING_RANGES.iter().map(|range| range.flag).collect();
    let at = ranges.iter().position(|flag| *flag == "pause-us").unwrap();
    assert_eq!((SETTING_RANGES[at].min, SETTING_RANGES[at].max), (0.0, 1_000.0));
    assert_eq!(ranges.len(), super::super::SETTING_RANGES.len() + 1);
    assert_eq!(ranges.last(), Some(&"other"));
    // The settings line, in its places, and its brief form without the swept one.
    let meta = Meta { pause_us: 5, label: "x".to_owned(), ..Meta::default() };
    let swept_settings = SweptSettings(vec![("pause-us", vec!["0".into(), "5".into()])]);
    let line = meta.settings_line(&swept_settings);
    assert!(line.ends_with(", pause [0, 5] us, label x"), "{line}");
    let brief = meta.brief_settings(&swept_settings);
    assert!(brief.ends_with(", label x") && !brief.contains("pause"), "{brief}");
    // What a run records of it in its meta, and reads back from there.
    let ran = RunConfig { strategy: StrategyConfig { pause_us: 5, ..strategy }, ..config(sweep) };
    let meta = record(&ran);
    assert_eq!((meta.pause_us, meta.label.as_str()), (5, "a label"));
    let blank = RunConfig { label: String::new(), ..config(Sweep::single(&strategy)) };
    let back = read(&meta, RunConfig { strategy: StrategyConfig::default(), ..blank });
    assert_eq!((back.strategy.pause_us, back.label.as_str()), (5, "a label"));
}

#[test]
fn every_setting_has_one_flag_and_its_own_places() {
    let unique = |mut items: Vec<u32>| {
        let count = items.len();
        items.sort_unstable();
        items.dedup();
        (items.len() == count).then_some(items)
    };
    let mut flags: Vec<&str> = super::RUN_SETTINGS.iter().map(|setting| setting.flag).collect();
    flags.sort_unstable();
    let count = flags.len();
    flags.dedup();
    assert_eq!(flags.len(), count, "a flag declared twice");
    let compared = super::RUN_SETTINGS.iter().filter_map(|setting| setting.compared);
    let places = unique(compared.map(|(_, at)| at).collect()).expect("a compare place twice");
    assert_eq!(places, (0..places.len() as u32).collect::<Vec<_>>(), "places 0, 1, ...");
    unique(super::RUN_SETTINGS.iter().filter_map(|setting| setting.line).collect())
        .expect("a settings line place twice");
}

#[test]
fn a_cross_product_varies_its_last_list_fastest() {
    let mut at = [0, 0];
    let mut seen = vec![at];
    while advance(&mut at, &[2, 3]) {
        seen.push(at);
    }
    assert_eq!(seen, [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]);
}

#[test]
fn every_setting_range_but_revalidates_is_a_rows() {
    for range in super::super::SETTING_RANGES {
        let row = super::RUN_SETTINGS.iter().any(|setting| setting.flag == range.flag);
        assert!(row || range.flag == "revalidate", "--{}", range.flag);
    }
    assert_eq!(super::super::SETTING_RANGES.len(), 9);
}
