//! Replacing a file atomically: rows are written to a temporary file in the same directory,
//! synced, and renamed over the target, so readers see the old file or the new one, never a torn
//! one; a failure leaves no temporary file behind (tempfile removes it when dropped).

use std::io::Write;
use std::path::Path;

use anyhow::{anyhow, Result};
use serde::Serialize;

/// Writes `rows` as CSV to `path`, atomically. `empty_header` is written when there are no rows,
/// so an empty file still names its columns.
pub fn write_csv<T: Serialize>(
    path: &Path,
    rows: &[T],
    empty_header: Option<&[&str]>,
) -> Result<()> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer.serialize(row)?;
    }
    if rows.is_empty() {
        if let Some(header) = empty_header {
            writer.write_record(header)?;
        }
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
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
