//! The bottom layer: thin readers and wrappers of Linux facilities (processes through pidfds,
//! cgroups (the one this process is in, and a memory-limited one for a child), signals, /dev/shm
//! usage, perf counters, the environment fingerprint, the clock, how to start shmbench again).
//! Nothing here knows about cells, loaders or results.

pub mod cgroup;
pub mod child_fd;
pub mod clock;
pub mod detect;
pub mod elf_strip;
pub mod fingerprint;
pub mod holders;
pub mod image_use;
pub mod lease_removal;
pub mod memory_cgroup;
pub mod mount_points;
pub mod owner;
pub mod perf;
pub mod proc_census;
pub mod proc_tree;
pub mod process;
pub mod reexec;
pub mod run_owner;
pub mod shm;
pub mod signals;
