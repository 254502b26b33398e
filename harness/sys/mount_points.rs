//! Which files are mount points in some mount namespace, read from the mountinfo of every mount
//! namespace /proc shows. Unlinking a file that another mount namespace has a mount on does not
//! fail (only a mount point of the caller's own namespace is busy): the kernel detaches that
//! namespace's mount (`docker run -v FILE:/dev/shm/cfg` leaves such a file in a shared
//! /dev/shm). No fd or mapping refers to such a file, so neither a lease nor /proc's fds tell:
//! this does, for the removal that `lease_removal` proves.
//!
//! A mount's line names its mount point as that namespace sees it; the file it covers lies in
//! the parent mount's filesystem, at the parent's root joined with the mount point's path below
//! the parent's. That file is found again through a mount of the same filesystem in this
//! namespace and known by (device, inode), never by name.
//!
//! A namespace whose every process is chrooted (a process's mountinfo lists only what lies
//! below its root) or that only an fd holds is read from inside, by a child that enters it.
//! Where not every mount namespace can be seen (not root: another user's namespace cannot be
//! read or entered; a pid namespace or a /proc that hides processes; a namespace pinned only by
//! a bind mount), the answer says so, and only a run's own files may then be removed. As
//! root, a process whose namespace the kernel will not show is more privileged than this one (a
//! sandbox's or engine's init) and is skipped, as `holders` skips its fds.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use super::holders::{file_id, FileId};

/// The mount points among some files, over every mount namespace that could be seen.
#[derive(Debug, Default)]
pub struct MountPoints {
    /// Files (of the devices asked about) that a mount covers in some namespace.
    pub covered: HashSet<FileId>,
    /// Why some mount namespace could not be read, if one could not.
    pub unseen: Option<String>,
}

/// One mount of a mountinfo table.
#[derive(Debug, Clone, PartialEq)]
struct Mount {
    id: u64,
    parent: u64,
    device: u64,
    /// The directory of its filesystem that is mounted.
    root: PathBuf,
    /// Where it is mounted, as its namespace sees it.
    point: PathBuf,
    fstype: String,
}

/// The files on `devices` that a mount covers in any mount namespace this process can see.
pub fn read(devices: &HashSet<u64>) -> MountPoints {
    let mut out = MountPoints::default();
    if !super::proc_census::sees_every_process() {
        out.unseen = Some(
            "this process does not see every process (a pid namespace that is not the host's, or a /proc that hides other users' processes), so not every mount namespace".into(),
        );
    }
    let seen = namespaces(&mut out.unseen);
    let own = table(&std::fs::read("/proc/self/mountinfo").unwrap_or_default());
    for (ns, reader) in &seen.readers {
        let text = match reader {
            Reader::Member(pid) => std::fs::read(format!("/proc/{pid}/mountinfo")).ok(),
            Reader::Enter(path) => mountinfo_inside(path),
        };
        let Some(text) = text else {
            if let Reader::Enter(path) = reader {
                out.unseen.get_or_insert_with(|| {
                    format!(
                        "mount namespace {} has no unchrooted process and could not be entered through {} (run as root)",
                        ns.to_string_lossy(),
                        path.display()
                    )
                });
            }
            continue;
        };
        let mounts = table(&text);
        for pinned in mounts.iter().filter(|m| m.fstype == "nsfs") {
            let ns = pinned.root.as_os_str().as_bytes();
            let name = ns.strip_prefix(b"/").unwrap_or(ns);
            if name.starts_with(b"mnt:")
                && !seen.readers.contains_key(std::ffi::OsStr::from_bytes(name))
            {
                out.unseen.get_or_insert_with(|| {
                    format!(
                        "a mount namespace with no process in it is pinned at {} and cannot be read",
                        pinned.point.display()
                    )
                });
            }
        }
        for (device, in_fs) in covered_files(&mounts, devices) {
            out.covered.extend(through_own_mounts(&own, device, &in_fs));
        }
    }
    out
}

/// How a mount namespace's whole mount table is read.
enum Reader {
    /// Through a member whose root is the namespace's (its mountinfo lists every mount).
    Member(u32),
    /// By entering it through this file (a chrooted member's `ns/mnt`, or a holder's fd of a
    /// namespace no process is in): see [`mountinfo_inside`].
    Enter(PathBuf),
}

/// The mountinfo of the mount namespace `ns` names, read from inside it by a forked child:
/// setns moves the child to that namespace's root, so it lists every mount, where a chrooted
/// member's own mountinfo lists only those below its root. The child makes only system calls
/// (it is forked from a process that may have threads), through this process's /proc. None
/// where it cannot enter (not root) or read.
fn mountinfo_inside(ns: &Path) -> Option<Vec<u8>> {
    use std::io::Read;
    use std::os::fd::{AsRawFd, FromRawFd};
    let ns = std::fs::File::open(ns).ok()?;
    let proc_dir = std::fs::File::open("/proc").ok()?;
    let name = c"self/mountinfo";
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two fds of the array we pass.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return None;
    }
    // SAFETY: both fds were just made and are owned here alone.
    let (read_end, write_end) = unsafe {
        (
            std::fs::File::from_raw_fd(fds[0]),
            std::fs::File::from_raw_fd(fds[1]),
        )
    };
    // SAFETY: the child makes only async-signal-safe system calls on values made before the
    // fork (no allocation, no lock) and leaves by _exit.
    let child = unsafe { libc::fork() };
    if child == 0 {
        unsafe {
            let out = write_end.as_raw_fd();
            if libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNS) != 0 {
                libc::_exit(1);
            }
            let file = libc::openat(proc_dir.as_raw_fd(), name.as_ptr(), libc::O_RDONLY);
            if file < 0 {
                libc::_exit(1);
            }
            let mut buf = [0u8; 16384];
            loop {
                let n = libc::read(file, buf.as_mut_ptr().cast(), buf.len());
                if n == 0 {
                    libc::_exit(0);
                }
                if n < 0 {
                    libc::_exit(1);
                }
                let mut done = 0;
                while done < n {
                    let w = libc::write(
                        out,
                        buf.as_ptr().add(done as usize).cast(),
                        (n - done) as usize,
                    );
                    if w <= 0 {
                        libc::_exit(1);
                    }
                    done += w;
                }
            }
        }
    }
    drop(write_end);
    if child < 0 {
        return None;
    }
    let mut text = Vec::new();
    let read = (&read_end).read_to_end(&mut text);
    let mut status = 0;
    // SAFETY: waits for the child forked above.
    unsafe { libc::waitpid(child, &mut status, 0) };
    (read.is_ok() && libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0).then_some(text)
}

/// The mount namespaces /proc shows.
struct Namespaces {
    /// Each, with how its whole mount table is read.
    readers: HashMap<OsString, Reader>,
}

/// Every mount namespace a process of /proc is in or holds an fd of; `unseen` is set where one
/// cannot be read (not root: another user's).
fn namespaces(unseen: &mut Option<String>) -> Namespaces {
    let root = nix::unistd::geteuid().is_root();
    let mut readers: HashMap<OsString, Reader> = HashMap::new();
    let mut held: Vec<(PathBuf, OsString)> = Vec::new();
    // nsfs's device: an fd on it is a namespace, and only those need their link read.
    let nsfs = std::fs::metadata("/proc/self/ns/mnt").map(|m| m.dev()).ok();
    let pids = super::proc_tree::all_pids();
    if pids.is_empty() {
        *unseen = Some("cannot read /proc".into());
    }
    for pid in pids {
        let dir = PathBuf::from(format!("/proc/{pid}"));
        match std::fs::read_link(dir.join("ns/mnt")) {
            Ok(ns) => {
                let whole =
                    std::fs::read_link(dir.join("root")).is_ok_and(|r| r.as_os_str() == "/");
                let reader = readers
                    .entry(ns.into_os_string())
                    .or_insert_with(|| Reader::Enter(dir.join("ns/mnt")));
                if whole && matches!(reader, Reader::Enter(_)) {
                    *reader = Reader::Member(pid);
                }
            }
            // Ended meanwhile, or a zombie: it holds no mount namespace.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            // Root is refused only a process more privileged than itself (a sandbox's or
            // engine's init, non-dumpable where root lacks CAP_SYS_PTRACE): skipped, as
            // `holders` skips its fds.
            Err(_) if root => continue,
            Err(e) => {
                unseen.get_or_insert_with(|| {
                    format!(
                        "the mount namespace of process {pid} cannot be read ({e}; run as root)"
                    )
                });
                continue;
            }
        }
        let Some(nsfs) = nsfs else { continue };
        for fd in std::fs::read_dir(dir.join("fd"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let on_nsfs = std::fs::metadata(fd.path()).is_ok_and(|m| m.dev() == nsfs);
            if let Some(link) = on_nsfs
                .then(|| std::fs::read_link(fd.path()).ok())
                .flatten()
            {
                if link.as_os_str().as_bytes().starts_with(b"mnt:") {
                    held.push((fd.path(), link.into_os_string()));
                }
            }
        }
    }
    // A namespace no process is in, held by an fd: entered through that fd.
    for (path, ns) in held {
        readers.entry(ns).or_insert(Reader::Enter(path));
    }
    Namespaces { readers }
}

/// The mount of this namespace that `path` (canonical) lies in: its mount point and filesystem
/// type (the one on top where mounts are stacked).
pub fn containing(path: &Path) -> Option<(PathBuf, String)> {
    let own = table(&std::fs::read("/proc/self/mountinfo").ok()?);
    own.into_iter()
        .filter(|m| path.starts_with(&m.point))
        // The deepest mount point; of mounts stacked on one, the last listed is on top.
        .enumerate()
        .max_by_key(|(i, m)| (m.point.components().count(), *i))
        .map(|(_, m)| (m.point, m.fstype))
}

/// Each file a mount of `mounts` covers on one of `devices`: the device and its path in its
/// filesystem.
fn covered_files(mounts: &[Mount], devices: &HashSet<u64>) -> Vec<(u64, PathBuf)> {
    let by_id: HashMap<u64, &Mount> = mounts.iter().map(|m| (m.id, m)).collect();
    mounts
        .iter()
        .filter(|m| m.parent != m.id)
        .filter_map(|m| {
            let parent = by_id.get(&m.parent)?;
            if !devices.contains(&parent.device) {
                return None;
            }
            let below = m.point.strip_prefix(&parent.point).ok()?;
            Some((parent.device, parent.root.join(below)))
        })
        .collect()
}

/// The identities the file at `in_fs` of filesystem `device` has, reached through each mount of
/// that filesystem in this namespace that shows it.
fn through_own_mounts(own: &[Mount], device: u64, in_fs: &Path) -> Vec<FileId> {
    own.iter()
        .filter(|o| o.device == device)
        .filter_map(|o| {
            let below = in_fs.strip_prefix(&o.root).ok()?;
            let meta = std::fs::symlink_metadata(o.point.join(below)).ok()?;
            let id = file_id(&meta);
            (id.0 == device).then_some(id)
        })
        .collect()
}

/// A mountinfo text's mounts (lines that do not parse are skipped).
fn table(text: &[u8]) -> Vec<Mount> {
    text.split(|b| *b == b'\n').filter_map(parse).collect()
}

/// One mountinfo line: `id parent major:minor root point options [optional...] - fstype ...`.
fn parse(line: &[u8]) -> Option<Mount> {
    let fields: Vec<&[u8]> = line.split(|b| *b == b' ').collect();
    let number =
        |i: usize| -> Option<u64> { std::str::from_utf8(fields.get(i)?).ok()?.parse().ok() };
    let dash = fields.iter().position(|f| *f == b"-")?;
    Some(Mount {
        id: number(0)?,
        parent: number(1)?,
        device: decimal_device(std::str::from_utf8(fields.get(2)?).ok()?)?,
        root: PathBuf::from(OsString::from_vec(unescape(fields.get(3)?))),
        point: PathBuf::from(OsString::from_vec(unescape(fields.get(4)?))),
        fstype: String::from_utf8_lossy(fields.get(dash + 1)?).into_owned(),
    })
}

/// A mountinfo `major:minor` (decimal, unlike /proc/PID/maps' hex) as a device number.
fn decimal_device(field: &str) -> Option<u64> {
    let (major, minor) = field.split_once(':')?;
    Some(libc::makedev(major.parse().ok()?, minor.parse().ok()?))
}

/// A mountinfo path with the kernel's octal escapes (`\040` space, `\011` tab, `\012` newline,
/// `\134` backslash) undone.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (field[i], octal) {
            (b'\\', Some(d)) => {
                out.push(d.iter().fold(0u8, |n, b| n.wrapping_mul(8) + (b - b'0')));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bind_mount_covers_a_file_of_its_parents_filesystem() {
        let text = b"22 1 0:20 / /dev rw - devtmpfs udev rw\n\
                     30 22 0:25 / /dev/shm rw,nosuid - tmpfs tmpfs rw\n\
                     41 30 8:1 /srv/cfg /dev/shm/my\\040cfg rw - ext4 /dev/sda1 rw\n\
                     42 22 0:25 /sub /dev/other rw - tmpfs tmpfs rw\n\
                     43 42 8:1 /x /dev/other/y rw - ext4 /dev/sda1 rw\n";
        let mounts = table(text);
        assert_eq!(mounts.len(), 5);
        let shm = libc::makedev(0, 25);
        let found = covered_files(&mounts, &HashSet::from([shm]));
        assert_eq!(
            found,
            vec![
                (shm, PathBuf::from("/my cfg")),
                (shm, PathBuf::from("/sub/y")),
            ]
        );
    }

    #[test]
    fn escapes_are_undone_and_odd_backslashes_kept() {
        assert_eq!(unescape(b"a\\012b\\134c\\d"), b"a\nb\\c\\d");
    }
}
