//! The generators of the run settings table: each takes the table's rows (all of them, or
//! the swept ones) and makes one part of every setting, naming the types of the file that
//! expands it as they are in scope there.

/// The first pass of the table: every row in one form, each optional part an explicit
/// bracket (empty where the row has none), then handed to the generator `then` names (the
/// swept rows alone, or all rows with the swept ones first, and any extra tokens after
/// `with`). A row so normalised, as every generator matches it:
///
/// ```text
/// { name flag "name" help ["help", ["long help" or nothing]]
///   swept [type, StrategyConfig's field, [Uses's field or nothing]] (empty: not swept)
///   range [min, max] meta ["meta field", place] resume [|config| value]
///   record [|config| { meta field: value, ... } or nothing] read [|meta, config| { ... } or nothing]
///   line [place, [brief or nothing], |meta, swept| part, [brief part or nothing]] }
/// ```
macro_rules! normalise {
    (
        $then:tt
        swept {$(
            $name:ident: $ty:ty {
                flag $flag:literal, strategy $strategy:ident, $(fixed by scenario $uses:ident,)?
                help $help:literal, $(long help $long:literal,)?
                $(range $min:expr => $max:expr,)?
                $(meta $meta:literal at $at:literal,)?
                resume |$config:ident| $resume:expr,
                $(record |$rconfig:ident| { $($rfield:ident: $rvalue:expr),* $(,)? },)?
                $(read |$rmeta:ident, $rinto:ident| $read:block,)?
                $(line $rank:literal $(in $brief:ident)? |$meta_:ident, $swept_:ident| $line:expr,
                    $(brief $short:expr,)?)?
            }
        )*}
        single {$(
            $sname:ident {
                flag $sflag:literal,
                help $shelp:literal, $(long help $slong:literal,)?
                $(range $smin:expr => $smax:expr,)?
                $(meta $smeta:literal at $sat:literal,)?
                resume |$sconfig:ident| $sresume:expr,
                $(record |$srconfig:ident| { $($srfield:ident: $srvalue:expr),* $(,)? },)?
                $(read |$srmeta:ident, $srinto:ident| $sread:block,)?
                $(line $srank:literal $(in $sbrief:ident)? |$smeta_:ident, $ssw:ident| $sline:expr,
                    $(brief $sshort:expr,)?)?
            }
        )*}
    ) => {
        $crate::limits::settings::generate::normalise! { @pick $then
            [$({
                $name flag $flag help [$help, [$($long)?]] swept [$ty, $strategy, [$($uses)?]]
                range [$($min, $max)?] meta [$($meta, $at)?] resume [|$config| $resume]
                record [$(|$rconfig| { $($rfield: $rvalue),* })?]
                read [$(|$rmeta, $rinto| $read)?]
                line [$($rank, [$($brief)?], |$meta_, $swept_| $line, [$($short)?])?]
            })*]
            [$({
                $sname flag $sflag help [$shelp, [$($slong)?]] swept []
                range [$($smin, $smax)?] meta [$($smeta, $sat)?] resume [|$sconfig| $sresume]
                record [$(|$srconfig| { $($srfield: $srvalue),* })?]
                read [$(|$srmeta, $srinto| $sread)?]
                line [$($srank, [$($sbrief)?], |$smeta_, $ssw| $sline, [$($sshort)?])?]
            })*]
        }
    };
    (@pick (swept $generate:ident) [$($swept:tt)*] [$($single:tt)*]) => {
        $generate! { $($swept)* }
    };
    (@pick (all $generate:ident) [$($swept:tt)*] [$($single:tt)*]) => {
        $generate! { $($swept)* $($single)* }
    };
    (@pick (all $generate:ident ($($extra:tt)*)) [$($swept:tt)*] [$($single:tt)*]) => {
        $generate! { $($swept)* $($single)* with $($extra)* }
    };
}
pub(crate) use normalise;

/// `Some` of the tokens given, or `None` without any.
macro_rules! option {
    () => {
        None
    };
    ($($value:tt)+) => {
        Some($($value)+)
    };
}
pub(crate) use option;

/// Whether any token is given (`brief` of `in brief`, a swept row's type).
macro_rules! given {
    () => {
        false
    };
    ($($word:tt)+) => {
        true
    };
}
pub(crate) use given;

/// The settings line's part of a row: its brief part where `brief` asks for it and the row
/// has one, else its part.
macro_rules! line_part {
    ($brief:ident, $line:expr) => {
        $line
    };
    ($brief:ident, $line:expr, $short:expr) => {
        if $brief {
            $short
        } else {
            $line
        }
    };
}
pub(crate) use line_part;

/// How many values of a swept list a scenario takes: all, or the first alone where the
/// scenario may fix the setting itself and `uses` says it does.
macro_rules! taken {
    ($uses:ident, $list:expr) => {
        $list.len()
    };
    ($uses:ident, $list:expr, $field:ident) => {
        if $uses.$field {
            $list.len()
        } else {
            1
        }
    };
}
pub(crate) use taken;

/// `RUN_SETTINGS`: every row's flag, help, `meta` field and places.
macro_rules! setting_descriptors {
    ($({
        $name:ident flag $flag:literal help [$help:literal, [$($long:literal)?]]
        swept [$($swept:tt)*] range $range:tt meta [$($meta:literal, $at:literal)?]
        resume $resume:tt record $record:tt read $read:tt line [$($rank:literal, $($line:tt)*)?]
    })*) => {
        /// Every run setting of the table, the swept ones first.
        pub const RUN_SETTINGS: &[RunSetting] = &[
            $(RunSetting {
                flag: $flag,
                help: $help,
                long_help: $crate::limits::settings::generate::option!($($long)?),
                compared: $crate::limits::settings::generate::option!($(($meta, $at))?),
                swept: $crate::limits::settings::generate::given!($($swept)*),
                line: $crate::limits::settings::generate::option!($($rank)?),
            },)*
        ];
    };
}

pub(crate) use setting_descriptors;

/// `Flags` and `FLAGS`: each row's flag of `keyed-bench run`, its name and help, by the row's
/// name, as the clap fields of `run` take them. Needs `Flag` in scope.
macro_rules! flag_constants {
    ($({
        $name:ident flag $flag:literal help [$help:literal, [$($long:literal)?]]
        swept $swept:tt range $range:tt meta $meta:tt resume $resume:tt record $record:tt read $read:tt line $line:tt
    })*) => {
        /// The flag of each run setting, a field by the row's name.
        #[derive(Clone, Copy, Debug)]
        pub struct Flags {
            $(#[doc = concat!("`--", $flag, "`.")] pub $name: Flag,)*
        }

        /// The flag of each run setting: `#[arg(long = FLAGS.workers.name, help =
        /// FLAGS.workers.help, long_help = FLAGS.workers.long_help)]`.
        pub const FLAGS: Flags = Flags {
            $($name: Flag {
                name: $flag,
                help: $help,
                long_help: $crate::limits::settings::generate::option!($($long)?),
            },)*
        };
    };
}
pub(crate) use flag_constants;

/// `Sweep` (the list-valued settings of a run), `Point` (one value of each), `Uses` (which
/// of them a scenario takes), with the points and labels of a sweep. Needs in scope:
/// `StrategyConfig`, serde's derives and `DEFAULT_MAX_CELLS`.
macro_rules! sweep_types {
    ($({
        $name:ident flag $flag:literal help $help:tt swept [$ty:ty, $strategy:ident, [$($uses:ident)?]]
        range $range:tt meta $meta:tt resume $resume:tt record $record:tt read $read:tt line $line:tt
    })*) => {
        /// The list-valued strategy settings of a run (`meta.sweep`).
        #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
        pub struct Sweep {
            $(#[doc = concat!("`--", $flag, "`.")] pub $name: Vec<$ty>,)*
            /// Whether `--window` was given: a scenario's own window then gives way to it.
            pub window_given: bool,
            /// The most cells the run may have (`--max-cells`).
            pub max_cells: usize,
        }

        /// One point of a sweep: the settings a cell ran with.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
        pub struct Point {
            $(#[doc = concat!("`--", $flag, "`'s value.")] pub $name: $ty,)*
        }

        /// What a scenario takes from the strategy settings.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct Uses {
            $($(
                #[doc = concat!(
                    "Whether `--", $flag, "` sets its value (not where the scenario fixes its own)."
                )]
                pub $uses: bool,
            )?)*
        }

        impl Uses {
            /// A scenario that takes every setting: the whole cross product.
            pub const ALL: Self = Self { $($($uses: true,)?)* };
        }

        impl Sweep {
            /// The sweep of one point: `strategy`'s settings.
            pub fn single(strategy: &StrategyConfig) -> Self {
                Self {
                    $($name: vec![strategy.$strategy],)*
                    window_given: false,
                    max_cells: DEFAULT_MAX_CELLS,
                }
            }

            /// Whether any setting has more than one value.
            pub fn is_sweep(&self) -> bool {
                self.swept().next().is_some()
            }

            /// The settings with more than one value, by flag.
            pub fn swept(&self) -> impl Iterator<Item = &'static str> + '_ {
                [$(($flag, self.$name.len()),)*]
                    .into_iter()
                    .filter(|(_, values)| *values > 1)
                    .map(|(flag, _)| flag)
            }

            /// The first point of the sweep, each setting's first value (the run's own
            /// settings, as `meta` records them); `None` where a list is empty.
            pub fn first_point(&self) -> Option<Point> {
                Some(Point { $($name: *self.$name.first()?,)* })
            }

            /// The points a scenario that `uses` the settings so runs, in order (the first
            /// setting slowest, the last fastest): a setting it does not take keeps its
            /// first value, so that it is not run twice alike.
            pub fn points(&self, uses: Uses) -> Vec<Point> {
                let lengths = [$($crate::limits::settings::generate::taken!(uses, self.$name $(, $uses)?),)*];
                let mut at = vec![0; lengths.len()];
                let mut points = Vec::new();
                if lengths.contains(&0) {
                    return points;
                }
                loop {
                    let mut index = at.iter().copied();
                    points.push(Point {
                        $($name: self.$name[index.next().unwrap_or_default()],)*
                    });
                    if !$crate::limits::settings::generate::advance(&mut at, &lengths) {
                        return points;
                    }
                }
            }

            /// The label of `point` in a scenario that `uses` the settings so: `name=value`
            /// of each swept setting it takes, space-separated; empty outside a sweep.
            pub fn label(&self, point: &Point, uses: Uses) -> String {
                let mut parts = Vec::new();
                $(
                    let taken = $crate::limits::settings::generate::taken!(uses, self.$name $(, $uses)?);
                    if taken > 1 {
                        parts.push(format!("{}={}", $flag, point.$name));
                    }
                )*
                parts.join(" ")
            }
        }

        impl Point {
            /// `strategy` with this point's settings.
            pub fn apply(&self, strategy: StrategyConfig) -> StrategyConfig {
                StrategyConfig { $($strategy: self.$name,)* ..strategy }
            }

            /// Each swept setting's label name and value, in the sweep's order, as a label
            /// names them (`workers` and `4` for `workers=4`).
            pub fn values(&self) -> Vec<(&'static str, String)> {
                vec![$(($flag, self.$name.to_string()),)*]
            }
        }
    };
}
pub(crate) use sweep_types;

/// Moves `at` to the next point of a cross product of lists of `lengths` (the last varying
/// fastest); false after the last point.
pub fn advance(at: &mut [usize], lengths: &[usize]) -> bool {
    for place in (0..at.len()).rev() {
        at[place] += 1;
        if at[place] < lengths[place] {
            return true;
        }
        at[place] = 0;
    }
    false
}

/// `CellSettings` (what `runs[].settings` and `pipelines[].settings` record) and
/// `SWEEP_SETTINGS` (the names of a sweep label). Needs serde's derives in scope.
macro_rules! cell_settings_type {
    ($({
        $name:ident flag $flag:literal help $help:tt swept [$ty:ty, $strategy:ident, $uses:tt]
        range $range:tt meta $meta:tt resume $resume:tt record $record:tt read $read:tt line $line:tt
    })*) => {
        /// The settings a sweep varies, as their labels name them (`workers=4 throughput=16`).
        pub const SWEEP_SETTINGS: &[&str] = &[$($flag,)*];

        /// The settings a cell ran with, as `runs[].settings` and `pipelines[].settings`
        /// record them.
        #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
        pub struct CellSettings {
            $(
                #[doc = concat!("`--", $flag, "` (the scenario's own where it fixes its own).")]
                pub $name: $ty,
            )*
            /// The point's label within the sweep, the end of the cell's param (`workers=4`);
            /// empty outside a sweep.
            pub sweep: String,
        }

        impl CellSettings {
            /// Each swept setting's label name and value, in the sweep's order.
            pub fn values(&self) -> Vec<(&'static str, String)> {
                vec![$(($flag, self.$name.to_string()),)*]
            }
        }
    };
}
pub(crate) use cell_settings_type;

/// `settings_fields`: `differ` of each setting a cell records, where it records them. Needs
/// `CellSettings` and `differ` in scope.
macro_rules! agree_settings {
    ($({
        $name:ident flag $flag:literal help $help:tt swept $swept:tt range $range:tt meta $meta:tt
        resume $resume:tt record $record:tt read $read:tt line $line:tt
    })*) => {
        /// `differ` of each setting a cell records, where it records them.
        fn settings_fields(
            whys: &mut Vec<String>,
            recorded: Option<&CellSettings>,
            planned: &CellSettings,
        ) {
            let Some(recorded) = recorded else { return };
            $(differ(
                whys,
                concat!("settings.", stringify!($name)),
                recorded.$name,
                planned.$name,
            );)*
            differ(whys, "settings.sweep", &recorded.sweep, &planned.sweep);
        }
    };
}
pub(crate) use agree_settings;

/// `Meta::settings_line` and `Meta::brief_settings`. Needs `Meta`, `SweptSettings` and what
/// the rows' parts name in scope.
macro_rules! settings_lines {
    ($({
        $name:ident flag $flag:literal help $help:tt swept $swept:tt range $range:tt meta $meta:tt resume $resume:tt record $record:tt read $read:tt line [$(
            $rank:literal, [$($brief:ident)?], |$meta_:ident, $swept_:ident| $line:expr,
            [$($short:expr)?]
        )?]
    })*) => {
        impl Meta {
            /// The run's settings as the summary's settings line states them, comma-separated
            /// (a swept setting as the list of its values, `swept`'s).
            pub fn settings_line(&self, swept: &SweptSettings) -> String {
                self.settings_parts(swept, false)
            }

            /// The settings line's brief form, as the report's header states it.
            pub fn brief_settings(&self, swept: &SweptSettings) -> String {
                self.settings_parts(swept, true)
            }

            /// The settings line's parts (those marked `in brief` alone where `brief`), in
            /// their order.
            fn settings_parts(&self, swept: &SweptSettings, brief: bool) -> String {
                let mut parts: Vec<(u32, Option<String>)> = Vec::new();
                $($(
                    if !brief || $crate::limits::settings::generate::given!($($brief)?) {
                        let ($meta_, $swept_) = (self, swept);
                        let part = $crate::limits::settings::generate::line_part!(brief, $line $(, $short)?);
                        parts.push(($rank, part));
                    }
                )?)*
                parts.sort_by_key(|(rank, _)| *rank);
                let parts: Vec<String> = parts.into_iter().filter_map(|(_, part)| part).collect();
                parts.join(", ")
            }
        }
    };
}
pub(crate) use settings_lines;

/// `SETTINGS`: each setting's flag, and its value in a `RunConfig` as `run --resume`
/// compares and shows it. Needs `RunConfig` and what the rows' values name in scope.
macro_rules! resume_values {
    ($({
        $name:ident flag $flag:literal help $help:tt swept $swept:tt range $range:tt meta $meta:tt
        resume [|$config:ident| $resume:expr] record $record:tt read $read:tt line $line:tt
    })*) => {
        /// Each run setting's flag, and its value in a config as a resumed run compares and
        /// shows it.
        const SETTINGS: &[(&str, fn(&RunConfig) -> String)] = &[
            $(($flag, |$config: &RunConfig| $resume),)*
        ];
    };
}
pub(crate) use resume_values;

/// `SETTING_RANGES`: the range of each ranged setting of the table, then the ranges given
/// after it (of flags the table does not hold). Needs `FlagRange` and what the ranges name
/// in scope.
macro_rules! setting_ranges {
    ($({
        $name:ident flag $flag:literal help $help:tt swept $swept:tt range [$($min:expr, $max:expr)?]
        meta $meta:tt resume $resume:tt record $record:tt read $read:tt line $line:tt
    })* with $($extra:expr),* $(,)?) => {
        /// The numeric flags of `keyed-bench run` that are not workload sizes: the ranged
        /// run settings of the table, then the others.
        pub const SETTING_RANGES: &[FlagRange] = &[
            $($(FlagRange::int($flag, $min, $max),)?)*
            $($extra,)*
        ];
    };
}
pub(crate) use setting_ranges;

/// The `Meta` a run writes: the fields given after `with` (`config`, the run's config, then
/// the fields no row records, in braces), and each row's `record` fields. An expression;
/// needs `Meta` and what the rows' values name in scope. A field of `Meta` that neither
/// gives is a compile error.
macro_rules! meta_record {
    ($({
        $name:ident flag $flag:literal help $help:tt swept $swept:tt range $range:tt meta $meta:tt
        resume $resume:tt record [$(|$config:ident| { $($field:ident: $value:expr),* })?]
        read $read:tt line $line:tt
    })* with $given:ident, { $($fixed:tt)* }) => {
        Meta {
            $($fixed)*
            $($($($field: {
                let $config = $given;
                $value
            },)*)?)*
        }
    };
}
pub(crate) use meta_record;

/// `read_settings`: each row's `read`, which sets its part of a `RunConfig` from what a
/// results file's `meta` recorded (a file from before the setting was recorded gets its
/// default). Needs `Meta`, `RunConfig`, `RecordedError` and what the rows name in scope.
macro_rules! read_recorded {
    ($({
        $name:ident flag $flag:literal help $help:tt swept $swept:tt range $range:tt meta $meta:tt
        resume $resume:tt record $record:tt read [$(|$meta_:ident, $into:ident| $read:block)?]
        line $line:tt
    })*) => {
        /// Sets in `config` every setting `meta` records, by its row's `read`.
        fn read_settings(meta: &Meta, config: &mut RunConfig) -> Result<(), RecordedError> {
            $($({
                let ($meta_, $into) = (meta, &mut *config);
                $read
            })?)*
            Ok(())
        }
    };
}
pub(crate) use read_recorded;
