//! A fully resolved cell: every knob present, ready to ship to a cell process as JSON, and the
//! sizes that follow from it. Validation is in [`super::validate`].

use serde::{Deserialize, Serialize};

use super::claim::Claim;
use super::cpus::CpuList;
use super::knobs::{
    ContainerKind, Dtype, IpcMode, Knobs, Loader, RuntimeKind, Shape, Strategy, TorchProfile, Touch,
};
use super::size::ByteSize;
use super::vm::Accel;
use super::watch::WatchSettings;

/// A fully resolved, validated cell: what `shmbench cell` receives as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellConfig {
    pub scenario: String,
    pub cell: String,
    /// Human label of the setup this cell stands for, e.g. "Docker Default".
    pub environment: String,
    /// What runs the loader (absent in records of shmbench before torch cells: emulated).
    #[serde(default)]
    pub loader: Loader,
    /// The interpreter of a torch cell.
    #[serde(default = "default_python")]
    pub python: String,
    /// The user's own image a docker cell runs in (None: the image shmbench builds).
    #[serde(default)]
    pub image: Option<String>,
    pub runtime: RuntimeKind,
    /// Why the runtime is not the one the setup names (e.g. no Docker engine answered).
    pub runtime_note: Option<String>,
    pub container: ContainerKind,
    pub ipc: IpcMode,
    pub memory: Option<ByteSize>,
    pub shm_tmpfs: bool,
    pub shm_size: Option<ByteSize>,
    pub strategy: Strategy,
    pub torch: TorchProfile,
    pub workers: u32,
    pub prefetch: u32,
    pub batch: u32,
    pub shape: Shape,
    pub dtype: Dtype,
    pub steps: u64,
    pub epochs: u32,
    pub persistent_workers: bool,
    pub pin_memory: bool,
    pub touch: Touch,
    pub compute_ms: f64,
    pub decode_us: u64,
    /// Main-loop CPU per batch of the emulated loader (absent in records before it: 0).
    #[serde(default)]
    pub main_us: u64,
    pub retain_every: u64,
    pub warmup_steps: u64,
    /// runtime vm: the kernel to boot (a path, or `debian:VERSION`).
    #[serde(default)]
    pub kernel: Option<String>,
    #[serde(default = "default_vm_memory")]
    pub vm_memory: ByteSize,
    #[serde(default = "default_vm_cpus")]
    pub vm_cpus: u32,
    #[serde(default = "default_vm_boot_s")]
    pub vm_boot_s: f64,
    #[serde(default)]
    pub accel: Accel,
    /// RLIMIT_NOFILE soft limit for the cell's processes (None: inherited).
    #[serde(default)]
    pub nofile: Option<u64>,
    /// The size a namespace cell's /dev/shm is remounted to before the loader starts.
    #[serde(default)]
    pub shm_remount: Option<ByteSize>,
    /// The CPUs the cell's processes may run on (None: any).
    #[serde(default)]
    pub cpus: Option<CpuList>,
    /// Watchdog: for loaders, no progress for this long; for a watched command, its whole run.
    pub timeout_s: f64,
    pub claim: Option<Claim>,
    /// The command a `loader command` cell runs and how it is watched (`shmbench watch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watch: Option<WatchSettings>,
}

fn default_vm_memory() -> ByteSize {
    Knobs::defaults()
        .vm_memory
        .expect("vm-memory has a default")
}

fn default_vm_boot_s() -> f64 {
    Knobs::defaults()
        .vm_boot_s
        .expect("vm-boot-s has a default")
}

fn default_vm_cpus() -> u32 {
    Knobs::defaults().vm_cpus.expect("vm-cpus has a default")
}

/// The knob's default, for records written before the knob existed.
fn default_python() -> String {
    Knobs::defaults()
        .python
        .expect("the python knob has a default")
}

impl CellConfig {
    /// Bytes of one image.
    pub fn image_bytes(&self) -> u64 {
        self.shape
            .elements()
            .unwrap_or(u64::MAX)
            .saturating_mul(self.dtype.size())
    }

    /// Bytes of one batch: what one shared segment holds.
    pub fn batch_bytes(&self) -> u64 {
        self.image_bytes().saturating_mul(self.batch as u64)
    }

    /// At most this many batches are outstanding (torch's `num_workers * prefetch_factor`).
    pub fn max_outstanding(&self) -> u64 {
        self.workers as u64 * self.prefetch as u64
    }

    /// Whether the cell's steps are known: a loader's always, a watched command's only through
    /// its step regex (without one its crash has a time, not a step).
    pub fn counts_steps(&self) -> bool {
        self.watch.as_ref().is_none_or(|w| w.step_regex.is_some())
    }

    pub fn total_steps(&self) -> u64 {
        self.steps.saturating_mul(self.epochs as u64)
    }
}
