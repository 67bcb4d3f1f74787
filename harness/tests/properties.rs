//! Property tests: the parsers of every user input accept exactly their domain and never
//! panic, and the recorder's correctness check is silent on every valid delivery and names
//! exactly the fault injected into an otherwise valid one.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::OnceLock;

use clap::Parser;
use harness::cli::gate::GateArgs;
use harness::cli::RunArgs;
use harness::config::{flag_ranges, FlagRange, RunConfig};
use harness::gate::{parse_baseline, parse_rules, run_gate, Format, GateConfig};
use harness::measure::recorder::{Clock, Recorder};
use harness::results::{Correctness, Interference, Results, Samples};
use harness::workload::ScenarioId;
use proptest::prelude::*;
use strategies::{Job, Key, Message, StrategyId};

fn config() -> ProptestConfig {
    ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() }
}

/// The committed reference run's text.
const REFERENCE: &str = include_str!("../../results/2026-11-30-vm/results.json");

/// The committed reference run, parsed once.
fn reference() -> Results {
    static PARSED: OnceLock<Results> = OnceLock::new();
    PARSED
        .get_or_init(|| Results::parse(REFERENCE.as_bytes(), Path::new("reference")).unwrap())
        .clone()
}

/// The committed reference run as JSON, parsed once.
fn reference_json() -> serde_json::Value {
    static PARSED: OnceLock<serde_json::Value> = OnceLock::new();
    PARSED.get_or_init(|| serde_json::from_str(REFERENCE).unwrap()).clone()
}

// ---------------------------------------------------------------------------------------
// Ids
// ---------------------------------------------------------------------------------------

/// Strings near the ids: the ids themselves, changed a little, and anything at all.
fn id_like(ids: Vec<&'static str>) -> impl Strategy<Value = String> {
    let exact = prop::sample::select(ids.clone()).prop_map(str::to_owned);
    let changed =
        (prop::sample::select(ids), 0..6usize, any::<char>()).prop_map(|(id, how, c)| match how {
            0 => id.to_uppercase(),
            1 => format!(" {id}"),
            2 => format!("{id}{c}"),
            3 => id[..id.len() - 1].to_owned(),
            4 => id.replace('-', "_"),
            _ => format!("{c}{id}"),
        });
    prop_oneof![exact, changed, any::<String>()]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn strategy_ids_parse_exactly_their_display_ids(given in id_like(StrategyId::ALL.iter().map(|id| id.as_str()).collect())) {
        match given.parse::<StrategyId>() {
            Ok(id) => {
                prop_assert_eq!(id.as_str(), given.as_str());
                prop_assert_eq!(id.to_string(), given);
            }
            Err(error) => {
                prop_assert!(StrategyId::ALL.iter().all(|id| id.as_str() != given));
                prop_assert!(error.to_string().contains(&format!("`{given}`")), "{}", error);
            }
        }
    }

    #[test]
    fn scenario_ids_parse_exactly_their_display_ids(given in id_like(ScenarioId::ALL.iter().map(|id| id.as_str()).collect())) {
        match given.parse::<ScenarioId>() {
            Ok(id) => {
                prop_assert_eq!(id.as_str(), given.as_str());
                prop_assert_eq!(id.to_string(), given);
            }
            Err(error) => {
                prop_assert!(ScenarioId::ALL.iter().all(|id| id.as_str() != given));
                prop_assert!(error.to_string().contains(&format!("`{given}`")), "{}", error);
            }
        }
    }
}

#[test]
fn every_id_round_trips_through_its_display() {
    for id in StrategyId::ALL {
        assert_eq!(id.to_string().parse::<StrategyId>(), Ok(*id));
    }
    for id in ScenarioId::ALL {
        assert_eq!(id.to_string().parse::<ScenarioId>(), Ok(*id));
    }
}

// ---------------------------------------------------------------------------------------
// Flag values
// ---------------------------------------------------------------------------------------

#[derive(Debug, Parser)]
struct Run {
    #[command(flatten)]
    run: RunArgs,
}

/// Parses `keyed-bench run` flags as the binary does, then validates them.
fn run_config(flags: &[String]) -> Result<RunConfig, String> {
    let argv = std::iter::once("keyed-bench".to_owned()).chain(flags.iter().cloned());
    let args = Run::try_parse_from(argv).map_err(|error| error.to_string())?.run;
    RunConfig::try_from((args, "test".to_owned())).map_err(|error| error.to_string())
}

/// Every numeric flag of `run`, with its range.
fn ranges() -> Vec<FlagRange> {
    flag_ranges().collect()
}

/// Values around a range's ends, other numbers, and text without commas (a comma splits a
/// list flag's value).
fn flag_value(min: f64, max: f64) -> impl Strategy<Value = String> {
    let edges = (prop::sample::select(vec![min, max]), -2i64..=2).prop_map(|(end, step)| {
        let value = end + step as f64;
        if value.fract() == 0.0 && value.abs() < 1e18 {
            format!("{}", value as i64)
        } else {
            format!("{value}")
        }
    });
    let fractions = (prop::sample::select(vec![min, max]), -1.0f64..1.0)
        .prop_map(|(end, offset)| format!("{}", end + offset * end.abs().max(1.0) * 1e-3));
    prop_oneof![
        edges,
        fractions,
        any::<u64>().prop_map(|value| value.to_string()),
        any::<f64>().prop_map(|value| value.to_string()),
        "[-+0-9.eEinfaNI _x]{0,12}",
        "[^,]{0,12}",
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Every numeric flag of `run` accepts a value exactly when it is a number of the flag's
    /// type inside the range its help states; anything else is an error naming the flag.
    #[test]
    fn numeric_flags_accept_exactly_their_documented_range(
        (index, value) in (0..ranges().len()).prop_flat_map(|index| {
            let range = ranges()[index];
            (Just(index), flag_value(range.min, range.max))
        })
    ) {
        let range = ranges()[index];
        // Companions that keep the products (types x keys-per-type, threads, groups) and the
        // crash point (at most the pipeline's records) out of the way: each flag is checked
        // on its own here.
        let mut flags = vec![
            "--scenario=uniform".to_owned(),
            "--strategy=inline".to_owned(),
            "--out=/nonexistent/keyed-bench-properties".to_owned(),
        ];
        if range.flag == "keys-per-type" {
            flags.push("--types=1".to_owned());
        }
        if range.flag == "stateful-keys" {
            flags.push("--state-kib=1".to_owned());
        }
        if range.flag == "state-kib" {
            flags.push("--stateful-keys=1".to_owned());
        }
        if range.flag == "pipeline-records" {
            flags.push("--crash-after=1".to_owned());
            flags.push("--poison=0".to_owned());
        }
        if range.flag == "poison" {
            flags.push("--pipeline-records=100000000".to_owned());
        }
        if range.flag == "expand-to" {
            flags.push("--partitions=1".to_owned());
        }
        if range.flag == "crash-after" {
            flags.push("--pipeline-records=100000000".to_owned());
        }
        flags.push(format!("--{}={value}", range.flag));
        let number = if range.integer {
            // Whole numbers in decimal, `+5` included.
            value.parse::<i128>().ok().map(|value| value as f64)
        } else {
            value.parse::<f64>().ok()
        };
        // A negative zero is a question of spelling, not of range, and clap answers it by
        // type: a u32 flag (`--spin-ns`, read through i64) takes `-0`, a usize one
        // (`--cold-slow`, whose range holds 0) does not. Either answer is fine.
        prop_assume!(!(range.integer && value.starts_with('-') && number == Some(0.0)));
        let expected = number.is_some_and(|number| range.contains(number));
        match run_config(&flags) {
            Ok(_) => prop_assert!(expected, "--{}={} was accepted", range.flag, value),
            Err(error) => {
                prop_assert!(!expected, "--{}={} was rejected: {}", range.flag, value, error);
                prop_assert!(error.contains(&format!("--{}", range.flag)), "{}", error);
            }
        }
    }

    /// `gate --confirm` takes 0..=10 and says so before it reads anything.
    #[test]
    fn confirm_accepts_exactly_0_to_10(confirm in prop_oneof![0usize..=20, any::<usize>()]) {
        let args = GateArgs {
            results: "/nonexistent/results.json".into(),
            rules: Some("/nonexistent/gates.toml".into()),
            baseline: None,
            format: Format::Text,
            confirm,
            update_baseline: false,
            allow_incomplete: false,
        };
        let error = GateConfig::try_from(args)
            .map_err(|error| error.to_string())
            .and_then(|config| {
                run_gate(&config, &mut |_, _, _, _| Err("not here".into()), &mut |_| {})
                    .map_err(|error| error.to_string())
            })
            .unwrap_err();
        if confirm <= harness::gate::MAX_CONFIRM {
            prop_assert!(error.starts_with("cannot read /nonexistent/results.json"), "{}", error);
        } else {
            prop_assert_eq!(error, format!("--confirm must be in 0..=10, got {confirm}"));
        }
    }
}

// ---------------------------------------------------------------------------------------
// Gate rules and baselines
// ---------------------------------------------------------------------------------------

/// TOML text of one rule built from plausible and implausible field values.
fn rule_text() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec!["'r'", "''", "3", "'a b'"]);
    let kind = prop::sample::select(vec!["'absolute'", "'relative'", "'baseline'", "'other'", "1"]);
    let metric = prop::sample::select(vec![
        "'correctness'",
        "'violations'",
        "'throughput_vs_inline'",
        "'throughput_per_s.median'",
        "'efficiency'",
        "'threads.observed'",
        "'nope'",
        "'latency_ns'",
        "[]",
    ]);
    let strategies = prop::sample::select(vec![
        "'all'",
        "'ordered'",
        "'shared-pool'",
        "'keyed-mailbox'",
        "['inline', 'tokio']",
        "['inline', 'inline']",
        "[]",
        "'x'",
        "7",
    ]);
    let op = prop::sample::select(vec!["'>='", "'<='", "'=='", "'>'", "'<'", "0"]);
    let optional = prop::sample::select(vec![
        "",
        "value = 0",
        "value = 'workers'",
        "value = 'cores'",
        "value = nan",
        "value = -inf",
        "factor = 0.5",
        "factor = -1.0",
        "factor = nan",
        "of = 'group-by'",
        "of = 'nobody'",
        "tolerance = 0.2",
        "tolerance = 1.5",
        "tolerance = nan",
        "scenario = 'uniform'",
        "scenario = 'nowhere'",
        "param = 'keys=20'",
        "extra = 1",
    ]);
    (name, kind, metric, strategies, op, prop::collection::vec(optional, 0..4)).prop_map(
        |(name, kind, metric, strategies, op, optional)| {
            format!(
                "[[rule]]\nname = {name}\nkind = {kind}\nmetric = {metric}\n\
                 strategies = {strategies}\nop = {op}\n{}\n",
                optional.join("\n")
            )
        },
    )
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_rules_text_gives_rules_or_an_error_naming_the_file(text in prop_oneof![
        any::<String>(),
        prop::collection::vec(rule_text(), 0..3).prop_map(|rules| rules.concat()),
    ]) {
        let results = reference();
        match parse_rules(&text, Path::new("rules.toml"), &results) {
            Ok(rules) => {
                prop_assert!(!rules.is_empty());
                for rule in &rules {
                    prop_assert!(!rule.name.trim().is_empty());
                    if let Some(scenario) = &rule.scenario {
                        prop_assert!(scenario.parse::<ScenarioId>().is_ok());
                    }
                    if let Some(factor) = rule.factor {
                        prop_assert!(factor.is_finite() && factor > 0.0);
                    }
                }
            }
            Err(error) => prop_assert!(error.to_string().contains("rules.toml"), "{}", error),
        }
    }

    #[test]
    fn any_baseline_bytes_give_a_baseline_or_an_error_naming_the_file(
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..64),
            any::<String>().prop_map(String::into_bytes),
            prop::collection::btree_map("[a-z|=]{0,6}", any::<f64>(), 0..4).prop_map(|values| {
                let values: serde_json::Map<String, serde_json::Value> =
                    values.into_iter().map(|(key, value)| (key, serde_json::json!(value))).collect();
                serde_json::json!({"schema": "keyed-bench.baseline.v1", "values": values})
                    .to_string()
                    .into_bytes()
            }),
        ]
    ) {
        match parse_baseline(&bytes, Path::new("baseline.json")) {
            Ok(baseline) => prop_assert!(baseline.values.values().all(|value| value.is_finite())),
            Err(error) => prop_assert!(error.to_string().contains("baseline.json"), "{}", error),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Results files
// ---------------------------------------------------------------------------------------

/// A JSON scalar of any kind, to put where a results field was.
fn json_scalar() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        any::<String>().prop_map(serde_json::Value::from),
        Just(serde_json::json!([])),
        Just(serde_json::json!({})),
    ]
}

/// Replaces the `target`-th value (in a depth-first walk) of `value` with `with`.
fn replace_nth(value: &mut serde_json::Value, target: &mut usize, with: &serde_json::Value) {
    if *target == 0 {
        *value = with.clone();
        *target = usize::MAX;
        return;
    }
    *target -= 1;
    match value {
        serde_json::Value::Object(fields) => {
            for field in fields.values_mut() {
                replace_nth(field, target, with);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                replace_nth(item, target, with);
            }
        }
        _ => {}
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn any_bytes_give_results_or_an_error_naming_the_file(
        bytes in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..256),
            any::<String>().prop_map(String::into_bytes),
        ]
    ) {
        if let Err(error) = Results::parse(&bytes, Path::new("results.json")) {
            prop_assert!(error.to_string().starts_with("results.json is not a valid"), "{}", error);
        }
    }

    /// A real results file with one value replaced or the text cut short: read or rejected,
    /// and what is read writes back and reads again to the same value.
    #[test]
    fn doctored_results_are_read_or_rejected_and_round_trip(
        position in 0usize..4_000,
        with in json_scalar(),
        cut in prop::option::of(0usize..60_000),
    ) {
        let mut json = reference_json();
        let mut target = position;
        replace_nth(&mut json, &mut target, &with);
        let mut doctored = json.to_string();
        if let Some(cut) = cut {
            let mut cut = cut.min(doctored.len());
            while !doctored.is_char_boundary(cut) {
                cut -= 1;
            }
            doctored.truncate(cut);
        }
        match Results::parse(doctored.as_bytes(), Path::new("doctored.json")) {
            Ok(results) => {
                let written = serde_json::to_string(&results).unwrap();
                let again = Results::parse(written.as_bytes(), Path::new("again.json")).unwrap();
                prop_assert_eq!(
                    serde_json::to_value(&results).unwrap(),
                    serde_json::to_value(&again).unwrap()
                );
            }
            Err(error) => prop_assert!(error.to_string().contains("doctored.json"), "{}", error),
        }
    }

    /// Results with arbitrary measurements write and read back unchanged.
    #[test]
    fn results_round_trip_through_json(
        numbers in prop::collection::vec(0.0f64..1e300, 12),
        counts in prop::collection::vec(any::<u64>(), 10),
        names in prop::collection::vec(any::<String>(), 2),
        nullable in any::<bool>(),
    ) {
        let mut results = reference();
        results.runs.truncate(2);
        results.meta.command = names[0].clone();
        for run in &mut results.runs {
            run.scenario = names[0].clone();
            run.param = names[1].clone();
            // Each run keeps its own strategy: a file lists a cell once.
            run.throughput_per_s.median = numbers[0];
            run.throughput_per_s.min = numbers[1];
            run.throughput_per_s.max = numbers[2];
            (run.cpu_s, run.ideal_s, run.efficiency, run.elapsed_s) =
                (numbers[3], numbers[4], numbers[5], numbers[6]);
            run.ctx_switches.voluntary = numbers[7];
            run.offered_per_s = nullable.then_some(numbers[8]);
            run.achieved_per_s = nullable.then_some(numbers[9]);
            // Percentiles rise, as in every file a run writes.
            let (low, high) = (counts[0].min(counts[1]), counts[0].max(counts[1]));
            (run.latency_ns.p50, run.latency_ns.p99, run.latency_ns.max) = (low, low, high);
            run.hol_ns.p999 = counts[2];
            run.correctness = Correctness {
                order_violations: counts[3],
                overlaps: counts[4],
                lost: counts[5],
                duplicates: counts[6],
                failed: counts[7],
            };
            run.messages = (counts[8] as usize).max(1);
            run.bystander_latency_ns = if nullable { None } else { Some(run.hol_ns) };
            run.samples = (!nullable).then(|| Samples {
                throughput_per_s: vec![numbers[10], numbers[11]],
                elapsed_s: vec![numbers[11], numbers[10]],
                latency_p99_ns: vec![counts[9], counts[0]],
                bystander_p99_ns: vec![counts[1]],
                interference: Vec::new(),
                cpu_s: vec![numbers[10]],
            });
            run.interference = nullable.then(|| {
                let (window_s, other_s) = (numbers[10].abs().max(1e-3), numbers[11].abs());
                Interference::judged(window_s, 2, 0.01, Some(other_s), None, Some(0.5), None)
            });
        }
        let written = serde_json::to_vec_pretty(&results).unwrap();
        let read = Results::parse(&written, Path::new("results.json")).unwrap();
        prop_assert_eq!(&read.runs, &results.runs);
        prop_assert_eq!(read.meta.command, results.meta.command);
    }
}

// ---------------------------------------------------------------------------------------
// The recorder's correctness check
// ---------------------------------------------------------------------------------------

/// A fault injected into one key's otherwise valid delivery.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Messages `i < j` of the key trade places.
    Swap { key: usize, i: usize, j: usize },
    /// Message `i` is never delivered.
    Drop { key: usize, i: usize },
    /// Message `i` is delivered again, `later` deliveries after its first.
    Duplicate { key: usize, i: usize, later: usize },
    /// Message `i + 1` starts before message `i` ends.
    Overlap { key: usize, i: usize },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Event {
    Start(usize, u64),
    End(usize, u64),
}

/// Message counts per key, a schedule that interleaves the keys, and maybe a fault.
fn delivery() -> impl Strategy<Value = (Vec<usize>, Vec<u16>, Option<Fault>)> {
    (prop::collection::vec(1usize..=8, 1..=5), prop::collection::vec(any::<u16>(), 0..120))
        .prop_flat_map(|(counts, schedule)| {
            let keys = counts.len();
            let fault = (0..keys, 0..4u8, any::<u16>(), any::<u16>(), any::<u16>()).prop_map({
                let counts = counts.clone();
                move |(key, kind, a, b, c)| fault_of(key, counts[key], kind, [a, b, c])
            });
            (Just(counts), Just(schedule), prop::option::of(fault).prop_map(Option::flatten))
        })
}

/// The fault of `kind` (0 to 3) for `key`, which has `n` messages, placed by the random
/// `a`, `b` and `c`; `None` for a swap or an overlap of a key with a single message.
fn fault_of(key: usize, n: usize, kind: u8, [a, b, c]: [u16; 3]) -> Option<Fault> {
    let i = usize::from(a) % n;
    match kind {
        0 if n >= 2 => {
            let (i, j) =
                if i + 1 < n { (i, i + 1 + usize::from(b) % (n - i - 1)) } else { (n - 2, n - 1) };
            Some(Fault::Swap { key, i, j })
        }
        1 => Some(Fault::Drop { key, i }),
        2 => Some(Fault::Duplicate { key, i, later: usize::from(c) % (n - i) }),
        3 if n >= 2 => Some(Fault::Overlap { key, i: i.min(n - 2) }),
        _ => None,
    }
}

/// The start and end events of one key: every message in order, then the fault applied.
fn key_events(key: usize, count: usize, fault: Option<Fault>) -> VecDeque<Event> {
    let mut order: Vec<u64> = (0..count as u64).collect();
    match fault {
        Some(Fault::Swap { key: k, i, j }) if k == key => order.swap(i, j),
        Some(Fault::Drop { key: k, i }) if k == key => {
            order.remove(i);
        }
        Some(Fault::Duplicate { key: k, i, later }) if k == key => {
            order.insert(i + 1 + later, i as u64);
        }
        _ => {}
    }
    let mut events = VecDeque::new();
    for &seq in &order {
        events.extend([Event::Start(key, seq), Event::End(key, seq)]);
    }
    if let Some(Fault::Overlap { key: k, i }) = fault {
        if k == key {
            // S_i E_i S_i+1 E_i+1 becomes S_i S_i+1 E_i E_i+1.
            let at = 2 * i;
            events.swap(at + 1, at + 2);
        }
    }
    events
}

/// Delivers every key's events, interleaved by `schedule`, and returns the counts.
fn deliver(counts: &[usize], schedule: &[u16], fault: Option<Fault>) -> Correctness {
    let messages: Vec<Message> = counts
        .iter()
        .enumerate()
        .flat_map(|(key, &count)| {
            (0..count as u64).map(move |seq| Message {
                key: Key::new(0, key as u64),
                seq,
                intended_ns: 0,
                job: Job::Noop,
            })
        })
        .collect();
    let recorder = Recorder::new(&messages, counts.len(), Clock::start());
    let mut queues: Vec<VecDeque<Event>> =
        counts.iter().enumerate().map(|(key, &count)| key_events(key, count, fault)).collect();
    let mut tokens = HashMap::new();
    let mut choices = schedule.iter().copied();
    loop {
        let ready: Vec<usize> = (0..queues.len()).filter(|&key| !queues[key].is_empty()).collect();
        if ready.is_empty() {
            break;
        }
        let key = ready[usize::from(choices.next().unwrap_or(0)) % ready.len()];
        let message = |key: usize, seq: u64| Message {
            key: Key::new(0, key as u64),
            seq,
            intended_ns: 0,
            job: Job::Noop,
        };
        match queues[key].pop_front().expect("ready") {
            Event::Start(key, seq) => {
                tokens.insert((key, seq), recorder.start(&message(key, seq)));
            }
            Event::End(key, seq) => {
                let token = tokens.remove(&(key, seq)).expect("started before it ends");
                recorder.end(token, &message(key, seq));
            }
        }
    }
    recorder.correctness(0)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..config() })]

    #[test]
    fn the_recorder_counts_exactly_the_injected_fault(
        (counts, schedule, fault) in delivery()
    ) {
        let counted = deliver(&counts, &schedule, fault);
        let expected = match fault {
            None => Correctness::default(),
            Some(Fault::Swap { i, j, .. }) => {
                Correctness { order_violations: (j - i) as u64, ..Correctness::default() }
            }
            Some(Fault::Drop { .. }) => Correctness { lost: 1, ..Correctness::default() },
            Some(Fault::Duplicate { .. }) => {
                Correctness { duplicates: 1, ..Correctness::default() }
            }
            Some(Fault::Overlap { .. }) => Correctness { overlaps: 1, ..Correctness::default() },
        };
        prop_assert_eq!(counted, expected, "fault {:?}", fault);
    }
}
