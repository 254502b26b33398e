//! Which container, pod or batch job a process belongs to, from the paths in its
//! /proc/PID/cgroup: Docker and Podman, containerd and CRI-O (under Kubernetes, with the pod's
//! UID), and Slurm jobs, for the cgroupfs and systemd drivers of cgroup v1 and v2. A name is
//! taken only where the path has the shape its owner gives it (a whole 64-digit id in a runtime's
//! scope, or below `docker`'s or a pod's cgroup; `job_N` below Slurm's), never from a part that
//! merely looks like an id. A process whose paths name none of them is the host's.

use std::fmt;

/// What a process runs in, as its cgroup paths name it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub(crate) struct Workload {
    /// `docker`, `podman`, `containerd`, `cri-o`; None outside a container.
    pub(crate) runtime: Option<&'static str>,
    /// The container id's first 12 characters, as `docker ps` shows it.
    pub(crate) container: Option<String>,
    /// The Kubernetes pod's UID (dashes restored from a systemd slice's underscores).
    pub(crate) pod_uid: Option<String>,
    /// The Slurm job id.
    pub(crate) slurm_job: Option<String>,
}

impl fmt::Display for Workload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(uid) = &self.pod_uid {
            parts.push(format!("pod {uid}"));
        }
        if let (Some(runtime), Some(id)) = (self.runtime, &self.container) {
            parts.push(format!("{runtime} {id}"));
        }
        if let Some(job) = &self.slurm_job {
            parts.push(format!("slurm job {job}"));
        }
        match parts.is_empty() {
            true => f.write_str("host"),
            false => f.write_str(&parts.join(", ")),
        }
    }
}

/// The workload a /proc/PID/cgroup text names.
pub(crate) fn of_cgroup(text: &str) -> Workload {
    let mut found = Workload::default();
    for line in text.lines() {
        // hierarchy-ID:controllers:path
        let Some(path) = line.splitn(3, ':').nth(2) else {
            continue;
        };
        let parts: Vec<&str> = path.split('/').collect();
        let under_slurm = parts
            .iter()
            .any(|p| *p == "slurm" || *p == "slurmstepd.scope" || p.starts_with("slurm_"));
        for (i, part) in parts.iter().enumerate() {
            let parent = if i > 0 { parts[i - 1] } else { "" };
            read_part(part, parent, under_slurm, &mut found);
        }
    }
    found
}

/// A whole container id (64 lowercase hex digits, as engines and CRI runtimes make them), as
/// `docker ps` shows it: its first 12.
fn short_id(id: &str) -> Option<String> {
    let hex = id.len() == 64 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    hex.then(|| id[..12].to_string())
}

/// What one component of a cgroup path (below `parent`) says, added to `found`.
fn read_part(part: &str, parent: &str, under_slurm: bool, found: &mut Workload) {
    let scope = part.strip_suffix(".scope").unwrap_or(part);
    let runtimes = [
        ("docker-", "docker"),
        ("libpod-", "podman"),
        ("cri-containerd-", "containerd"),
        ("crio-", "cri-o"),
    ];
    for (prefix, runtime) in runtimes {
        if let Some(id) = scope.strip_prefix(prefix).and_then(short_id) {
            found.runtime = Some(runtime);
            found.container = Some(id);
            return;
        }
    }
    // cgroupfs driver: /docker/<id>, or /kubepods/<qos>/pod<uid>/<id>.
    let owned = parent == "docker" || pod_uid(parent).is_some();
    if found.container.is_none() && owned {
        if let Some(id) = short_id(part) {
            found.container = Some(id);
            found.runtime = Some(match found.pod_uid {
                Some(_) => "containerd",
                None => "docker",
            });
            return;
        }
    }
    if let Some(uid) = pod_uid(part) {
        found.pod_uid = Some(uid);
    } else if let Some(job) = part.strip_prefix("job_").filter(|_| under_slurm) {
        if !job.is_empty() && job.bytes().all(|b| b.is_ascii_digit()) {
            found.slurm_job = Some(job.to_string());
        }
    }
}

/// A pod's UID from `pod<uid>` (cgroupfs) or `kubepods-<qos>-pod<uid>.slice` (systemd, where
/// the UID's dashes are underscores).
fn pod_uid(part: &str) -> Option<String> {
    let slice = part.strip_suffix(".slice").unwrap_or(part);
    let at = slice.rfind("pod")?;
    let before = &slice[..at];
    if !(before.is_empty() || before.ends_with('-')) {
        return None;
    }
    let uid = slice[at + 3..].replace('_', "-");
    let uuid = uid.len() == 36 && uid.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    uuid.then_some(uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "4f1c2b3a5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708";
    const UID: &str = "0b5c6d7e-1f2a-4b3c-8d9e-0a1b2c3d4e5f";

    #[test]
    fn containers_pods_and_jobs_are_named_by_their_cgroup_paths() {
        let docker_v1 = format!("12:memory:/docker/{ID}\n11:cpu:/docker/{ID}\n");
        let w = of_cgroup(&docker_v1);
        assert_eq!(
            (w.runtime, w.container.as_deref()),
            (Some("docker"), Some(&ID[..12]))
        );
        let docker_v2 = format!("0::/system.slice/docker-{ID}.scope\n");
        assert_eq!(
            of_cgroup(&docker_v2).to_string(),
            format!("docker {}", &ID[..12])
        );
        let systemd_pod = format!(
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{ID}.scope\n",
            UID.replace('-', "_")
        );
        assert_eq!(
            of_cgroup(&systemd_pod).to_string(),
            format!("pod {UID}, containerd {}", &ID[..12])
        );
        let cgroupfs_pod = format!("9:memory:/kubepods/besteffort/pod{UID}/{ID}\n");
        let w = of_cgroup(&cgroupfs_pod);
        assert_eq!(w.pod_uid.as_deref(), Some(UID));
        assert_eq!(w.runtime, Some("containerd"));
        let crio = format!(
            "0::/kubepods.slice/kubepods-pod{}.slice/crio-{ID}.scope\n",
            UID.replace('-', "_")
        );
        assert_eq!(of_cgroup(&crio).runtime, Some("cri-o"));
        let slurm_v1 = "4:memory:/slurm/uid_1000/job_4242/step_0/task_0\n";
        assert_eq!(of_cgroup(slurm_v1).to_string(), "slurm job 4242");
        let slurm_v2 = "0::/system.slice/slurmstepd.scope/job_17/step_batch/user/task_0\n";
        assert_eq!(of_cgroup(slurm_v2).slurm_job.as_deref(), Some("17"));
    }

    #[test]
    fn a_host_process_names_nothing() {
        for text in [
            "0::/user.slice/user-1000.slice/session-2.scope\n",
            "0::/\n",
            "12:memory:/system.slice/ssh.service\n",
            // Parts that only look like an id or a job: not a runtime's or Slurm's shape.
            "4:memory:/process_api/218d5bb342cb9f1e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0\n",
            "0::/user.slice/218d5bb342cb\n",
            "0::/batch/job_42\n",
            "",
        ] {
            assert_eq!(of_cgroup(text), Workload::default(), "{text}");
            assert_eq!(of_cgroup(text).to_string(), "host");
        }
    }
}
