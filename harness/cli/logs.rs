//! The log files `k8s collect` and `slurm collect` read from a user's directories: regular files
//! only, in name order, links not followed (the directory is the user's, its names untrusted).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The regular files of a directory whose names `keep` accepts, in name order (links are not
/// followed: the directory is the user's, its names untrusted).
pub(super) fn files_in(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| e.file_name().to_str().is_some_and(&keep))
        .map(|e| e.path())
        .collect();
    files.sort();
    Ok(files)
}
