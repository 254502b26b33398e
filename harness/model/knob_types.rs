//! The value types of knobs: runtimes, setups, loaders, strategies, profiles, shapes, each
//! displayed and parsed with the names its flag takes.

use super::bad_value::BadValue;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

crate::choice! {
    /// How a cell is isolated; every runtime launches the same `shmbench cell` protocol.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum RuntimeKind {
        #[default]
        Auto = "auto": "`docker` for a Docker setup when an engine answers, else `namespace` when the cell has an `shm-size`, otherwise `host`.",
        Host = "host": "This machine's own /dev/shm (what `docker run --ipc=host` gives a container).",
        Namespace = "namespace": "A private mount namespace with a tmpfs of `shm-size` on /dev/shm.",
        Docker = "docker": "A Docker container (`--shm-size`, `--ipc`, `--memory`) from an image shmbench builds.",
        Vm = "vm": "A QEMU VM booting `kernel`, its /dev/shm a tmpfs of `shm-size` in the guest.",
    }
}

crate::choice! {
    /// The container engine a `docker` cell runs under, through the same Docker-compatible API.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum EngineKind {
        #[default]
        Docker = "docker": "The Docker Engine (`DOCKER_HOST`, else /var/run/docker.sock).",
        Podman = "podman": "Podman's Docker-compatible service: one that answers at `CONTAINER_HOST` (or the user's $XDG_RUNTIME_DIR/podman/podman.sock, or /run/podman/podman.sock as root), else one the run starts on a socket of its own and stops after; rootless when run as a user.",
    }
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

crate::choice! {
    /// The setup a cell stands for, whatever runtime measures it.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum ContainerKind {
        #[default]
        None = "none": "A process on a machine.",
        Docker = "docker": "A Docker container: with runtime auto it runs in Docker when an engine answers, else in a namespace of the same /dev/shm size (Docker's default 64 MiB when unset).",
    }
}

crate::choice! {
    /// What runs the cell's DataLoader.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Loader {
        #[default]
        Emulated = "emulated": "shmbench's emulation of torch's DataLoader (no Python needed).",
        Torch = "torch": "The real `torch.utils.data.DataLoader`, run by the `python` interpreter.",
        Command = "command": "Any command, run and watched by `shmbench watch -- CMD` (not a knob value: the command comes with it)." hidden,
    }
}

crate::choice! {
    /// Docker's IPC mode for the container (`--ipc`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum IpcMode {
        #[default]
        Private = "private": "Own IPC namespace and own /dev/shm of shm-size.",
        Shareable = "shareable": "Like private, and other containers may join it.",
        Host = "host": "The host's IPC namespace and /dev/shm.",
    }
}

crate::choice! {
    /// How a batch travels from worker to main (torch.multiprocessing sharing strategies and two
    /// non-torch mechanisms kept for comparison).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Strategy {
        #[default]
        FileDescriptor = "file_descriptor": "torch's Linux default: shm_open + shm_unlink after mmap; the fd crosses a Unix socket.",
        FileSystem = "file_system": "torch's alternative: a *named* segment in /dev/shm whose name is sent; still /dev/shm.",
        Memfd = "memfd": "memfd_create (the open upstream proposal pytorch#58386): not bounded by /dev/shm.",
        Disk = "disk": "An unlinked file under $TMPDIR. NOT a torch strategy: what the how-to wrongly says `file_system` does.",
    }
}

crate::choice! {
    /// How torch allocates a shared segment.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum TorchProfile {
        #[default]
        Legacy = "legacy": "torch <= 2.9: ftruncate + 1-byte write at offset 0; pages on first touch; SIGBUS when full.",
        Modern = "modern": "torch >= 2.10: posix_fallocate first; a full tmpfs is an ENOSPC RuntimeError.",
    }
}

crate::choice! {
    /// How much of each batch the training loop reads.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Touch {
        #[default]
        All = "all": "Every byte read (the result kept so it cannot be optimised away).",
        First = "first": "One element read.",
        None = "none": "Nothing read.",
    }
}

crate::choice! {
    /// How the DataLoader starts its workers (its `multiprocessing_context`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum StartMethod {
        #[default]
        Fork = "fork": "Linux's default through Python 3.13: workers inherit the Dataset by fork.",
        Forkserver = "forkserver": "Python 3.14's default on Linux: the Dataset is pickled to each worker.",
        Spawn = "spawn": "A fresh interpreter per worker: the Dataset is pickled to each worker.",
    }
}

impl StartMethod {
    /// Whether the Dataset reaches a worker pickled, its tensors through shared memory.
    pub fn pickles_the_dataset(self) -> bool {
        self != StartMethod::Fork
    }
}

crate::choice! {
    /// A cause of a Bus error the emulated loader makes happen for real mid-run (the causes
    /// scenario, docs/EXPLAIN.md), beside those its sizes and limits make (a full tmpfs, a memory
    /// limit, an fd limit).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum Inject {
        #[default]
        None = "none": "Nothing injected.",
        TruncatedFile = "truncated-file": "The workers read their samples from a mapped dataset file, which the main truncates.",
        KillBus = "kill-bus": "The main sends SIGBUS to a worker (`kill -BUS`).",
        HugePages = "huge-pages": "A worker writes a hugetlb mapping made without a reservation, with no huge page free.",
        SegmentRemoved = "segment-removed": "A file_system segment removed from /dev/shm by another process before the main opens it (systemd-logind's RemoveIPC, a cleaner).",
        MemoryError = "memory-error": "A worker's page poisoned with madvise(MADV_HWPOISON), as a memory error poisons one; only in shmbench's VM guests (the page is lost to the kernel for good).",
    }
}

impl Inject {
    /// The step at (or after) which the injection happens: the second, so one step has run
    /// and the workers still have tasks to read for (with 8 workers and prefetch 2, every task
    /// of a 20-step epoch is read by its middle).
    pub fn step(steps: u64) -> u64 {
        steps.min(2)
    }
}

crate::choice! {
    /// Element type of the synthetic images.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Dtype {
        #[default]
        F32 = "f32": "32-bit float, 4 bytes an element (torchvision's ToTensor).",
        F16 = "f16": "16-bit float, 2 bytes.",
        Bf16 = "bf16": "bfloat16, 2 bytes.",
        U8 = "u8": "Unsigned bytes, 1 byte (decoded images before normalisation).",
    }
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
