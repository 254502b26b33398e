//! Change points of a series of run medians: binary segmentation into piecewise-constant
//! segments (as asv does for benchmark histories). A split is kept when it lowers the squared
//! error by more than a BIC-style penalty, 2 s^2 ln(n) (s^2: the pooled variance of the repeats
//! within runs, or the residual variance when runs were not repeated), and the step between the
//! segment means is at least the threshold.

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

/// Binary segmentation of `values` (indices into the run list in `at`); pushes accepted splits.
fn segment(values: &[f64], at: &[usize], s2: f64, threshold: f64, out: &mut Vec<(usize, f64)>) {
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
        out.push((at[k], step));
        segment(&values[..k], &at[..k], s2, threshold, out);
        segment(&values[k..], &at[k..], s2, threshold, out);
    }
}

/// The sample variance of `values`; none for fewer than two.
pub fn variance(values: &[f64]) -> Option<f64> {
    (values.len() > 1).then(|| sse(values) / (values.len() - 1) as f64)
}

/// Where `values` (run medians at the run indices `at`) stepped, with the relative step, in run
/// order; `variances`: the variance of the repeats within each run that had them.
pub fn steps(values: &[f64], at: &[usize], variances: &[f64], threshold: f64) -> Vec<(usize, f64)> {
    let s2 = if variances.is_empty() {
        // No repeats: the residual variance of the best single split stands in.
        let n = values.len();
        best_split(values).map_or(f64::INFINITY, |(_, e)| e) / (n.saturating_sub(2).max(1)) as f64
    } else {
        mean(variances)
    };
    let mut out = Vec::new();
    segment(values, at, s2, threshold, &mut out);
    out.sort_by_key(|(i, _)| *i);
    out
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
