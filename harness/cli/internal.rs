//! The commands the harness runs itself: `shmbench cell` (what every runtime launches),
//! `shmbench worker` (a DataLoader worker, re-exec'ed by a cell's main) and `shmbench job`
//! (several cells at once, as `doctor --verify` runs a job's ranks and loaders).

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cell;
use crate::cell::loader::worker;
use crate::model::config::CellConfig;
use crate::orchestrate::verify;

#[derive(clap::Args)]
pub struct CellArgs {
    /// The resolved cell config as JSON (see `matrix --dry-run`)
    pub config_json: String,
}

#[derive(clap::Args)]
pub struct WorkerArgs {
    pub id: u32,
    pub main_pid: u32,
    pub config_json: String,
}

#[derive(clap::Args)]
pub struct JobArgs {
    /// The resolved cells as a JSON array
    pub cells_json: String,
}

/// Runs the cells at once; a line per cell, exit 1 when any did not pass.
pub fn job(args: JobArgs) -> Result<ExitCode> {
    let cells: Vec<CellConfig> =
        serde_json::from_str(&args.cells_json).context("the job's cells are not valid JSON")?;
    let records = verify::together(&cells);
    for r in &records {
        println!(
            "{}: {} after {} steps{}",
            r.config.cell,
            r.status,
            r.metrics.steps_done,
            if r.message.is_empty() {
                String::new()
            } else {
                format!(" ({})", r.message)
            }
        );
    }
    let all_passed = records.iter().all(|r| r.status.is_pass());
    Ok(ExitCode::from(if all_passed { 0 } else { 1 }))
}

pub fn cell(args: CellArgs) -> Result<ExitCode> {
    cell::main(&args.config_json)?;
    Ok(ExitCode::SUCCESS)
}

pub fn worker(args: WorkerArgs) -> Result<ExitCode> {
    let config = serde_json::from_str(&args.config_json).context("worker config")?;
    let code = worker::run(args.id, args.main_pid, &config)?;
    Ok(ExitCode::from(code as u8))
}
