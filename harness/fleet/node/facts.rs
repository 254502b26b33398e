//! What `shmbench node` judges, read from this node: the filesystem at the path and its size and
//! use, and on a tmpfs the audit's proven-dead leftovers, unheld files of unknown owner and bytes
//! per producer kind (`audit::live`), with vm.max_map_count. Read-only.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::node::{DeadFile, NodeFacts, ProducerBytes, MISSING};
use audit::findings::{ShmAudit, Staleness};
use model::segment_maker::{producer, Producer};

use audit::live::{audit, AuditError};
use sys::shm::usage_of;

/// Why the node's /dev/shm could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum FactsError {
    #[error("{path}: {source}")]
    Unreadable {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Audit(#[from] AuditError),
}

/// The facts of the filesystem at `path` (the node's /dev/shm; a symlink to it, such as
/// /dev/shm -> /run/shm, is followed).
pub fn collect(path: &Path, read_only_view: bool) -> Result<NodeFacts, FactsError> {
    let shown = path.display().to_string();
    let max_map_count = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .ok()
        .and_then(|t| t.trim().parse().ok());
    let path = match std::fs::canonicalize(path) {
        Ok(real) => real,
        // Not there at all: a proven problem (shm_open fails), not an unknown.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(NodeFacts::bare(shown, MISSING, max_map_count))
        }
        Err(source) => {
            return Err(FactsError::Unreadable {
                path: shown,
                source,
            })
        }
    };
    let path = path.as_path();
    let meta = std::fs::metadata(path).map_err(|source| FactsError::Unreadable {
        path: shown.clone(),
        source,
    })?;
    if !meta.is_dir() {
        // No segment can be created in it: a problem, as a missing path is, not an unknown.
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        let what = if t.is_file() {
            "a regular file"
        } else if t.is_fifo() {
            "a FIFO"
        } else if t.is_char_device() || t.is_block_device() {
            "a device"
        } else if t.is_socket() {
            "a socket"
        } else {
            "not a directory"
        };
        return Ok(NodeFacts::bare(shown, what, max_map_count));
    }
    let kind = nix::sys::statfs::statfs(path)
        .map(|s| s.filesystem_type())
        .map_err(|e| FactsError::Unreadable {
            path: shown.clone(),
            source: e.into(),
        })?;
    let vfs = nix::sys::statvfs::statvfs(path).ok();
    let inodes_free = vfs
        .as_ref()
        .filter(|v| v.files() > 0)
        .map(|v| v.files_free());
    // Whether jobs can create segments through this mount; for a read-only view (the
    // DaemonSet mounts the host's /dev/shm so), the filesystem's own flag instead, since the
    // node's jobs write through mounts of their own.
    let mount_read_only = vfs
        .as_ref()
        .is_some_and(|v| v.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY));
    let read_only = if read_only_view {
        sys::shm::filesystem_read_only(meta.dev()).unwrap_or(mount_read_only)
    } else {
        mount_read_only
    };
    // The mount the path lies in: an unmounted /dev/shm is a directory of /dev's devtmpfs,
    // which statfs calls a tmpfs too.
    let (within_mount, filesystem) = match sys::mount_points::containing(path) {
        Some((point, fstype)) => (
            (point != path).then(|| point.display().to_string()),
            match fstype.as_str() {
                "tmpfs" => filesystem_name(kind),
                _ if kind == nix::sys::statfs::TMPFS_MAGIC => fstype,
                _ => filesystem_name(kind),
            },
        ),
        None => (None, filesystem_name(kind)),
    };
    let base = NodeFacts {
        inodes_free,
        read_only,
        within_mount,
        mode: Some(meta.mode() & 0o7777),
        ..NodeFacts::bare(shown, &filesystem, max_map_count)
    };
    if kind != nix::sys::statfs::TMPFS_MAGIC || !base.is_tmpfs() {
        let (size_bytes, used_bytes) = usage_of(path);
        return Ok(NodeFacts {
            size_bytes,
            used_bytes,
            blind: Some("not a tmpfs, so not audited".into()),
            ..base
        });
    }
    Ok(from_audit(&audit(path)?, base))
}

/// Why this audit cannot prove every leftover's state, if it cannot: processes it cannot see
/// may hold a file a dead run's token names (so nothing is counted dead then), and entries it
/// could not list or judge may be dead.
fn blindness(seen: &ShmAudit) -> (Option<String>, bool) {
    if seen.unreadable_processes > 0 {
        let why = format!(
            "run as root ({} processes' fds and mappings unreadable)",
            seen.unreadable_processes
        );
        return (Some(why), true);
    }
    if seen.pid_namespace_not_the_hosts {
        let why = "run in the host's pid namespace (processes outside this one are unseen)";
        return (Some(why.into()), true);
    }
    if seen.not_walked > 0 || seen.unlisted > 0 {
        let why = format!(
            "{} directories unwalked, {} entries past the listing's bound",
            seen.not_walked, seen.unlisted
        );
        return (Some(why), false);
    }
    let unknown = seen.entries.iter().find_map(|e| match &e.staleness {
        Staleness::Unknown { why } => Some(why.clone()),
        _ => None,
    });
    (unknown, false)
}

/// The facts an audit of a tmpfs gives, beside what `base` already says of it.
fn from_audit(seen: &ShmAudit, base: NodeFacts) -> NodeFacts {
    let mut dead: Vec<DeadFile> = seen
        .stale()
        .map(|e| DeadFile {
            name: e.name.clone(),
            bytes: e.allocated_bytes,
            age_s: e.age_s.min(e.changed_age_s),
        })
        .collect();
    dead.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
    let (blind, unseen_processes) = blindness(seen);
    if unseen_processes {
        dead.clear();
    }
    let unowned = seen.entries.iter().filter(|e| e.unowned());
    let pinned = seen
        .entries
        .iter()
        .filter(|e| matches!(e.staleness, Staleness::Pinned { .. }));
    let mut per: BTreeMap<Producer, (u64, u64)> = BTreeMap::new();
    let files = seen
        .entries
        .iter()
        .filter(|e| e.staleness != Staleness::NotAFile)
        .map(|e| (e.name.as_str(), e.allocated_bytes));
    let unlinked = seen
        .unlinked
        .iter()
        .map(|u| (u.name.as_str(), u.allocated_bytes));
    for (name, bytes) in files.chain(unlinked) {
        let slot = per.entry(producer(name)).or_default();
        slot.0 += bytes;
        slot.1 += 1;
    }
    NodeFacts {
        size_bytes: seen.capacity_bytes,
        used_bytes: seen.used_bytes,
        dead,
        unowned_bytes: unowned.clone().map(|e| e.allocated_bytes).sum(),
        unowned_files: unowned.count() as u64,
        pinned_bytes: pinned.clone().map(|e| e.allocated_bytes).sum(),
        pinned_files: pinned.count() as u64,
        producers: Producer::ALL
            .iter()
            .map(|p| {
                let (bytes, files) = per.get(p).copied().unwrap_or_default();
                ProducerBytes {
                    producer: *p,
                    bytes,
                    files,
                }
            })
            .collect(),
        blind,
        ..base
    }
}

/// A filesystem type by name where it is a common one, else its magic number.
fn filesystem_name(kind: nix::sys::statfs::FsType) -> String {
    use nix::sys::statfs::{
        BTRFS_SUPER_MAGIC, EXT4_SUPER_MAGIC, NFS_SUPER_MAGIC, OVERLAYFS_SUPER_MAGIC,
        PROC_SUPER_MAGIC, TMPFS_MAGIC, XFS_SUPER_MAGIC,
    };
    let known = [
        (TMPFS_MAGIC, "tmpfs"),
        (EXT4_SUPER_MAGIC, "ext2/ext3/ext4"),
        (OVERLAYFS_SUPER_MAGIC, "overlay"),
        (XFS_SUPER_MAGIC, "xfs"),
        (BTRFS_SUPER_MAGIC, "btrfs"),
        (NFS_SUPER_MAGIC, "nfs"),
        (PROC_SUPER_MAGIC, "proc"),
    ];
    known
        .iter()
        .find(|(magic, _)| *magic == kind)
        .map(|(_, name)| name.to_string())
        .unwrap_or_else(|| format!("filesystem type {:#x}", kind.0))
}
