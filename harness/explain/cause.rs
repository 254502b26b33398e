//! The closed set of causes a job's Bus error (or the ending users mistake for one) can have,
//! and the explanation of one ending: its cause, the facts that decided it, and the fix for that
//! cause (never `--shm-size` for a file truncated under a mapping).

use serde::{Deserialize, Serialize};

/// Why the job ended as it did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// The tmpfs behind a shared segment had no page left (SIGBUS on a page fault, or ENOSPC
    /// from posix_fallocate/write): /dev/shm too small, or full of someone's leftovers.
    TmpfsFull,
    /// The memory cgroup's limit was reached (tmpfs pages are charged to it): the OOM killer, or
    /// a fault the charge refused.
    MemoryLimit,
    /// A file mapped by the job (a dataset's LMDB, HDF5, numpy memmap) was truncated, or could
    /// not be read (NFS, FUSE), under the mapping.
    MappedFile,
    /// hugetlbfs had no free huge page for a mapping made without a reservation.
    HugePages,
    /// A hardware memory error (BUS_MCEERR_AR / AO).
    Hardware,
    /// Another process sent the signal (`kill -BUS`): not a fault at all.
    Sent,
    /// The open-file limit (EMFILE): the file_descriptor strategy holds an fd per batch.
    FdLimit,
    /// mmap refused (ENOMEM) at vm.max_map_count.
    MapCount,
    /// A shared segment's name was gone when opened (ENOENT): removed by someone else.
    SegmentMissing,
    /// A SIGSEGV: an access to memory the process does not have (a bug in it or a library).
    Segfault,
    /// Not decided: the explanation's facts say what was missing.
    Unknown,
}

impl Cause {
    /// Every cause, in the order of the docs.
    pub const ALL: [Cause; 11] = [
        Cause::TmpfsFull,
        Cause::MemoryLimit,
        Cause::MappedFile,
        Cause::HugePages,
        Cause::Hardware,
        Cause::Sent,
        Cause::FdLimit,
        Cause::MapCount,
        Cause::SegmentMissing,
        Cause::Segfault,
        Cause::Unknown,
    ];

    /// Its name in results and flags (`tmpfs-full`).
    pub fn name(self) -> &'static str {
        match self {
            Cause::TmpfsFull => "tmpfs-full",
            Cause::MemoryLimit => "memory-limit",
            Cause::MappedFile => "mapped-file",
            Cause::HugePages => "huge-pages",
            Cause::Hardware => "hardware",
            Cause::Sent => "sent",
            Cause::FdLimit => "fd-limit",
            Cause::MapCount => "map-count",
            Cause::SegmentMissing => "segment-missing",
            Cause::Segfault => "segfault",
            Cause::Unknown => "unknown",
        }
    }

    /// The cause of `name`, as [`Cause::name`] writes it.
    pub fn from_name(name: &str) -> Option<Cause> {
        Cause::ALL.into_iter().find(|c| c.name() == name)
    }

    /// What it means, in a few words.
    pub fn summary(self) -> &'static str {
        match self {
            Cause::TmpfsFull => "the tmpfs behind a shared segment had no room left for it",
            Cause::MemoryLimit => {
                "the memory cgroup's limit was reached (tmpfs pages count against it)"
            }
            Cause::MappedFile => {
                "a file mapped by the job was truncated or unreadable under the mapping"
            }
            Cause::HugePages => "hugetlbfs had no free huge page",
            Cause::Hardware => "a hardware memory error",
            Cause::Sent => "a process sent the signal (a kill or a raise, not a fault)",
            Cause::FdLimit => "the open-file limit was reached (EMFILE)",
            Cause::MapCount => "mmap was refused at vm.max_map_count (ENOMEM)",
            Cause::SegmentMissing => "a shared segment was removed before it was opened (ENOENT)",
            Cause::Segfault => "an access to memory the process does not have (SIGSEGV)",
            Cause::Unknown => "not decided",
        }
    }
}

impl Cause {
    /// What to change, for this cause (never a bigger /dev/shm where it is not the tmpfs's).
    pub fn fix(self) -> &'static str {
        match self {
            Cause::TmpfsFull => "give /dev/shm room for every batch in flight (a container's --shm-size, an emptyDir of medium Memory with a sizeLimit; `shmbench doctor` sizes it) or remove what others left there (`shmbench shm`)",
            Cause::MemoryLimit => "raise the memory limit above the job's own memory plus its /dev/shm (tmpfs pages are charged to the cgroup), or send fewer batches in flight; a bigger /dev/shm does not help",
            Cause::MappedFile => "do not rewrite or truncate a file while a job maps it (write a new one and rename it over), and check the storage it is on (NFS, FUSE); /dev/shm's size has nothing to do with it",
            Cause::HugePages => "reserve huge pages (vm.nr_hugepages, a pod's hugepages-2Mi resource) or map without MAP_HUGETLB",
            Cause::Hardware => "a memory error on the node: check its EDAC counters and kernel log, and drain it",
            Cause::Sent => "find why the sender killed the job (a watchdog, an OOM handler, a script); /dev/shm is not involved",
            Cause::FdLimit => "raise RLIMIT_NOFILE (ulimit -n, a container's --ulimit nofile) or use the file_system sharing strategy",
            Cause::MapCount => "raise vm.max_map_count or keep fewer batches alive at once",
            Cause::SegmentMissing => "stop whatever removes /dev/shm entries under the job (systemd-logind's RemoveIPC, a cron cleaner), or use the file_descriptor strategy",
            Cause::Segfault => "a bug in the program or a native library at that address: a core dump or faulthandler's traceback shows where; /dev/shm is not involved",
            Cause::Unknown => "its facts say what was missing; where it ran untraced, run it again traced (`shmbench watch` without --no-trace, `--trace true` for a cell), so the fault is caught at its delivery",
        }
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One ending explained.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Explanation {
    pub cause: Cause,
    /// The facts that decided it, each a short clause ("/dev/shm (tmpfs) 64 MiB, 0 B free at
    /// the fault").
    pub facts: Vec<String>,
    /// What to change, for this cause.
    pub fix: String,
    /// The process it happened to, when one is known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Whether it rests on a fault caught at delivery (false: on exit statuses, counters and
    /// the job's words only).
    pub caught: bool,
}

impl Explanation {
    /// One line: cause, facts.
    pub fn line(&self) -> String {
        format!("{}: {}", self.cause.summary(), self.facts.join("; "))
    }
}
