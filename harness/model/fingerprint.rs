//! The environment a run happened in: what must be the same for two runs to be comparable
//! (kernel, OS, CPU, memory, cgroup, harness version) and where it ran (host). Read from the
//! machine by `sys::fingerprint`; carried in a pod's record (`pod`) and in every results row.

use serde::{Deserialize, Serialize};

/// What a container engine says about itself (versions, cgroup and storage drivers), and the OCI
/// runtime it ran a cell's container with.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineInfo {
    /// `docker` or `podman` (records from before Podman read as Docker's).
    #[serde(default = "docker")]
    pub name: String,
    pub version: String,
    pub api_version: String,
    pub cgroup_version: String,
    pub cgroup_driver: String,
    pub storage_driver: String,
    /// The OCI runtime and its version, as its `--version` says (`runc 1.1.5+ds1`, `runsc
    /// 0.0~20221219.0`); empty where it could not be read.
    #[serde(default)]
    pub oci_runtime: String,
    /// The engine runs as an unprivileged user (its security options name `rootless`).
    #[serde(default)]
    pub rootless: bool,
}

impl EngineInfo {
    /// The engine, its version and how it runs, as history columns and env ids say it
    /// (`podman 4.3.1`, `podman 4.3.1 rootless`).
    pub fn label(&self) -> String {
        match self.rootless {
            true => format!("{} {} rootless", self.name, self.version),
            false => format!("{} {}", self.name, self.version),
        }
    }
}

fn docker() -> String {
    "docker".to_string()
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

impl Fingerprint {
    /// This host's fingerprint as seen from a guest it ran: the machine fields (kernel, OS, CPU,
    /// cores, memory, /dev/shm, cgroup, THP) are the guest's; the host's name, the harness version
    /// and the engine stay.
    pub fn in_guest(&self, guest: &Fingerprint) -> Fingerprint {
        Fingerprint {
            kernel: guest.kernel.clone(),
            os: guest.os.clone(),
            cpu: guest.cpu.clone(),
            cores: guest.cores,
            mem_bytes: guest.mem_bytes,
            host_shm_bytes: guest.host_shm_bytes,
            cgroup_version: guest.cgroup_version.clone(),
            cgroup_memory_limit: guest.cgroup_memory_limit,
            thp_shmem: guest.thp_shmem.clone(),
            gpu_driver: None,
            ..self.clone()
        }
    }

    /// A stable id of the fields that make two runs' environments "the same": kernel, OS, CPU,
    /// cores, memory, cgroup version, shmem THP, GPU driver, and the container engine with its OCI
    /// runtime. The host name and
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
                .map(|d| format!("{} {}", d.label(), d.oci_runtime))
                .unwrap_or_default(),
        ];
        let digest = Sha256::digest(fields.join("\u{1f}").as_bytes());
        digest.iter().take(6).map(|b| format!("{b:02x}")).collect()
    }
}
