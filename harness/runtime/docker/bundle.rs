//! `--image IMG`: a cell in the user's own image (their training image, with its Python and
//! torch). Nothing is added to that image: shmbench's binary, its dynamic loader and the
//! libraries it links are written once per binary into a host directory (the *bundle*) and bound
//! read-only at [`IN_CONTAINER`]. The cell starts through the bundle's own loader
//! (`ld.so --library-path lib shmbench cell ...`), so it runs whatever libc the image has (or
//! none), and the Python it starts sees the image's libraries only: the loader's library path is
//! not inherited, unlike `LD_LIBRARY_PATH`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::image::BuildContext;
use sys::reexec::{BUNDLE_BINARY, BUNDLE_LIBS, BUNDLE_LOADER};

/// Where the bundle is mounted in the user's container.
pub const IN_CONTAINER: &str = "/.shmbench";

/// The directory bundles live in: `<shmbench's cache>/bundles`.
fn bundles_dir() -> Result<PathBuf> {
    Ok(crate::cache_dir()
        .context("no place for the bundle --image mounts")?
        .join("bundles"))
}

/// Makes sure the bundle of this binary exists on the host; returns its directory. It is written
/// under a temporary name and renamed, so a concurrent or interrupted run never sees half of one;
/// bundles of earlier binaries are removed.
pub fn ensure() -> Result<PathBuf> {
    let context = BuildContext::of_this_binary()?;
    let Some(loader) = context.interpreter() else {
        bail!("this shmbench binary is statically linked; --image needs the dynamically linked build (its loader runs it inside the image)");
    };
    let parent = bundles_dir()?;
    let dir = parent.join(context.hash());
    if dir.join(BUNDLE_BINARY).exists() {
        return Ok(dir);
    }
    fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(&parent)
        .with_context(|| format!("creating a directory in {}", parent.display()))?;
    let root = staging.path();
    let write = |path: &Path, bytes: &[u8]| -> Result<()> {
        fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))?;
        fs::set_permissions(path, fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", path.display()))
    };
    fs::create_dir(root.join(BUNDLE_LIBS))?;
    write(&root.join(BUNDLE_BINARY), context.binary())?;
    write(&root.join(BUNDLE_LOADER), loader)?;
    for (name, bytes) in context.libraries() {
        write(&root.join(BUNDLE_LIBS).join(name), bytes)?;
    }
    // Any user of the container (images often run as non-root) must be able to enter it.
    fs::set_permissions(root, fs::Permissions::from_mode(0o755))?;
    fs::set_permissions(root.join(BUNDLE_LIBS), fs::Permissions::from_mode(0o755))?;
    let staged = staging.keep();
    if let Err(e) = fs::rename(&staged, &dir) {
        let _ = fs::remove_dir_all(&staged);
        // Another run made it first.
        if !dir.join(BUNDLE_BINARY).exists() {
            return Err(e).with_context(|| format!("moving the bundle into {}", dir.display()));
        }
    }
    prune_others(&parent, &dir);
    Ok(dir)
}

/// Removes bundles of earlier binaries (a few MiB each).
fn prune_others(parent: &Path, keep: &Path) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let staging = entry.file_name().to_string_lossy().starts_with(".staging-");
        if path != keep && !staging {
            let _ = fs::remove_dir_all(&path);
        }
    }
}
