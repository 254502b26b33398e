//! Which of the engine's shmbench images a live run uses. Images are per binary, and a run
//! prunes the images of other binaries so they do not pile up; but another user's run of another
//! binary may be using one (between its cells no container holds it, so the engine's own refusal
//! proves nothing). So every run holds a shared `flock` on `<run dir>/image-<tag>.lock` for the
//! image it uses, taken before it looks for the image and held until it exits; an image is
//! pruned only while its lock can be taken exclusively (no live run uses it), as owner records
//! prove a run dead (`sys::owner`).

use std::fs::File;
use std::path::PathBuf;
use std::sync::Mutex;

use super::owner::flock;
use super::run_owner::run_dir;

/// The locks this process holds, kept open (so held) until it exits.
static HELD: Mutex<Vec<File>> = Mutex::new(Vec::new());

/// The lock file of image `tag` (its name made a file name: `:` and `/` as `_`).
fn lock_path(tag: &str) -> PathBuf {
    let name: String = tag
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    run_dir().join(format!("image-{name}.lock"))
}

fn open(tag: &str) -> std::io::Result<(File, PathBuf)> {
    let path = lock_path(tag);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)?;
    Ok((file, path))
}

/// Marks image `tag` as used by this process until it exits. A failure (no run directory)
/// leaves it unmarked: another run may then prune it, as before these locks.
pub fn hold(tag: &str) {
    if let Ok((file, _)) = open(tag) {
        if flock(&file, libc::LOCK_SH).is_ok() {
            HELD.lock().unwrap_or_else(|e| e.into_inner()).push(file);
        }
    }
}

/// Image `tag` proven unused by any live run: its lock, held exclusively until this drops.
pub struct Unused {
    _lock: File,
}

/// Whether a live run holds image `tag`'s lock now (what `docker images` cannot say).
pub fn in_use(tag: &str) -> bool {
    claim_unused(tag).is_none()
}

/// Whether no live run uses image `tag`: its lock can be taken exclusively now (an image of a
/// binary older than these locks has none, and is unused by this proof).
pub fn claim_unused(tag: &str) -> Option<Unused> {
    let (file, _) = open(tag).ok()?;
    flock(&file, libc::LOCK_EX | libc::LOCK_NB).ok()?;
    Some(Unused { _lock: file })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_a_live_run_holds_is_never_claimed_unused() {
        let tag = format!("shmbench-test:{}-held", std::process::id());
        let other = format!("shmbench-test:{}-free", std::process::id());
        hold(&tag);
        // flock locks belong to open files: this process's own claim conflicts with its hold,
        // as another process's would.
        assert!(claim_unused(&tag).is_none());
        assert!(claim_unused(&other).is_some());
        for t in [&tag, &other] {
            let _ = std::fs::remove_file(lock_path(t));
        }
    }
}
