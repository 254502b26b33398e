//! Per-step time series beside a results CSV:
//! `<dir>/<csv stem>/<cell>[.torch-<version>][.<repeat>].steps.csv`, one file per row, one row per
//! step (time, step latency, /dev/shm in use, batches in flight), referenced from the cell's
//! row by `steps_file` (relative to the CSV's directory).

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::{atomic, sidecar};
use model::record::{CellRecord, StepSample};

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

impl atomic::CsvRow for StepRow {}

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

/// Writes the record's series next to `results_csv` (atomically); returns the path
/// relative to the CSV's directory.
pub fn write(results_csv: &Path, record: &CellRecord, repeat: u32) -> Result<String> {
    let (relative, path) = sidecar::place(results_csv, record, repeat, "steps.csv")?;
    let rows: Vec<StepRow> = record.series.iter().map(StepRow::from).collect();
    // Keep the header when there are no steps, so an empty series reads as empty, not missing.
    atomic::write_csv(&path, &rows, Some(&HEADER))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(relative)
}

/// Reads a steps file named by a row of `results_csv`.
pub fn read(results_csv: &Path, relative: &str) -> Result<Vec<StepRow>> {
    let (path, file) = sidecar::open(results_csv, relative, "time series")?;
    let mut reader = csv::Reader::from_reader(file);
    let mut rows = Vec::new();
    for (i, r) in reader.deserialize::<StepRow>().enumerate() {
        rows.push(r.with_context(|| format!("{}: row {} is not a step", path.display(), i + 2))?);
    }
    Ok(rows)
}
