//! A fault signal as the kernel delivered it, and what was read at that instant: the siginfo,
//! the mapping that holds the faulting address, the file and the file system behind it, the
//! memory cgroup's counters and the process's fds and mappings. Plain data; [`crate::evidence`]
//! reads it, [`crate::judge`] names its cause.

use serde::{Deserialize, Serialize};

/// One SIGBUS or SIGSEGV caught at its delivery to a process of the job.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fault {
    /// The process (thread group) it was delivered to, and its command line, shortened.
    pub pid: u32,
    pub command: String,
    pub signal: i32,
    /// The siginfo's si_code: above 0 the kernel raised it (BUS_ADRERR 2: no page could back
    /// the address; BUS_MCEERR_AR 4 / AO 5: a hardware memory error), 0 or below a process sent
    /// it (SI_USER 0 by kill, SI_TKILL -6 by tgkill or raise).
    pub code: i32,
    /// The faulting address (si_addr), for a signal the kernel raised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<u64>,
    /// Who sent it, for a signal a process sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<Sender>,
    /// The mapping that held the address at the fault; None when none did (or it was unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping: Option<Mapping>,
    /// The memory cgroup the process was charged to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<MemoryCgroup>,
    /// Open fds and the RLIMIT_NOFILE soft limit; mappings and vm.max_map_count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fds: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fd_limit: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maps: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_map_count: Option<u64>,
}

/// si_code values of the siginfo (asm-generic/siginfo.h).
pub mod code {
    pub const SI_USER: i32 = 0;
    pub const SI_TKILL: i32 = -6;
    pub const BUS_ADRERR: i32 = 2;
    pub const BUS_MCEERR_AR: i32 = 4;
    pub const BUS_MCEERR_AO: i32 = 5;
    pub const SEGV_MAPERR: i32 = 1;
    pub const SEGV_ACCERR: i32 = 2;
}

impl Fault {
    /// Whether the kernel raised it (a fault), not a process (a kill).
    pub fn by_kernel(&self) -> bool {
        self.code > 0
    }

    /// Whether the process sent it to itself: a handler re-raising the fault it caught (torch's
    /// worker handler, Python's faulthandler), or `raise`.
    pub fn self_sent(&self) -> bool {
        self.sender.as_ref().is_some_and(|s| s.pid == self.pid)
    }

    /// The si_code in words.
    pub fn code_name(&self) -> &'static str {
        match (self.signal, self.code) {
            (_, code::SI_USER) => "SI_USER",
            (_, code::SI_TKILL) => "SI_TKILL",
            (_, c) if c < 0 => "SI_QUEUE",
            (libc::SIGBUS, 1) => "BUS_ADRALN",
            (libc::SIGBUS, code::BUS_ADRERR) => "BUS_ADRERR",
            (libc::SIGBUS, 3) => "BUS_OBJERR",
            (libc::SIGBUS, code::BUS_MCEERR_AR) => "BUS_MCEERR_AR",
            (libc::SIGBUS, code::BUS_MCEERR_AO) => "BUS_MCEERR_AO",
            (libc::SIGSEGV, code::SEGV_MAPERR) => "SEGV_MAPERR",
            (libc::SIGSEGV, code::SEGV_ACCERR) => "SEGV_ACCERR",
            _ => "another code",
        }
    }
}

/// The process that sent a signal (kill, tgkill, sigqueue).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sender {
    /// Its pid as the receiver's pid namespace numbers it (0: from outside that namespace).
    pub pid: u32,
    pub uid: u32,
    /// Its command line when it could still be read.
    #[serde(default)]
    pub command: Option<String>,
}

/// The mapping that held a faulting address.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    /// The backing file as /proc/PID/maps names it (in the process's own mount namespace);
    /// empty for anonymous memory, `[heap]`-like names for the kernel's own.
    pub path: String,
    /// Unlinked while mapped (torch's segments are, once every process has them).
    pub deleted: bool,
    /// Shared (`s`) rather than private copy-on-write.
    pub shared: bool,
    /// The file's device (major:minor, decimal) and inode.
    pub device: String,
    pub inode: u64,
    /// The fault's offset in the file: the mapping's file offset plus the address's distance
    /// from the mapping's start.
    pub offset: u64,
    /// The file's size at the fault, when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_bytes: Option<u64>,
    /// The file system the file is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs: Option<FileSystem>,
}

/// A file system, as statfs and mountinfo saw it at the fault.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FileSystem {
    /// Its type (`tmpfs`, `hugetlbfs`, `ext4`, `nfs`, `fuse.*`) and where it is mounted in the
    /// process's mount namespace.
    pub kind: String,
    pub mount_point: String,
    pub size_bytes: u64,
    pub free_bytes: u64,
    /// Its block size: a page on tmpfs, a huge page on hugetlbfs.
    pub block_bytes: u64,
    /// Free huge pages of that size on the node (hugetlbfs only: its own count may be unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub huge_pages_free: Option<u64>,
}

impl FileSystem {
    /// Whether it is a tmpfs (POSIX shared memory, /dev/shm, an emptyDir of medium Memory).
    pub fn is_tmpfs(&self) -> bool {
        self.kind == "tmpfs"
    }

    pub fn is_hugetlbfs(&self) -> bool {
        self.kind == "hugetlbfs"
    }

    /// Whether not even one more block fits.
    pub fn full(&self) -> bool {
        self.size_bytes > 0 && self.free_bytes < self.block_bytes.max(1)
    }
}

/// A memory cgroup's counters at the fault (v1 or v2).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MemoryCgroup {
    /// Its path in the hierarchy.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_bytes: Option<u64>,
    /// tmpfs pages charged to it (memory.stat's shmem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shmem_bytes: Option<u64>,
    /// Times the limit was hit (v2 memory.events `max`, v1 memory.failcnt) and OOM kills in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit_hits: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oom_kills: Option<u64>,
}
