//! Pipeline cells of two runs on different transports, one on the embedded log and one on
//! Kafka, paired across the transport: per cell, what the broker changes.
//!
//! A run's pipeline cells consume through one transport: `meta.transport` names it where it
//! is not the embedded log, and so does each pipeline cell's `transport` (absent: the
//! embedded log, as in every older file). Where the two files' transports differ,
//! [`compare`](super::compare) pairs their pipeline cells by everything but the transport
//! (scenario, param, strategy and sweep point: the [`CellKey`]) and lists, per pair, the
//! figures the summary's pipeline tables show (records lost and redelivered, the commit
//! lag's p99, the pauses, the throughput), one column per transport, with the change from
//! the embedded log to Kafka. Single-shot, as every pipeline cell: never judged.

use serde::Serialize;

use super::{change_pct, SettingDifference};
use crate::results::{CellKey, PipelineRun, RebalanceEvent, Results, TransportKind};

/// What the settings note adds where the transports differ.
pub const PAIRED_NOTE: &str = "pipeline cells are paired across the transport (by scenario, \
                               param, strategy and sweep point), the broker's figures one \
                               column per transport";

/// The two files' transports, where they differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Transports {
    /// A's.
    pub a: TransportKind,
    /// B's.
    pub b: TransportKind,
}

impl Transports {
    /// The transports of `a` and `b`, where they differ.
    pub fn differing(a: &Results, b: &Results) -> Option<Self> {
        let (a, b) = (transport(a), transport(b));
        (a != b).then_some(Self { a, b })
    }

    /// The side, `A` or `B`, that ran on `kind`.
    pub fn side(self, kind: TransportKind) -> &'static str {
        if self.a == kind {
            "A"
        } else {
            "B"
        }
    }
}

/// The transport a file's pipeline cells consumed through: `meta.transport`'s, else its
/// cells' (absent from both: the embedded log).
pub fn transport(results: &Results) -> TransportKind {
    results
        .meta
        .transport
        .as_ref()
        .map(|meta| meta.kind)
        .or_else(|| results.pipelines.iter().find_map(|run| run.transport))
        .unwrap_or_default()
}

/// A file's transport as the settings note names it: `embedded`, or `kafka (broker mock x1,
/// librdkafka 2.12.1, group protocol consumer)` where `meta.transport` describes it.
fn described(results: &Results) -> String {
    let kind = transport(results);
    match &results.meta.transport {
        Some(meta) if meta.kind == kind => format!(
            "{kind} (broker {} x{}, {}, group protocol {})",
            meta.broker, meta.brokers, meta.client, meta.group_protocol
        ),
        _ => kind.to_string(),
    }
}

/// The settings note's line on the transports, where they differ.
pub fn setting_difference(a: &Results, b: &Results) -> Option<SettingDifference> {
    Transports::differing(a, b)?;
    Some(SettingDifference { field: "meta.transport".into(), a: described(a), b: described(b) })
}

/// How a figure's values read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FigureUnit {
    /// Records per second.
    Rate,
    /// Records.
    Records,
    /// Seconds.
    Seconds,
}

/// One figure of a pipeline cell on each transport.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BrokerFigure {
    /// What it is (`lost`, `commit lag p99`, `leave pause`, ...).
    pub figure: String,
    /// How its values read.
    pub unit: FigureUnit,
    /// On the embedded log; `None` where that cell lacks it.
    pub embedded: Option<f64>,
    /// On Kafka; `None` where that cell lacks it.
    pub kafka: Option<f64>,
    /// `(kafka - embedded) / embedded` in percent; `None` where a side lacks it, or the
    /// embedded value is 0 and Kafka's is not.
    pub change_pct: Option<f64>,
}

/// A pipeline cell of both runs, paired across the transport: single-shot, not judged.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TransportPair {
    /// The cell (A's).
    pub cell: CellKey,
    /// Its figures, in the order the report lists them.
    pub figures: Vec<BrokerFigure>,
}

impl TransportPair {
    /// The pair of A's `left` and B's `right`, on `transports`.
    pub fn of(transports: Transports, left: &PipelineRun, right: &PipelineRun) -> Self {
        let (embedded, kafka) =
            if transports.a == TransportKind::Embedded { (left, right) } else { (right, left) };
        Self { cell: CellKey::of_pipeline(left), figures: figures(embedded, kafka) }
    }
}

/// A pipeline-rebalance cell's rebalances; none for another cell.
fn rebalances(run: &PipelineRun) -> &[RebalanceEvent] {
    run.rebalance.as_ref().map_or(&[], |report| &report.events)
}

/// The figures of one cell on the embedded log and on Kafka: those the summary's pipeline
/// tables show that speak of the transport, each where either cell has it.
fn figures(embedded: &PipelineRun, kafka: &PipelineRun) -> Vec<BrokerFigure> {
    let mut figures = Vec::new();
    let mut push = |figure: String, unit, (embedded, kafka): (Option<f64>, Option<f64>)| {
        if embedded.is_some() || kafka.is_some() {
            let change_pct = embedded.zip(kafka).and_then(|(e, k)| change_pct(e, k));
            figures.push(BrokerFigure { figure, unit, embedded, kafka, change_pct });
        }
    };
    let both = |of: &dyn Fn(&PipelineRun) -> Option<f64>| (of(embedded), of(kafka));
    push("lost".into(), FigureUnit::Records, both(&|run| Some(run.lost as f64)));
    push("redelivered".into(), FigureUnit::Records, both(&|run| Some(run.redelivered as f64)));
    let lag = |run: &PipelineRun| Some(run.commit_lag.p99 as f64);
    push("commit lag p99".into(), FigureUnit::Records, both(&lag));
    let failure = |run: &PipelineRun| run.retry.as_ref().map(|retry| retry.failure_pause_s);
    push("failure pause".into(), FigureUnit::Seconds, both(&failure));
    let (left, right) = (rebalances(embedded), rebalances(kafka));
    for i in 0..left.len().max(right.len()) {
        let (e, k) = (left.get(i), right.get(i));
        let kind = e.or(k).map_or("rebalance", |event| event.kind.as_str());
        let pause = (e.map(|event| event.pause_s), k.map(|event| event.pause_s));
        push(format!("{kind} pause"), FigureUnit::Seconds, pause);
    }
    let held = |run: &PipelineRun| run.expansion.as_ref().map(|expansion| expansion.held_s);
    push("held".into(), FigureUnit::Seconds, both(&held));
    push("throughput".into(), FigureUnit::Rate, both(&|run| Some(run.throughput_per_s)));
    figures
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::super::{compare, render, Format, Inputs, Options};
    use super::*;
    use crate::results::{CommitPolicy, LagSummary, RebalanceReport, TransportMeta};

    /// A pipeline cell of `scenario` on `strategy` with the given figures, no rebalance.
    fn cell(
        scenario: &str,
        strategy: &str,
        (lost, redelivered, lag_p99): (u64, u64, u64),
        rate: f64,
    ) -> PipelineRun {
        PipelineRun {
            scenario: scenario.into(),
            param: "policy=contiguous".into(),
            strategy: strategy.into(),
            policy: CommitPolicy::Contiguous,
            partitions: 4,
            records: 1000,
            keys: 50,
            crash_after: None,
            lost,
            redelivered,
            commit_lag: LagSummary { p50: lag_p99 / 2, p99: lag_p99, max: lag_p99 + 1 },
            longest_freeze_s: 0.001,
            max_metadata_bytes: 0,
            elapsed_s: 1000.0 / rate,
            throughput_per_s: rate,
            projection: Default::default(),
            incarnations: Vec::new(),
            retry: None,
            expansion: None,
            reorder: None,
            rebalance: None,
            settings: None,
            interference: None,
            transport: None,
            transport_calls: None,
            client_events: None,
        }
    }

    /// `run` with a leave and a join that paused `pauses` seconds.
    fn rebalanced(mut run: PipelineRun, pauses: [f64; 2]) -> PipelineRun {
        let event = |kind: &str, pause_s| RebalanceEvent {
            kind: kind.into(),
            members_before: 3,
            members_after: 2,
            revoked_at_s: 0.01,
            pause_s,
            uncommitted: 10,
            in_flight: 2,
        };
        run.rebalance = Some(RebalanceReport {
            consumers: 3,
            events: vec![event("leave", pauses[0]), event("join", pauses[1])],
            duplicates_bound: 20,
            duplicates_within_bound: true,
            in_flight: 4,
            duplicate_pct: 1.0,
        });
        run
    }

    /// A few measured cells of the reference run, and three pipeline cells on the embedded
    /// log; and the same on Kafka with other figures, less the last pipeline cell.
    fn embedded_and_kafka() -> (Results, Results) {
        let text = include_str!("../../../results/2026-11-30-vm/results.json");
        let mut embedded = Results::parse(text.as_bytes(), Path::new("a.json")).unwrap();
        embedded.runs.truncate(3);
        embedded.pipelines = vec![
            cell("pipeline-crash", "keyed-mailbox", (0, 100, 400), 2000.0),
            rebalanced(
                cell("pipeline-rebalance", "keyed-mailbox", (0, 30, 200), 1000.0),
                [0.002, 0.004],
            ),
            cell("pipeline-crash", "group-by", (0, 80, 300), 1500.0),
        ];
        let mut kafka = embedded.clone();
        kafka.pipelines = vec![
            cell("pipeline-crash", "keyed-mailbox", (5, 150, 600), 1000.0),
            rebalanced(
                cell("pipeline-rebalance", "keyed-mailbox", (0, 60, 300), 800.0),
                [0.3, 0.2],
            ),
        ];
        for run in &mut kafka.pipelines {
            run.transport = Some(TransportKind::Kafka);
        }
        kafka.meta.transport = Some(TransportMeta {
            kind: TransportKind::Kafka,
            broker: "mock".into(),
            brokers: 1,
            client: "librdkafka 2.12.1".into(),
            group_protocol: "consumer".into(),
            timeout_ms: 10_000,
            ..TransportMeta::default()
        });
        (embedded, kafka)
    }

    fn names(pair: &TransportPair) -> Vec<&str> {
        pair.figures.iter().map(|figure| figure.figure.as_str()).collect()
    }

    #[test]
    fn a_file_names_its_transport_in_its_meta_or_its_cells() {
        let (embedded, mut kafka) = embedded_and_kafka();
        assert_eq!(transport(&embedded), TransportKind::Embedded);
        assert_eq!(transport(&kafka), TransportKind::Kafka);
        kafka.meta.transport = None;
        assert_eq!(transport(&kafka), TransportKind::Kafka);
        assert_eq!(Transports::differing(&embedded, &embedded), None);
        assert_eq!(Transports::differing(&kafka, &kafka), None);
    }

    #[test]
    fn pipeline_cells_of_an_embedded_and_a_kafka_run_are_paired_across_the_transport() {
        let (embedded, kafka) = embedded_and_kafka();
        let comparison = compare(&embedded, &kafka, &Options::default());
        let kinds = Transports { a: TransportKind::Embedded, b: TransportKind::Kafka };
        assert_eq!(comparison.transports, Some(kinds));
        assert!(comparison.pipelines.is_empty());
        assert_eq!(comparison.cells.len(), 3, "measured cells compare as ever");
        assert_eq!(comparison.only_in_a.len(), 1);
        assert_eq!(comparison.only_in_a[0].key.strategy, "group-by");
        let [crash, rebalance] = &comparison.across_transports[..] else {
            panic!("{:?}", comparison.across_transports)
        };
        assert_eq!(crash.cell.to_string(), "pipeline-crash policy=contiguous keyed-mailbox");
        assert_eq!(names(crash), ["lost", "redelivered", "commit lag p99", "throughput"]);
        let figure = |pair: &TransportPair, i: usize| {
            let f = &pair.figures[i];
            (f.embedded, f.kafka, f.change_pct)
        };
        assert_eq!(figure(crash, 0), (Some(0.0), Some(5.0), None));
        assert_eq!(figure(crash, 1), (Some(100.0), Some(150.0), Some(50.0)));
        assert_eq!(figure(crash, 3), (Some(2000.0), Some(1000.0), Some(-50.0)));
        assert_eq!(
            names(rebalance),
            ["lost", "redelivered", "commit lag p99", "leave pause", "join pause", "throughput"]
        );
        assert_eq!(figure(rebalance, 3).1, Some(0.3));
        assert_eq!(rebalance.figures[3].unit, FigureUnit::Seconds);
        let setting = &comparison.settings[0];
        assert_eq!(setting.field, "meta.transport");
        assert_eq!(
            (setting.a.as_str(), setting.b.as_str()),
            ("embedded", "kafka (broker mock x1, librdkafka 2.12.1, group protocol consumer)")
        );
        // The other way round: the columns stay embedded, kafka, the change Kafka's.
        let swapped = compare(&kafka, &embedded, &Options::default());
        let kinds = Transports { a: TransportKind::Kafka, b: TransportKind::Embedded };
        assert_eq!(swapped.transports, Some(kinds));
        assert_eq!(swapped.across_transports[0].figures, crash.figures);
    }

    fn rendered(a: &Results, b: &Results, format: Format) -> String {
        let comparison = compare(a, b, &Options::default());
        let inputs = Inputs { a: Path::new("a.json"), b: Path::new("b.json"), results: (a, b) };
        render(&comparison, &inputs, None, format)
    }

    #[test]
    fn every_format_notes_the_transports_and_lists_one_column_each() {
        let (embedded, kafka) = embedded_and_kafka();
        let text = rendered(&embedded, &kafka, Format::Text);
        assert!(text.contains("note: the runs' settings differ (A -> B):\n  meta.transport"));
        assert!(text.contains("embedded -> kafka (broker mock x1, librdkafka 2.12.1"), "{text}");
        assert!(text.contains(&format!("\n  {PAIRED_NOTE}\n")), "{text}");
        assert!(
            text.contains(
                "\npipeline cells across transports (embedded in A, kafka in B; single-shot: \
                 one sample each, not judged; change: kafka against embedded):\n"
            ),
            "{text}"
        );
        let header =
            text.lines().find(|l| l.trim_start().starts_with("cell") && l.contains("figure"));
        let header: Vec<&str> = header.unwrap().split_whitespace().collect();
        assert_eq!(header, ["cell", "figure", "embedded", "kafka", "change"]);
        let row = |figure: &str| {
            let line = text.lines().find(|l| l.contains("crash") && l.contains(figure));
            line.unwrap().split_whitespace().rev().take(3).collect::<Vec<_>>()
        };
        assert_eq!(row("lost"), ["n/a", "5", "0"]);
        assert_eq!(row("throughput"), ["-50.0%", "1.0k/s", "2.0k/s"]);
        let pause = text.lines().find(|l| l.contains("leave pause")).unwrap();
        let pause: Vec<&str> = pause.split_whitespace().rev().take(5).collect();
        assert_eq!(pause, ["+14900.0%", "ms", "300.0", "ms", "2.0"]);
        assert!(!text.contains("pipeline cells (single-shot"), "{text}");
        let swapped = rendered(&kafka, &embedded, Format::Text);
        assert!(swapped.contains("(embedded in B, kafka in A; single-shot"), "{swapped}");
        let markdown = rendered(&embedded, &kafka, Format::Markdown);
        assert!(markdown.contains("`meta.transport` embedded -> kafka (broker mock"));
        assert!(markdown.contains(". Pipeline cells are paired across the transport"));
        assert!(markdown.contains("\nPipeline cells across transports (embedded in A"));
        assert!(markdown.contains("| cell | figure | embedded | kafka | change |"), "{markdown}");
        let json: serde_json::Value =
            serde_json::from_str(&rendered(&embedded, &kafka, Format::Json)).unwrap();
        assert_eq!(json["transports"]["a"], "embedded");
        assert_eq!(json["transports"]["b"], "kafka");
        assert_eq!(json["transports"]["note"], PAIRED_NOTE);
        assert_eq!(json["pipelines"], serde_json::json!([]));
        let lost = &json["across_transports"][0]["figures"][0];
        assert_eq!(lost["figure"], "lost");
        assert_eq!((&lost["embedded"], &lost["kafka"]), (&0.0.into(), &5.0.into()));
        assert_eq!(lost["unit"], "records");
        assert!(lost["change_pct"].is_null());
        assert_eq!(json["settings"][0]["field"], "meta.transport");
    }

    #[test]
    fn runs_on_one_transport_compare_their_pipeline_cells_as_ever() {
        let (embedded, kafka) = embedded_and_kafka();
        let mut slower = embedded.clone();
        slower.pipelines[0].throughput_per_s /= 2.0;
        for (a, b) in [(&embedded, &slower), (&kafka, &kafka)] {
            let comparison = compare(a, b, &Options::default());
            assert_eq!(comparison.transports, None);
            assert!(comparison.across_transports.is_empty());
            assert!(!comparison.pipelines.is_empty());
            assert!(comparison.settings.iter().all(|d| d.field != "meta.transport"));
            let text = rendered(a, b, Format::Text);
            assert!(text.contains("\npipeline cells (single-shot"), "{text}");
            assert!(!text.contains("across transports") && !text.contains(PAIRED_NOTE));
            let markdown = rendered(a, b, Format::Markdown);
            assert!(!markdown.contains("across transports") && !markdown.contains(PAIRED_NOTE));
            let json: serde_json::Value =
                serde_json::from_str(&rendered(a, b, Format::Json)).unwrap();
            assert!(json.get("transports").is_none() && json.get("across_transports").is_none());
        }
        let text = rendered(&embedded, &slower, Format::Text);
        let line = text.lines().find(|l| l.contains("keyed-mailbox") && l.contains("throughput"));
        assert!(line.is_some_and(|line| line.ends_with("-50.0%")), "{text}");
    }
}
