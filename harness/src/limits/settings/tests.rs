use super::generate::advance;
use super::RunSetting;

/// A table of three settings, one of them (`pause-us`, swept) a setting the real table does
/// not have, given to every generator as the real table is: declared once, it shows up
/// in every generated place.
macro_rules! extra_table {
    (swept => $generate:ident) => {
        extra_table!(@rows (swept $generate));
    };
    (all => $generate:ident) => {
        extra_table!(@rows (all $generate));
    };
    (@rows $then:tt) => {
        $crate::limits::settings::generate::normalise! { $then
            swept {
                workers: usize {
                    flag "workers", strategy workers, fixed by scenario workers,
                    meta "workers" at 0,
                    resume |config| list(&config.sweep.workers),
                    line 0 in brief |meta, swept|
                        Some(format!("workers {}", swept.show("workers", meta.workers))),
                }
                pause_us: u32 {
                    flag "pause-us", strategy pause_us,
                    meta "pause_us" at 2,
                    resume |config| list(&config.sweep.pause_us),
                    line 1 |meta, swept|
                        Some(format!("pause {} us", swept.show("pause-us", meta.pause_us))),
                }
            }
            single {
                seed {
                    flag "seed",
                    meta "seed" at 1,
                    resume |config| config.seed.to_string(),
                    line 2 in brief |meta, _swept| Some(format!("seed {}", meta.seed)),
                }
            }
        }
    };
}

/// What the generated code names, as the files that expand the real table have them.
#[allow(dead_code)]
mod generated {
    use std::fmt::Display;

    use serde::{Deserialize, Serialize};

    use super::super::setting_descriptors;
    use super::RunSetting;
    use crate::limits::settings::{
        agree_settings, cell_settings_type, resume_values, settings_lines, sweep_types,
    };

    pub const DEFAULT_MAX_CELLS: usize = 10;

    #[derive(Clone, Copy, Debug, Default, PartialEq)]
    pub struct StrategyConfig {
        pub workers: usize,
        pub pause_us: u32,
        pub other: u8,
    }

    pub struct Meta {
        pub workers: usize,
        pub pause_us: u32,
        pub seed: u64,
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

    pub struct RunConfig {
        pub sweep: Sweep,
        pub seed: u64,
    }

    fn list<T: Display>(items: &[T]) -> String {
        items.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
    }

    fn differ<T: PartialEq + Display>(
        whys: &mut Vec<String>,
        field: &str,
        recorded: T,
        planned: T,
    ) {
        if recorded != planned {
            whys.push(format!("{field} is {recorded}, but the recorded settings give {planned}"));
        }
    }

    extra_table!(all => setting_descriptors);
    extra_table!(swept => sweep_types);
    extra_table!(swept => cell_settings_type);
    extra_table!(swept => agree_settings);
    extra_table!(all => settings_lines);
    extra_table!(all => resume_values);

    pub fn agree(recorded: &CellSettings, planned: &CellSettings) -> Vec<String> {
        let mut whys = Vec::new();
        settings_fields(&mut whys, Some(recorded), planned);
        whys
    }

    pub fn resume(flag: &str, config: &RunConfig) -> Option<String> {
        SETTINGS.iter().find(|(name, _)| *name == flag).map(|(_, value)| value(config))
    }
}

use generated::*;

#[test]
fn a_setting_declared_once_is_in_every_generated_place() {
    // Its flag and the meta field compare lists, in its place.
    let pause = RUN_SETTINGS.iter().find(|setting| setting.flag == "pause-us").unwrap();
    assert_eq!(pause.compared, Some(("pause_us", 2)));
    assert!(pause.swept);
    // A sweep of it: points, labels, the strategy settings of a point.
    let sweep = Sweep {
        workers: vec![1, 2],
        pause_us: vec![0, 5],
        window_given: false,
        max_cells: DEFAULT_MAX_CELLS,
    };
    assert_eq!(sweep.swept().collect::<Vec<_>>(), ["workers", "pause-us"]);
    let points = sweep.points(Uses::ALL);
    assert_eq!(points.len(), 4);
    assert_eq!(points[1], Point { workers: 1, pause_us: 5 });
    assert_eq!(sweep.label(&points[1], Uses::ALL), "workers=1 pause-us=5");
    let own_workers = Uses { workers: false };
    assert_eq!(sweep.points(own_workers).len(), 2, "a scenario's own workers are not swept");
    assert_eq!(sweep.label(&points[1], own_workers), "pause-us=5");
    let strategy = points[1].apply(StrategyConfig { other: 7, ..StrategyConfig::default() });
    assert_eq!(strategy, StrategyConfig { workers: 1, pause_us: 5, other: 7 });
    assert_eq!(Sweep::single(&strategy).pause_us, [5]);
    // A cell's recorded settings, its label's names, and the agreement check.
    assert_eq!(SWEEP_SETTINGS, ["workers", "pause-us"]);
    let planned = CellSettings { workers: 1, pause_us: 0, sweep: String::new() };
    let recorded = CellSettings { pause_us: 5, ..planned.clone() };
    assert_eq!(recorded.values(), [("workers", "1".to_owned()), ("pause-us", "5".to_owned())]);
    assert_eq!(
        agree(&recorded, &planned),
        ["settings.pause_us is 5, but the recorded settings give 0"]
    );
    // The value a resumed run compares.
    let config = |pause_us| RunConfig { sweep: Sweep { pause_us, ..sweep.clone() }, seed: 1 };
    assert_eq!(resume("pause-us", &config(vec![0, 5])).as_deref(), Some("0,5"));
    assert_ne!(resume("pause-us", &config(vec![0])), resume("pause-us", &config(vec![0, 5])));
    assert_eq!(resume("window", &config(vec![0])), None);
    // The settings line, in its places, and its brief form without it.
    let meta = Meta { workers: 2, pause_us: 5, seed: 42 };
    let swept = SweptSettings(vec![("pause-us", vec!["0".into(), "5".into()])]);
    assert_eq!(meta.settings_line(&swept), "workers 2, pause [0, 5] us, seed 42");
    assert_eq!(meta.brief_settings(&swept), "workers 2, seed 42");
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
