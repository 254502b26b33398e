//! The memory cgroup a process is charged to, and its counters: limit, use, the tmpfs pages in
//! it, how often the limit was hit and how many processes its OOM killer took (cgroup v2's
//! memory.events / memory.stat, v1's memory.failcnt / memory.oom_control / memory.stat).

use std::path::{Path, PathBuf};

use crate::fault::MemoryCgroup;

/// The counters of the memory cgroup of `pid`, as this process's /sys/fs/cgroup shows it.
pub fn of(pid: u32) -> Option<MemoryCgroup> {
    let (dir, path) = dir_of(pid)?;
    let v2 = dir.join("memory.events").exists();
    let read = |file: &str| std::fs::read_to_string(dir.join(file)).ok();
    let number = |file: &str| read(file).and_then(|t| t.trim().parse::<u64>().ok());
    let limit = number(if v2 {
        "memory.max"
    } else {
        "memory.limit_in_bytes"
    })
    // v1 says "unlimited" with a huge number, v2 with "max" (which does not parse).
    .filter(|&l| l < 1 << 62);
    let stat = read("memory.stat").unwrap_or_default();
    let (limit_hits, oom_kills) = if v2 {
        let events = read("memory.events").unwrap_or_default();
        (keyed(&events, "max"), keyed(&events, "oom_kill"))
    } else {
        let control = read("memory.oom_control").unwrap_or_default();
        (number("memory.failcnt"), keyed(&control, "oom_kill"))
    };
    Some(MemoryCgroup {
        path,
        limit_bytes: limit,
        usage_bytes: number(if v2 {
            "memory.current"
        } else {
            "memory.usage_in_bytes"
        }),
        shmem_bytes: keyed(&stat, "shmem"),
        limit_hits,
        oom_kills,
    })
}

/// The value of `key` in a `key value` per line file.
fn keyed(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// The directory of the memory cgroup of `pid`, and its path in the hierarchy.
fn dir_of(pid: u32) -> Option<(PathBuf, String)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let unified = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    text.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let root = if controllers.is_empty() && unified {
            "/sys/fs/cgroup"
        } else if controllers.split(',').any(|c| c == "memory") {
            "/sys/fs/cgroup/memory"
        } else {
            return None;
        };
        let dir = Path::new(root).join(path.trim_start_matches('/'));
        // A path outside this view (another cgroup namespace's) is not known.
        dir.exists().then(|| (dir, path.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_has_a_memory_cgroup_or_none_readable() {
        // Whatever the host: never a panic, and counters that parse when present.
        if let Some(m) = of(std::process::id()) {
            assert!(m.path.starts_with('/'), "{m:?}");
        }
        assert_eq!(keyed("max 3\noom_kill 1\n", "oom_kill"), Some(1));
        assert_eq!(keyed("oom_kill_disable 0\n", "oom_kill"), None);
    }
}
