//! What a cell reports: the one JSON record `shmbench cell` prints on stdout, and its parts.
//!
//! The record carries the resolved config it ran, the outcome, the metrics and a per-step
//! series. The harness turns records into results rows (`results::row`), adding the environment
//! fingerprint.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::claim::{ClaimStatus, ClaimVerdict};
use super::config::CellConfig;
use super::pod::PodInfo;
use super::slurm_task::SlurmTask;
use super::vm::VmInfo;
use super::watch::WatchFindings;

/// How a cell ended.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Every step ran.
    Pass,
    /// A worker was killed by SIGBUS (legacy allocation on a full tmpfs).
    Sigbus,
    /// Allocation failed with ENOSPC (modern allocation, or the legacy 1-byte write on a full tmpfs).
    Enospc,
    /// A process was killed by the kernel's OOM killer (memory cgroup limit).
    Oom,
    /// Too many open files (the file_descriptor strategy holds one fd per batch).
    Emfile,
    /// mmap refused with ENOMEM: the process holds vm.max_map_count mappings (one per batch it
    /// keeps alive), torch's "unable to mmap ... Cannot allocate memory (12)".
    Enomem,
    /// A file_system segment was gone when the main opened it by name (removed under the job:
    /// systemd-logind's RemoveIPC, a cleaner), torch's "unable to open shared memory object
    /// ... No such file or directory (2)".
    Enoent,
    /// No progress within the watchdog's time, or a Slurm task past its time limit.
    Timeout,
    /// The kubelet evicted the pod that ran the cell (node memory pressure, or an emptyDir over
    /// its sizeLimit where that is not the tmpfs size): read from the pod's status by
    /// `k8s collect`, since an evicted pod prints no record; or a Slurm task preempted.
    Evicted,
    /// Anything else: a worker killed by another signal, a harness or runtime failure.
    #[default]
    Error,
}

impl Status {
    pub fn is_pass(self) -> bool {
        self == Status::Pass
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Status::Pass => "pass",
            Status::Sigbus => "sigbus",
            Status::Enospc => "enospc",
            Status::Oom => "oom",
            Status::Emfile => "emfile",
            Status::Enomem => "enomem",
            Status::Enoent => "enoent",
            Status::Timeout => "timeout",
            Status::Evicted => "evicted",
            Status::Error => "error",
        };
        f.write_str(s)
    }
}

/// One step of the training loop, as the consumer saw it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepSample {
    /// 1-based global step (across epochs).
    pub step: u64,
    /// Seconds since the cell's loader started when this step's batch was obtained.
    pub t_s: f64,
    /// Seconds since the previous step's batch (or since start for step 1).
    pub latency_s: f64,
    /// /dev/shm bytes in use (above the cell's starting level) when the batch was obtained.
    pub shm_used_bytes: u64,
    /// Batches requested and not yet consumed (in workers, in flight, or waiting in order).
    pub in_flight: u64,
}

/// How a failed cell failed.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// The 1-based step that did not complete (the one the consumer was waiting for).
    pub crash_step: u64,
    /// Signal that killed the worker, if one did.
    pub signal: Option<i32>,
    /// The worker's pid, where a worker failed.
    pub pid: Option<u32>,
    /// /dev/shm bytes in use when the failure was noticed.
    pub shm_used_bytes: u64,
}

/// Measurements of one cell.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub steps_done: u64,
    /// Steady-state images per second over the steps after `warmup_steps_used`; None when too
    /// few steps ran to measure.
    pub img_per_s: Option<f64>,
    pub warmup_steps_used: u64,
    pub step_p50_ms: Option<f64>,
    pub step_p99_ms: Option<f64>,
    pub first_batch_ms: Option<f64>,
    /// Highest /dev/shm use seen above the starting level (sampled every millisecond and at
    /// every step).
    pub peak_shm_bytes: u64,
    /// Peak resident set of the main process (VmHWM; includes shared pages it mapped).
    pub peak_rss_bytes: u64,
    /// Highest private resident memory (RssAnon + RssFile, no shared memory) of the main, and
    /// of any one worker, sampled during the run.
    #[serde(default)]
    pub main_private_rss_bytes: u64,
    #[serde(default)]
    pub worker_private_rss_bytes: u64,
    /// Fraction of steady-state wall time the emulated accelerator was busy (compute-ms > 0).
    pub accel_util: Option<f64>,
    pub wall_s: f64,
    /// CPU seconds (user + system) of every process of the cell: main and workers (for a torch
    /// cell, its Python and the workers it reaped, less the Python's start-up before the loop).
    #[serde(default)]
    pub cpu_s: Option<f64>,
    /// CPU seconds of the loop's main process alone (a torch cell's Python main, all threads).
    #[serde(default)]
    pub main_cpu_s: Option<f64>,
    /// Page faults (minor + major) of every process of the cell, counted like `cpu_s`.
    #[serde(default)]
    pub page_faults: Option<u64>,
    /// The most file descriptors the loader's main process held open when a step's batch was
    /// obtained (file_descriptor keeps one per live batch; file_system none).
    #[serde(default)]
    pub peak_fds: Option<u64>,
    /// Instructions every process of the cell executed (perf_event_open, inherited by the
    /// workers), where the kernel has and allows hardware counters.
    #[serde(default)]
    pub instructions: Option<u64>,
    /// Whether that count is of user space only (perf_event_paranoid forbade the kernel's part).
    #[serde(default)]
    pub instructions_user_only: bool,
}

/// The one JSON object a cell prints.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    pub config: CellConfig,
    pub status: Status,
    /// Torch-style message for a failure, or a note.
    pub message: String,
    pub failure: Option<Failure>,
    pub metrics: Metrics,
    /// Capacity of the /dev/shm the cell saw, in bytes.
    pub shm_seen_bytes: u64,
    /// Per-step series (for plots and time-series exports).
    pub series: Vec<StepSample>,
    /// The torch version that ran a torch cell.
    #[serde(default)]
    pub torch_version: Option<String>,
    /// A watched command's exit code (128 + N when a signal N killed it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// What watching a command saw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchFindings>,
    /// Why the cell ended as it did, when it did not pass: the cause, its facts and its fix
    /// (`explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<explain::Explanation>,
    /// The Kubernetes pod that ran the cell (`shmbench cell --from` in an Indexed Job's pod).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodInfo>,
    /// The VM that ran the cell (`--runtime vm`): kernel, accelerator, size, the guest's view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<VmInfo>,
    /// The Slurm array task that ran the cell (`shmbench slurm task`, in a job of the script
    /// `slurm script` writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmTask>,
}

impl CellRecord {
    /// A record for a cell that could not run or report, so the matrix still has its row.
    pub fn failed_to_run(config: CellConfig, status: Status, message: String) -> Self {
        CellRecord {
            config,
            status,
            message,
            failure: None,
            metrics: Metrics::default(),
            shm_seen_bytes: 0,
            series: Vec::new(),
            torch_version: None,
            exit_code: None,
            watch: None,
            explanation: None,
            pod: None,
            vm: None,
            slurm: None,
        }
    }

    /// A cell whose main the memory limit's OOM killer ended printed no record, so the runtime
    /// made an `error` one. Names it `oom`, as a worker's OOM death is named, when the runtime saw
    /// the kill (its cgroup's count, or Docker's event); `what` says how the main went.
    pub fn main_killed_by_oom(&mut self, oom_killed: bool, what: &str) {
        if oom_killed && self.status == Status::Error && self.failure.is_none() {
            self.status = Status::Oom;
            self.message = format!("{what}: tmpfs pages count against the memory limit");
        }
    }
}

/// How a measurement (`status`, crashing at `crash_step`, of `cause`) stands against a claim of
/// `claimed` at `claimed_step` (of `claimed_cause`, an `explain::Cause`'s name). Outcomes are
/// compared (pass vs crash, the crash step where both name one, the cause where the claim names
/// one); a run that could not measure is inconclusive; throughput never makes a row disagree.
pub fn claim_verdict(
    claimed: ClaimStatus,
    claimed_step: Option<u64>,
    claimed_cause: Option<&str>,
    status: Status,
    crash_step: Option<u64>,
    cause: Option<&str>,
) -> ClaimVerdict {
    if matches!(status, Status::Error | Status::Timeout) {
        return ClaimVerdict::Inconclusive;
    }
    let same_outcome = status.is_pass() == (claimed == ClaimStatus::Pass);
    let same_step = match (crash_step, claimed_step) {
        (Some(measured), Some(claimed)) => measured == claimed,
        _ => true,
    };
    let same_cause = claimed_cause.is_none_or(|c| cause == Some(c));
    match same_outcome && same_step && same_cause {
        true => ClaimVerdict::Agrees,
        false => ClaimVerdict::Differs,
    }
}

#[cfg(test)]
mod claim_tests {
    use super::*;
    use ClaimStatus::{Crash, Pass};

    #[test]
    fn outcomes_and_crash_steps_decide_a_claim_and_a_failed_run_decides_nothing() {
        assert_eq!(
            claim_verdict(Pass, None, None, Status::Pass, None, None),
            ClaimVerdict::Agrees
        );
        assert_eq!(
            claim_verdict(Crash, Some(2), None, Status::Sigbus, Some(2), None),
            ClaimVerdict::Agrees
        );
        assert_eq!(
            claim_verdict(Crash, Some(2), None, Status::Enospc, Some(5), None),
            ClaimVerdict::Differs
        );
        assert_eq!(
            claim_verdict(Pass, None, None, Status::Sigbus, Some(1), None),
            ClaimVerdict::Differs
        );
        // A claim without a step agrees with a crash at any step.
        assert_eq!(
            claim_verdict(Crash, None, None, Status::Oom, Some(9), None),
            ClaimVerdict::Agrees
        );
        // A claimed cause must be the one named.
        let cause = |named| {
            claim_verdict(
                Crash,
                None,
                Some("mapped-file"),
                Status::Sigbus,
                Some(3),
                named,
            )
        };
        assert_eq!(cause(Some("mapped-file")), ClaimVerdict::Agrees);
        assert_eq!(cause(Some("tmpfs-full")), ClaimVerdict::Differs);
        assert_eq!(cause(None), ClaimVerdict::Differs);
        for failed in [Status::Error, Status::Timeout] {
            assert_eq!(
                claim_verdict(Pass, None, None, failed, None, None),
                ClaimVerdict::Inconclusive
            );
        }
    }
}
