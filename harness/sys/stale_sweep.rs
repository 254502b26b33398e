//! Removing a tmpfs's stale entries (`shmbench shm --sweep-stale`): regular files no live
//! process holds, older than the age the user gives, and nothing else. Each is proven unheld at
//! the moment it goes: it is opened without following a symlink, through directories opened
//! the same way and checked to be on the same tmpfs, and must still be the file the audit saw;
//! the kernel then grants a write lease on it only when no other open file refers to it (while
//! the lease is held, another open waits), /proc is read again for any fd or mapping of it, and
//! only then is the name unlinked.

use std::collections::HashSet;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::holders;
use crate::model::shm_audit::{ShmAudit, StaleSweep};

/// Removes the audit's stale files at least `older_than` old.
pub(crate) fn sweep(root: &Path, audit: &ShmAudit, older_than: Duration) -> StaleSweep {
    let mut out = StaleSweep::default();
    let device = std::fs::symlink_metadata(root).map(|m| std::os::unix::fs::MetadataExt::dev(&m));
    let Ok(device) = device else {
        return out;
    };
    for entry in audit.stale() {
        if entry.age_s < older_than.as_secs_f64() {
            out.younger += 1;
            continue;
        }
        match remove_one(root, &entry.raw_path, device, entry.inode, older_than) {
            Ok(()) => out
                .removed
                .push((entry.name.clone(), entry.allocated_bytes)),
            Err(why) => out.kept.push((entry.name.clone(), why)),
        }
    }
    out
}

/// Removes the entry at `path` (its names under `root`, as raw bytes: a name need not be UTF-8)
/// when it is still inode `inode` on `device`, old enough, and provably unheld; else says why not.
fn remove_one(
    root: &Path,
    path: &[Vec<u8>],
    device: u64,
    inode: u64,
    older_than: Duration,
) -> Result<(), String> {
    let mut dir = open_at(None, root.as_os_str().as_bytes(), libc::O_DIRECTORY, device)?;
    let (file, dirs) = path.split_last().ok_or("an empty name")?;
    for part in dirs {
        dir = open_at(Some(&dir), part, libc::O_DIRECTORY, device)?;
    }
    let fd = open_at(Some(&dir), file, libc::O_NONBLOCK, device)?;
    let meta = fstat(&fd)?;
    if meta.st_ino != inode || (meta.st_mode & libc::S_IFMT) != libc::S_IFREG {
        return Err("it changed since the audit".into());
    }
    let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(meta.st_mtime.max(0) as u64);
    if modified.elapsed().unwrap_or_default() < older_than {
        return Err("it was written since the audit".into());
    }
    // SAFETY: fcntl on an fd we own; the lease goes with it.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETLEASE, libc::F_WRLCK) } != 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::EAGAIN) => "another process has it open (the kernel refused a lease)".into(),
            _ => format!("cannot take a lease on it to prove nobody opens it: {e}"),
        });
    }
    let id = (device, inode);
    match holders::held_by_others(&HashSet::from([id]), Some(std::process::id())) {
        Ok(held) if held.contains(&id) => return Err("a live process holds it".into()),
        Ok(_) => {}
        Err(e) => return Err(format!("nothing may be removed: {e}")),
    }
    let c_name = CString::new(file.as_slice()).map_err(|_| "a name with a NUL byte")?;
    // SAFETY: unlinkat relative to a directory fd we hold; it removes the name, not a target.
    if unsafe { libc::unlinkat(dir.as_raw_fd(), c_name.as_ptr(), 0) } != 0 {
        return Err(format!(
            "cannot remove it: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Opens `name` relative to `dir` (or as a path) without following a symlink, and checks it is
/// on `device`.
fn open_at(dir: Option<&OwnedFd>, name: &[u8], flags: i32, device: u64) -> Result<OwnedFd, String> {
    let c_name = CString::new(name).map_err(|_| "a name with a NUL byte")?;
    let at = dir.map_or(libc::AT_FDCWD, |d| d.as_raw_fd());
    let all = flags | libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: openat with a valid C string; the fd returned is ours.
    let raw = unsafe { libc::openat(at, c_name.as_ptr(), all) };
    if raw < 0 {
        let e = std::io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ELOOP) => "it is a symbolic link: never followed".into(),
            _ => format!("cannot open it: {e}"),
        });
    }
    // SAFETY: a fresh fd from openat.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    if fstat(&fd)?.st_dev != device {
        return Err("it is not on the audited tmpfs".into());
    }
    Ok(fd)
}

fn fstat(fd: &OwnedFd) -> Result<libc::stat, String> {
    // SAFETY: stat is plain data the kernel fills.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on an fd we own into a stat we own.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(format!(
            "cannot stat it: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(st)
}
