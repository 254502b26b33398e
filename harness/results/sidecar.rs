//! The files beside a results CSV: `<dir>/<csv stem>/<name>.<extension>`, one per row (its time
//! series, a watched job's report), named by the row relative to the CSV's directory.
//!
//! A row's file name is data from elsewhere (a CSV from another machine, a merge, a hand edit),
//! never a path to follow: it is read only when it is relative, goes down from the CSV's
//! directory (no `..`, no root), names a regular file (not a link, a FIFO or a device, which
//! could hang a report or read what is not ours) and is of a size a series can have.

use std::fs::File;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};

use model::knobs::Loader;
use model::record::CellRecord;

/// The largest file beside a CSV that is read (a series of a million steps is about 50 MB).
pub const MAX_BYTES: u64 = 256 << 20;

/// The folder beside `results_csv` that holds its files: `<dir>/<csv stem>`.
pub fn folder(results_csv: &Path) -> PathBuf {
    let stem = results_csv
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results".into());
    results_csv.parent().unwrap_or(Path::new(".")).join(stem)
}

/// Writes a file about the whole run (`calibration.json`, `claims.json`) into the folder beside
/// `results_csv`, atomically, the folder made; returns its path.
pub fn write_run_file(results_csv: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    let dir = folder(results_csv);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(name);
    super::atomic::write_bytes(&path, bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Where a file about one row goes beside `results_csv`: `<dir>/<csv stem>/<name>.<extension>`,
/// as (the path relative to the CSV's directory, the path), its folder made.
pub fn place(
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
    if record.config.knobs.loader == Loader::Torch {
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

/// Opens the file a row of `results_csv` names (`what` it is, for messages), refusing a name
/// that is not a plain relative path down from the CSV's directory, or what is not a regular
/// file of a bounded size; returns its path and the file, read no further than [`MAX_BYTES`].
pub fn open(
    results_csv: &Path,
    relative: &str,
    what: &str,
) -> Result<(PathBuf, std::io::Take<File>)> {
    match open_found(results_csv, relative, what)? {
        Some(opened) => Ok(opened),
        None => bail!(
            "{what} {} is missing",
            down_from(results_csv, relative, what)?.display()
        ),
    }
}

/// [`open`], with None where no file is there (costing no error: see [`copy`]).
fn open_found(
    results_csv: &Path,
    relative: &str,
    what: &str,
) -> Result<Option<(PathBuf, std::io::Take<File>)>> {
    let path = down_from(results_csv, relative, what)?;
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if !meta.file_type().is_file() {
        bail!("{what} {} is not a regular file: not read", path.display());
    }
    if meta.len() > MAX_BYTES {
        bail!(
            "{what} {} is {} bytes, more than a {what} can be: not read",
            path.display(),
            meta.len()
        );
    }
    let file = File::open(&path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Some((path, file.take(MAX_BYTES))))
}

/// The path of the file a row of `results_csv` names, refused unless the name is a plain
/// relative path down from the CSV's directory.
fn down_from(results_csv: &Path, relative: &str, what: &str) -> Result<PathBuf> {
    let name = Path::new(relative);
    let plain = !relative.is_empty()
        && name
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !plain {
        bail!(
            "{}: the {what} '{relative}' is not a path down from the results file's directory: not read",
            results_csv.display()
        );
    }
    Ok(results_csv.parent().unwrap_or(Path::new(".")).join(name))
}

/// Whether [`copy`] may copy the file a row of `from_csv` names: false when it would carry
/// nothing (the name is refused, no file is there, or not a regular file), found without an
/// error made.
pub fn may_copy(from_csv: &Path, relative: &str) -> bool {
    down_from(from_csv, relative, "file")
        .is_ok_and(|path| std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file()))
}

/// Copies the file a row of `from_csv` names beside `to_csv` (for a merge: the merged file
/// carries its rows' files), as `<to stem>/<prefix>-<file name>`; returns its new name, or
/// None when no file is there, and refuses what [`open`] refuses. A missing file is common (a
/// CSV sent without its folder) and costs no error: an error per row of a million, with
/// RUST_BACKTRACE set, cost a merge half its time.
pub fn copy(
    from_csv: &Path,
    relative: &str,
    to_csv: &Path,
    prefix: &str,
) -> Result<Option<String>> {
    let Some((from, mut file)) = open_found(from_csv, relative, "file")? else {
        return Ok(None);
    };
    let stem = to_csv
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "results".into());
    let file_name = from
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let new = PathBuf::from(stem).join(format!("{prefix}-{file_name}"));
    let to = to_csv.parent().unwrap_or(Path::new(".")).join(&new);
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", from.display()))?;
    super::atomic::write_bytes(&to, &bytes)
        .with_context(|| format!("cannot write {}", to.display()))?;
    Ok(Some(new.display().to_string()))
}
