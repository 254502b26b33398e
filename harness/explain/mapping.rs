//! The mapping that holds an address in a process, read from /proc/PID/maps, and the file and
//! file system behind it. The file is reached from outside the process's mount namespace through
//! /proc/PID/root (its path), one of its fds or /proc/PID/map_files (an unlinked segment), each
//! checked to be the same inode the mapping names; the file system through the same handle, or
//! through the mount of the mapping's device in /proc/PID/mountinfo.

use std::path::{Path, PathBuf};

use crate::fault::{FileSystem, Mapping};

/// The mapping of `pid` holding `address`, with its file's size and file system.
pub fn holding(pid: u32, address: u64) -> Option<Mapping> {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
    let mut mapping = maps.lines().find_map(|l| parse(l, address))?;
    if mapping.inode == 0 {
        return Some(mapping); // anonymous memory: no file
    }
    let handle = handle(pid, &mapping);
    if let Some(h) = &handle {
        mapping.file_bytes = nix::sys::stat::stat(h).ok().map(|s| s.st_size as u64);
    }
    mapping.fs = file_system(pid, &mapping, handle.as_deref());
    Some(mapping)
}

/// One line of /proc/PID/maps, when its range holds `address`:
/// `start-end perms offset major:minor inode   path`.
pub fn parse(line: &str, address: u64) -> Option<Mapping> {
    let mut fields = line.split_ascii_whitespace();
    let (range, perms, offset, device, inode) = (
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
        fields.next()?,
    );
    let (start, end) = range.split_once('-')?;
    let (start, end) = (hex(start)?, hex(end)?);
    if !(start..end).contains(&address) {
        return None;
    }
    // The path is the rest of the line after the inode's column (it may hold spaces).
    let path = line
        .splitn(6, |c: char| c.is_ascii_whitespace())
        .nth(5)
        .unwrap_or("")
        .trim_start();
    let (path, deleted) = match path.strip_suffix(" (deleted)") {
        Some(p) => (p, true),
        None => (path, false),
    };
    let (major, minor) = device.split_once(':')?;
    Some(Mapping {
        start,
        end,
        path: path.to_string(),
        deleted,
        shared: perms.as_bytes().get(3) == Some(&b's'),
        device: format!("{}:{}", hex(major)?, hex(minor)?),
        inode: inode.parse().ok()?,
        offset: hex(offset)? + (address - start),
        file_bytes: None,
        fs: None,
    })
}

fn hex(text: &str) -> Option<u64> {
    u64::from_str_radix(text, 16).ok()
}

/// A path that reaches the mapped file itself (same device and inode), seen from here.
fn handle(pid: u32, mapping: &Mapping) -> Option<PathBuf> {
    let same = |p: &Path| {
        nix::sys::stat::stat(p)
            .ok()
            .is_some_and(|s| s.st_ino == mapping.inode && device_of(s.st_dev) == mapping.device)
    };
    let by_path = PathBuf::from(format!("/proc/{pid}/root{}", mapping.path));
    if !mapping.deleted && mapping.path.starts_with('/') && same(&by_path) {
        return Some(by_path);
    }
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    let by_fd = fds.flatten().map(|e| e.path()).find(|p| same(p));
    // map_files links open only with CAP_SYS_ADMIN: the last resort.
    by_fd.or_else(|| {
        let link = PathBuf::from(format!(
            "/proc/{pid}/map_files/{:x}-{:x}",
            mapping.start, mapping.end
        ));
        same(&link).then_some(link)
    })
}

/// `st_dev` as mountinfo writes it: decimal major:minor.
fn device_of(dev: libc::dev_t) -> String {
    format!("{}:{}", libc::major(dev), libc::minor(dev))
}

/// The file system of the mapped file: statfs through `handle`, its type and mount point from
/// the process's mountinfo (the mount of the same device whose point is the longest prefix of
/// the path).
fn file_system(pid: u32, mapping: &Mapping, handle: Option<&Path>) -> Option<FileSystem> {
    let mountinfo = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).unwrap_or_default();
    let mount = mountinfo
        .lines()
        .filter_map(mount_of)
        .filter(|(device, _, _)| *device == mapping.device)
        .map(|(_, point, kind)| (point, kind))
        .filter(|(point, _)| under(&mapping.path, point))
        .max_by_key(|(point, _)| point.len());
    let stat = match (handle, &mount) {
        (Some(h), _) => nix::sys::statfs::statfs(h).ok()?,
        (None, Some((point, _))) => {
            nix::sys::statfs::statfs(&PathBuf::from(format!("/proc/{pid}/root{point}"))).ok()?
        }
        // MAP_HUGETLB's anonymous memory is a file of the kernel's own hugetlbfs, mounted
        // nowhere and reachable only with CAP_SYS_ADMIN: its name says what it is.
        (None, None) if mapping.path.starts_with("/anon_hugepage") => {
            return Some(anonymous_huge_pages());
        }
        (None, None) => return None,
    };
    // A memfd's file system is mounted nowhere: its type is told by statfs alone.
    let (mount_point, kind) = mount.unwrap_or_else(|| {
        let kind = match stat.filesystem_type().0 as i64 {
            0x0102_1994 => "tmpfs",
            0x9584_58f6 => "hugetlbfs",
            _ => "unknown",
        };
        (String::new(), kind.to_string())
    });
    let block = stat.block_size() as u64;
    let huge_pages_free = (kind == "hugetlbfs")
        .then(|| huge_pages_free(block))
        .flatten();
    Some(FileSystem {
        kind,
        mount_point,
        size_bytes: stat.blocks() * block,
        free_bytes: stat.blocks_available() * block,
        block_bytes: block,
        huge_pages_free,
    })
}

/// The kernel's own hugetlbfs behind MAP_HUGETLB (default huge pages: 2 MiB on x86-64).
fn anonymous_huge_pages() -> FileSystem {
    let page = 2 << 20;
    FileSystem {
        kind: "hugetlbfs".into(),
        block_bytes: page,
        huge_pages_free: huge_pages_free(page),
        ..FileSystem::default()
    }
}

/// Whether `path` lies under the mount point `point`.
fn under(path: &str, point: &str) -> bool {
    point == "/"
        || path == point
        || path
            .strip_prefix(point)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// (device, mount point, file system type) of one mountinfo line:
/// `id parent major:minor root point options [optional...] - type source super-options`.
fn mount_of(line: &str) -> Option<(String, String, String)> {
    let mut fields = line.split(' ');
    let device = fields.nth(2)?.to_string();
    let point = unescape(fields.nth(1)?);
    let kind = line.split(" - ").nth(1)?.split(' ').next()?.to_string();
    Some((device, point, kind))
}

/// mountinfo's octal escapes (`\040` for a space) undone.
fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\\') {
        out.push_str(&rest[..at]);
        let code = rest
            .get(at + 1..at + 4)
            .and_then(|o| u8::from_str_radix(o, 8).ok());
        match code {
            Some(byte) => {
                out.push(byte as char);
                rest = &rest[at + 4..];
            }
            None => {
                out.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The node's free huge pages of `page_bytes`.
pub fn huge_pages_free(page_bytes: u64) -> Option<u64> {
    let dir = format!("/sys/kernel/mm/hugepages/hugepages-{}kB", page_bytes / 1024);
    std::fs::read_to_string(format!("{dir}/free_hugepages"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_maps_line_gives_the_fault_offset_in_its_file() {
        let line = "7f0000000000-7f0000800000 rw-s 00001000 00:1a 4242                       /dev/shm/torch_1_2_3 (deleted)";
        let m = parse(line, 0x7f0000400000).unwrap();
        assert_eq!(
            (m.path.as_str(), m.deleted, m.shared),
            ("/dev/shm/torch_1_2_3", true, true)
        );
        assert_eq!((m.device.as_str(), m.inode), ("0:26", 4242));
        assert_eq!(m.offset, 0x1000 + 0x400000);
        assert!(parse(line, 0x7f0000800000).is_none());
        let spaced = "1000-2000 r--p 00000000 08:01 7 /data/my set.lmdb";
        assert_eq!(parse(spaced, 0x1000).unwrap().path, "/data/my set.lmdb");
        let anonymous = "1000-2000 rw-p 00000000 00:00 0 ";
        assert_eq!(parse(anonymous, 0x1fff).unwrap().inode, 0);
    }

    #[test]
    fn a_mountinfo_line_gives_device_point_and_type() {
        let line = r"36 25 0:26 / /dev/my\040shm rw,nosuid shared:5 - tmpfs tmpfs rw,size=65536k";
        assert_eq!(
            mount_of(line),
            Some(("0:26".into(), "/dev/my shm".into(), "tmpfs".into()))
        );
        assert!(under("/dev/shm/x", "/dev/shm") && under("/x", "/"));
        assert!(!under("/dev/shmx/y", "/dev/shm"));
    }
}
