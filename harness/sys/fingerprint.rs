//! The environment fingerprint read from this machine (`model::fingerprint` holds its type).

pub use model::fingerprint::{EngineInfo, Fingerprint};

/// Total memory from /proc/meminfo in bytes (0 if unreadable).
pub fn mem_total() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(0)
}

fn os_name() -> String {
    std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}

/// Reads this machine.
pub fn collect() -> Fingerprint {
    let uname = nix::sys::utsname::uname().ok();
    Fingerprint {
        kernel: uname
            .as_ref()
            .map(|u| u.release().to_string_lossy().into_owned())
            .unwrap_or_default(),
        os: os_name(),
        cpu: cpu_model(),
        cores: std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1),
        mem_bytes: mem_total(),
        host_shm_bytes: super::shm::usage().0,
        cgroup_version: super::cgroup::version()
            .map(|v| format!("v{v}"))
            .unwrap_or_default(),
        cgroup_memory_limit: super::cgroup::memory_limit(),
        host: nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default(),
        harness_version: env!("CARGO_PKG_VERSION").to_string(),
        docker: None,
        thp_shmem: thp_shmem(),
        gpu_driver: gpu_driver(),
    }
}

/// The selected value of the shmem THP setting (`never [always] ...` -> `always`).
fn thp_shmem() -> String {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/shmem_enabled")
        .ok()
        .and_then(|t| {
            t.split_whitespace()
                .find(|w| w.starts_with('['))
                .map(|w| w.trim_matches(|c| c == '[' || c == ']').to_string())
        })
        .unwrap_or_default()
}

/// NVIDIA driver version from /proc/driver/nvidia/version, else `nvidia-smi`, where present.
fn gpu_driver() -> Option<String> {
    if let Ok(text) = std::fs::read_to_string("/proc/driver/nvidia/version") {
        // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.14  Thu Feb 22 ..."
        let version =
            text.lines().next()?.split_whitespace().find(|w| {
                w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.')
            })?;
        return Some(version.to_string());
    }
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=driver_version", "--format=csv,noheader"])
        .output()
        .ok()?;
    let version = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()?
        .trim()
        .to_string();
    (out.status.success() && !version.is_empty()).then_some(version)
}
