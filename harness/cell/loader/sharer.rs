//! How a file_descriptor batch's fd reaches the main: torch's resource sharer, emulated.
//!
//! A torch worker does not send the fd with the batch. Pickling the storage registers a dup of
//! it with `multiprocessing.resource_sharer`, a thread in the worker, and the batch's message
//! carries only a key. Unpickling it in the main (`rebuild_storage_fd`, as each message is taken
//! off the data queue) connects to that thread and waits on it four times: the authkey
//! challenge it sends, its welcome after the main's answer, its answer to the main's own
//! challenge, and the fd for the key. Each wait needs the worker's thread to be scheduled while
//! the worker's main thread is busy with the next batch, so the main's receive takes
//! scheduling latency, not CPU: measured on the development machine (2 cores, torch 2.9.1 and
//! 2.15, `rebuild_storage_fd` timed in the main over 40 batches), 0.35-0.40 ms of the main's CPU
//! but 0.8-2.9 ms median and 9-27 ms at the 90th percentile of wall time, the long tail when
//! every worker is busy. While it waits the main neither consumes nor frees batches, so the
//! queue runs fuller: with a bare fd in the message the emulation crashed 1-2 steps later than
//! torch where a batch is small against the tmpfs (4 workers of batch 32 in 96m: steps 3-4
//! against torch's 1-2).
//!
//! So each worker runs a sharer thread on its own socket ([`SHARER_SOCKET_FD`]), holds every
//! batch's fd there until the main fetches it, and the main makes the same four round trips
//! ([`fetch`]). file_system batches travel by name and need none of this, as in torch.

use std::collections::HashMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use nix::poll::{poll, PollFd, PollFlags};
use serde::{Deserialize, Serialize};

use super::wire::{self, Received, RecvError};
use sys::process;

/// The fd number a worker finds its sharer socket on.
pub const SHARER_SOCKET_FD: RawFd = 4;

/// The main's waits on the sharer per fd: challenge, welcome, answer, the fd itself.
pub const ROUND_TRIPS: u32 = 4;

/// One step of the exchange for batch `idx`, both ways: the main asks with it and the sharer
/// answers with the same; the last answer carries the fd (none: no such batch).
#[derive(Debug, Serialize, Deserialize)]
pub struct Round {
    pub idx: u64,
    pub round: u32,
}

/// The worker's side: the fds waiting for the main, served by a thread.
pub struct Sharer {
    held: Arc<Mutex<HashMap<u64, OwnedFd>>>,
}

impl Sharer {
    /// Starts the sharer thread on `sock`; it ends when the main closes its end.
    pub fn start(sock: OwnedFd) -> std::io::Result<Sharer> {
        let held: Arc<Mutex<HashMap<u64, OwnedFd>>> = Arc::default();
        let served = held.clone();
        std::thread::Builder::new()
            .name("resource-sharer".into())
            .spawn(move || serve(sock, &served))?;
        Ok(Sharer { held })
    }

    /// Keeps batch `idx`'s fd until the main fetches it.
    pub fn hold(&self, idx: u64, fd: OwnedFd) {
        self.held
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(idx, fd);
    }
}

fn serve(sock: OwnedFd, held: &Mutex<HashMap<u64, OwnedFd>>) {
    while let Ok(r) = wire::recv::<Round>(sock.as_fd()) {
        let answer = r.msg;
        let (idx, round) = (answer.idx, answer.round);
        let sent = if round + 1 < ROUND_TRIPS {
            wire::send(sock.as_fd(), &answer, None)
        } else {
            let fd = held.lock().unwrap_or_else(|e| e.into_inner()).remove(&idx);
            wire::send(sock.as_fd(), &answer, fd.as_ref().map(|f| f.as_fd()))
        };
        if sent.is_err() {
            return;
        }
    }
}

/// Why the main got no fd.
#[derive(Debug)]
pub enum FetchError {
    /// The worker died or closed its sharer (its death says why).
    WorkerGone,
    /// The fd did not fit in the main's fd table.
    FdTableFull,
    /// No answer before the DataLoader's timeout.
    Timeout,
    Io(std::io::Error),
}

/// The main's side: fetches batch `idx`'s fd from a worker's sharer, watching the worker's
/// pidfd so a death mid-exchange ends it at once.
pub fn fetch(
    sock: BorrowedFd<'_>,
    pidfd: BorrowedFd<'_>,
    idx: u64,
    deadline: Instant,
) -> Result<OwnedFd, FetchError> {
    for round in 0..ROUND_TRIPS - 1 {
        exchange(sock, pidfd, idx, round, deadline)?;
    }
    exchange(sock, pidfd, idx, ROUND_TRIPS - 1, deadline)?
        .fd
        .ok_or_else(|| {
            FetchError::Io(std::io::Error::other(format!(
                "the worker's sharer holds no fd for batch {idx}"
            )))
        })
}

/// One round trip: asks, waits, and checks the answer is to this batch and round.
fn exchange(
    sock: BorrowedFd<'_>,
    pidfd: BorrowedFd<'_>,
    idx: u64,
    round: u32,
    deadline: Instant,
) -> Result<Received<Round>, FetchError> {
    wire::send(sock, &Round { idx, round }, None).map_err(|_| FetchError::WorkerGone)?;
    wait_readable(sock, pidfd, deadline)?;
    let r = wire::recv::<Round>(sock).map_err(|e| match e {
        RecvError::Closed => FetchError::WorkerGone,
        RecvError::FdTableFull => FetchError::FdTableFull,
        RecvError::Io(e) => FetchError::Io(e),
    })?;
    if r.msg.idx != idx || r.msg.round != round {
        return Err(FetchError::Io(std::io::Error::other(format!(
            "sharer answered batch {} round {} to batch {idx} round {round}",
            r.msg.idx, r.msg.round
        ))));
    }
    Ok(r)
}

/// Blocks until `sock` has a message; a worker death first is `WorkerGone`.
fn wait_readable(
    sock: BorrowedFd<'_>,
    pidfd: BorrowedFd<'_>,
    deadline: Instant,
) -> Result<(), FetchError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(FetchError::Timeout);
        }
        let mut fds = [
            PollFd::new(sock, PollFlags::POLLIN),
            PollFd::new(pidfd, PollFlags::POLLIN),
        ];
        match poll(&mut fds, process::poll_timeout(left)) {
            Ok(0) | Err(nix::errno::Errno::EINTR) => continue,
            Ok(_) => {}
            Err(e) => return Err(FetchError::Io(e.into())),
        }
        let ready = |f: &PollFd<'_>| f.revents().is_some_and(|r| !r.is_empty());
        if ready(&fds[0]) {
            return Ok(());
        }
        if ready(&fds[1]) {
            return Err(FetchError::WorkerGone);
        }
    }
}
