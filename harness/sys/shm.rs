//! /dev/shm as this process sees it: where it is and how full it is.

use nix::sys::statvfs::statvfs;

use crate::model::shm_audit::AtimeUpdates;

/// Where POSIX shared memory lives on Linux (shm_open names map to files here).
pub(crate) const SHM_DIR: &str = "/dev/shm";

/// Prefix of every name shmbench gives in /dev/shm (`cell::loader::segment` says what follows
/// it; `sys::owner` how a run's token proves whose it is).
pub(crate) const NAME_PREFIX: &str = "shmbench_";

/// (capacity, used) of /dev/shm in bytes; (0, 0) when it cannot be read.
pub(crate) fn usage() -> (u64, u64) {
    in_bytes(statvfs(SHM_DIR))
}

/// (capacity, used) of the filesystem at `path` in bytes; (0, 0) when it cannot be read.
pub(crate) fn usage_of(path: &std::path::Path) -> (u64, u64) {
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

/// How the mount holding `root` (a canonical path on device `device`) updates access times:
/// its per-mount options in /proc/self/mountinfo (`noatime`, `relatime`, or neither: strict).
/// Unknown mounts are taken as `noatime`, which proves nothing unread.
pub(crate) fn atime_updates(root: &std::path::Path, device: u64) -> AtimeUpdates {
    let wanted = format!(
        "{}:{}",
        nix::sys::stat::major(device),
        nix::sys::stat::minor(device)
    );
    let root = root.to_string_lossy();
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    // The longest mount point on the device that holds the root: the mount the root is in.
    let options = mountinfo
        .lines()
        .map(|l| l.split(' ').collect::<Vec<_>>())
        .filter(|f| f.len() > 5 && f[2] == wanted)
        .filter(|f| {
            let point = f[4].replace("\\040", " ");
            point == "/" || root == point || root.starts_with(&format!("{point}/"))
        })
        .max_by_key(|f| f[4].len())
        .map(|f| f[5].to_string());
    match options {
        None => AtimeUpdates::Never,
        Some(o) if o.split(',').any(|x| x == "noatime") => AtimeUpdates::Never,
        Some(o) if o.split(',').any(|x| x == "relatime") => AtimeUpdates::Relative,
        Some(_) => AtimeUpdates::Strict,
    }
}
