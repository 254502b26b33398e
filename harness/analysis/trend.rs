//! The trend of a watched job's /dev/shm after its warm-up: a least-squares line through the
//! samples, and whether it is a leak (steady growth, not the rise to a working level or the
//! saw-tooth of batches coming and going).

use serde::Serialize;

use model::watch::ShmSample;

/// The share of the run taken as warm-up (the rise to the working level).
const WARMUP_SHARE: f64 = 0.2;
/// A trend needs this much time after the warm-up to say anything.
const MIN_SPAN_S: f64 = 2.0;
/// Growth is a leak when it is at least this share of the peak (and 1 MiB) over the window, and
/// the line explains at least [`MIN_R2`] of the variance: steady, not a burst.
const LEAK_SHARE: f64 = 0.1;
const LEAK_MIN_BYTES: f64 = 1024.0 * 1024.0;
const MIN_R2: f64 = 0.6;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Trend {
    /// The window after the warm-up, seconds since the start.
    pub from_s: f64,
    pub to_s: f64,
    /// Slope of the line, bytes per second, and how much of the variance it explains.
    pub bytes_per_s: f64,
    pub r2: f64,
    /// Growth over the window along the line.
    pub growth_bytes: f64,
    pub leak: bool,
}

/// The trend after the warm-up; None when the run was too short to have one.
pub fn trend(samples: &[ShmSample]) -> Option<Trend> {
    let end = samples.last()?.t_s;
    let from = end * WARMUP_SHARE;
    let window: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| s.t_s >= from)
        .map(|s| (s.t_s, s.shm_used_bytes as f64))
        .collect();
    let first = window.first()?.0;
    if end - first < MIN_SPAN_S || window.len() < 10 {
        return None;
    }
    let n = window.len() as f64;
    let mean_t = window.iter().map(|p| p.0).sum::<f64>() / n;
    let mean_y = window.iter().map(|p| p.1).sum::<f64>() / n;
    let (mut stt, mut sty, mut syy) = (0.0, 0.0, 0.0);
    for (t, y) in &window {
        stt += (t - mean_t).powi(2);
        sty += (t - mean_t) * (y - mean_y);
        syy += (y - mean_y).powi(2);
    }
    let slope = if stt > 0.0 { sty / stt } else { 0.0 };
    let r2 = if stt > 0.0 && syy > 0.0 {
        (sty * sty) / (stt * syy)
    } else {
        0.0
    };
    let growth = slope * (end - first);
    let peak = samples.iter().map(|s| s.shm_used_bytes).max().unwrap_or(0) as f64;
    let leak = growth >= (LEAK_SHARE * peak).max(LEAK_MIN_BYTES) && r2 >= MIN_R2;
    Some(Trend {
        from_s: first,
        to_s: end,
        bytes_per_s: slope,
        r2,
        growth_bytes: growth,
        leak,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(f: impl Fn(f64) -> u64) -> Vec<ShmSample> {
        (0..=1000)
            .map(|i| {
                let t = i as f64 * 0.01;
                ShmSample {
                    t_s: t,
                    shm_used_bytes: f(t),
                    ..ShmSample::default()
                }
            })
            .collect()
    }

    #[test]
    fn steps_that_only_go_up_are_a_leak_and_a_saw_tooth_is_not() {
        const MIB: u64 = 1 << 20;
        // 8 MiB more every "epoch" of one second.
        let leak = trend(&series(|t| 8 * MIB * (t as u64 + 1))).unwrap();
        assert!(leak.leak, "{leak:?}");
        assert!(
            (leak.bytes_per_s / MIB as f64 - 8.0).abs() < 1.5,
            "{leak:?}"
        );
        // Batches come and go around a working level after a rise.
        let steady = trend(&series(|t| {
            let rise = (t * 10.0).min(1.0);
            (rise * (40 * MIB) as f64) as u64 + ((t * 50.0) as u64 % 3) * 8 * MIB
        }))
        .unwrap();
        assert!(!steady.leak, "{steady:?}");
        // Too short a run has no trend.
        assert_eq!(trend(&series(|_| MIB)[..100]), None);
    }
}
