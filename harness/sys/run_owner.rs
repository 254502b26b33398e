//! This harness process's own owner record (`sys::owner`), kept in a runtime folder of its
//! own: the token its memory cgroups and containers carry, so a later run can prove them a dead
//! run's before it removes them.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;

use super::owner::{claim_dead, classify, DeadOwner, Named, OwnerRecord, Token};

/// Where this harness run keeps its own owner record (for its memory cgroups and containers):
/// /run/shmbench as root, else `$XDG_RUNTIME_DIR/shmbench`, else a per-user folder in /tmp.
pub fn run_dir() -> PathBuf {
    if nix::unistd::geteuid().is_root() {
        return PathBuf::from("/run/shmbench");
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir).join("shmbench"),
        _ => std::env::temp_dir().join(format!("shmbench-{}", nix::unistd::geteuid())),
    }
}

/// Whether `dir` is this user's alone: a directory (not a symlink) it owns, that no one else
/// may write in. In /tmp another user can make it first: records planted there would make a
/// sweep start an engine or take a live run for dead, so nothing in it is trusted then.
fn private(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(dir)?;
    let mine = meta.uid() == nix::unistd::geteuid().as_raw();
    if meta.is_dir() && mine && meta.mode() & 0o022 == 0 {
        return Ok(());
    }
    Err(std::io::Error::other(format!(
        "{} is not this user's private directory (owner uid {}, mode {:o}): remove it, or set XDG_RUNTIME_DIR",
        dir.display(),
        meta.uid(),
        meta.mode() & 0o7777
    )))
}

/// [`run_dir`], if it is this user's alone (see [`private`]); records elsewhere are not read.
fn trusted_run_dir() -> Option<PathBuf> {
    let dir = run_dir();
    private(&dir).ok().map(|()| dir)
}

/// Prefix of this harness's run records in [`run_dir`].
pub const RUN_PREFIX: &str = "run-";

static RUN_RECORD: std::sync::OnceLock<Result<OwnerRecord, NoRunRecord>> =
    std::sync::OnceLock::new();

/// Why this run has no owner record (asked once, the answer kept, so it is cloneable).
#[derive(Clone, Debug, thiserror::Error)]
#[error("cannot make this run's owner record in {}: {why}", .dir.display())]
pub struct NoRunRecord {
    pub dir: PathBuf,
    #[source]
    pub why: std::sync::Arc<std::io::Error>,
}

/// This harness process's owner record, made on first use: the token its memory cgroups and
/// containers carry. An error says why none could be made (the caller then makes nothing).
pub fn this_run() -> Result<&'static Token, NoRunRecord> {
    RUN_RECORD
        .get_or_init(|| {
            let dir = run_dir();
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&dir)
                .and_then(|_| private(&dir))
                .and_then(|_| OwnerRecord::create(&dir, RUN_PREFIX))
                .map_err(|e| NoRunRecord {
                    dir: dir.clone(),
                    why: std::sync::Arc::new(e),
                })
        })
        .as_ref()
        .map(OwnerRecord::token)
        .map_err(Clone::clone)
}

/// Removes this run's record at a normal end, when its cgroups and containers are gone (the
/// lock itself goes with the process).
pub fn release_run() {
    if let Some(Ok(record)) = RUN_RECORD.get() {
        record.unlink_from_private_dir();
    }
}

/// Removes the records of dead harness runs for which `in_use` finds nothing left.
pub fn sweep_run_records(in_use: impl Fn(&Token) -> bool) {
    let Some(dir) = trusted_run_dir() else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Named::Record(token) = classify(entry.file_name().as_bytes(), RUN_PREFIX) else {
            continue;
        };
        if let Some(dead) = claim_dead(&dir, RUN_PREFIX, &token) {
            if !in_use(&token) {
                dead.remove_from_private_dir();
            }
        }
    }
}

/// Notes in this run's record that it used `what` (an engine whose leftovers only that engine
/// can list): a later sweep asks that engine only about runs that died having used it, so a
/// run that used none never starts one (rootless Podman's first command makes a pause process,
/// a lock in /dev/shm and a run directory).
pub fn note_use(what: &str) {
    if this_run().is_ok() {
        if let Some(Ok(record)) = RUN_RECORD.get() {
            let _ = record.note(what);
        }
    }
}

/// Whether a dead run's record notes that it used `what`.
pub fn a_dead_run_used(what: &str) -> bool {
    let Some(dir) = trusted_run_dir() else {
        return false;
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return false;
    };
    entries.flatten().any(|entry| {
        let Named::Record(token) = classify(entry.file_name().as_bytes(), RUN_PREFIX) else {
            return false;
        };
        let Some(_dead) = claim_dead(&dir, RUN_PREFIX, &token) else {
            return false;
        };
        // At most a few short lines: read a bounded prefix, never a whole file of elsewhere.
        let mut text = Vec::new();
        let read = std::fs::File::open(entry.path())
            .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, 4096), &mut text));
        read.is_ok()
            && text
                .split(|b| *b == b'\n')
                .any(|line| line == what.as_bytes())
    })
}

/// Whether the harness run that made `token` is provably dead (its record in [`run_dir`] is
/// there and unlocked). The returned lock keeps the answer true until it drops; remove it with
/// [`DeadOwner::remove`] once its things are gone.
pub fn dead_run(token: &Token) -> Option<DeadOwner> {
    claim_dead(&trusted_run_dir()?, RUN_PREFIX, token)
}
