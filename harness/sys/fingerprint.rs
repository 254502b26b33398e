//! The environment a run happened in: what must be the same for two runs to be comparable
//! (kernel, OS, CPU, memory, cgroup, harness version) and where it ran (host).

use serde::{Deserialize, Serialize};

/// What a Docker engine says about itself (versions, cgroup and storage drivers).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineInfo {
    pub version: String,
    pub api_version: String,
    pub cgroup_version: String,
    pub cgroup_driver: String,
    pub storage_driver: String,
}

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
    pub docker: Option<EngineInfo>,
    /// Transparent huge pages for shmem/tmpfs (`/sys/kernel/mm/transparent_hugepage/shmem_enabled`).
    pub thp_shmem: String,
    /// The NVIDIA driver version, where one is loaded.
    pub gpu_driver: Option<String>,
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

    /// A stable id of the fields that make two runs' environments "the same": kernel, OS, CPU,
    /// cores, memory, cgroup version, shmem THP, GPU driver and Docker engine. The host name and
    /// the harness version are not part of it (the same setup on two hosts is the same
    /// environment; hosts are keyed separately).
    pub fn env_id(&self) -> String {
        use sha2::{Digest, Sha256};
        let fields = [
            self.kernel.clone(),
            self.os.clone(),
            self.cpu.clone(),
            self.cores.to_string(),
            self.mem_bytes.to_string(),
            self.cgroup_version.clone(),
            self.thp_shmem.clone(),
            self.gpu_driver.clone().unwrap_or_default(),
            self.docker
                .as_ref()
                .map(|d| d.version.clone())
                .unwrap_or_default(),
        ];
        let digest = Sha256::digest(fields.join("\u{1f}").as_bytes());
        digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
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
