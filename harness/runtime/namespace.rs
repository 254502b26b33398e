//! Runtime `namespace`: a fresh mount namespace whose /dev/shm is a tmpfs of the cell's size.
//!
//! The child unshares its mount namespace (through a user namespace when not root), makes every
//! mount private so nothing propagates back, and mounts the sized tmpfs on /dev/shm before it
//! execs `shmbench cell`. The host's /dev/shm is never touched, and the tmpfs disappears with the
//! last process of the cell: there is nothing to unmount or clean afterwards.

use super::child::{self, Isolation};
use super::{Progress, Runtime};
use crate::config::CellConfig;
use crate::record::CellRecord;

pub struct Namespace;

impl Runtime for Namespace {
    fn name(&self) -> &'static str {
        "namespace"
    }

    fn launch(&self, config: &CellConfig, progress: &mut dyn FnMut(Progress)) -> CellRecord {
        let Some(size) = config.shm_size else {
            return CellRecord::failed_to_run(
                config.clone(),
                crate::record::Status::Error,
                "runtime namespace needs shm-size".to_string(),
            );
        };
        child::run(config, Isolation::SizedShm(size.bytes()), progress)
    }
}

/// What the user should do when the namespace cannot be made.
pub const PERMISSION_HINT: &str = "could not create a private mount namespace with a tmpfs on /dev/shm. Run as root, or allow unprivileged user namespaces (sysctl user.max_user_namespaces > 0, and kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu), or use --runtime host to measure this machine's own /dev/shm";

/// Fails with what to do when this process cannot make the namespace: checked once before a run
/// so a matrix is refused up front instead of every cell failing.
pub fn check_permission() -> anyhow::Result<()> {
    child::probe_namespace()
        .map_err(|e| anyhow::anyhow!("runtime namespace: {PERMISSION_HINT} (the kernel said: {e})"))
}
