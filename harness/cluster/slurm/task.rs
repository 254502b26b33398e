//! One array task of the batch script `shmbench slurm script` writes: the cell its index
//! picks from the script's cells (interleaved with its repeats), run through the runtime the
//! cell asks for (a namespace tmpfs of its size, or the node's own /dev/shm), its record
//! naming the Slurm job, task, node and version.
//!
//! The task first states which cell it runs (a `model::slurm_task::TaskStart` line), so a task the
//! scheduler ends before its record (OUT_OF_MEMORY, TIMEOUT) still names its cell in its
//! output file.

use anyhow::{anyhow, Context, Result};

use model::config::CellConfig;
use model::record::{CellRecord, Status};
use model::slurm_task::{pick, SlurmTask, TaskStart, ARRAY_TASK_ID_ENV};

/// This task, as the variables slurmd set say, with the node's Slurm version.
pub(crate) fn this_task() -> Option<SlurmTask> {
    let mut task = SlurmTask::from_vars(|name| std::env::var(name).ok().filter(|v| !v.is_empty()))?;
    task.version = crate::slurm::commands::version();
    task.fingerprint = sys::fingerprint::collect();
    Some(task)
}

/// What this task starts: the cell its index (`SLURM_ARRAY_TASK_ID`, 0 outside an array) picks
/// from `cells_json` (the script's cells), naming this task.
pub fn start(cells_json: &str) -> Result<TaskStart> {
    let cells: Vec<CellConfig> = serde_json::from_str(cells_json.trim())
        .context("the script's cells are not JSON cells of this shmbench")?;
    let index = std::env::var(ARRAY_TASK_ID_ENV)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut start = pick(&cells, index).ok_or_else(|| anyhow!("the script holds no cells"))?;
    start.slurm = this_task();
    Ok(start)
}

/// Runs the start's cell to the task's record, naming the task, and whether the cell could
/// run: a cell that could not is an error record saying why. Slurm's SIGTERM (scancel, the
/// time limit) ends the cell's tree, and its record says so.
pub fn run(start: &TaskStart) -> (CellRecord, bool) {
    sys::signals::install();
    match runtime::launch_one(&start.config, &mut |_| {}) {
        Ok(mut record) => {
            record.slurm = start.slurm.clone();
            (record, true)
        }
        Err(e) => {
            let why = format!("{:#}", e.context(format!("cell {}", start.config.cell)));
            let mut record = CellRecord::failed_to_run(start.config.clone(), Status::Error, why);
            record.slurm = start.slurm.clone();
            (record, false)
        }
    }
}

#[cfg(test)]
mod tests {
    use model::knobs::Knobs;
    use model::slurm_task::pick;
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
