//! Audits a live tmpfs: walks it through fds (never following a symlink or leaving the
//! filesystem; bounded in depth and in what it keeps, counting what it cannot list), reads
//! every process's fds and mappings in /proc for files on its device (so unlinked segments and
//! mapped-only ones are found, and every pid namespace below ours), and names each holder's
//! container, pod or job from its cgroup paths (`crate::workload`); then each entry is judged
//! stale or not (`staleness`).

use std::collections::{BTreeMap, HashMap};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use nix::dir::Dir;
use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode, SFlag};

use crate::findings::{
    AtimeUpdates, EntryKind, Hold, HolderTotal, ShmAudit, ShmEntry, Staleness, UnlinkedSegment,
};
use crate::staleness;
use crate::workload::{self, Workload};
use model::segment_maker;
use sys::holders::{unlinked_suffix, MapsLine};
use sys::proc_census::Census;
use sys::proc_tree::command_line;
use sys::shm::{self, usage_of};

/// Why a path cannot be audited.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("{path}: {source}")]
    Unreadable {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{0} is not a directory on a tmpfs (/dev/shm, or another tmpfs mount): nothing to audit"
    )]
    NotTmpfs(String),
    #[error("cannot read /proc: {0}; without it no holder can be known")]
    NoProc(std::io::Error),
}

/// What one process holds on the audited device: (inode -> (hold, bytes, name as /proc
/// shows it, unlinked)).
type Holdings = BTreeMap<u64, (Hold, u64, String, bool)>;

/// The audit of the tmpfs at `root`.
pub fn audit(root: &Path) -> Result<ShmAudit, AuditError> {
    let shown = root.display().to_string();
    let unreadable = |source| AuditError::Unreadable {
        path: shown.clone(),
        source,
    };
    let meta = std::fs::symlink_metadata(root).map_err(unreadable)?;
    let on_tmpfs = nix::sys::statfs::statfs(root)
        .is_ok_and(|s| s.filesystem_type() == nix::sys::statfs::TMPFS_MAGIC);
    if !meta.is_dir() || !on_tmpfs {
        return Err(AuditError::NotTmpfs(shown));
    }
    let device = meta.dev();
    let root_fd = nix::fcntl::open(
        root,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| unreadable(e.into()))?;
    let mut walk = Walk {
        device,
        now: SystemTime::now(),
        entries: Vec::new(),
        path_bytes: 0,
        unlisted: 0,
        not_walked: 0,
    };
    walk.dir(&root_fd, &[]);
    let mut entries = walk.entries;
    let (by_pid, unreadable_processes) = holdings(device)?;
    // Who holds each inode.
    let mut holds: HashMap<u64, Vec<Hold>> = HashMap::new();
    for held in by_pid.values() {
        for (inode, (hold, ..)) in held {
            holds.entry(*inode).or_default().push(hold.clone());
        }
    }
    let named: HashMap<u64, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.inode, i))
        .collect();
    for (inode, i) in &named {
        entries[*i].holders = holds.get(inode).cloned().unwrap_or_default();
    }
    let mut unlinked: BTreeMap<u64, UnlinkedSegment> = BTreeMap::new();
    for held in by_pid.values() {
        for (inode, (_, bytes, name, _)) in held.iter().filter(|(i, _)| !named.contains_key(i)) {
            let segment = unlinked.entry(*inode).or_insert_with(|| UnlinkedSegment {
                name: name.clone(),
                inode: *inode,
                allocated_bytes: 0,
                holders: holds.get(inode).cloned().unwrap_or_default(),
                made_by: segment_maker::made_by(name),
            });
            segment.allocated_bytes = segment.allocated_bytes.max(*bytes);
        }
    }
    let holders = totals(&by_pid);
    let (capacity_bytes, used_bytes) = usage_of(root);
    let census = Census::take();
    staleness::judge(root, &mut entries, &census, unreadable_processes);
    Ok(ShmAudit {
        path: shown,
        capacity_bytes,
        used_bytes,
        entries,
        unlinked: unlinked.into_values().collect(),
        holders,
        unreadable_processes,
        pid_namespace_not_the_hosts: !census.in_host_pid_namespace,
        unlisted: walk.unlisted,
        not_walked: walk.not_walked,
        atime: atime_updates(device),
    })
}

/// Directories deeper than this under the root are counted, not walked (a tree built to be
/// deep must not cost memory per level per entry, nor hold an fd per level without bound).
const MAX_DEPTH: usize = 64;
/// Entries listed at most; later ones are counted.
const MAX_ENTRIES: usize = 1_000_000;
/// Bytes of path names kept at most (names and raw names); later entries are counted.
const MAX_PATH_BYTES: usize = 256 << 20;

/// A walk of the tree under the root: what it listed and what it could only count.
struct Walk {
    device: u64,
    now: SystemTime,
    entries: Vec<ShmEntry>,
    path_bytes: usize,
    unlisted: u64,
    not_walked: u64,
}

impl Walk {
    /// Walks the directory open at `dir` (its names under the root: `prefix`), depth first, on
    /// the root's device only, through fds (`openat`, never a path: no PATH_MAX bound, and a
    /// symlink is listed, never followed).
    fn dir(&mut self, dir: &OwnedFd, prefix: &[Vec<u8>]) {
        let Ok(copy) = dir.try_clone() else { return };
        let Ok(mut listing) = Dir::from_fd(copy) else {
            return;
        };
        let names: Vec<Vec<u8>> = listing
            .iter()
            .flatten()
            .map(|e| e.file_name().to_bytes().to_vec())
            .filter(|n| n != b"." && n != b"..")
            .collect();
        drop(listing);
        for raw in names {
            let Ok(st) = fstatat(dir, raw.as_slice(), AtFlags::AT_SYMLINK_NOFOLLOW) else {
                continue;
            };
            let kind = match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
                SFlag::S_IFLNK => EntryKind::Symlink,
                SFlag::S_IFDIR => EntryKind::Dir,
                SFlag::S_IFREG => EntryKind::File,
                _ => EntryKind::Other,
            };
            let mut raw_path = prefix.to_vec();
            raw_path.push(raw);
            self.list(&st, kind, &raw_path);
            if kind != EntryKind::Dir || st.st_dev != self.device {
                continue;
            }
            if raw_path.len() >= MAX_DEPTH {
                self.not_walked += 1;
                continue;
            }
            let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
            let last = raw_path.last().map(Vec::as_slice).unwrap_or_default();
            match openat(dir, last, flags, Mode::empty()) {
                Ok(child) => {
                    if fstat(&child).is_ok_and(|c| c.st_dev == self.device) {
                        self.dir(&child, &raw_path);
                    }
                }
                // A directory this process may not open (another user's, mode 0700): what it
                // holds is in the use but unseen, like one past the depth.
                Err(_) => self.not_walked += 1,
            }
        }
    }

    /// Lists one entry, or counts it once the listing is at its bound.
    fn list(&mut self, st: &FileStat, kind: EntryKind, raw_path: &[Vec<u8>]) {
        let name = raw_path
            .iter()
            .map(|part| String::from_utf8_lossy(part))
            .collect::<Vec<_>>()
            .join("/");
        let cost = 2 * name.len();
        if self.entries.len() >= MAX_ENTRIES || self.path_bytes + cost > MAX_PATH_BYTES {
            self.unlisted += 1;
            return;
        }
        self.path_bytes += cost;
        let age = |secs: i64, nanos: i64| seconds_since(self.now, secs, nanos);
        self.entries.push(ShmEntry {
            made_by: segment_maker::made_by(&name),
            name,
            raw_path: raw_path.to_vec(),
            kind,
            allocated_bytes: st.st_blocks as u64 * 512,
            apparent_bytes: st.st_size.max(0) as u64,
            age_s: age(st.st_mtime, st.st_mtime_nsec),
            changed_age_s: age(st.st_ctime, st.st_ctime_nsec),
            read_age_s: age(st.st_atime, st.st_atime_nsec),
            uid: st.st_uid,
            inode: st.st_ino,
            links: st.st_nlink,
            holders: Vec::new(),
            staleness: Staleness::NotAFile,
        });
    }
}

/// Seconds from a file time (`st_*time`, `st_*time_nsec`) to `now`; 0 for one in the future.
pub(crate) fn seconds_since(now: SystemTime, secs: i64, nanos: i64) -> f64 {
    let at = UNIX_EPOCH + Duration::new(secs.max(0) as u64, nanos.clamp(0, 999_999_999) as u32);
    now.duration_since(at).map_or(0.0, |d| d.as_secs_f64())
}

/// What every process holds on `device`, and how many processes could not be read.
fn holdings(device: u64) -> Result<(BTreeMap<u32, Holdings>, u64), AuditError> {
    let procs = std::fs::read_dir("/proc").map_err(AuditError::NoProc)?;
    let mut out = BTreeMap::new();
    let mut unreadable = 0;
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let dir = entry.path();
        let mut held = Holdings::new();
        match std::fs::read_dir(dir.join("fd")) {
            Ok(fds) => {
                for fd in fds.flatten() {
                    // stat through the fd's link reaches the file even when it is unlinked.
                    let Ok(meta) = std::fs::metadata(fd.path()) else {
                        continue;
                    };
                    // Directories held open (a walk's, a shell's cwd) hold no pages.
                    if meta.dev() != device || !meta.is_file() {
                        continue;
                    }
                    let target = std::fs::read_link(fd.path()).unwrap_or_default();
                    let shown = target.to_string_lossy();
                    let (name, deleted) = unlinked_suffix(&shown);
                    let name = name.to_string();
                    let hold = Hold {
                        pid,
                        by_fd: true,
                        by_map: false,
                    };
                    held.insert(meta.ino(), (hold, meta.blocks() * 512, name, deleted));
                }
            }
            // A process that ended meanwhile holds nothing; one we may not read is counted.
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => unreadable += 1,
            Err(_) => continue,
        }
        if let Ok(maps) = std::fs::read(dir.join("maps")) {
            mappings(&maps, device, pid, &mut held);
        }
        if !held.is_empty() {
            out.insert(pid, held);
        }
    }
    Ok((out, unreadable))
}

/// Adds the mappings of files on `device` in a /proc/PID/maps text to `held`.
fn mappings(maps: &[u8], device: u64, pid: u32, held: &mut Holdings) {
    let text = String::from_utf8_lossy(maps);
    for line in text.lines().filter_map(MapsLine::parse) {
        if line.id.0 != device {
            continue;
        }
        let hold = Hold {
            pid,
            by_fd: false,
            by_map: false,
        };
        let slot = held
            .entry(line.id.1)
            .or_insert((hold, 0, line.path, line.deleted));
        slot.0.by_map = true;
        if !slot.0.by_fd {
            slot.1 += line.extent;
        }
    }
}

/// Each holder's segments and bytes, most bytes first.
fn totals(by_pid: &BTreeMap<u32, Holdings>) -> Vec<HolderTotal> {
    let mut out: Vec<HolderTotal> = by_pid
        .iter()
        .map(|(pid, held)| HolderTotal {
            pid: *pid,
            uid: std::fs::metadata(format!("/proc/{pid}"))
                .ok()
                .map(|m| m.uid()),
            command: command_line(*pid, 100),
            workload: workload_of(*pid),
            segments: held.len() as u64,
            bytes: held.values().map(|(_, bytes, ..)| bytes).sum(),
        })
        .collect();
    out.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.pid.cmp(&b.pid)));
    out
}

/// The container, pod or job `pid` runs in; the host's when its cgroups cannot be read.
fn workload_of(pid: u32) -> Workload {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .map(|text| workload::of_cgroup(&text))
        .unwrap_or_default()
}

/// How the mounts of the tmpfs on `device` update access times, as far as the weakest of them
/// proves anything: a read through any mount of the same filesystem (a bind mount elsewhere,
/// remounted `noatime`) counts, so the rule is the weakest over every mount of the device in
/// /proc/self/mountinfo (`noatime` < `relatime` < neither, strict). Mounts in other mount
/// namespaces cannot be seen from here, and a reader that opens with `O_NOATIME` leaves no
/// atime at all: docs/SAFETY.md says so.
pub(crate) fn atime_updates(device: u64) -> AtimeUpdates {
    shm::mounts_of(device)
        .iter()
        .map(|m| {
            if shm::has_option(&m.mount, "noatime") {
                AtimeUpdates::Never
            } else if shm::has_option(&m.mount, "relatime") {
                AtimeUpdates::Relative
            } else {
                AtimeUpdates::Strict
            }
        })
        .min_by_key(|rule| match rule {
            AtimeUpdates::Never => 0,
            AtimeUpdates::Relative => 1,
            AtimeUpdates::Strict => 2,
        })
        // No mount of it seen: nothing proven.
        .unwrap_or(AtimeUpdates::Never)
}
