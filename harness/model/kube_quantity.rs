//! Kubernetes resource quantities as manifests write them (`2Gi`, `512Mi`, `1G`, `1e9`,
//! `128974848000m`), in bytes: what a `sizeLimit` or a memory limit holds.
//!
//! The notation is Kubernetes' own (`k8s.io/apimachinery/pkg/api/resource`, `Quantity`): binary
//! suffixes `Ki`..`Ei`, decimal ones `k`, `M`..`E` and `m` (thousandths), or a decimal exponent.
//! It differs from Docker's sizes (`model::size`): `1G` is 10^9 bytes here, 2^30 there.

/// The bytes of quantity `q`, rounded down; None when `q` is not a quantity or is negative.
pub fn kube_quantity(q: &str) -> Option<u64> {
    let q = q.trim();
    // Two-letter binary suffixes first, so `Mi` is not read as `M` and `i`.
    let units: [(&str, f64); 13] = [
        ("Ki", 1024f64),
        ("Mi", 1024f64.powi(2)),
        ("Gi", 1024f64.powi(3)),
        ("Ti", 1024f64.powi(4)),
        ("Pi", 1024f64.powi(5)),
        ("Ei", 1024f64.powi(6)),
        ("k", 1e3),
        ("M", 1e6),
        ("G", 1e9),
        ("T", 1e12),
        ("P", 1e15),
        ("E", 1e18),
        ("m", 1e-3),
    ];
    let (number, scale) = units
        .iter()
        .find_map(|(suffix, scale)| Some((q.strip_suffix(suffix)?, *scale)))
        .unwrap_or((q, 1.0));
    // Plain digits only (with a `.` or an exponent): `f64` would also read `inf` and `NaN`.
    let plain = |c: char| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-');
    if number.is_empty() || !number.chars().all(plain) {
        return None;
    }
    let n: f64 = number.parse().ok()?;
    let bytes = n * scale;
    (bytes >= 0.0 && bytes < u64::MAX as f64).then_some(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_decimal_milli_and_exponent_forms() {
        assert_eq!(kube_quantity("2048Mi"), Some(2 << 30));
        assert_eq!(kube_quantity("1Gi"), Some(1 << 30));
        assert_eq!(kube_quantity("1.5Gi"), Some(3 << 29));
        assert_eq!(kube_quantity("65536"), Some(65536));
        assert_eq!(kube_quantity("2G"), Some(2_000_000_000));
        assert_eq!(kube_quantity("1e9"), Some(1_000_000_000));
        assert_eq!(kube_quantity("128974848000m"), Some(128_974_848));
        assert_eq!(kube_quantity(" 64Mi "), Some(64 << 20));
    }

    #[test]
    fn rejects_what_is_not_a_quantity() {
        for bad in ["", "Gi", "lots", "-1Gi", "inf", "NaN", "2 GB", "1e400"] {
            assert_eq!(kube_quantity(bad), None, "{bad}");
        }
    }
}
