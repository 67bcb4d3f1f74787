//! The judgement of one metric of one cell: B's samples against A's, and the verdict.

use std::fmt;

use serde::Serialize;

use crate::results::{median, noise, Metric};

/// The default significance level of the test.
pub const DEFAULT_ALPHA: f64 = noise::ALPHA;
/// The default least change of the median, in percent, that counts as faster or slower.
pub const DEFAULT_THRESHOLD_PCT: f64 = noise::THRESHOLD_PCT;
/// The metrics compared unless `--metric` says otherwise (and what its `all` stands for):
/// the figures each repetition records, so each is judged on its samples.
pub const DEFAULT_METRICS: [Metric; 4] =
    [Metric::Throughput, Metric::Elapsed, Metric::P99, Metric::BystanderP99];

/// What B's change from A in one metric of one cell reads as: the verdict a comparison
/// prints for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Change {
    /// B is better than A beyond the noise and the threshold.
    #[serde(rename = "faster")]
    Faster,
    /// B is worse than A beyond the noise and the threshold.
    #[serde(rename = "slower")]
    Slower,
    /// No difference the samples can tell from noise, or one within the threshold.
    #[serde(rename = "within noise")]
    WithinNoise,
    /// A side has fewer than [`MIN_SAMPLES`](super::MIN_SAMPLES) samples.
    #[serde(rename = "too few samples to judge")]
    TooFewSamples,
}

impl Change {
    /// The verdict as reports print it (and JSON writes it).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Faster => "faster",
            Self::Slower => "slower",
            Self::WithinNoise => "within noise",
            Self::TooFewSamples => "too few samples to judge",
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How the p-values of a comparison's many tests are corrected for their number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Correction {
    /// Each row tested at alpha on its own: among many unchanged cells, some read as
    /// changed by chance (one in twenty at alpha 0.05).
    #[default]
    None,
    /// Holm's step-down method over every judged row: the chance that any unchanged row
    /// reads as changed stays at most alpha.
    Holm,
}

/// How verdicts are reached.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// The significance level of the two-sided test ([`crate::results::noise`]).
    pub alpha: f64,
    /// The least change of the median, in percent, that counts as faster or slower.
    pub threshold_pct: f64,
    /// The metrics to compare, in report order.
    pub metrics: Vec<Metric>,
    /// Whether the rows' p-values are corrected for their number before the verdicts.
    pub correction: Correction,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            alpha: DEFAULT_ALPHA,
            threshold_pct: DEFAULT_THRESHOLD_PCT,
            metrics: DEFAULT_METRICS.to_vec(),
            correction: Correction::None,
        }
    }
}

/// The judgement of two samples of one metric.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Judgement {
    /// A's median.
    pub a_median: f64,
    /// B's median.
    pub b_median: f64,
    /// A's sample count.
    pub a_samples: usize,
    /// B's sample count.
    pub b_samples: usize,
    /// `(B - A) / A` of the medians, in percent; `None` where A's median is 0 and B's is
    /// not.
    pub change_pct: Option<f64>,
    /// The test's two-sided p-value; `None` with too few samples.
    pub p_value: Option<f64>,
    /// The p-value corrected for the number of rows judged together (see [`Correction`]),
    /// which the verdict then weighs; `None` without a correction.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p_adjusted: Option<f64>,
    /// What the change reads as.
    pub verdict: Change,
}

impl Judgement {
    /// How much worse B is than A, in percent, when the verdict is [`Change::Slower`]: the
    /// fall in a higher-is-better metric, the rise in a lower-is-better one (infinite where
    /// A's median is 0).
    pub fn regression_pct(&self, higher_is_better: bool) -> Option<f64> {
        (self.verdict == Change::Slower).then(|| match self.change_pct {
            Some(change) if higher_is_better => -change,
            Some(change) => change,
            None => f64::INFINITY,
        })
    }
}

/// The change from `a` to `b` in percent of `a`; `None` where `a` is 0 and `b` is not.
pub(super) fn change_pct(a: f64, b: f64) -> Option<f64> {
    if a == b {
        Some(0.0)
    } else if a == 0.0 {
        None
    } else {
        Some((b - a) / a.abs() * 100.0)
    }
}

/// Judges samples `b` against `a` of a metric where `higher_is_better` says which way is
/// an improvement (see the module docs). `recorded` gives each side's median where it has
/// no samples at all (a file from before samples were recorded).
pub fn judge(
    a: &[f64],
    b: &[f64],
    recorded: (f64, f64),
    higher_is_better: bool,
    options: &Options,
) -> Judgement {
    let middle = |samples: &[f64], recorded: f64| {
        if samples.is_empty() {
            recorded
        } else {
            median(samples)
        }
    };
    let (a_median, b_median) = (middle(a, recorded.0), middle(b, recorded.1));
    let change = change_pct(a_median, b_median);
    let mut judgement = Judgement {
        a_median,
        b_median,
        a_samples: a.len(),
        b_samples: b.len(),
        change_pct: change,
        p_value: None,
        p_adjusted: None,
        verdict: Change::TooFewSamples,
    };
    let Some(p) = noise::welch_p(a, b) else {
        return judgement;
    };
    judgement.p_value = Some(p);
    judgement.verdict = verdict(&judgement, p, higher_is_better, options);
    judgement
}

/// The verdict of a judgement whose test gave `p` (raw or corrected): faster or slower
/// where `p` is below alpha and the medians lie more than the threshold apart, else within
/// noise.
pub(super) fn verdict(
    judgement: &Judgement,
    p: f64,
    higher_is_better: bool,
    options: &Options,
) -> Change {
    let (a, b) = (judgement.a_median, judgement.b_median);
    if noise::differs(p, a, b, options.alpha, options.threshold_pct) {
        if (judgement.b_median > judgement.a_median) == higher_is_better {
            Change::Faster
        } else {
            Change::Slower
        }
    } else {
        Change::WithinNoise
    }
}
