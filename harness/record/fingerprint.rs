//! The environment a run happened in: what must be the same for two runs to be comparable
//! (kernel, OS, CPU, memory, cgroup, harness version) and where it ran (host).

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub kernel: String,
    pub os: String,
    pub cpu: String,
    pub cores: u32,
    pub mem_bytes: u64,
    /// Capacity of this machine's own /dev/shm (cells may see another size).
    pub host_shm_bytes: u64,
    pub cgroup_version: String,
    pub cgroup_memory_limit: Option<u64>,
    pub host: String,
    pub harness_version: String,
    /// The Docker engine, when the run used one.
    pub docker: Option<crate::runtime::engine::EngineInfo>,
}

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

impl Fingerprint {
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
            host_shm_bytes: crate::loader::shm_meter::usage().0,
            cgroup_version: crate::cgroup::version()
                .map(|v| format!("v{v}"))
                .unwrap_or_default(),
            cgroup_memory_limit: crate::cgroup::memory_limit(),
            host: nix::unistd::gethostname()
                .map(|h| h.to_string_lossy().into_owned())
                .unwrap_or_default(),
            harness_version: env!("CARGO_PKG_VERSION").to_string(),
            docker: None,
        }
    }
}
