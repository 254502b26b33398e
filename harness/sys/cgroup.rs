//! The memory cgroup this process runs in (v1 or v2): its limit and its OOM-kill count, because
//! tmpfs pages are charged to it and a cell can die by the OOM killer instead of SIGBUS.

use std::path::{Path, PathBuf};

/// cgroup hierarchy version in use for memory: 1 or 2 (None if no memory cgroup is mounted).
pub fn version() -> Option<u8> {
    if std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists() {
        Some(2)
    } else if std::path::Path::new("/sys/fs/cgroup/memory").exists() {
        Some(1)
    } else {
        None
    }
}

/// Directory of this process's memory cgroup.
fn memory_dir() -> Option<PathBuf> {
    memory_dir_of("self")
}

/// Directory of the memory cgroup of the process `pid` (`self`, or a number) names.
fn memory_dir_of(pid: &str) -> Option<PathBuf> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let path = path.trim_start_matches('/');
        if controllers.is_empty() && version() == Some(2) {
            return Some(PathBuf::from("/sys/fs/cgroup").join(path));
        }
        if controllers.split(',').any(|c| c == "memory") {
            let dir = PathBuf::from("/sys/fs/cgroup/memory").join(path);
            // Inside a container the v1 path names the host's view; the mount shows our own.
            // Another process's cgroup not in our view is not known.
            return match (dir.exists(), pid) {
                (true, _) => Some(dir),
                (false, "self") => Some(PathBuf::from("/sys/fs/cgroup/memory")),
                (false, _) => None,
            };
        }
    }
    None
}

fn read_keyed(file: &str, key: &str) -> Option<u64> {
    read_keyed_in(&memory_dir()?, file, key)
}

fn read_keyed_in(dir: &Path, file: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(dir.join(file)).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == key).then(|| v.trim().parse().ok()).flatten()
    })
}

/// How many processes the OOM killer has killed in this memory cgroup so far.
pub fn oom_kills() -> Option<u64> {
    oom_kills_in(&memory_dir()?)
}

/// How many processes the OOM killer has killed in the memory cgroup at `dir` (v2's
/// memory.events or v1's memory.oom_control).
pub fn oom_kills_in(dir: &Path) -> Option<u64> {
    read_keyed_in(dir, "memory.events", "oom_kill")
        .or_else(|| read_keyed_in(dir, "memory.oom_control", "oom_kill"))
}

/// The memory cgroup's use in bytes (the tmpfs pages charged to it included), its file held
/// open so a sampler reads it without opening it each time (reading it again from offset 0 makes
/// the kernel write it afresh).
pub struct UsageFile(std::fs::File);

impl UsageFile {
    pub fn open() -> Option<UsageFile> {
        let dir = memory_dir()?;
        ["memory.current", "memory.usage_in_bytes"]
            .into_iter()
            .find_map(|f| std::fs::File::open(dir.join(f)).ok())
            .map(UsageFile)
    }

    pub fn bytes(&self) -> Option<u64> {
        let mut buf = [0u8; 32];
        let n = std::os::unix::fs::FileExt::read_at(&self.0, &mut buf, 0).ok()?;
        std::str::from_utf8(&buf[..n]).ok()?.trim().parse().ok()
    }
}

/// Shared memory (tmpfs pages, /dev/shm's among them) charged to this process's memory cgroup,
/// from memory.stat (`shmem` in v1 and v2).
pub fn shmem_bytes() -> Option<u64> {
    read_keyed("memory.stat", "shmem")
}

/// The memory limit in force in bytes, None when unlimited or unknown: the least of this
/// cgroup's and its ancestors' up to the hierarchy's root, since a parent's limit bounds its
/// children (Slurm sets `--mem` on the job's cgroup, and its tasks sit below it).
pub fn memory_limit() -> Option<u64> {
    least_limit(&memory_dir()?, memory_root())
}

/// The root of the memory hierarchy, where limits stop being a cgroup's own.
fn memory_root() -> &'static Path {
    match version() {
        Some(2) => Path::new("/sys/fs/cgroup"),
        _ => Path::new("/sys/fs/cgroup/memory"),
    }
}

/// The memory cgroup that pays for another process's pages, as this machine sees it (a
/// container's process, found from outside: the engine's word that it set a limit is not
/// proof).
pub struct ChargedTo {
    pub dir: PathBuf,
    /// The limit set on that cgroup itself (None: none).
    pub own: Option<u64>,
    /// The least limit in force on it, its ancestors' included (None: unlimited).
    pub least: Option<u64>,
}

pub fn memory_limit_of(pid: u32) -> Option<ChargedTo> {
    let dir = memory_dir_of(&pid.to_string())?;
    Some(ChargedTo {
        own: limit_in(&dir),
        least: least_limit(&dir, memory_root()),
        dir,
    })
}

/// The least limit set on `dir` or any ancestor of it up to `root`.
fn least_limit(dir: &Path, root: &Path) -> Option<u64> {
    dir.ancestors()
        .take_while(|d| d.starts_with(root))
        .filter_map(limit_in)
        .min()
}

/// The limit set on the memory cgroup at `dir` alone, None when unlimited or unreadable.
fn limit_in(dir: &Path) -> Option<u64> {
    let raw = std::fs::read_to_string(dir.join("memory.max"))
        .or_else(|_| std::fs::read_to_string(dir.join("memory.limit_in_bytes")))
        .ok()?;
    let value: u64 = raw.trim().parse().ok()?;
    // v1 reports "unlimited" as a huge page-aligned number (v2 as "max", which does not parse).
    (value < (1u64 << 62)).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_in_force_is_the_least_up_the_hierarchy() {
        let root = tempfile::tempdir().unwrap();
        let job = root.path().join("slurm/uid_0/job_7");
        let task = job.join("step_batch/task_0");
        std::fs::create_dir_all(&task).unwrap();
        // v1: unlimited is a huge number; v2: "max".
        std::fs::write(
            root.path().join("memory.limit_in_bytes"),
            "9223372036854771712\n",
        )
        .unwrap();
        std::fs::write(job.join("memory.limit_in_bytes"), "314572800\n").unwrap();
        std::fs::write(task.join("memory.max"), "max\n").unwrap();
        assert_eq!(least_limit(&task, root.path()), Some(314_572_800));
        // Nothing above the root counts, and no limit anywhere is none.
        assert_eq!(least_limit(&task, &job.join("step_batch")), None);
    }
}
