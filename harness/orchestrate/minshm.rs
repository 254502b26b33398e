//! `shmbench min-shm`: the smallest /dev/shm a loader (or a watched command) passes in, found by
//! bisection over real namespace cells, to a stated resolution, with repeats at the boundary so
//! one lucky run does not decide it, within a time budget when one is given. A loader's bracket
//! starts from the model's peak; a command's from its peak measured in a first, roomy run.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use serde::Serialize;

use explain::cause::Cause;
use model::config::CellConfig;
use model::knobs::{Loader, RuntimeKind};
use model::record::{CellRecord, Status};
use model::size::ByteSize;
use plan::predict;
use runtime::Runtimes;

use super::launcher::Launcher;

#[cfg(test)]
#[path = "minshm_tests.rs"]
mod tests;

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
    /// Largest size seen to fail; 0 where no smaller size was run (the budget ran out, or the
    /// resolution is as large as the answer).
    pub failed_below_bytes: u64,
    pub resolution_bytes: u64,
    /// The model's peak for a loader; for a command, its peak measured in a roomy first run.
    pub predicted_bytes: u64,
    pub predicted_batches: u64,
    pub trials: Vec<Trial>,
    /// The budget ran out before the bracket narrowed to the resolution: `measured_bytes`
    /// passed, `failed_below_bytes` failed, and the minimum is between them.
    pub budget_spent: bool,
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

impl Trial {
    /// What a cell's record says of one size (its crash step where the cell counts steps).
    fn of(record: &CellRecord, probe: &CellConfig, shm_bytes: u64) -> Trial {
        Trial {
            shm_bytes,
            status: record.status,
            crash_step: record
                .failure
                .as_ref()
                .map(|f| f.crash_step)
                .filter(|_| probe.counts_steps()),
        }
    }
}

/// How a search goes: the size steps it may not split, the runs that must pass at the boundary,
/// the most /dev/shm it may try, and the time it may take.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    pub resolution: u64,
    pub repeats: u32,
    pub limit: u64,
    pub budget: Option<Duration>,
}

/// Whether a failed trial failed of /dev/shm: a SIGBUS or ENOSPC whose cause, where the tracer
/// named one, is the tmpfs (a SIGBUS a `kill` sent, or a truncated file's, is no size's).
fn of_shm(record: &CellRecord) -> bool {
    let cause = record.explanation.as_ref().map(|e| e.cause);
    matches!(record.status, Status::Sigbus | Status::Enospc)
        && cause.is_none_or(|c| matches!(c, Cause::TmpfsFull | Cause::Unknown))
}

/// Bisects `config` (its shm-size is replaced) between 0 and an upper bound that passes, each
/// trial a namespace cell.
pub fn search(config: &CellConfig, bounds: Bounds, progress: impl FnMut(&Trial)) -> Result<MinShm> {
    let mut probe = config.clone();
    probe.knobs.runtime = RuntimeKind::Namespace;
    let runtimes = Runtimes::for_cells(std::slice::from_ref(&probe))?;
    search_with(&runtimes, &probe, bounds, progress)
}

/// [`search`] through `launcher`.
pub fn search_with(
    launcher: &dyn Launcher,
    config: &CellConfig,
    bounds: Bounds,
    mut progress: impl FnMut(&Trial),
) -> Result<MinShm> {
    let Bounds {
        resolution,
        repeats,
        limit,
        budget,
    } = bounds;
    let began = Instant::now();
    let spent = || budget.is_some_and(|b| began.elapsed() >= b);
    if resolution < 4096 {
        bail!("--resolution must be at least one page (4 KiB)");
    }
    // Sizes stay whole pages: tmpfs counts pages.
    let resolution = round_up(resolution, 4096);
    let command = config.knobs.loader == Loader::Command;
    // A loader's peak from the model; a command has none until its first run.
    let (mut predicted_bytes, predicted_batches) = match command {
        true => (0, 0),
        false => (predict::peak_bytes(config), predict::peak_batches(config)),
    };
    let mut probe = config.clone();
    let mut trials = Vec::new();
    let mut run = |bytes: u64| -> Result<(bool, u64)> {
        if launcher.interrupted().is_some() {
            bail!("interrupted");
        }
        probe.knobs.shm_size = Some(ByteSize(bytes));
        let record: CellRecord = launcher.launch(&probe, &mut |_| {});
        let trial = Trial::of(&record, &probe, bytes);
        progress(&trial);
        let passed = record.status.is_pass();
        if !passed && !of_shm(&record) {
            let what = if command { "command" } else { "loader" };
            let cause = record
                .explanation
                .as_ref()
                .map(|e| format!(", cause {}", e.cause.name()))
                .unwrap_or_default();
            bail!(
                "the {what} failed for another reason than /dev/shm ({}{cause}: {}); fix that first",
                record.status,
                record.message
            );
        }
        trials.push(trial);
        Ok((passed, record.metrics.peak_shm_bytes))
    };
    if command {
        // No model of a command: its peak in a roomy /dev/shm starts the bracket.
        let (passed, peak) = run(round_up(limit, resolution))?;
        if !passed {
            bail!("the command does not pass even with {} of /dev/shm (the limit here); is something else wrong?", ByteSize(limit));
        }
        predicted_bytes = peak;
    }
    // The most this search tries: the limit, in whole resolutions.
    let top = (limit / resolution).max(1) * resolution;
    let mut hi = round_up(
        (predicted_bytes as f64 * if command { 1.1 } else { 1.5 }) as u64 + resolution,
        resolution,
    )
    .min(top);
    while !run(hi)?.0 {
        if hi >= top {
            bail!("the loader does not pass even with {} of /dev/shm (the limit here); is something else wrong?", ByteSize(top));
        }
        hi = round_up(hi * 2, resolution).min(top);
    }
    let (hi, lo, budget_spent) = narrow(&mut run, hi, top, resolution, repeats, &spent)?;
    Ok(MinShm {
        measured_bytes: hi,
        failed_below_bytes: lo,
        resolution_bytes: resolution,
        predicted_bytes,
        predicted_batches,
        trials,
        budget_spent,
    })
}

/// The bracket (0, `hi`] narrowed to `resolution` by `run` (whether a size passes), its answer
/// confirmed by `repeats` passing runs, stepping up where one fails, at most to `top`; stops
/// early once `spent`. (the answer, the largest size that failed, whether the budget ran out)
fn narrow(
    run: &mut dyn FnMut(u64) -> Result<(bool, u64)>,
    mut hi: u64,
    top: u64,
    resolution: u64,
    repeats: u32,
    spent: &dyn Fn() -> bool,
) -> Result<(u64, u64, bool)> {
    let mut lo = 0u64;
    let mut budget_spent = false;
    // Runs that passed at `hi` so far: one where a trial found it, none after a step up.
    let mut passes_at_hi = 1;
    loop {
        while hi - lo > resolution {
            if spent() {
                budget_spent = true;
                break;
            }
            // lo and hi are whole pages at least two pages apart here.
            let mid = ((lo + (hi - lo) / 2) / 4096 * 4096).clamp(lo + 4096, hi - 4096);
            if run(mid)?.0 {
                hi = mid;
                passes_at_hi = 1;
            } else {
                lo = mid;
            }
        }
        // Confirm the boundary: every repeat must pass, else step up and confirm again.
        let mut confirmed = true;
        for _ in passes_at_hi..repeats {
            if budget_spent || spent() {
                budget_spent = true;
                break;
            }
            if !run(hi)?.0 {
                confirmed = false;
                break;
            }
        }
        if confirmed || budget_spent {
            break;
        }
        lo = hi;
        hi += resolution;
        passes_at_hi = 0;
        if hi > top {
            bail!("the loader passed and then failed at {} of /dev/shm, the limit here: a boundary no size here settles", ByteSize(lo));
        }
    }
    Ok((hi, lo, budget_spent))
}
