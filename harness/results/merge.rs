//! Results files from several machines or runs as one: each row's files (time series, watch
//! report) are copied beside the merged file, so it travels whole, and a row that appears twice
//! (the same host, run, cell and repeat) is kept once.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::csv::{self, ResultsFile};
use super::sidecar;

/// What a merge did.
pub struct Merged {
    pub rows: usize,
    pub duplicates_dropped: usize,
}

/// Reads every file in `inputs` and writes their rows to `out`.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<Merged> {
    let mut rows = Vec::new();
    for (i, path) in inputs.iter().enumerate() {
        for mut row in csv::read(path)? {
            // A file that cannot be carried is left out, as a report says of a missing one.
            let prefix = (i + 1).to_string();
            let carry = |name: &Option<String>| {
                let name = name.as_deref()?;
                sidecar::copy(path, name, out, &prefix).ok()
            };
            row.steps_file = carry(&row.steps_file);
            row.watch_file = carry(&row.watch_file);
            rows.push(row);
        }
    }
    let before = rows.len();
    let mut seen = HashSet::new();
    rows.retain(|r| seen.insert((r.host.clone(), r.run_id.clone(), r.cell.clone(), r.repeat)));
    let kept = rows.len();
    if kept == 0 {
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
    // Made only now: a merge of files with no row leaves nothing behind.
    let mut merged = ResultsFile::create(out)?;
    merged.replace(rows)?;
    Ok(Merged {
        rows: kept,
        duplicates_dropped: before - kept,
    })
}
