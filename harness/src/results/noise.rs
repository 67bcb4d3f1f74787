//! The one notion of "within noise" that `compare` and the summary's verdict share.
//!
//! Two sets of per-repetition samples of one metric (two runs' of one cell, or two designs'
//! in one run) differ when both hold:
//! - **the test rejects one distribution**: Welch's two-sided t-test, on the samples'
//!   logarithms where every value is positive (run-to-run noise in rates, times and
//!   percentiles is multiplicative: a design twice as fast is not twice as steady in
//!   absolute terms), on the values themselves otherwise, gives `p` below [`ALPHA`];
//! - **the change is worth naming**: the medians lie more than [`THRESHOLD_PCT`] percent
//!   apart.
//!
//! Welch's test needs [`MIN_SAMPLES`] per side: the default run's 3 repetitions. With 3
//! against 3 it reaches significance where the two sets' means lie several of their
//! standard errors apart (a throughput that moved 10% with a 3% coefficient of variation:
//! p about 0.018); a rank test cannot (Mann-Whitney's smallest two-sided p with 3 against
//! 3 is 0.1, whatever the gap).
//!
//! The test sees only the noise between repetitions of one run. Two runs also differ by
//! what changed between them on the machine (the host's load, the memory's layout): that
//! shows as false flags when unchanged code is compared with itself, which
//! `docs/results.md` ("Within noise") counts.
//!
//! Many tests at once (every cell and metric of a comparison) can be corrected for their
//! number by [`holm`]: Holm's step-down method.

/// The fewest samples on each side a test needs.
pub const MIN_SAMPLES: usize = 3;
/// The significance level of the test.
pub const ALPHA: f64 = 0.05;
/// The least change of the median, in percent, that counts as a difference.
pub const THRESHOLD_PCT: f64 = 2.0;

/// The first two moments of one side's samples, as the test reads them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moments {
    /// Samples.
    pub n: usize,
    /// Their mean (of the logarithms where `log`).
    pub mean: f64,
    /// Their sample variance (`n - 1` in the denominator).
    pub variance: f64,
    /// Whether the moments are of the logarithms.
    pub log: bool,
}

impl Moments {
    /// The moments of `samples`, of their logarithms where every one is positive; `None`
    /// with fewer than [`MIN_SAMPLES`] or a value that is not finite.
    pub fn of(samples: &[f64]) -> Option<Self> {
        Self::with(samples, samples.iter().all(|&value| value > 0.0))
    }

    fn with(samples: &[f64], log: bool) -> Option<Self> {
        if samples.len() < MIN_SAMPLES || samples.iter().any(|value| !value.is_finite()) {
            return None;
        }
        let values: Vec<f64> =
            samples.iter().map(|&value| if log { value.ln() } else { value }).collect();
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let variance = values.iter().map(|value| (value - mean).powi(2)).sum::<f64>() / (n - 1.0);
        Some(Self { n: values.len(), mean, variance, log })
    }
}

/// The two-sided p-value of Welch's t-test of `a` against `b`, on their logarithms where
/// every value of both is positive; `None` with fewer than [`MIN_SAMPLES`] on a side.
pub fn welch_p(a: &[f64], b: &[f64]) -> Option<f64> {
    let log = a.iter().chain(b).all(|&value| value > 0.0);
    Some(moments_p(&Moments::with(a, log)?, &Moments::with(b, log)?))
}

/// Welch's two-sided p-value from both sides' moments (taken alike: both of logarithms, or
/// both of values; 1 where they are not). Two sides with no variance at all differ where
/// their means do (p 0), and are one otherwise (p 1).
pub fn moments_p(a: &Moments, b: &Moments) -> f64 {
    if a.log != b.log {
        return 1.0;
    }
    let (error_a, error_b) = (a.variance / a.n as f64, b.variance / b.n as f64);
    let error = error_a + error_b;
    if error <= 0.0 {
        return if a.mean == b.mean { 1.0 } else { 0.0 };
    }
    let t = (b.mean - a.mean) / error.sqrt();
    // The Welch-Satterthwaite degrees of freedom.
    let df = error * error
        / (error_a * error_a / (a.n - 1) as f64 + error_b * error_b / (b.n - 1) as f64);
    if !df.is_finite() || df <= 0.0 {
        // The variances underflowed when squared: the smaller side's degrees of freedom.
        return student_two_sided_p(t, (a.n.min(b.n) - 1) as f64);
    }
    student_two_sided_p(t, df)
}

/// Whether a change from `a` to `b` (medians) whose test gave `p` is a difference: `p`
/// below `alpha` and the medians more than `threshold_pct` percent apart (of `a`'s; any
/// change from a zero median counts).
pub fn differs(p: f64, a: f64, b: f64, alpha: f64, threshold_pct: f64) -> bool {
    let beyond = if a == 0.0 { b != 0.0 } else { ((b - a) / a).abs() * 100.0 > threshold_pct };
    p < alpha && beyond
}

/// `P(|T| >= |t|)` for Student's t with `df` degrees of freedom: the regularized incomplete
/// beta function `I_x(df / 2, 1 / 2)` at `x = df / (df + t^2)`.
fn student_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return 0.0;
    }
    let x = df / (df + t * t);
    incomplete_beta(df / 2.0, 0.5, x).clamp(0.0, 1.0)
}

/// The regularized incomplete beta function `I_x(a, b)`, by its continued fraction
/// (Numerical Recipes, `betai` and `betacf`), to a relative error near 1e-12.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function (modified Lentz's method).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (sum, plus, minus) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - sum * x / plus;
    d = 1.0 / if d.abs() < TINY { TINY } else { d };
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        let even = m * (b - m) * x / ((minus + 2.0 * m) * (a + 2.0 * m));
        let odd = -(a + m) * (sum + m) * x / ((a + 2.0 * m) * (plus + 2.0 * m));
        for coefficient in [even, odd] {
            d = 1.0 + coefficient * d;
            d = 1.0 / if d.abs() < TINY { TINY } else { d };
            c = 1.0 + coefficient / c;
            if c.abs() < TINY {
                c = TINY;
            }
            h *= d * c;
        }
        if (d * c - 1.0).abs() < 1e-13 {
            break;
        }
    }
    h
}

/// `ln Γ(x)` for `x > 0` (Lanczos' approximation, g = 7, nine terms).
fn ln_gamma(x: f64) -> f64 {
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // The reflection formula.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (index, coefficient) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += coefficient / (x + index as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// Holm's step-down adjustment of the p-values of `m` tests, in their order: the `i`-th
/// smallest p-value (from 1) times `m - i + 1`, made non-decreasing along that order and
/// capped at 1.
///
/// Rejecting every test whose adjusted p-value is below `alpha` keeps the chance of any
/// false rejection among the `m` (the family-wise error rate) at most `alpha`, whatever
/// their dependence (Holm 1979, "A simple sequentially rejective multiple test
/// procedure"). It rejects everything Bonferroni's `m x p` rejects, and more.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let m = p_values.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&x, &y| p_values[x].total_cmp(&p_values[y]));
    let mut adjusted = vec![1.0; m];
    let mut running = 0.0f64;
    for (rank, &index) in order.iter().enumerate() {
        let scaled = (p_values[index] * (m - rank) as f64).min(1.0);
        running = running.max(scaled);
        adjusted[index] = running;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_t_distribution_gives_its_tabled_quantiles() {
        // Two-sided 5% points of Student's t.
        for (t, df) in [(12.706, 1.0), (4.303, 2.0), (2.776, 4.0), (2.228, 10.0), (1.960, 1e6)] {
            let p = student_two_sided_p(t, df);
            assert!((p - 0.05).abs() < 5e-4, "t {t} df {df}: p {p}");
        }
        assert!((student_two_sided_p(0.0, 4.0) - 1.0).abs() < 1e-12);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }

    #[test]
    fn three_against_three_can_reach_significance() {
        // A throughput 10% higher with about 3% noise: significant at 5%.
        let a = [100.0, 103.0, 97.0];
        let b = [110.0, 113.3, 106.7];
        let p = welch_p(&a, &b).expect("three on each side");
        assert!(p < 0.05, "{p}");
        assert!(differs(p, 100.0, 110.0, ALPHA, THRESHOLD_PCT));
        // The same gap inside 15% noise is not.
        let noisy = [85.0, 100.0, 115.0];
        let p = welch_p(&noisy, &[95.0, 110.0, 125.0]).unwrap();
        assert!(p > 0.05, "{p}");
        // A significant change under the threshold is not a difference.
        let p = welch_p(&[100.0, 100.1, 99.9], &[101.0, 101.1, 100.9]).unwrap();
        assert!(p < 0.05 && !differs(p, 100.0, 101.0, ALPHA, THRESHOLD_PCT));
    }

    #[test]
    fn the_test_is_of_ratios_where_every_value_is_positive() {
        // Scaling both sides changes nothing on logarithms.
        let (a, b) = ([10.0, 11.0, 12.0], [13.0, 14.0, 16.0]);
        let scaled = |side: &[f64]| side.iter().map(|v| v * 1e6).collect::<Vec<_>>();
        let p = welch_p(&a, &b).unwrap();
        assert!((p - welch_p(&scaled(&a), &scaled(&b)).unwrap()).abs() < 1e-9);
        // A zero on one side: both sides on their values.
        assert!(welch_p(&[0.0, 1.0, 2.0], &[5.0, 6.0, 7.0]).unwrap() < 0.05);
        assert_eq!(Moments::of(&[0.0, 1.0, 2.0]).map(|m| m.log), Some(false));
    }

    #[test]
    fn too_few_or_no_variance() {
        assert_eq!(welch_p(&[1.0, 2.0], &[3.0, 4.0, 5.0]), None);
        assert_eq!(welch_p(&[2.0; 3], &[2.0; 3]), Some(1.0));
        assert_eq!(welch_p(&[2.0; 3], &[3.0; 3]), Some(0.0));
        let (logs, values) = (Moments::of(&[1.0; 3]).unwrap(), Moments::of(&[0.0; 3]).unwrap());
        assert_eq!(moments_p(&logs, &values), 1.0, "moments taken differently are no test");
    }

    #[test]
    fn holm_scales_the_sorted_p_values_and_keeps_their_order() {
        // Sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> 0.06.
        let adjusted = holm(&[0.01, 0.04, 0.03, 0.005]);
        let expected = [0.03, 0.06, 0.06, 0.02];
        for (got, want) in adjusted.iter().zip(expected) {
            assert!((got - want).abs() < 1e-12, "{adjusted:?}");
        }
        // At alpha 0.05 two are rejected; Bonferroni (x 4) would reject only 0.005.
        assert_eq!(adjusted.iter().filter(|&&p| p < 0.05).count(), 2);
        // Capped at 1; one test is left as it is; none gives none.
        assert_eq!(holm(&[0.5, 0.9, 0.7]), [1.0, 1.0, 1.0]);
        assert_eq!(holm(&[0.2]), [0.2]);
        assert!(holm(&[]).is_empty());
        // Ties keep one adjusted value.
        let tied = holm(&[0.01, 0.01]);
        assert_eq!(tied, [0.02, 0.02]);
    }
}
