//! Change points of a series of run medians: binary segmentation into piecewise-constant
//! segments (as asv does for benchmark histories). A split is kept when it lowers the squared
//! error by more than a BIC-style penalty, 2 s^2 ln(n) (s^2: the pooled variance of the repeats
//! within runs, or, when runs were not repeated, the noise of neighbouring runs' differences),
//! and the step between the segment means is at least the threshold; each step is then said
//! between the final segments on its two sides.

fn sse(values: &[f64]) -> f64 {
    let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
    values.iter().map(|v| (v - mean).powi(2)).sum()
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// The split of `values` in two that leaves the least squared error, and that error: one pass
/// of running sums (values centred first, so the sums stay exact enough), not a pass per split,
/// since a fleet's history is thousands of runs.
fn best_split(values: &[f64]) -> Option<(usize, f64)> {
    let n = values.len();
    let centre = mean(values);
    let (total, total_sq) = values.iter().fold((0.0, 0.0), |(s, q), v| {
        let d = v - centre;
        (s + d, q + d * d)
    });
    let sse_of = |sum: f64, sq: f64, count: usize| sq - sum * sum / count as f64;
    let (mut sum, mut sq) = (0.0, 0.0);
    let mut best: Option<(usize, f64)> = None;
    for (k, v) in values.iter().enumerate().take(n.saturating_sub(1)) {
        let d = v - centre;
        sum += d;
        sq += d * d;
        let left = k + 1;
        let split = sse_of(sum, sq, left) + sse_of(total - sum, total_sq - sq, n - left);
        if best.is_none_or(|(_, b)| split < b) {
            best = Some((left, split));
        }
    }
    best
}

/// Binary segmentation of `values`; pushes the positions (in `values`, from `offset`) of the
/// accepted splits.
fn segment(values: &[f64], offset: usize, s2: f64, threshold: f64, out: &mut Vec<usize>) {
    let n = values.len();
    if n < 2 {
        return;
    }
    let whole = sse(values);
    let Some((k, split)) = best_split(values) else {
        return;
    };
    let penalty = 2.0 * s2 * (n as f64).ln();
    let (left, right) = (mean(&values[..k]), mean(&values[k..]));
    let step = right / left - 1.0;
    if whole - split > penalty && step.abs() >= threshold {
        out.push(offset + k);
        segment(&values[..k], offset, s2, threshold, out);
        segment(&values[k..], offset + k, s2, threshold, out);
    }
}

/// The noise of a series of unrepeated run medians: from the differences of neighbours (a step
/// moves one of them, a dip two), 1.4826 x their median absolute deviation / sqrt(2), squared.
/// The residual of the best single split stood in before, and a dip that came back (a bad
/// kernel between two good ones) swelled it until no split passed the penalty.
fn unrepeated_variance(values: &[f64]) -> f64 {
    let differences: Vec<f64> = values.windows(2).map(|w| w[1] - w[0]).collect();
    let Some(centre) = model::estimate::median(&differences) else {
        return f64::INFINITY;
    };
    let deviations: Vec<f64> = differences.iter().map(|d| (d - centre).abs()).collect();
    let mad = model::estimate::median(&deviations).unwrap_or(f64::INFINITY);
    (1.4826 * mad / std::f64::consts::SQRT_2).powi(2)
}

/// The sample variance of `values`; none for fewer than two.
pub fn variance(values: &[f64]) -> Option<f64> {
    (values.len() > 1).then(|| sse(values) / (values.len() - 1) as f64)
}

/// Where `values` (run medians at the run indices `at`) stepped, with the relative step, in run
/// order; `variances`: the variance of the repeats within each run that had them.
pub fn steps(values: &[f64], at: &[usize], variances: &[f64], threshold: f64) -> Vec<(usize, f64)> {
    let s2 = match variances.is_empty() {
        true => unrepeated_variance(values),
        false => mean(variances),
    };
    let mut splits = Vec::new();
    segment(values, 0, s2, threshold, &mut splits);
    splits.sort_unstable();
    // Each step between the final segments on its two sides (the split was found between the
    // whole segments of its level, which later splits cut: their means understate a dip).
    let bounds: Vec<usize> = std::iter::once(0)
        .chain(splits.iter().copied())
        .chain(std::iter::once(values.len()))
        .collect();
    (bounds.windows(3))
        .map(|w| {
            let (before, after) = (mean(&values[w[0]..w[1]]), mean(&values[w[1]..w[2]]));
            (at[w[1]], after / before - 1.0)
        })
        .filter(|(_, step)| step.abs() >= threshold)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_step_in_a_noisy_series_is_found_where_it_is() {
        // Ten runs near 100, then ten near 80: one step of -20% at run 10.
        let noise = [0.4, -0.3, 0.1, -0.5, 0.2, 0.3, -0.1, -0.4, 0.5, 0.0];
        let values: Vec<f64> = (0..20)
            .map(|i| if i < 10 { 100.0 } else { 80.0 } + noise[i % 10])
            .collect();
        let at: Vec<usize> = (0..20).collect();
        let found = steps(&values, &at, &[0.1], 0.05);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, 10);
        assert!((found[0].1 + 0.2).abs() < 0.01, "{found:?}");
    }

    #[test]
    fn a_dip_that_came_back_is_two_steps_of_their_own_sizes_without_repeats() {
        // Four runs near 100, four 40% lower, four near 100 again: one run each (nightly).
        let noise = [0.4, -0.3, 0.1, -0.5];
        let values: Vec<f64> = (0..12)
            .map(|i| if (4..8).contains(&i) { 60.0 } else { 100.0 } + noise[i % 4])
            .collect();
        let at: Vec<usize> = (0..12).collect();
        let found = steps(&values, &at, &[], 0.05);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!((found[0].0, found[1].0), (4, 8));
        // -40% down and +67% back: each between its neighbouring segments.
        assert!((found[0].1 + 0.4).abs() < 0.01, "{found:?}");
        assert!((found[1].1 - 2.0 / 3.0).abs() < 0.02, "{found:?}");
    }

    #[test]
    fn noise_and_steps_below_the_threshold_are_not_steps() {
        let values = [100.0, 101.0, 99.0, 100.5, 102.0, 101.5, 102.5, 101.0];
        let at: Vec<usize> = (0..values.len()).collect();
        // A 1.5% shift with a 5% threshold, and repeats as noisy as the shift.
        assert!(steps(&values, &at, &[1.0], 0.05).is_empty());
        assert!(steps(&values, &at, &[], 0.05).is_empty());
    }

    #[test]
    fn the_best_split_matches_a_search_over_every_split() {
        let values = [3.0, 3.1, 2.9, 7.0, 7.2, 6.9, 7.1, 5.0];
        let (k, error) = best_split(&values).unwrap();
        let brute = (1..values.len())
            .map(|k| (k, sse(&values[..k]) + sse(&values[k..])))
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .unwrap();
        assert_eq!(k, brute.0);
        assert!((error - brute.1).abs() < 1e-9);
        assert_eq!(variance(&[1.0]), None);
        assert_eq!(variance(&[1.0, 3.0]), Some(2.0));
    }
}
