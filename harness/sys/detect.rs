//! What the doctor needs to know about where it runs: the /dev/shm it sees, whether this is a
//! container (and which kind), the memory cgroup limit, the fd limit and the kernel. Read-only.

use serde::Serialize;

use super::{cgroup, fingerprint, shm};

/// The kind of place this process runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Place {
    Kubernetes,
    Docker,
    /// Podman, LXC or another container runtime.
    OtherContainer,
    Host,
}

#[derive(Clone, Debug, Serialize)]
pub struct Environment {
    pub place: Place,
    /// What told us (a file or variable), for the report.
    pub evidence: String,
    pub shm_total_bytes: u64,
    pub shm_free_bytes: u64,
    pub cgroup_memory_limit: Option<u64>,
    pub nofile_soft: u64,
    /// vm.max_map_count: the most mappings one process may hold (None: unreadable).
    pub max_map_count: Option<u64>,
    pub kernel: String,
    pub mem_total_bytes: u64,
    /// Inside a gVisor sandbox: its /proc/version is gVisor's own, fixed one.
    pub gvisor: bool,
    /// In a user namespace that maps other ids than the host's (a rootless container), by
    /// /proc/self/uid_map.
    pub user_namespace: bool,
    /// The memory cgroup hierarchy's version as seen here (1 or 2; None: none mounted).
    pub cgroup_version: Option<u8>,
}

/// The version gVisor's Sentry reports for every sandbox (release 4.4.0), whatever the host's.
const GVISOR_VERSION: &str = "4.4.0 #1 SMP Sun Jan 10 15:06:54 PST 2016";

/// Whether /proc/self/uid_map is anything but the initial namespace's identity map.
fn in_user_namespace() -> bool {
    std::fs::read_to_string("/proc/self/uid_map").is_ok_and(|map| {
        let fields: Vec<&str> = map.split_whitespace().collect();
        fields != ["0", "0", "4294967295"]
    })
}

fn file_mentions(path: &str, needles: &[&str]) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| needles.iter().any(|n| t.contains(n)))
}

fn place() -> (Place, String) {
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        return (Place::Kubernetes, "KUBERNETES_SERVICE_HOST is set".into());
    }
    if std::path::Path::new("/var/run/secrets/kubernetes.io").exists() {
        return (
            Place::Kubernetes,
            "/var/run/secrets/kubernetes.io exists".into(),
        );
    }
    if std::path::Path::new("/.dockerenv").exists() {
        return (Place::Docker, "/.dockerenv exists".into());
    }
    if file_mentions("/proc/1/cgroup", &["docker"]) {
        return (Place::Docker, "/proc/1/cgroup names docker".into());
    }
    if std::path::Path::new("/run/.containerenv").exists() {
        return (
            Place::OtherContainer,
            "/run/.containerenv exists (podman)".into(),
        );
    }
    if let Ok(c) = std::env::var("container") {
        return (Place::OtherContainer, format!("container={c}"));
    }
    (Place::Host, "no container markers".into())
}

impl Environment {
    pub fn read() -> Environment {
        let (place, evidence) = place();
        let (shm_total_bytes, used) = shm::usage();
        let nofile_soft =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                .map(|(soft, _)| soft)
                .unwrap_or(0);
        Environment {
            place,
            evidence,
            shm_total_bytes,
            shm_free_bytes: shm_total_bytes.saturating_sub(used),
            cgroup_memory_limit: cgroup::memory_limit(),
            nofile_soft,
            max_map_count: std::fs::read_to_string("/proc/sys/vm/max_map_count")
                .ok()
                .and_then(|t| t.trim().parse().ok()),
            kernel: nix::sys::utsname::uname()
                .map(|u| u.release().to_string_lossy().into_owned())
                .unwrap_or_default(),
            mem_total_bytes: fingerprint::mem_total(),
            gvisor: file_mentions("/proc/version", &[GVISOR_VERSION]),
            user_namespace: in_user_namespace(),
            cgroup_version: cgroup::version(),
        }
    }
}
