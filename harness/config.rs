//! The loader and isolation knobs of one cell, in one place.
//!
//! [`Knobs`] is the partial form: every field optional, deserialised from scenario TOML and parsed
//! from `run`/`matrix` flags with the *same names* (`--shm-size` is `shm-size` in a scenario).
//! Layers of knobs (scenario defaults, a cell's own keys, CLI overrides) are overlaid in that order
//! and then resolved into a [`CellConfig`]: every value present, validated, ready to ship to a cell
//! process as JSON. The defaults are the how-to's seed setup.

use std::fmt;
use std::str::FromStr;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use crate::size::ByteSize;

/// How a cell is isolated; every runtime launches the same `shmbench cell` protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeKind {
    /// `namespace` when the cell has an `shm-size`, otherwise `host`.
    Auto,
    /// This machine's own /dev/shm (what `docker run --ipc=host` gives a container).
    Host,
    /// A private mount namespace with a tmpfs of `shm-size` on /dev/shm.
    Namespace,
    /// A Docker container (`--shm-size`, `--ipc`, `--memory`) from an image shmbench builds.
    Docker,
}

/// The setup a cell stands for, whatever runtime measures it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ContainerKind {
    /// A process on a machine.
    None,
    /// A Docker container: with runtime auto it runs in Docker when an engine answers, else in a
    /// namespace of the same /dev/shm size (Docker's default 64 MiB when unset).
    Docker,
}

/// Docker's IPC mode for the container (`--ipc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum IpcMode {
    /// Own IPC namespace and own /dev/shm of shm-size.
    Private,
    /// Like private, and other containers may join it.
    Shareable,
    /// The host's IPC namespace and /dev/shm.
    Host,
}

/// How a batch travels from worker to main (torch.multiprocessing sharing strategies and two
/// non-torch mechanisms kept for comparison).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// torch's Linux default: shm_open + shm_unlink after mmap; the fd crosses a Unix socket.
    #[value(name = "file_descriptor")]
    FileDescriptor,
    /// torch's alternative: a *named* segment in /dev/shm whose name is sent; still /dev/shm.
    #[value(name = "file_system")]
    FileSystem,
    /// memfd_create (the open upstream proposal pytorch#58386): not bounded by /dev/shm.
    #[value(name = "memfd")]
    Memfd,
    /// An unlinked file under $TMPDIR. NOT a torch strategy: what the how-to wrongly says
    /// `file_system` does.
    #[value(name = "disk")]
    Disk,
}

/// How torch allocates a shared segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum TorchProfile {
    /// torch <= 2.9: ftruncate + 1-byte write at offset 0; pages on first touch; SIGBUS when full.
    Legacy,
    /// torch >= 2.10: posix_fallocate first; a full tmpfs is an ENOSPC RuntimeError.
    Modern,
}

/// How much of each batch the training loop reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Touch {
    /// Every byte read (the result kept so it cannot be optimised away).
    All,
    /// One element read.
    First,
    /// Nothing read.
    None,
}

/// Element type of the synthetic images.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    F32,
    F16,
    Bf16,
    U8,
}

impl Dtype {
    pub fn size(self) -> u64 {
        match self {
            Dtype::F32 => 4,
            Dtype::F16 | Dtype::Bf16 => 2,
            Dtype::U8 => 1,
        }
    }
}

/// Display through clap's value names, so tables, CSV and errors spell values as flags do.
macro_rules! display_as_value_name {
    ($($ty:ty),*) => {$(
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let value = self.to_possible_value().expect("no skipped variants");
                f.write_str(value.get_name())
            }
        }
    )*};
}
display_as_value_name!(
    RuntimeKind,
    ContainerKind,
    IpcMode,
    Strategy,
    TorchProfile,
    Touch,
    Dtype
);

/// One image's dimensions, written `3x224x224`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape(pub Vec<u64>);

impl Shape {
    pub fn elements(&self) -> Option<u64> {
        self.0.iter().try_fold(1u64, |acc, d| acc.checked_mul(*d))
    }
}

impl FromStr for Shape {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let dims: Result<Vec<u64>, _> =
            s.split(['x', 'X', ',']).map(|d| d.trim().parse()).collect();
        match dims {
            Ok(d) if !d.is_empty() && d.iter().all(|&x| x > 0) => Ok(Shape(d)),
            _ => Err(format!(
                "'{s}' is not a shape: write positive dimensions joined by x, e.g. 3x224x224"
            )),
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(u64::to_string).collect();
        f.write_str(&parts.join("x"))
    }
}

impl Serialize for Shape {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

fn parse_bool(s: &str) -> Result<bool, String> {
    match s {
        "true" | "yes" | "1" | "on" => Ok(true),
        "false" | "no" | "0" | "off" => Ok(false),
        _ => Err(format!("'{s}' is not true or false")),
    }
}

/// Declares [`Knobs`] once: each field is a scenario key and a CLI flag of the same name, with
/// its default and help text, so names never drift between the parser, the docs and the table.
macro_rules! knobs {
    ($( $(#[$meta:meta])* $field:ident : $ty:ty = $default:expr, $help:literal; )*) => {
        /// Partial loader/isolation settings; see the module docs for how layers combine.
        #[derive(Clone, Debug, Default, Deserialize, clap::Args)]
        #[serde(rename_all = "kebab-case", deny_unknown_fields)]
        pub struct Knobs {
            $(
                #[doc = $help]
                $(#[$meta])*
                pub $field: Option<$ty>,
            )*
        }

        impl Knobs {
            /// Values of `top` replace values of `self` where `top` has them.
            pub fn overlay(&mut self, top: &Knobs) {
                $( if top.$field.is_some() { self.$field = top.$field.clone(); } )*
            }

            /// The scenario key names, for error messages that list what is allowed.
            pub const KEYS: &'static [&'static str] = &[$( stringify!($field) ),*];

            fn defaults() -> Knobs {
                Knobs { $( $field: $default, )* }
            }
        }
    };
}

knobs! {
    #[arg(long, value_enum)]
    runtime: RuntimeKind = Some(RuntimeKind::Auto),
        "How to run it: auto (docker for container=docker when an engine answers, else namespace when shm-size is set, else host), host, namespace, docker";
    #[arg(long, value_enum)]
    container: ContainerKind = Some(ContainerKind::None),
        "The setup the cell stands for: none, or docker (runs in Docker with runtime auto when an engine answers)";
    #[arg(long, value_enum)]
    ipc: IpcMode = Some(IpcMode::Private),
        "Docker --ipc: private, shareable, host (host: the machine's /dev/shm)";
    #[arg(long, value_name = "SIZE")]
    memory: ByteSize = None,
        "Memory limit (Docker --memory, or a memory cgroup around a namespace cell); tmpfs pages count against it, so a cell can end OOM-killed";
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    shm_tmpfs: bool = Some(false),
        "Docker: mount /dev/shm as a tmpfs of shm-size (a Kubernetes emptyDir, medium: Memory) instead of --shm-size";
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    shm_size: ByteSize = None,
        "Size of the cell's /dev/shm tmpfs, e.g. 64m, 2g (Docker units); unset = this machine's /dev/shm";
    #[arg(long, value_enum)]
    strategy: Strategy = Some(Strategy::FileDescriptor),
        "Sharing strategy: file_descriptor, file_system, memfd, disk (disk is not a torch strategy)";
    #[arg(long, value_enum)]
    torch: TorchProfile = Some(TorchProfile::Legacy),
        "Allocation profile: legacy (torch <= 2.9, SIGBUS) or modern (torch >= 2.10, ENOSPC)";
    #[arg(long)]
    workers: u32 = Some(8),
        "DataLoader num_workers (worker processes)";
    #[arg(long)]
    prefetch: u32 = Some(2),
        "DataLoader prefetch_factor (batches outstanding per worker)";
    #[arg(long)]
    batch: u32 = Some(128),
        "Images per batch";
    #[arg(long, value_name = "DIMS")]
    shape: Shape = Some(Shape(vec![3, 224, 224])),
        "One image's shape, e.g. 3x224x224";
    #[arg(long, value_enum)]
    dtype: Dtype = Some(Dtype::F32),
        "Element type: f32, f16, bf16, u8";
    #[arg(long)]
    steps: u64 = Some(100),
        "Training steps (batches consumed) per epoch";
    #[arg(long)]
    epochs: u32 = Some(1),
        "Epochs";
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    persistent_workers: bool = Some(true),
        "Keep workers across epochs (false: respawn them every epoch)";
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool)]
    pin_memory: bool = Some(false),
        "Copy each batch out of shared memory as it arrives and release the segment at once";
    #[arg(long, value_enum)]
    touch: Touch = Some(Touch::All),
        "How much of each batch the training loop reads: all, first, none";
    #[arg(long, value_name = "MS")]
    compute_ms: f64 = Some(0.0),
        "Accelerator time per step in milliseconds (the main waits, CPU idle)";
    #[arg(long, value_name = "US")]
    decode_us: u64 = Some(0),
        "Worker CPU time per image in microseconds (decode/augment cost)";
    #[arg(long, value_name = "N")]
    retain_every: u64 = Some(0),
        "Keep every Nth batch alive forever (the leak that makes late crashes); 0 = off";
    #[arg(long, value_name = "N")]
    warmup_steps: u64 = Some(5),
        "Steps excluded from img/s (at most half the steps are ever excluded)";
    #[arg(long, value_name = "SECONDS")]
    timeout_s: f64 = Some(120.0),
        "Watchdog: a cell with no progress for this long ends as timeout";
}

/// Largest worker count accepted: beyond it a loader is a typo, not a configuration.
pub const MAX_WORKERS: u32 = 512;

/// A knob that failed validation; the scenario layer adds the file and cell.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{key}: {problem}")]
pub struct KnobError {
    pub key: &'static str,
    pub problem: String,
}

fn bad(key: &'static str, problem: impl Into<String>) -> KnobError {
    KnobError {
        key,
        problem: problem.into(),
    }
}

/// What the how-to claims for a row, carried as data for side-by-side output.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Claim {
    /// `pass` or `crash`.
    pub status: String,
    #[serde(default)]
    pub crash_step: Option<u64>,
    #[serde(default)]
    pub img_per_s: Option<f64>,
    /// The row's /dev/shm as the how-to wrote it, e.g. "64 MB".
    #[serde(default)]
    pub shm: Option<String>,
}

/// A fully resolved, validated cell: what `shmbench cell` receives as JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellConfig {
    pub scenario: String,
    pub cell: String,
    /// Human label of the setup this cell stands for, e.g. "Docker Default".
    pub environment: String,
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
    pub retain_every: u64,
    pub warmup_steps: u64,
    pub timeout_s: f64,
    pub claim: Option<Claim>,
}

/// Docker's documented default /dev/shm size, used when a Docker cell without shm-size runs
/// outside Docker.
pub const DOCKER_DEFAULT_SHM: u64 = 64 << 20;

/// What resolving knobs needs to know about this machine. Whether a Docker engine answers is
/// asked once, and only when a cell could run in Docker.
pub struct Platform {
    pub mem_total: u64,
    docker: std::cell::OnceCell<bool>,
    probe: fn() -> bool,
}

impl Platform {
    pub fn new(mem_total: u64, probe: fn() -> bool) -> Platform {
        Platform {
            mem_total,
            docker: std::cell::OnceCell::new(),
            probe,
        }
    }

    /// A platform with a known answer (tests, dry runs).
    pub fn fixed(mem_total: u64, docker: bool) -> Platform {
        let platform = Platform::new(mem_total, || false);
        let _ = platform.docker.set(docker);
        platform
    }

    pub fn docker_reachable(&self) -> bool {
        *self.docker.get_or_init(self.probe)
    }
}

/// Who a cell is, beside its knobs.
#[derive(Clone, Debug, Default)]
pub struct Identity {
    pub scenario: String,
    pub cell: String,
    pub environment: String,
    pub claim: Option<Claim>,
}

impl Knobs {
    /// Fills every unset knob with its default and validates the result. `mem_total` is this
    /// machine's memory, to refuse a batch that could never exist.
    pub fn resolve(&self, id: Identity, platform: &Platform) -> Result<CellConfig, KnobError> {
        let mut k = Knobs::defaults();
        k.overlay(self);
        // Every field has a default, so these are all Some except shm_size.
        fn get<T>(value: Option<T>) -> T {
            value.expect("every knob except shm-size has a default")
        }
        let mut config = CellConfig {
            scenario: id.scenario,
            cell: id.cell,
            environment: id.environment,
            runtime: get(k.runtime),
            runtime_note: None,
            container: get(k.container),
            ipc: get(k.ipc),
            memory: k.memory,
            shm_tmpfs: get(k.shm_tmpfs),
            shm_size: k.shm_size,
            strategy: get(k.strategy),
            torch: get(k.torch),
            workers: get(k.workers),
            prefetch: get(k.prefetch),
            batch: get(k.batch),
            shape: get(k.shape),
            dtype: get(k.dtype),
            steps: get(k.steps),
            epochs: get(k.epochs),
            persistent_workers: get(k.persistent_workers),
            pin_memory: get(k.pin_memory),
            touch: get(k.touch),
            compute_ms: get(k.compute_ms),
            decode_us: get(k.decode_us),
            retain_every: get(k.retain_every),
            warmup_steps: get(k.warmup_steps),
            timeout_s: get(k.timeout_s),
            claim: id.claim,
        };
        if config.runtime == RuntimeKind::Auto {
            config.resolve_auto_runtime(platform);
        }
        config.validate(platform.mem_total)?;
        Ok(config)
    }
}

impl CellConfig {
    /// Picks the runtime for `runtime = auto`: Docker for a Docker setup when an engine answers;
    /// otherwise the closest emulation, with a note saying so.
    fn resolve_auto_runtime(&mut self, platform: &Platform) {
        let docker_setup = self.container == ContainerKind::Docker;
        if docker_setup && platform.docker_reachable() {
            self.runtime = RuntimeKind::Docker;
            return;
        }
        let why = "no Docker engine answered";
        if self.ipc == IpcMode::Host {
            self.runtime = RuntimeKind::Host;
            if docker_setup {
                self.runtime_note = Some(format!(
                    "{why}: ran on this machine's /dev/shm, as --ipc=host gives"
                ));
            }
        } else if self.shm_size.is_some() || docker_setup {
            self.runtime = RuntimeKind::Namespace;
            if docker_setup {
                let note = if self.shm_size.is_none() {
                    self.shm_size = Some(ByteSize(DOCKER_DEFAULT_SHM));
                    "ran in a mount namespace with Docker's documented default /dev/shm of 64 MiB"
                } else {
                    "ran in a mount namespace with a tmpfs of the same size on /dev/shm"
                };
                self.runtime_note = Some(format!("{why}: {note}"));
            }
        } else {
            self.runtime = RuntimeKind::Host;
        }
    }

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

    pub fn total_steps(&self) -> u64 {
        self.steps.saturating_mul(self.epochs as u64)
    }

    /// Checks every value; the first problem found is returned, naming its key.
    pub fn validate(&self, mem_total: u64) -> Result<(), KnobError> {
        if self.workers == 0 {
            return Err(bad("workers", "must be at least 1: with num_workers=0 torch loads in the main process and never uses /dev/shm, so there is nothing to measure"));
        }
        if self.workers > MAX_WORKERS {
            return Err(bad(
                "workers",
                format!(
                    "{} is absurd: at most {MAX_WORKERS} worker processes",
                    self.workers
                ),
            ));
        }
        if self.prefetch == 0 || self.prefetch > 64 {
            return Err(bad("prefetch", format!("{} is out of range: torch needs prefetch_factor >= 1 with workers; at most 64 here", self.prefetch)));
        }
        if self.batch == 0 {
            return Err(bad("batch", "must be at least 1 image"));
        }
        if self.shape.elements().is_none() || self.batch_bytes() == u64::MAX {
            return Err(bad(
                "shape",
                format!("{} x {} images overflows 64 bits", self.batch, self.shape),
            ));
        }
        if mem_total > 0 && self.batch_bytes() > mem_total {
            return Err(bad("batch", format!(
                "one batch is {} but this machine has {} of memory: no batch of that size can exist here; lower batch or shape",
                ByteSize(self.batch_bytes()), ByteSize(mem_total)
            )));
        }
        if self.steps == 0 {
            return Err(bad("steps", "must be at least 1"));
        }
        if self.epochs == 0 {
            return Err(bad("epochs", "must be at least 1"));
        }
        if self.total_steps() > 100_000_000 {
            return Err(bad("steps", "steps x epochs is absurd (over 100 million)"));
        }
        if !(self.compute_ms.is_finite()
            && self.compute_ms >= 0.0
            && self.compute_ms <= 3_600_000.0)
        {
            return Err(bad(
                "compute-ms",
                format!("{} must be between 0 and 3600000", self.compute_ms),
            ));
        }
        if self.decode_us > 60_000_000 {
            return Err(bad("decode-us", "at most 60 s per image"));
        }
        if !(self.timeout_s.is_finite() && self.timeout_s > 0.0 && self.timeout_s <= 86_400.0) {
            return Err(bad(
                "timeout-s",
                format!("{} must be between 0 and 86400 seconds", self.timeout_s),
            ));
        }
        if let Some(size) = self.shm_size {
            if size.bytes() < 4096 {
                return Err(bad(
                    "shm-size",
                    format!("{size} is smaller than one page (4 KiB)"),
                ));
            }
        }
        if let Some(limit) = self.memory {
            if limit.bytes() < 6 << 20 {
                return Err(bad(
                    "memory",
                    format!("{limit} is below Docker's minimum of 6 MiB"),
                ));
            }
        }
        let docker_only = |key: &'static str, what: &str| {
            bad(key, format!("{what} is a Docker setting: use runtime docker (or auto with container docker)"))
        };
        match self.runtime {
            RuntimeKind::Host if self.memory.is_some() => {
                return Err(bad(
                    "memory",
                    "a memory limit needs runtime namespace (a cgroup around the cell) or docker",
                ));
            }
            RuntimeKind::Host | RuntimeKind::Namespace if self.shm_tmpfs => {
                return Err(docker_only("shm-tmpfs", "a tmpfs mount on /dev/shm"));
            }
            RuntimeKind::Host if self.shm_size.is_some() => {
                return Err(bad("shm-size", format!(
                    "runtime host uses this machine's own /dev/shm and cannot size it (asked for {}); drop shm-size, or use runtime namespace",
                    self.shm_size.unwrap_or(ByteSize(0))
                )));
            }
            RuntimeKind::Namespace if self.shm_size.is_none() => {
                return Err(bad("shm-size", "runtime namespace mounts a tmpfs of shm-size on /dev/shm: set shm-size, e.g. 64m"));
            }
            RuntimeKind::Namespace if self.ipc == IpcMode::Host => {
                return Err(bad(
                    "ipc",
                    "ipc host means this machine's /dev/shm: use runtime host",
                ));
            }
            RuntimeKind::Docker if self.ipc == IpcMode::Host && self.shm_size.is_some() => {
                return Err(bad(
                    "shm-size",
                    "with ipc host the container uses the host's /dev/shm: shm-size does not apply",
                ));
            }
            RuntimeKind::Docker if self.shm_tmpfs && self.shm_size.is_none() => {
                return Err(bad(
                    "shm-tmpfs",
                    "a tmpfs on /dev/shm needs its size: set shm-size",
                ));
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(k: Knobs) -> Result<CellConfig, KnobError> {
        k.resolve(Identity::default(), &Platform::fixed(24 << 30, false))
    }

    #[test]
    fn defaults_are_the_seed_setup() {
        let c = resolve(Knobs::default()).unwrap();
        assert_eq!(c.batch_bytes(), 77_070_336);
        assert_eq!(c.max_outstanding(), 16);
        assert_eq!(c.runtime, RuntimeKind::Host);
        assert_eq!(c.strategy.to_string(), "file_descriptor");
    }

    #[test]
    fn auto_runtime_follows_shm_size() {
        let k = Knobs {
            shm_size: Some(ByteSize(64 << 20)),
            ..Knobs::default()
        };
        assert_eq!(resolve(k).unwrap().runtime, RuntimeKind::Namespace);
    }

    #[test]
    fn docker_setups_fall_back_to_emulation_and_say_so() {
        let docker = |ipc, shm: Option<u64>, reachable| {
            let k = Knobs {
                container: Some(ContainerKind::Docker),
                ipc: Some(ipc),
                shm_size: shm.map(ByteSize),
                ..Knobs::default()
            };
            k.resolve(Identity::default(), &Platform::fixed(24 << 30, reachable))
                .unwrap()
        };
        assert_eq!(
            docker(IpcMode::Private, None, true).runtime,
            RuntimeKind::Docker
        );
        let fallback = docker(IpcMode::Private, None, false);
        assert_eq!(fallback.runtime, RuntimeKind::Namespace);
        assert_eq!(fallback.shm_size, Some(ByteSize(64 << 20)));
        assert!(fallback
            .runtime_note
            .unwrap()
            .contains("no Docker engine answered"));
        assert_eq!(
            docker(IpcMode::Host, None, false).runtime,
            RuntimeKind::Host
        );
        assert_eq!(
            docker(IpcMode::Private, Some(2 << 30), false).shm_size,
            Some(ByteSize(2 << 30))
        );
    }

    #[test]
    fn overlay_takes_the_top_layer() {
        let mut base = Knobs {
            workers: Some(2),
            batch: Some(8),
            ..Knobs::default()
        };
        base.overlay(&Knobs {
            workers: Some(4),
            ..Knobs::default()
        });
        assert_eq!(base.workers, Some(4));
        assert_eq!(base.batch, Some(8));
    }

    #[test]
    fn bad_values_name_their_key() {
        let zero = Knobs {
            workers: Some(0),
            ..Knobs::default()
        };
        assert_eq!(resolve(zero).unwrap_err().key, "workers");
        let huge = Knobs {
            batch: Some(1_000_000),
            ..Knobs::default()
        };
        assert_eq!(resolve(huge).unwrap_err().key, "batch");
        let host_sized = Knobs {
            runtime: Some(RuntimeKind::Host),
            shm_size: Some(ByteSize(1 << 30)),
            ..Knobs::default()
        };
        assert_eq!(resolve(host_sized).unwrap_err().key, "shm-size");
        let tiny = Knobs {
            shm_size: Some(ByteSize(10)),
            ..Knobs::default()
        };
        assert_eq!(resolve(tiny).unwrap_err().key, "shm-size");
    }

    #[test]
    fn shapes_parse_and_reject() {
        assert_eq!(
            "3x224x224".parse::<Shape>().unwrap().elements(),
            Some(150_528)
        );
        assert!("3x0x2".parse::<Shape>().is_err());
        assert!("abc".parse::<Shape>().is_err());
    }
}
