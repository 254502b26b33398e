//! The results CSV file. It is rewritten whole after every cell through a temporary file and a
//! rename ([`super::atomic`]), so a crash of the harness at any moment leaves either the previous
//! complete file or the new complete file, never a torn row. A default name is claimed first
//! ([`ClaimedName`]), so that two runs started in the same second never write one file.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::atomic;
use super::row::Row;

/// A results file being written, one complete rewrite per added row.
pub struct ResultsFile {
    path: PathBuf,
    rows: Vec<Row>,
}

impl ResultsFile {
    /// Prepares `path` (creating its directory); nothing is written until the first row.
    pub fn create(path: &Path) -> Result<ResultsFile> {
        prepare(path)?;
        Ok(ResultsFile {
            path: path.to_path_buf(),
            rows: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// Adds a row and atomically replaces the file with all rows so far.
    pub fn push(&mut self, row: Row) -> Result<()> {
        self.rows.push(row);
        self.write()
    }

    /// Replaces every row and writes the file.
    pub fn replace(&mut self, rows: Vec<Row>) -> Result<()> {
        self.rows = rows;
        self.write()
    }

    fn write(&self) -> Result<()> {
        atomic::write_csv(&self.path, &self.rows, None)
            .with_context(|| format!("cannot write results to {}", self.path.display()))
    }
}

/// Makes ready to write results to `path`: its directory made, and refused when something other
/// than a regular file is there (the file is replaced by rename: never let that replace a
/// device, a directory or what a symbolic link points at).
pub fn prepare(path: &Path) -> Result<()> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_file() {
            bail!(
                "{} exists and is not a regular file: results are written (and replaced atomically) as a regular file; choose another --out",
                path.display()
            );
        }
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create the results directory {}", dir.display()))?;
    }
    Ok(())
}

/// The most names tried after the preferred one (`-2` to this) before giving up.
const MOST_SUFFIXES: u32 = 999;

/// A results file name this run holds. Default names are the UTC time to the second, so two
/// runs started in the same second would pick the same one and the later rewrite would silently
/// replace the other's rows: the name is claimed by creating the file (O_EXCL, which only one
/// process can win), and a name already taken moves on to `-2`, `-3`, ... The empty file is
/// removed when this is dropped with no row written to it (a run that ended before its first).
pub struct ClaimedName {
    path: PathBuf,
}

impl ClaimedName {
    /// Claims `preferred`, or the first free of `STEM-2.csv`, `STEM-3.csv`, ... beside it
    /// (creating the directory).
    pub fn claim(preferred: &Path) -> std::io::Result<ClaimedName> {
        if let Some(dir) = preferred.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let stem = preferred.file_stem().unwrap_or_default().to_string_lossy();
        let ext = preferred
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        for n in 1..=MOST_SUFFIXES {
            let path = match n {
                1 => preferred.to_path_buf(),
                n => preferred.with_file_name(format!("{stem}-{n}{ext}")),
            };
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(_) => return Ok(ClaimedName { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!(
                "{} and {MOST_SUFFIXES} numbered names after it are all taken",
                preferred.display()
            ),
        ))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ClaimedName {
    fn drop(&mut self) {
        // Still empty: no row was written (an atomic rewrite replaces the file, so a run's rows
        // are never in an empty one).
        if std::fs::metadata(&self.path).is_ok_and(|m| m.is_file() && m.len() == 0) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// Reads several results files into one list of rows, in order.
pub fn read_all(paths: &[PathBuf]) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    for path in paths {
        rows.extend(read(path)?);
    }
    Ok(rows)
}

/// Reads a results file, refusing another schema version and naming the line of a bad row.
pub fn read(path: &Path) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    each(path, |row| {
        rows.push(row.clone());
        Ok(())
    })?;
    Ok(rows)
}

/// Hands every row of several files to `f`, in order, holding a few batches of rows at a time:
/// a fleet's year of results is a million rows, and what reads them keeps what it needs of each
/// (read on every core: [`super::stream`]).
pub fn each_of(paths: &[PathBuf], f: impl FnMut(&Row) -> Result<()>) -> Result<()> {
    let mut f = f;
    super::stream::each_prepared(paths, |_| (), |(), row| f(row))
}

/// Hands every row of a results file to `f`, in order; `f`'s error stops the reading.
pub fn each(path: &Path, f: impl FnMut(&Row) -> Result<()>) -> Result<()> {
    each_of(&[path.to_path_buf()], f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_runs_at_the_same_instant_claim_two_names() {
        let dir = tempfile::tempdir().unwrap();
        let preferred = dir.path().join("results/seed-matrix-20261202T060711Z.csv");
        let first = ClaimedName::claim(&preferred).unwrap();
        let second = ClaimedName::claim(&preferred).unwrap();
        assert_eq!(first.path(), preferred);
        assert_eq!(
            second.path(),
            dir.path()
                .join("results/seed-matrix-20261202T060711Z-2.csv")
        );
        // Each run writes its own file; neither replaces the other's rows.
        std::fs::write(first.path(), "a\n").unwrap();
        std::fs::write(second.path(), "b\n").unwrap();
        assert_eq!(std::fs::read_to_string(&preferred).unwrap(), "a\n");
        // A name given up with no row written goes; one with rows stays.
        let third = ClaimedName::claim(&preferred).unwrap();
        let third_path = third.path().to_path_buf();
        drop((first, third));
        assert!(preferred.exists() && !third_path.exists());
    }
}
