//! A process tree read from /proc: who descends from a process, and what shared memory each one
//! holds (open fds and mappings of /dev/shm files and memfds, unlinked ones included) with its
//! fd count and limit. Reading another process's fds and maps needs only the same user (ptrace
//! read access), no capability.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use super::holders::{file_id, unlinked_suffix, FileId, MapsLine};
use super::shm::SHM_DIR;

/// A shared segment one process holds, as /proc shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Held {
    /// `/dev/shm/NAME` or `memfd:NAME`, for display (a lossy conversion of the raw name).
    pub name: String,
    pub inode: u64,
    /// (device, inode): what identifies the file, whatever its name.
    pub id: FileId,
    /// Allocated bytes when the file could be stat'ed (by its path or through the fd); for an
    /// unlinked segment only mapped, the extent of its mappings.
    pub bytes: u64,
    pub deleted: bool,
    /// Held through an fd (else only through a mapping).
    pub by_fd: bool,
}

/// One process and what it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessView {
    pub pid: u32,
    pub command: String,
    pub fds: u64,
    pub fd_limit: Option<u64>,
    pub held: Vec<Held>,
}

/// Direct children of `pid` (every thread's), from /proc/PID/task/TID/children; None where the
/// kernel has no such file (gVisor's /proc lacks it) or `pid` is gone.
fn listed_children(pid: u32) -> Option<Vec<u32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut out = Vec::new();
    let mut listed = false;
    for task in tasks.flatten() {
        let path = task.path().join("children");
        if let Ok(text) = std::fs::read_to_string(path) {
            listed = true;
            out.extend(
                text.split_whitespace()
                    .filter_map(|p| p.parse::<u32>().ok()),
            );
        }
    }
    listed.then_some(out)
}

/// Every process's children, from one pass over every process's parent in /proc/PID/stat: the
/// way to a tree where the children files are missing, at one read per process for the whole
/// tree (not one pass per process of it).
fn children_by_parent() -> std::collections::HashMap<u32, Vec<u32>> {
    let mut by_parent: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    for pid in all_pids() {
        if let Some(stat) = stat_of(pid) {
            by_parent.entry(stat.parent).or_default().push(pid);
        }
    }
    by_parent
}

/// Every descendant of `root` (not `root` itself), parents before children.
pub fn descendants(root: u32) -> Vec<u32> {
    // Once the files fail (a kernel without them, or a process gone), the one pass over every
    // parent answers for the rest of the walk: under gVisor each /proc read is dear.
    let mut by_parent: Option<std::collections::HashMap<u32, Vec<u32>>> = None;
    let mut children = |pid: u32| {
        let listed = match by_parent {
            None => listed_children(pid),
            Some(_) => None,
        };
        listed.unwrap_or_else(|| {
            let map = by_parent.get_or_insert_with(children_by_parent);
            map.get(&pid).cloned().unwrap_or_default()
        })
    };
    let mut out = Vec::new();
    let mut next = children(root);
    while let Some(pid) = next.pop() {
        if !out.contains(&pid) {
            out.push(pid);
            next.extend(children(pid));
        }
    }
    out
}

/// What /proc/PID/stat says of a process's state and family.
struct Stat {
    zombie: bool,
    parent: u32,
    group: u32,
}

fn stat_of(pid: u32) -> Option<Stat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's closing parenthesis: state, ppid, pgrp.
    let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
    Some(Stat {
        zombie: rest.next()? == "Z",
        parent: rest.next()?.parse().ok()?,
        group: rest.next()?.parse().ok()?,
    })
}

/// Every process /proc lists now.
pub fn all_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

/// The live processes (zombies left out: an orphan's reaper may be slow) whose process group is
/// `pgid`.
pub fn group_members(pgid: u32) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| stat_of(*pid).is_some_and(|s| !s.zombie && s.group == pgid))
        .collect()
}

/// The command line of `pid`, arguments joined by spaces, at most `max` characters.
pub fn command_line(pid: u32, max: usize) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let text: String = String::from_utf8_lossy(&raw)
        .split('\0')
        .filter(|a| !a.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text,
    }
}

/// The soft RLIMIT_NOFILE of `pid`.
pub fn fd_limit(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// A link or map target naming shared memory: (name, deleted).
fn shared_name(target: &str) -> Option<(String, bool)> {
    let (path, deleted) = unlinked_suffix(target);
    shared_path(path, deleted)
}

/// A path naming shared memory (its ` (deleted)` already read): (name, deleted).
fn shared_path(path: &str, deleted: bool) -> Option<(String, bool)> {
    if path.starts_with(SHM_DIR) && path[SHM_DIR.len()..].starts_with('/') {
        Some((path.to_string(), deleted))
    } else {
        path.strip_prefix("/memfd:")
            .map(|name| (format!("memfd:{name}"), true))
    }
}

/// What `pid` holds and its fd count; None when it is gone or not readable.
pub fn view(pid: u32) -> Option<ProcessView> {
    let mut held: BTreeMap<u64, Held> = BTreeMap::new();
    let mut fds = 0;
    let dir = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    for entry in dir.flatten() {
        fds += 1;
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        let Some((name, deleted)) = shared_name(&target.to_string_lossy()) else {
            continue;
        };
        // stat through the fd link reaches the file even when it is unlinked.
        if let Ok(meta) = std::fs::metadata(entry.path()) {
            held.insert(
                meta.ino(),
                Held {
                    name,
                    inode: meta.ino(),
                    id: file_id(&meta),
                    bytes: meta.blocks() * 512,
                    deleted,
                    by_fd: true,
                },
            );
        }
    }
    if let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) {
        for line in maps.lines().filter_map(MapsLine::parse) {
            let Some((name, deleted)) = shared_path(&line.path, line.deleted) else {
                continue;
            };
            let (device, inode) = line.id;
            if held.contains_key(&inode) {
                continue;
            }
            let bytes = match deleted {
                true => line.extent,
                false => std::fs::metadata(&name).map_or(line.extent, |m| m.blocks() * 512),
            };
            held.entry(inode)
                .and_modify(|h| h.bytes = h.bytes.max(bytes))
                .or_insert(Held {
                    name,
                    inode,
                    id: (device, inode),
                    bytes,
                    deleted,
                    by_fd: false,
                });
        }
    }
    Some(ProcessView {
        pid,
        command: command_line(pid, 120),
        fds,
        fd_limit: fd_limit(pid),
        held: held.into_values().collect(),
    })
}

/// A file in /dev/shm: its path with the raw bytes of its name, identity and allocated bytes.
#[derive(Clone, Debug)]
pub struct ShmFile {
    pub path: std::path::PathBuf,
    pub id: FileId,
    pub bytes: u64,
}

/// The files in /dev/shm now, by identity (device, inode).
pub fn shm_files() -> BTreeMap<FileId, ShmFile> {
    let mut out = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir(SHM_DIR) {
        for entry in dir.flatten() {
            if let Ok(meta) = entry.metadata() {
                if meta.is_file() {
                    let id = file_id(&meta);
                    let path = entry.path();
                    let bytes = meta.blocks() * 512;
                    out.insert(id, ShmFile { path, id, bytes });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_names_are_shm_files_and_memfds_only() {
        assert_eq!(
            shared_name("/dev/shm/torch_1_2 (deleted)"),
            Some(("/dev/shm/torch_1_2".into(), true))
        );
        assert_eq!(
            shared_name("/dev/shm/x"),
            Some(("/dev/shm/x".into(), false))
        );
        assert_eq!(
            shared_name("/memfd:batch (deleted)"),
            Some(("memfd:batch".into(), true))
        );
        assert_eq!(shared_name("/dev/shmother/x"), None);
        assert_eq!(shared_name("/tmp/x"), None);
        assert_eq!(shared_name("socket:[123]"), None);
    }

    #[test]
    fn an_unlinked_segment_held_by_fd_is_found_with_its_bytes() {
        let file = tempfile::tempfile_in("/dev/shm").expect("a file in /dev/shm");
        file.set_len(1 << 20).unwrap();
        // Allocate the blocks: tmpfs counts written pages only.
        std::os::unix::fs::FileExt::write_at(&file, &vec![1u8; 1 << 20], 0).unwrap();
        let me = view(std::process::id()).expect("our own view");
        let found = me
            .held
            .iter()
            .find(|h| h.by_fd && h.deleted && h.bytes == 1 << 20);
        assert!(found.is_some(), "{:?}", me.held);
        assert!(me.fds >= 1 && me.fd_limit.is_some());
    }
}
