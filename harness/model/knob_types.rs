//! The value types of knobs: runtimes, setups, loaders, strategies, profiles, shapes, each
//! displayed and parsed with the names its flag takes.

use super::bad_value::BadValue;
use std::fmt;
use std::str::FromStr;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};

/// How a cell is isolated; every runtime launches the same `shmbench cell` protocol.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum RuntimeKind {
    /// `docker` for a Docker setup when an engine answers, else `namespace` when the cell has
    /// an `shm-size`, otherwise `host`.
    #[default]
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

/// The container engine a `docker` cell runs under, through the same Docker-compatible API.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum EngineKind {
    /// The Docker Engine (`DOCKER_HOST`, else /var/run/docker.sock).
    #[default]
    Docker,
    /// Podman's Docker-compatible service: one that answers at `CONTAINER_HOST` (or the user's
    /// $XDG_RUNTIME_DIR/podman/podman.sock, or /run/podman/podman.sock as root), else one the
    /// run starts on a socket of its own and stops after; rootless when run as a user.
    Podman,
}

/// The OCI runtime an engine starts a cell's container with: `default` (the engine's own
/// default), or a runtime's name as the engine knows it (`runc`, `crun`, `runsc`, `kata`,
/// `youki`, ...). A name, not a closed list: engines register runtimes of their own.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct OciRuntime(String);

impl OciRuntime {
    /// The word for the engine's own default.
    pub const DEFAULT: &'static str = "default";

    /// The runtime's name, unless it is the engine's default.
    pub fn named(&self) -> Option<&str> {
        (self.0 != Self::DEFAULT).then_some(self.0.as_str())
    }

    /// gVisor: its own kernel in user space, with a tmpfs of its own on /dev/shm.
    pub fn is_gvisor(&self) -> bool {
        self.0 == "runsc" || self.0.starts_with("runsc-")
    }
}

impl Default for OciRuntime {
    fn default() -> Self {
        OciRuntime(Self::DEFAULT.to_string())
    }
}

impl FromStr for OciRuntime {
    type Err = BadValue;
    fn from_str(s: &str) -> Result<Self, BadValue> {
        // It becomes an engine's runtime name, a container's label and a table's word: a name,
        // never a path or flags.
        let name_like = !s.is_empty()
            && s.len() <= 64
            && s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c));
        match name_like {
            true => Ok(OciRuntime(s.to_string())),
            false => Err(BadValue::new(
                s,
                "an OCI runtime's name as the engine knows it (runc, crun, runsc, ...) or default: lowercase letters, digits, '.', '_' and '-', starting with a letter",
            )),
        }
    }
}

impl fmt::Display for OciRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

serde_as_text!(OciRuntime);

/// The setup a cell stands for, whatever runtime measures it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ContainerKind {
    /// A process on a machine.
    #[default]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum IpcMode {
    /// Own IPC namespace and own /dev/shm of shm-size.
    #[default]
    Private,
    /// Like private, and other containers may join it.
    Shareable,
    /// The host's IPC namespace and /dev/shm.
    Host,
}

/// How a batch travels from worker to main (torch.multiprocessing sharing strategies and two
/// non-torch mechanisms kept for comparison).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// torch's Linux default: shm_open + shm_unlink after mmap; the fd crosses a Unix socket.
    #[default]
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum TorchProfile {
    /// torch <= 2.9: ftruncate + 1-byte write at offset 0; pages on first touch; SIGBUS when full.
    #[default]
    Legacy,
    /// torch >= 2.10: posix_fallocate first; a full tmpfs is an ENOSPC RuntimeError.
    Modern,
}

/// How much of each batch the training loop reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Touch {
    /// Every byte read (the result kept so it cannot be optimised away).
    #[default]
    All,
    /// One element read.
    First,
    /// Nothing read.
    None,
}

/// How the DataLoader starts its workers (its `multiprocessing_context`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum StartMethod {
    /// Linux's default through Python 3.13: workers inherit the Dataset by fork.
    #[default]
    Fork,
    /// Python 3.14's default on Linux: the Dataset is pickled to each worker.
    Forkserver,
    /// A fresh interpreter per worker: the Dataset is pickled to each worker.
    Spawn,
}

impl StartMethod {
    /// Whether the Dataset reaches a worker pickled, its tensors through shared memory.
    pub fn pickles_the_dataset(self) -> bool {
        self != StartMethod::Fork
    }
}

/// A cause of a Bus error the emulated loader makes happen for real mid-run (the causes
/// scenario, docs/EXPLAIN.md), beside those its sizes and limits make (a full tmpfs, a memory
/// limit, an fd limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Inject {
    /// Nothing injected.
    #[default]
    None,
    /// The workers read their samples from a mapped dataset file, which the main truncates.
    TruncatedFile,
    /// The main sends SIGBUS to a worker (`kill -BUS`).
    KillBus,
    /// A worker writes a hugetlb mapping made without a reservation, with no huge page free.
    HugePages,
    /// A file_system segment removed from /dev/shm by another process before the main opens it
    /// (systemd-logind's RemoveIPC, a cleaner).
    SegmentRemoved,
    /// A worker's page poisoned with madvise(MADV_HWPOISON), as a memory error poisons one; only
    /// in shmbench's VM guests (the page is lost to the kernel for good).
    MemoryError,
}

impl Inject {
    /// The step at (or after) which the injection happens: the second, so one step has run
    /// and the workers still have tasks to read for (with 8 workers and prefetch 2, every task
    /// of a 20-step epoch is read by its middle).
    pub fn step(steps: u64) -> u64 {
        steps.min(2)
    }
}

/// Element type of the synthetic images.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    #[default]
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
    Dtype,
    StartMethod,
    EngineKind,
    Inject
);

/// One image's dimensions, written `3x224x224`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shape(pub Vec<u64>);

impl Shape {
    pub fn elements(&self) -> Option<u64> {
        self.0.iter().try_fold(1u64, |acc, d| acc.checked_mul(*d))
    }
}

impl FromStr for Shape {
    type Err = BadValue;
    fn from_str(s: &str) -> Result<Self, BadValue> {
        let dims: Result<Vec<u64>, _> =
            s.split(['x', 'X', ',']).map(|d| d.trim().parse()).collect();
        match dims {
            Ok(d) if !d.is_empty() && d.iter().all(|&x| x > 0) => Ok(Shape(d)),
            _ => Err(BadValue::new(
                s,
                "a shape: write positive dimensions joined by x, e.g. 3x224x224",
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
