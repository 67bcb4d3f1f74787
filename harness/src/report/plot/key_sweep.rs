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
use crate::report::prose::prose;
use crate::report::view::{Rows, View};
use crate::workload::reference::{
    is_parallel_consumer_experiment, PARALLEL_CONSUMER_KEY_MODE_S, PARALLEL_CONSUMER_WINDOW,
};
use crate::workload::scenario::ElapsedBound;
use crate::workload::ScenarioId;

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
        let id = scenario.as_str();
        let (note, bound, published) = match scenario.spec().charts.elapsed_vs_keys? {
            ElapsedBound::Waits => {
                (prose!("charts", "async_io", scenario = id), "ideal bound", None)
            }
            ElapsedBound::SkewedWaits => {
                (prose!("charts", "async_io_zipf", scenario = id), "ideal bound", None)
            }
            ElapsedBound::BlockingPool => {
                (prose!("charts", "parallel_consumer", scenario = id), "floor", published)
            }
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
        plans.push(render(name, title, point_note(&note, scenario, point), &figure.figure()));
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
