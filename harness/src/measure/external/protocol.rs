//! The external-design protocol, version 1: what the harness writes to a driver's standard
//! input and what it reads back from its standard output (docs/external.md gives the whole
//! protocol with an example).
//!
//! Every line is words separated by single spaces, a keyword first; numbers are decimal
//! integers. Both sides are written here once: the harness's (a cell in, records out) and a
//! driver's (a cell parsed, records written), so that the reference driver and the harness
//! cannot disagree on a word. A driver's output is untrusted: [`parse_output_line`] and
//! [`Hello::parse`] refuse anything malformed with the reason, and never panic.

use std::fmt::Write as _;
use std::ops::Range;

use strategies::{Job, Key, Message};

/// The first line of every session, both ways: the protocol and its version.
pub const HEADER: &str = "keyed-bench-external 1";

/// The arrival kinds a driver may run (the hello's `arrivals` line names those it does).
pub const ARRIVALS: [&str; 4] = ["closed", "paced", "driven", "saga"];

/// What a driver says of itself, before any cell (the hello): its descriptor's facts,
/// its version, what it can run and the sources the harness hashes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hello {
    /// One line on what it is (`name`).
    pub name: String,
    /// Its version, or its executor's (`version`).
    pub version: String,
    /// `mailboxes`, `hash-groups`, `inline` or `unordered` (`family`).
    pub family: String,
    /// Whether it promises per-key order (`ordered true|false`).
    pub ordered: bool,
    /// `shared-pool`, `pool-per-type` or `caller` (`threads`).
    pub threads: String,
    /// The arrival kinds it runs, of [`ARRIVALS`] (`arrivals closed paced ...`).
    pub arrivals: Vec<String>,
    /// The most producer threads it runs (`producers N`; 1 if not said).
    pub producers: usize,
    /// How it runs a non-blocking wait (`wait ...`): its executor's own mechanism.
    pub wait: String,
    /// Files or folders, relative to the working directory, whose contents are its source
    /// (`source a b ...`): the harness hashes them.
    pub sources: Vec<String>,
    /// The log it consumes as a pipeline consumer and the commit policy its own code
    /// follows (`consumes kafka contiguous+metadata`), if it is one (module `consume`).
    pub consumes: Option<Consumes>,
}

/// What a consumer driver's hello says it consumes: a broker's kind and the commit policy
/// its own commits follow, whose row of pipeline-crash its cell sits in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consumes {
    /// The broker it reads (`kafka`, of [`CONSUMES`]).
    pub broker: String,
    /// The commit policy its commits follow.
    pub policy: crate::results::CommitPolicy,
}

/// The brokers a consumer driver may read.
pub const CONSUMES: [&str; 1] = ["kafka"];

impl Hello {
    /// The hello's lines, as a driver writes them (ending with `ready`).
    pub fn lines(&self) -> String {
        let mut out = format!("{HEADER}\n");
        let _ = writeln!(out, "name {}", self.name);
        let _ = writeln!(out, "version {}", self.version);
        let _ = writeln!(out, "family {}", self.family);
        let _ = writeln!(out, "ordered {}", self.ordered);
        let _ = writeln!(out, "threads {}", self.threads);
        let _ = writeln!(out, "arrivals {}", self.arrivals.join(" "));
        if let Some(consumes) = &self.consumes {
            let _ = writeln!(out, "consumes {} {}", consumes.broker, consumes.policy.as_str());
        }
        let _ = writeln!(out, "producers {}", self.producers);
        let _ = writeln!(out, "wait {}", self.wait);
        let _ = writeln!(out, "source {}", self.sources.join(" "));
        out.push_str("ready\n");
        out
    }

    /// Reads a hello from its lines (header to `ready`, neither included): every line
    /// known, `name`, `version`, `family`, `ordered`, `threads`, `arrivals`, `wait` and
    /// `source` given once each.
    pub fn parse(lines: &[String]) -> Result<Self, String> {
        let mut hello = Self { producers: 1, ..Self::default() };
        let mut seen: Vec<&str> = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            let at = |why: String| format!("hello line {}: {why}", index + 2);
            let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
            if seen.contains(&word) {
                return Err(at(format!("`{word}` given twice")));
            }
            let rest = rest.trim();
            match word {
                "name" => hello.name = rest.to_owned(),
                "version" => hello.version = rest.to_owned(),
                "family" => hello.family = rest.to_owned(),
                "ordered" => {
                    hello.ordered = match rest {
                        "true" => true,
                        "false" => false,
                        _ => return Err(at(format!("`ordered {rest}`: true or false"))),
                    }
                }
                "threads" => hello.threads = rest.to_owned(),
                "arrivals" => hello.arrivals = parse_arrivals(rest).map_err(at)?,
                "producers" => {
                    hello.producers = match rest.parse::<usize>() {
                        Ok(n) if (1..=64).contains(&n) => n,
                        _ => return Err(at(format!("`producers {rest}`: a number in 1..=64"))),
                    }
                }
                "wait" => hello.wait = rest.to_owned(),
                "source" => hello.sources = rest.split_whitespace().map(str::to_owned).collect(),
                "consumes" => hello.consumes = Some(parse_consumes(rest).map_err(at)?),
                _ => return Err(at(format!("unknown line `{}`", clip(line)))),
            }
            seen.push(word);
        }
        let required =
            ["name", "version", "family", "ordered", "threads", "arrivals", "wait", "source"];
        let missing: Vec<&str> = required.into_iter().filter(|word| !seen.contains(word)).collect();
        if !missing.is_empty() {
            return Err(format!("the hello lacks {}", missing.join(", ")));
        }
        for (word, value) in
            [("name", &hello.name), ("version", &hello.version), ("wait", &hello.wait)]
        {
            if value.is_empty() {
                return Err(format!("the hello's `{word}` is empty"));
            }
        }
        if hello.arrivals.is_empty() && hello.consumes.is_none() {
            return Err(
                "the hello's `arrivals` names no arrival kind, and it consumes no log".into()
            );
        }
        if hello.sources.is_empty() {
            return Err("the hello's `source` names no file".into());
        }
        Ok(hello)
    }

    /// Whether it runs arrivals of `kind` (of [`ARRIVALS`]).
    pub fn runs(&self, kind: &str) -> bool {
        self.arrivals.iter().any(|arrival| arrival == kind)
    }
}

/// A hello's `consumes BROKER POLICY`.
fn parse_consumes(rest: &str) -> Result<Consumes, String> {
    let usage =
        || format!("`consumes {rest}`: a broker ({}) and a commit policy", CONSUMES.join(", "));
    let mut words = rest.split(' ');
    let (Some(broker), Some(policy), None) = (words.next(), words.next(), words.next()) else {
        return Err(usage());
    };
    if !CONSUMES.contains(&broker) {
        return Err(usage());
    }
    let policy = policy.parse().map_err(|error| format!("`consumes {rest}`: {error}"))?;
    Ok(Consumes { broker: broker.to_owned(), policy })
}

/// The arrival kinds a hello's `arrivals` line names, each of [`ARRIVALS`].
fn parse_arrivals(rest: &str) -> Result<Vec<String>, String> {
    let arrivals: Vec<String> = rest.split_whitespace().map(str::to_owned).collect();
    match arrivals.iter().find(|arrival| !ARRIVALS.contains(&arrival.as_str())) {
        Some(bad) => Err(format!("unknown arrival kind `{bad}` (known: {})", ARRIVALS.join(", "))),
        None => Ok(arrivals),
    }
}

/// A job as the protocol writes it: `noop`, `spin NS`, `block NS`, `wait NS`,
/// `retry RETRIES BACKOFF_NS SPIN_NS` or `touch LINES SPIN_NS`.
pub fn write_job(out: &mut String, job: &Job) {
    let _ = match *job {
        Job::Noop | Job::Panic | Job::Custom(_) => write!(out, "noop"),
        Job::Spin { ns } => write!(out, "spin {ns}"),
        Job::Block { ns } => write!(out, "block {ns}"),
        Job::Wait { ns } => write!(out, "wait {ns}"),
        Job::Retry { retries, backoff_ns, spin_ns } => {
            write!(out, "retry {retries} {backoff_ns} {spin_ns}")
        }
        Job::Touch { lines, spin_ns } => write!(out, "touch {lines} {spin_ns}"),
    };
}

/// Reads a job from its words (see [`write_job`]).
pub fn parse_job(words: &[&str]) -> Result<Job, String> {
    let number = |index: usize| -> Result<u32, String> {
        let word = words.get(index).ok_or_else(|| format!("`{}` lacks a number", words[0]))?;
        word.parse().map_err(|_| format!("`{word}` is not a number"))
    };
    let arity = |n: usize| {
        if words.len() == n + 1 {
            Ok(())
        } else {
            Err(format!("`{}` takes {n} numbers", words[0]))
        }
    };
    let job = match *words.first().ok_or("a job is missing")? {
        "noop" => arity(0).map(|()| Job::Noop)?,
        "spin" => arity(1).and_then(|()| Ok(Job::Spin { ns: number(1)? }))?,
        "block" => arity(1).and_then(|()| Ok(Job::Block { ns: number(1)? }))?,
        "wait" => arity(1).and_then(|()| Ok(Job::Wait { ns: number(1)? }))?,
        "retry" => {
            arity(3)?;
            let retries = u8::try_from(number(1)?).map_err(|_| "retries above 255".to_owned())?;
            Job::Retry { retries, backoff_ns: number(2)?, spin_ns: number(3)? }
        }
        "touch" => {
            arity(2).and_then(|()| Ok(Job::Touch { lines: number(1)?, spin_ns: number(2)? }))?
        }
        other => return Err(format!("unknown job `{other}`")),
    };
    Ok(job)
}

/// What the harness sends for one cell, after the header: its settings, its messages and
/// the plan of a completion-driven or saga workload.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CellInput {
    /// The scenario's id and its parameter (informative).
    pub scenario: String,
    /// The workload's parameter (`keys=20`), empty where it has none.
    pub param: String,
    /// Worker threads.
    pub workers: usize,
    /// The admission window.
    pub window: usize,
    /// Messages a mailbox runs per turn.
    pub throughput: usize,
    /// Timed repetitions.
    pub repeat: usize,
    /// The first this many messages, with `noop` jobs, are the warm-up: run, drained and
    /// not reported.
    pub warmup: usize,
    /// Producer threads (closed and paced): keys partitioned among them.
    pub producers: usize,
    /// `closed`, `paced` or `driven`.
    pub arrivals: String,
    /// Aggregate ids are `0..keys`.
    pub keys: usize,
    /// Bytes of state each aggregate owns (`touch` jobs read and write it); 0 for most.
    pub state_bytes: usize,
    /// The workload, in submission order; a paced message is due at `intended_ns` after
    /// its repetition's origin.
    pub messages: Vec<Message>,
    /// A saga chain of a paced workload: its key, steps per repetition and job.
    pub saga: Option<(u64, u64, Job)>,
    /// A completion-driven workload's chains (index ranges of `messages`).
    pub chains: Vec<Range<usize>>,
    /// Its hot aggregate: key, messages kept in flight, job.
    pub hot: Option<(u64, usize, Job)>,
    /// Its measured senders (index ranges of `messages`).
    pub senders: Vec<Range<usize>>,
    /// How long its senders send, in nanoseconds.
    pub duration_ns: u64,
}

impl CellInput {
    /// The cell's lines, from `cell` to `go` (the header is written before).
    pub fn write(&self, out: &mut String) {
        let _ = writeln!(out, "cell");
        let _ = writeln!(out, "scenario {}", self.scenario);
        let _ = writeln!(out, "param {}", self.param);
        for (word, value) in [
            ("workers", self.workers),
            ("window", self.window),
            ("throughput", self.throughput),
            ("repeat", self.repeat),
            ("warmup", self.warmup),
            ("producers", self.producers),
        ] {
            let _ = writeln!(out, "{word} {value}");
        }
        let _ = writeln!(out, "arrivals {}", self.arrivals);
        let _ = writeln!(out, "keys {}", self.keys);
        let _ = writeln!(out, "state-bytes {}", self.state_bytes);
        let _ = writeln!(out, "messages {}", self.messages.len());
        for message in &self.messages {
            let Key { aggregate_type, aggregate_id } = message.key;
            let _ = write!(
                out,
                "m {aggregate_type} {aggregate_id} {} {} ",
                message.seq, message.intended_ns
            );
            write_job(out, &message.job);
            out.push('\n');
        }
        if let Some((key, steps, job)) = &self.saga {
            let _ = write!(out, "saga {key} {steps} ");
            write_job(out, job);
            out.push('\n');
        }
        for chain in &self.chains {
            let _ = writeln!(out, "chain {} {}", chain.start, chain.end);
        }
        if let Some((key, outstanding, job)) = &self.hot {
            let _ = write!(out, "hot {key} {outstanding} ");
            write_job(out, job);
            out.push('\n');
        }
        for sender in &self.senders {
            let _ = writeln!(out, "sender {} {}", sender.start, sender.end);
        }
        if self.arrivals == "driven" {
            let _ = writeln!(out, "duration {}", self.duration_ns);
        }
        out.push_str("go\n");
    }

    /// Reads a cell from its lines (a driver's side): `lines` yields the lines after
    /// `cell`, up to and including `go`.
    pub fn parse(lines: &mut dyn Iterator<Item = String>) -> Result<Self, String> {
        let mut cell = Self::default();
        let mut expected = None;
        for (index, line) in lines.enumerate() {
            let at = |why: String| format!("cell line {}: {why}", index + 1);
            let words: Vec<&str> = line.split(' ').collect();
            let number = |i: usize| -> Result<u64, String> {
                words
                    .get(i)
                    .and_then(|w| w.parse().ok())
                    .ok_or_else(|| at(format!("`{line}`: a number expected")))
            };
            let range =
                || -> Result<Range<usize>, String> { Ok(number(1)? as usize..number(2)? as usize) };
            match words[0] {
                "scenario" => cell.scenario = words[1..].join(" "),
                "param" => cell.param = words[1..].join(" "),
                "workers" => cell.workers = number(1)? as usize,
                "window" => cell.window = number(1)? as usize,
                "throughput" => cell.throughput = number(1)? as usize,
                "repeat" => cell.repeat = number(1)? as usize,
                "warmup" => cell.warmup = number(1)? as usize,
                "producers" => cell.producers = number(1)? as usize,
                "arrivals" => cell.arrivals = words[1..].join(" "),
                "keys" => cell.keys = number(1)? as usize,
                "state-bytes" => cell.state_bytes = number(1)? as usize,
                "messages" => {
                    let count = number(1)? as usize;
                    expected = Some(count);
                    cell.messages.reserve(count);
                }
                "m" => {
                    let key = Key::new(number(1)? as u32, number(2)?);
                    let job = parse_job(words.get(5..).unwrap_or(&[])).map_err(at)?;
                    cell.messages.push(Message {
                        key,
                        seq: number(3)?,
                        intended_ns: number(4)?,
                        job,
                    });
                }
                "saga" => {
                    cell.saga = Some((
                        number(1)?,
                        number(2)?,
                        parse_job(words.get(3..).unwrap_or(&[])).map_err(at)?,
                    ))
                }
                "chain" => cell.chains.push(range()?),
                "hot" => {
                    cell.hot = Some((
                        number(1)?,
                        number(2)? as usize,
                        parse_job(words.get(3..).unwrap_or(&[])).map_err(at)?,
                    ))
                }
                "sender" => cell.senders.push(range()?),
                "duration" => cell.duration_ns = number(1)?,
                "go" if expected == Some(cell.messages.len()) => return Ok(cell),
                "go" => {
                    let given = cell.messages.len();
                    return Err(format!(
                        "the cell announced {expected:?} messages and gave {given}"
                    ));
                }
                other => return Err(at(format!("unknown line `{}`", clip(other)))),
            }
        }
        Err("the cell ended before `go`".into())
    }
}

/// One handled message as a driver reports it: times in nanoseconds from its repetition's
/// origin, on a monotonic clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Its aggregate.
    pub key: Key,
    /// Its sequence number within the key.
    pub seq: u64,
    /// When the driver submitted it to its executor.
    pub submit_ns: u64,
    /// When its handler started.
    pub start_ns: u64,
    /// When its last step completed.
    pub end_ns: u64,
    /// The thread that started it, as the driver numbers its threads.
    pub thread: u64,
}

/// A repetition's end, as a driver reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepEnd {
    /// Which repetition (0, 1, ...).
    pub rep: usize,
    /// When its last message was submitted.
    pub last_send_ns: u64,
    /// When its last message ended and everything was drained.
    pub finished_ns: u64,
}

/// One line of a driver's output after its hello.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputLine {
    /// `warmup NS`: the driver ran a warm-up of its own for this long (excluded).
    Warmup(u64),
    /// `rep I`: repetition `I` begins; its records follow.
    Rep(usize),
    /// `r TYPE ID SEQ SUBMIT START END THREAD`.
    Record(Record),
    /// `sent ID COUNT`: a completion-driven repetition sent the first `COUNT` messages of
    /// key `ID` (before its `end`).
    Sent(u64, u64),
    /// `gc COLLECTIONS NS`: the driver's runtime collected garbage this often, for this
    /// long, during the repetition (before its `end`; optional).
    Gc(u64, u64),
    /// `end I LAST_SEND FINISHED`.
    End(RepEnd),
    /// `done`: every repetition was reported.
    Done,
}

impl OutputLine {
    /// The line as a driver writes it (with its newline).
    pub fn write(&self, out: &mut String) {
        let _ = match self {
            Self::Warmup(ns) => writeln!(out, "warmup {ns}"),
            Self::Rep(rep) => writeln!(out, "rep {rep}"),
            Self::Record(r) => writeln!(
                out,
                "r {} {} {} {} {} {} {}",
                r.key.aggregate_type,
                r.key.aggregate_id,
                r.seq,
                r.submit_ns,
                r.start_ns,
                r.end_ns,
                r.thread
            ),
            Self::Sent(id, count) => writeln!(out, "sent {id} {count}"),
            Self::Gc(collections, ns) => writeln!(out, "gc {collections} {ns}"),
            Self::End(end) => {
                writeln!(out, "end {} {} {}", end.rep, end.last_send_ns, end.finished_ns)
            }
            Self::Done => writeln!(out, "done"),
        };
    }
}

/// The first 80 characters of `text`, for an error message.
pub fn clip(text: &str) -> String {
    let mut clipped: String = text.chars().take(80).collect();
    if clipped.len() < text.len() {
        clipped.push_str("...");
    }
    clipped.escape_debug().to_string()
}

/// The `count` numbers after the keyword of `line` (split into `words`); the error says
/// why they are not.
pub(super) fn numbers_after(line: &str, words: &[&str], count: usize) -> Result<Vec<u64>, String> {
    if words.len() != count + 1 {
        return Err(format!("`{}` takes {count} numbers: `{}`", clip(words[0]), clip(line)));
    }
    words[1..]
        .iter()
        .map(|word| {
            word.parse::<u64>()
                .map_err(|_| format!("`{}` is not a number: `{}`", clip(word), clip(line)))
        })
        .collect()
}

/// Reads one line of a driver's output after its hello; the error says why it is not one.
pub fn parse_output_line(line: &str) -> Result<OutputLine, String> {
    let words: Vec<&str> = line.split(' ').collect();
    let numbers = |count: usize| numbers_after(line, &words, count);
    let index = |n: u64| usize::try_from(n).map_err(|_| format!("{n} is too large"));
    Ok(match words[0] {
        "warmup" => OutputLine::Warmup(numbers(1)?[0]),
        "rep" => OutputLine::Rep(index(numbers(1)?[0])?),
        "r" => {
            let n = numbers(7)?;
            let aggregate_type =
                u32::try_from(n[0]).map_err(|_| format!("type {} is too large", n[0]))?;
            OutputLine::Record(Record {
                key: Key::new(aggregate_type, n[1]),
                seq: n[2],
                submit_ns: n[3],
                start_ns: n[4],
                end_ns: n[5],
                thread: n[6],
            })
        }
        "sent" => {
            let n = numbers(2)?;
            OutputLine::Sent(n[0], n[1])
        }
        "gc" => {
            let n = numbers(2)?;
            OutputLine::Gc(n[0], n[1])
        }
        "end" => {
            let n = numbers(3)?;
            OutputLine::End(RepEnd { rep: index(n[0])?, last_send_ns: n[1], finished_ns: n[2] })
        }
        "done" => {
            numbers(0)?;
            OutputLine::Done
        }
        _ => return Err(format!("unknown line `{}`", clip(line))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn jobs() -> Vec<Job> {
        vec![
            Job::Noop,
            Job::Spin { ns: 5 },
            Job::Block { ns: 7 },
            Job::Wait { ns: u32::MAX },
            Job::Retry { retries: 3, backoff_ns: 100, spin_ns: 9 },
            Job::Touch { lines: 4, spin_ns: 2 },
        ]
    }

    #[test]
    fn a_cell_reads_back_as_written() {
        let messages = jobs()
            .into_iter()
            .enumerate()
            .map(|(i, job)| Message {
                key: Key::new(1, i as u64),
                seq: 0,
                intended_ns: i as u64 * 10,
                job,
            })
            .collect();
        let cell = CellInput {
            scenario: "cold-command".into(),
            param: "slow=2 senders=1".into(),
            workers: 2,
            window: 256,
            throughput: 16,
            repeat: 3,
            warmup: 1,
            producers: 1,
            arrivals: "driven".into(),
            keys: 6,
            state_bytes: 0,
            messages,
            saga: Some((9, 100, Job::Spin { ns: 1 })),
            chains: vec![0..2, 2..3],
            hot: Some((7, 8, Job::Wait { ns: 10 })),
            senders: vec![3..4, 4..6],
            duration_ns: 1_000_000,
        };
        let mut text = String::new();
        cell.write(&mut text);
        let mut lines = text.lines().map(str::to_owned);
        assert_eq!(lines.next().as_deref(), Some("cell"));
        assert_eq!(CellInput::parse(&mut lines), Ok(cell));
    }

    #[test]
    fn a_hello_reads_back_as_written_and_says_what_it_lacks() {
        let hello = Hello {
            name: "a driver".into(),
            version: "1.0".into(),
            family: "mailboxes".into(),
            ordered: true,
            threads: "shared-pool".into(),
            arrivals: vec!["closed".into(), "paced".into()],
            producers: 4,
            wait: "a timer thread".into(),
            sources: vec!["src/a.rs".into()],
            consumes: None,
        };
        let text = hello.lines();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        assert_eq!(lines.first().map(String::as_str), Some(HEADER));
        assert_eq!(lines.last().map(String::as_str), Some("ready"));
        let body = &lines[1..lines.len() - 1];
        assert_eq!(Hello::parse(body), Ok(hello.clone()));
        assert!(hello.runs("paced") && !hello.runs("driven"));
        let without_wait: Vec<String> =
            body.iter().filter(|l| !l.starts_with("wait")).cloned().collect();
        assert_eq!(Hello::parse(&without_wait).unwrap_err(), "the hello lacks wait");
        let mut twice = body.to_vec();
        twice.push("name again".into());
        assert!(Hello::parse(&twice).unwrap_err().contains("`name` given twice"));
        let mut odd = body.to_vec();
        odd[5] = "arrivals closed telepathy".into();
        assert!(Hello::parse(&odd).unwrap_err().contains("unknown arrival kind `telepathy`"));
    }

    #[test]
    fn a_consumer_hello_names_its_broker_and_policy_and_may_run_no_arrivals() {
        let consumer = Hello {
            arrivals: Vec::new(),
            consumes: Some(Consumes {
                broker: "kafka".into(),
                policy: crate::results::CommitPolicy::ContiguousMetadata,
            }),
            name: "a consumer".into(),
            version: "1".into(),
            family: "mailboxes".into(),
            ordered: true,
            threads: "shared-pool".into(),
            producers: 1,
            wait: "none".into(),
            sources: vec!["src/a.rs".into()],
        };
        let text = consumer.lines();
        assert!(text.contains("\nconsumes kafka contiguous+metadata\n"), "{text}");
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        let body = &lines[1..lines.len() - 1];
        assert_eq!(Hello::parse(body), Ok(consumer));
        for (line, why) in [
            ("consumes kafka", "a broker (kafka) and a commit policy"),
            ("consumes pulsar contiguous", "a broker (kafka) and a commit policy"),
            ("consumes kafka sometimes", "unknown commit policy"),
        ] {
            let mut bad = body.to_vec();
            let at = bad.iter().position(|l| l.starts_with("consumes")).expect("its line");
            bad[at] = line.into();
            let error = Hello::parse(&bad).unwrap_err();
            assert!(error.contains(why), "{line}: {error}");
        }
        let neither: Vec<String> =
            body.iter().filter(|l| !l.starts_with("consumes")).cloned().collect();
        assert!(Hello::parse(&neither).unwrap_err().contains("it consumes no log"));
    }

    #[test]
    fn output_lines_read_back_as_written() {
        let lines = [
            OutputLine::Warmup(5),
            OutputLine::Rep(2),
            OutputLine::Record(Record {
                key: Key::new(3, 4),
                seq: 5,
                submit_ns: 6,
                start_ns: 7,
                end_ns: 8,
                thread: 9,
            }),
            OutputLine::Sent(1, 2),
            OutputLine::Gc(3, 4),
            OutputLine::End(RepEnd { rep: 2, last_send_ns: 10, finished_ns: 11 }),
            OutputLine::Done,
        ];
        for line in lines {
            let mut text = String::new();
            line.write(&mut text);
            assert_eq!(parse_output_line(text.trim_end()), Ok(line));
        }
    }

    #[test]
    fn malformed_output_lines_are_refused_with_the_reason() {
        for (line, why) in [
            ("", "unknown line"),
            ("r 1 2 3", "takes 7 numbers"),
            ("r 1 2 3 4 5 6 -7", "is not a number"),
            ("r 4294967296 0 0 0 0 0 0", "type 4294967296 is too large"),
            ("end 0 1", "takes 3 numbers"),
            ("done now", "takes 0 numbers"),
            ("rep x", "is not a number"),
            ("R 1 2 3 4 5 6 7", "unknown line"),
            ("r  1 2 3 4 5 6", "is not a number"),
        ] {
            let error = parse_output_line(line).unwrap_err();
            assert!(error.contains(why), "{line:?}: {error}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        /// Whatever a driver writes, a line is read or refused: never a panic.
        #[test]
        fn any_line_is_read_or_refused(line in "\\PC{0,60}") {
            let _ = parse_output_line(&line);
        }

        /// Lines made of the protocol's own words and numbers, in any arrangement.
        #[test]
        fn any_arrangement_of_protocol_words_is_read_or_refused(
            words in proptest::collection::vec(
                prop_oneof![
                    Just("r".to_owned()), Just("end".to_owned()), Just("rep".to_owned()),
                    Just("sent".to_owned()), Just("done".to_owned()), Just("warmup".to_owned()),
                    any::<u64>().prop_map(|n| n.to_string()),
                    Just("18446744073709551616".to_owned()), Just("-1".to_owned()), Just(String::new()),
                ],
                0..10,
            )
        ) {
            let _ = parse_output_line(&words.join(" "));
        }

        /// Any hello lines: read or refused, never a panic.
        #[test]
        fn any_hello_is_read_or_refused(lines in proptest::collection::vec("[a-z]{0,9}( \\PC{0,12})?", 0..12)) {
            let _ = Hello::parse(&lines);
        }
    }
}
