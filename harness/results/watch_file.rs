//! What watching a command saw (`shmbench watch`), beside a results CSV:
//! `<dir>/<csv stem>/<cell>[.<repeat>].watch.json`, one file per watched row, referenced from the
//! row by `watch_file`: /dev/shm over time, who held it at the peak, what was left behind.

use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result};

use super::{atomic, sidecar};
use model::record::CellRecord;
use model::watch::WatchFindings;

/// Writes the record's watch report next to `results_csv` (atomically); returns the path
/// relative to the CSV's directory, None for a record that watched nothing.
pub fn write(results_csv: &Path, record: &CellRecord, repeat: u32) -> Result<Option<String>> {
    let Some(report) = &record.watch else {
        return Ok(None);
    };
    let (relative, path) = sidecar::place(results_csv, record, repeat, "watch.json")?;
    let json = serde_json::to_vec_pretty(report)?;
    atomic::write_bytes(&path, &json)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(Some(relative))
}

/// Reads a watch file named by a row of `results_csv`.
pub fn read(results_csv: &Path, relative: &str) -> Result<WatchFindings> {
    let (path, mut file) = sidecar::open(results_csv, relative, "watch report")?;
    let mut text = Vec::new();
    file.read_to_end(&mut text)
        .with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a watch report of this shmbench", path.display()))
}
