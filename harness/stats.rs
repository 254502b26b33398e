//! Statistics over step timings, kept apart from the loop that measures them.

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

/// The median (None for no values).
pub fn median(values: &[f64]) -> Option<f64> {
    quantile(values, 0.5)
}

/// A small deterministic generator (xorshift64*) so bootstrap intervals are reproducible.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}

fn resample_median(values: &[f64], rng: &mut Rng, scratch: &mut Vec<f64>) -> f64 {
    scratch.clear();
    scratch.extend((0..values.len()).map(|_| values[rng.below(values.len())]));
    median(scratch).unwrap_or(f64::NAN)
}

/// Resamples used by the bootstrap intervals.
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;

/// 95% percentile-bootstrap interval of the median (Efron & Tibshirani ch. 13). None with fewer
/// than two values: one run has no interval.
pub fn median_ci(values: &[f64]) -> Option<(f64, f64)> {
    if values.len() < 2 {
        return None;
    }
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut scratch = Vec::with_capacity(values.len());
    let meds: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| resample_median(values, &mut rng, &mut scratch))
        .collect();
    Some((quantile(&meds, 0.025)?, quantile(&meds, 0.975)?))
}

/// 95% percentile-bootstrap interval of the relative change of the median from `base` to
/// `cand` (cand/base - 1), resampling both sides independently, as criterion compares two
/// samples. None unless both sides have at least two values.
pub fn relative_change_ci(base: &[f64], cand: &[f64]) -> Option<(f64, f64)> {
    if base.len() < 2 || cand.len() < 2 {
        return None;
    }
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let (mut s1, mut s2) = (Vec::new(), Vec::new());
    let changes: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            let b = resample_median(base, &mut rng, &mut s1);
            let c = resample_median(cand, &mut rng, &mut s2);
            c / b - 1.0
        })
        .collect();
    Some((quantile(&changes, 0.025)?, quantile(&changes, 0.975)?))
}

/// Modified z-scores (Iglewicz & Hoaglin): 0.6745 (x - median) / MAD. |z| > 3.5 marks an
/// outlier. All zero when the MAD is zero.
pub fn modified_z(values: &[f64]) -> Vec<f64> {
    let Some(med) = median(values) else {
        return Vec::new();
    };
    let deviations: Vec<f64> = values.iter().map(|v| (v - med).abs()).collect();
    let mad = median(&deviations).unwrap_or(0.0);
    values
        .iter()
        .map(|v| {
            if mad > 0.0 {
                0.6745 * (v - med) / mad
            } else {
                0.0
            }
        })
        .collect()
}

/// Threshold on |modified z| above which a value is an outlier.
pub const OUTLIER_Z: f64 = 3.5;

#[cfg(test)]
mod interval_tests {
    use super::*;

    #[test]
    fn bootstrap_brackets_the_median() {
        let v = [100.0, 101.0, 99.0, 100.5, 99.5];
        let (lo, hi) = median_ci(&v).unwrap();
        assert!(lo <= 100.0 && hi >= 100.0 && hi - lo <= 2.0, "{lo} {hi}");
        assert_eq!(median_ci(&[1.0]), None);
    }

    #[test]
    fn relative_change_of_a_clear_drop() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let cand: Vec<f64> = base.iter().map(|x| x * 0.9).collect();
        let (lo, hi) = relative_change_ci(&base, &cand).unwrap();
        assert!(hi < -0.08 && lo > -0.12, "{lo} {hi}");
    }

    #[test]
    fn outliers_by_modified_z() {
        let z = modified_z(&[10.0, 10.1, 9.9, 10.0, 30.0]);
        assert!(z[4] > OUTLIER_Z && z[0].abs() < 1.0);
    }
}
