//! Durations, rates and the values of metrics as people read them, for the summary, the
//! charts, the report and `compare`.

use crate::results::metric::Unit;

/// A duration in nanoseconds, in the unit that reads best.
pub fn format_ns(ns: f64) -> String {
    match ns {
        ns if ns < 1e3 => format!("{ns:.0} ns"),
        ns if ns < 1e6 => format!("{:.1} us", ns / 1e3),
        ns if ns < 1e9 => format!("{:.1} ms", ns / 1e6),
        ns => format!("{:.2} s", ns / 1e9),
    }
}

/// A rate in messages per second, with k or M.
pub fn format_rate(rate: f64) -> String {
    match rate {
        rate if rate >= 1e6 => format!("{:.2}M", rate / 1e6),
        rate if rate >= 1e3 => format!("{:.1}k", rate / 1e3),
        rate => format!("{rate:.0}"),
    }
}

/// A ratio of two figures (`0.63`, `1.8`, `12`): two significant figures where they
/// matter.
pub fn format_short_ratio(value: f64) -> String {
    match value {
        v if v >= 10.0 => format!("{v:.0}"),
        v if v >= 1.0 => format!("{v:.1}"),
        v => format!("{v:.2}"),
    }
}

/// A value of a metric in its unit, as the verdict prints it: `12.3k msg/s`, `1.5 ms`,
/// `0.87`.
pub fn format_value(unit: Unit, value: f64) -> String {
    match unit {
        Unit::MessagesPerSecond => format!("{} msg/s", format_figure(unit, value)),
        Unit::PerSecond => format!("{}/s", format_figure(unit, value)),
        unit => format_figure(unit, value),
    }
}

/// A value of a metric in a table's column of it, whose header names what a rate counts
/// (`MetricSpec::header`): a rate bare (`12.3k`), a time in the unit that reads best, a
/// ratio to two decimals, a count whole.
pub fn format_figure(unit: Unit, value: f64) -> String {
    match unit {
        Unit::MessagesPerSecond | Unit::PerSecond => format_rate(value),
        Unit::Seconds => format_ns(value * 1e9),
        Unit::Nanoseconds => format_ns(value),
        Unit::Ratio => format!("{value:.2}"),
        Unit::Count => format!("{value:.0}"),
    }
}

/// A value of a metric in a table whose every row names its metric and holds cells of every
/// kind (`compare`'s): a rate without what it counts, which differs from cell to cell
/// (messages, or a completion-driven cell's cold commands).
pub fn format_compact(unit: Unit, value: f64) -> String {
    match unit {
        Unit::MessagesPerSecond => format_value(Unit::PerSecond, value),
        unit => format_value(unit, value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_read_well() {
        assert_eq!(format_ns(850.0), "850 ns");
        assert_eq!(format_ns(12_345.0), "12.3 us");
        assert_eq!(format_ns(2_500_000.0), "2.5 ms");
        assert_eq!(format_ns(3e9), "3.00 s");
        assert_eq!(format_rate(1_234_567.0), "1.23M");
        assert_eq!(format_rate(45_600.0), "45.6k");
        assert_eq!(format_value(Unit::MessagesPerSecond, 45_600.0), "45.6k msg/s");
        assert_eq!(format_compact(Unit::MessagesPerSecond, 45_600.0), "45.6k/s");
        assert_eq!(format_value(Unit::Seconds, 0.0025), "2.5 ms");
        assert_eq!(format_value(Unit::Ratio, 0.874), "0.87");
        assert_eq!(format_figure(Unit::MessagesPerSecond, 45_600.0), "45.6k");
        assert_eq!(format_figure(Unit::Nanoseconds, 12_345.0), "12.3 us");
    }
}
