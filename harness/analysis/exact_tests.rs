//! Exact tests for outcomes, which are counts and small samples: Fisher's exact test of two
//! shares (pass/crash, or one crash kind) and a rank test of two samples of crash steps, exact by
//! the permutation distribution of the rank sum. Both are two-sided and make no assumption of
//! normality, so they hold at the 3-10 repeats a matrix cell gets. Numbers only; the words are
//! `outcomes`'.

/// ln(n!) for n = 0..=max, by summing logarithms: the table Fisher's test reads. Made once for
/// many tests of a pool's size (a fleet's nodes each against the others' pooled runs), since
/// making it is O(n) and a test of a small sample against a large pool is O(the sample).
pub struct LnFactorials(Vec<f64>);

impl LnFactorials {
    pub fn new(max: usize) -> LnFactorials {
        let mut table = Vec::with_capacity(max + 1);
        let mut acc = 0.0f64;
        table.push(0.0);
        for n in 1..=max {
            acc += (n as f64).ln();
            table.push(acc);
        }
        LnFactorials(table)
    }

    /// Fisher's exact test, two-sided, of the 2x2 table `[[a, b], [c, d]]` (rows: the two
    /// sides; columns: in the category or not): the probability, with the margins fixed, of a
    /// table at most as likely as this one. A table larger than this one's range makes its own.
    pub fn fisher(&self, a: u64, b: u64, c: u64, d: u64) -> f64 {
        let (row1, col1, n) = (a + b, a + c, a + b + c + d);
        if n == 0 {
            return 1.0;
        }
        if n as usize >= self.0.len() {
            return LnFactorials::new(n as usize).fisher(a, b, c, d);
        }
        let lf = &self.0;
        let ln_choose = |n: u64, k: u64| lf[n as usize] - lf[k as usize] - lf[(n - k) as usize];
        let ln_p = |x: u64| ln_choose(col1, x) + ln_choose(n - col1, row1 - x) - ln_choose(n, row1);
        let observed = ln_p(a);
        let low = row1.saturating_sub(n - col1);
        let high = row1.min(col1);
        // Tables as likely as the observed one, within rounding, count as "as extreme".
        let p: f64 = (low..=high)
            .map(ln_p)
            .filter(|lp| *lp <= observed + 1e-7)
            .map(f64::exp)
            .sum();
        p.min(1.0)
    }
}

/// Fisher's exact test, two-sided, of the 2x2 table `[[a, b], [c, d]]` ([`LnFactorials::fisher`]).
pub fn fisher_two_sided(a: u64, b: u64, c: u64, d: u64) -> f64 {
    LnFactorials::new((a + b + c + d) as usize).fisher(a, b, c, d)
}

/// Ranks of `values` pooled, ties given their mean rank, doubled so they stay integers.
fn doubled_midranks(values: &[f64]) -> Vec<u64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|a, b| values[*a].total_cmp(&values[*b]));
    let mut ranks = vec![0u64; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        // Ranks i+1..=j+1 share their mean; doubled: (i + 1) + (j + 1).
        for k in i..=j {
            ranks[order[k]] = (i + j + 2) as u64;
        }
        i = j + 1;
    }
    ranks
}

/// Pooled samples up to this size get the exact permutation distribution (its cost grows with
/// the cube of the size); larger ones the normal approximation with the tie correction
/// (Mann-Whitney's), already close there.
const EXACT_UP_TO: usize = 30;

/// The rank test of two samples (Mann-Whitney-Wilcoxon), two-sided: the probability that the
/// rank sum of `x` lies at least as far from its mean as observed, over every way of splitting
/// the pooled values into samples of these sizes. 1 when either sample is empty.
pub fn rank_test_two_sided(x: &[f64], y: &[f64]) -> f64 {
    let (n1, n) = (x.len(), x.len() + y.len());
    if x.is_empty() || y.is_empty() {
        return 1.0;
    }
    let pooled: Vec<f64> = x.iter().chain(y).copied().collect();
    let ranks = doubled_midranks(&pooled);
    let observed: u64 = ranks[..n1].iter().sum();
    let total: u64 = ranks.iter().sum();
    // x's doubled rank sum has the mean n1 * total / n: distances from it are compared times n,
    // so they stay integers.
    let mean_n = total * n1 as u64;
    let distance_n = (observed * n as u64).abs_diff(mean_n);
    if n > EXACT_UP_TO {
        return normal_rank_test(&ranks, n1, observed);
    }
    exact_rank_test(&ranks, n1, observed, total, mean_n, distance_n)
}

/// The exact two-sided p of x's doubled rank sum `observed`: the share of the splits whose sum
/// lies at least as far (times n) from its mean as `distance_n`.
fn exact_rank_test(
    ranks: &[u64],
    n1: usize,
    observed: u64,
    total: u64,
    mean_n: u64,
    distance_n: u64,
) -> f64 {
    let n = ranks.len();
    debug_assert!(observed <= total);
    // dp[k][s]: subsets of k of the values with doubled rank sum s.
    let mut dp = vec![vec![0f64; total as usize + 1]; n1 + 1];
    dp[0][0] = 1.0;
    for (i, r) in ranks.iter().enumerate() {
        let r = *r as usize;
        for k in (1..=n1.min(i + 1)).rev() {
            for s in (r..=total as usize).rev() {
                let from = dp[k - 1][s - r];
                if from > 0.0 {
                    dp[k][s] += from;
                }
            }
        }
    }
    let all: f64 = dp[n1].iter().sum();
    let extreme: f64 = dp[n1]
        .iter()
        .enumerate()
        .filter(|(s, _)| (*s as u64 * n as u64).abs_diff(mean_n) >= distance_n)
        .map(|(_, count)| count)
        .sum();
    (extreme / all).min(1.0)
}

/// The normal approximation of the rank sum's distribution, with the correction for ties.
fn normal_rank_test(doubled: &[u64], n1: usize, observed: u64) -> f64 {
    let mut tie_sizes = std::collections::HashMap::new();
    for r in doubled {
        *tie_sizes.entry(*r).or_insert(0f64) += 1.0;
    }
    let ties: f64 = tie_sizes.values().map(|t| t * t * t - t).sum();
    normal_rank_p(doubled.len(), n1, observed, ties)
}

/// The normal approximation's p of a doubled rank sum `observed` of `n1` values among `n`,
/// `ties` the sum of t^3 - t over the pool's groups of equal values.
fn normal_rank_p(n: usize, n1: usize, observed: u64, ties: f64) -> f64 {
    let n = n as f64;
    let (n1, n2) = (n1 as f64, n - n1 as f64);
    let sum = observed as f64 / 2.0;
    let mean = n1 * (n + 1.0) / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var <= 0.0 {
        return 1.0;
    }
    let z = (sum - mean).abs() / var.sqrt();
    (2.0 * (1.0 - standard_normal_cdf(z))).min(1.0)
}

/// How many of `sorted`'s values are below `v`, and how many equal it.
fn counts(sorted: &[f64], v: &f64) -> (usize, usize) {
    let less = sorted.partition_point(|o| o.total_cmp(v).is_lt());
    (
        less,
        sorted[less..].partition_point(|o| o.total_cmp(v).is_eq()),
    )
}

/// Many rank tests against one pool: each of several samples that are parts of the pool (a
/// fleet's nodes in a cell) against the pool's other values, as [`rank_test_two_sided`] gives.
/// The pool is sorted once and a sample's rank sum found by halving, so n samples cost
/// O(n log n) where a test each, pooling the others anew, costs O(n^2 log n): 10,000 nodes
/// took 80-107 s that way.
pub struct RankPool {
    sorted: Vec<f64>,
    /// The sum of t^3 - t over the pool's groups of equal values (the ties' correction).
    ties: f64,
}

impl RankPool {
    pub fn new(values: impl IntoIterator<Item = f64>) -> RankPool {
        let mut sorted: Vec<f64> = values.into_iter().collect();
        sorted.sort_by(f64::total_cmp);
        let ties = sorted
            .chunk_by(|a, b| a.total_cmp(b).is_eq())
            .map(|group| group.len() as f64)
            .map(|t| t * t * t - t)
            .sum();
        RankPool { sorted, ties }
    }

    /// The values pooled.
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The two-sided rank test of `instead` against the pool's values other than `own` (values
    /// that are in the pool): what the test would say had `own`'s runs measured `instead`. The
    /// ties' correction is the pool's with `own` replaced by `instead`: a pool whose values
    /// all agree (a measure counted in whole batches) has no variance left by the pool's own
    /// correction, and would say nothing of runs moved away from it.
    pub fn test_instead(&self, own: &[f64], instead: &[f64]) -> f64 {
        let (n1, n) = (instead.len(), self.sorted.len() - own.len() + instead.len());
        if n1 == 0 || n1 >= n {
            return 1.0;
        }
        if n <= EXACT_UP_TO {
            let mut others = self.sorted.clone();
            for v in own {
                if let Ok(i) = others.binary_search_by(|o| o.total_cmp(v)) {
                    others.remove(i);
                }
            }
            return rank_test_two_sided(instead, &others);
        }
        let sorted = |values: &[f64]| {
            let mut v = values.to_vec();
            v.sort_by(f64::total_cmp);
            v
        };
        let (own_sorted, instead_sorted) = (sorted(own), sorted(instead));
        let observed: u64 = (instead.iter())
            .map(|v| {
                let (pool_less, pool_equal) = counts(&self.sorted, v);
                let (own_less, own_equal) = counts(&own_sorted, v);
                let (its_less, its_equal) = counts(&instead_sorted, v);
                let below = pool_less - own_less + its_less;
                let level = pool_equal - own_equal + its_equal;
                (2 * below + level + 1) as u64
            })
            .sum();
        let ties = self.ties_instead(&own_sorted, &instead_sorted);
        normal_rank_p(n, n1, observed, ties)
    }

    /// The ties' correction of the pool with `own`'s values (sorted, in the pool) replaced by
    /// `instead`'s (sorted): only the groups at their values change.
    fn ties_instead(&self, own: &[f64], instead: &[f64]) -> f64 {
        let cubed = |t: usize| (t as f64).powi(3) - t as f64;
        let mut values: Vec<f64> = own.iter().chain(instead).copied().collect();
        values.sort_by(f64::total_cmp);
        values.dedup_by(|a, b| a.total_cmp(b).is_eq());
        let mut ties = self.ties;
        for v in &values {
            let pool = counts(&self.sorted, v).1;
            let now = pool - counts(own, v).1 + counts(instead, v).1;
            ties += cubed(now) - cubed(pool);
        }
        ties
    }

    /// The two-sided rank test of `sample` (values that are in the pool) against the pool's
    /// other values. 1 when either side is empty.
    pub fn test(&self, sample: &[f64]) -> f64 {
        self.test_instead(sample, sample)
    }
}

/// The z beyond which a standard normal value lies with probability `p` (one-sided; 0 < p < 1),
/// by halving on [`standard_normal_cdf`]: a threshold on z-scores made from a p-value's level.
pub fn normal_upper_quantile(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0f64, 40.0f64);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        match 1.0 - standard_normal_cdf(mid) > p {
            true => lo = mid,
            false => hi = mid,
        }
    }
    (lo + hi) / 2.0
}

/// Φ(z) by the complementary error function (Abramowitz and Stegun 7.1.26, error < 1.5e-7).
fn standard_normal_cdf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    let erf = if x >= 0.0 { 1.0 - erfc } else { erfc - 1.0 };
    0.5 * (1.0 + erf)
}

/// The smallest difference of two shares (e.g. of passing runs) that Fisher's test can find at
/// `alpha` with `n1` and `n2` runs; None when no table of these sizes reaches it. The smallest
/// findable difference has one side at 0% or 100% (a share's spread is least there), so only
/// those tables are tried, from the smallest difference up: a few calls, even for a fleet's runs.
pub fn detectable_share(n1: u64, n2: u64, alpha: f64) -> Option<f64> {
    if n1 == 0 || n2 == 0 {
        return None;
    }
    // Every run of one side in the category, and c of the other's.
    let from_full = |full: u64, other: u64, swap: bool| -> Option<f64> {
        (0..other).rev().find_map(|c| {
            let p = match swap {
                false => fisher_two_sided(full, 0, c, other - c),
                true => fisher_two_sided(c, other - c, full, 0),
            };
            (p <= alpha).then(|| 1.0 - c as f64 / other as f64)
        })
    };
    [from_full(n1, n2, false), from_full(n2, n1, true)]
        .into_iter()
        .flatten()
        .reduce(f64::min)
}

/// The smallest shift (in steps, earlier or later) of every crash step of `steps` that the rank
/// test finds at `alpha` against `steps` itself, `others` runs on the other side (their values
/// taken from `steps` in turn); None when even two wholly separate samples of these sizes cannot
/// reach it.
pub fn detectable_shift(steps: &[u64], others: usize, alpha: f64) -> Option<u64> {
    if steps.is_empty() || others == 0 {
        return None;
    }
    let x: Vec<f64> = steps.iter().map(|s| *s as f64).collect();
    let spread = steps.iter().max()? - steps.iter().min()?;
    let found = |shift: u64| {
        let y: Vec<f64> = (0..others).map(|i| x[i % x.len()] + shift as f64).collect();
        rank_test_two_sided(&x, &y) <= alpha
    };
    // Past the spread the samples are wholly apart: the most a shift can show.
    if !found(spread + 1) {
        return None;
    }
    // A larger shift only separates the samples more: the smallest that is found, by halving.
    let (mut lo, mut hi) = (0, spread + 1);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match found(mid) {
            true => hi = mid,
            false => lo = mid,
        }
    }
    Some(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn a_pool_tests_each_sample_as_the_test_of_it_against_the_others_does() {
        // Nodes of 3 values each, rounded so that ties occur, in pools below and above the
        // exact test's size.
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % 40) as f64 / 4.0
        };
        for nodes in [2, 5, 10, 40] {
            let samples: Vec<Vec<f64>> = (0..nodes)
                .map(|n| (0..3).map(|_| next() + n as f64 * 0.3).collect())
                .collect();
            let pool = RankPool::new(samples.iter().flatten().copied());
            for (i, sample) in samples.iter().enumerate() {
                let others: Vec<f64> = (samples.iter().enumerate())
                    .filter(|(j, _)| *j != i)
                    .flat_map(|(_, s)| s.iter().copied())
                    .collect();
                let direct = rank_test_two_sided(sample, &others);
                assert!(close(pool.test(sample), direct), "{nodes} nodes, node {i}");
            }
        }
        assert_eq!(RankPool::new([1.0, 2.0]).test(&[1.0, 2.0]), 1.0);
        // A sample in place of a node's: as the test of it against the others.
        for nodes in [5, 40] {
            let samples: Vec<Vec<f64>> = (0..nodes)
                .map(|n| (0..3).map(|r| 100.0 + (n * 7 + r * 3) as f64).collect())
                .collect();
            let pool = RankPool::new(samples.iter().flatten().copied());
            let instead = [61.5, 64.5, 67.5];
            let others: Vec<f64> = samples[1..].iter().flatten().copied().collect();
            let direct = rank_test_two_sided(&instead, &others);
            let found = pool.test_instead(&samples[0], &instead);
            assert!(
                close(found, direct),
                "{nodes} nodes: {found} against {direct}"
            );
        }
        // A pool that agrees exactly (whole batches): runs moved off it are told apart, and
        // its ties with the moved runs are counted as the moved pool has them.
        let pool = RankPool::new([3.0; 40]);
        let (own, instead) = ([3.0; 4], [3.6, 3.6, 3.0, 3.6]);
        let found = pool.test_instead(&own, &instead);
        let direct = rank_test_two_sided(&instead, &[3.0; 36]);
        assert!(
            found < 1e-3 && close(found, direct),
            "{found} against {direct}"
        );
        assert_eq!(pool.test(&own), 1.0);
        assert_eq!(RankPool::new([1.0, 2.0]).test(&[]), 1.0);
    }

    #[test]
    fn fisher_matches_the_hypergeometric_by_hand() {
        // 4 of 4 pass against 0 of 4: 2 tables of 70 are this extreme.
        assert!(close(fisher_two_sided(4, 0, 0, 4), 2.0 / 70.0));
        // 3 of 3 against 0 of 3: 2 of 20, not below 0.05.
        assert!(close(fisher_two_sided(3, 0, 0, 3), 0.1));
        // 5 of 5 against 1 of 5: (6 + 6) / 252.
        assert!(close(fisher_two_sided(5, 0, 1, 4), 12.0 / 252.0));
        // The same shares are never a change.
        assert!(close(fisher_two_sided(2, 3, 2, 3), 1.0));
        assert!(close(fisher_two_sided(1, 0, 0, 1), 1.0));
        assert!(close(fisher_two_sided(0, 0, 0, 0), 1.0));
    }

    #[test]
    fn the_rank_test_is_exact_for_small_samples_and_ties_do_not_break_it() {
        // Wholly separate samples of 4: 2 of the 70 splits are as extreme.
        let x = [10.0, 11.0, 12.0, 13.0];
        let y = [20.0, 21.0, 22.0, 23.0];
        assert!(close(rank_test_two_sided(&x, &y), 2.0 / 70.0));
        assert!(close(rank_test_two_sided(&y, &x), 2.0 / 70.0));
        // Three a side cannot get below 0.1.
        assert!(close(rank_test_two_sided(&x[..3], &y[..3]), 0.1));
        // Identical samples, and all-equal values, are no evidence at all.
        assert!(close(rank_test_two_sided(&x, &x), 1.0));
        assert!(close(rank_test_two_sided(&[5.0; 4], &[5.0; 5]), 1.0));
        // Overlap weakens it.
        let p = rank_test_two_sided(&[9.0, 12.0, 15.0, 23.0], &[10.0, 14.0, 18.0, 20.0]);
        assert!(p > 0.5, "{p}");
        assert_eq!(rank_test_two_sided(&[], &x), 1.0);
    }

    #[test]
    fn the_normal_approximation_agrees_with_the_exact_test_where_they_meet() {
        let x: Vec<f64> = (0..15).map(|i| (i * 7 % 17) as f64).collect();
        let y: Vec<f64> = (0..15).map(|i| (i * 5 % 13) as f64 + 7.0).collect();
        let pooled: Vec<f64> = x.iter().chain(&y).copied().collect();
        let ranks = doubled_midranks(&pooled);
        let observed: u64 = ranks[..15].iter().sum();
        let total: u64 = ranks.iter().sum();
        let (n, mean_n) = (30u64, total * 15);
        let exact = exact_rank_test(
            &ranks,
            15,
            observed,
            total,
            mean_n,
            (observed * n).abs_diff(mean_n),
        );
        let approx = normal_rank_test(&ranks, 15, observed);
        assert!((exact - approx).abs() < 0.02, "{exact} vs {approx}");
        assert!(exact < 0.5 && exact > 0.0001, "{exact}");
    }

    #[test]
    fn a_fleet_s_run_counts_are_judged_quickly_and_sensibly() {
        // Thousands of runs a side: the normal approximation, and a small detectable share.
        let share = detectable_share(5000, 5000, 0.05).unwrap();
        assert!(share < 0.01, "{share}");
        let steps: Vec<u64> = (0..2000).map(|i| 10 + i % 400).collect();
        let shift = detectable_shift(&steps, 2000, 0.05).unwrap();
        assert!((1..=60).contains(&shift), "{shift}");
    }

    #[test]
    fn the_normal_quantile_inverts_the_tail() {
        assert!((normal_upper_quantile(0.025) - 1.96).abs() < 1e-3);
        assert!((normal_upper_quantile(0.05 / 1500.0) - 3.99).abs() < 0.01);
        assert!(normal_upper_quantile(0.5).abs() < 1e-6);
    }

    #[test]
    fn what_the_repeats_can_detect() {
        // 4 a side: only a whole flip (share 1.0); 10 a side: a smaller change.
        assert_eq!(detectable_share(4, 4, 0.05), Some(1.0));
        assert_eq!(detectable_share(3, 3, 0.05), None);
        assert!(detectable_share(10, 10, 0.05).unwrap() < 0.7);
        // Crash steps 9-13, 5 a side: a shift past their spread is found, none below 1 step.
        let shift = detectable_shift(&[9, 10, 11, 12, 13], 5, 0.05).unwrap();
        assert!((1..=5).contains(&shift), "{shift}");
        assert_eq!(detectable_shift(&[9, 10, 11], 3, 0.05), None);
    }
}
