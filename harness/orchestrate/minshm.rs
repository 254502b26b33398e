//! `shmbench min-shm`: the smallest /dev/shm a loader passes in, found by bisection over real
//! namespace cells, to a stated resolution, with repeats at the boundary so one lucky run does
//! not decide it.

use anyhow::{bail, Result};
use serde::Serialize;

use crate::model::config::CellConfig;
use crate::model::knobs::RuntimeKind;
use crate::model::record::{CellRecord, Status};
use crate::model::size::ByteSize;
use crate::plan::predict;
use crate::runtime::Runtimes;
use crate::sys::signals;

#[derive(Clone, Debug, Serialize)]
pub struct Trial {
    pub shm_bytes: u64,
    pub status: Status,
    pub crash_step: Option<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct MinShm {
    /// Smallest size that passed every repeat.
    pub measured_bytes: u64,
    /// Largest size seen to fail.
    pub failed_below_bytes: u64,
    pub resolution_bytes: u64,
    pub predicted_bytes: u64,
    pub predicted_batches: u64,
    pub trials: Vec<Trial>,
}

impl MinShm {
    /// measured / predicted.
    pub fn ratio(&self) -> f64 {
        self.measured_bytes as f64 / self.predicted_bytes.max(1) as f64
    }
}

fn round_up(bytes: u64, to: u64) -> u64 {
    bytes.div_ceil(to) * to
}

/// Bisects `config` (its shm-size is replaced) between 0 and an upper bound that passes.
pub fn search(
    config: &CellConfig,
    resolution: u64,
    repeats: u32,
    limit: u64,
    mut progress: impl FnMut(&Trial),
) -> Result<MinShm> {
    if resolution < 4096 {
        bail!("--resolution must be at least one page (4 KiB)");
    }
    // Sizes stay whole pages: tmpfs counts pages.
    let resolution = round_up(resolution, 4096);
    let predicted_batches = predict::peak_batches(config);
    let predicted_bytes = predict::batches_bytes(config, predicted_batches);
    let mut probe = config.clone();
    probe.runtime = RuntimeKind::Namespace;
    let runtimes = Runtimes::for_cells(std::slice::from_ref(&probe))?;
    let mut trials = Vec::new();
    let mut run = |bytes: u64| -> Result<bool> {
        if signals::received().is_some() {
            bail!("interrupted");
        }
        probe.shm_size = Some(ByteSize(bytes));
        let record: CellRecord = runtimes.launch(&probe, &mut |_| {});
        let trial = Trial {
            shm_bytes: bytes,
            status: record.status,
            crash_step: record.failure.as_ref().map(|f| f.crash_step),
        };
        progress(&trial);
        let passed = record.status.is_pass();
        if !passed && !matches!(record.status, Status::Sigbus | Status::Enospc) {
            bail!(
                "the loader failed for another reason than /dev/shm ({}: {}); fix that first",
                record.status,
                record.message
            );
        }
        trials.push(trial);
        Ok(passed)
    };
    let mut hi = round_up(
        (predicted_bytes as f64 * 1.5) as u64 + resolution,
        resolution,
    );
    while !run(hi)? {
        hi = round_up(hi * 2, resolution);
        if hi > limit {
            bail!("the loader does not pass even with {} of /dev/shm (the limit here); is something else wrong?", ByteSize(limit));
        }
    }
    let mut lo = 0u64;
    loop {
        while hi - lo > resolution {
            // lo and hi are whole pages at least two pages apart here.
            let mid = ((lo + (hi - lo) / 2) / 4096 * 4096).clamp(lo + 4096, hi - 4096);
            if run(mid)? {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        // Confirm the boundary: every repeat must pass, else step up and confirm again.
        let mut confirmed = true;
        for _ in 1..repeats {
            if !run(hi)? {
                confirmed = false;
                break;
            }
        }
        if confirmed {
            break;
        }
        lo = hi;
        hi += resolution;
    }
    Ok(MinShm {
        measured_bytes: hi,
        failed_below_bytes: lo,
        resolution_bytes: resolution,
        predicted_bytes,
        predicted_batches,
        trials,
    })
}
