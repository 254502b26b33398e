//! One results row per cell run: the public, versioned CSV contract (documented column by column
//! in `results/README.md`), typed: statuses, strategies, runtimes and profiles are the model's
//! enums, written with the same names as the flags.

use serde::{Deserialize, Serialize};

use super::atomic::CsvRow;
use super::knob_columns;
use model::claim::{ClaimStatus, ClaimVerdict};
use model::knobs::{
    AddedKnobs, ContainerKind, Dtype, IpcMode, Loader, RuntimeKind, Shape, Strategy, TorchProfile,
    Touch,
};
use model::record::Status;
use model::vm::Accel;

/// Bump on any change to the columns' names, order or meaning.
pub const SCHEMA: u32 = 9;

/// Earlier schemas this shmbench still reads (their missing columns take their defaults).
pub const READS: &[u32] = &[1, 2, 3, 4, 5, 6, 7, 8, SCHEMA];

/// One CSV row. Field order is column order. `Row::default()` is every column empty or zero:
/// only the base `Row::new` (in `row_build`) builds on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub schema: u32,
    pub run_id: String,
    /// 1-based repetition of this cell within the run (`--repeat`).
    pub repeat: u32,
    /// Hash of the environment fields that make runs comparable (see `Fingerprint::env_id`).
    pub env_id: String,
    pub started_at: String,
    pub scenario: String,
    pub cell: String,
    pub environment: String,
    pub runtime: RuntimeKind,
    pub runtime_note: Option<String>,
    pub container: ContainerKind,
    pub ipc: IpcMode,
    pub memory_bytes: Option<u64>,
    pub shm_tmpfs: bool,
    pub shm_bytes: Option<u64>,
    pub shm_seen_bytes: u64,
    pub strategy: Strategy,
    pub torch: TorchProfile,
    pub workers: u32,
    pub prefetch: u32,
    pub batch: u32,
    pub shape: Shape,
    pub dtype: Dtype,
    pub batch_bytes: u64,
    pub steps: u64,
    pub epochs: u32,
    pub persistent_workers: bool,
    pub pin_memory: bool,
    pub touch: Touch,
    pub compute_ms: f64,
    pub decode_us: u64,
    pub retain_every: u64,
    pub status: Status,
    pub crash_step: Option<u64>,
    pub signal: Option<i32>,
    pub pid: Option<u32>,
    pub steps_done: u64,
    pub img_per_s: Option<f64>,
    /// This machine's calibrated all-cores fresh-segment rate for the cell's strategy and
    /// profile, in images per second (the data path's physical limit).
    pub limit_img_per_s: Option<f64>,
    /// img_per_s / limit_img_per_s.
    pub efficiency: Option<f64>,
    pub warmup_steps: u64,
    pub step_p50_ms: Option<f64>,
    pub step_p99_ms: Option<f64>,
    pub first_batch_ms: Option<f64>,
    pub peak_shm_bytes: u64,
    pub shm_used_at_failure_bytes: Option<u64>,
    pub peak_rss_bytes: u64,
    pub main_private_rss_bytes: u64,
    pub worker_private_rss_bytes: u64,
    pub accel_util: Option<f64>,
    pub wall_s: f64,
    pub message: String,
    /// The per-step series, relative to this CSV's directory.
    pub steps_file: Option<String>,
    /// The shmbench command line that produced this row.
    pub command: String,
    pub claim_status: Option<ClaimStatus>,
    pub claim_crash_step: Option<u64>,
    pub claim_img_per_s: Option<f64>,
    /// Empty when the cell carries no claim.
    pub claim_verdict: Option<ClaimVerdict>,
    pub kernel: String,
    pub os: String,
    pub cpu: String,
    pub cores: u32,
    pub mem_bytes: u64,
    pub host_shm_bytes: u64,
    pub cgroup_version: String,
    pub cgroup_memory_limit: Option<u64>,
    pub host: String,
    pub harness_version: String,
    pub thp_shmem: String,
    pub gpu_driver: Option<String>,
    pub docker_version: Option<String>,
    pub docker_api_version: Option<String>,
    pub docker_cgroup_version: Option<String>,
    pub docker_cgroup_driver: Option<String>,
    pub docker_storage_driver: Option<String>,
    /// What ran the loader: `emulated` or `torch` (schema 2; schema-1 rows read as emulated).
    #[serde(default)]
    pub loader: Loader,
    /// The torch version of a torch cell (schema 2).
    #[serde(default)]
    pub torch_version: Option<String>,
    /// The user's image a docker cell ran in (`--image`); empty for shmbench's own (schema 3).
    #[serde(default)]
    pub image: Option<String>,
    /// The emulated loader's main-loop CPU per batch, microseconds (schema 3).
    #[serde(default)]
    pub main_us: u64,
    /// CPU milliseconds (user + system, main and workers, start-up included) per image consumed
    /// (schema 3).
    #[serde(default)]
    pub cpu_ms_per_img: Option<f64>,
    /// CPU milliseconds of the main process alone per step (schema 3).
    #[serde(default)]
    pub main_cpu_ms_per_step: Option<f64>,
    /// img/s from the median step time after warm-up: a robust estimate that one stall (a
    /// neighbour's burst) does not move, beside `img_per_s`, the mean over the steady span
    /// (schema 3).
    #[serde(default)]
    pub img_per_s_p50: Option<f64>,
    /// Page faults (minor + major) of every process of the cell per image consumed (schema 3).
    #[serde(default)]
    pub faults_per_img: Option<f64>,
    /// The CPUs the cell was pinned to (`--cpus`), empty when any (schema 3).
    #[serde(default)]
    pub cpus: Option<String>,
    /// Who made the cell's claim, when it is not the how-to (schema 3).
    #[serde(default)]
    pub claim_source: Option<String>,
    /// The command a `shmbench watch` row ran, as a shell would take it (schema 4).
    #[serde(default)]
    pub watched_command: Option<String>,
    /// Its exit code, 128 + N when signal N killed it (schema 4).
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// What watching it saw, relative to this CSV's directory (schema 4).
    #[serde(default)]
    pub watch_file: Option<String>,
    /// The Kubernetes node that ran the cell, for rows of `k8s collect` (schema 5).
    #[serde(default)]
    pub node: Option<String>,
    /// The pod that ran it (schema 5).
    #[serde(default)]
    pub pod: Option<String>,
    /// The node's container runtime (`containerd://1.7.13`, from `--nodes`; else the runtime
    /// the pod's cgroup path names) (schema 5).
    #[serde(default)]
    pub container_runtime: Option<String>,
    /// The node's kubelet version, from `--nodes` (schema 5).
    #[serde(default)]
    pub kubelet_version: Option<String>,
    /// The cell's RLIMIT_NOFILE soft limit (`nofile`), empty when inherited (schema 5).
    #[serde(default)]
    pub nofile: Option<u64>,
    /// The size a namespace cell's /dev/shm was remounted to (`shm-remount`) (schema 5).
    #[serde(default)]
    pub shm_remount_bytes: Option<u64>,
    /// The most file descriptors the loader's main held open at a step (schema 5).
    #[serde(default)]
    pub peak_fds: Option<u64>,
    /// Instructions of every process of the cell per image consumed, where hardware counters
    /// exist and are allowed (empty elsewhere, e.g. in a VM without a PMU) (schema 5).
    #[serde(default)]
    pub instructions_per_img: Option<f64>,
    /// `user+kernel`, or `user` where perf_event_paranoid forbade counting the kernel (schema 5).
    #[serde(default)]
    pub instructions_scope: Option<String>,
    /// The kernel a VM cell booted, as asked (`debian:6.1.0-57-cloud-amd64`, or a path); the
    /// `kernel` column is what the guest reported (schema 5).
    #[serde(default)]
    pub vm_kernel: Option<String>,
    /// `kvm` or `tcg` (software emulation: img/s not comparable with other rows) (schema 5).
    #[serde(default)]
    pub vm_accel: Option<Accel>,
    #[serde(default)]
    pub vm_memory_bytes: Option<u64>,
    #[serde(default)]
    pub vm_cpus: Option<u32>,
    /// Seconds from starting QEMU to the record: boot plus cell (schema 5).
    #[serde(default)]
    pub vm_wall_s: Option<f64>,
    /// The Slurm array task that ran the cell (`12_3`; the job id outside an array), for rows
    /// of `slurm collect` (schema 6).
    #[serde(default)]
    pub slurm_job: Option<String>,
    /// How Slurm says that task ended (`COMPLETED`, `FAILED`, `OUT_OF_MEMORY`, `TIMEOUT`, ...),
    /// where `slurm collect` could ask (schema 6).
    #[serde(default)]
    pub slurm_state: Option<String>,
    /// The node's Slurm, as its `scontrol --version` says (`slurm 22.05.8`) (schema 6).
    #[serde(default)]
    pub slurm_version: Option<String>,
    /// The OCI runtime a container cell ran under and its version, as its binary says (`runc
    /// 1.1.5+ds1`, `runsc 0.0~20221219.0`); the engine is `engine`, its version `docker_version`
    /// (schema 7).
    #[serde(default)]
    pub docker_oci_runtime: Option<String>,
    /// Whether the engine of a container cell ran rootless (an unprivileged user's Podman, or
    /// rootless Docker: the engine says so in its security options) (schema 8).
    #[serde(default)]
    pub docker_rootless: Option<bool>,
    /// Why the cell ended as it did (`tmpfs-full`, `mapped-file`, ...: `explain::Cause`), when
    /// it failed or a process of it got a SIGBUS (schema 9).
    #[serde(default)]
    pub cause: Option<String>,
    /// The facts that decided it, `; `-separated (schema 9).
    #[serde(default)]
    pub cause_facts: Option<String>,
    /// The cause the cell's claim says its end has (schema 9).
    #[serde(default)]
    pub claim_cause: Option<String>,
    /// The knobs added after schema 5, one column each after these (`knob_columns`).
    #[serde(skip)]
    pub added: AddedKnobs,
}

impl CsvRow for Row {
    fn more_header() -> &'static [&'static str] {
        knob_columns::header()
    }

    fn more_cells(&self) -> anyhow::Result<Vec<String>> {
        knob_columns::cells(&self.added)
    }
}

#[cfg(test)]
mod tests {
    use model::knobs::Knobs;

    /// The columns of a row of this schema, as a results file's header line names them.
    fn header() -> Vec<String> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/seed.csv");
        let mut reader = csv::Reader::from_path(path).unwrap();
        let row: super::Row = reader.deserialize().next().unwrap().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let written = dir.path().join("r.csv");
        crate::atomic::write_csv(&written, &[row], None).unwrap();
        let text = std::fs::read_to_string(&written).unwrap();
        let first = text.lines().next().unwrap_or_default();
        first.split(',').map(String::from).collect()
    }

    #[test]
    fn every_knob_column_the_declaration_names_is_a_column() {
        let header = header();
        for spec in Knobs::SPECS {
            if let Some(column) = spec.column {
                assert!(
                    header.iter().any(|c| c == column),
                    "knob {}: its declared column {column} is not in the results header",
                    spec.key
                );
            }
        }
    }
}
