//! Audits a live tmpfs: walks it (never following a symlink or leaving the filesystem), reads
//! every process's fds and mappings in /proc for files on its device (so unlinked segments and
//! mapped-only ones are found, and every pid namespace below ours), and names each holder's
//! container, pod or job from its cgroup paths (`model::workload`).

use std::collections::{BTreeMap, HashMap};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::SystemTime;

use super::holders::{unlinked_suffix, MapsLine};
use super::proc_tree::command_line;
use super::shm::usage_of;
use crate::model::segment_maker;
use crate::model::shm_audit::{EntryKind, Hold, HolderTotal, ShmAudit, ShmEntry, UnlinkedSegment};
use crate::model::workload::{self, Workload};

/// Why a path cannot be audited.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AuditError {
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
pub(crate) fn audit(root: &Path) -> Result<ShmAudit, AuditError> {
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
    let mut entries = Vec::new();
    walk(root, &[], device, &mut entries);
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
    Ok(ShmAudit {
        path: shown,
        capacity_bytes,
        used_bytes,
        entries,
        unlinked: unlinked.into_values().collect(),
        holders,
        unreadable_processes,
    })
}

/// The entries under `dir` (`prefix`: its names under the audited root), depth first, on
/// `device` only; a symlink is listed, never followed.
fn walk(dir: &Path, prefix: &[Vec<u8>], device: u64, out: &mut Vec<ShmEntry>) {
    let Ok(listing) = std::fs::read_dir(dir) else {
        return;
    };
    let now = SystemTime::now();
    for entry in listing.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        let raw = entry.file_name();
        let mut raw_path = prefix.to_vec();
        raw_path.push(raw.as_bytes().to_vec());
        let name = raw_path
            .iter()
            .map(|part| String::from_utf8_lossy(part))
            .collect::<Vec<_>>()
            .join("/");
        let kind = match meta.file_type() {
            t if t.is_symlink() => EntryKind::Symlink,
            t if t.is_dir() => EntryKind::Dir,
            t if t.is_file() => EntryKind::File,
            _ => EntryKind::Other,
        };
        let age_s = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .map_or(0.0, |d| d.as_secs_f64());
        out.push(ShmEntry {
            name: name.clone(),
            raw_path: raw_path.clone(),
            kind,
            allocated_bytes: meta.blocks() * 512,
            apparent_bytes: meta.len(),
            age_s,
            uid: meta.uid(),
            inode: meta.ino(),
            holders: Vec::new(),
            made_by: segment_maker::made_by(&name),
        });
        if kind == EntryKind::Dir && meta.dev() == device {
            walk(&entry.path(), &raw_path, device, out);
        }
    }
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
                    if meta.dev() != device {
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
