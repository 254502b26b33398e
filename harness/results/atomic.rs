//! Replacing a file atomically: rows are written to a temporary file in the same directory,
//! synced, and renamed over the target, so readers see the old file or the new one, never a torn
//! one; a failure leaves no temporary file behind (tempfile removes it when dropped).

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::{anyhow, Result};
use serde::Serialize;

use super::spreadsheet;

/// A row of a CSV file: serde writes its columns; columns it cannot name in a struct's fields
/// (a row's added knobs) follow them.
pub trait CsvRow: Serialize {
    /// The names of the columns after the serialised ones.
    fn more_header() -> &'static [&'static str] {
        &[]
    }

    /// This row's cells of them.
    fn more_cells(&self) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Writes `rows` as CSV to `path`, atomically. `empty_header` is written when there are no rows,
/// so an empty file still names its columns.
pub fn write_csv<T: CsvRow>(path: &Path, rows: &[T], empty_header: Option<&[&str]>) -> Result<()> {
    let mut plain = csv::Writer::from_writer(Vec::new());
    for row in rows {
        plain.serialize(row)?;
    }
    if rows.is_empty() {
        if let Some(header) = empty_header {
            plain.write_record(header)?;
        }
    }
    let plain = plain.into_inner().map_err(|e| anyhow!("{e}"))?;
    // Every cell once more, guarded for spreadsheets (serde writes the cells, not their text).
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .from_reader(plain.as_slice());
    let mut writer = csv::Writer::from_writer(Vec::with_capacity(plain.len()));
    for (i, record) in reader.records().enumerate() {
        let record = record?;
        // The first record is the header (serde's, or `empty_header`); row i - 1 follows it.
        let more = match (i, rows.is_empty()) {
            (_, true) => Vec::new(),
            (0, false) => T::more_header().iter().map(|c| c.to_string()).collect(),
            (i, false) => rows[i - 1].more_cells()?,
        };
        let cells: Vec<_> = record
            .iter()
            .chain(more.iter().map(String::as_str))
            .map(spreadsheet::guard)
            .collect();
        writer.write_record(cells.iter().map(|c| c.as_bytes()))?;
    }
    let bytes = writer.into_inner().map_err(|e| anyhow!("{e}"))?;
    write_bytes(path, &bytes)
}

/// Writes `bytes` to `path`, atomically.
pub fn write_bytes(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new()
        .prefix(".shmbench-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    // A temporary file is 0600: the result keeps the permissions of the regular file it
    // replaces, or is readable by all as a new file is (results are shared: CI artifacts, a
    // team's folder). A symlink in its place is replaced, never followed for a mode, and no
    // set-id bit is carried.
    let mode = std::fs::symlink_metadata(path)
        .ok()
        .filter(|m| m.is_file())
        .map_or(0o644, |m| m.permissions().mode() & 0o777);
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
