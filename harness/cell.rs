//! `shmbench cell <config-json>`: the unit of work. Runs one loader configuration in this process
//! tree and prints exactly one JSON record on stdout. Every runtime launches this same command;
//! they differ only in how (as is, in a mount namespace, in a container).

use anyhow::{Context, Result};

use crate::config::CellConfig;
use crate::loader;
use crate::record::CellRecord;

/// Parses the config a runtime passed and runs the cell.
pub fn run(config_json: &str) -> Result<CellRecord> {
    let config: CellConfig = serde_json::from_str(config_json)
        .context("the cell config is not valid JSON for this shmbench version")?;
    config
        .validate(0)
        .map_err(|e| anyhow::anyhow!("invalid cell config: {e}"))?;
    Ok(loader::run_cell(&config))
}

/// Runs and prints the record; the exit code is 0 whenever a record was printed (a crashed
/// cell is a result, not a failure of the command).
pub fn main(config_json: &str) -> Result<()> {
    let record = run(config_json)?;
    let line = serde_json::to_string(&record)?;
    println!("{line}");
    Ok(())
}
