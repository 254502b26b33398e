//! The memory a scheduler must grant a cell's processes: its /dev/shm pages (a tmpfs's pages
//! are charged to the memory cgroup of the job that wrote them: a pod's limit, a Slurm job's
//! `--mem` under ConstrainRAMSpace) plus the private memory of the main and each worker (a
//! batch of samples before they are collated) and room for the processes themselves; and the
//! planning rule that refuses a loader whose predicted /dev/shm peak exceeds this machine's
//! memory (tmpfs pages are RAM).

use anyhow::{bail, Result};

use super::predict;
use model::config::CellConfig;
use model::size::ByteSize;

/// Room for the processes themselves (binaries, stacks, the allocator's slack).
const PROCESS_ROOM: u64 = 128 << 20;
/// Each process's own memory beside a batch of samples.
const PER_PROCESS: u64 = 32 << 20;

/// The private memory of a cell's processes (main and workers), without its /dev/shm.
pub fn private_bytes(cell: &CellConfig) -> u64 {
    (cell.knobs.workers as u64 + 1) * (cell.batch_bytes() + PER_PROCESS) + PROCESS_ROOM
}

/// The /dev/shm a cell's pages will fill: the peak the model predicts for it, or its tmpfs's
/// size where that is smaller (the cell crashes there).
pub fn shm_bytes(cell: &CellConfig) -> u64 {
    let peak = predict::peak_bytes(cell);
    match cell.knobs.shm_remount.or(cell.knobs.shm_size) {
        Some(size) => peak.min(size.bytes()),
        None => peak,
    }
}

/// What a job running `cell` needs, all told: its own memory limit when it sets one.
pub fn job_bytes(cell: &CellConfig) -> u64 {
    match cell.knobs.memory {
        Some(limit) => limit.bytes(),
        None => shm_bytes(cell) + private_bytes(cell),
    }
}

/// Refuses cells whose predicted /dev/shm peak is more than `mem_total`: filling those tmpfs
/// pages would push the whole machine into swap or the OOM killer.
pub fn refuse_oversized(cells: &[CellConfig], mem_total: u64) -> Result<()> {
    for c in cells {
        let batches = predict::peak_batches(c);
        let peak = predict::peak_bytes(c);
        let held = c.knobs.dataset_bytes;
        if mem_total > 0 && held > mem_total {
            bail!(
                "cell '{}': a Dataset holding {} of tensors is more than this machine's {} of memory (its main allocates them whatever the start method): refused (use --force to run it anyway)",
                c.cell,
                ByteSize(held),
                ByteSize(mem_total)
            );
        }
        if mem_total > 0 && peak > mem_total {
            bail!(
                "cell '{}' would need about {} of shared memory at its peak ({batches} batches of {}), more than this machine's {}: refused (use --force to run it anyway)",
                c.cell,
                ByteSize(peak),
                ByteSize(c.batch_bytes()),
                ByteSize(mem_total)
            );
        }
    }
    Ok(())
}
