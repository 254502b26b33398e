//! /dev/shm as this process sees it: where it is and how full it is.

use nix::sys::statvfs::statvfs;

/// Where POSIX shared memory lives on Linux (shm_open names map to files here).
pub(crate) const SHM_DIR: &str = "/dev/shm";

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
