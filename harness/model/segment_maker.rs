//! Which library likely made a shared segment, from its name: those whose segments fill
//! /dev/shm beside the DataLoader's. A name is a hint, never proof: it is said next to the
//! segment, and nothing is decided or removed by it.

/// The kind of producer a segment's name points to: the families a node's /dev/shm fills with,
/// as a metric's label (`Producer::label`) and a node check's breakdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Producer {
    Shmbench,
    Torch,
    Nccl,
    Ray,
    Vllm,
    PythonSharedMemory,
    Semaphore,
    Unknown,
}

impl Producer {
    /// Every kind, in the order a breakdown lists them.
    pub const ALL: [Producer; 8] = [
        Producer::Shmbench,
        Producer::Torch,
        Producer::Nccl,
        Producer::Ray,
        Producer::Vllm,
        Producer::PythonSharedMemory,
        Producer::Semaphore,
        Producer::Unknown,
    ];

    /// The word a metric's `producer` label carries.
    pub fn label(self) -> &'static str {
        match self {
            Producer::Shmbench => "shmbench",
            Producer::Torch => "torch",
            Producer::Nccl => "nccl",
            Producer::Ray => "ray",
            Producer::Vllm => "vllm",
            Producer::PythonSharedMemory => "python_shared_memory",
            Producer::Semaphore => "semaphore",
            Producer::Unknown => "unknown",
        }
    }
}

/// Name prefixes, the producer each points to and what to say of it. vLLM's message queues
/// are Python `shared_memory` segments (`psm_`); its KV-offload region is its own file,
/// `vllm_offload_<engine id>.mmap` (vllm-project/vllm#51579).
const KNOWN: &[(&str, Producer, &str)] = &[
    ("shmbench_", Producer::Shmbench, "shmbench"),
    (
        "torch_",
        Producer::Torch,
        "torch (a file_system batch, or tensors shared to workers)",
    ),
    (
        "nccl-",
        Producer::Nccl,
        "NCCL (its shared-memory transport or proxy)",
    ),
    (
        "psm_",
        Producer::PythonSharedMemory,
        "Python's multiprocessing.shared_memory (vLLM's message queues use it)",
    ),
    (
        "vllm_offload_",
        Producer::Vllm,
        "vLLM's KV-offload region (left behind when its engine is killed)",
    ),
    ("plasma", Producer::Ray, "Ray's object store"),
    ("sem.", Producer::Semaphore, "a POSIX semaphore"),
];

/// The entry of `KNOWN` a segment's name (`/dev/shm/NAME`, `NAME`, or `memfd:NAME`) matches.
fn known(name: &str) -> Option<&'static (&'static str, Producer, &'static str)> {
    let base = name.rsplit('/').next().unwrap_or(name);
    let base = base.strip_prefix("memfd:").unwrap_or(base);
    KNOWN.iter().find(|(prefix, _, _)| base.starts_with(prefix))
}

/// The library a segment's name points to, in words.
pub fn made_by(name: &str) -> Option<&'static str> {
    known(name).map(|(_, _, what)| *what)
}

/// The producer kind a segment's name points to (`Unknown` when none).
pub fn producer(name: &str) -> Producer {
    known(name).map_or(Producer::Unknown, |(_, kind, _)| *kind)
}

#[cfg(test)]
mod tests {
    use super::{made_by, producer, Producer};

    #[test]
    fn names_point_to_their_libraries() {
        assert_eq!(made_by("/dev/shm/plasmaKw0BGm"), Some("Ray's object store"));
        assert!(made_by("/dev/shm/torch_5_1117630682_0")
            .unwrap()
            .starts_with("torch"));
        assert!(made_by("nccl-shm-recv-1a2b-0-1-0")
            .unwrap()
            .starts_with("NCCL"));
        assert!(made_by("/dev/shm/psm_4f2a9c").unwrap().contains("vLLM"));
        assert_eq!(made_by("memfd:shmbench-batch"), None);
        assert_eq!(made_by("/dev/shm/my_cache"), None);
        assert_eq!(
            producer("/dev/shm/vllm_offload_63f63241-9def.mmap"),
            Producer::Vllm
        );
        assert_eq!(producer("memfd:torch_1_2_3"), Producer::Torch);
        assert_eq!(producer("/dev/shm/my_cache"), Producer::Unknown);
    }
}
