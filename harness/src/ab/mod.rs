//! `keyed-bench ab BASE`: two builds measured in turns on this machine, and judged against
//! their noise.
//!
//! # Protocol
//!
//! 1. The head is the running binary. The base is BASE, a commit, built by [`base`] in a
//!    worktree of its own with this binary's profile, features and rustc (a build folder
//!    kept between calls), or a prebuilt binary given with `--base-binary`.
//! 2. A round runs the selected cells once with the base binary, then once with the head
//!    binary: `keyed-bench run [run flags] --repeat 1 --no-breakdown --out
//!    OUT/rounds/<side>-<round>` ([`process`]). Base, head, base, head: a drift of the
//!    machine (a build starting beside, a change of clock) falls on both sides alike, as
//!    Wow's interleaved JMH forks did for its 9.3 release.
//! 3. Each round gives each cell one sample per side: the round's throughput, elapsed time
//!    and p99 latency. A round whose interference receipt calls the cell void (another
//!    process took a quarter of the CPUs) gives that cell no sample on that side.
//! 4. After `--rounds` rounds, while some cell has fewer than [`MIN_SAMPLES`] valid samples
//!    on a side, one more round runs, up to [`MAX_ROUNDS_FACTOR`] times `--rounds` in all.
//! 5. Each side's samples are merged into one results file, whose `runs[].samples` hold one
//!    sample per valid round, and the two files are compared by [`crate::compare`]: the
//!    two-sided Welch's t-test per cell and metric, its p-values corrected together
//!    by Holm's method for the number of rows judged.
//! 6. `--fail-on-regression P` fails the command when some row is slower, so judged, by
//!    more than `P` percent. A cell with fewer than [`MIN_SAMPLES`] valid samples on a side
//!    cannot be judged, so it cannot pass either: where no row fails, such a cell makes the
//!    verdict inconclusive ([`UNJUDGED`], the gate's status for a rule whose cells were all
//!    void).
//!
//! # Why the verdict holds
//!
//! The samples of one side are the same binary's runs of the same cells, one per round;
//! interleaving makes the machine's slow drift a common cause of both sides, not a
//! difference between them. Six rounds a side (twice the test's least) give the p-values
//! that Holm's correction over many cells needs, and the correction keeps the chance that any unchanged cell reads as slower at most
//! alpha however many cells and metrics are compared. Void rounds are dropped rather than
//! kept, so that a burst of load on one side cannot read as a regression.
//!
//! # Layout
//!
//! - `base`: the base binary, BASE checked and built in its cached worktree;
//! - `process`: one round of one side, a child process;
//! - `render`: the outcome as text, Markdown and JSON;
//! - this module: the configuration, the rounds ([`run_rounds`], with the runner injected),
//!   the samples they gather ([`Gathering`]) and the judgement ([`judge`]).

pub mod base;
mod command;
mod process;
mod render;

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::compare::{compare, Comparison, Options, MIN_SAMPLES};
use crate::progress::clock;
use crate::results::{median, CellKey, ReadError, Results, RunResult, Samples, Spread};

pub use base::{Base, BuildInfo};
pub use command::{run_ab, AbOutcome};
pub use render::{render_json, render_markdown, render_text, Report};

/// Rounds unless `--rounds` says otherwise: twice the test's least samples
/// ([`MIN_SAMPLES`]), since Holm's correction over every cell and metric asks for p-values
/// that the least seldom reach, and so that void rounds still leave enough to judge.
pub const DEFAULT_ROUNDS: usize = 2 * MIN_SAMPLES;
/// The range of `--rounds`.
pub const ROUNDS_RANGE: (usize, usize) = (MIN_SAMPLES, 100);
/// The most rounds in all, as a multiple of `--rounds`, while void rounds leave some cell
/// short of [`MIN_SAMPLES`] valid samples on a side.
pub const MAX_ROUNDS_FACTOR: usize = 2;
/// Where the results go unless `--out` says otherwise.
pub const DEFAULT_OUT: &str = crate::results::fs::AB_OUT;
/// The file that marks a folder as written by `keyed-bench ab`: such a folder is replaced
/// by the next comparison into it; any other folder with files is refused.
pub const OUT_MARKER: &str = ".keyed-bench-ab";
/// Exit status of `--fail-on-regression` where no row is slower past it but some cell has
/// too few valid samples on a side to judge: inconclusive, measure again. The gate's status
/// for the same cause ([`crate::gate::ONLY_VOID`]: only void cells).
pub const UNJUDGED: u8 = crate::gate::ONLY_VOID;

/// What `ab` says where `--fail-on-regression` could not judge `cells`.
pub fn unjudged_note(cells: &[String]) -> String {
    format!(
        "ab: inconclusive (exit {UNJUDGED}): --fail-on-regression cannot judge {}, with fewer \
         than {MIN_SAMPLES} valid samples on a side (void rounds: the machine was busy; see \
         the rounds' interference receipts); run again on a quieter machine",
        cells.join(", ")
    )
}

/// The run flags that `ab` sets itself in each round, and so refuses among the run flags.
pub const OWN_RUN_FLAGS: [&str; 5] = ["out", "repeat", "resume", "dry-run", "overwrite"];

/// A validated `keyed-bench ab`.
#[derive(Clone, Debug, PartialEq)]
pub struct AbConfig {
    /// BASE as given: the commit to build, or with `base_binary` the name of what that
    /// binary was built from.
    pub base: String,
    /// A prebuilt base binary: nothing is built and BASE is only its name.
    pub base_binary: Option<PathBuf>,
    /// The flags of `keyed-bench run` that select and size the cells, passed to both
    /// binaries as given.
    pub run_flags: Vec<String>,
    /// Rounds before any extra ones.
    pub rounds: usize,
    /// How verdicts are reached (Holm's correction always).
    pub options: Options,
    /// Fail (exit 1) when some row is slower, so judged, by more than this many percent.
    pub fail_on_regression: Option<f64>,
    /// The output folder.
    pub out: PathBuf,
    /// The worktrees, build folder and built binaries; `target/ab` of the repository's
    /// root where not given.
    pub cache: Option<PathBuf>,
}

/// One of the two builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The build judged against (BASE).
    Base,
    /// The build judged (this binary).
    Head,
}

impl Side {
    /// Both, in the order each round runs them.
    pub const BOTH: [Side; 2] = [Side::Base, Side::Head];

    /// The name used in folders and reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Base => "base",
            Self::Head => "head",
        }
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why `keyed-bench ab` stopped.
#[derive(Debug, thiserror::Error)]
pub enum AbError {
    /// The working directory is not in a git repository, so BASE names nothing.
    #[error(
        "BASE {base}: not in a git repository ({why}); run ab inside the repository, or give \
         a prebuilt base with --base-binary"
    )]
    NotARepository {
        /// BASE as given.
        base: String,
        /// What git said.
        why: String,
    },
    /// BASE does not name a commit.
    #[error(
        "BASE {base} is not a commit of this repository ({why}); give a commit hash, a branch \
         or a tag"
    )]
    NotACommit {
        /// BASE as given.
        base: String,
        /// What git said.
        why: String,
    },
    /// The rustc that would build BASE is not the one that built this binary.
    #[error(
        "this binary was built with {built}, but {place} has {here}; a comparison of two \
         builds must use one compiler: build this binary with {here}, or install {built}"
    )]
    RustcDiffers {
        /// `rustc -V` of this binary's build.
        built: String,
        /// `rustc -V` where BASE would be built.
        here: String,
        /// Where `here` was asked (the repository, BASE's worktree).
        place: String,
    },
    /// The output folder cannot be used.
    #[error("--out {path}: {why}")]
    Out {
        /// The folder.
        path: String,
        /// Why.
        why: String,
    },
    /// The base binary given does not exist or is not a file.
    #[error("--base-binary {path}: {why}")]
    BaseBinary {
        /// The path given.
        path: String,
        /// Why.
        why: String,
    },
    /// The cached worktree of BASE is not what the cache expects.
    #[error(
        "the cached worktree {path} {why}; remove it (git worktree remove --force {path}) and \
         run ab again"
    )]
    Worktree {
        /// Its folder.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// BASE did not build.
    #[error("BASE {base} ({commit}) did not build: `{command}` {status}")]
    Build {
        /// BASE as given.
        base: String,
        /// Its commit.
        commit: String,
        /// The build command.
        command: String,
        /// How it ended.
        status: String,
    },
    /// A round's run failed.
    #[error("round {round}, {side}: `{command}` {status}; its output is in {log}{tail}")]
    Run {
        /// The side.
        side: Side,
        /// The round, from 1.
        round: usize,
        /// The command run.
        command: String,
        /// How it ended.
        status: String,
        /// The file that holds its output.
        log: String,
        /// The output's last lines, each after a newline.
        tail: String,
    },
    /// A round's results file cannot be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A file or folder could not be made, written or removed, or a command not started.
    #[error("cannot {what} {path}: {error}")]
    Io {
        /// What was tried.
        what: &'static str,
        /// On what.
        path: String,
        /// Why.
        error: std::io::Error,
    },
}

impl AbError {
    /// Whether the error is bad input (exit 2): BASE, the flags or the output folder, all
    /// found before anything is measured.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            Self::NotARepository { .. }
                | Self::NotACommit { .. }
                | Self::RustcDiffers { .. }
                | Self::Out { .. }
                | Self::BaseBinary { .. }
        )
    }

    /// An I/O error of `what` on `path`.
    pub(crate) fn io(what: &'static str, path: &Path, error: std::io::Error) -> Self {
        Self::Io { what, path: path.display().to_string(), error }
    }
}

/// A cell as rounds gather it: its key and, where recorded, its worker count.
pub type CellId = (CellKey, Option<usize>);

fn cell_id(run: &RunResult) -> CellId {
    (CellKey::of_run(run), run.workers)
}

/// One cell's samples on one side, round by round.
#[derive(Clone, Debug)]
struct Gathered {
    /// The cell.
    id: CellId,
    /// Its run in the first round that was valid (the first round where none was): what
    /// the merged file holds beside the samples.
    run: RunResult,
    /// Whether `run` comes from a valid round.
    from_valid_round: bool,
    /// One sample per valid round.
    samples: Samples,
    /// The rounds (from 1) in which the cell's receipt said void.
    void_rounds: Vec<usize>,
}

/// The samples of one side's rounds, cell by cell.
#[derive(Clone, Debug, Default)]
pub struct Gathering {
    /// The cells, in the order the first round listed them.
    cells: Vec<Gathered>,
    /// The first round's results, whose `meta`, skipped cells and pipelines the merged
    /// file keeps.
    first: Option<Results>,
    /// Rounds added.
    rounds: usize,
}

/// A cell's figures in one round: the medians of its repetitions (one with `--repeat 1`),
/// or the recorded figures of a file without samples.
fn round_figures(run: &RunResult) -> (f64, f64, u64) {
    match &run.samples {
        Some(samples) if !samples.throughput_per_s.is_empty() => {
            let p99: Vec<f64> = samples.latency_p99_ns.iter().map(|&ns| ns as f64).collect();
            let p99 = if p99.is_empty() { run.latency_ns.p99 } else { median(&p99).round() as u64 };
            (median(&samples.throughput_per_s), median(&samples.elapsed_s), p99)
        }
        _ => (run.throughput_per_s.median, run.elapsed_s, run.latency_ns.p99),
    }
}

impl Gathering {
    /// Adds round `round`'s results: a sample per cell whose receipt is not void.
    pub fn add(&mut self, round: usize, results: Results) {
        for run in &results.runs {
            let id = cell_id(run);
            let index = match self.cells.iter().position(|cell| cell.id == id) {
                Some(index) => index,
                None => {
                    self.cells.push(Gathered {
                        id,
                        run: run.clone(),
                        from_valid_round: false,
                        samples: Samples::default(),
                        void_rounds: Vec::new(),
                    });
                    self.cells.len() - 1
                }
            };
            self.cells[index].add(round, run);
        }
        self.rounds += 1;
        if self.first.is_none() {
            self.first = Some(results);
        }
    }

    /// The cell `id`: its key, and its worker count where both record one (as
    /// [`compare`] pairs cells).
    fn find(&self, id: &CellId) -> Option<&Gathered> {
        self.cells.iter().find(|cell| {
            cell.id.0 == id.0 && (cell.id.1.is_none() || id.1.is_none() || cell.id.1 == id.1)
        })
    }

    /// Valid samples of the cell `id` (0 for a cell never seen).
    fn valid(&self, id: &CellId) -> usize {
        self.find(id).map_or(0, |cell| cell.samples.throughput_per_s.len())
    }

    /// Void rounds of the cell `id`.
    fn void(&self, id: &CellId) -> usize {
        self.void_rounds(id).len()
    }

    /// The rounds (from 1) in which the cell `id` was void.
    pub fn void_rounds(&self, id: &CellId) -> &[usize] {
        self.find(id).map_or(&[], |cell| cell.void_rounds.as_slice())
    }

    /// The side's results, one file: each cell's run of its first valid round with the
    /// samples of every valid round, and its throughput spread and elapsed median over
    /// them, `meta.repeat` the rounds run; `None` before any round.
    pub fn merged(&self) -> Option<Results> {
        let mut results = self.first.clone()?;
        results.runs = self.cells.iter().map(Gathered::merged).collect();
        // One repetition per round; a cell's void rounds are left out of its samples.
        results.meta.repeat = self.rounds;
        results.meta.notes.push(format!(
            "keyed-bench ab: {} rounds of --repeat 1 merged; runs[].samples hold one sample \
             per round whose receipt was not void; every other figure of a cell is from its \
             first valid round",
            self.rounds
        ));
        Some(results)
    }
}

impl Gathered {
    fn add(&mut self, round: usize, run: &RunResult) {
        if run.is_void() {
            self.void_rounds.push(round);
            return;
        }
        if !self.from_valid_round {
            self.run = run.clone();
            self.from_valid_round = true;
        }
        let (throughput, elapsed, p99) = round_figures(run);
        self.samples.throughput_per_s.push(throughput);
        self.samples.elapsed_s.push(elapsed);
        self.samples.latency_p99_ns.push(p99);
        self.samples.bystander_p99_ns.extend(run.bystander_latency_ns.map(|tail| tail.p99));
        self.samples.interference.extend(run.interference.clone());
    }

    fn merged(&self) -> RunResult {
        let mut run = self.run.clone();
        let throughput = &self.samples.throughput_per_s;
        if !throughput.is_empty() {
            let (min, max) = throughput
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &t| (lo.min(t), hi.max(t)));
            run.throughput_per_s = Spread { median: median(throughput), min, max };
            run.elapsed_s = median(&self.samples.elapsed_s);
        }
        run.samples = Some(self.samples.clone());
        run
    }
}

/// Both sides' samples after the rounds.
#[derive(Clone, Debug, Default)]
pub struct Rounds {
    /// The base's.
    pub base: Gathering,
    /// The head's.
    pub head: Gathering,
    /// Rounds run past `--rounds` because void rounds left a cell short of samples.
    pub extra: usize,
}

impl Rounds {
    /// The side's gathering.
    pub fn side(&self, side: Side) -> &Gathering {
        match side {
            Side::Base => &self.base,
            Side::Head => &self.head,
        }
    }

    fn side_mut(&mut self, side: Side) -> &mut Gathering {
        match side {
            Side::Base => &mut self.base,
            Side::Head => &mut self.head,
        }
    }

    /// Rounds run in all.
    pub fn run(&self) -> usize {
        self.base.rounds.min(self.head.rounds)
    }

    /// Every cell either side ran: the base's, then those only the head ran.
    pub fn ids(&self) -> impl Iterator<Item = &CellId> {
        let only_head = self.head.cells.iter().filter(|cell| self.base.find(&cell.id).is_none());
        self.base.cells.iter().chain(only_head).map(|cell| &cell.id)
    }

    /// The cells seen on both sides with fewer than [`MIN_SAMPLES`] valid samples on one.
    pub fn short(&self) -> Vec<CellId> {
        self.base
            .cells
            .iter()
            .map(|cell| &cell.id)
            .filter(|id| self.head.find(id).is_some())
            .filter(|id| self.base.valid(id) < MIN_SAMPLES || self.head.valid(id) < MIN_SAMPLES)
            .cloned()
            .collect()
    }

    /// `(base, head)` valid samples and void rounds of the cell `id`.
    pub fn counts(&self, id: &CellId) -> ((usize, usize), (usize, usize)) {
        ((self.base.valid(id), self.head.valid(id)), (self.base.void(id), self.head.void(id)))
    }
}

/// Runs one side's round: `run(side, round)` gives its results.
pub type RunRound<'r> = dyn FnMut(Side, usize) -> Result<Results, AbError> + 'r;

/// The line that announces a run: its round, side and the time left.
fn announce(round: usize, planned: usize, side: Side, eta_s: Option<f64>) -> String {
    let eta = eta_s.map_or_else(String::new, |s| format!(" (about {} left)", clock(s)));
    format!("round {round} of {planned}: {side}{eta}")
}

/// Runs `rounds` rounds, base then head in each, then more while void rounds leave some
/// cell short of [`MIN_SAMPLES`] valid samples on a side (up to [`MAX_ROUNDS_FACTOR`] x
/// `rounds` in all); says each run's start, and each extra round's reason, through `say`.
pub fn run_rounds(
    rounds: usize,
    run: &mut RunRound<'_>,
    say: &mut dyn FnMut(&str),
) -> Result<Rounds, AbError> {
    let mut gathered = Rounds::default();
    let cap = rounds * MAX_ROUNDS_FACTOR;
    let started = Instant::now();
    let mut round = 0;
    loop {
        let short = gathered.short();
        if round >= cap || (round >= rounds && short.is_empty()) {
            break;
        }
        round += 1;
        if round > rounds {
            gathered.extra += 1;
            say(&format!(
                "{} cell(s) have fewer than {MIN_SAMPLES} valid samples on a side (void \
                 rounds): extra round {round} (at most {cap})",
                short.len()
            ));
        }
        let planned = rounds.max(round);
        for side in Side::BOTH {
            let done = 2 * (round - 1) + usize::from(side == Side::Head);
            let left = 2 * planned - done;
            let eta =
                (done > 0).then(|| started.elapsed().as_secs_f64() / done as f64 * left as f64);
            say(&announce(round, planned, side, eta));
            let results = run(side, round)?;
            gathered.side_mut(side).add(round, results);
        }
    }
    let short = gathered.short();
    if !short.is_empty() {
        say(&format!(
            "after {round} rounds, {} cell(s) still have fewer than {MIN_SAMPLES} valid \
             samples on a side: too few samples to judge (the machine was busy; see the \
             rounds' interference receipts)",
            short.len()
        ));
    }
    Ok(gathered)
}

/// The two merged files and their comparison (Holm-corrected where `options` says so);
/// `None` before any round.
pub fn judge(rounds: &Rounds, options: &Options) -> Option<(Results, Results, Comparison)> {
    let base = rounds.base.merged()?;
    let head = rounds.head.merged()?;
    let mut comparison = compare(&base, &head, options);
    // The commits differ by design; every other setting that differs is worth a note.
    comparison.settings.retain(|difference| difference.field != "meta.git_commit");
    Some((base, head, comparison))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Change, Correction};
    use crate::results::interference::{Interference, Validity};
    use crate::results::Metric;

    /// The uniform and zipf cells of keyed-mailbox and work-stealing of a reference run.
    fn reference() -> Results {
        let text = include_str!("../../../results/2026-11-30-vm/results.json");
        let mut results = Results::parse(text.as_bytes(), Path::new("reference.json")).unwrap();
        results.runs.retain(|run| {
            ["uniform", "zipf"].contains(&run.scenario.as_str())
                && ["keyed-mailbox", "work-stealing"].contains(&run.strategy.as_str())
        });
        results
    }

    fn receipt(validity: Validity) -> Interference {
        Interference {
            validity,
            ..Interference::judged(1.0, 2, 0.01, Some(0.0), Some(0.0), None, None)
        }
    }

    /// One round's results of one side: each cell's reference throughput times `scale` of
    /// its strategy and a deterministic +-2% wobble of the round; void where `void` says.
    fn round_results(
        round: usize,
        scale: &dyn Fn(&str) -> f64,
        void: &dyn Fn(&RunResult) -> bool,
    ) -> Results {
        let mut results = reference();
        for (index, run) in results.runs.iter_mut().enumerate() {
            let wobble = 1.0 + 0.01 * (((round * 7 + index * 3) % 5) as f64 - 2.0);
            let throughput = run.throughput_per_s.median * scale(&run.strategy) * wobble;
            run.samples = Some(Samples {
                bystander_p99_ns: Vec::new(),
                throughput_per_s: vec![throughput],
                elapsed_s: vec![run.messages as f64 / throughput],
                latency_p99_ns: vec![(1e12 / throughput) as u64],
                interference: Vec::new(),
                cpu_s: Vec::new(),
            });
            let validity = if void(run) { Validity::Void } else { Validity::Clean };
            run.interference = Some(receipt(validity));
        }
        results
    }

    fn unchanged(_: &str) -> f64 {
        1.0
    }

    fn never(_: &RunResult) -> bool {
        false
    }

    fn holm() -> Options {
        Options {
            metrics: vec![Metric::Throughput],
            correction: Correction::Holm,
            ..Options::default()
        }
    }

    #[test]
    fn rounds_run_base_then_head_and_give_one_sample_per_round() {
        let mut order = Vec::new();
        let mut lines = Vec::new();
        let rounds = run_rounds(
            6,
            &mut |side, round| {
                order.push((side, round));
                Ok(round_results(round, &unchanged, &never))
            },
            &mut |line| lines.push(line.to_owned()),
        )
        .unwrap();
        let expected: Vec<(Side, usize)> =
            (1..=6).flat_map(|round| Side::BOTH.map(|side| (side, round))).collect();
        assert_eq!(order, expected);
        assert_eq!((rounds.run(), rounds.extra), (6, 0));
        assert_eq!(lines.len(), 12, "{lines:?}");
        assert_eq!(lines[0], "round 1 of 6: base");
        assert!(lines[1].starts_with("round 1 of 6: head (about "), "{}", lines[1]);
        assert!(lines[11].starts_with("round 6 of 6: head (about "), "{}", lines[11]);
        let merged = rounds.head.merged().unwrap();
        assert_eq!(merged.runs.len(), 4);
        assert_eq!(merged.meta.repeat, 6);
        for run in &merged.runs {
            let samples = run.samples.as_ref().unwrap();
            assert_eq!(samples.throughput_per_s.len(), 6);
            assert_eq!(samples.interference.len(), 6);
            assert_eq!(run.throughput_per_s.median, median(&samples.throughput_per_s));
            assert!(run.throughput_per_s.min < run.throughput_per_s.max);
        }
        assert!(merged.meta.notes.iter().any(|note| note.contains("6 rounds of --repeat 1")));
        let id = cell_id(&merged.runs[0]);
        assert_eq!(rounds.counts(&id), ((6, 6), (0, 0)));
    }

    #[test]
    fn void_rounds_give_no_sample_and_extra_rounds_make_up_for_them() {
        // keyed-mailbox on uniform is void on the base side in rounds 2 to 5.
        let is_hit = |run: &RunResult| run.scenario == "uniform" && run.strategy == "keyed-mailbox";
        let mut lines = Vec::new();
        let rounds = run_rounds(
            6,
            &mut |side, round| {
                let void =
                    |run: &RunResult| side == Side::Base && (2..=5).contains(&round) && is_hit(run);
                Ok(round_results(round, &unchanged, &void))
            },
            &mut |line| lines.push(line.to_owned()),
        )
        .unwrap();
        assert_eq!((rounds.run(), rounds.extra), (7, 1), "{lines:?}");
        assert!(lines.iter().any(|l| l.starts_with("1 cell(s) have fewer than 3 valid samples")));
        assert!(lines.iter().any(|l| l.contains("extra round 7 (at most 12)")), "{lines:?}");
        let hit = rounds.base.cells.iter().find(|cell| is_hit(&cell.run)).unwrap();
        assert_eq!(hit.void_rounds, [2, 3, 4, 5]);
        assert_eq!(rounds.counts(&hit.id), ((3, 7), (4, 0)));
        assert!(rounds.short().is_empty());
        // Void in every round: extra rounds up to twice --rounds, then too few to judge.
        let mut lines = Vec::new();
        let rounds = run_rounds(
            5,
            &mut |side, round| {
                let void = |run: &RunResult| side == Side::Head && is_hit(run);
                Ok(round_results(round, &unchanged, &void))
            },
            &mut |line| lines.push(line.to_owned()),
        )
        .unwrap();
        assert_eq!((rounds.run(), rounds.extra), (10, 5));
        assert!(lines.last().unwrap().starts_with("after 10 rounds, 1 cell(s) still have fewer"));
        let (base, head, comparison) = judge(&rounds, &holm()).unwrap();
        assert_eq!((base.meta.repeat, head.meta.repeat), (10, 10));
        assert!(comparison.settings.is_empty(), "{:?}", comparison.settings);
        let verdicts: Vec<Change> =
            comparison.rows().map(|(_, row)| row.judgement.verdict).collect();
        assert_eq!(verdicts.iter().filter(|&&v| v == Change::TooFewSamples).count(), 1);
        assert_eq!(verdicts.iter().filter(|&&v| v == Change::WithinNoise).count(), 3);
    }

    #[test]
    fn a_failed_round_stops_the_rounds() {
        let mut calls = 0;
        let error = run_rounds(
            6,
            &mut |side, round| {
                calls += 1;
                if (side, round) == (Side::Head, 2) {
                    return Err(AbError::io(
                        "run",
                        Path::new("head"),
                        std::io::ErrorKind::Other.into(),
                    ));
                }
                Ok(round_results(round, &unchanged, &never))
            },
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(calls, 4);
        assert!(error.to_string().starts_with("cannot run head"), "{error}");
    }

    /// `rounds` rounds with the head's keyed-mailbox throughput scaled by `slowdown`.
    fn ab(rounds: usize, slowdown: f64) -> Rounds {
        let head = move |strategy: &str| if strategy == "keyed-mailbox" { slowdown } else { 1.0 };
        run_rounds(
            rounds,
            &mut |side, round| match side {
                Side::Base => Ok(round_results(round, &unchanged, &never)),
                // The head's wobble is the base's of another round: no two sides alike.
                Side::Head => Ok(round_results(round + 3, &head, &never)),
            },
            &mut |_| {},
        )
        .unwrap()
    }

    #[test]
    fn a_planted_slowdown_is_judged_slower_and_an_unchanged_build_is_not() {
        let (_, _, comparison) = judge(&ab(6, 0.8), &holm()).unwrap();
        for (cell, row) in comparison.rows() {
            let slowed = cell.key.strategy == "keyed-mailbox";
            let expected = if slowed { Change::Slower } else { Change::WithinNoise };
            assert_eq!(row.judgement.verdict, expected, "{cell} {row:?}");
            assert!(row.judgement.p_adjusted.unwrap() >= row.judgement.p_value.unwrap());
        }
        let regressions = comparison.regressions(10.0);
        assert_eq!(regressions.len(), 2);
        assert!(comparison.regressions(25.0).is_empty());
        assert!(comparison.settings.is_empty(), "{:?}", comparison.settings);
        let (_, _, comparison) = judge(&ab(6, 1.0), &holm()).unwrap();
        assert!(comparison.rows().all(|(_, row)| row.judgement.verdict == Change::WithinNoise));
    }

    #[test]
    fn the_report_names_both_sides_the_rounds_and_the_corrected_verdicts() {
        let rounds = ab(6, 0.8);
        let (_, head_results, comparison) = judge(&rounds, &holm()).unwrap();
        let base = Base {
            given: "main".into(),
            commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
            binary: "/cache/bin/keyed-bench-0123-release".into(),
            dir: None,
            built: true,
        };
        let regressions = comparison.regressions(10.0);
        let flags = vec!["--scenario".to_owned(), "uniform,zipf".to_owned()];
        let report = Report {
            base: &base,
            head: Path::new("/repo/target/release/keyed-bench"),
            head_commit: &head_results.meta.git_commit,
            run_flags: &flags,
            planned: 6,
            rounds: &rounds,
            comparison: &comparison,
            regressions: Some((10.0, regressions.as_slice())),
        };
        let text = render_text(&report);
        assert!(text.starts_with("base: main, commit 0123456789abcdef"), "{text}");
        assert!(
            text.contains("(built now)") && text.contains("run flags: --scenario 'uniform,zipf'")
        );
        assert!(text.contains("6 rounds, base then head in each\n"), "{text}");
        assert!(text.contains("Holm-corrected for the 4 rows judged"), "{text}");
        let line = text.lines().find(|l| l.starts_with("uniform keyed-mailbox")).unwrap();
        assert!(line.contains("6/6") && line.contains("0/0") && line.ends_with("slower"), "{line}");
        assert!(text.contains("2 slower, 2 within noise"), "{text}");
        assert!(text.contains("2 slower by more than 10% (--fail-on-regression):\n  uniform"));
        let markdown = render_markdown(&report);
        assert!(markdown.starts_with("### keyed-bench ab: 2 slower, 2 within noise"), "{markdown}");
        assert!(markdown.contains("| p (Holm) | verdict |") && markdown.contains("**slower**"));
        let json: serde_json::Value = serde_json::from_str(&render_json(&report)).unwrap();
        assert_eq!(json["rounds"]["run"], 6);
        assert_eq!(json["base"]["given"], "main");
        assert_eq!(json["cells"].as_array().unwrap().len(), 4);
        assert_eq!(json["cells"][0]["valid"]["head"], 6);
        assert_eq!(json["comparison"]["correction"], "holm");
        assert_eq!(json["fail_on_regression"]["failed"], true);
    }
}
