//! A calibration of this machine's data path: memset/memcpy bandwidth and the fresh-segment rate
//! per strategy and torch profile (measured by `cell::measure`, launched by
//! `orchestrate::calibrate`).

use serde::{Deserialize, Serialize};

use super::knobs::{Strategy, TorchProfile};

/// One fresh-segment measurement.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SegmentRate {
    pub strategy: Strategy,
    pub torch: TorchProfile,
    pub threads: u32,
    /// Batches per second over all threads.
    pub batches_per_s: f64,
    pub gb_per_s: f64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Calibration {
    pub batch_bytes: u64,
    pub images_per_batch: u32,
    pub memset_gb_per_s: f64,
    pub memcpy_gb_per_s: f64,
    pub segments: Vec<SegmentRate>,
}

impl Calibration {
    /// The best (all-cores) fresh-segment rate in bytes per second for a strategy and profile,
    /// if measured. Divided by an image's size it is the data path's limit in images per second.
    pub fn limit_bytes_per_s(&self, strategy: Strategy, torch: TorchProfile) -> Option<f64> {
        self.segments
            .iter()
            .filter(|s| s.strategy == strategy && s.torch == torch)
            .map(|s| s.gb_per_s * 1e9)
            .fold(None, |best: Option<f64>, x| {
                Some(best.map_or(x, |b| b.max(x)))
            })
    }
}
