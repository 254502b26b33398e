//! A fake machine for the search's and the grid's tests: each trial answered at once by a rule
//! of img/s and /dev/shm use, so the logic above it is tested without a cell.

use anyhow::Result;

use model::config::CellConfig;
use model::record::Status;

use super::candidate::{Bounds, Run};
use super::setting::Setting;

/// A machine where img/s grows with workers up to 2, prefetch helps a little, pinning costs
/// 10%, respawning the workers every epoch costs 20% where a trial has more than one, and a run crashes when its setting uses more than the /dev/shm it has (its use the
/// model's need times `under`: a model that under-predicts), and `flaky`'s one run in three.
pub(crate) fn machine(
    under: f64,
    flaky: Option<Setting>,
) -> impl FnMut(&CellConfig, u64) -> Result<Run> {
    let mut calls = 0u64;
    move |config, shm_bytes| {
        calls += 1;
        let k = &config.knobs;
        let setting = Setting {
            workers: k.workers,
            prefetch: k.prefetch,
            pin_memory: k.pin_memory,
            start_method: k.start_method,
            strategy: k.strategy,
            persistent_workers: k.persistent_workers,
        };
        let respawns = !k.persistent_workers && k.epochs > 1;
        let uses = plan::predict::peak_bytes(config) as f64 * under;
        let jitter = 1.0 + 0.01 * ((calls * 7919) % 5) as f64 / 5.0;
        let rate = 100.0 * f64::from(k.workers.min(2)) * (1.0 + 0.05 * f64::from(k.prefetch))
            / if k.pin_memory { 1.1 } else { 1.0 }
            * if respawns { 0.8 } else { 1.0 }
            * jitter;
        let crash = uses > shm_bytes as f64 || (Some(setting) == flaky && calls.is_multiple_of(3));
        Ok(Run {
            shm_bytes,
            status: if crash { Status::Sigbus } else { Status::Pass },
            crash_step: crash.then_some(3),
            img_per_s: (!crash).then_some(rate),
            seconds: if crash { 0.5 } else { 2.0 },
            cause: None,
            memory_bytes: None,
        })
    }
}

/// A run that passed in `shm_bytes` at `img_per_s`.
pub(crate) fn passed(shm_bytes: u64, img_per_s: f64) -> Run {
    Run {
        shm_bytes,
        status: Status::Pass,
        crash_step: None,
        img_per_s: Some(img_per_s),
        seconds: 1.0,
        cause: None,
        memory_bytes: None,
    }
}

pub(crate) fn base() -> CellConfig {
    let mut base = CellConfig::with_defaults("tune");
    base.knobs.batch = 8;
    base.knobs.steps = 20;
    base
}

pub(crate) fn bounds(shm_bytes: u64) -> Bounds {
    Bounds {
        shm_bytes,
        margin: 0.85,
        most_runs: 3,
        margin_runs: 2,
        max_time: None,
        memory_bytes: None,
    }
}
