//! `shmbench calibrate`: this machine's limits for the data path, measured in the same run as the
//! cells so a cell's img/s can be judged against what the kernel and memory allow here.
//!
//! - memset and memcpy bandwidth on one core (a pre-faulted 256 MiB buffer);
//! - the fresh-segment batch rate: the faithful mechanism alone (create a segment of one batch,
//!   allocate it per torch profile, map it, copy the batch in, unmap, release), on one core and on
//!   every core at once, per strategy and profile. That is the physical limit of the data path:
//!   a loader cannot produce batches faster than segments can be made and filled.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::config::{Strategy, TorchProfile};
use crate::loader::segment;

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
    let pid = std::process::id();
    let results: Vec<Result<f64>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                scope.spawn(move || -> Result<f64> {
                    let private = vec![7u8; bytes as usize];
                    let started = Instant::now();
                    let mut done = 0u64;
                    // At least three batches, so a short duration still measures a rate.
                    while started.elapsed() < duration || done < 3 {
                        let name = segment::segment_name(pid, 10_000 + t, done);
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
    segment::sweep(Some(pid));
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
    let (total, used) = crate::loader::shm_meter::usage();
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as u32)
        .unwrap_or(1);
    if total.saturating_sub(used) < batch_bytes * cores as u64 * 2 {
        bail!(
            "calibration needs {} free in /dev/shm ({} batches of {}) and there is less",
            crate::size::ByteSize(batch_bytes * cores as u64 * 2),
            cores * 2,
            crate::size::ByteSize(batch_bytes)
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

/// Text table of a calibration.
pub fn render(c: &Calibration) -> String {
    let mut out = format!(
        "memset {:.1} GB/s, memcpy {:.1} GB/s (one core)\nfresh segment per batch of {} ({} images): create, allocate, map, copy in, release\n",
        c.memset_gb_per_s,
        c.memcpy_gb_per_s,
        crate::size::ByteSize(c.batch_bytes),
        c.images_per_batch
    );
    let headers = ["strategy", "torch", "threads", "batches/s", "img/s", "GB/s"];
    let rows: Vec<Vec<String>> = c
        .segments
        .iter()
        .map(|s| {
            vec![
                s.strategy.to_string(),
                s.torch.to_string(),
                s.threads.to_string(),
                format!("{:.1}", s.batches_per_s),
                format!("{:.0}", s.batches_per_s * c.images_per_batch as f64),
                format!("{:.2}", s.gb_per_s),
            ]
        })
        .collect();
    out.push_str(&crate::table::markdown(&headers, &rows));
    out
}

/// `strategy:torch` pairs, as `--only` takes them.
pub fn parse_combos(text: &str) -> Result<Vec<(Strategy, TorchProfile)>> {
    use clap::ValueEnum;
    text.split(',')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (s, t) = pair.split_once(':').ok_or_else(|| {
                anyhow::anyhow!("'{pair}': write strategy:torch, e.g. file_descriptor:legacy")
            })?;
            let s = Strategy::from_str(s, false).map_err(|e| anyhow::anyhow!("'{s}': {e}"))?;
            let t = TorchProfile::from_str(t, false).map_err(|e| anyhow::anyhow!("'{t}': {e}"))?;
            Ok((s, t))
        })
        .collect()
}

/// Calibrates in a private mount namespace with its own tmpfs, so the measurement never writes
/// to the host's /dev/shm: re-runs `shmbench calibrate --here` there and reads its JSON.
pub fn isolated(
    config: &crate::config::CellConfig,
    combos: &[(Strategy, TorchProfile)],
    duration: Duration,
) -> Result<Calibration> {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as u64)
        .unwrap_or(1);
    let shm = config.batch_bytes() * (cores * 2 + 2) + (64 << 20);
    let only: Vec<String> = combos.iter().map(|(s, t)| format!("{s}:{t}")).collect();
    let args: Vec<String> = [
        "calibrate",
        "--here",
        "--format",
        "json",
        "--seconds",
        &duration.as_secs_f64().to_string(),
        "--batch",
        &config.batch.to_string(),
        "--shape",
        &config.shape.to_string(),
        "--dtype",
        &config.dtype.to_string(),
        "--only",
        &only.join(","),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = crate::runtime::output_in_namespace(&args, shm)
        .map_err(|e| anyhow::anyhow!("cannot calibrate in a private namespace: {e}"))?;
    if !out.status.success() {
        bail!(
            "calibration failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}
