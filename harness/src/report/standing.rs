//! Where the design under study trails: every ranked cell in which `keyed-mailbox` reads
//! below [`TRAILS`] of the best ordered design, with the counters of its counted repetition
//! beside the best's and a cause that [`cause`] derives from them. Reads results only.
//!
//! The rules; every one that holds is a cause, in this order:
//!
//! 1. *Affinity*: a `keyed-mailbox` worker parked while another worker's queue held a
//!    runnable mailbox at least [`PARKED_PER_1000`] times per 1,000 messages, and at least
//!    twice as often as the best design's workers did. Those mailboxes may run nowhere
//!    else: the design's own loss (no stealing).
//! 2. *Window*: the producer spent at least [`BLOCKED_POINTS`] more of its time blocked on
//!    the full window than with the best design: admission, not the workers, held it back.
//! 3. *Parking*: parks and wake-ups together at least [`PARKING_FACTOR`] times the best
//!    design's, and at least [`PARKING_PER_1000`] per 1,000 messages: system calls where
//!    the best design keeps running.
//! 4. *Work*: the strategy's threads spent at least [`WORK_FACTOR`] times the best
//!    design's CPU per message in the timed repetitions (idle spins included).
//!
//! Where none holds, no counter separates the two designs: the machine's scheduling, or
//! what no counter sees; the same cell at 1 worker, where affinity has nothing to bind,
//! tells them apart.
//!
//! A best design that cannot see an event (a library's internals) is compared on the
//! rules whose counters both sides have. Where `hybrid` ran, its standing in the same cell
//! checks rule 1: it takes exactly the mailboxes that rule counts, so where it does not
//! trail the take recovers the loss, and where it trails too affinity is not the whole
//! cause.
//!
//! A second section sets `hybrid` beside the two designs it combines: in each ranked cell,
//! its median over the better of `keyed-mailbox`'s and `work-stealing`'s (the inverse for a
//! lower-is-better metric), against [`HYBRID_TARGET`] and [`HYBRID_FLOOR`].

use super::document::Document;
use super::format::format_value;
use super::or_dash;
use super::prose::prose;
use super::table::{Declared, Table};
use super::verdict::{
    best, contenders, format_ratio, ranked_cells, ratio, Entry, RankedCell, Value,
};
use super::view::View;
use crate::results::{EventRates, Metric, RunResult};
use crate::workload::ScenarioId;
use strategies::StrategyId;

/// A ratio to the best below which the design under study is said to trail.
pub const TRAILS: f64 = 0.9;

/// Rule 1's floor: parks with work queued elsewhere, per 1,000 messages.
pub const PARKED_PER_1000: f64 = 1.0;

/// Rule 2's margin: the producer's blocked share above the best design's, as a fraction.
pub const BLOCKED_POINTS: f64 = 0.10;

/// Rule 3's factor over the best design's parks and wake-ups.
pub const PARKING_FACTOR: f64 = 1.5;

/// Rule 3's floor: parks and wake-ups per 1,000 messages.
pub const PARKING_PER_1000: f64 = 5.0;

/// Rule 4's factor over the best design's threads' CPU per message.
pub const WORK_FACTOR: f64 = 1.15;

/// `hybrid`'s target: its median at least this share of the better parent's, in at least
/// [`HYBRID_TARGET_SHARE`] of the ranked cells.
pub const HYBRID_TARGET: f64 = 0.95;

/// The share of ranked cells in which `hybrid` must meet [`HYBRID_TARGET`].
pub const HYBRID_TARGET_SHARE: f64 = 0.9;

/// `hybrid`'s floor: never below this share of the better parent's median.
pub const HYBRID_FLOOR: f64 = 0.8;

/// What one side of a trailing cell measured: its counted repetition's events and its
/// threads' CPU per message in the timed repetitions.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters<'a> {
    /// The counted repetition's events per message; none without one.
    pub events: Option<&'a EventRates>,
    /// The strategy's own threads' CPU nanoseconds per message; none where not read.
    pub cpu_ns: Option<f64>,
}

impl<'a> Counters<'a> {
    /// The counters of `row`.
    pub fn of(row: &'a RunResult) -> Self {
        let cpu_ns = row.cpu_per_message_ns.as_ref().and_then(|cpu| cpu.strategy_threads);
        Self { events: row.events_per_message.as_ref(), cpu_ns }
    }
}

/// What the counters say a trailing cell lost to: each rule that holds (module docs).
#[derive(Clone, Debug, PartialEq)]
pub enum Cause {
    /// Rule 1: runnable mailboxes queued on a busy worker while another parked.
    Affinity {
        /// Parks with work queued elsewhere per 1,000 messages, the design's and the best's.
        parked: (f64, Option<f64>),
    },
    /// Rule 2: the producer blocked on the full window for longer.
    Window {
        /// Blocked shares of producer time, the design's and the best's.
        blocked: (f64, f64),
    },
    /// Rule 3: more parks and wake-ups.
    Parking {
        /// Parks and wake-ups per 1,000 messages, the design's and the best's.
        parking: (f64, f64),
    },
    /// Rule 4: more CPU per message on the strategy's threads.
    Work {
        /// CPU nanoseconds per message, the design's threads' and the best's.
        cpu_ns: (f64, f64),
    },
}

impl Cause {
    /// The cause as the summary reads it, naming the best design `best`. `hybrid` is
    /// `hybrid`'s standing against the best in the same cell, where it ran: the design that
    /// takes the mailboxes rule 1 counts, so it says whether the take recovers the loss.
    pub fn reading(&self, best: &str, hybrid: Option<f64>) -> String {
        let per = |value: f64| format!("{value:.1} per 1,000 messages");
        let share = |value: f64| format!("{:.0}%", value * 100.0);
        match self {
            Self::Affinity { parked: (mine, theirs) } => {
                let check = match hybrid {
                    _ if best.parse::<StrategyId>().is_ok_and(|id| id == StrategyId::Hybrid) => {
                        prose!("standing", "affinity_hybrid_best")
                    }
                    Some(standing) if standing >= TRAILS => prose!(
                        "standing",
                        "affinity_recovered",
                        standing = format_ratio(standing),
                        best = best,
                    ),
                    Some(standing) => prose!(
                        "standing",
                        "affinity_not_recovered",
                        standing = format_ratio(standing),
                        best = best,
                    ),
                    None => String::new(),
                };
                prose!(
                    "standing",
                    "affinity",
                    mine = per(*mine),
                    theirs = theirs.map_or("n/a".to_owned(), per),
                    best = best,
                    check = check,
                )
            }
            Self::Window { blocked: (mine, theirs) } => prose!(
                "standing",
                "window",
                mine = share(*mine),
                theirs = share(*theirs),
                best = best,
            ),
            Self::Parking { parking: (mine, theirs) } => prose!(
                "standing",
                "parking",
                mine = format!("{mine:.1}"),
                theirs = format!("{theirs:.1}"),
                best = best,
            ),
            Self::Work { cpu_ns: (mine, theirs) } => prose!(
                "standing",
                "work",
                mine = format!("{mine:.0}"),
                theirs = format!("{theirs:.0}"),
                best = best,
            ),
        }
    }
}

/// Events per 1,000 messages.
fn per_1000(rate: Option<f64>) -> Option<f64> {
    rate.map(|rate| rate * 1000.0)
}

/// Parks and wake-ups per 1,000 messages, where both are seen.
fn parking(events: &EventRates) -> Option<f64> {
    Some((events.parks? + events.wakeups?) * 1000.0)
}

/// Every cause the design's counters give against the best design's (module docs, rules
/// 1-4), in rule order; empty where none holds.
pub fn causes(mine: Counters<'_>, theirs: Counters<'_>) -> Vec<Cause> {
    let mut found = Vec::new();
    if let (Some(mine), Some(theirs)) = (mine.events, theirs.events) {
        if let Some(parked) = per_1000(mine.parked_while_queued) {
            let other = per_1000(theirs.parked_while_queued);
            if parked >= PARKED_PER_1000 && other.is_none_or(|other| parked >= 2.0 * other) {
                found.push(Cause::Affinity { parked: (parked, other) });
            }
        }
        if let (Some(blocked), Some(other)) = (mine.producer_blocked, theirs.producer_blocked) {
            if blocked - other >= BLOCKED_POINTS {
                found.push(Cause::Window { blocked: (blocked, other) });
            }
        }
        if let (Some(parks), Some(other)) = (parking(mine), parking(theirs)) {
            if parks >= PARKING_PER_1000 && parks >= PARKING_FACTOR * other {
                found.push(Cause::Parking { parking: (parks, other) });
            }
        }
    }
    if let (Some(cpu), Some(other)) = (mine.cpu_ns, theirs.cpu_ns) {
        if cpu >= WORK_FACTOR * other {
            found.push(Cause::Work { cpu_ns: (cpu, other) });
        }
    }
    found
}

/// The cause column: every cause found, or why there is none.
fn causes_reading(found: &[Cause], counted: bool, best: &str, hybrid: Option<f64>) -> String {
    if found.is_empty() {
        return if counted {
            prose!("standing", "no_cause", best = best)
        } else {
            prose!("standing", "uncounted")
        };
    }
    let readings: Vec<String> = found.iter().map(|cause| cause.reading(best, hybrid)).collect();
    readings.join("; ")
}

/// One rate pair as a table reads it: `mine / theirs`, n/a for what a side cannot see.
fn pair(mine: Option<f64>, theirs: Option<f64>, show: fn(f64) -> String) -> String {
    let side = |value: Option<f64>| value.map_or("n/a".to_owned(), show);
    format!("{} / {}", side(mine), side(theirs))
}

/// One ranked cell where `keyed-mailbox` trails the best: a row of the trailing table.
struct Trailing<'a> {
    /// The cell's scenario.
    scenario: ScenarioId,
    /// The cell's parameter.
    param: &'a str,
    /// The cell's best design.
    best: String,
    /// `keyed-mailbox`'s standing against the best.
    standing: f64,
    /// The counted repetitions' events, `keyed-mailbox`'s and the best's.
    events: (Option<&'a EventRates>, Option<&'a EventRates>),
    /// `hybrid`'s standing against the best, where it has a valid figure.
    hybrid: Option<f64>,
    /// Every cause the counters give.
    found: Vec<Cause>,
}

impl Trailing<'_> {
    /// The cause column: every cause found, or why there is none.
    fn cause(&self) -> String {
        let counted = self.events.0.is_some() && self.events.1.is_some();
        causes_reading(&self.found, counted, &self.best, self.hybrid)
    }
}

/// A column of one event rate on both sides, `keyed-mailbox / best`: `pick` reads the rate
/// from a side's events, `show` writes it.
fn rates<'r>(
    header: &str,
    pick: fn(&EventRates) -> Option<f64>,
    show: fn(f64) -> String,
) -> Declared<'static, Trailing<'r>> {
    Declared::right(header, move |row: &Trailing<'r>| {
        let (mine, theirs) = row.events;
        pair(mine.and_then(pick), theirs.and_then(pick), show)
    })
}

/// The trailing cells' table: its columns.
fn trailing_columns<'r>() -> Vec<Declared<'static, Trailing<'r>>> {
    vec![
        Declared::left("scenario", |row: &Trailing<'r>| row.scenario.as_str()),
        Declared::left("param", |row: &Trailing<'r>| or_dash(row.param)),
        Declared::left("best", |row: &Trailing<'r>| row.best.clone()),
        Declared::right("keyed-mailbox / best", |row: &Trailing<'r>| format_ratio(row.standing)),
        rates(
            "parked while queued per 1,000 (km / best)",
            |events| per_1000(events.parked_while_queued),
            |rate| format!("{rate:.1}"),
        ),
        rates(
            "producer blocked (km / best)",
            |events| events.producer_blocked,
            |share| format!("{:.0}%", share * 100.0),
        ),
        rates("parks + wake-ups per 1,000 (km / best)", parking, |rate| format!("{rate:.1}")),
        Declared::right("hybrid / best", |row: &Trailing<'r>| {
            row.hybrid.map_or("n/a".to_owned(), format_ratio)
        }),
        Declared::left("cause", Trailing::cause),
    ]
}

/// The row of one ranked cell where `keyed-mailbox` trails the best, or none where it does
/// not (or the cell ranks nothing); `ranked` counts the cells where it has a figure.
fn trailing_row<'a>(
    scenario: ScenarioId,
    higher: bool,
    cell: &RankedCell<'a>,
    ranked: &mut usize,
) -> Option<Trailing<'a>> {
    let studied = StrategyId::KeyedMailbox.as_str();
    let eligible: Vec<Entry> = cell.entries.iter().filter(|entry| !entry.void).cloned().collect();
    // `best` passes over a design with a violation; the hybrid check must too.
    let top = best(&eligible, higher)?;
    let mine = cell.entry(studied).filter(|entry| !entry.void)?;
    let (value, top_value) = (mine.value?, top.value?);
    *ranked += 1;
    let standing_of_best = |value: Value| standing_of(value.median, top_value.median, higher);
    let standing = standing_of_best(value).filter(|standing| *standing < TRAILS)?;
    let hybrid = cell
        .entry(StrategyId::Hybrid.as_str())
        .filter(|entry| !entry.void && !entry.violated)
        .and_then(|entry| standing_of_best(entry.value?));
    let counters =
        |strategy: &str| cell.rows.on(strategy).map_or_else(Counters::default, Counters::of);
    let (mine_counted, theirs_counted) = (counters(studied), counters(&top.strategy));
    Some(Trailing {
        scenario,
        param: cell.param,
        best: top.strategy.clone(),
        standing,
        events: (mine_counted.events, theirs_counted.events),
        hybrid,
        found: causes(mine_counted, theirs_counted),
    })
}

/// Appends the section: every ranked cell where `keyed-mailbox` trails the best by more
/// than [`TRAILS`], its counters beside the best's, and the cause. Nothing where the run
/// did not measure `keyed-mailbox`.
pub(super) fn section(out: &mut Document, view: &View<'_>) {
    let columns = contenders(view.results());
    if !view.ran(StrategyId::KeyedMailbox) {
        return;
    }
    let mut rows = Vec::new();
    let mut ranked = 0;
    for &scenario in ScenarioId::ALL {
        let Some(metric) = scenario.headline() else { continue };
        for cell in ranked_cells(view, scenario, metric, &columns) {
            rows.extend(trailing_row(scenario, metric.higher_is_better(), &cell, &mut ranked));
        }
    }
    if ranked == 0 {
        return;
    }
    out.heading(2, "Where keyed-mailbox trails");
    let trailing = rows.len();
    out.prose(&prose!(
        "standing",
        "trailing",
        trails = TRAILS.to_string(),
        trailing = trailing,
        ranked = ranked,
        parked_per_1000 = PARKED_PER_1000.to_string(),
        blocked_points = format!("{:.0}", BLOCKED_POINTS * 100.0),
        parking_factor = PARKING_FACTOR.to_string(),
        parking_per_1000 = PARKING_PER_1000.to_string(),
        work_factor = WORK_FACTOR.to_string(),
    ));
    if trailing > 0 {
        out.table(Table::declared(&trailing_columns(), &rows));
    }
    out.blank();
}

/// `value` over `better` as a standing (at least 1 is as good): `value / better` where
/// higher is better, `better / value` where lower is.
fn standing_of(value: f64, better: f64, higher: bool) -> Option<f64> {
    if higher {
        ratio(value, better)
    } else {
        ratio(better, value)
    }
}

/// A value as the hybrid table reads it: the median, and the min-max where recorded.
fn shown(metric: Metric, value: Value) -> String {
    let unit = metric.unit();
    match value.spread {
        Some((low, high)) => format!(
            "{} ({}-{})",
            format_value(unit, value.median),
            format_value(unit, low),
            format_value(unit, high)
        ),
        None => format_value(unit, value.median),
    }
}

/// The designs of the hybrid table, in its columns' order: the two parents, then `hybrid`.
const HYBRID_DESIGNS: [StrategyId; 3] =
    [StrategyId::KeyedMailbox, StrategyId::WorkStealing, StrategyId::Hybrid];

/// Appends `hybrid`'s section: in every ranked cell where it, `keyed-mailbox` and
/// `work-stealing` all have a valid figure, the three values, the better parent, and
/// hybrid's standing against it with its min-max, judged against [`HYBRID_TARGET`] and
/// [`HYBRID_FLOOR`]. Nothing where the run lacks one of the three.
pub(super) fn hybrid_section(out: &mut Document, view: &View<'_>) {
    if !HYBRID_DESIGNS.iter().all(|&id| view.ran(id)) {
        return;
    }
    let designs = HYBRID_DESIGNS.map(StrategyId::as_str);
    let mut rows = Vec::new();
    let mut tally = HybridTally::default();
    for &scenario in ScenarioId::ALL {
        let Some(metric) = scenario.headline() else { continue };
        for cell in ranked_cells(view, scenario, metric, &designs) {
            let Some(row) = hybrid_row(scenario, metric, &cell) else {
                tally.left_out += 1;
                continue;
            };
            tally.count(&row);
            rows.push(row);
        }
    }
    if tally.ranked == 0 {
        return;
    }
    out.heading(2, "hybrid beside keyed-mailbox and work-stealing");
    out.prose(&tally.prose());
    out.table(Table::declared(&hybrid_columns(), &rows));
    out.blank();
}

/// What the hybrid table found: cells ranked, met, below the floor, left out.
#[derive(Debug, Default)]
struct HybridTally {
    ranked: usize,
    met: usize,
    floor: Vec<String>,
    left_out: usize,
}

impl HybridTally {
    /// Counts one row of the table: ranked, and met or below the floor where it is.
    fn count(&mut self, row: &HybridRow<'_>) {
        self.ranked += 1;
        match row.verdict() {
            HybridVerdict::Met => self.met += 1,
            HybridVerdict::BelowTarget => {}
            HybridVerdict::BelowFloor => {
                self.floor.push(format!("{} {}", row.scenario, or_dash(row.param)));
            }
        }
    }

    /// The section's prose: how to read the table, and the target met or missed.
    fn prose(&self) -> String {
        let Self { ranked, met, floor, left_out } = self;
        let share = *met as f64 / *ranked as f64;
        let target_met = share >= HYBRID_TARGET_SHARE && floor.is_empty();
        prose!(
            "standing",
            "hybrid",
            target = HYBRID_TARGET.to_string(),
            target_share = format!("{:.0}", HYBRID_TARGET_SHARE * 100.0),
            floor = HYBRID_FLOOR.to_string(),
            met = *met,
            ranked = *ranked,
            share = format!("{:.0}", share * 100.0),
            below = floor.len(),
            listed = floor.join(", "),
            verdict = if target_met { "met" } else { "missed" },
            left_out = *left_out,
        )
    }
}

/// How `hybrid`'s standing in one cell reads against [`HYBRID_TARGET`] and [`HYBRID_FLOOR`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HybridVerdict {
    /// At least the target.
    Met,
    /// Below the target, at least the floor.
    BelowTarget,
    /// Below the floor.
    BelowFloor,
}

impl HybridVerdict {
    /// The verdict column's text.
    fn text(self) -> &'static str {
        match self {
            Self::Met => "met",
            Self::BelowTarget => "below target",
            Self::BelowFloor => "below floor",
        }
    }
}

/// One cell of the hybrid table: its three designs' values, the better parent, and
/// hybrid's standing against it.
struct HybridRow<'a> {
    /// The cell's scenario.
    scenario: ScenarioId,
    /// The cell's parameter.
    param: &'a str,
    /// The scenario's headline metric.
    metric: Metric,
    /// The designs' values, in the order of [`HYBRID_DESIGNS`].
    values: [Value; 3],
    /// The better of the two parents.
    parent: StrategyId,
    /// `hybrid`'s median against the better parent's.
    standing: f64,
    /// `hybrid`'s lowest and highest standing over repetitions, where recorded.
    spread: Option<(f64, f64)>,
}

impl HybridRow<'_> {
    /// The standing against [`HYBRID_TARGET`] and [`HYBRID_FLOOR`].
    fn verdict(&self) -> HybridVerdict {
        if self.standing >= HYBRID_TARGET {
            HybridVerdict::Met
        } else if self.standing >= HYBRID_FLOOR {
            HybridVerdict::BelowTarget
        } else {
            HybridVerdict::BelowFloor
        }
    }

    /// The standing column: the standing, and its min-max where recorded.
    fn standing_text(&self) -> String {
        let spread = self
            .spread
            .map(|(low, high)| format!(" ({}-{})", format_ratio(low), format_ratio(high)));
        format!("{}{}", format_ratio(self.standing), spread.unwrap_or_default())
    }
}

/// The hybrid table's columns: the cell, a value column per design of [`HYBRID_DESIGNS`],
/// the better parent, hybrid's standing and its verdict.
fn hybrid_columns<'r>() -> Vec<Declared<'static, HybridRow<'r>>> {
    let mut columns = vec![
        Declared::left("scenario", |row: &HybridRow<'r>| row.scenario.as_str()),
        Declared::left("param", |row: &HybridRow<'r>| or_dash(row.param)),
        Declared::left("metric", |row: &HybridRow<'r>| row.metric.label()),
    ];
    columns.extend(HYBRID_DESIGNS.iter().enumerate().map(|(at, design)| {
        Declared::right(design.as_str(), move |row: &HybridRow<'r>| {
            shown(row.metric, row.values[at])
        })
    }));
    columns.extend([
        Declared::left("better parent", |row: &HybridRow<'r>| row.parent.as_str()),
        Declared::right("hybrid / better (min-max)", HybridRow::standing_text),
        Declared::left("verdict", |row: &HybridRow<'r>| row.verdict().text()),
    ]);
    columns
}

/// The row of one cell of the hybrid table, or none where one of its three designs has no
/// usable figure (or the standing cannot be read).
fn hybrid_row<'a>(
    scenario: ScenarioId,
    metric: Metric,
    cell: &RankedCell<'a>,
) -> Option<HybridRow<'a>> {
    let higher = metric.higher_is_better();
    let usable = |entry: &Entry| (!entry.void && !entry.violated).then_some(entry.value?);
    let [mv, wv, hv] = [0, 1, 2].map(|index| usable(&cell.entries[index]));
    let values = [mv?, wv?, hv?];
    let [mv, wv, hv] = values;
    let mailbox_better = if higher { mv.median >= wv.median } else { mv.median <= wv.median };
    let (parent, better) = if mailbox_better {
        (StrategyId::KeyedMailbox, mv)
    } else {
        (StrategyId::WorkStealing, wv)
    };
    let standing = standing_of(hv.median, better.median, higher)?;
    let spread = hv.spread.and_then(|(low, high)| {
        let (low, high) =
            (standing_of(low, better.median, higher)?, standing_of(high, better.median, higher)?);
        Some((low.min(high), low.max(high)))
    });
    Some(HybridRow { scenario, param: cell.param, metric, values, parent, standing, spread })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(parked: Option<f64>, blocked: f64, parks: f64) -> EventRates {
        EventRates {
            parks: Some(parks / 2000.0),
            wakeups: Some(parks / 2000.0),
            parked_while_queued: parked.map(|parked| parked / 1000.0),
            producer_blocked: Some(blocked),
            messages: 10_000,
            ..EventRates::default()
        }
    }

    /// The counters of one side: `events`, and `cpu_ns` of its threads per message.
    fn side(events: &EventRates, cpu_ns: f64) -> Counters<'_> {
        Counters { events: Some(events), cpu_ns: Some(cpu_ns) }
    }

    /// The kinds of cause found, in order.
    fn kinds(found: &[Cause]) -> Vec<&'static str> {
        let kind = |cause: &Cause| match cause {
            Cause::Affinity { .. } => "affinity",
            Cause::Window { .. } => "window",
            Cause::Parking { .. } => "parking",
            Cause::Work { .. } => "work",
        };
        found.iter().map(kind).collect()
    }

    #[test]
    fn every_rule_that_holds_is_a_cause_in_rule_order() {
        let best = events(Some(0.1), 0.5, 10.0);
        let theirs = side(&best, 1000.0);
        let all = events(Some(40.0), 0.9, 100.0);
        assert_eq!(
            kinds(&causes(side(&all, 1200.0), theirs)),
            ["affinity", "window", "parking", "work"]
        );
        let window = events(Some(0.5), 0.7, 12.0);
        assert_eq!(kinds(&causes(side(&window, 1100.0), theirs)), ["window"]);
        let parking = events(Some(0.5), 0.55, 100.0);
        assert_eq!(kinds(&causes(side(&parking, 1000.0), theirs)), ["parking"]);
        let work = events(Some(0.5), 0.55, 12.0);
        assert_eq!(kinds(&causes(side(&work, 1150.0), theirs)), ["work"]);
        assert!(causes(side(&work, 1140.0), theirs).is_empty());
        let reading = causes_reading(&[], true, "work-stealing", None);
        assert!(reading.starts_with("no counter separates it from work-stealing"), "{reading}");
        let uncounted = Counters { events: None, cpu_ns: None };
        assert!(causes(uncounted, theirs).is_empty());
        assert_eq!(causes_reading(&[], false, "rayon", None), "no counted repetition on one side");
    }

    #[test]
    fn affinity_needs_twice_the_best_designs_parks_while_queued() {
        let best = events(Some(30.0), 0.5, 10.0);
        let mine = events(Some(40.0), 0.5, 10.0);
        assert!(causes(side(&mine, 1000.0), side(&best, 1000.0)).is_empty());
        let unseen = events(None, 0.5, 10.0);
        let found = causes(side(&mine, 1000.0), side(&unseen, 1000.0));
        assert!(matches!(found[..], [Cause::Affinity { parked: (_, None) }]), "{found:?}");
    }

    #[test]
    fn hybrids_standing_checks_the_affinity_cause() {
        let cause = Cause::Affinity { parked: (2.0, Some(0.0)) };
        let recovered = cause.reading("work-stealing", Some(1.02));
        assert!(recovered.contains("reads 1.02x of work-stealing: the take recovers it"));
        let not = cause.reading("work-stealing", Some(0.65));
        assert!(not.contains("reads 0.65x of work-stealing: the take does not recover it"));
        assert!(!cause.reading("rayon", None).contains("hybrid"));
        assert!(cause
            .reading("hybrid", Some(1.0))
            .ends_with("(hybrid, which takes such mailboxes, is the best here)"));
        let parking = Cause::Parking { parking: (5.1, 0.5) };
        assert_eq!(
            parking.reading("work-stealing", None),
            "parking: 5.1 parks and wake-ups per 1,000 messages (work-stealing: 0.5)"
        );
    }

    #[test]
    fn the_tables_declare_their_headers_and_alignment() {
        let trailing = Table::declared(&trailing_columns(), &[]);
        let expected = Table::of(
            "scenario|param|best|>keyed-mailbox / best|\
             >parked while queued per 1,000 (km / best)|>producer blocked (km / best)|\
             >parks + wake-ups per 1,000 (km / best)|>hybrid / best|cause",
        );
        assert_eq!(trailing, expected);
        let hybrid = Table::declared(&hybrid_columns(), &[]);
        let expected = Table::of(
            "scenario|param|metric|>keyed-mailbox|>work-stealing|>hybrid|better parent|\
             >hybrid / better (min-max)|verdict",
        );
        assert_eq!(hybrid, expected);
    }

    #[test]
    fn the_hybrid_target_needs_the_share_and_no_cell_below_the_floor() {
        let tally = |met: usize, floor: &[&str]| HybridTally {
            ranked: 10,
            met,
            floor: floor.iter().map(|cell| (*cell).to_owned()).collect(),
            left_out: 0,
        };
        assert!(tally(9, &[]).prose().ends_with("the target is met."));
        let one_low = tally(9, &["stateful keys=1024"]).prose();
        assert!(one_low.contains("below 0.8x in 1 (stateful keys=1024)"), "{one_low}");
        assert!(one_low.ends_with("the target is missed."), "{one_low}");
        assert!(tally(8, &[]).prose().contains("in 8 of 10 cells (80%)"));
        assert!(tally(8, &[]).prose().ends_with("the target is missed."));
    }
}
