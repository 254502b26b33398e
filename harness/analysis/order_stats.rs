//! The bootstrap distribution of a median, drawn in O(1) per resample from the sorted values.
//!
//! A bootstrap resample is n draws F_n^-1(V_i) with V_i uniform, and F_n^-1 is monotone, so the
//! resample's k-th smallest value is F_n^-1(V_(k)), where the k-th smallest of n uniforms is
//! Beta(k, n - k + 1) (David & Nagaraja, *Order Statistics*, 2.2). Its median is therefore one
//! Beta draw away (odd n), or two (even n: V_(k+1) = V_(k) + (1 - V_(k)) W, W the least of n - k
//! uniforms), instead of n draws and a sort. Same distribution as resampling the values, so a
//! cell with thousands of runs (a fleet's year) costs what a cell with ten does.

use rand::rngs::StdRng;
use rand::RngExt;

/// A standard normal draw (Box-Muller).
fn normal(rng: &mut StdRng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>(); // (0, 1]
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A Gamma(shape, 1) draw for shape >= 1 (Marsaglia & Tsang 2000).
fn gamma(shape: f64, rng: &mut StdRng) -> f64 {
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = normal(rng);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u: f64 = 1.0 - rng.random::<f64>();
        if u.ln() < 0.5 * x * x + d - d * v + d * v.ln() {
            return d * v;
        }
    }
}

/// A Beta(a, b) draw, a and b >= 1.
fn beta(a: f64, b: f64, rng: &mut StdRng) -> f64 {
    let x = gamma(a, rng);
    x / (x + gamma(b, rng))
}

/// F_n^-1(v) over `sorted`.
fn inverse(sorted: &[f64], v: f64) -> f64 {
    let i = (v * sorted.len() as f64).ceil() as usize;
    sorted[i.clamp(1, sorted.len()) - 1]
}

/// The median of one bootstrap resample of `sorted` (ascending, not empty).
pub fn resampled_median(sorted: &[f64], rng: &mut StdRng) -> f64 {
    let n = sorted.len();
    let k = n.div_ceil(2);
    let low = beta(k as f64, (n - k + 1) as f64, rng);
    if n % 2 == 1 {
        return inverse(sorted, low);
    }
    // The least of the n - k uniforms above `low`.
    let u: f64 = 1.0 - rng.random::<f64>();
    let high = low + (1.0 - low) * (1.0 - u.powf(1.0 / (n - k) as f64));
    (inverse(sorted, low) + inverse(sorted, high)) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::estimate::{median, quantile};
    use rand::SeedableRng;

    /// The quantiles of many resampled medians, drawn both ways, agree.
    #[test]
    fn draws_match_resampling_the_values() {
        for n in [101usize, 200] {
            let sorted: Vec<f64> = (0..n).map(|i| (i as f64).powf(1.3)).collect();
            let mut rng = StdRng::seed_from_u64(7);
            let fast: Vec<f64> = (0..20_000)
                .map(|_| resampled_median(&sorted, &mut rng))
                .collect();
            let slow: Vec<f64> = (0..20_000)
                .map(|_| {
                    let s: Vec<f64> = (0..n).map(|_| sorted[rng.random_range(0..n)]).collect();
                    median(&s).unwrap()
                })
                .collect();
            for q in [0.025, 0.5, 0.975] {
                let (a, b) = (quantile(&fast, q).unwrap(), quantile(&slow, q).unwrap());
                let spread = quantile(&slow, 0.975).unwrap() - quantile(&slow, 0.025).unwrap();
                assert!((a - b).abs() < 0.08 * spread, "n {n}, q {q}: {a} vs {b}");
            }
        }
    }
}
