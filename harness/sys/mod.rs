//! The bottom layer: thin readers and wrappers of Linux facilities (processes through pidfds,
//! cgroups (the one this process is in, and a memory-limited one for a child), signals, /dev/shm
//! usage, perf counters, the environment fingerprint, the clock, how to start shmbench again).
//! Nothing here knows about cells, loaders or results.

pub mod cgroup;
pub(crate) mod clock;
pub mod detect;
pub(crate) mod elf_strip;
pub(crate) mod fingerprint;
pub(crate) mod holders;
pub mod image_use;
pub(crate) mod lease_removal;
pub(crate) mod memory_cgroup;
pub(crate) mod owner;
pub(crate) mod perf;
pub(crate) mod proc_census;
pub mod proc_tree;
pub(crate) mod process;
pub(crate) mod reexec;
pub(crate) mod run_owner;
pub mod shm;
pub(crate) mod shm_audit;
pub(crate) mod shm_staleness;
pub(crate) mod signals;
pub(crate) mod slurm;
pub(crate) mod stale_sweep;
