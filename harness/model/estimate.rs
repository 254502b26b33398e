//! Estimators a cell applies to its own step times: quantiles, the warm-up excluded from rates,
//! the steady-state rate. Pure functions; the cross-run statistics (bootstrap intervals,
//! outliers) are in `analysis::stats`.

/// The `q`-quantile (0..=1) of `values` by linear interpolation between closest ranks
/// (Hyndman & Fan type 7, numpy's default). None for no values.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

/// Steps excluded from steady-state rates: the requested warm-up, but never more than half of
/// the steps that ran, so a short or crashed run still measures something.
pub fn warmup_used(requested: u64, steps_done: u64) -> u64 {
    requested.min(steps_done / 2)
}

/// Steady-state images per second: images of steps `warmup+1..=K` over the time from step
/// `warmup`'s batch (or the start) to step K's. `obtained_s[k-1]` is when step k's batch arrived.
pub fn steady_rate(obtained_s: &[f64], warmup: u64, images_per_step: u64) -> Option<f64> {
    let k = obtained_s.len();
    let w = warmup as usize;
    if k == 0 || w >= k {
        return None;
    }
    let from = if w == 0 { 0.0 } else { obtained_s[w - 1] };
    let span = obtained_s[k - 1] - from;
    (span > 0.0).then(|| (k - w) as f64 * images_per_step as f64 / span)
}

/// The median (None for no values).
pub fn median(values: &[f64]) -> Option<f64> {
    quantile(values, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate() {
        let v = [4.0, 1.0, 3.0, 2.0];
        assert_eq!(quantile(&v, 0.5), Some(2.5));
        assert_eq!(quantile(&v, 1.0), Some(4.0));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn steady_rate_skips_warmup() {
        // 1 s to the first batch, then one batch of 10 images every 0.1 s.
        let t: Vec<f64> = (0..10).map(|i| 1.0 + 0.1 * i as f64).collect();
        let r = steady_rate(&t, warmup_used(5, 10), 10).unwrap();
        assert!((r - 100.0).abs() < 1e-6, "{r}");
        assert_eq!(steady_rate(&[], 0, 10), None);
        assert_eq!(warmup_used(5, 3), 1);
    }
}
