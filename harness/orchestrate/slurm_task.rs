//! One array task of the batch script `shmbench slurm script` writes: the cell its index
//! picks from the script's cells (interleaved with its repeats), run through the runtime the
//! cell asks for (a namespace tmpfs of its size, or the node's own /dev/shm), its record
//! naming the Slurm job, task, node and version.
//!
//! The task first states which cell it runs (a `model::slurm::TaskStart` line), so a task the
//! scheduler ends before its record (OUT_OF_MEMORY, TIMEOUT) still names its cell in its
//! output file.

use anyhow::{Context, Result};

use model::record::CellRecord;
use model::slurm::{SlurmTask, TaskStart};

/// This task, as the variables slurmd set say, with the node's Slurm version.
pub fn this_task() -> Option<SlurmTask> {
    let mut task = SlurmTask::from_vars(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))?;
    task.version = sys::slurm::version();
    task.fingerprint = sys::fingerprint::collect();
    Some(task)
}

/// Runs the start's cell; the record names the task.
pub fn run(start: &TaskStart) -> Result<CellRecord> {
    let mut record = runtime::launch_one(&start.config, &mut |_| {})
        .with_context(|| format!("cell {}", start.config.cell))?;
    record.slurm = start.slurm.clone();
    Ok(record)
}

#[cfg(test)]
mod tests {
    use model::knobs::Knobs;
    use model::slurm::pick;
    use plan::resolve::{Identity, Platform, Resolve};

    #[test]
    fn tasks_interleave_the_repeats_of_the_cells() {
        let mut a = Knobs::default()
            .resolve(Identity::default(), &Platform::fixed(1 << 34, false))
            .unwrap();
        a.cell = "a".into();
        let mut b = a.clone();
        b.cell = "b".into();
        let cells = [a, b];
        let picked: Vec<(String, u32)> = (0..4)
            .map(|i| {
                let s = pick(&cells, i).unwrap();
                (s.config.cell, s.repeat)
            })
            .collect();
        assert_eq!(
            picked,
            [
                ("a".into(), 1),
                ("b".into(), 1),
                ("a".into(), 2),
                ("b".into(), 2)
            ]
        );
        assert!(pick(&[], 0).is_none());
    }
}
