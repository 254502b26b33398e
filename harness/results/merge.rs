//! Results files from several machines or runs as one: each row's files (time series, watch
//! report) are copied beside the merged file, so it travels whole, and a row that appears twice
//! (the same host, run, cell and repeat) is kept once. Rows stream from the inputs (read on
//! every core) to the merged file: what is kept per row is its identity's 128-bit hash, 16
//! bytes, where holding the rows took 2.1 GB for a fleet's year of 500k.
//!
//! Nothing is put in place until every row was read: the merged file is a temporary file
//! renamed at the end, and the rows' files are copied into a staging folder beside it and moved
//! into the merged file's folder only then, so a merge that fails (a bad line, a full disk) or
//! is stopped (Ctrl-C, SIGTERM: the rows stop, the temporary files go) leaves the last merged
//! file and its files as they were, and no folder it made.

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::atomic::{self, CsvWriter};
use super::{csv, sidecar, stream, Row};

/// What a merge did.
pub struct Merged {
    pub rows: usize,
    pub duplicates_dropped: usize,
}

/// Why a merge stopped before its end: a signal, by number (the caller exits 128 + it).
#[derive(Debug, thiserror::Error)]
#[error("stopped by {}: nothing written, the merged file and its files as they were", sys::signals::name(*.0))]
pub struct Stopped(pub i32);

/// Reads every file in `inputs` and writes their rows to `out`.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<Merged> {
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // Dropped last: a folder this merge made goes again when the merge did not finish (only
    // while empty: the temporary files went before it).
    let mut made = MadeFolder((!dir.exists()).then(|| dir.to_path_buf()));
    csv::prepare(out)?;
    let mut merged = CsvWriter::<Row>::new(out)
        .with_context(|| format!("cannot write results to {}", out.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".shmbench-merge-")
        .tempdir_in(dir)
        .with_context(|| format!("cannot make a staging folder in {}", dir.display()))?;
    let staged = staging.path().join(out.file_name().unwrap_or_default());
    let identity = Identity::default();
    let mut seen = HashSet::new();
    let mut dropped = 0;
    for (i, path) in inputs.iter().enumerate() {
        // A file that cannot be carried is left out, as a report says of a missing one.
        let prefix = (i + 1).to_string();
        let carry = |name: &Option<String>| {
            let name = name.as_deref()?;
            sidecar::copy(path, name, &staged, &prefix).ok().flatten()
        };
        // A row's line is made where it was read, unless a file of it is to be carried.
        let prepare = |row: &Row| {
            let mut names = row.steps_file.iter().chain(&row.watch_file);
            let line = if row.steps_file.is_none() && row.watch_file.is_none() {
                atomic::encode(row).ok()
            } else if names.all(|name| !sidecar::may_copy(path, name)) {
                // Its files would carry nothing: the row without them.
                atomic::encode(&Row {
                    steps_file: None,
                    watch_file: None,
                    ..row.clone()
                })
                .ok()
            } else {
                None
            };
            (identity.of(row), line)
        };
        stream::each_prepared(std::slice::from_ref(path), prepare, |(id, line), row| {
            if let Some(sig) = sys::signals::received() {
                return Err(Stopped(sig).into());
            }
            if !seen.insert(*id) {
                dropped += 1;
                return Ok(());
            }
            if let Some(line) = line {
                return merged.write_encoded(row, line);
            }
            let mut row = row.clone();
            row.steps_file = carry(&row.steps_file);
            row.watch_file = carry(&row.watch_file);
            merged.write(&row)
        })?;
    }
    let kept = merged.rows();
    if kept == 0 {
        // Dropped unfinished, the merged file was never made: nothing is left behind.
        anyhow::bail!(
            "no results row in {}: nothing to merge, {} not written",
            inputs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            out.display()
        );
    }
    merged
        .finish(None)
        .with_context(|| format!("cannot write results to {}", out.display()))?;
    unstage(staging.path(), dir)?;
    // Finished: the folder stays.
    made.0 = None;
    Ok(Merged {
        rows: kept,
        duplicates_dropped: dropped,
    })
}

/// Moves the staged rows' files (`<stem>/<file>`) into their folder beside the merged file,
/// each by a rename (the staging folder is in the same directory).
fn unstage(staging: &Path, dir: &Path) -> Result<()> {
    for folder in std::fs::read_dir(staging)?.flatten() {
        let to = dir.join(folder.file_name());
        std::fs::create_dir_all(&to).with_context(|| format!("cannot create {}", to.display()))?;
        for file in std::fs::read_dir(folder.path())?.flatten() {
            let target = to.join(file.file_name());
            std::fs::rename(file.path(), &target)
                .with_context(|| format!("cannot put {} in place", target.display()))?;
        }
    }
    Ok(())
}

/// A folder a merge made, removed when the merge does not finish (while empty).
struct MadeFolder(Option<PathBuf>);

impl Drop for MadeFolder {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

/// A row's identity (host, run, cell, repeat) as two independent 64-bit hashes: two distinct
/// rows of a merge share one with a chance of about rows^2 / 2^129, nobody's in practice.
#[derive(Default)]
struct Identity(std::hash::RandomState, std::hash::RandomState);

impl Identity {
    fn of(&self, row: &Row) -> u128 {
        let hash = |state: &std::hash::RandomState| {
            state.hash_one((&row.host, &row.run_id, &row.cell, row.repeat))
        };
        (hash(&self.0) as u128) << 64 | hash(&self.1) as u128
    }
}
