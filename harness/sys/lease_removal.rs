//! Removing a file only once it is proven unheld at that moment, in any pid namespace, even one
//! whose processes /proc does not show here: it is opened without following a symlink, through
//! a directory held open, and must still be the file that was seen; the kernel then grants a
//! write lease only when no other open file or mapping refers to it, and while the lease is
//! held another open breaks it and waits. /proc is read once for a whole batch of leased files
//! (any fd or mapping of them), and each goes only if its lease is still unbroken.
//!
//! A file that a mount covers in any mount namespace is kept too (`mount_points`: no fd or
//! mapping refers to it, yet unlinking it would detach that namespace's mount), and where not
//! every mount namespace can be seen only a run's own files go.
//!
//! The name is unlinked only while it still is the leased file (moved aside first, then
//! checked). A lease break sends SIGIO, whose default action kills: callers hold
//! [`IgnoreSigio`] while leases are held, and [`HoldStops`] so that Ctrl-Z cannot freeze the
//! sweep with leases held.
//!
//! This is the one way shmbench removes a file from a tmpfs it shares: the sweep of dead runs
//! (`owner`: their segments, then their owner records), `shm --sweep-stale` (`audit::sweep`), a
//! watched job's `--sweep` and a loader's teardown of its own segments all end here
//! (`tests/architecture` fails on a removal of a /dev/shm path anywhere else).

use std::collections::HashSet;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use std::sync::atomic::{AtomicU64, Ordering};

use nix::fcntl::{openat, renameat2, AtFlags, OFlag, RenameFlags};
use nix::sys::signal::{pthread_sigmask, signal, SigHandler, SigSet, SigmaskHow, Signal};
use nix::sys::stat::{fstat, fstatat, FileStat, Mode};
use nix::unistd::{unlinkat, UnlinkatFlags};

use super::holders::{self, FileId};
use super::mount_points;

/// Why a file was kept at its last proof.
#[derive(Debug, thiserror::Error)]
pub enum Kept {
    #[error("it is a symbolic link: never followed")]
    Symlink,
    #[error("it is not on the audited tmpfs")]
    OtherFilesystem,
    #[error("it changed since it was seen")]
    Changed,
    #[error("it was written, changed or read since the audit")]
    Touched,
    #[error("another process has it open or mapped (the kernel refused a lease)")]
    LeaseRefused,
    #[error("it was opened during the sweep (its lease broke): in use")]
    LeaseBroken,
    #[error("a live process holds it")]
    Held,
    #[error("nothing may be removed: {0}")]
    NoProc(#[from] holders::ProcUnreadable),
    #[error("this tmpfs is mounted noatime: nothing proves a file of unknown owner unread")]
    NoAtime,
    #[error("another file took its name during the sweep: put back, not removed")]
    Replaced,
    #[error("another file took its name during the sweep, and a third took it again before it could be put back: it is at {0} in the same directory")]
    ReplacedTwice(String),
    #[error(
        "it has {0} names (hard links): removing one frees nothing, and another may be in use"
    )]
    HardLinked(u64),
    #[error("it is a run's owner record, and {0} file(s) it proves that run's are still there")]
    ProvesFiles(usize),
    #[error("a mount covers it in another mount namespace: removing it would detach that mount")]
    MountPoint,
    #[error("not a file of this run, and not every mount namespace can be seen ({0}): one of them may have a mount on it")]
    MountsUnseen(String),
    #[error("{0}: {1}")]
    Os(&'static str, nix::Error),
}

/// Whose files a removal is of: what may go where not every mount namespace can be seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whose {
    /// This run's own (its token's segments and record, its watched job's files).
    OwnRun,
    /// A dead run's or another program's.
    Others,
}

/// SIGIO ignored while this lives (a lease break is then a state read back, never the end of
/// this process); the disposition before is put back when it drops.
pub struct IgnoreSigio(Option<SigHandler>);

impl IgnoreSigio {
    pub fn install() -> IgnoreSigio {
        // SAFETY: ignoring a signal installs no handler.
        IgnoreSigio(unsafe { signal(Signal::SIGIO, SigHandler::SigIgn) }.ok())
    }
}

impl Drop for IgnoreSigio {
    fn drop(&mut self) {
        if let Some(previous) = self.0 {
            // SAFETY: puts back the disposition that was there before.
            let _ = unsafe { signal(Signal::SIGIO, previous) };
        }
    }
}

/// A file opened and leased, waiting for its batch's /proc read.
pub struct Leased {
    /// The caller's index for it.
    pub index: usize,
    dir: OwnedFd,
    name: Vec<u8>,
    file: OwnedFd,
    id: FileId,
}

impl Drop for Leased {
    fn drop(&mut self) {
        // The lease belongs to the open file, which outlives this fd where the file is one this
        // process holds (an owner record): a lease left on it would make a later open send us
        // SIGIO, whose default action kills.
        // SAFETY: fcntl on an fd we own.
        unsafe { libc::fcntl(self.file.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
    }
}

/// Opens `name` in the directory `dir` and takes a write lease on it, after checking it is
/// inode `inode` on `device`, a regular file, and that `still` accepts its status now.
pub fn lease(
    index: usize,
    dir: OwnedFd,
    name: &[u8],
    (device, inode): FileId,
    still: impl Fn(&FileStat) -> Result<(), Kept>,
) -> Result<Leased, Kept> {
    let file = open_on(Some(&dir), name, OFlag::O_NONBLOCK, device)?;
    lease_open(index, dir, name, file, (device, inode), still)
}

/// As [`lease`], for a file this process already has open as `file` (an owner record it holds
/// locked): its own fd does not count against the lease, any other does.
pub fn lease_open(
    index: usize,
    dir: OwnedFd,
    name: &[u8],
    file: OwnedFd,
    (device, inode): FileId,
    still: impl Fn(&FileStat) -> Result<(), Kept>,
) -> Result<Leased, Kept> {
    let st = fstat(&file).map_err(|e| Kept::Os("cannot stat it", e))?;
    if st.st_dev != device {
        return Err(Kept::OtherFilesystem);
    }
    if st.st_ino != inode || (st.st_mode & libc::S_IFMT) != libc::S_IFREG {
        return Err(Kept::Changed);
    }
    if st.st_nlink > 1 {
        return Err(Kept::HardLinked(st.st_nlink as u64));
    }
    still(&st)?;
    // SAFETY: fcntl on an fd we own; the lease goes with it (nix does not wrap F_SETLEASE).
    if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETLEASE, libc::F_WRLCK) } != 0 {
        return Err(match nix::Error::last() {
            nix::Error::EAGAIN => Kept::LeaseRefused,
            e => Kept::Os("cannot take a lease on it to prove nobody opens it", e),
        });
    }
    Ok(Leased {
        index,
        dir,
        name: name.to_vec(),
        file,
        id: (st.st_dev, st.st_ino),
    })
}

/// Reads /proc once for every leased file (its fds and mappings, and every mount namespace's
/// mounts), and unlinks each that no live process holds, no mount covers and whose lease is
/// unbroken. Each lease ends as its file is done with.
pub fn unlink_unheld(leased: Vec<Leased>, whose: Whose) -> Vec<(usize, Result<(), Kept>)> {
    let ids: HashSet<FileId> = leased.iter().map(|l| l.id).collect();
    let devices: HashSet<u64> = ids.iter().map(|id| id.0).collect();
    let mounts = mount_points::read(&devices);
    match holders::held_by_others(&ids, Some(std::process::id())) {
        Ok(held) => leased
            .into_iter()
            .map(|l| {
                let done = match &mounts.unseen {
                    _ if mounts.covered.contains(&l.id) => Err(Kept::MountPoint),
                    Some(why) if whose == Whose::Others => Err(Kept::MountsUnseen(why.clone())),
                    _ => unlink_one(&l, &held),
                };
                (l.index, done)
            })
            .collect(),
        Err(e) => {
            let why = e.0.to_string();
            leased
                .into_iter()
                .map(|l| {
                    let e = std::io::Error::other(why.clone());
                    (l.index, Err(Kept::NoProc(holders::ProcUnreadable(e))))
                })
                .collect()
        }
    }
}

fn unlink_one(l: &Leased, held: &HashSet<FileId>) -> Result<(), Kept> {
    if held.contains(&l.id) {
        return Err(Kept::Held);
    }
    // SAFETY: fcntl on an fd we own; F_GETLEASE only reads. A broken lease reads back as the
    // type its breaker needs (F_RDLCK or F_UNLCK).
    if unsafe { libc::fcntl(l.file.as_raw_fd(), libc::F_GETLEASE) } != libc::F_WRLCK {
        return Err(Kept::LeaseBroken);
    }
    unlink_if_same(l)
}

/// Unlinks the leased file's name only if the name still is that file. Linux cannot unlink
/// "this inode", and a rename onto the name does not break a lease, so the name is first moved
/// (atomically, never over anything) to a private name in the same directory: what was moved
/// is then known, and it is unlinked if it is the leased file, or else put back.
fn unlink_if_same(l: &Leased) -> Result<(), Kept> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let aside = format!(
        ".shmbench-sweep-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let name = l.name.as_slice();
    renameat2(
        l.dir.as_fd(),
        name,
        l.dir.as_fd(),
        aside.as_str(),
        RenameFlags::RENAME_NOREPLACE,
    )
    .map_err(|e| Kept::Os("cannot move it aside to remove it", e))?;
    let moved = fstatat(&l.dir, aside.as_str(), AtFlags::AT_SYMLINK_NOFOLLOW);
    if moved.is_ok_and(|st| (st.st_dev, st.st_ino) == l.id) {
        return unlinkat(l.dir.as_fd(), aside.as_str(), UnlinkatFlags::NoRemoveDir)
            .map_err(|e| Kept::Os("cannot remove it", e));
    }
    // Another file took the name after the lease: it goes back where it was.
    match renameat2(
        l.dir.as_fd(),
        aside.as_str(),
        l.dir.as_fd(),
        name,
        RenameFlags::RENAME_NOREPLACE,
    ) {
        Ok(()) => Err(Kept::Replaced),
        Err(_) => Err(Kept::ReplacedTwice(aside)),
    }
}

/// Stop signals (Ctrl-Z, SIGTTIN, SIGTTOU) held back while this lives: a sweep stopped while
/// it holds leases would make every open of a leased file wait the kernel's lease-break time
/// (`/proc/sys/fs/lease-break-time`, 45 s by default). A stop asked for meanwhile takes effect
/// when this drops, between batches. SIGSTOP cannot be held back.
pub struct HoldStops(Option<SigSet>);

impl HoldStops {
    pub fn hold() -> HoldStops {
        let mut stops = SigSet::empty();
        for sig in [Signal::SIGTSTP, Signal::SIGTTIN, Signal::SIGTTOU] {
            stops.add(sig);
        }
        let mut before = SigSet::empty();
        let held = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&stops), Some(&mut before));
        HoldStops(held.ok().map(|()| before))
    }
}

impl Drop for HoldStops {
    fn drop(&mut self) {
        if let Some(before) = &self.0 {
            let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(before), None);
        }
    }
}

/// Opens `name` relative to `dir` (or as a path) without following a symlink, and checks it is
/// on `device`.
pub fn open_on(
    dir: Option<&OwnedFd>,
    name: &[u8],
    flags: OFlag,
    device: u64,
) -> Result<OwnedFd, Kept> {
    let all = flags | OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let opened = match dir {
        Some(dir) => openat(dir, name, all, Mode::empty()),
        None => nix::fcntl::open(name, all, Mode::empty()),
    };
    let fd = opened.map_err(|e| match e {
        nix::Error::ELOOP => Kept::Symlink,
        e => Kept::Os("cannot open it", e),
    })?;
    let st = fstat(&fd).map_err(|e| Kept::Os("cannot stat it", e))?;
    if st.st_dev != device {
        return Err(Kept::OtherFilesystem);
    }
    Ok(fd)
}

/// What a removal of named files did: each removed, and each kept with why.
#[derive(Debug, Default)]
pub struct Removal {
    pub removed: Vec<PathBuf>,
    pub kept: Vec<(PathBuf, String)>,
}

impl Removal {
    /// Adds `other` to this removal.
    pub fn absorb(&mut self, other: Removal) {
        self.removed.extend(other.removed);
        self.kept.extend(other.kept);
    }
}

/// Removes each of `files` (a path and the identity it had when seen) that is still that file
/// and proven unheld, in batches. A file's directory is opened as a path (it may pass a symlink
/// such as /dev/shm -> /run/shm), the file itself never through one.
pub fn remove_proven_unheld(files: &[(PathBuf, FileId)], whose: Whose) -> Removal {
    let mut removal = Removal::default();
    for batch in files.chunks(BATCH) {
        let _sigio = IgnoreSigio::install();
        let _stops = HoldStops::hold();
        let mut leased = Vec::new();
        for (index, (path, id)) in batch.iter().enumerate() {
            let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
                continue;
            };
            let opened = open_dir(parent).map_err(|e| Kept::Os("cannot open its directory", e));
            match opened.and_then(|dir| lease(index, dir, name.as_bytes(), *id, |_| Ok(()))) {
                Ok(l) => leased.push(l),
                Err(why) => removal.kept.push((path.clone(), why.to_string())),
            }
        }
        for (index, done) in unlink_unheld(leased, whose) {
            let path = batch[index].0.clone();
            match done {
                Ok(()) => removal.removed.push(path),
                Err(why) => removal.kept.push((path, why.to_string())),
            }
        }
    }
    removal
}

/// Removes `path`, a file this process holds open as `file` (an owner record it holds locked),
/// by the same proof: nobody else holds it, no mount covers it, and the name is still it.
pub fn remove_held_by_self(path: &Path, file: &std::fs::File, whose: Whose) -> Result<(), Kept> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(Kept::Changed);
    };
    let dir = open_dir(parent).map_err(|e| Kept::Os("cannot open its directory", e))?;
    let own = file
        .as_fd()
        .try_clone_to_owned()
        .map_err(|_| Kept::Os("cannot duplicate its fd", nix::Error::last()))?;
    let st = fstat(&own).map_err(|e| Kept::Os("cannot stat it", e))?;
    let _sigio = IgnoreSigio::install();
    let _stops = HoldStops::hold();
    let leased = lease_open(0, dir, name.as_bytes(), own, (st.st_dev, st.st_ino), |_| {
        Ok(())
    })?;
    unlink_unheld(vec![leased], whose)
        .pop()
        .map_or(Err(Kept::Changed), |(_, done)| done)
}

/// Whether a lease could be taken on `name` in `dir` now (it is inode `id` on its device, a
/// regular file of one name, and nothing else has it open or mapped): what an audit asks of a
/// dead owner's file, so that it counts as a dead leftover only what a sweep could remove.
/// The lease is given back at once.
pub fn leasable(dir: &Path, name: &[u8], id: FileId) -> Result<(), Kept> {
    let dir = open_dir(dir).map_err(|e| Kept::Os("cannot open its directory", e))?;
    let _sigio = IgnoreSigio::install();
    let _stops = HoldStops::hold();
    lease(0, dir, name, id, |_| Ok(())).map(drop)
}

/// Files leased at once before /proc is read for them (each holds an fd meanwhile).
pub const BATCH: usize = 256;

fn open_dir(path: &Path) -> nix::Result<OwnedFd> {
    nix::fcntl::open(
        path,
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}
