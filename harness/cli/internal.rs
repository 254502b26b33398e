//! The commands the harness runs itself: `shmbench cell` (what every runtime launches) and
//! `shmbench worker` (a DataLoader worker, re-exec'ed by a cell's main).

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cell;
use crate::cell::loader::worker;

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

pub fn cell(args: CellArgs) -> Result<ExitCode> {
    cell::main(&args.config_json)?;
    Ok(ExitCode::SUCCESS)
}

pub fn worker(args: WorkerArgs) -> Result<ExitCode> {
    let config = serde_json::from_str(&args.config_json).context("worker config")?;
    let code = worker::run(args.id, args.main_pid, &config)?;
    Ok(ExitCode::from(code as u8))
}
