//! An audit of a live tmpfs (a node's /dev/shm): every entry with its allocated bytes, age and
//! owner, the processes that hold it (by fd or mapping; named entries and unlinked ones), each
//! with the container, pod or job its cgroup names, totals per holder, and which entries no
//! live process holds, whose owner the name names and whether that owner is gone (stale, the
//! only kind a default sweep removes). `crate::live` takes it; `shmbench shm` shows it.

use serde::Serialize;

use crate::workload::Workload;

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
pub struct ShmEntry {
    /// The path under the audited directory (a lossy conversion of the raw name).
    pub name: String,
    /// The same path as the file system has it (a name need not be UTF-8): what a sweep opens.
    #[serde(skip)]
    pub(crate) raw_path: Vec<Vec<u8>>,
    pub(crate) kind: EntryKind,
    /// Bytes of tmpfs pages the entry holds (what counts against the size), not its length.
    pub allocated_bytes: u64,
    pub(crate) apparent_bytes: u64,
    /// Seconds since it was last modified (mtime: `cp -a`, `tar x`, `touch -d` set it).
    pub age_s: f64,
    /// Seconds since its inode last changed (ctime: no tool can set it back).
    pub changed_age_s: f64,
    /// Seconds since its atime (what that proves: `AtimeUpdates`).
    pub(crate) read_age_s: f64,
    pub(crate) uid: u32,
    pub(crate) inode: u64,
    /// Names the file has (hard links): one removed frees nothing while another stays.
    pub(crate) links: u64,
    pub(crate) holders: Vec<Hold>,
    /// The library its name points to, if any (a hint: `segment_maker`).
    pub(crate) made_by: Option<&'static str>,
    /// Whether it is stale, and the proof or what is missing for one.
    pub staleness: Staleness,
}

impl ShmEntry {
    /// Its mtime's, ctime's and atime's ages, as [`old_enough`] takes them.
    pub(crate) fn ages(&self) -> (f64, f64, f64) {
        (self.age_s, self.changed_age_s, self.read_age_s)
    }

    /// A regular file whose named owner is proven gone and that no live process holds: what a
    /// default sweep removes.
    pub(crate) fn stale(&self) -> bool {
        matches!(self.staleness, Staleness::DeadOwner { .. })
    }

    /// A regular file no process holds, whose name names no owner: what a sweep removes only
    /// under a path the user names (`--unowned PATH`), and only when unchanged and unread.
    pub fn unowned(&self) -> bool {
        self.staleness == Staleness::Unowned
    }
}

/// Whether an entry is stale: its owner named and proven gone, and nobody holding it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Staleness {
    /// Not a regular file: listed, never removed.
    NotAFile,
    /// A live process holds it by fd or mapping.
    Held,
    /// Its name names an owner, and that owner is gone (`owner`: which, and the proof).
    DeadOwner { owner: String },
    /// Its name names an owner that may still live: kept.
    LiveOwner { owner: String },
    /// It lives unheld between uses by design (`what`): never stale.
    ByDesign { what: String },
    /// No process holds it and its name names no owner: kept unless the user opts in.
    Unowned,
    /// Processes the audit cannot see may hold it (`why`): it cannot be proven stale.
    Unknown { why: String },
    /// Its owner is gone, yet no sweep may remove it (`why`: another name, the kernel or a mount
    /// holds it): not a dead leftover, and not an unknown either.
    Pinned { why: String },
}

impl Staleness {
    /// The short word for it in a table.
    pub(crate) fn word(&self) -> &'static str {
        match self {
            Staleness::NotAFile => "",
            Staleness::Held => "held",
            Staleness::DeadOwner { .. } => "stale",
            Staleness::LiveOwner { .. } => "owner lives",
            Staleness::ByDesign { .. } => "kept by design",
            Staleness::Unowned => "unheld, owner unknown",
            Staleness::Unknown { .. } => "unknown",
            Staleness::Pinned { .. } => "owner gone, not removable",
        }
    }
}

/// A segment that is no longer named (unlinked, or a memfd is not on this tmpfs) but still
/// held, so still counted: `file_descriptor` batches, a crashed job's fds.
#[derive(Clone, Debug, Serialize)]
pub struct UnlinkedSegment {
    /// The name it had, as /proc shows it.
    pub name: String,
    pub(crate) inode: u64,
    /// Allocated bytes; for a segment only mapped, the extent of its mappings.
    pub allocated_bytes: u64,
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
pub struct ShmAudit {
    pub(crate) path: String,
    /// The filesystem's size and use (statvfs).
    pub capacity_bytes: u64,
    pub used_bytes: u64,
    pub entries: Vec<ShmEntry>,
    pub unlinked: Vec<UnlinkedSegment>,
    /// Holders, most bytes first.
    pub(crate) holders: Vec<HolderTotal>,
    /// Processes whose fds or mappings could not be read (another user's without the right,
    /// a more privileged one's): an entry they may hold is unknown, never stale.
    pub unreadable_processes: u64,
    /// Set when this audit runs in a pid namespace that is not the host's: processes outside
    /// it cannot be seen, so nothing but a dead shmbench run's files is proven stale.
    pub pid_namespace_not_the_hosts: bool,
    /// Entries left out of `entries` because the listing reached its bound (too many, or names
    /// too long to keep): counted, and in `used_bytes`, but not listed.
    pub unlisted: u64,
    /// Directories deeper than the walk goes: not walked, so what they hold is in `used_bytes`
    /// but neither listed nor counted.
    pub not_walked: u64,
    /// How this tmpfs updates access times: what a file's atime proves.
    pub(crate) atime: AtimeUpdates,
}

/// How a mount updates a file's access time (its `strictatime`, `relatime` or `noatime`
/// option), and so for how long an atime proves a file unread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AtimeUpdates {
    /// Every read sets it.
    Strict,
    /// `relatime` (Linux's default): a read sets it only when it is older than the file's
    /// mtime or ctime, or more than a day old. So reads may go unrecorded for up to a day
    /// after the atime shown.
    Relative,
    /// `noatime`: never set by a read; nothing can be proven unread.
    Never,
}

/// Whether a file whose mtime, ctime and atime are `modified_s`, `changed_s` and `read_s`
/// seconds old has been unchanged for `age_s` (both times: `touch -d` sets the mtime back,
/// never the ctime) and, when a mount's atime rule is given, provably unread for it too. The
/// audit's candidates and the sweep's last proof both ask this.
pub(crate) fn old_enough(
    (modified_s, changed_s, read_s): (f64, f64, f64),
    age_s: f64,
    atime: Option<AtimeUpdates>,
) -> bool {
    if modified_s.min(changed_s) < age_s {
        return false;
    }
    atime.is_none_or(|rule| {
        rule.unread_for_s(read_s, modified_s, changed_s)
            .is_some_and(|unread| unread >= age_s)
    })
}

/// What `relatime` may leave unrecorded: a day (`RELATIME` in the kernel's `fs/inode.c`).
const RELATIME_WINDOW_S: f64 = 24.0 * 3600.0;

impl AtimeUpdates {
    /// For how long a file is provably unread, from the ages of its atime, mtime and ctime;
    /// None when it cannot be proven at all.
    pub(crate) fn unread_for_s(self, read_s: f64, modified_s: f64, changed_s: f64) -> Option<f64> {
        match self {
            AtimeUpdates::Strict => Some(read_s),
            // An atime no later than the mtime or ctime would have been set by any read since.
            AtimeUpdates::Relative if read_s >= modified_s.min(changed_s) => Some(read_s),
            AtimeUpdates::Relative => Some((read_s - RELATIME_WINDOW_S).max(0.0)),
            AtimeUpdates::Never => None,
        }
    }
}

impl ShmAudit {
    /// The stale entries: files whose named owner is gone and that no live process holds.
    pub fn stale(&self) -> impl Iterator<Item = &ShmEntry> {
        self.entries.iter().filter(|e| e.stale())
    }

    /// Allocated bytes of the named files.
    pub(crate) fn named_bytes(&self) -> u64 {
        self.entries.iter().map(|e| e.allocated_bytes).sum()
    }
}

/// What a sweep did with one entry, reported as it happens.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum SweepEvent {
    /// Removed: its path under the root, its allocated bytes and why it was stale.
    Removed {
        name: String,
        bytes: u64,
        because: String,
    },
    /// A candidate kept at the last proof: why.
    Kept { name: String, why: String },
}

/// What a sweep did with each candidate.
#[derive(Debug, Default, Serialize)]
pub struct StaleSweep {
    /// Removed: the path under the root and its allocated bytes.
    pub(crate) removed: Vec<(String, u64)>,
    /// Kept: the path and why.
    pub(crate) kept: Vec<(String, String)>,
    /// Candidates left because they are younger than the age asked for.
    pub(crate) younger: u64,
    /// Files of unknown owner left because no `--unowned` path takes them.
    pub(crate) unowned_left: u64,
    /// The sweep stopped early (SIGINT or SIGTERM): what it did so far is above.
    pub interrupted: bool,
}

impl StaleSweep {
    pub(crate) fn removed_bytes(&self) -> u64 {
        self.removed.iter().map(|(_, bytes)| bytes).sum()
    }

    /// Adds `event` to the totals.
    pub(crate) fn record(&mut self, event: &SweepEvent) {
        match event {
            SweepEvent::Removed { name, bytes, .. } => self.removed.push((name.clone(), *bytes)),
            SweepEvent::Kept { name, why } => self.kept.push((name.clone(), why.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AtimeUpdates;

    #[test]
    fn relatime_proves_a_file_unread_a_day_less_than_its_atime_says() {
        let day = 24.0 * 3600.0;
        // Read an hour ago, written two days ago: a read since could have gone unrecorded.
        assert_eq!(
            AtimeUpdates::Relative.unread_for_s(3600.0, 2.0 * day, 2.0 * day),
            Some(0.0)
        );
        assert_eq!(
            AtimeUpdates::Relative.unread_for_s(3.0 * day, 4.0 * day, 4.0 * day),
            Some(2.0 * day)
        );
        // Never read since it was last written: the next read would have set the atime.
        assert_eq!(
            AtimeUpdates::Relative.unread_for_s(2.0 * day, 2.0 * day, 2.0 * day),
            Some(2.0 * day)
        );
        assert_eq!(AtimeUpdates::Strict.unread_for_s(5.0, 9.0, 9.0), Some(5.0));
        assert_eq!(AtimeUpdates::Never.unread_for_s(5.0, 9.0, 9.0), None);
    }
}
