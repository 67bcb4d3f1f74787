//! The consumer side of protocol v1 (docs/external.md, "Consumers"): a driver whose hello
//! says `consumes kafka POLICY` runs a Kafka consumer of its own (Parallel Consumer, say)
//! on a pipeline cell's topic and group, with its own commits, and reports each record its
//! handler starts and applies. The harness keeps the business state: an applied record's
//! line is its effect, which the harness applies to the cell's projection as it reads it.
//!
//! Written here once, both ways: the cell the harness sends (`consume` ... `go`, then
//! `stop` when it wants the consumer closed) and the lines it reads back (`s`, `a`,
//! `done`), refused with the reason when malformed.

use std::fmt::Write as _;

use super::protocol::{clip, numbers_after};

/// One incarnation of a consumer driver: where its log is and how to run it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConsumeInput {
    /// The scenario (informative).
    pub scenario: String,
    /// The cell's parameter (informative).
    pub param: String,
    /// 0 for the first process of the cell, 1 for the one started after the crash.
    pub incarnation: u32,
    /// The cluster's bootstrap servers.
    pub bootstrap: String,
    /// The log's topic.
    pub topic: String,
    /// The consumer group (every incarnation of the cell joins the same one).
    pub group: String,
    /// The consumer's session timeout, in milliseconds: how long the group keeps a
    /// killed member's partitions before the restarted one gets them.
    pub session_timeout_ms: u64,
    /// The topic's partitions.
    pub partitions: u32,
    /// Records in the topic.
    pub records: u64,
    /// The executor's worker threads.
    pub workers: usize,
    /// Its bound on records in flight.
    pub window: usize,
    /// CPU every record's handler burns, in nanoseconds.
    pub spin_ns: u64,
    /// The records that wait on a slow dependency after their spin: partition, offset and
    /// the wait in nanoseconds.
    pub slow: Vec<(u32, u64, u64)>,
}

impl ConsumeInput {
    /// The incarnation's lines, from `consume` to `go` (the header is written before).
    pub fn write(&self, out: &mut String) {
        out.push_str("consume\n");
        let _ = writeln!(out, "scenario {}", self.scenario);
        let _ = writeln!(out, "param {}", self.param);
        let _ = writeln!(out, "incarnation {}", self.incarnation);
        let _ = writeln!(out, "bootstrap {}", self.bootstrap);
        let _ = writeln!(out, "topic {}", self.topic);
        let _ = writeln!(out, "group {}", self.group);
        let _ = writeln!(out, "session-timeout-ms {}", self.session_timeout_ms);
        let _ = writeln!(out, "partitions {}", self.partitions);
        let _ = writeln!(out, "records {}", self.records);
        let _ = writeln!(out, "workers {}", self.workers);
        let _ = writeln!(out, "window {}", self.window);
        let _ = writeln!(out, "spin {}", self.spin_ns);
        for (partition, offset, wait_ns) in &self.slow {
            let _ = writeln!(out, "slow {partition} {offset} {wait_ns}");
        }
        out.push_str("go\n");
    }
}

/// The line that asks a consumer driver to close its consumer (committing what completed,
/// as its close does) and say `done`.
pub const STOP: &str = "stop";

/// A line of a consumer driver's output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsumerLine {
    /// `s P O`: its handler started the record at partition P, offset O (a delivery).
    Started {
        /// The record's partition.
        partition: u32,
        /// Its offset.
        offset: u64,
    },
    /// `a P O KEY VERSION`: its handler applied that record, which carried KEY and VERSION.
    Applied {
        /// The record's partition.
        partition: u32,
        /// Its offset.
        offset: u64,
        /// The aggregate the record's key names.
        key: u64,
        /// The version its value carries.
        version: u64,
    },
    /// `done`: it closed its consumer after a `stop`.
    Done,
}

/// Reads one line of a consumer driver's output; the error says why it is not one.
pub fn parse_consumer_line(line: &str) -> Result<ConsumerLine, String> {
    let words: Vec<&str> = line.split(' ').collect();
    let numbers = |count: usize| numbers_after(line, &words, count);
    let partition = |n: u64| {
        u32::try_from(n).map_err(|_| format!("partition {n} is too large: `{}`", clip(line)))
    };
    Ok(match words[0] {
        "s" => {
            let n = numbers(2)?;
            ConsumerLine::Started { partition: partition(n[0])?, offset: n[1] }
        }
        "a" => {
            let n = numbers(4)?;
            ConsumerLine::Applied {
                partition: partition(n[0])?,
                offset: n[1],
                key: n[2],
                version: n[3],
            }
        }
        "done" => {
            numbers(0)?;
            ConsumerLine::Done
        }
        _ => return Err(format!("unknown line `{}`", clip(line))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_lines_a_consumer_writes_are_read() {
        assert_eq!(
            parse_consumer_line("s 3 17"),
            Ok(ConsumerLine::Started { partition: 3, offset: 17 })
        );
        assert_eq!(
            parse_consumer_line("a 3 17 42 5"),
            Ok(ConsumerLine::Applied { partition: 3, offset: 17, key: 42, version: 5 })
        );
        assert_eq!(parse_consumer_line("done"), Ok(ConsumerLine::Done));
    }

    #[test]
    fn malformed_consumer_lines_are_refused_with_the_reason() {
        for (line, why) in [
            ("", "unknown line"),
            ("s 1", "takes 2 numbers"),
            ("a 1 2 3", "takes 4 numbers"),
            ("a 1 2 3 -4", "is not a number"),
            ("s 4294967296 0", "partition 4294967296 is too large"),
            ("done 1", "takes 0 numbers"),
            ("r 0 0 0 0 0 0 0", "unknown line"),
        ] {
            let error = parse_consumer_line(line).unwrap_err();
            assert!(error.contains(why), "{line:?}: {error}");
        }
    }

    #[test]
    fn the_input_names_every_setting_once_and_ends_with_go() {
        let input = ConsumeInput {
            scenario: "pipeline-crash".into(),
            param: "policy=contiguous+metadata".into(),
            bootstrap: "127.0.0.1:9092".into(),
            topic: "t".into(),
            group: "g".into(),
            slow: vec![(1, 2, 3)],
            ..ConsumeInput::default()
        };
        let mut out = String::new();
        input.write(&mut out);
        assert!(out.starts_with("consume\nscenario pipeline-crash\n"), "{out}");
        assert!(out.contains("\nslow 1 2 3\n"), "{out}");
        assert!(out.ends_with("go\n"), "{out}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Whatever a consumer driver writes, a line is read or refused: never a panic.
        #[test]
        fn any_consumer_line_is_read_or_refused(line in "\\PC{0,60}") {
            let _ = parse_consumer_line(&line);
        }

        /// The protocol's own words and numbers, in any arrangement.
        #[test]
        fn any_arrangement_of_consumer_words_is_read_or_refused(
            words in proptest::collection::vec(
                prop_oneof![
                    Just("s".to_owned()), Just("a".to_owned()), Just("done".to_owned()),
                    any::<u64>().prop_map(|n| n.to_string()),
                    Just("18446744073709551616".to_owned()), Just("-1".to_owned()), Just(String::new()),
                ],
                0..8,
            )
        ) {
            let _ = parse_consumer_line(&words.join(" "));
        }
    }
}
