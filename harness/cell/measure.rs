//! `shmbench calibrate --here`: this machine's limits for the data path, measured in this
//! process (which the harness starts in a private namespace with its own tmpfs, see
//! `orchestrate::calibrate`), so a cell's img/s can be judged against what the kernel and memory
//! allow here.
//!
//! - memset and memcpy bandwidth on one core (a pre-faulted 256 MiB buffer);
//! - the fresh-segment batch rate: the faithful mechanism alone (create a segment of one batch,
//!   allocate it per torch profile, map it, copy the batch in, unmap, release), on one core and on
//!   every core at once, per strategy and profile. That is the physical limit of the data path:
//!   a loader cannot produce batches faster than segments can be made and filled.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use super::loader::segment;
use model::calibration::{Calibration, SegmentRate};
use model::knobs::{Strategy, TorchProfile};
use model::size::ByteSize;
use sys::shm;

fn gb_per_s(bytes: u64, took: Duration) -> f64 {
    bytes as f64 / took.as_secs_f64() / 1e9
}

/// Best of `reps` timings of `f` (the least disturbed run on a shared machine).
fn best_of(reps: u32, mut f: impl FnMut()) -> Duration {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

pub fn memset_gb_per_s() -> f64 {
    let mut buf = vec![1u8; 256 << 20];
    let mut v = 0u8;
    let took = best_of(3, || {
        v = v.wrapping_add(1);
        buf.fill(v);
        std::hint::black_box(&buf);
    });
    gb_per_s(buf.len() as u64, took)
}

pub fn memcpy_gb_per_s() -> f64 {
    let src = vec![3u8; 256 << 20];
    let mut dst = vec![1u8; 256 << 20];
    let took = best_of(3, || {
        dst.copy_from_slice(&src);
        std::hint::black_box(&dst);
    });
    gb_per_s(src.len() as u64, took)
}

/// Makes, fills and releases fresh segments of `bytes` for `duration` on `threads` threads.
pub fn segment_rate(
    strategy: Strategy,
    torch: TorchProfile,
    bytes: u64,
    threads: u32,
    duration: Duration,
) -> Result<SegmentRate> {
    let owner = segment::new_owner().context("creating the calibration's owner record")?;
    let token = owner.token();
    let results: Vec<Result<f64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || -> Result<f64> {
                    let private = vec![7u8; bytes as usize];
                    let started = Instant::now();
                    let mut done = 0u64;
                    // At least three batches, so a short duration still measures a rate.
                    while started.elapsed() < duration || done < 3 {
                        let name = segment::segment_name(token, 10_000 + t, done);
                        let mut seg = segment::create(strategy, torch, bytes, &name)
                            .map_err(|e| anyhow::anyhow!("{}", e.message))?;
                        seg.map.as_mut_slice().copy_from_slice(&private);
                        drop(seg.map);
                        if let Some(n) = &seg.name {
                            segment::unlink_named(n);
                        }
                        done += 1;
                    }
                    Ok(done as f64 / started.elapsed().as_secs_f64())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| bail!("a calibration thread panicked"))
            })
            .collect()
    });
    drop(owner); // removes whatever a failed thread left
    let mut per_s = 0.0;
    for r in results {
        per_s += r?;
    }
    Ok(SegmentRate {
        strategy,
        torch,
        threads,
        batches_per_s: per_s,
        gb_per_s: per_s * bytes as f64 / 1e9,
    })
}

/// Measures memset/memcpy and the fresh-segment rate for `combos` on one core and all cores.
pub fn run(
    batch_bytes: u64,
    images_per_batch: u32,
    combos: &[(Strategy, TorchProfile)],
    duration: Duration,
) -> Result<Calibration> {
    let (total, used) = shm::usage();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    if total.saturating_sub(used) < batch_bytes * cores as u64 * 2 {
        bail!(
            "calibration needs {} free in /dev/shm ({} batches of {}) and there is less",
            ByteSize(batch_bytes * cores as u64 * 2),
            cores * 2,
            ByteSize(batch_bytes)
        );
    }
    let mut segments = Vec::new();
    for &(strategy, torch) in combos {
        for threads in [1, cores] {
            segments.push(segment_rate(
                strategy,
                torch,
                batch_bytes,
                threads,
                duration,
            )?);
            if cores == 1 {
                break;
            }
        }
    }
    Ok(Calibration {
        batch_bytes,
        images_per_batch,
        memset_gb_per_s: memset_gb_per_s(),
        memcpy_gb_per_s: memcpy_gb_per_s(),
        segments,
    })
}
