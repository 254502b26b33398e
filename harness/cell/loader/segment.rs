//! Shared segments: how a worker allocates a batch per strategy and torch profile, and how the
//! main maps and releases it.
//!
//! Faithful to torch: the segment is created fresh for every batch, sized with `ftruncate` and
//! either touched by a 1-byte write at offset 0 (legacy, torch <= 2.9: pages come on first touch,
//! so a full tmpfs is a SIGBUS in the middle of the copy) or reserved by `posix_fallocate`
//! (modern, torch >= 2.10: a full tmpfs is ENOSPC before any copy).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::mman::{mmap, munmap, shm_open, shm_unlink, MapFlags, ProtFlags};
use nix::sys::stat::Mode;

use super::wire::ErrorKind;
use model::knobs::{Strategy, TorchProfile};
use std::path::Path;
use sys::lease_removal::Removal;
use sys::owner::{self, Named, OwnerRecord, Token};
use sys::shm::SHM_DIR;

/// Prefix of every name shmbench gives in /dev/shm: `shmbench_<token>` is the owner record a
/// loader's main holds locked while it lives, `shmbench_<token>_<worker>_<seq>` its batches
/// (see `sys::owner`: a sweep removes them only once the record's lock is free and no live
/// process holds them). The random token keeps concurrent runs apart, containers sharing the
/// host's /dev/shm (`--ipc host`, where every main is pid 1) included.
pub use sys::shm::NAME_PREFIX;

pub fn segment_name(token: &Token, worker: u32, seq: u64) -> String {
    format!("/{NAME_PREFIX}{token}_{worker}_{seq}")
}

/// Removes this loader's segment `name` (one named with its `token`, so one it made) from
/// /dev/shm in a child process, as a cleaner beside the job would, and waits for it: the
/// segment-removed injection. The main has threads, so the child only makes async-signal-safe
/// calls (the path is built before the fork).
pub fn remove_own_in_child(name: &str, token: &Token) {
    let file = name.trim_start_matches('/');
    let own = owner::classify(file.as_bytes(), NAME_PREFIX) == Named::Owned(token.clone());
    if !own || file.contains('/') {
        return;
    }
    let Ok(path) = std::ffi::CString::new(format!("{SHM_DIR}/{file}")) else {
        return;
    };
    // SAFETY: the child calls only unlink(2) and _exit(2); the parent waits for it.
    unsafe {
        match libc::fork() {
            0 => {
                libc::unlink(path.as_ptr());
                libc::_exit(0);
            }
            pid if pid > 0 => {
                let mut status = 0;
                libc::waitpid(pid, &mut status, 0);
            }
            _ => {}
        }
    }
}

/// A fresh owner record for one loader's segments, in the /dev/shm this process sees.
pub fn new_owner() -> io::Result<OwnerRecord> {
    OwnerRecord::create(Path::new(SHM_DIR), NAME_PREFIX)
}

/// Removes the segments of dead owners that no live process holds, and their records: the
/// sweep of `shmbench sweep`, of every run's start and of a host cell's end.
pub fn sweep_abandoned() -> Removal {
    owner::sweep(Path::new(SHM_DIR), NAME_PREFIX)
}

/// An allocation failure, phrased as torch phrases it.
#[derive(Debug)]
pub struct AllocError {
    pub kind: ErrorKind,
    pub message: String,
}

fn alloc_error(what: &str, label: &str, errno: Errno) -> AllocError {
    let kind = match errno {
        Errno::ENOSPC => ErrorKind::Enospc,
        Errno::EMFILE | Errno::ENFILE => ErrorKind::Emfile,
        Errno::ENOMEM => ErrorKind::Enomem,
        _ => ErrorKind::Other,
    };
    AllocError {
        kind,
        message: format!("{what} <{label}>: {} ({})", errno.desc(), errno as i32),
    }
}

/// A writable mapping of a freshly allocated segment, in the worker.
pub struct NewSegment {
    pub fd: OwnedFd,
    /// Set for file_system (the name is what is sent).
    pub name: Option<String>,
    pub map: Mapping,
}

/// Creates a segment of `bytes` for `strategy`, allocated per `profile` and mapped read-write.
/// For file_descriptor the name is unlinked right after mmap, as torch does.
pub fn create(
    strategy: Strategy,
    profile: TorchProfile,
    bytes: u64,
    name: &str,
) -> Result<NewSegment, AllocError> {
    let (fd, label) = open_new(strategy, name)?;
    let cleanup_name = || {
        if matches!(strategy, Strategy::FileDescriptor | Strategy::FileSystem) {
            let _ = shm_unlink(name);
        }
    };
    let len = bytes as libc::off_t;
    let allocated = match profile {
        TorchProfile::Legacy => nix::unistd::ftruncate(&fd, len)
            .map_err(|e| alloc_error("unable to resize file", &label, e))
            .and_then(|_| {
                // torch's "only way to write in a file": one byte at offset 0 materialises the
                // first page; the rest arrive on first touch.
                match nix::sys::uio::pwrite(&fd, &[0u8], 0) {
                    Ok(1) => Ok(()),
                    Ok(_) => Err(alloc_error("unable to write to file", &label, Errno::EIO)),
                    Err(e) => Err(alloc_error("unable to write to file", &label, e)),
                }
            }),
        TorchProfile::Modern => nix::unistd::ftruncate(&fd, len)
            .map_err(|e| alloc_error("unable to resize file", &label, e))
            .and_then(|_| {
                nix::fcntl::posix_fallocate(&fd, 0, len).map_err(|e| {
                    alloc_error("unable to allocate shared memory(shm) for file", &label, e)
                })
            }),
    };
    if let Err(e) = allocated {
        cleanup_name();
        return Err(e);
    }
    let map = match Mapping::new(fd.as_fd(), bytes, true) {
        Ok(m) => m,
        Err(e) => {
            cleanup_name();
            return Err(alloc_error("unable to mmap memory", &label, e));
        }
    };
    let sent_name = match strategy {
        Strategy::FileDescriptor => {
            let _ = shm_unlink(name);
            None
        }
        Strategy::FileSystem => Some(name.to_string()),
        Strategy::Memfd | Strategy::Disk => None,
    };
    Ok(NewSegment {
        fd,
        name: sent_name,
        map,
    })
}

fn open_new(strategy: Strategy, name: &str) -> Result<(OwnedFd, String), AllocError> {
    match strategy {
        Strategy::FileDescriptor | Strategy::FileSystem => {
            let flags = OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_RDWR;
            shm_open(name, flags, Mode::from_bits_truncate(0o600))
                .map(|fd| (fd, name.to_string()))
                .map_err(|e| alloc_error("unable to open shared memory object", name, e))
        }
        Strategy::Memfd => {
            nix::sys::memfd::memfd_create("shmbench-batch", nix::sys::memfd::MFdFlags::MFD_CLOEXEC)
                .map(|fd| (fd, "memfd:shmbench-batch".to_string()))
                .map_err(|e| alloc_error("unable to create memfd", "memfd:shmbench-batch", e))
        }
        Strategy::Disk => {
            let dir = std::env::var("TMPDIR").unwrap_or_else(|_| "/tmp".to_string());
            // O_TMPFILE: an unnamed file on that filesystem, so a crash can never leave one behind.
            nix::fcntl::open(
                dir.as_str(),
                OFlag::O_TMPFILE | OFlag::O_RDWR | OFlag::O_CLOEXEC,
                Mode::from_bits_truncate(0o600),
            )
            .map(|fd| (fd, format!("{dir}/(O_TMPFILE)")))
            .map_err(|e| alloc_error("unable to create a temporary file in", &dir, e))
        }
    }
}

/// Opens a file_system segment by name in the main (read-only).
pub fn open_named(name: &str) -> io::Result<OwnedFd> {
    shm_open(name, OFlag::O_RDONLY, Mode::empty()).map_err(io::Error::from)
}

/// Unlinks a named segment, ignoring one already gone.
pub fn unlink_named(name: &str) {
    let _ = shm_unlink(name);
}

/// An mmap of a whole segment, unmapped on drop.
pub struct Mapping {
    ptr: NonNull<libc::c_void>,
    len: usize,
}

impl Mapping {
    pub fn new(fd: BorrowedFd<'_>, bytes: u64, writable: bool) -> Result<Mapping, Errno> {
        let len = std::num::NonZeroUsize::new(bytes as usize).ok_or(Errno::EINVAL)?;
        let prot = if writable {
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE
        } else {
            ProtFlags::PROT_READ
        };
        // SAFETY: a fresh shared mapping of a file we hold; nothing else aliases it in this
        // process, and it lives until this Mapping drops.
        let ptr = unsafe { mmap(None, len, prot, MapFlags::MAP_SHARED, fd, 0)? };
        Ok(Mapping {
            ptr,
            len: bytes as usize,
        })
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr..ptr+len is mapped for the life of self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr() as *const u8, self.len) }
    }

    /// Writable view; only valid for mappings made with `writable = true`.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self makes this the only live view.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr() as *mut u8, self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: we own this mapping and no slice of it outlives self.
        unsafe {
            let _ = munmap(self.ptr, self.len);
        }
    }
}
