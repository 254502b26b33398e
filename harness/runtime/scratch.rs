//! A torch cell's folder on disk (`SCRATCH_ENV`: multiprocessing keeps its sockets there),
//! named with this harness run's token (`shmbench-cell-<token>_XXXXXX`), so that one a SIGKILLed
//! harness left is provably that run's: a later run's sweep removes it once the run is dead
//! (its owner record unlocked) and nothing of it is held (no process has a file of it open or
//! mapped, listens on a socket in it, or works in it). A folder of a live run, one named
//! otherwise, one another user owns, or a link is never touched.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sys::owner::{classify, Named};
use sys::{holders, proc_tree, run_owner};

/// The start of every such folder's name.
const PREFIX: &str = "shmbench-cell-";

/// The temporary directory's length past which a cell's folder goes under /tmp instead: a Unix
/// socket in it must fit in sun_path's 108 bytes, and Python's multiprocessing puts torch's
/// resource sharer at `DIR/shmbench-cell-<token>_XXXXXX/pymp-XXXXXXXX/listener-XXXXXXXX` (72
/// bytes past DIR with the 16-character token). Past that, binding fails in the worker and the
/// loader waits for a batch that never comes: a cell under a test's deep TMPDIR timed out at
/// step 1 in every run.
const SHORT_ENOUGH: usize = 31;

/// Where the folders go: the temporary directory, or /tmp where that is too deep.
fn base() -> PathBuf {
    let base = std::env::temp_dir();
    match base.as_os_str().len() > SHORT_ENOUGH {
        true => PathBuf::from("/tmp"),
        false => base,
    }
}

/// A folder for a cell, removed when dropped; None when this run has no owner record (nothing
/// is made that could not be proven its own) or the folder cannot be made.
pub(crate) fn make() -> Option<tempfile::TempDir> {
    let token = run_owner::this_run().ok()?;
    tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{token}_"))
        .tempdir_in(base())
        .ok()
}

/// Removes the folders of dead runs that nothing holds; their paths.
pub fn sweep() -> Vec<PathBuf> {
    let mut places = vec![base(), PathBuf::from("/tmp")];
    places.dedup();
    let me = nix::unistd::geteuid().as_raw();
    let mut removed = Vec::new();
    for place in places {
        let Ok(entries) = std::fs::read_dir(&place) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Named::Owned(token) = classify(name.as_encoded_bytes(), PREFIX) else {
                continue;
            };
            let dir = entry.path();
            // A directory itself (not a link to one) of this user's.
            let ours = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir() && m.uid() == me);
            if !ours {
                continue;
            }
            let Some(_dead) = run_owner::dead_run(&token) else {
                continue;
            };
            if !held(&dir) && std::fs::remove_dir_all(&dir).is_ok() {
                removed.push(dir);
            }
        }
    }
    removed
}

/// Whether a live process holds anything of `dir`: a file of it open or mapped, a socket bound
/// in it (a forkserver that outlived its harness), its working directory in it. Unreadable
/// counts as held.
fn held(dir: &Path) -> bool {
    let mut files = HashSet::new();
    for entry in walk(dir) {
        if let Ok(meta) = std::fs::symlink_metadata(&entry) {
            files.insert(holders::file_id(&meta));
        }
    }
    let open = match holders::held(&files) {
        Ok(held) => !held.is_empty(),
        Err(_) => return true,
    };
    let pids = proc_tree::all_pids();
    let working = pids.iter().any(|pid| {
        std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(dir))
    });
    open || working || bound(dir, &pids)
}

/// Whether a socket bound in `dir` is alive in any network namespace a process is in (a bound
/// socket's fd names no path, so only the kernel's socket tables show it).
fn bound(dir: &Path, pids: &[u32]) -> bool {
    let mut seen = HashSet::new();
    for pid in pids {
        let Ok(net) = std::fs::read_link(format!("/proc/{pid}/ns/net")) else {
            continue;
        };
        if !seen.insert(net) {
            continue;
        }
        let Ok(sockets) = std::fs::read_to_string(format!("/proc/{pid}/net/unix")) else {
            continue;
        };
        let here = sockets
            .lines()
            .filter_map(|l| l.split_whitespace().nth(7))
            .any(|path| Path::new(path).starts_with(dir));
        if here {
            return true;
        }
    }
    false
}

/// Every path under `dir`, links not followed.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut all = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(next) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(path.clone());
            }
            all.push(path);
        }
    }
    all
}
