//! Why a process got a Bus error. A SIGBUS in a DataLoader worker prints the same sentence
//! whatever its cause: a full tmpfs, a memory cgroup's limit, a file truncated under its mapping,
//! hugetlbfs without pages, a hardware memory error, or a `kill`. The kernel tells them apart
//! when it delivers the signal (si_code, si_addr, and at that instant the mapping behind the
//! address and the free space of its file system), so this crate catches the fault there and
//! names the cause with the facts that decided it and the fix for that cause.
//!
//! - [`tracer`] follows a job's every process with ptrace, stops each SIGBUS and SIGSEGV at its
//!   delivery, reads the evidence and delivers the signal unchanged; it is also the job's reaper,
//!   and says how each process ended ([`exit`]).
//! - [`evidence`] reads a stopped process's fault: siginfo, [`mapping`] (the file and file
//!   system behind the address), [`memory`] (its memory cgroup's counters), fds and mappings.
//! - [`fault`] is that evidence as plain data; [`cause`] the closed set of causes and an
//!   [`cause::Explanation`]; [`judge`] decides one ending's cause.
//!
//! It depends on no other crate of shmbench's: the model's records carry its types, and the
//! cells (a watched command's, the loaders') run their jobs under its tracer.

pub mod cause;
pub mod evidence;
pub mod exit;
pub mod fault;
pub mod judge;
pub mod mapping;
pub mod memory;
pub mod tracer;

pub use cause::{Cause, Explanation};
pub use exit::Exit;
pub use fault::Fault;
pub use tracer::Traced;
