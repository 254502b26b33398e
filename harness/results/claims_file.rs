//! The scenario's statements (`[[claims]]`, sentences several cells measure together), beside a
//! results CSV: `<dir>/<csv stem>/claims.json`, so a report made later from the CSV judges the
//! same sentences the run was made for.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::sidecar;
use model::statement::Statement;

/// The file's name in the folder beside the CSV.
const FILE: &str = "claims.json";

/// Where the statements of `results_csv` are kept.
fn path_of(results_csv: &Path) -> PathBuf {
    sidecar::folder(results_csv).join(FILE)
}

/// Writes them (atomically); nothing when there are none.
pub fn write(results_csv: &Path, statements: &[Statement]) -> Result<()> {
    if statements.is_empty() {
        return Ok(());
    }
    sidecar::write_run_file(results_csv, FILE, &serde_json::to_vec_pretty(statements)?)?;
    Ok(())
}

/// The statements kept beside `results_csv`; none when the run had none.
pub fn read(results_csv: &Path) -> Result<Vec<Statement>> {
    let path = path_of(results_csv);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let text = std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_slice(&text)
        .with_context(|| format!("{} holds no statements of this shmbench", path.display()))
}
