//! The key sweeps: elapsed time against the number of keys (log x), one line per strategy
//! and the ideal bound as a dashed line, for `async-io`, `async-io-zipf` and
//! `parallel-consumer`. Only `parallel-consumer` run as the published experiment shows the
//! published figures (docs/design.md section 5.1), as labelled points: a published figure
//! never stands beside a different experiment. Of a sweep of the strategy settings, the
//! first point only.

use plotters::style::BLACK;

use super::layout;
use super::lines::{LinePanel, Lines, Reference, Series};
use super::panel::{strategy_entries, Axis, Entry, Frame, Mark, Marker};
use super::sweep::{first_point, point_note, values_of};
use super::Planned;
use super::{absent, count_label, log_range, render, strategy_colour};
use crate::report::format::format_ns;
use crate::report::view::{Rows, View};
use crate::workload::reference::{
    is_parallel_consumer_experiment, PARALLEL_CONSUMER_KEY_MODE_S, PARALLEL_CONSUMER_WINDOW,
};
use crate::workload::scenario::ElapsedBound;
use crate::workload::ScenarioId;

const ASYNC_IO_NOTE: &str = "Elapsed wall time of the whole async-io run (log y) against the \
number of keys (log x): each handler waits a random 0-5 ms without blocking a thread, at most \
a window's worth in flight. With few keys the per-key chains bound the time; with many, the \
window does. The dashed black line is the ideal bound (the larger of the longest per-key chain \
and total waiting / window); a strategy on it wastes nothing. This is not the experiment of the \
Parallel Consumer's published table, so no published figure is drawn here.";

const ASYNC_IO_ZIPF_NOTE: &str = "Elapsed wall time of the whole async-io-zipf run (log y) \
against the number of keys (log x): async-io's non-blocking waits with keys drawn from a Zipf \
distribution, so a few hot keys hold long chains. The dashed black line is the ideal bound \
(the larger of the longest per-key chain and total waiting / window): with skewed keys the \
hottest key's chain binds, whatever the design.";

const PARALLEL_CONSUMER_NOTE: &str = "Elapsed wall time of the whole parallel-consumer run (log \
y) against the number of keys (log x): each handler blocks its thread 0-4 ms on a fixed pool, \
at most a window's worth in flight, keys drawn at random. With few keys the longest key's chain \
binds; with many, the threads do. The dashed black line is that floor, from the drawn sleeps. \
Where this run is the published experiment (10,000 messages, 16 threads, window 100), the open \
diamonds are the Parallel Consumer's published KEY-mode seconds on the same experiment; a \
scaled-down run shows none.";

/// One chart of a key sweep.
struct KeySweep<'a> {
    scenario: ScenarioId,
    /// What the dashed line is: the ideal bound, or the floor.
    bound: &'static str,
    rows: Rows<'a>,
    /// (keys, parameter), in increasing key order.
    keys: Vec<(usize, &'a str)>,
    /// Messages per run.
    messages: usize,
    /// Published seconds by key count, where this run is their experiment.
    published: Option<&'static [(usize, f64)]>,
}

pub(super) fn plan(view: &View<'_>) -> Vec<Planned> {
    let results = view.results();
    let mut plans = Vec::new();
    let published = results
        .meta
        .sizes
        .as_ref()
        .is_some_and(is_parallel_consumer_experiment)
        .then_some(PARALLEL_CONSUMER_KEY_MODE_S);
    let sweeps = ScenarioId::ALL.iter().filter_map(|&scenario| {
        let (note, bound, published) = match scenario.spec().charts.elapsed_vs_keys? {
            ElapsedBound::Waits => (ASYNC_IO_NOTE, "ideal bound", None),
            ElapsedBound::SkewedWaits => (ASYNC_IO_ZIPF_NOTE, "ideal bound", None),
            ElapsedBound::BlockingPool => (PARALLEL_CONSUMER_NOTE, "floor", published),
        };
        Some((scenario, note, bound, published))
    });
    for (scenario, note, bound, published) in sweeps {
        let name = format!("{scenario}-elapsed");
        let (rows, point) = first_point(view.rows(scenario));
        let keys = values_of(&rows, "keys").into_iter();
        let mut keys: Vec<(usize, &str)> = keys
            .map(|(keys, row)| (keys as usize, row.param.as_str()))
            .filter(|(keys, _)| *keys > 0)
            .collect();
        keys.sort_unstable();
        if keys.is_empty() {
            plans.push(absent(&name, scenario));
            continue;
        }
        let messages = rows.first().map_or(0, |row| row.messages);
        // A `--window` sweep runs parallel-consumer with other windows than the published.
        let published_window = rows
            .iter()
            .all(|row| row.window.is_none_or(|window| window == PARALLEL_CONSUMER_WINDOW));
        let published = published.filter(|_| published_window);
        let figure = KeySweep { scenario, bound, rows, keys, messages, published };
        let title = format!("{scenario}: elapsed time vs number of keys");
        plans.push(render(name, title, point_note(note, scenario, point), &figure.figure()));
    }
    plans
}

impl KeySweep<'_> {
    /// A line per strategy over the key counts, the ideal dashed, the published diamonds.
    fn figure(&self) -> Lines {
        let strategies = self.rows.strategies();
        let published = self.published.unwrap_or(&[]);
        let mut legend = strategy_entries(&strategies, Mark::Line);
        legend.push(Entry::new(self.bound, BLACK, Mark::Dashed));
        if !published.is_empty() {
            let label = "published KEY mode (Parallel Consumer, same experiment)";
            legend.push(Entry::new(label, BLACK, Mark::Diamond));
        }
        let mut ticks: Vec<f64> = self.keys.iter().map(|(keys, _)| *keys as f64).collect();
        ticks.extend(published.iter().map(|(keys, _)| *keys as f64));
        ticks.sort_by(f64::total_cmp);
        ticks.dedup();
        let (low, high) = (ticks[0], ticks[ticks.len() - 1]);
        let seconds = self.rows.iter().flat_map(|row| [row.elapsed_s, row.ideal_s]);
        let range = log_range(seconds.chain(published.iter().map(|(_, s)| *s)));
        let ideal = self.keys.iter().filter_map(|(keys, param)| {
            let row = self.rows.first_in(param)?;
            Some((*keys as f64, row.ideal_s))
        });
        let line = |strategy: &&str| {
            let points = self.keys.iter().filter_map(|(keys, param)| {
                self.rows.row(param, strategy).map(|row| (*keys as f64, row.elapsed_s))
            });
            Series::new(strategy_colour(strategy), points.collect())
        };
        let marks = published.iter().map(|&(keys, seconds)| Marker {
            at: (keys as f64, seconds),
            label: format!("{seconds} s"),
        });
        let panel = LinePanel {
            frame: Frame::new(14, (56, 80)),
            x: Axis::log((low / 1.6)..(high * 1.6), |x| count_label(x.round() as u64))
                .at(ticks)
                .desc("keys (log)"),
            y: Axis::log(range, |y| format_ns(y * 1e9)).desc("elapsed (log)"),
            references: vec![Reference::new(ideal.collect())],
            series: strategies.iter().map(line).collect(),
            marks: marks.collect(),
            ..LinePanel::default()
        };
        let title = format!(
            "{}: elapsed time vs number of keys ({} messages)",
            self.scenario, self.messages
        );
        Lines::single(title, layout::KEY_LINES, legend, panel)
    }
}
