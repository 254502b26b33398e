//! An audit of a live tmpfs (a node's /dev/shm): every entry with its allocated bytes, age and
//! owner, the processes that hold it (by fd or mapping; named entries and unlinked ones), each
//! with the container, pod or job its cgroup names, totals per holder, and which entries no
//! live process holds (stale). `sys::shm_audit` takes it; `shmbench shm` shows it.

use serde::Serialize;

use super::workload::Workload;

/// What an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// One process's hold on a segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub(crate) struct Hold {
    pub(crate) pid: u32,
    /// Through an open fd.
    pub(crate) by_fd: bool,
    /// Through a mapping.
    pub(crate) by_map: bool,
}

/// One entry of the tmpfs, by its path under the audited directory.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ShmEntry {
    /// The path under the audited directory (a lossy conversion of the raw name).
    pub(crate) name: String,
    /// The same path as the file system has it (a name need not be UTF-8): what a sweep opens.
    #[serde(skip)]
    pub(crate) raw_path: Vec<Vec<u8>>,
    pub(crate) kind: EntryKind,
    /// Bytes of tmpfs pages the entry holds (what counts against the size), not its length.
    pub(crate) allocated_bytes: u64,
    pub(crate) apparent_bytes: u64,
    /// Seconds since it was last modified.
    pub(crate) age_s: f64,
    pub(crate) uid: u32,
    pub(crate) inode: u64,
    pub(crate) holders: Vec<Hold>,
    /// The library its name points to, if any (a hint: `segment_maker`).
    pub(crate) made_by: Option<&'static str>,
}

impl ShmEntry {
    /// A regular file that no live process we could read holds.
    pub(crate) fn stale(&self) -> bool {
        self.kind == EntryKind::File && self.holders.is_empty()
    }
}

/// A segment that is no longer named (unlinked, or a memfd is not on this tmpfs) but still
/// held, so still counted: `file_descriptor` batches, a crashed job's fds.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct UnlinkedSegment {
    /// The name it had, as /proc shows it.
    pub(crate) name: String,
    pub(crate) inode: u64,
    /// Allocated bytes; for a segment only mapped, the extent of its mappings.
    pub(crate) allocated_bytes: u64,
    pub(crate) holders: Vec<Hold>,
    pub(crate) made_by: Option<&'static str>,
}

/// A process that holds something on the tmpfs, and how much.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct HolderTotal {
    pub(crate) pid: u32,
    pub(crate) uid: Option<u32>,
    pub(crate) command: String,
    pub(crate) workload: Workload,
    /// Segments it holds, named and unlinked.
    pub(crate) segments: u64,
    /// Their allocated bytes (a segment two processes share counts for each).
    pub(crate) bytes: u64,
}

/// The audit of one tmpfs at one moment.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct ShmAudit {
    pub(crate) path: String,
    /// The filesystem's size and use (statvfs).
    pub(crate) capacity_bytes: u64,
    pub(crate) used_bytes: u64,
    pub(crate) entries: Vec<ShmEntry>,
    pub(crate) unlinked: Vec<UnlinkedSegment>,
    /// Holders, most bytes first.
    pub(crate) holders: Vec<HolderTotal>,
    /// Processes whose fds or mappings could not be read (another user's without the right,
    /// a more privileged one's): an entry they hold looks stale here.
    pub(crate) unreadable_processes: u64,
}

impl ShmAudit {
    /// The stale entries: files no live process we could read holds.
    pub(crate) fn stale(&self) -> impl Iterator<Item = &ShmEntry> {
        self.entries.iter().filter(|e| e.stale())
    }

    /// Allocated bytes of the named files.
    pub(crate) fn named_bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.allocated_bytes).sum()
    }
}

/// What a sweep did with each stale entry old enough to go.
#[derive(Debug, Default, Serialize)]
pub(crate) struct StaleSweep {
    /// Removed: the path under the root and its allocated bytes.
    pub(crate) removed: Vec<(String, u64)>,
    /// Kept: the path and why.
    pub(crate) kept: Vec<(String, String)>,
    /// Stale entries left because they are younger than the age asked for.
    pub(crate) younger: u64,
}

impl StaleSweep {
    pub(crate) fn removed_bytes(&self) -> u64 {
        self.removed.iter().map(|(_, bytes)| bytes).sum()
    }
}
