//! The metrics: every figure of a cell that the verdict ranks on, `compare` judges or a gate
//! rule names, each declared once.
//!
//! One row of the `metrics!` list below names a metric and its [`MetricSpec`], which holds
//! everything said of it: its name (`compare --metric`, a gate rule's `metric`), its label
//! (the verdict's metric column and reading), which way is better, its unit (what a value
//! counts, and so how it prints: `report::format::format_value`), whether it moves with the
//! machine's speed, and how a cell's value, its repetitions' values and their spread are
//! read from a [`RunResult`] (and from a [`PipelineRun`], where a pipeline cell has it).
//!
//! A scenario's spec names the metric its verdict ranks on; `compare` judges the metrics
//! `--metric` names; a gate rule's metric is one of these by name, or else a results field
//! by dotted path. Adding a metric is a row and a spec here, and a line in
//! `docs/results.md` (`tests/docs.rs` checks it).

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};
use strategies::StrategyId;

use super::{CellKey, PipelineRun, RunResult};

/// Which way a metric improves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// A larger value is better (a rate, an efficiency).
    Higher,
    /// A smaller value is better (a time, a count of faults).
    Lower,
}

/// What a metric's values count, which decides how one prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Messages per second: `12.3k msg/s`.
    MessagesPerSecond,
    /// Things per second that the metric's label names (cold commands): `12.3k/s`.
    PerSecond,
    /// Seconds, printed in the unit that reads best: `1.5 ms`.
    Seconds,
    /// Nanoseconds, likewise: `35.1 us`.
    Nanoseconds,
    /// A ratio of two figures: `0.87`.
    Ratio,
    /// A count: `3`.
    Count,
}

/// How a metric reads a cell's lowest and highest value over its repetitions.
type SpreadOf = fn(&RunResult) -> Option<(f64, f64)>;

/// Everything a metric says of itself.
#[derive(Debug)]
pub struct MetricSpec {
    /// The name `compare --metric` and a gate rule's `metric` take.
    pub name: &'static str,
    /// How the verdict names it in its metric column and its reading.
    pub label: &'static str,
    /// The header of a report table's column of it: short, and naming the unit where a
    /// cell leaves it out (`report::format::format_figure`).
    pub header: &'static str,
    /// Which way is better.
    pub better: Better,
    /// What a value counts.
    pub unit: Unit,
    /// Whether a value moves with the machine's speed and load, not only with what the
    /// strategy did: a gate measures a failing rule on such a metric again before failing.
    pub timed: bool,
    /// The strategy whose run of the same cell the value is relative to, if any: a gate's
    /// confirmation measures it again beside the cell.
    pub relative_to: Option<StrategyId>,
    /// The cell's value, given the runs of its results (where a relative metric finds its
    /// other cell); none where the metric does not apply to the cell.
    value: fn(&RunResult, &[RunResult]) -> Option<f64>,
    /// Each timed repetition's value, in the order they ran; empty where not recorded.
    samples: fn(&RunResult) -> Vec<f64>,
    /// The lowest and highest value over the repetitions, where the samples do not say it
    /// (none: the samples' range, if any).
    spread: Option<SpreadOf>,
    /// A pipeline cell's value, where pipeline cells have the metric.
    pipeline: Option<fn(&PipelineRun) -> f64>,
}

macro_rules! metrics {
    ($($variant:ident => $spec:ident;)*) => {
        /// Every metric, by the name `compare --metric` and a gate rule take; its
        /// [`MetricSpec`] says the rest.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Metric {
            $(#[doc = concat!("[`", stringify!($spec), "`].")] $variant,)*
        }

        impl Metric {
            /// Every metric, in the order errors and docs list them.
            pub const ALL: &'static [Metric] = &[$(Metric::$variant,)*];

            /// Everything it says of itself.
            pub const fn spec(self) -> &'static MetricSpec {
                match self { $(Metric::$variant => &$spec,)* }
            }
        }
    };
}

metrics! {
    Throughput => THROUGHPUT;
    ColdRate => COLD_RATE;
    Elapsed => ELAPSED;
    P99 => P99;
    BystanderP99 => BYSTANDER_P99;
    Efficiency => EFFICIENCY;
    CpuPerMessage => CPU_PER_MESSAGE;
    Correctness => CORRECTNESS;
    Violations => VIOLATIONS;
    ThroughputVsInline => THROUGHPUT_VS_INLINE;
    FloorRatio => FLOOR_RATIO;
    IsolationVsBound => ISOLATION_VS_BOUND;
    IsolationMedianVsBound => ISOLATION_MEDIAN_VS_BOUND;
}

/// Completed messages per second, over the repetitions.
const THROUGHPUT: MetricSpec = MetricSpec {
    name: "throughput",
    label: "throughput",
    header: "throughput msg/s",
    better: Better::Higher,
    unit: Unit::MessagesPerSecond,
    timed: true,
    relative_to: None,
    value: |run, _| Some(run.throughput_per_s.median),
    samples: |run| run.samples.as_ref().map_or_else(Vec::new, |s| s.throughput_per_s.clone()),
    spread: Some(recorded_spread),
    pipeline: Some(|run| run.throughput_per_s),
};

/// A completion-driven cell's throughput: the cold commands its senders had handled, per
/// second.
const COLD_RATE: MetricSpec = MetricSpec {
    name: "cold_rate",
    label: "cold-command rate",
    header: "cold commands/s",
    unit: Unit::PerSecond,
    pipeline: None,
    ..THROUGHPUT
};

/// Seconds from the first submit to the end of the drain, the median repetition.
const ELAPSED: MetricSpec = MetricSpec {
    name: "elapsed",
    label: "elapsed",
    header: "elapsed",
    better: Better::Lower,
    unit: Unit::Seconds,
    timed: true,
    relative_to: None,
    value: |run, _| Some(run.elapsed_s),
    samples: |run| run.samples.as_ref().map_or_else(Vec::new, |s| s.elapsed_s.clone()),
    spread: None,
    pipeline: Some(|run| run.elapsed_s),
};

/// The 99th-percentile latency of all repetitions merged; each repetition's own p99 for
/// its samples.
const P99: MetricSpec = MetricSpec {
    name: "p99",
    label: "p99 latency",
    header: "p99",
    better: Better::Lower,
    unit: Unit::Nanoseconds,
    timed: true,
    relative_to: None,
    value: |run, _| Some(run.latency_ns.p99 as f64),
    samples: |run| {
        let samples = run.samples.as_ref();
        samples.map_or_else(Vec::new, |s| s.latency_p99_ns.iter().map(|&ns| ns as f64).collect())
    },
    spread: None,
    pipeline: None,
};

/// The 99th-percentile latency of the keys that are not troubled (one merged histogram;
/// each repetition's own as its samples); none where no key is troubled.
const BYSTANDER_P99: MetricSpec = MetricSpec {
    name: "bystander_p99",
    label: "bystander p99",
    header: "bystander p99",
    value: |run, _| run.bystander_latency_ns.map(|tail| tail.p99 as f64),
    samples: |run| {
        let samples = run.samples.as_ref();
        samples.map_or_else(Vec::new, |s| s.bystander_p99_ns.iter().map(|&ns| ns as f64).collect())
    },
    ..P99
};

/// The ideal bound over the elapsed time; each repetition's from its own elapsed time.
const EFFICIENCY: MetricSpec = MetricSpec {
    name: "efficiency",
    label: "efficiency",
    header: "efficiency",
    better: Better::Higher,
    unit: Unit::Ratio,
    timed: true,
    relative_to: None,
    value: |run, _| Some(run.efficiency),
    samples: efficiency_samples,
    spread: Some(efficiency_spread),
    pipeline: None,
};

/// Process CPU time per message (every thread); each repetition's from its own CPU time.
/// A design that buys throughput or latency by spinning cores pays here.
const CPU_PER_MESSAGE: MetricSpec = MetricSpec {
    name: "cpu_per_message",
    label: "CPU per message",
    header: "CPU/msg",
    better: Better::Lower,
    unit: Unit::Nanoseconds,
    timed: true,
    relative_to: None,
    value: |run, _| run.cpu_per_message_ns.map(|cpu| cpu.process),
    samples: |run| {
        let messages = run.messages.max(1) as f64;
        let samples = run.samples.as_ref();
        samples.map_or_else(Vec::new, |s| s.cpu_s.iter().map(|s| s * 1e9 / messages).collect())
    },
    spread: None,
    pipeline: None,
};

/// Every correctness count summed: order violations, overlaps, lost, duplicates, failed.
const CORRECTNESS: MetricSpec = MetricSpec {
    name: "correctness",
    label: "correctness faults",
    header: "faults",
    better: Better::Lower,
    unit: Unit::Count,
    timed: false,
    relative_to: None,
    value: |run, _| {
        let c = &run.correctness;
        Some((c.order_violations + c.overlaps + c.lost + c.duplicates + c.failed) as f64)
    },
    samples: |_| Vec::new(),
    spread: None,
    pipeline: None,
};

/// Order violations and overlaps: the faults of ordering alone.
const VIOLATIONS: MetricSpec = MetricSpec {
    name: "violations",
    label: "order violations and overlaps",
    header: "violations",
    value: |run, _| Some((run.correctness.order_violations + run.correctness.overlaps) as f64),
    ..CORRECTNESS
};

/// The median throughput over `inline`'s in the same cell: the reference's speed on the
/// same machine divides out.
const THROUGHPUT_VS_INLINE: MetricSpec = MetricSpec {
    name: "throughput_vs_inline",
    label: "throughput over inline's",
    header: "vs inline",
    better: Better::Higher,
    unit: Unit::Ratio,
    timed: true,
    relative_to: Some(StrategyId::Inline),
    value: |run, runs| {
        let inline = CellKey::of_run(run).on(StrategyId::Inline.as_str()).find(runs)?;
        Some(run.throughput_per_s.median / inline.throughput_per_s.median)
    },
    samples: |_| Vec::new(),
    spread: None,
    pipeline: None,
};

/// The elapsed time over the floor the run's own service times allowed (where handlers do
/// not wait): how far above it the strategy took.
const FLOOR_RATIO: MetricSpec = MetricSpec {
    name: "floor_ratio",
    label: "elapsed over the measured floor",
    header: "vs floor",
    better: Better::Lower,
    relative_to: None,
    value: |run, _| {
        run.measured_floor_s.filter(|floor| *floor > 0.0).map(|floor| run.elapsed_s / floor)
    },
    ..THROUGHPUT_VS_INLINE
};

/// An isolation stressor's bystanders' p99 over its unstressed twin's (`isolation[]`),
/// divided by the bound the scenario states: at most 1 meets the bound. Read from the
/// stressed cell and its twin, so no repetition has a value of its own.
const ISOLATION_VS_BOUND: MetricSpec = MetricSpec {
    name: "isolation_vs_bound",
    label: "bystanders' p99 over the unstressed twin's, over the bound",
    header: "p99 ratio / bound",
    better: Better::Lower,
    unit: Unit::Ratio,
    timed: true,
    relative_to: None,
    value: |run, runs| {
        let cell = super::isolation::of_cell(run, runs)?;
        cell.ratio.map(|ratio| ratio / cell.bound)
    },
    samples: |_| Vec::new(),
    spread: None,
    pipeline: None,
};

/// [`ISOLATION_VS_BOUND`] on the bystanders' median instead of their p99
/// (`isolation[].median_ratio`): what a short cell's scheduler stalls move far less.
const ISOLATION_MEDIAN_VS_BOUND: MetricSpec = MetricSpec {
    name: "isolation_median_vs_bound",
    label: "bystanders' median over the unstressed twin's, over the bound",
    header: "median ratio / bound",
    value: |run, runs| {
        let cell = super::isolation::of_cell(run, runs)?;
        cell.median_ratio.map(|ratio| ratio / cell.bound)
    },
    ..ISOLATION_VS_BOUND
};

/// The repetitions' lowest and highest throughput, as recorded (older files have no
/// samples).
fn recorded_spread(run: &RunResult) -> Option<(f64, f64)> {
    Some((run.throughput_per_s.min, run.throughput_per_s.max))
}

/// Each repetition's efficiency, from its elapsed time; none where one is not positive.
fn efficiency_samples(run: &RunResult) -> Vec<f64> {
    let elapsed = run.samples.as_ref().map_or(&[][..], |samples| &samples.elapsed_s[..]);
    if elapsed.iter().all(|elapsed| *elapsed > 0.0) {
        elapsed.iter().map(|elapsed| run.ideal_s / elapsed).collect()
    } else {
        Vec::new()
    }
}

/// The samples' range, or without samples the throughput's scaled onto the efficiency
/// (the same messages and the same ideal bound).
fn efficiency_spread(run: &RunResult) -> Option<(f64, f64)> {
    range(&efficiency_samples(run)).or_else(|| {
        let throughput = &run.throughput_per_s;
        (throughput.median > 0.0).then(|| {
            let scale = run.efficiency / throughput.median;
            (throughput.min * scale, throughput.max * scale)
        })
    })
}

/// The lowest and highest of `values`; none where there are none.
fn range(values: &[f64]) -> Option<(f64, f64)> {
    let low = values.iter().copied().reduce(f64::min)?;
    let high = values.iter().copied().reduce(f64::max)?;
    Some((low, high))
}

impl Metric {
    /// The name `compare --metric` and a gate rule's `metric` take.
    pub const fn name(self) -> &'static str {
        self.spec().name
    }

    /// How the verdict names it.
    pub const fn label(self) -> &'static str {
        self.spec().label
    }

    /// The header of a report table's column of it.
    pub const fn header(self) -> &'static str {
        self.spec().header
    }

    /// Whether a larger value is better.
    pub fn higher_is_better(self) -> bool {
        self.spec().better == Better::Higher
    }

    /// What a value counts.
    pub const fn unit(self) -> Unit {
        self.spec().unit
    }

    /// Whether a value moves with the machine's speed ([`MetricSpec::timed`]).
    pub const fn timed(self) -> bool {
        self.spec().timed
    }

    /// The strategy whose run of the same cell the value is relative to, if any.
    pub const fn relative_to(self) -> Option<StrategyId> {
        self.spec().relative_to
    }

    /// The value of `run`, whose results hold `runs` (a relative metric's other cell is
    /// found there); none where it does not apply or is not a finite number.
    pub fn value(self, run: &RunResult, runs: &[RunResult]) -> Option<f64> {
        (self.spec().value)(run, runs).filter(|value| value.is_finite())
    }

    /// Each timed repetition's value, in the order they ran; empty where not recorded.
    pub fn samples(self, run: &RunResult) -> Vec<f64> {
        (self.spec().samples)(run)
    }

    /// The lowest and highest value over the repetitions, where known.
    pub fn spread(self, run: &RunResult) -> Option<(f64, f64)> {
        match self.spec().spread {
            Some(spread) => spread(run),
            None => range(&self.samples(run)),
        }
    }

    /// The value of a pipeline cell, where pipeline cells have the metric.
    pub fn pipeline_value(self, run: &PipelineRun) -> Option<f64> {
        self.spec().pipeline.map(|value| value(run))
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for Metric {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// A name that names no metric.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown metric `{given}`; expected one of {}", Metric::ALL.iter().map(|metric| metric.name()).collect::<Vec<_>>().join(", "))]
pub struct UnknownMetric {
    /// What was given.
    pub given: String,
}

impl FromStr for Metric {
    type Err = UnknownMetric;

    fn from_str(given: &str) -> Result<Self, Self::Err> {
        Metric::ALL
            .iter()
            .copied()
            .find(|metric| metric.name() == given)
            .ok_or_else(|| UnknownMetric { given: given.to_owned() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Samples;

    fn reference() -> Vec<RunResult> {
        let text = include_str!("../../../results/2026-11-30-vm/results.json");
        let path = std::path::Path::new("reference.json");
        super::super::Results::parse(text.as_bytes(), path).unwrap().runs
    }

    #[test]
    fn names_are_unique_and_parse_back() {
        for (index, metric) in Metric::ALL.iter().enumerate() {
            assert_eq!(metric.name().parse::<Metric>(), Ok(*metric));
            assert!(Metric::ALL[..index].iter().all(|other| other.name() != metric.name()));
        }
        let error = "latency".parse::<Metric>().unwrap_err().to_string();
        assert!(error.starts_with("unknown metric `latency`; expected one of throughput,"));
    }

    #[test]
    fn a_value_is_read_from_its_field_and_a_relative_one_from_the_other_cell() {
        let runs = reference();
        let run = runs.iter().find(|run| run.strategy == "keyed-mailbox").unwrap();
        assert_eq!(Metric::Throughput.value(run, &[]), Some(run.throughput_per_s.median));
        assert_eq!(Metric::P99.value(run, &[]), Some(run.latency_ns.p99 as f64));
        assert_eq!(Metric::ThroughputVsInline.value(run, &[]), None, "no inline to divide by");
        let inline = CellKey::of_run(run).on("inline").find(&runs).unwrap();
        let ratio = Metric::ThroughputVsInline.value(run, &runs).unwrap();
        assert_eq!(ratio, run.throughput_per_s.median / inline.throughput_per_s.median);
        assert!(Metric::ThroughputVsInline.higher_is_better());
        assert!(!Metric::Correctness.timed() && Metric::Efficiency.timed());
    }

    #[test]
    fn a_spread_comes_from_the_samples_or_from_what_the_file_recorded() {
        let mut run = reference().remove(0);
        assert_eq!(Metric::P99.spread(&run), None, "no samples");
        let throughput = run.throughput_per_s;
        assert_eq!(Metric::Throughput.spread(&run), Some((throughput.min, throughput.max)));
        let scale = run.efficiency / throughput.median;
        let scaled = Some((throughput.min * scale, throughput.max * scale));
        assert_eq!(Metric::Efficiency.spread(&run), scaled);
        run.samples = Some(Samples {
            bystander_p99_ns: Vec::new(),
            throughput_per_s: vec![1.0, 3.0, 2.0],
            elapsed_s: vec![0.5, 0.25, 1.0],
            latency_p99_ns: vec![30, 10, 20],
            interference: Vec::new(),
            cpu_s: Vec::new(),
        });
        run.ideal_s = 0.25;
        assert_eq!(Metric::P99.spread(&run), Some((10.0, 30.0)));
        assert_eq!(Metric::Efficiency.samples(&run), [0.5, 1.0, 0.25]);
        assert_eq!(Metric::Efficiency.spread(&run), Some((0.25, 1.0)));
        run.samples.as_mut().unwrap().elapsed_s[1] = 0.0;
        assert_eq!(Metric::Efficiency.spread(&run), scaled, "an elapsed time of 0 divides nothing");
    }

    #[test]
    fn cpu_per_message_is_the_process_figure_and_each_repetitions_own() {
        let mut run = reference().remove(0);
        assert_eq!(Metric::CpuPerMessage.value(&run, &[]), None, "an older file has none");
        run.cpu_per_message_ns = Some(crate::results::CpuPerMessage {
            process: 750.0,
            off_producer: 500.0,
            strategy_threads: None,
        });
        run.messages = 1_000;
        run.samples = Some(Samples {
            bystander_p99_ns: Vec::new(),
            throughput_per_s: vec![1.0, 2.0],
            elapsed_s: vec![1.0, 0.5],
            latency_p99_ns: vec![1, 1],
            interference: Vec::new(),
            cpu_s: vec![0.5e-3, 1e-3],
        });
        assert_eq!(Metric::CpuPerMessage.value(&run, &[]), Some(750.0));
        assert_eq!(Metric::CpuPerMessage.samples(&run), [500.0, 1_000.0]);
        assert!(!Metric::CpuPerMessage.higher_is_better() && Metric::CpuPerMessage.timed());
    }

    #[test]
    fn floor_ratio_is_elapsed_over_the_measured_floor_and_none_without_one() {
        let mut run = reference().remove(0);
        run.measured_floor_s = None;
        assert_eq!(Metric::FloorRatio.value(&run, &[]), None);
        run.measured_floor_s = Some(0.5);
        run.elapsed_s = 0.6;
        let ratio = Metric::FloorRatio.value(&run, &[]).unwrap();
        assert!((ratio - 1.2).abs() < 1e-12, "{ratio}");
        run.measured_floor_s = Some(0.0);
        assert_eq!(Metric::FloorRatio.value(&run, &[]), None);
    }
}
