//! The loader and isolation knobs of one cell, declared once.
//!
//! [`Knobs`] is the partial form: every field optional, deserialised from scenario TOML and parsed
//! from `run`/`matrix` flags with the *same names* (`--shm-size` is `shm-size` in a scenario).
//! Layers of knobs (scenario defaults, a cell's own keys, CLI overrides) are overlaid in that order
//! and then resolved (`plan::resolve`) into a [`CellConfig`](super::config::CellConfig). The
//! defaults are the how-to's seed setup.

use std::fmt;
use std::str::FromStr;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

use super::cpus::CpuList;
use super::size::ByteSize;
use super::vm::Accel;

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
    /// A QEMU VM booting `kernel`, its /dev/shm a tmpfs of `shm-size` in the guest.
    Vm,
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

/// What runs the cell's DataLoader.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Loader {
    /// shmbench's emulation of torch's DataLoader (no Python needed).
    #[default]
    Emulated,
    /// The real `torch.utils.data.DataLoader`, run by the `python` interpreter.
    Torch,
    /// Any command, run and watched by `shmbench watch -- CMD` (not a knob value: the command
    /// comes with it).
    #[value(skip)]
    Command,
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
                match self.to_possible_value() {
                    Some(value) => f.write_str(value.get_name()),
                    // A variant that is not a flag value (`loader command`): its serde name.
                    None => f.write_str(&format!("{self:?}").to_lowercase()),
                }
            }
        }
    )*};
}
display_as_value_name!(
    Loader,
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

serde_as_text!(Shape);

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

            /// Every knob at its default (the how-to's seed setup; `shm-size` and `memory` unset).
            pub fn defaults() -> Knobs {
                Knobs { $( $field: $default, )* }
            }
        }
    };
}

knobs! {
    #[arg(long, value_enum)]
    loader: Loader = Some(Loader::Emulated),
        "What runs the loader: emulated (shmbench's emulation of torch's DataLoader) or torch (the real DataLoader, run by --python)";
    #[arg(long, value_name = "PATH")]
    python: String = Some("python3".to_string()),
        "Python interpreter of torch cells: one with torch installed (python3 -m venv V && V/bin/pip install torch)";
    #[arg(long, value_name = "IMAGE")]
    image: String = None,
        "Docker: run the cell in this local image (e.g. your training image, whose python3 runs torch cells) instead of the one shmbench builds; shmbench mounts its own binary into it read-only. Implies runtime docker";
    #[arg(long, value_enum)]
    runtime: RuntimeKind = Some(RuntimeKind::Auto),
        "How to run it: auto (docker for container=docker when an engine answers, else namespace when shm-size is set, else host), host, namespace, docker, vm (a QEMU VM booting --kernel)";
    #[arg(long, value_enum)]
    container: ContainerKind = Some(ContainerKind::None),
        "The setup the cell stands for: none, or docker (runs in Docker with runtime auto when an engine answers)";
    #[arg(long, value_enum)]
    ipc: IpcMode = Some(IpcMode::Private),
        "Docker --ipc: private, shareable, host (host: the machine's /dev/shm)";
    #[arg(long, value_name = "SIZE")]
    memory: ByteSize = None,
        "Memory limit (Docker --memory, or a memory cgroup around a namespace cell or inside a VM guest); tmpfs pages count against it, so a cell can end OOM-killed";
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
    #[arg(long, value_name = "US")]
    main_us: u64 = Some(0),
        "Emulated loader: main-loop CPU time per batch in microseconds beyond reading it (what real torch's main spends unpickling, receiving the fd, rebuilding and freeing storages, and in its intra-op threads; `fidelity` shows torch's main CPU per step against the emulation's); 0 = the bare data path";
    #[arg(long, value_name = "N")]
    retain_every: u64 = Some(0),
        "Keep every Nth batch alive forever (the leak that makes late crashes); 0 = off";
    #[arg(long, value_name = "N")]
    nofile: u64 = None,
        "RLIMIT_NOFILE soft limit of the cell's processes (`ulimit -n N`): where file_descriptor's one fd per live batch runs out; unset = the inherited limit";
    #[arg(long, value_name = "SIZE")]
    shm_remount: ByteSize = None,
        "Namespace cell: once its /dev/shm is mounted at shm-size, resize it with `mount -o remount,size=SIZE`, the bare-host fix, before the loader starts; unset = no remount";
    #[arg(long, value_name = "KERNEL")]
    kernel: String = None,
        "runtime vm: the kernel to boot, a bzImage's path or debian:VERSION (Debian's linux-image-VERSION, fetched with apt-get download into the cache), e.g. debian:6.1.0-57-cloud-amd64";
    #[arg(long, value_name = "SIZE")]
    vm_memory: ByteSize = Some(ByteSize(3 << 30)),
        "runtime vm: the VM's memory (its /dev/shm tmpfs pages live in it)";
    #[arg(long, value_name = "N")]
    vm_cpus: u32 = Some(2),
        "runtime vm: the VM's CPUs";
    #[arg(long, value_name = "SECONDS")]
    vm_boot_s: f64 = Some(90.0),
        "runtime vm: seconds a guest may stay silent while it boots and starts its cell, beyond timeout-s (TCG on a busy machine boots slowly)";
    #[arg(long, value_enum)]
    accel: Accel = Some(Accel::Auto),
        "runtime vm: kvm, tcg (QEMU's software emulation: outcomes hold, speeds do not), or auto (kvm when a probe VM boots with it, else tcg)";
    #[arg(long, value_name = "LIST")]
    cpus: CpuList = None,
        "CPUs the cell's processes may run on, as taskset writes them (0, 0-1, 0,2-3): the same cores run after run, recorded in the row (docker: --cpuset-cpus too); unset = any";
    #[arg(long, value_name = "N")]
    warmup_steps: u64 = Some(5),
        "Steps excluded from img/s (at most half the steps are ever excluded)";
    #[arg(long, value_name = "SECONDS")]
    timeout_s: f64 = Some(120.0),
        "Watchdog: a cell with no progress for this long ends as timeout";
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn shapes_parse_and_reject() {
        assert_eq!(
            "3x224x224".parse::<Shape>().unwrap().elements(),
            Some(150_528)
        );
        assert!("3x0x2".parse::<Shape>().is_err());
        assert!("abc".parse::<Shape>().is_err());
    }
}
