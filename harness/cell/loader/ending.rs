//! How the main loop ends early, in torch's words: a worker's death classified (SIGBUS, the
//! memory cgroup's OOM kill, another signal, an exit code), a batch's fd the worker's sharer could
//! not hand over, the DataLoader's timeout, and the harness's own errors.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use super::main_loop::Loop;
use super::sharer::FetchError;
use crate::model::record::Status;
use crate::sys::process::Exit;
use crate::sys::{cgroup, signals};

/// How the loop ended early.
pub(super) struct Stop {
    pub status: Status,
    pub message: String,
    pub signal: Option<i32>,
    pub pid: Option<u32>,
}

/// torch's hint when the fd table is full.
pub(super) const EMFILE_HINT: &str = "Too many open files. Communication with the workers is no longer possible. Please increase the limit using `ulimit -n` in the shell or change the sharing strategy by calling `torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of your code";

impl Loop<'_> {
    pub(super) fn stop_for_worker(
        &self,
        status: Status,
        message: String,
        pid: u32,
        signal: Option<i32>,
    ) -> Stop {
        Stop {
            status,
            message,
            signal,
            pid: Some(pid),
        }
    }

    /// torch's `timeout` expired waiting for a batch.
    pub(super) fn timed_out(&self) -> Stop {
        Stop {
            status: Status::Timeout,
            message: format!(
                "DataLoader timed out after {} seconds",
                self.config.timeout_s
            ),
            signal: None,
            pid: None,
        }
    }

    /// A batch's fd from its worker's sharer; a failure is the cell's end, as torch raises it.
    pub(super) fn fetch_fd(&mut self, worker: u32, idx: u64) -> Result<OwnedFd, Stop> {
        let deadline = Instant::now() + Duration::from_secs_f64(self.config.timeout_s);
        let error = match self.pool().fetch_fd(worker, idx, deadline) {
            Ok(fd) => return Ok(fd),
            Err(e) => e,
        };
        let stop = |status, message: String| Stop {
            status,
            message,
            signal: None,
            pid: None,
        };
        Err(match error {
            FetchError::FdTableFull => stop(Status::Emfile, EMFILE_HINT.to_string()),
            FetchError::Timeout => self.timed_out(),
            FetchError::Io(e) => stop(Status::Error, format!("harness error: {e}")),
            FetchError::WorkerGone => match self.pool().death_of(worker, Duration::from_secs(1)) {
                Some((pid, exit)) => self.classify_death(pid, exit),
                None => stop(
                    Status::Error,
                    format!("DataLoader worker {worker} stopped answering for batch {idx}"),
                ),
            },
        })
    }

    pub(super) fn classify_death(&self, pid: u32, exit: Exit) -> Stop {
        match exit {
            Exit::Signal(sig) if sig == libc::SIGBUS => self.stop_for_worker(
                Status::Sigbus,
                format!("DataLoader worker (pid {pid}) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit."),
                pid,
                Some(sig),
            ),
            Exit::Signal(sig) => {
                let oom_now = cgroup::oom_kills();
                let by_oom = sig == libc::SIGKILL
                    && matches!((self.oom_kills_at_start, oom_now), (Some(a), Some(b)) if b > a);
                let mut message = format!("DataLoader worker (pid {pid}) is killed by signal: {}.", signals::name(sig));
                if by_oom {
                    message.push_str(" The memory cgroup's OOM killer fired: tmpfs pages count against its limit.");
                }
                let status = if by_oom { Status::Oom } else { Status::Error };
                self.stop_for_worker(status, message, pid, Some(sig))
            }
            Exit::Code(code) => self.stop_for_worker(
                Status::Error,
                format!("DataLoader worker (pid(s) {pid}) exited unexpectedly (exit code {code})"),
                pid,
                None,
            ),
        }
    }
}

pub(super) fn harness_stop(e: anyhow::Error) -> Stop {
    Stop {
        status: Status::Error,
        message: format!("harness error: {e:#}"),
        signal: None,
        pid: None,
    }
}
