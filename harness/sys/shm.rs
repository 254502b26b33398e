//! /dev/shm as this process sees it: where it is and how full it is.

use nix::sys::statvfs::statvfs;

/// Where POSIX shared memory lives on Linux (shm_open names map to files here).
pub const SHM_DIR: &str = "/dev/shm";

/// Prefix of every name shmbench gives in /dev/shm (`cell::loader::segment` says what follows
/// it; `sys::owner` how a run's token proves whose it is).
pub const NAME_PREFIX: &str = "shmbench_";

/// (capacity, used) of /dev/shm in bytes; (0, 0) when it cannot be read.
pub fn usage() -> (u64, u64) {
    in_bytes(statvfs(SHM_DIR))
}

/// (capacity, used) of the filesystem at `path` in bytes; (0, 0) when it cannot be read.
pub fn usage_of(path: &std::path::Path) -> (u64, u64) {
    in_bytes(statvfs(path))
}

fn in_bytes(s: nix::Result<nix::sys::statvfs::Statvfs>) -> (u64, u64) {
    match s {
        Ok(s) => {
            let frag = s.fragment_size();
            let total = s.blocks() * frag;
            let used = s.blocks().saturating_sub(s.blocks_free()) * frag;
            (total, used)
        }
        Err(_) => (0, 0),
    }
}

/// /dev/shm held open, for a sampler: statfs through the fd skips the path walk each time.
pub struct OpenShm(std::fs::File);

impl OpenShm {
    pub fn open() -> Option<OpenShm> {
        std::fs::File::open(SHM_DIR).ok().map(OpenShm)
    }

    /// (capacity, used) in bytes, as [`usage`].
    pub fn usage(&self) -> (u64, u64) {
        in_bytes(nix::sys::statvfs::fstatvfs(&self.0))
    }
}

/// One mount of a filesystem as /proc/self/mountinfo lists it: this mount's options and its
/// super block's (the filesystem's own, after the ` - ` separator).
pub struct MountOptions {
    /// The mount's own options (`ro`, `noatime`, `relatime`, ...).
    pub mount: String,
    /// The filesystem's super block options.
    pub filesystem: String,
}

/// Every mount of the filesystem on `device` seen from this mount namespace.
pub fn mounts_of(device: u64) -> Vec<MountOptions> {
    let wanted = format!(
        "{}:{}",
        nix::sys::stat::major(device),
        nix::sys::stat::minor(device)
    );
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    mountinfo
        .lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            if fields.get(2) != Some(&wanted.as_str()) {
                return None;
            }
            // `fstype source options`
            Some(MountOptions {
                mount: fields.get(5)?.to_string(),
                filesystem: after.split(' ').nth(2)?.to_string(),
            })
        })
        .collect()
}

/// Whether a mount's comma-separated `options` hold `option`.
pub fn has_option(options: &str, option: &str) -> bool {
    options.split(',').any(|o| o == option)
}

/// Whether the filesystem on `device` itself is read-only (its super block's options), as
/// opposed to a read-only view of it: a health check's pod mounts the host's /dev/shm
/// read-only, while the jobs write through their own mounts. None when no mount of it is seen
/// here.
pub fn filesystem_read_only(device: u64) -> Option<bool> {
    let first = mounts_of(device).into_iter().next()?;
    Some(has_option(&first.filesystem, "ro"))
}
