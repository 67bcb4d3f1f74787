//! The flag parsers that several subcommands share: a ranged number, a duration.

use std::time::Duration;

use crate::config::range_of;
use crate::limits::NumberParser;

/// The longest duration a flag accepts (`--duration`, `--cell-timeout`).
const MAX_DURATION: Duration = Duration::from_secs(24 * 3_600);

/// The value parser of `--{flag}`, one of the ranged numeric flags of `keyed-bench run`.
pub(crate) fn number<T>(flag: &'static str) -> NumberParser<T> {
    NumberParser::new(range_of(flag).unwrap_or_else(|| unreachable!("--{flag} has a range")))
}

/// `30s`, `500ms`, `2m`, `1.5h`, `1h 30m`: numbers with units, as humantime reads them;
/// `None` if malformed or outside 1 ms ..= 24 h.
pub fn parse_duration(given: &str) -> Option<Duration> {
    let duration = humantime::parse_duration(given.trim()).ok()?;
    (Duration::from_millis(1)..=MAX_DURATION).contains(&duration).then_some(duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_a_unit_and_a_sane_size() {
        let seconds = |given: &str| parse_duration(given).map(|d| d.as_secs_f64());
        assert_eq!(seconds("30s"), Some(30.0));
        assert_eq!(seconds("500ms"), Some(0.5));
        assert_eq!(seconds("2m"), Some(120.0));
        assert_eq!(seconds("1.5h"), Some(5_400.0));
        assert_eq!(seconds("1h 30m"), Some(5_400.0));
        for bad in ["30", "s", "-1s", "0s", "25h", "3 weeks", "1.2.3s", ""] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
