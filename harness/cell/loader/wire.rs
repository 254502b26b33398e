//! Messages between the main and its workers over one SOCK_SEQPACKET socket pair per worker.
//!
//! The main sends task indices (torch's per-worker index queue); a worker answers with the batch
//! (a segment name for file_system; for file_descriptor, memfd and disk the fd waits in the
//! worker's sharer, which hands it over SCM_RIGHTS on a second pair: [`super::sharer`]), or with
//! the error it hit. Seqpacket keeps message boundaries, so one `recvmsg` is one message and its
//! fd.

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{
    recvmsg, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags,
    SockFlag, SockType,
};
use serde::{Deserialize, Serialize};

use model::record::Status;

/// Main -> worker.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub enum ToWorker {
    /// Produce the batch with this global index.
    Task { idx: u64 },
    /// Exit cleanly.
    Stop,
}

/// What kind of error a worker reports (it maps onto a cell status).
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub enum ErrorKind {
    Enospc,
    Emfile,
    Enomem,
    Other,
}

impl ErrorKind {
    /// The cell status an error of this kind ends it with.
    pub fn status(self) -> Status {
        match self {
            ErrorKind::Enospc => Status::Enospc,
            ErrorKind::Emfile => Status::Emfile,
            ErrorKind::Enomem => Status::Enomem,
            ErrorKind::Other => Status::Error,
        }
    }
}

/// Worker -> main.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub enum FromWorker {
    /// A finished batch: by `name` for file_system, else its fd waits in the worker's sharer.
    Batch {
        idx: u64,
        bytes: u64,
        name: Option<String>,
    },
    /// The worker could not produce `idx`; it exits after sending this.
    Failed {
        idx: u64,
        kind: ErrorKind,
        message: String,
    },
}

/// A received message and the fd that came with it.
pub struct Received<T> {
    pub msg: T,
    pub fd: Option<OwnedFd>,
}

/// Why a receive produced no message.
#[derive(Debug)]
pub enum RecvError {
    /// The peer closed its end (it exited or died).
    Closed,
    /// The message carried an fd that did not fit in this process's fd table (EMFILE).
    FdTableFull,
    Io(io::Error),
}

/// A connected pair: (main's end, worker's end). Both close on exec; the worker's end is
/// duplicated onto fd 3 of the worker, which clears that flag there.
pub fn pair() -> io::Result<(OwnedFd, OwnedFd)> {
    socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )
    .map_err(io::Error::from)
}

/// The fd number a worker finds its socket on.
pub const WORKER_SOCKET_FD: RawFd = 3;

pub fn send<T: Serialize>(
    sock: BorrowedFd<'_>,
    msg: &T,
    fd: Option<BorrowedFd<'_>>,
) -> io::Result<()> {
    let bytes = serde_json::to_vec(msg).map_err(io::Error::other)?;
    let iov = [IoSlice::new(&bytes)];
    let fds: Vec<RawFd> = fd.iter().map(|f| f.as_raw_fd()).collect();
    let cmsgs: Vec<ControlMessage<'_>> = if fds.is_empty() {
        Vec::new()
    } else {
        vec![ControlMessage::ScmRights(&fds)]
    };
    loop {
        match sendmsg::<()>(sock.as_raw_fd(), &iov, &cmsgs, MsgFlags::MSG_NOSIGNAL, None) {
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

pub fn recv<T: for<'de> Deserialize<'de>>(sock: BorrowedFd<'_>) -> Result<Received<T>, RecvError> {
    let mut buf = [0u8; 4096];
    let mut cmsg_space = nix::cmsg_space!([RawFd; 1]);
    loop {
        let mut iov = [IoSliceMut::new(&mut buf)];
        let result = recvmsg::<()>(
            sock.as_raw_fd(),
            &mut iov,
            Some(&mut cmsg_space),
            MsgFlags::MSG_CMSG_CLOEXEC,
        );
        let msg = match result {
            Ok(m) => m,
            Err(nix::errno::Errno::EINTR) => continue,
            // A peer that died with our messages unread resets the connection.
            Err(nix::errno::Errno::ECONNRESET) => return Err(RecvError::Closed),
            Err(e) => return Err(RecvError::Io(e.into())),
        };
        if msg.bytes == 0 {
            return Err(RecvError::Closed);
        }
        if msg.flags.contains(MsgFlags::MSG_CTRUNC) {
            // The kernel drops SCM_RIGHTS it cannot install (RLIMIT_NOFILE reached) and says so
            // with MSG_CTRUNC: the batch is unreachable. (One fd per message: none was installed.)
            return Err(RecvError::FdTableFull);
        }
        let mut fd = None;
        for cmsg in msg.cmsgs().map_err(|e| RecvError::Io(e.into()))? {
            if let ControlMessageOwned::ScmRights(fds) = cmsg {
                for raw in fds {
                    // SAFETY: the kernel just installed this fd in our table for us alone.
                    let owned = unsafe { OwnedFd::from_raw_fd(raw) };
                    if fd.is_none() {
                        fd = Some(owned);
                    }
                }
            }
        }
        let n = msg.bytes;
        let parsed = serde_json::from_slice(&buf[..n])
            .map_err(|e| RecvError::Io(io::Error::new(io::ErrorKind::InvalidData, e)))?;
        return Ok(Received { msg: parsed, fd });
    }
}
