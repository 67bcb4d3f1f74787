//! Reading a results file back: parsed, then checked for what no run writes.

use std::path::Path;

use serde::Deserialize;

use super::{designs, readable_schemas, readable_version, CellKey, Results, RunResult};

/// Why a results file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("cannot read {path}: {error}")]
    Io {
        /// The file.
        path: String,
        /// Why (part of the message, so that every way of printing it says why).
        error: std::io::Error,
    },
    /// The file is not a results file of this schema.
    #[error("{path} is not a valid keyed-bench results file: {reason}")]
    Invalid {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

impl Results {
    /// Reads and checks a results file.
    pub fn read(path: &Path) -> Result<Self, ReadError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|error| ReadError::Io { path: shown, error })?;
        Self::parse(&bytes, path)
    }

    /// Reads and checks a results file among others (`history`): a design an earlier file
    /// recorded with another description keeps that one ([`designs::make_known_beside`]).
    pub fn read_beside(path: &Path) -> Result<Self, ReadError> {
        let shown = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|error| ReadError::Io { path: shown, error })?;
        Self::parse_with(&bytes, path, designs::make_known_beside)
    }

    /// Checks and parses the bytes of a results file; `path` names it in errors. Any bytes
    /// at all give a results value or an error, never a panic.
    pub fn parse(bytes: &[u8], path: &Path) -> Result<Self, ReadError> {
        Self::parse_with(bytes, path, designs::make_known)
    }

    /// [`Results::parse`], its recorded designs made known by `make_known`.
    fn parse_with(
        bytes: &[u8],
        path: &Path,
        make_known: fn(&[designs::DesignRecord]) -> Result<(), String>,
    ) -> Result<Self, ReadError> {
        let invalid =
            |reason: String| ReadError::Invalid { path: path.display().to_string(), reason };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(invalid("the file is empty".into()));
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|error| invalid(format!("not UTF-8 text: {error}")))?;
        // Read the schema first, so that a file of another version is named as such rather
        // than by the first field this version misses in it.
        #[derive(Deserialize)]
        struct Versioned {
            schema: Option<serde_json::Value>,
        }
        match serde_json::from_str::<Versioned>(text) {
            Ok(Versioned { schema: Some(serde_json::Value::String(schema)) })
                if readable_version(&schema).is_none() =>
            {
                return Err(invalid(format!("schema `{schema}`, expected {}", readable_schemas())));
            }
            Ok(Versioned { schema: Some(schema) }) if !schema.is_string() => {
                return Err(invalid(format!(
                    "schema {schema} is not a string; expected {}",
                    readable_schemas()
                )));
            }
            Ok(Versioned { schema: None }) => {
                return Err(invalid(format!("no `schema` field; expected {}", readable_schemas())));
            }
            _ => {}
        }
        let mut results: Self =
            serde_json::from_str(text).map_err(|error| invalid(error.to_string()))?;
        results.check_measurements().map_err(invalid)?;
        make_known(&results.meta.designs).map_err(invalid)?;
        results.check_consistency().map_err(invalid)?;
        results.meta.recover_sizes();
        Ok(results)
    }

    /// Every measurement is a count, a rate, a time or a ratio: never negative; and each
    /// list of samples holds one entry per repetition.
    fn check_measurements(&self) -> Result<(), String> {
        for (index, run) in self.runs.iter().enumerate() {
            let cell =
                || format!("runs[{index}] ({} {} {})", run.scenario, run.param, run.strategy);
            let json = serde_json::to_value(run).map_err(|error| error.to_string())?;
            if let Some((field, value)) = first_negative(&json, "") {
                return Err(format!(
                    "{}: `{field}` is {value}; a measurement is never negative",
                    cell()
                ));
            }
            let lengths = run.samples.as_ref().map(|samples| {
                [
                    samples.throughput_per_s.len(),
                    samples.elapsed_s.len(),
                    samples.latency_p99_ns.len(),
                ]
            });
            if let Some(lengths) =
                lengths.filter(|lengths| lengths.iter().any(|n| *n != lengths[0]))
            {
                return Err(format!(
                    "{}: `samples` lists {}, {} and {} repetitions; each list holds one entry per \
                     repetition",
                    cell(),
                    lengths[0],
                    lengths[1],
                    lengths[2]
                ));
            }
            let receipts = run
                .samples
                .as_ref()
                .map_or((0, 0), |samples| (samples.interference.len(), samples.elapsed_s.len()));
            if receipts.0 != 0 && receipts.0 != receipts.1 {
                return Err(format!(
                    "{}: `samples.interference` lists {} repetitions and `samples.elapsed_s` {}; \
                     each list holds one entry per repetition",
                    cell(),
                    receipts.0,
                    receipts.1
                ));
            }
        }
        Ok(())
    }
}

impl Results {
    /// What no run writes: a cell twice (a failed one too), a design neither built in nor
    /// recorded in `meta.designs`, no cores, a cell of no messages, percentiles out of
    /// order, a failed cell that is also missing or of a negative time, an incomplete file
    /// whose counts disagree.
    fn check_consistency(&self) -> Result<(), String> {
        if self.meta.cores == 0 {
            return Err("`meta.cores` is 0; a run counts the cores it ran on".into());
        }
        let mut seen = std::collections::HashSet::new();
        let keys = self.runs.iter().map(|run| (CellKey::of_run(run), run.workers));
        let pipelines = self.pipelines.iter().map(|run| (CellKey::of_pipeline(run), None));
        let failed = self.failed.iter().map(|cell| (cell.key(), None));
        for (key, workers) in keys.chain(pipelines).chain(failed) {
            if key.strategy.parse::<strategies::Design>().is_err() {
                return Err(format!(
                    "{key}: strategy `{}` is neither built in nor recorded in `meta.designs`",
                    key.strategy
                ));
            }
            if !seen.insert((key.clone(), workers)) {
                return Err(format!("{key}: the cell is listed twice"));
            }
        }
        for run in &self.runs {
            let cell = CellKey::of_run(run);
            if run.messages == 0 {
                return Err(format!("{cell}: `messages` is 0; a measured cell ran messages"));
            }
            percentiles_rise(run).map_err(|why| format!("{cell}: {why}"))?;
        }
        self.check_failed()?;
        let Some(left) = &self.meta.incomplete else { return Ok(()) };
        if left.cells_done > left.cells_planned
            || left.cells_planned - left.cells_done != left.missing.len()
        {
            return Err(format!(
                "`meta.incomplete` says {} of {} cells done but lists {} missing",
                left.cells_done,
                left.cells_planned,
                left.missing.len()
            ));
        }
        Ok(())
    }
}

impl Results {
    /// Every failed cell is done (not missing as well), measured or run under no other
    /// entry, and of times that are not negative.
    fn check_failed(&self) -> Result<(), String> {
        let keys = |runs: Vec<CellKey>| runs.into_iter().collect::<std::collections::HashSet<_>>();
        let done = keys(self.runs.iter().map(CellKey::of_run).collect());
        let run = keys(self.pipelines.iter().map(CellKey::of_pipeline).collect());
        for cell in &self.failed {
            let key = cell.key();
            if self.missing_cells().contains(&key) {
                return Err(format!("{key}: the cell is listed as failed and as missing"));
            }
            if done.contains(&key) || run.contains(&key) {
                return Err(format!("{key}: the cell is listed twice"));
            }
            if let Some((field, value)) =
                [("timeout_s", cell.timeout_s), ("elapsed_s", cell.elapsed_s)]
                    .into_iter()
                    .find(|(_, value)| value.is_nan() || *value < 0.0)
            {
                return Err(format!(
                    "failed {key}: `{field}` is {value}; a time is never negative"
                ));
            }
        }
        Ok(())
    }
}

/// Whether a cell's latency tails rise: p50 <= p99 <= max in each.
fn percentiles_rise(run: &RunResult) -> Result<(), String> {
    let (l, h) = (&run.latency_ns, &run.hol_ns);
    let tails = [("latency_ns", l.p50, l.p99, l.max), ("hol_ns", h.p50, h.p99, h.max)];
    let bystander =
        run.bystander_latency_ns.as_ref().map(|t| ("bystander_latency_ns", t.p50, t.p99, t.max));
    match tails.into_iter().chain(bystander).find(|(_, p50, p99, max)| p50 > p99 || p99 > max) {
        Some((field, p50, p99, max)) => {
            Err(format!("`{field}` has p50 {p50}, p99 {p99}, max {max}; percentiles rise"))
        }
        None => Ok(()),
    }
}

/// The first negative number in `value`, which is at `path`, with its path (`a.b[2]`).
fn first_negative(value: &serde_json::Value, path: &str) -> Option<(String, f64)> {
    match value {
        serde_json::Value::Number(number) => {
            number.as_f64().filter(|n| *n < 0.0).map(|n| (path.to_owned(), n))
        }
        serde_json::Value::Object(fields) => fields.iter().find_map(|(key, field)| {
            let path = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            first_negative(field, &path)
        }),
        serde_json::Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(index, item)| first_negative(item, &format!("{path}[{index}]"))),
        _ => None,
    }
}
