//! Building a results row: every column decided in one place, from the cell's record, the
//! fingerprint of the machine that ran it and a [`RowContext`] its caller passes (run,
//! repetition, command line, calibration, the files beside the CSV). Nothing patches a row
//! after.

use super::row::{Row, SCHEMA};
use model::calibration::Calibration;
use model::knobs::{AddedKnobs, Loader};
use model::record::{self, CellRecord};
use sys::fingerprint::Fingerprint;

/// What a row knows beside its record and the machine: the run it belongs to, its repetition,
/// the command line that ran it, this machine's calibration, and its files beside the CSV.
#[derive(Clone, Debug, Default)]
pub struct RowContext<'a> {
    pub run_id: &'a str,
    pub started_at: &'a str,
    /// 1-based repetition of the cell within the run.
    pub repeat: u32,
    /// The shmbench command line ([`command_line`] for this process).
    pub command: String,
    /// This machine's calibration, for the efficiency columns.
    pub calibration: Option<&'a Calibration>,
    /// The per-step series and the watch file, relative to the CSV's directory.
    pub steps_file: Option<String>,
    pub watch_file: Option<String>,
    /// Where a fleet's pod ran, as `k8s collect` knows it; None for a cell run here.
    pub placement: Option<Placement>,
}

/// Where a fleet's pod ran: its node and pod (from its record, else the API), the node's
/// versions (from `--nodes`), and its /dev/shm as the manifest sized it.
#[derive(Clone, Debug, Default)]
pub struct Placement {
    pub node: Option<String>,
    pub pod: Option<String>,
    /// The node's runtime as the API names it; None keeps what the pod's cgroup path said.
    pub container_runtime: Option<String>,
    pub kubelet_version: Option<String>,
    /// The emptyDir's sizeLimit of the pod's Job (None: the runtime's default).
    pub shm_bytes: Option<u64>,
    /// How the scheduler says the Slurm task that ran it ended (`slurm collect`).
    pub slurm_state: Option<String>,
}

/// Arguments as a command a user can paste into a shell (quoted by `shlex`, which knows every
/// character a shell treats specially). Arguments are bytes (a path need not be UTF-8): quoted
/// as bytes, then written into the row's text lossily, where a byte that is no character shows
/// as U+FFFD.
pub fn shell_words<A: AsRef<std::ffi::OsStr>>(args: impl IntoIterator<Item = A>) -> String {
    use std::os::unix::ffi::OsStrExt;
    let quote = |a: A| {
        let bytes = a.as_ref().as_bytes();
        match shlex::bytes::try_quote(bytes) {
            Ok(quoted) => String::from_utf8_lossy(&quoted).into_owned(),
            // Only a NUL byte is refused, and no argument of a process can hold one.
            Err(_) => String::from_utf8_lossy(bytes).replace('\0', ""),
        }
    };
    args.into_iter().map(quote).collect::<Vec<_>>().join(" ")
}

/// A results file's `command` as words a shell runs as one command, each quoted again: what
/// a file from elsewhere wrote as `;`, `|` or `$(...)` is then a word of that command, never a
/// command of its own. None for text a shell would not split (an open quote).
pub fn pasteable(command: &str) -> Option<String> {
    let words = shlex::split(command)?;
    (!words.is_empty()).then(|| shell_words(words))
}

/// This invocation as a command a user can paste (`shmbench matrix --steps 20`).
pub fn command_line() -> String {
    let args = std::env::args_os().skip(1);
    shell_words(std::iter::once(std::ffi::OsString::from("shmbench")).chain(args))
}

/// Milliseconds per unit of `seconds` spread over `count` units; None when nothing was counted.
fn per(seconds: Option<f64>, count: u64) -> Option<f64> {
    seconds
        .filter(|_| count > 0)
        .map(|s| s * 1000.0 / count as f64)
}

/// `x` rounded to `places` decimals (results keep what the measurement can tell).
pub fn round(x: f64, places: i32) -> f64 {
    let scale = 10f64.powi(places);
    (x * scale).round() / scale
}

impl Row {
    /// The row of one cell's record, run in the environment `fp`, in `context`: every column
    /// is decided here (the claim's verdict and the efficiency against the calibrated limit
    /// included), from the config, then what was measured, then the machine.
    pub fn new(record: &CellRecord, fp: &Fingerprint, context: RowContext) -> Row {
        let measured = Row::measured(record, fp);
        let c = &record.config;
        let claim = c.claim.as_ref();
        // This machine's physical limit for the cell's strategy and profile, in images per second.
        let limit = context
            .calibration
            .and_then(|cal| cal.limit_bytes_per_s(c.knobs.strategy, c.knobs.torch))
            .map(|bytes_per_s| bytes_per_s / c.image_bytes().max(1) as f64);
        let placed = context.placement.unwrap_or_else(|| Placement {
            node: measured.node.clone(),
            pod: measured.pod.clone(),
            container_runtime: None,
            kubelet_version: None,
            shm_bytes: c.knobs.shm_size.map(|s| s.bytes()),
            slurm_state: None,
        });
        Row {
            schema: SCHEMA,
            run_id: context.run_id.to_string(),
            repeat: context.repeat,
            started_at: context.started_at.to_string(),
            scenario: c.scenario.clone(),
            cell: c.cell.clone(),
            environment: c.environment.clone(),
            runtime: c.knobs.runtime,
            runtime_note: c.runtime_note.clone(),
            container: c.knobs.container,
            ipc: c.knobs.ipc,
            memory_bytes: c.knobs.memory.map(|m| m.bytes()),
            shm_tmpfs: c.knobs.shm_tmpfs,
            shm_bytes: placed.shm_bytes,
            strategy: c.knobs.strategy,
            torch: c.knobs.torch,
            workers: c.knobs.workers,
            prefetch: c.knobs.prefetch,
            batch: c.knobs.batch,
            shape: c.knobs.shape.clone(),
            dtype: c.knobs.dtype,
            batch_bytes: c.batch_bytes(),
            steps: c.knobs.steps,
            epochs: c.knobs.epochs,
            persistent_workers: c.knobs.persistent_workers,
            pin_memory: c.knobs.pin_memory,
            touch: c.knobs.touch,
            compute_ms: c.knobs.compute_ms,
            decode_us: c.knobs.decode_us,
            retain_every: c.knobs.retain_every,
            claim_status: claim.map(|c| c.status),
            claim_crash_step: claim.and_then(|c| c.crash_step),
            claim_img_per_s: claim.and_then(|c| c.img_per_s),
            loader: c.knobs.loader,
            image: c.knobs.image.clone(),
            main_us: c.knobs.main_us,
            cpus: c.knobs.cpus.as_ref().map(ToString::to_string),
            claim_source: claim.and_then(|c| c.source.clone()),
            watched_command: c.watch.as_ref().map(|w| shell_words(w.command.clone())),
            nofile: c.knobs.nofile,
            shm_remount_bytes: c.knobs.shm_remount.map(|s| s.bytes()),
            added: AddedKnobs::of(&c.knobs),
            limit_img_per_s: limit.map(|l| round(l, 1)),
            efficiency: limit.and_then(|l| measured.img_per_s.map(|r| round(r / l, 4))),
            steps_file: context.steps_file,
            command: context.command,
            claim_verdict: claim.map(|cl| {
                record::claim_verdict(
                    cl.status,
                    cl.crash_step,
                    cl.cause.map(|c| c.name()),
                    measured.status,
                    measured.crash_step,
                    record.explanation.as_ref().map(|e| e.cause.name()),
                )
            }),
            claim_cause: claim.and_then(|c| c.cause).map(|c| c.name().to_string()),
            watch_file: context.watch_file,
            kubelet_version: placed.kubelet_version,
            slurm_state: placed.slurm_state,
            node: placed.node,
            pod: placed.pod,
            container_runtime: placed
                .container_runtime
                .or_else(|| measured.container_runtime.clone()),
            ..measured
        }
    }

    /// The columns of what the cell did: its outcome, its metrics, where it ran (pod, VM).
    fn measured(record: &CellRecord, fp: &Fingerprint) -> Row {
        // A VM cell ran on its guest: the machine columns are the guest's.
        let in_guest = record.vm.as_ref().map(|v| fp.in_guest(&v.fingerprint));
        let fp = in_guest.as_ref().unwrap_or(fp);
        let vm = record.vm.as_ref();
        let c = &record.config;
        let m = &record.metrics;
        // Per image only where there are images: a watched command's batch is not known.
        let images = m.steps_done * c.knobs.batch as u64;
        let per_image = |count: Option<f64>| {
            count
                .filter(|_| images > 0 && c.knobs.loader != Loader::Command)
                .map(|n| n / images as f64)
        };
        Row {
            shm_seen_bytes: record.shm_seen_bytes,
            status: record.status,
            // A watched job without a step regex has no steps to name: its time is in its report.
            crash_step: record
                .failure
                .as_ref()
                .map(|f| f.crash_step)
                .filter(|_| c.counts_steps()),
            signal: record.failure.as_ref().and_then(|f| f.signal),
            pid: record.failure.as_ref().and_then(|f| f.pid),
            steps_done: m.steps_done,
            img_per_s: m.img_per_s.map(|x| round(x, 1)),
            warmup_steps: m.warmup_steps_used,
            step_p50_ms: m.step_p50_ms.map(|x| round(x, 3)),
            step_p99_ms: m.step_p99_ms.map(|x| round(x, 3)),
            first_batch_ms: m.first_batch_ms.map(|x| round(x, 3)),
            peak_shm_bytes: m.peak_shm_bytes,
            shm_used_at_failure_bytes: record.failure.as_ref().map(|f| f.shm_used_bytes),
            peak_rss_bytes: m.peak_rss_bytes,
            main_private_rss_bytes: m.main_private_rss_bytes,
            worker_private_rss_bytes: m.worker_private_rss_bytes,
            accel_util: m.accel_util.map(|x| round(x, 4)),
            wall_s: round(m.wall_s, 3),
            message: record.message.clone(),
            torch_version: record.torch_version.clone(),
            cpu_ms_per_img: per_image(m.cpu_s.map(|s| s * 1000.0)).map(|x| round(x, 4)),
            main_cpu_ms_per_step: per(m.main_cpu_s, m.steps_done).map(|x| round(x, 3)),
            img_per_s_p50: m
                .step_p50_ms
                .filter(|ms| *ms > 0.0)
                .map(|ms| round(c.knobs.batch as f64 * 1000.0 / ms, 1)),
            faults_per_img: per_image(m.page_faults.map(|f| f as f64)).map(|x| round(x, 2)),
            exit_code: record.exit_code,
            cause: record
                .explanation
                .as_ref()
                .map(|e| e.cause.name().to_string()),
            cause_facts: record.explanation.as_ref().map(|e| e.facts.join("; ")),
            node: record
                .pod
                .as_ref()
                .and_then(|p| p.node.clone())
                .or_else(|| record.slurm.as_ref().and_then(|s| s.node.clone())),
            pod: record.pod.as_ref().map(|p| p.pod.clone()),
            slurm_job: record.slurm.as_ref().map(|s| s.name()),
            slurm_version: record.slurm.as_ref().and_then(|s| s.version.clone()),
            container_runtime: record
                .pod
                .as_ref()
                .and_then(|p| p.container_runtime.clone()),
            peak_fds: m.peak_fds,
            instructions_per_img: per_image(m.instructions.map(|n| n as f64)).map(|x| round(x, 1)),
            instructions_scope: m.instructions.map(|_| match m.instructions_user_only {
                true => "user".to_string(),
                false => "user+kernel".to_string(),
            }),
            vm_kernel: vm.map(|v| v.kernel.clone()),
            vm_accel: vm.and_then(|v| v.accel),
            vm_memory_bytes: vm.map(|v| v.memory_bytes),
            vm_cpus: vm.map(|v| v.cpus),
            vm_wall_s: vm.map(|v| round(v.boot_and_run_s, 3)),
            ..Row::machine(fp)
        }
    }

    /// The columns of the machine that ran the cell.
    fn machine(fp: &Fingerprint) -> Row {
        Row {
            env_id: fp.env_id(),
            kernel: fp.kernel.clone(),
            os: fp.os.clone(),
            cpu: fp.cpu.clone(),
            cores: fp.cores,
            mem_bytes: fp.mem_bytes,
            host_shm_bytes: fp.host_shm_bytes,
            cgroup_version: fp.cgroup_version.clone(),
            cgroup_memory_limit: fp.cgroup_memory_limit,
            host: fp.host.clone(),
            harness_version: fp.harness_version.clone(),
            thp_shmem: fp.thp_shmem.clone(),
            gpu_driver: fp.gpu_driver.clone(),
            docker_version: fp.docker.as_ref().map(|d| d.version.clone()),
            docker_api_version: fp.docker.as_ref().map(|d| d.api_version.clone()),
            docker_cgroup_version: fp.docker.as_ref().map(|d| d.cgroup_version.clone()),
            docker_cgroup_driver: fp.docker.as_ref().map(|d| d.cgroup_driver.clone()),
            docker_storage_driver: fp.docker.as_ref().map(|d| d.storage_driver.clone()),
            docker_oci_runtime: fp
                .docker
                .as_ref()
                .map(|d| d.oci_runtime.clone())
                .filter(|r| !r.is_empty()),
            docker_rootless: fp.docker.as_ref().map(|d| d.rootless),
            ..Row::default()
        }
    }
}
