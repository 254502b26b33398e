//! The VM's initramfs: this shmbench binary as `/init` with the shared libraries it maps and the
//! ELF interpreter (the same files as the Docker image), `/dev/console` for the kernel to give
//! init its stdio, and the mount points the guest init fills. Cached by the binary's hash
//! (`~/.cache/shmbench/initramfs/<hash>.cpio`); a cell's config is a second, small archive
//! appended to it (`/cell.json`), which the kernel unpacks over the first.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::cpio::Archive;
use crate::cache_dir;
use crate::docker::image::{BuildContext, BINARY_IN_IMAGE};
use cell::protocol::GUEST_CELL_FILE;

/// How long an archive no run has used is kept: another shmbench binary (another checkout, a
/// CI run beside this one) may be booting VMs from its own meanwhile.
const UNUSED_FOR: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The base archive for this binary, built once; its use is marked by its modification time.
pub fn base() -> Result<PathBuf> {
    let context = BuildContext::of_this_binary()?;
    let dir = cache_dir()?.join("initramfs");
    let path = dir.join(format!("{}.cpio", context.hash()));
    if path.is_file() {
        let used = std::fs::File::options().append(true).open(&path);
        let _ = used.and_then(|f| f.set_modified(std::time::SystemTime::now()));
        return Ok(path);
    }
    let mut archive = Archive::default();
    let mut made = Vec::new();
    for dir in ["dev", "proc", "sys", "tmp"] {
        archive.dir(dir);
        made.push(dir.to_string());
    }
    archive.char_device("dev/console", 5, 1);
    for (file, bytes) in context.files() {
        archive.file_with_parents(file, bytes, 0o755, &mut made);
    }
    archive.symlink("init", BINARY_IN_IMAGE);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // Archives of earlier binaries no run has used for a day are of no further use. (Removing
    // every other archive broke the VM cells of another binary running beside this one: its
    // archive vanished between two of its cells.)
    for old in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let idle = old.metadata().and_then(|m| m.modified()).ok();
        let idle = idle.and_then(|t| t.elapsed().ok());
        if idle.is_some_and(|idle| idle > UNUSED_FOR) {
            let _ = std::fs::remove_file(old.path());
        }
    }
    let partial = path.with_extension("partial");
    std::fs::write(&partial, archive.finish())
        .with_context(|| format!("cannot write {}", partial.display()))?;
    std::fs::rename(&partial, &path)?;
    Ok(path)
}

/// The small archive that carries one cell's config.
pub fn cell(config_json: &str) -> Vec<u8> {
    let mut archive = Archive::default();
    archive.file(GUEST_CELL_FILE, config_json.as_bytes(), 0o644);
    archive.finish()
}
