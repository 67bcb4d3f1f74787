//! The two-sided Mann-Whitney U test (Wilcoxon rank-sum test) of two independent samples.
//!
//! Both samples are ranked together, tied values sharing the mean of their ranks. The
//! statistic is the rank sum of the first sample; under the null hypothesis (both samples
//! come from one distribution) every split of the pooled ranks into groups of the two sizes
//! is equally likely.
//!
//! - Up to [`EXACT_UP_TO`] values in all, the p-value is exact: the share of all those
//!   splits whose rank sum lies at least as far from its mean as the observed one, counted
//!   with the tied ranks as they are (a permutation test, exact with ties too).
//! - Above that, the normal approximation: U against mean `n_a n_b / 2` and the variance
//!   corrected for ties, `n_a n_b / 12 ((N + 1) - sum(t^3 - t) / (N (N - 1)))`, with a
//!   continuity correction of 1/2.
//!
//! Ranks are computed in doubled units (twice the mean rank is a whole number), so that the
//! exact distribution is counted over integers and "at least as far" is decided exactly.
//!
//! Many tests at once (every cell and metric of a comparison) are corrected for their number
//! by [`holm`]: Holm's step-down method.

/// The most values (both samples together) for which the exact distribution is counted;
/// the counts then stay below 2^53, exact in an `f64`.
pub const EXACT_UP_TO: usize = 50;

/// The two-sided p-value of the Mann-Whitney U test of `a` against `b`: the probability,
/// were both drawn from one distribution, of a rank sum at least as extreme as this one.
/// 1 when either sample is empty.
pub fn mann_whitney_p(a: &[f64], b: &[f64]) -> f64 {
    let (n_a, n_b) = (a.len(), b.len());
    if n_a == 0 || n_b == 0 {
        return 1.0;
    }
    let ranked = doubled_ranks(a, b);
    let observed: u64 = ranked.iter().filter(|(first, _)| *first).map(|(_, rank)| rank).sum();
    let p = if n_a + n_b <= EXACT_UP_TO {
        let ranks: Vec<u64> = ranked.iter().map(|(_, rank)| *rank).collect();
        exact_p(&ranks, n_a, observed)
    } else {
        let ties = tie_sizes(a, b);
        normal_p(n_a, n_b, observed, &ties)
    };
    p.clamp(0.0, 1.0)
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

/// Every value of `a` and `b` with twice its (mean) rank in the pooled sample, and whether
/// it came from `a`.
fn doubled_ranks(a: &[f64], b: &[f64]) -> Vec<(bool, u64)> {
    let mut pooled: Vec<(f64, bool)> =
        a.iter().map(|&v| (v, true)).chain(b.iter().map(|&v| (v, false))).collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut ranked = Vec::with_capacity(pooled.len());
    let mut start = 0;
    while start < pooled.len() {
        let mut end = start + 1;
        while end < pooled.len() && pooled[end].0.total_cmp(&pooled[start].0).is_eq() {
            end += 1;
        }
        // Ranks start + 1 ..= end share their mean, (start + 1 + end) / 2.
        let doubled = (start + 1 + end) as u64;
        ranked.extend(pooled[start..end].iter().map(|&(_, first)| (first, doubled)));
        start = end;
    }
    ranked
}

/// The sizes of the groups of tied values in the pooled sample (groups of one left out).
fn tie_sizes(a: &[f64], b: &[f64]) -> Vec<u64> {
    let mut pooled: Vec<f64> = a.iter().chain(b).copied().collect();
    pooled.sort_by(f64::total_cmp);
    let mut ties = Vec::new();
    let mut start = 0;
    while start < pooled.len() {
        let mut end = start + 1;
        while end < pooled.len() && pooled[end].total_cmp(&pooled[start]).is_eq() {
            end += 1;
        }
        if end - start > 1 {
            ties.push((end - start) as u64);
        }
        start = end;
    }
    ties
}

/// The exact two-sided p-value: of all ways to choose `n_a` of the pooled `ranks`
/// (doubled), the share whose sum is at least as far from the mean as `observed`.
fn exact_p(ranks: &[u64], n_a: usize, observed: u64) -> f64 {
    let total: u64 = ranks.iter().sum();
    let width = total as usize + 1;
    // ways[k * width + s]: subsets of k of the ranks seen so far whose sum is s.
    let mut ways = vec![0.0f64; (n_a + 1) * width];
    ways[0] = 1.0;
    for (seen, &rank) in ranks.iter().enumerate() {
        let rank = rank as usize;
        for k in (1..=n_a.min(seen + 1)).rev() {
            let (below, here) = ways.split_at_mut(k * width);
            let below = &below[(k - 1) * width..];
            for sum in (rank..width).rev() {
                here[sum] += below[sum - rank];
            }
        }
    }
    let row = &ways[n_a * width..(n_a + 1) * width];
    let n = ranks.len() as u64;
    // The mean of the doubled rank sum: n_a (N + 1).
    let mean = n_a as u64 * (n + 1);
    let distance = observed.abs_diff(mean);
    let (mut extreme, mut all) = (0.0, 0.0);
    for (sum, &count) in row.iter().enumerate() {
        all += count;
        if (sum as u64).abs_diff(mean) >= distance {
            extreme += count;
        }
    }
    extreme / all
}

/// The two-sided p-value from the normal approximation with the tie correction and a
/// continuity correction of 1/2; `doubled_sum` is twice the rank sum of the first sample.
fn normal_p(n_a: usize, n_b: usize, doubled_sum: u64, ties: &[u64]) -> f64 {
    let (a, b) = (n_a as f64, n_b as f64);
    let n = a + b;
    let u = doubled_sum as f64 / 2.0 - a * (a + 1.0) / 2.0;
    let mean = a * b / 2.0;
    let tied: f64 = ties.iter().map(|&t| (t * t * t - t) as f64).sum();
    let variance = a * b / 12.0 * ((n + 1.0) - tied / (n * (n - 1.0)));
    if variance <= 0.0 {
        // Every value is the same: nothing tells the samples apart.
        return 1.0;
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    erfc(z / std::f64::consts::SQRT_2)
}

/// The complementary error function, to a relative error below 1.2e-7 (the Chebyshev
/// fit of Numerical Recipes' `erfcc`).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let value = t * poly.exp();
    if x >= 0.0 {
        value
    } else {
        2.0 - value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exact p-value by listing every split of the pooled values, for checking.
    fn brute_force_p(a: &[f64], b: &[f64]) -> f64 {
        let ranked = doubled_ranks(a, b);
        let ranks: Vec<u64> = ranked.iter().map(|(_, rank)| *rank).collect();
        let observed: u64 = ranked.iter().filter(|(first, _)| *first).map(|(_, r)| r).sum();
        let n = ranks.len();
        let mean = a.len() as u64 * (n as u64 + 1);
        let (mut extreme, mut all) = (0u64, 0u64);
        for mask in 0u32..(1 << n) {
            if mask.count_ones() as usize != a.len() {
                continue;
            }
            let sum: u64 = (0..n).filter(|i| mask & (1 << i) != 0).map(|i| ranks[i]).sum();
            all += 1;
            if sum.abs_diff(mean) >= observed.abs_diff(mean) {
                extreme += 1;
            }
        }
        extreme as f64 / all as f64
    }

    #[test]
    fn complete_separation_of_five_and_five_is_the_smallest_p() {
        let low = [1.0, 2.0, 3.0, 4.0, 5.0];
        let high = [6.0, 7.0, 8.0, 9.0, 10.0];
        // 2 of the C(10, 5) = 252 splits are as extreme.
        assert!((mann_whitney_p(&low, &high) - 2.0 / 252.0).abs() < 1e-12);
        assert!((mann_whitney_p(&high, &low) - 2.0 / 252.0).abs() < 1e-12);
    }

    #[test]
    fn the_exact_count_matches_listing_every_split_ties_included() {
        let cases: [(&[f64], &[f64]); 5] = [
            (&[1.0, 2.0, 3.0, 4.0, 5.0], &[3.5, 6.0, 7.0, 8.0, 9.0]),
            (&[1.0, 1.0, 2.0, 2.0, 3.0], &[2.0, 3.0, 3.0, 4.0, 4.0]),
            (&[5.0, 5.0, 5.0, 5.0, 5.0], &[5.0, 5.0, 5.0, 5.0, 6.0]),
            (&[0.1, 0.4, 0.2], &[0.3, 0.5, 0.6, 0.7, 0.8, 0.9]),
            (&[3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0], &[6.0, 5.0, 3.0, 5.0, 8.0, 9.0, 7.0]),
        ];
        for (a, b) in cases {
            let (fast, slow) = (mann_whitney_p(a, b), brute_force_p(a, b));
            assert!((fast - slow).abs() < 1e-12, "{a:?} {b:?}: {fast} vs {slow}");
        }
    }

    #[test]
    fn identical_samples_and_all_ties_give_p_one() {
        let same = [2.0, 2.0, 2.0, 2.0, 2.0];
        assert_eq!(mann_whitney_p(&same, &same), 1.0);
        let values = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(mann_whitney_p(&values, &values), 1.0);
        let many = vec![7.0; 40];
        assert_eq!(mann_whitney_p(&many, &many), 1.0);
        assert_eq!(mann_whitney_p(&[], &values), 1.0);
    }

    #[test]
    fn the_normal_approximation_agrees_with_the_exact_count_near_the_switch() {
        // 25 + 25 values: counted exactly; the approximation on the same ranks is close.
        let a: Vec<f64> = (0..25).map(|i| f64::from(i) * 1.0).collect();
        let b: Vec<f64> = (0..25).map(|i| f64::from(i) * 1.0 + 6.5).collect();
        let exact = mann_whitney_p(&a, &b);
        let ranked = doubled_ranks(&a, &b);
        let observed: u64 = ranked.iter().filter(|(first, _)| *first).map(|(_, r)| r).sum();
        let approximate = normal_p(25, 25, observed, &tie_sizes(&a, &b));
        assert!((exact - approximate).abs() < 0.005, "{exact} vs {approximate}");
        assert!(exact < 0.05 && exact > 0.001, "{exact}");
        // Past the switch the approximation is used: a clear shift is clearly significant.
        let a: Vec<f64> = (0..30).map(f64::from).collect();
        let b: Vec<f64> = (0..30).map(|i| f64::from(i) + 30.0).collect();
        assert!(mann_whitney_p(&a, &b) < 1e-9);
        assert!(mann_whitney_p(&a, &a) > 0.99);
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

    #[test]
    fn erfc_is_accurate() {
        for (x, expected) in [
            (0.0, 1.0),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_13),
            (2.0, 0.004_677_734_981_047_266),
            (-1.0, 1.842_700_792_949_715),
        ] {
            let value = erfc(x);
            assert!((value - expected).abs() <= 1.2e-7 * expected, "erfc({x}) = {value}");
        }
    }
}
