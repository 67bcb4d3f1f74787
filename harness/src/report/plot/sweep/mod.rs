//! The charts of a sweep: one setting on the x axis, the cells that differ only in it
//! joined into one line per strategy.
//!
//! - `sweep-workers-<scenario>`: throughput and p99 latency against `--workers`, with
//!   the ideal of linear scaling and the oversubscribed counts shaded;
//! - `sweep-throughput-<scenario>`: throughput and the bystanders' p99 (zipf: the keys
//!   outside the top 1%) against `--throughput`, the messages a mailbox runs per turn;
//! - `sweep-window-<scenario>`: throughput beside the ideal rate, and peak memory, against
//!   the admission window;
//! - `sweep-keys-<scenario>`: throughput and p99 latency against the number of keys
//!   (`--keys` on uniform, zipf and open-loop).
//!
//! A chart is drawn only where the results hold that sweep: two or more values of the
//! setting among cells equal in everything else (scenario, param, the other settings).
//! Each other point of the sweep (`throughput=16` beside a workers sweep, `keys=20` beside
//! a window sweep) gets its own row of panels, so that every panel compares strategies at
//! one point. A results file that holds no sweep draws none of them.
//!
//! The charts that show one cell per strategy (`throughput`, `head-of-line`, ...) show the
//! first point of a sweep only, through [`first_point`], and say so in their note.

mod chart;

use std::fmt::Write as _;

use super::Planned;
use crate::limits::settings::FLAGS;
use crate::report::prose::prose;
use crate::report::view::{Rows, View};
use crate::results::CellSettings;
use crate::results::{Metric, Results, RunResult};
use crate::workload::{keys_in, param_part, without_keys, Arrivals, ScenarioId};

use chart::{Figure, Ideal, Panel, SweepChart, YKind};

/// The most rows of panels (other points) a sweep chart draws; the summary's tables hold
/// the rest.
const MAX_ROWS: usize = 6;

/// The setting on a sweep chart's x axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Axis {
    /// `--workers`: worker threads per pool.
    Workers,
    /// `--throughput`: messages a mailbox runs per turn.
    Throughput,
    /// `--window`: the admission window.
    Window,
    /// `--keys`: the number of keys of the workload (the param's `keys=N`).
    Keys,
}

impl Axis {
    /// The name in chart names, and the x axis description.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            Self::Workers => (FLAGS.workers.name, "workers per pool (log)"),
            Self::Throughput => {
                (FLAGS.throughput.name, "--throughput: messages per mailbox turn (log)")
            }
            Self::Window => (FLAGS.window.name, "admission window, messages (log)"),
            Self::Keys => ("keys", "keys (log)"),
        }
    }

    /// The setting's value in `row`, where the row records it.
    fn value(self, row: &RunResult) -> Option<usize> {
        let settings = row.settings.as_ref();
        match self {
            Self::Workers => settings.map(|s| s.workers),
            Self::Throughput => settings.map(|s| s.throughput),
            Self::Window => settings.map(|s| s.window),
            Self::Keys => keys_in(row.own_param()),
        }
        .filter(|value| *value > 0)
    }

    /// What `row` holds besides this setting, where the row takes part in such a sweep.
    fn rest(self, row: &RunResult) -> Option<Rest> {
        let settings = row.settings.as_ref();
        if self != Self::Keys && settings.is_none() {
            return None;
        }
        let base = row.own_param();
        let base = if self == Self::Keys { without_keys(base) } else { base.to_owned() };
        let workers = settings.map(|s| s.workers).filter(|_| self != Self::Workers);
        // Every swept setting but this axis's, in the sweep's order.
        let (axis, _) = self.names();
        let others = settings.map(CellSettings::values).unwrap_or_default();
        let others = others.into_iter().filter(|(name, _)| *name != axis);
        let mut parts = Vec::from_iter((!base.is_empty()).then_some(("param", base)));
        parts.extend(others.map(|(name, value)| (name, format!("{name}={value}"))));
        Some(Rest { workers, parts })
    }
}

/// The value of the `name=` part of each param of `rows` that has one, with the param's
/// first row, in order of first appearance.
pub(super) fn values_of<'a>(rows: &Rows<'a>, name: &str) -> Vec<(f64, &'a RunResult)> {
    let params = rows.params().into_iter().filter_map(|param| rows.first_in(param));
    let value = |row: &RunResult| super::axis_value(param_part(row.own_param(), name)?);
    params.filter_map(|row| Some((value(row)?, row))).collect()
}

/// Everything a cell of a sweep holds besides the swept setting: cells equal in it (and in
/// scenario and strategy) lie on one line.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Rest {
    /// The other workers setting, where the sweep is not of the workers.
    workers: Option<usize>,
    /// Its parts as (name, `name=value` label), the scenario's own param first (without
    /// `keys=` on a keys sweep).
    parts: Vec<(&'static str, String)>,
}

/// One other point of a sweep: the cells of every strategy along the swept setting.
struct Point<'a> {
    rest: Rest,
    /// What tells it from the other points (`throughput=16`), empty when it is the only one.
    label: String,
    /// Its cells, in file order.
    rows: Vec<&'a RunResult>,
    /// The distinct values of the swept setting, in increasing order.
    values: Vec<usize>,
}

/// The sweep of one setting in one scenario.
struct Sweep<'a> {
    scenario: ScenarioId,
    axis: Axis,
    /// The points drawn, at most [`MAX_ROWS`].
    points: Vec<Point<'a>>,
    /// How many points the results hold.
    total: usize,
    /// The names of the parts the points differ in (`throughput`, `param`).
    varying: Vec<&'static str>,
}

/// The sweep of `axis` in `scenario`, if the results hold one.
fn find_sweep<'r>(view: &View<'r>, scenario: ScenarioId, axis: Axis) -> Option<Sweep<'r>> {
    let mut points: Vec<Point<'r>> = Vec::new();
    for &row in view.rows(scenario).iter() {
        let (Some(value), Some(rest)) = (axis.value(row), axis.rest(row)) else { continue };
        match points.iter_mut().find(|point| point.rest == rest) {
            Some(point) => {
                point.rows.push(row);
                if !point.values.contains(&value) {
                    point.values.push(value);
                }
            }
            None => points.push(Point {
                rest,
                label: String::new(),
                rows: vec![row],
                values: vec![value],
            }),
        }
    }
    points.retain(|point| point.values.len() >= 2);
    if points.is_empty() {
        return None;
    }
    let total = points.len();
    points.truncate(MAX_ROWS);
    let mut varying: Vec<&'static str> = Vec::new();
    for (name, label) in &points[0].rest.parts {
        let same = points.iter().all(|point| point.rest.parts.iter().any(|(_, l)| l == label));
        if !same && !varying.contains(name) {
            varying.push(name);
        }
    }
    for point in &mut points {
        point.values.sort_unstable();
        let parts = point.rest.parts.iter().filter(|(name, _)| varying.contains(name));
        point.label = parts.map(|(_, label)| label.as_str()).collect::<Vec<_>>().join(" ");
    }
    Some(Sweep { scenario, axis, points, total, varying })
}

/// The machine the results ran on, for the oversubscription caveat.
#[derive(Clone, Copy, Debug)]
struct Machine {
    cores: usize,
    producers: usize,
}

impl Machine {
    fn of(results: &Results) -> Self {
        Self { cores: results.meta.cores, producers: results.meta.producers.unwrap_or(1).max(1) }
    }

    /// Whether `workers` and the producers need more cores than there are.
    fn oversubscribed(self, workers: usize) -> bool {
        workers + self.producers > self.cores
    }

    /// `workers + producer > 2 cores`.
    fn caveat(self) -> String {
        let producers = if self.producers == 1 {
            "producer".to_owned()
        } else {
            format!("{} producers", self.producers)
        };
        format!("workers + {producers} > {} cores", self.cores)
    }
}

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    let mut plans = Vec::new();
    let machine = Machine::of(view.results());
    let all = ScenarioId::ALL.to_vec();
    // The scenario a mailbox's turn length is about first: its bystanders are what it moves.
    let (mut turn_first, rest): (Vec<ScenarioId>, Vec<ScenarioId>) =
        all.iter().partition(|id| id.spec().charts.turn_length);
    turn_first.extend(rest);
    let keyed = super::charted(|charts| charts.keys_sweep).collect();
    let charts: [(Axis, Vec<ScenarioId>, Chart); 4] = [
        (Axis::Workers, all.clone(), workers_chart),
        (Axis::Throughput, turn_first, throughput_chart),
        (Axis::Window, all, window_chart),
        (Axis::Keys, keyed, keys_chart),
    ];
    for (axis, scenarios, chart) in charts {
        let sweeps = scenarios.into_iter().filter_map(|scenario| find_sweep(view, scenario, axis));
        plans.extend(sweeps.map(|sweep| chart(&sweep, machine)));
    }
    plans
}

/// A sweep chart of one setting.
type Chart = fn(&Sweep<'_>, Machine) -> Planned;

/// The throughput panel every sweep chart opens with.
fn throughput_panel(ideal: Ideal) -> Panel {
    Panel {
        caption: "messages per second (median)",
        y: YKind::Rate,
        figure: Figure::Spread(Metric::Throughput),
        ideal,
    }
}

/// A panel of `value` on a `y` axis, without whiskers or an ideal.
fn plain_panel(caption: &'static str, y: YKind, figure: Figure) -> Panel {
    Panel { caption, y, figure, ideal: Ideal::None }
}

/// The p99 latency panel.
fn p99_panel() -> Panel {
    plain_panel("p99 latency", YKind::Latency, Figure::Metric(Metric::P99))
}

/// What the rows of panels are, and what was left out.
fn rows_sentence(sweep: &Sweep<'_>) -> String {
    let mut out = String::new();
    if sweep.points.len() > 1 {
        let varying = sweep
            .varying
            .iter()
            .map(|name| if *name == "param" { "the scenario's param" } else { name })
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(out, " {}", prose!("charts", "sweep_rows", varying = varying));
    }
    if sweep.total > sweep.points.len() {
        let first =
            prose!("charts", "sweep_first", shown = sweep.points.len(), total = sweep.total);
        let _ = write!(out, " {first}");
    }
    out
}

/// The oversubscription caveat of a chart whose x axis is not the workers.
fn oversubscribed_sentence(sweep: &Sweep<'_>, machine: Machine) -> String {
    let over = sweep
        .points
        .iter()
        .any(|point| point.rest.workers.is_some_and(|workers| machine.oversubscribed(workers)));
    if over {
        let caveat = machine.caveat();
        format!(" {}", prose!("charts", "sweep_oversubscribed_panels", caveat = caveat))
    } else {
        String::new()
    }
}

fn workers_chart(sweep: &Sweep<'_>, machine: Machine) -> Planned {
    let scenario = sweep.scenario;
    let over: Vec<usize> = sweep
        .points
        .iter()
        .flat_map(|point| point.values.iter().copied())
        .filter(|&workers| machine.oversubscribed(workers))
        .collect();
    let oversubscribed = if over.is_empty() {
        format!(" {}", prose!("charts", "sweep_workers_room", cores = machine.cores))
    } else {
        let caveat = machine.caveat();
        format!(" {}", prose!("charts", "sweep_workers_oversubscribed", caveat = caveat))
    };
    // A paced scenario completes its offered rate, whatever the workers: no ideal there.
    let paced =
        sweep.points.iter().flat_map(|point| &point.rows).any(|row| row.offered_per_s.is_some());
    let ideal = if paced {
        format!(" {}", prose!("charts", "sweep_workers_paced", scenario = scenario.to_string()))
    } else {
        format!(" {}", prose!("charts", "sweep_workers_ideal"))
    };
    let note = format!(
        "{}{ideal}{}{oversubscribed}",
        prose!("charts", "sweep_workers"),
        rows_sentence(sweep)
    );
    let ideal = if paced { Ideal::None } else { Ideal::LinearInWorkers };
    let title = format!("{scenario}: throughput and p99 latency vs workers");
    SweepChart::new(sweep, title, [throughput_panel(ideal), p99_panel()], machine).planned(note)
}

/// Whether a strategy ignores `--throughput`: only the mailbox strategies bound a turn
/// (tokio-actors, a channel per key, drains its channel instead).
fn ignores_throughput(strategy: &str) -> bool {
    !super::super::descriptor(strategy).bounds_turn
}

fn throughput_chart(sweep: &Sweep<'_>, machine: Machine) -> Planned {
    let scenario = sweep.scenario;
    let bystanders = sweep
        .points
        .iter()
        .flat_map(|point| &point.rows)
        .any(|row| row.bystander_latency_ns.is_some());
    let (second, right) = if bystanders {
        let which = if scenario.spec().charts.turn_length {
            "the keys outside the top 1% by popularity"
        } else {
            "the keys that are not troubled"
        };
        (
            plain_panel(
                "bystander p99 latency",
                YKind::Latency,
                Figure::Metric(Metric::BystanderP99),
            ),
            format!("the bystanders' p99 latency ({which}; log)"),
        )
    } else {
        (p99_panel(), "p99 latency of every message (log)".to_owned())
    };
    let note = format!(
        "{}{}{}",
        prose!("charts", "sweep_turn", right = right),
        rows_sentence(sweep),
        oversubscribed_sentence(sweep, machine)
    );
    let metric = if bystanders { "bystander p99" } else { "p99 latency" };
    let title = format!("{scenario}: throughput and {metric} vs messages per turn");
    let chart = SweepChart::new(sweep, title, [throughput_panel(Ideal::None), second], machine);
    SweepChart { ignores: ignores_throughput, ..chart }.planned(note)
}

fn window_chart(sweep: &Sweep<'_>, machine: Machine) -> Planned {
    let scenario = sweep.scenario;
    let memory = sweep.points.iter().flat_map(|point| &point.rows).any(|row| row.memory.is_some());
    let (second, right) = if memory {
        (
            plain_panel(
                "peak resident memory",
                YKind::Mib,
                Figure::Own(|row| row.memory.map(|memory| memory.peak_bytes as f64 / 1_048_576.0)),
            ),
            "the process's peak resident memory while the cell ran (MiB, linear, not from \
             zero: the harness and the workload's messages are in it, so compare the points \
             with each other); a larger window holds more messages in flight",
        )
    } else {
        (p99_panel(), "p99 latency (log; these results record no memory)")
    };
    let note = format!(
        "{}{}{}",
        prose!("charts", "sweep_window", right = right),
        rows_sentence(sweep),
        oversubscribed_sentence(sweep, machine)
    );
    let metric = if memory { "peak memory" } else { "p99 latency" };
    let title = format!("{scenario}: throughput and {metric} vs admission window");
    SweepChart::new(sweep, title, [throughput_panel(Ideal::Rate), second], machine).planned(note)
}

fn keys_chart(sweep: &Sweep<'_>, machine: Machine) -> Planned {
    let scenario = sweep.scenario;
    let paced = scenario.generator().is_some_and(|generator| generator.arrivals == Arrivals::Paced);
    let paced = if paced {
        format!(" {}", prose!("charts", "sweep_keys_paced", scenario = scenario.to_string()))
    } else {
        String::new()
    };
    let note = format!(
        "{}{paced}{}{}",
        prose!("charts", "sweep_keys"),
        rows_sentence(sweep),
        oversubscribed_sentence(sweep, machine)
    );
    let title = format!("{scenario}: throughput and p99 latency vs number of keys");
    SweepChart::new(sweep, title, [throughput_panel(Ideal::None), p99_panel()], machine)
        .planned(note)
}

// The first point of a sweep, for the charts that show one cell per strategy.

/// `items` of the first sweep point only (in file order), and that point's label, where
/// `items` hold cells of more than one point; otherwise `items` as they are and `None`.
/// Cells outside any sweep (an empty label: a scenario the sweep does not change, or a file
/// from before settings were recorded) are always kept.
pub(super) fn first_point_of<'a, T>(
    items: Vec<&'a T>,
    settings: impl Fn(&'a T) -> Option<&'a CellSettings>,
) -> (Vec<&'a T>, Option<&'a str>) {
    let label = |item: &'a T| settings(item).map_or("", |settings| settings.sweep.as_str());
    let Some(first) = items.iter().map(|item| label(item)).find(|label| !label.is_empty()) else {
        return (items, None);
    };
    if items.iter().all(|item| label(item).is_empty() || label(item) == first) {
        return (items, None);
    }
    let kept =
        items.into_iter().filter(|item| label(item).is_empty() || label(item) == first).collect();
    (kept, Some(first))
}

/// The cells of `rows` at the first point of a sweep, and its label where others were left
/// out ([`first_point_of`]).
pub(super) fn first_point<'a>(rows: &Rows<'a>) -> (Rows<'a>, Option<&'a str>) {
    let (kept, point) = first_point_of(rows.to_vec(), |row| row.settings.as_ref());
    (Rows::new(kept), point)
}

/// `note` with a sentence saying which sweep points the chart shows: `shown` holds (what,
/// label) for each part of the chart that left other points out.
pub(super) fn first_point_note(note: &str, shown: &[(String, &str)]) -> String {
    noted(note, shown, &prose!("charts", "sweep_elsewhere"))
}

/// `note` saying that the chart of `scenario` shows `point` of a sweep, where it left other
/// points out.
pub(super) fn point_note(note: &str, scenario: ScenarioId, point: Option<&str>) -> String {
    let shown: Vec<(String, &str)> =
        point.map(|point| (scenario.to_string(), point)).into_iter().collect();
    first_point_note(note, &shown)
}

/// `note`, then which sweep points the chart shows (`shown`, as for [`first_point_note`])
/// and where the others are (`elsewhere`); `note` alone where nothing was left out.
pub(super) fn noted(note: &str, shown: &[(String, &str)], elsewhere: &str) -> String {
    if shown.is_empty() {
        return note.to_owned();
    }
    let labels: Vec<&str> = crate::report::first_seen(shown.iter().map(|(_, label)| *label));
    let shows = if labels.len() == 1 {
        prose!("charts", "sweep_shows_one", point = labels[0])
    } else {
        let each: Vec<String> =
            shown.iter().map(|(what, label)| format!("{what}: {label}")).collect();
        prose!("charts", "sweep_shows_each", points = each.join("; "))
    };
    format!("{note} {shows} {elsewhere}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_come_apart() {
        let machine = Machine { cores: 2, producers: 1 };
        assert!(!machine.oversubscribed(1) && machine.oversubscribed(2));
        assert_eq!(machine.caveat(), "workers + producer > 2 cores");
    }
}
