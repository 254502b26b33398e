//! Statistics across runs: the median's bootstrap interval, the bootstrap interval of a relative
//! change, outliers by modified z-score. Kept apart from the text that presents them.

use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use model::estimate::{median, quantile};

/// Bootstrap resampling uses a fixed seed, so the same runs always give the same interval.
fn seeded(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// Above this many values a resample's median is drawn from the order statistics
/// ([`super::order_stats`]: the same distribution, O(1) a resample); up to it the values are
/// resampled, so small results stay exactly what they were.
const RESAMPLED_UP_TO: usize = 64;

/// The values a bootstrap draws from: as given when few, sorted when many.
fn prepared(values: &[f64]) -> Vec<f64> {
    let mut v = values.to_vec();
    if v.len() > RESAMPLED_UP_TO {
        v.sort_by(|a, b| a.total_cmp(b));
    }
    v
}

fn resample_median(values: &[f64], rng: &mut StdRng, scratch: &mut Vec<f64>) -> f64 {
    if values.len() > RESAMPLED_UP_TO {
        return super::order_stats::resampled_median(values, rng);
    }
    scratch.clear();
    scratch.extend((0..values.len()).map(|_| values[rng.random_range(0..values.len())]));
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
    let mut rng = seeded(0x9E37_79B9_7F4A_7C15);
    let mut scratch = Vec::with_capacity(values.len());
    let values = prepared(values);
    let meds: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| resample_median(&values, &mut rng, &mut scratch))
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
    let mut rng = seeded(0xD1B5_4A32_D192_ED03);
    let (mut s1, mut s2) = (Vec::new(), Vec::new());
    let (base, cand) = (prepared(base), prepared(cand));
    let changes: Vec<f64> = (0..BOOTSTRAP_RESAMPLES)
        .map(|_| {
            let b = resample_median(&base, &mut rng, &mut s1);
            let c = resample_median(&cand, &mut rng, &mut s2);
            c / b - 1.0
        })
        .collect();
    Some((quantile(&changes, 0.025)?, quantile(&changes, 0.975)?))
}

/// The median of `values` and their median absolute deviation from it (None for no values).
pub fn median_and_mad(values: &[f64]) -> Option<(f64, f64)> {
    let med = median(values)?;
    let deviations: Vec<f64> = values.iter().map(|v| (v - med).abs()).collect();
    Some((med, median(&deviations).unwrap_or(0.0)))
}

/// The MAD times this estimates the standard deviation of normal values (1 / 0.6745), as the
/// modified z-score divides by it: a spread that a minority of outliers cannot widen.
pub const MAD_TO_SD: f64 = 1.4826;

/// Modified z-scores (Iglewicz & Hoaglin): 0.6745 (x - median) / MAD. |z| > 3.5 marks an
/// outlier. All zero when the MAD is zero.
pub fn modified_z(values: &[f64]) -> Vec<f64> {
    let Some((med, mad)) = median_and_mad(values) else {
        return Vec::new();
    };
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
