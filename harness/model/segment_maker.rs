//! Which library likely made a shared segment, from its name: those whose segments fill
//! /dev/shm beside the DataLoader's. A name is a hint, never proof: it is said next to the
//! segment, and nothing is decided or removed by it.

/// The library a segment's name points to (`/dev/shm/NAME`, `NAME`, or `memfd:NAME`).
pub fn made_by(name: &str) -> Option<&'static str> {
    let base = name.rsplit('/').next().unwrap_or(name);
    let base = base.strip_prefix("memfd:").unwrap_or(base);
    const KNOWN: &[(&str, &str)] = &[
        ("shmbench_", "shmbench"),
        (
            "torch_",
            "torch (a file_system batch, or tensors shared to workers)",
        ),
        ("nccl-", "NCCL (its shared-memory transport or proxy)"),
        (
            "psm_",
            "Python's multiprocessing.shared_memory (vLLM's message queues use it)",
        ),
        ("plasma", "Ray's object store"),
        ("sem.", "a POSIX semaphore"),
    ];
    KNOWN
        .iter()
        .find(|(prefix, _)| base.starts_with(prefix))
        .map(|(_, what)| *what)
}

#[cfg(test)]
mod tests {
    use super::made_by;

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
    }
}
