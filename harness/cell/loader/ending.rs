//! How the main loop ends early, in torch's words: a worker's death classified (SIGBUS, the
//! memory cgroup's OOM kill, another signal, an exit code), a batch's fd the worker's sharer could
//! not hand over, the DataLoader's timeout, and the harness's own errors.

use super::sharer::FetchError;
use model::record::Status;
use sys::process::Exit;
use sys::{cgroup, signals};

/// How the loop ended early.
pub(super) struct Stop {
    pub status: Status,
    pub message: String,
    pub signal: Option<i32>,
    pub pid: Option<u32>,
}

/// torch's hint when the fd table is full.
pub(super) const EMFILE_HINT: &str = "Too many open files. Communication with the workers is no longer possible. Please increase the limit using `ulimit -n` in the shell or change the sharing strategy by calling `torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of your code";

/// What a main that can map no more batches is told: the limit is per process, and every batch
/// it keeps alive is one mapping.
pub(super) const ENOMEM_HINT: &str = "the process holds vm.max_map_count memory mappings, one per batch it keeps alive: free the batches it keeps (a list of them, a leak), or raise the limit on the node with `sysctl -w vm.max_map_count=262144`";

impl Stop {
    /// An ending no single worker caused.
    pub(super) fn new(status: Status, message: String) -> Stop {
        Stop {
            status,
            message,
            signal: None,
            pid: None,
        }
    }

    /// An ending a worker caused.
    pub(super) fn by_worker(
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
    pub(super) fn timed_out(timeout_s: f64) -> Stop {
        Stop::new(
            Status::Timeout,
            format!("DataLoader timed out after {timeout_s} seconds"),
        )
    }

    /// A worker's death, as torch's SIGCHLD handler words it; a SIGKILL while the memory
    /// cgroup's OOM count rose since `oom_kills_at_start` is the OOM killer's.
    pub(super) fn death(pid: u32, exit: Exit, oom_kills_at_start: Option<u64>) -> Stop {
        match exit {
            Exit::Signal(sig) if sig == libc::SIGBUS => Stop::by_worker(
                Status::Sigbus,
                format!("DataLoader worker (pid {pid}) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit."),
                pid,
                Some(sig),
            ),
            Exit::Signal(sig) => {
                let oom_now = cgroup::oom_kills();
                let by_oom = sig == libc::SIGKILL
                    && matches!((oom_kills_at_start, oom_now), (Some(a), Some(b)) if b > a);
                let mut message = format!("DataLoader worker (pid {pid}) is killed by signal: {}.", signals::name(sig));
                if by_oom {
                    message.push_str(" The memory cgroup's OOM killer fired: tmpfs pages count against its limit.");
                }
                let status = if by_oom { Status::Oom } else { Status::Error };
                Stop::by_worker(status, message, pid, Some(sig))
            }
            Exit::Code(code) => Stop::by_worker(
                Status::Error,
                format!("DataLoader worker (pid(s) {pid}) exited unexpectedly (exit code {code})"),
                pid,
                None,
            ),
        }
    }

    /// Batch `idx`'s fd did not come from `worker`'s sharer: `death` is how the worker ended,
    /// when it did.
    pub(super) fn fetch_failed(
        error: FetchError,
        worker: u32,
        idx: u64,
        timeout_s: f64,
        death: Option<Stop>,
    ) -> Stop {
        match error {
            FetchError::FdTableFull => Stop::new(Status::Emfile, EMFILE_HINT.to_string()),
            FetchError::Timeout => Stop::timed_out(timeout_s),
            FetchError::Io(e) => Stop::new(Status::Error, format!("harness error: {e}")),
            FetchError::WorkerGone => death.unwrap_or_else(|| {
                Stop::new(
                    Status::Error,
                    format!("DataLoader worker {worker} stopped answering for batch {idx}"),
                )
            }),
        }
    }
}

pub(super) fn harness_stop(e: anyhow::Error) -> Stop {
    Stop::new(Status::Error, format!("harness error: {e:#}"))
}
