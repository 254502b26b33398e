//! Per-step time series beside a results CSV:
//! `<dir>/<csv stem>/<cell>[.torch-<version>][.<repeat>].steps.csv`, one file per row, one row per
//! step (time, step latency, /dev/shm in use, batches in flight), referenced from the cell's
//! row by `steps_file` (relative to the CSV's directory).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::atomic;
use crate::model::knobs::Loader;
use crate::model::record::{CellRecord, StepSample};

/// The columns of a steps file, in order.
const HEADER: [&str; 5] = ["step", "t_s", "latency_ms", "shm_used_bytes", "in_flight"];

/// One row of a steps file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepRow {
    pub step: u64,
    pub t_s: f64,
    pub latency_ms: f64,
    pub shm_used_bytes: u64,
    pub in_flight: u64,
}

impl From<&StepSample> for StepRow {
    fn from(s: &StepSample) -> StepRow {
        StepRow {
            step: s.step,
            t_s: (s.t_s * 1e6).round() / 1e6,
            latency_ms: (s.latency_s * 1e6).round() / 1e3,
            shm_used_bytes: s.shm_used_bytes,
            in_flight: s.in_flight,
        }
    }
}

/// Where a file about one row goes beside `results_csv`: `<dir>/<csv stem>/<name>.<extension>`,
/// as (the path relative to the CSV's directory, the path), its folder made.
pub fn beside(
    results_csv: &Path,
    record: &CellRecord,
    repeat: u32,
    extension: &str,
) -> Result<(String, PathBuf)> {
    let stem = results_csv
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results".into());
    // One file per row: a fidelity run has each cell twice (emulated and torch), repeats more.
    let mut name = record.config.cell.clone();
    if record.config.loader == Loader::Torch {
        // The version is what the cell's Python (or a pod's log) said: in a file name, only
        // characters a version is made of; a '/' can never reach the path.
        let version: String = record
            .torch_version
            .as_deref()
            .unwrap_or("unknown")
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '.' | '+' | '-' | '_' => c,
                _ => '_',
            })
            .collect();
        name.push_str(&format!(".torch-{version}"));
    }
    if repeat > 1 {
        name.push_str(&format!(".{repeat}"));
    }
    let relative = PathBuf::from(&stem).join(format!("{name}.{extension}"));
    let dir = results_csv.parent().unwrap_or(Path::new("."));
    let path = dir.join(&relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    Ok((relative.display().to_string(), path))
}

/// Writes the record's series next to `results_csv` (atomically); returns the path
/// relative to the CSV's directory.
pub fn write(results_csv: &Path, record: &CellRecord, repeat: u32) -> Result<String> {
    let (relative, path) = beside(results_csv, record, repeat, "steps.csv")?;
    let rows: Vec<StepRow> = record.series.iter().map(StepRow::from).collect();
    // Keep the header when there are no steps, so an empty series reads as empty, not missing.
    atomic::write_csv(&path, &rows, Some(&HEADER))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(relative)
}

/// Reads a steps file named by a row of `results_csv`.
pub fn read(results_csv: &Path, relative: &str) -> Result<Vec<StepRow>> {
    let path = results_csv
        .parent()
        .unwrap_or(Path::new("."))
        .join(relative);
    if !path.exists() {
        bail!("time series {} is missing", path.display());
    }
    let mut reader =
        csv::Reader::from_path(&path).with_context(|| format!("opening {}", path.display()))?;
    let mut rows = Vec::new();
    for (i, r) in reader.deserialize::<StepRow>().enumerate() {
        rows.push(r.with_context(|| format!("{}: row {} is not a step", path.display(), i + 2))?);
    }
    Ok(rows)
}
