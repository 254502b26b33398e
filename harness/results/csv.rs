//! The results CSV file. It is rewritten whole after every cell through a temporary file and a
//! rename ([`super::atomic`]), so a crash of the harness at any moment leaves either the previous
//! complete file or the new complete file, never a torn row.

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
        // The file is replaced by rename: never let that replace a device, a directory or what a
        // symbolic link points at.
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_file() {
                bail!(
                    "{} exists and is not a regular file: results are written (and replaced atomically) as a regular file; choose another --out",
                    path.display()
                );
            }
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| {
                format!("cannot create the results directory {}", dir.display())
            })?;
        }
        Ok(ResultsFile {
            path: path.to_path_buf(),
            rows: Vec::new(),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// Adds a row and atomically replaces the file with all rows so far.
    pub(crate) fn push(&mut self, row: Row) -> Result<()> {
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

/// Reads several results files into one list of rows, in order.
pub(crate) fn read_all(paths: &[PathBuf]) -> Result<Vec<Row>> {
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
pub(crate) fn each_of(paths: &[PathBuf], f: impl FnMut(&Row) -> Result<()>) -> Result<()> {
    let mut f = f;
    super::stream::each_prepared(paths, |_| (), |(), row| f(row))
}

/// Hands every row of a results file to `f`, in order; `f`'s error stops the reading.
pub(crate) fn each(path: &Path, f: impl FnMut(&Row) -> Result<()>) -> Result<()> {
    each_of(&[path.to_path_buf()], f)
}
