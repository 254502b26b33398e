//! `doctor --verify --platform slurm`: the doctor's proof run as a Slurm job when `sbatch`
//! answers, so it meets what a job there meets: the node's own /dev/shm (shared with the jobs
//! beside it) and a `--mem` that its pages count against, sized as the doctor's Slurm fix says
//! (the recommended /dev/shm plus the loader's own memory).

use std::path::PathBuf;

use anyhow::{anyhow, Context, Result};

use super::slurm::DEFAULT_DIR;
use crate::model::config::CellConfig;
use crate::model::knobs::{IpcMode, RuntimeKind};
use crate::model::record::CellRecord;
use crate::plan::memory;
use cluster::slurm::collect::task_result;
use cluster::slurm::commands;
use cluster::slurm::ends::settled_task_ends;
use cluster::slurm::output::{self, TaskOutput};
use cluster::slurm::script::{self, Target};

/// Whether a proof can run as a Slurm job here.
pub(super) fn available() -> bool {
    commands::answers()
}

/// Runs `cell` (the doctor's verification cell) as a one-task Slurm job in the node's own
/// /dev/shm with `--mem` of `shm_bytes` plus the loader's own memory; its record.
pub(super) fn run(cell: &CellConfig, shm_bytes: u64) -> Result<CellRecord> {
    let mut cell = cell.clone();
    cell.knobs.runtime = RuntimeKind::Host;
    cell.knobs.ipc = IpcMode::Host;
    cell.knobs.shm_size = None;
    cell.cell = "doctor-verify".into();
    let mem = format!(
        "{}M",
        (shm_bytes + memory::private_bytes(&cell)).div_ceil(1 << 20)
    );
    let dir = PathBuf::from(DEFAULT_DIR);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let dir = std::fs::canonicalize(&dir)?;
    let binary = std::env::current_exe().context("cannot name this shmbench's binary")?;
    let target = Target {
        binary: &binary,
        output_dir: &dir,
        partition: None,
        constraint: None,
        mem: Some(&mem),
        // A proof takes seconds; a limit makes sure a stuck one ends.
        time: Some("10"),
        repeat: 1,
        max_parallel: None,
        shared: true,
    };
    let script = script::render("doctor-verify", std::slice::from_ref(&cell), &target)?;
    eprintln!("verifying as a Slurm job (the node's own /dev/shm, --mem={mem})...");
    let job = commands::sbatch(&script, &["--wait".to_string()])?;
    let path = dir.join(output::of_task(&job, 0));
    let file = path.display().to_string();
    let output = TaskOutput::read_path(&path)
        .with_context(|| format!("job {job} wrote no output file {file}"))?;
    let ends = settled_task_ends(std::slice::from_ref(&job), None);
    let (record, notes) = task_result(&file, output, &ends);
    for note in notes {
        eprintln!("{note}");
    }
    record
        .ok_or_else(|| anyhow!("job {job}: no record in {file}, and Slurm says nothing of its end"))
}
