//! A memory cgroup around one cell, for `memory` limits outside Docker (a namespace cell on the
//! host, or a VM cell in its guest): tmpfs pages are charged to the cgroup of the process that
//! faults them in, so a limit below the batches in flight ends the cell by the OOM killer
//! (recorded as `oom`) instead of SIGBUS.
//!
//! cgroup v2 (`memory.max`, `memory.swap.max`) or v1 (`memory.limit_in_bytes`,
//! `memory.memsw.limit_in_bytes`); the cgroup is created at the hierarchy's root and removed
//! when the cell is gone. Its name carries this harness run's token (`sys::run_owner::this_run`), so
//! a later run can prove a group left by a SIGKILLed harness dead and remove it ([`sweep`]).

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

pub struct MemoryCgroup {
    dir: PathBuf,
    procs: OwnedFd,
}

fn write(path: PathBuf, value: &str) -> Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    f.write_all(value.as_bytes())
        .with_context(|| format!("writing {value} to {}", path.display()))
}

impl MemoryCgroup {
    /// Creates a cgroup limited to `limit` bytes (no swap).
    pub fn create(limit: u64, label: &str) -> Result<MemoryCgroup> {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let token = super::run_owner::this_run().map_err(|e| anyhow!("{e}"))?;
        let name = format!("{GROUP_PREFIX}{token}_{n}-{label}");
        let Some(root) = hierarchy() else {
            return Err(anyhow!(
                "no memory cgroup is mounted: a memory limit needs one (or use runtime docker)"
            ));
        };
        let (dir, files): (PathBuf, [(&str, String); 2]) = match super::cgroup::version() {
            Some(2) => (
                root.join(&name),
                [
                    ("memory.max", limit.to_string()),
                    ("memory.swap.max", "0".into()),
                ],
            ),
            _ => (
                root.join(&name),
                [
                    ("memory.limit_in_bytes", limit.to_string()),
                    ("memory.memsw.limit_in_bytes", limit.to_string()),
                ],
            ),
        };
        std::fs::create_dir(&dir).with_context(|| {
            format!(
                "cannot create the memory cgroup {} (run as root, or use runtime docker)",
                dir.display()
            )
        })?;
        let group = MemoryCgroup {
            procs: std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))
                .map(OwnedFd::from)
                .with_context(|| format!("opening {}/cgroup.procs", dir.display()))?,
            dir,
        };
        for (i, (file, value)) in files.iter().enumerate() {
            let path = group.dir.join(file);
            // The swap limit is optional (no swap accounting): the memory limit is not.
            if i == 1 && !path.exists() {
                continue;
            }
            write(path, value)?;
        }
        Ok(group)
    }

    /// Whether the OOM killer has ended any of the cell's processes: a main killed for the
    /// group's limit prints no record, and this says why it is gone.
    pub fn oom_killed(&self) -> bool {
        super::cgroup::oom_kills_in(&self.dir).is_some_and(|n| n > 0)
    }

    /// The cgroup.procs fd a child writes its own pid to before exec.
    pub fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }
}

/// Writes the calling process's pid to `fd` (async-signal-safe: no allocation).
pub fn join(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: getpid and write on a stack buffer.
    unsafe {
        let mut pid = libc::getpid() as u64;
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        loop {
            i -= 1;
            buf[i] = b'0' + (pid % 10) as u8;
            pid /= 10;
            if pid == 0 {
                break;
            }
        }
        let n = buf.len() - i;
        if libc::write(fd, buf[i..].as_ptr() as *const libc::c_void, n) != n as isize {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Prefix of the groups shmbench makes: `shmbench-<run token>_<n>-<cell>`.
const GROUP_PREFIX: &str = "shmbench-";

/// Where memory cgroups are made: the v2 root, or v1's memory hierarchy.
fn hierarchy() -> Option<PathBuf> {
    match super::cgroup::version() {
        Some(2) => Some(PathBuf::from("/sys/fs/cgroup")),
        Some(1) => Some(PathBuf::from("/sys/fs/cgroup/memory")),
        _ => None,
    }
}

/// Removes the memory cgroups of harness runs that are provably dead (their owner record is
/// unlocked: `sys::run_owner::dead_run`), first killing any process still in one (it can only be a
/// leftover of that run's cell). Groups of live runs and groups named otherwise are not touched.
/// Returns the groups removed.
pub fn sweep() -> Vec<String> {
    let mut removed = Vec::new();
    let Some(root) = hierarchy() else {
        return removed;
    };
    let Ok(entries) = std::fs::read_dir(&root) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let owner = match super::owner::classify(name.as_bytes(), GROUP_PREFIX) {
            super::owner::Named::Owned(token) => token,
            _ => continue,
        };
        let Some(_dead) = super::run_owner::dead_run(&owner) else {
            continue;
        };
        let dir = entry.path();
        kill_members(&dir);
        if remove_within(&dir, Duration::from_secs(2)) {
            removed.push(dir.display().to_string());
        }
    }
    removed
}

/// Whether any group of `token`'s run is still there.
pub fn exists_for(token: &super::owner::Token) -> bool {
    let Some(entries) = hierarchy().and_then(|root| std::fs::read_dir(root).ok()) else {
        return false;
    };
    entries.flatten().any(|e| {
        super::owner::classify(e.file_name().as_bytes(), GROUP_PREFIX)
            == super::owner::Named::Owned(token.clone())
    })
}

/// SIGKILLs every process in the group at `dir` (v2's cgroup.kill where the kernel has it).
fn kill_members(dir: &std::path::Path) {
    if write(dir.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    for _ in 0..50 {
        let pids = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        let pids: Vec<i32> = pids
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.is_empty() {
            return;
        }
        for pid in pids {
            // SAFETY: plain syscall; the pid is a member of a dead run's group.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// rmdir with retries: the kernel may take a moment to let an emptied group go.
fn remove_within(dir: &std::path::Path, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if std::fs::remove_dir(dir).is_ok() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // The cell's processes are gone; the kernel may take a moment to let the group go.
        remove_within(&self.dir, Duration::from_secs(5));
    }
}
