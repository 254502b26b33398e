//! `shmbench doctor --verify`: the doctor's recommendation proved by running the loader in a
//! namespace cell under the recommended /dev/shm size.

use anyhow::Result;

use crate::model::config::CellConfig;
use crate::model::knobs::RuntimeKind;
use crate::model::record::CellRecord;
use crate::model::size::ByteSize;
use crate::runtime;

/// Steps a verification runs at most: enough to fill the prefetch window many times over.
const MAX_STEPS: u64 = 40;
/// The training step time used when the loader has none: a step slower than the loader, so
/// every outstanding batch waits in /dev/shm (the worst case the prediction covers).
const SLOW_STEP_MS: f64 = 50.0;

/// The cell a verification runs: `config` under `shm_bytes` of /dev/shm in a namespace.
pub fn cell(config: &CellConfig, shm_bytes: u64) -> CellConfig {
    let mut cell = config.clone();
    cell.runtime = RuntimeKind::Namespace;
    cell.shm_size = Some(ByteSize(shm_bytes));
    cell.steps = cell.steps.min(MAX_STEPS);
    if cell.compute_ms == 0.0 {
        cell.compute_ms = SLOW_STEP_MS;
    }
    cell
}

/// Runs the verification cell.
pub fn run(cell: &CellConfig) -> Result<CellRecord> {
    runtime::launch_one(cell, &mut |_| {})
}
