//! What `shmbench bench` measures and the targets it checks them against.

use std::path::PathBuf;

use model::calibration::Calibration;

/// Efficiency the host cell must reach (of the all-cores fresh-segment limit).
pub(crate) const TARGET_EFFICIENCY: f64 = 0.85;
/// Seed matrix wall time target.
pub(crate) const TARGET_MATRIX_S: f64 = 20.0;
/// Private memory per process (main or worker), excluding shared memory.
pub(crate) const TARGET_RSS: u64 = 16 << 20;
/// A first-batch crash cell must end within this.
pub(crate) const TARGET_CRASH_S: f64 = 1.0;
/// `watch`'s sampler may take at most this share of one core at its default interval.
pub(crate) const TARGET_SAMPLER_SHARE: f64 = 0.01;
/// Real torch's img/s for the seed setup on the development machine (quoted by the issue that
/// set the targets); the host cell must beat it.
pub(crate) const TORCH_IMG_PER_S: f64 = 2900.0;

/// What one benchmark run measured.
pub struct Bench {
    pub(crate) calibration: Calibration,
    /// The data path's limit in images per second (all cores, file_descriptor, legacy).
    pub(crate) limit_img_per_s: f64,
    pub(crate) host_img_per_s: f64,
    pub(crate) efficiency: f64,
    pub(crate) matrix_s: f64,
    pub(crate) slowest_crash_s: f64,
    pub(crate) main_private_rss: u64,
    pub(crate) worker_private_rss: u64,
    /// One batch of the seed setup, in bytes.
    pub(crate) batch_bytes: u64,
    pub(crate) matrix_results: PathBuf,
    /// `watch`'s sampler on a 9-process job at the default interval: its CPU over the job's
    /// wall time, and the samples it took.
    pub(crate) sampler_share: f64,
    pub(crate) sampler_samples: u64,
}
