//! The audit surface: a live tmpfs (a node's /dev/shm) audited with every process that holds
//! its files, which of them are stale and the proof, and their removal on request
//! (`shmbench shm`, docs/SAFETY.md).
//!
//! - [`live`]: the audit itself, a walk of the tmpfs and of every process's fds and mappings;
//!   [`findings`] what it finds, [`workload`] the container, pod or job a holder belongs to.
//! - [`staleness`]: which entries are stale, and the proof: unheld, and the owner a name
//!   carries ([`owner`]) proven gone.
//! - [`sweep`]: the removal of stale entries, each through `sys::lease_removal`.
//! - [`text`]: the audit and a sweep in words.
//!
//! It depends on the core below it; the fleet's node check reads a node through it.

pub mod findings;
pub mod listing;
pub mod live;
pub mod owner;
pub mod staleness;
pub mod sweep;
pub mod workload;
