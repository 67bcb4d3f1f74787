//! Durations and rates as people read them, for the summary, the charts and the report.

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
    }
}
