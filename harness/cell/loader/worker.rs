//! A DataLoader worker process: `shmbench worker <id> <config-json>`, its socket on fd 3 and its
//! sharer's on fd 4.
//!
//! For each task index it produces the batch's samples one by one in private memory (the
//! Dataset), then allocates a fresh shared segment and copies the samples into it in one pass
//! (`default_collate` + `torch.stack(out=...)`), then drops its own mapping and sends the
//! segment's name (file_system) or a note that its fd waits in the worker's sharer thread
//! ([`super::sharer`]). A full tmpfs kills it here with SIGBUS (legacy) or makes it report
//! ENOSPC (modern).

use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::time::Duration;

use anyhow::{Context, Result};

use super::inject;
use super::segment;
use super::sharer::{Sharer, SHARER_SOCKET_FD};
use super::synth::{spend_cpu, Pattern};
use super::wire::{self, FromWorker, RecvError, ToWorker, WORKER_SOCKET_FD};
use model::config::CellConfig;
use sys::owner::Token;

/// Runs the worker loop until told to stop or the main goes away; returns the exit code.
pub fn run(worker_id: u32, main_pid: u32, token: &Token, config: &CellConfig) -> Result<i32> {
    // Die with the main even if it is SIGKILLed: no orphaned workers holding segments. (Also
    // armed before exec; checking the parent closes the window in which the main may have died.)
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .context("setting PR_SET_PDEATHSIG")?;
    // Rust's runtime catches SIGSEGV and SIGBUS to report stack overflows and swallows one sent
    // with kill(2). A DataLoader worker (a Python process) dies of them: restore the default.
    // SAFETY: changing a signal disposition in a single-threaded process.
    unsafe {
        libc::signal(libc::SIGBUS, libc::SIG_DFL);
        libc::signal(libc::SIGSEGV, libc::SIG_DFL);
    }
    if nix::unistd::getppid().as_raw() as u32 != main_pid {
        return Ok(0);
    }
    // SAFETY: the main dup2'ed our end of the socket pair onto this fd before exec.
    let sock = unsafe { OwnedFd::from_raw_fd(WORKER_SOCKET_FD) };
    // SAFETY: likewise for the sharer's socket.
    let sharer = Sharer::start(unsafe { OwnedFd::from_raw_fd(SHARER_SOCKET_FD) })
        .context("starting the worker's resource-sharer thread")?;
    let image_bytes = config.image_bytes() as usize;
    let batch_bytes = config.batch_bytes();
    let pattern = Pattern::new(image_bytes, 0x5eed ^ worker_id as u64);
    let decode = Duration::from_micros(config.knobs.decode_us);
    let mut private = vec![0u8; batch_bytes as usize];
    let inject = inject::Worker::open(config);
    let mut seq = 0u64;
    loop {
        let task = match wire::recv::<ToWorker>(sock.as_fd()) {
            Ok(r) => r.msg,
            Err(RecvError::Closed) => return Ok(0),
            Err(e) => anyhow::bail!("worker {worker_id}: receiving a task: {e:?}"),
        };
        let idx = match task {
            ToWorker::Task { idx } => idx,
            ToWorker::Stop => return Ok(0),
        };
        // Phase 1: the Dataset's samples, in private memory.
        inject.on_task(idx);
        for (i, image) in private.chunks_mut(image_bytes).enumerate() {
            pattern.fill(image, idx, i as u64);
            spend_cpu(decode);
        }
        // Phase 2: collate into a fresh shared segment.
        let name = segment::segment_name(token, worker_id, seq);
        seq += 1;
        let mut seg = match segment::create(
            config.knobs.strategy,
            config.knobs.torch,
            batch_bytes,
            &name,
        ) {
            Ok(s) => s,
            Err(e) => {
                let msg = FromWorker::Failed {
                    idx,
                    kind: e.kind,
                    message: e.message,
                };
                // Like torch's worker loop: the error travels as this index's result and the
                // worker carries on; the main raises it when the index's turn comes.
                if wire::send(sock.as_fd(), &msg, None).is_err() {
                    return Ok(0);
                }
                continue;
            }
        };
        seg.map.as_mut_slice().copy_from_slice(&private);
        drop(seg.map);
        let msg = FromWorker::Batch {
            idx,
            bytes: batch_bytes,
            name: seg.name.clone(),
        };
        // An unnamed segment's fd waits in the sharer until the main fetches it.
        if seg.name.is_none() {
            sharer.hold(idx, seg.fd);
        }
        if wire::send(sock.as_fd(), &msg, None).is_err() {
            // The main is gone; do not leave a named segment behind.
            if let Some(n) = &seg.name {
                segment::unlink_named(n);
            }
            return Ok(0);
        }
    }
}
