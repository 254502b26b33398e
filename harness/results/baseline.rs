//! Named baselines, as criterion keeps them: a run's results saved under
//! `results/baselines/<NAME>.csv` (`--save-baseline NAME`), so a later `matrix --baseline NAME`
//! compares against it in one command. The per-step series stay with the original results file.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use super::csv::{self, ResultsFile};
use super::Row;

/// Where baselines live, relative to the working directory (beside the default results).
pub const DIR: &str = "results/baselines";

/// The file of baseline `name`; names are file names, so only letters, digits, '-', '_', '.'.
pub fn path(name: &str) -> Result<PathBuf> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !ok {
        bail!("baseline name '{name}': use letters, digits, '-', '_' or '.' (it names a file in {DIR})");
    }
    Ok(PathBuf::from(DIR).join(format!("{name}.csv")))
}

/// Saves `rows` as baseline `name`, replacing an earlier one of that name.
pub fn save(name: &str, rows: &[Row]) -> Result<PathBuf> {
    let path = path(name)?;
    let rows: Vec<Row> = rows
        .iter()
        .cloned()
        .map(|mut r| {
            // The series files are relative to the original results, not to the baseline.
            r.steps_file = None;
            r
        })
        .collect();
    ResultsFile::create(&path)
        .and_then(|mut file| file.replace(rows))
        .with_context(|| format!("saving baseline '{name}' to {}", path.display()))?;
    Ok(path)
}

/// The rows of baseline `name`.
pub fn load(name: &str) -> Result<Vec<Row>> {
    let path = path(name)?;
    if !path.exists() {
        bail!(
            "no baseline '{name}' ({}): save one first with `shmbench matrix --save-baseline {name}`",
            path.display()
        );
    }
    csv::read(&path)
}
