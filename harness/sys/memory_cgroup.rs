//! A memory cgroup around one cell, for `memory` limits outside Docker (a namespace cell on the
//! host, or a VM cell in its guest): tmpfs pages are charged to the cgroup of the process that
//! faults them in, so a limit below the batches in flight ends the cell by the OOM killer
//! (recorded as `oom`) instead of SIGBUS.
//!
//! cgroup v2 (`memory.max`, `memory.swap.max`) or v1 (`memory.limit_in_bytes`,
//! `memory.memsw.limit_in_bytes`); the cgroup is created beside this process's own and removed
//! when the cell is gone.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
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
        let name = format!("shmbench-{}-{n}-{label}", std::process::id());
        let (dir, files): (PathBuf, [(&str, String); 2]) = match super::cgroup::version() {
            Some(2) => (
                PathBuf::from("/sys/fs/cgroup").join(&name),
                [
                    ("memory.max", limit.to_string()),
                    ("memory.swap.max", "0".into()),
                ],
            ),
            Some(1) => (
                PathBuf::from("/sys/fs/cgroup/memory").join(&name),
                [
                    ("memory.limit_in_bytes", limit.to_string()),
                    ("memory.memsw.limit_in_bytes", limit.to_string()),
                ],
            ),
            _ => {
                return Err(anyhow!(
                    "no memory cgroup is mounted: a memory limit needs one (or use runtime docker)"
                ))
            }
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

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // The cell's processes are gone; the kernel may take a moment to let the group go.
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::fs::remove_dir(&self.dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
