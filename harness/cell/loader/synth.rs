//! Synthetic "dataset": image bytes produced at memory speed, and the per-image CPU cost.
//!
//! One random image is generated per worker at start-up; each sample is a copy of it stamped with
//! its batch and image index, so every batch differs and production runs at memcpy bandwidth
//! rather than at the speed of a random-number generator.

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// A worker's source image.
pub struct Pattern {
    image: Vec<u8>,
}

impl Pattern {
    pub fn new(image_bytes: usize, seed: u64) -> Pattern {
        let mut image = vec![0u8; image_bytes];
        // Seeded, so a worker's data is the same from run to run.
        StdRng::seed_from_u64(seed).fill_bytes(&mut image);
        Pattern { image }
    }

    /// Writes sample `image` of batch `batch_idx` into `out` (one image's bytes).
    pub fn fill(&self, out: &mut [u8], batch_idx: u64, image: u64) {
        out.copy_from_slice(&self.image);
        let stamp = [batch_idx.to_ne_bytes(), image.to_ne_bytes()].concat();
        let n = stamp.len().min(out.len());
        out[..n].copy_from_slice(&stamp[..n]);
    }
}

/// Burns `cost` of this thread's CPU time (not wall time), so a decode cost stays a CPU cost
/// when workers share cores.
pub fn spend_cpu(cost: Duration) {
    if cost.is_zero() {
        return;
    }
    let start = thread_cpu_time();
    let mut x = 0u64;
    while thread_cpu_time().saturating_sub(start) < cost {
        for i in 0..256u64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
    }
    std::hint::black_box(x);
}

fn thread_cpu_time() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(Duration::from)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_differ_by_stamp() {
        let p = Pattern::new(64, 7);
        let (mut a, mut b) = (vec![0u8; 64], vec![0u8; 64]);
        p.fill(&mut a, 1, 0);
        p.fill(&mut b, 1, 1);
        assert_ne!(a, b);
        assert_eq!(a[16..], b[16..]);
    }
}
