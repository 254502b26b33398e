//! Who holds a file: every process's open fds and file mappings, read from /proc (so every
//! pid namespace below ours), matched by (device, inode), never by name: half of the proof
//! `lease_removal` takes before any removal (the kernel's lease is the other).
//!
//! A process whose fds the kernel will not show us (a more privileged one: a sandbox's or
//! container engine's init, under Yama or an LSM) cannot be read and is skipped: the dead
//! owner's lock is then the proof, since only the owner's own tree knows its token. When /proc
//! itself cannot be read, nothing is removed.

use std::collections::HashSet;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

/// A file's identity: (device, inode).
pub type FileId = (u64, u64);

pub fn file_id(meta: &std::fs::Metadata) -> FileId {
    (meta.dev(), meta.ino())
}

/// /proc could not be listed, so no one can say what is held: nothing may be removed.
#[derive(Debug, thiserror::Error)]
#[error("cannot read /proc: {0}")]
pub struct ProcUnreadable(#[source] pub std::io::Error);

/// Which of `wanted` some live process holds open or mapped, over every process in /proc that
/// we may read (so every pid namespace below ours). An error when /proc cannot be read.
pub fn held(wanted: &HashSet<FileId>) -> Result<HashSet<FileId>, ProcUnreadable> {
    held_by_others(wanted, None)
}

/// As [`held`], leaving out process `except` (this one, holding a file to prove it unheld).
pub fn held_by_others(
    wanted: &HashSet<FileId>,
    except: Option<u32>,
) -> Result<HashSet<FileId>, ProcUnreadable> {
    let except = except.map(|pid| pid.to_string());
    let mut found = HashSet::new();
    let procs = std::fs::read_dir("/proc").map_err(ProcUnreadable)?;
    for entry in procs.flatten() {
        let name = entry.file_name();
        if !name.as_bytes().iter().all(u8::is_ascii_digit) || except.as_deref() == name.to_str() {
            continue;
        }
        // A process that ended meanwhile holds nothing; one we may not read is skipped (see
        // the module's notes).
        let dir = entry.path();
        if let Ok(fds) = std::fs::read_dir(dir.join("fd")) {
            for fd in fds.flatten() {
                if let Ok(meta) = std::fs::metadata(fd.path()) {
                    if wanted.contains(&file_id(&meta)) {
                        found.insert(file_id(&meta));
                    }
                }
            }
        }
        if let Ok(maps) = std::fs::read(dir.join("maps")) {
            found.extend(mapped(&maps).filter(|id| wanted.contains(id)));
        }
    }
    Ok(found)
}

/// The (device, inode) of every file mapping in a /proc/PID/maps text.
fn mapped(maps: &[u8]) -> impl Iterator<Item = FileId> + '_ {
    maps.split(|b| *b == b'\n')
        .filter_map(|line| MapsLine::parse(&String::from_utf8_lossy(line)))
        .filter(|m| m.id.1 != 0)
        .map(|m| m.id)
}

/// One line of /proc/PID/maps that maps a file: `start-end perms offset major:minor inode path`.
#[derive(Debug, PartialEq)]
pub struct MapsLine {
    /// Bytes the mapping spans.
    pub extent: u64,
    pub id: FileId,
    /// The file's path as the kernel shows it, without ` (deleted)`.
    pub path: String,
    /// The file was unlinked.
    pub deleted: bool,
}

impl MapsLine {
    /// The line's fields; None for a line that is not a mapping.
    pub fn parse(line: &str) -> Option<MapsLine> {
        let mut fields = line.split_whitespace();
        let range = fields.next()?;
        let _perms = fields.next()?;
        let _offset = fields.next()?;
        let dev = device_number(fields.next()?)?;
        let inode: u64 = fields.next()?.parse().ok()?;
        let (start, end) = range.split_once('-')?;
        let extent = u64::from_str_radix(end, 16).ok()? - u64::from_str_radix(start, 16).ok()?;
        let shown = fields.collect::<Vec<_>>().join(" ");
        let (path, deleted) = unlinked_suffix(&shown);
        Some(MapsLine {
            extent,
            id: (dev, inode),
            path: path.to_string(),
            deleted,
        })
    }
}

/// A path as /proc shows it (an fd link's target, a maps line's path): the path, and whether
/// the file was unlinked (the kernel writes ` (deleted)` after it).
pub fn unlinked_suffix(shown: &str) -> (&str, bool) {
    match shown.strip_suffix(" (deleted)") {
        Some(path) => (path, true),
        None => (shown, false),
    }
}

/// A maps line's `major:minor` (hex) as a device number, as `stat` gives it.
pub fn device_number(field: &str) -> Option<u64> {
    let (major, minor) = field.split_once(':')?;
    Some(libc::makedev(
        u32::from_str_radix(major, 16).ok()?,
        u32::from_str_radix(minor, 16).ok()?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_give_device_and_inode() {
        let maps = b"7f00-7f10 rw-s 00000000 00:1a 4242 /dev/shm/x (deleted)\n\
                     7f10-7f20 r--p 00000000 00:00 0 \n\
                     7f20-7f30 r-xp 00000000 fd:01 77 /usr/lib/libc.so.6\n";
        let ids: Vec<FileId> = mapped(maps).collect();
        assert_eq!(
            ids,
            vec![(libc::makedev(0, 0x1a), 4242), (libc::makedev(0xfd, 1), 77)]
        );
    }
}
