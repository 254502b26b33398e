//! Results files from several machines or runs as one: rows keep pointing at their time series,
//! and a row that appears twice (the same host, run, cell and repeat) is kept once.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::csv::{self, ResultsFile};

/// What a merge did.
pub struct Merged {
    pub rows: usize,
    pub duplicates_dropped: usize,
}

/// Reads every file in `inputs` and writes their rows to `out`.
pub fn merge(inputs: &[PathBuf], out: &Path) -> Result<Merged> {
    let mut merged = ResultsFile::create(out)?;
    let mut rows = Vec::new();
    for path in inputs {
        for mut row in csv::read(path)? {
            // Time series stay where they are: point at them from the merged file.
            if let Some(rel) = &row.steps_file {
                let at = path.parent().unwrap_or(Path::new(".")).join(rel);
                row.steps_file = Some(
                    std::fs::canonicalize(&at)
                        .unwrap_or(at)
                        .display()
                        .to_string(),
                );
            }
            rows.push(row);
        }
    }
    let before = rows.len();
    let mut seen = HashSet::new();
    rows.retain(|r| seen.insert((r.host.clone(), r.run_id.clone(), r.cell.clone(), r.repeat)));
    let kept = rows.len();
    merged.replace(rows)?;
    Ok(Merged {
        rows: kept,
        duplicates_dropped: before - kept,
    })
}
