//! What a green result means here: the smallest change `compare` could flag, for one cell, from
//! the spread its own runs showed. Comparing the runs with themselves gives the interval of the
//! relative change that noise alone produces; a real change is flagged only when its whole
//! interval lies beyond the threshold, so it must exceed the threshold by that interval's
//! half-width. With the same number of runs on both sides, smaller changes pass unseen.

use super::stats;

/// The smallest relative change of a measure (either way) that `compare` would flag with as
/// many runs per side as `values` holds; None with fewer than two runs.
pub fn detectable(values: &[f64], threshold: f64) -> Option<f64> {
    let (lo, hi) = stats::relative_change_ci(values, values)?;
    Some(threshold + (hi - lo) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn more_spread_hides_more() {
        let tight = [100.0, 100.5, 99.5, 100.2, 99.8];
        let loose = [100.0, 110.0, 90.0, 105.0, 95.0];
        let a = detectable(&tight, 0.03).unwrap();
        let b = detectable(&loose, 0.03).unwrap();
        assert!((0.03..0.04).contains(&a), "{a}");
        assert!(b > a + 0.03, "{b}");
        assert_eq!(detectable(&[100.0], 0.03), None);
    }
}
