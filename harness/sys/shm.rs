//! /dev/shm as this process sees it: where it is and how full it is.

use nix::sys::statvfs::statvfs;

/// Where POSIX shared memory lives on Linux (shm_open names map to files here).
pub const SHM_DIR: &str = "/dev/shm";

/// (capacity, used) of /dev/shm in bytes; (0, 0) when it cannot be read.
pub fn usage() -> (u64, u64) {
    match statvfs(SHM_DIR) {
        Ok(s) => {
            let frag = s.fragment_size();
            let total = s.blocks() * frag;
            let used = s.blocks().saturating_sub(s.blocks_free()) * frag;
            (total, used)
        }
        Err(_) => (0, 0),
    }
}
