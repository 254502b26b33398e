//! Which entries of an audited tmpfs are stale, and the proof: an entry is stale only when no
//! live process holds it and its owner is named and proven gone. The owner is named by a
//! shmbench run token (`sys::owner`: proven gone when its record's lock is free) or by a pid
//! the producer put in the name (`crate::owner`: proven gone when no process that calls
//! itself by that pid, in any pid namespace, started before the file last changed). A name that
//! names no owner is unowned: a file no process holds at this instant may still be in use
//! (staged data opened, read and closed in a loop), so only the user can opt it in.
//!
//! What the audit cannot see it does not call stale: in a pid namespace that is not the host's,
//! or with processes whose fds cannot be read, an entry that only a dead pid or nobody seems to
//! hold is unknown. A run token's lock is proof across namespaces, so those stay provable.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;

use crate::findings::{EntryKind, ShmEntry, Staleness};
use crate::owner::{named_owner, NamedOwner};
use sys::lease_removal::{self, Kept};
use sys::mount_points;
use sys::owner::{self, Named, Token};
use sys::proc_census::Census;
use sys::shm::NAME_PREFIX;

/// Judges every entry of an audit of `root`, whose holders are already known.
pub(crate) fn judge(root: &Path, entries: &mut [ShmEntry], census: &Census, unreadable: u64) {
    let now = SystemTime::now();
    for entry in entries.iter_mut() {
        entry.staleness = of(root, entry, census, unreadable, now);
    }
    pin_unremovable(root, entries);
}

/// Of the entries whose owner is proven gone, those no sweep could remove, with why: a mount
/// covers it in some mount namespace, or the kernel refuses a lease on it (a loop device backs
/// onto it, an fd of it is in flight over a Unix socket, a process the audit cannot see holds
/// it). Hard links are judged in [`of`]. What is left is what a sweep removes.
fn pin_unremovable(root: &Path, entries: &mut [ShmEntry]) {
    let Ok(device) = std::fs::symlink_metadata(root).map(|m| m.dev()) else {
        return;
    };
    if !entries.iter().any(ShmEntry::stale) {
        return;
    }
    let mounts = mount_points::read(&HashSet::from([device]));
    for entry in entries.iter_mut().filter(|e| e.stale()) {
        let why = if mounts.covered.contains(&(device, entry.inode)) {
            Some(Kept::MountPoint.to_string())
        } else {
            let dir = parent_dir(root, &entry.raw_path);
            let name = entry.raw_path.last().map(Vec::as_slice).unwrap_or_default();
            lease_removal::leasable(&dir, name, (device, entry.inode))
                .err()
                .map(|why| why.to_string())
        };
        if let Some(why) = why {
            entry.staleness = Staleness::Pinned { why };
        }
    }
    // A dead run's record goes only after its files: kept while one of them is not removable.
    let removable: HashSet<u64> = entries
        .iter()
        .filter(|e| e.stale())
        .map(|e| e.inode)
        .collect();
    for entry in entries.iter_mut().filter(|e| e.stale()) {
        let Some(token) = record_token(entry) else {
            continue;
        };
        let dir = parent_dir(root, &entry.raw_path);
        let left = owner::owned_files(&dir, NAME_PREFIX, &token)
            .iter()
            .filter(|(_, id)| !removable.contains(&id.1))
            .count();
        if left > 0 {
            entry.staleness = Staleness::Pinned {
                why: Kept::ProvesFiles(left).to_string(),
            };
        }
    }
}

/// The token of a shmbench owner record (`shmbench_<16 hex>`), if the entry is one.
pub(crate) fn record_token(entry: &ShmEntry) -> Option<Token> {
    let name = entry.raw_path.last()?;
    match owner::classify(name, NAME_PREFIX) {
        Named::Record(token) => Some(token),
        _ => None,
    }
}

/// The directory an entry is in, from its raw names under `root`.
pub(crate) fn parent_dir(root: &Path, raw_path: &[Vec<u8>]) -> PathBuf {
    let mut dir = root.to_path_buf();
    if let Some((_, parents)) = raw_path.split_last() {
        for part in parents {
            dir.push(OsStr::from_bytes(part));
        }
    }
    dir
}

fn of(
    root: &Path,
    entry: &ShmEntry,
    census: &Census,
    unreadable: u64,
    now: SystemTime,
) -> Staleness {
    if entry.kind != EntryKind::File {
        return Staleness::NotAFile;
    }
    if !entry.holders.is_empty() {
        return Staleness::Held;
    }
    match owned(root, entry, census, unreadable, now) {
        // Another name of the file may be in use: only a file of one name can be proven stale.
        Staleness::DeadOwner { .. } if entry.links > 1 => Staleness::Pinned {
            why: format!(
                "it has {} names (hard links): removing one frees nothing, and another may be in use",
                entry.links
            ),
        },
        judged => judged,
    }
}

/// An unheld file's staleness by the owner its name names.
fn owned(
    root: &Path,
    entry: &ShmEntry,
    census: &Census,
    unreadable: u64,
    now: SystemTime,
) -> Staleness {
    let base = entry.raw_path.last().map(Vec::as_slice).unwrap_or_default();
    if let Named::Record(token) | Named::Owned(token) = owner::classify(base, NAME_PREFIX) {
        return shmbench_run(&parent_dir(root, &entry.raw_path), &token);
    }
    let unseen = if !census.sees_every_process() {
        Some("this audit runs where not every process can be seen (a pid namespace that is not the host's, or a /proc that hides other users' processes): one it cannot see may own or hold it".to_string())
    } else if unreadable > 0 {
        Some(format!(
            "{unreadable} processes' fds and mappings could not be read (run as root): one of them may hold it"
        ))
    } else {
        None
    };
    match named_owner(&entry.name) {
        NamedOwner::ByDesign(what) => Staleness::ByDesign {
            what: what.to_string(),
        },
        _ if unseen.is_some() => Staleness::Unknown {
            why: unseen.unwrap_or_default(),
        },
        NamedOwner::Pid { pid, maker } => {
            // The file existed by its ctime (which no tool can set back): a process that
            // started later cannot be its maker.
            let born = now
                .checked_sub(Duration::from_secs_f64(entry.changed_age_s))
                .unwrap_or(now);
            match census.may_have_made(pid, born) {
                Some(p) => Staleness::LiveOwner {
                    owner: format!("{maker} process {pid} (pid {} here) may still live", p.pid),
                },
                None => Staleness::DeadOwner {
                    owner: format!(
                        "{maker} process {pid}: no process of that pid, in any pid namespace, started before the file last changed"
                    ),
                },
            }
        }
        NamedOwner::Unknown => Staleness::Unowned,
    }
}

/// A shmbench run's file or owner record: stale when the record's lock is free.
fn shmbench_run(dir: &Path, token: &Token) -> Staleness {
    let record = dir.join(format!("{NAME_PREFIX}{token}"));
    if owner::claim_dead(dir, NAME_PREFIX, token).is_some() {
        return Staleness::DeadOwner {
            owner: format!("shmbench run {token}: its owner record's lock is free"),
        };
    }
    match std::fs::symlink_metadata(&record) {
        Ok(_) => Staleness::LiveOwner {
            owner: format!("shmbench run {token} (its owner record is locked)"),
        },
        // Without its record a shmbench-looking name is only a pattern, which proves nothing.
        Err(_) => Staleness::Unowned,
    }
}
