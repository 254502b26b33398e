//! What a pod of `shmbench k8s manifest`'s Jobs says about itself in its record: its name and
//! node (the downward API's variables the manifest sets), its completion index, the container
//! runtime its cgroup path names, and its own fingerprint (the node's kernel, CPU and memory as
//! the pod sees them), so `k8s collect` can key a fleet's rows by node without asking the API.

use model::pod::{PodInfo, NODE_NAME_ENV, POD_NAMESPACE_ENV, POD_NAME_ENV};

/// This pod, as the cell at `completion_index` of its Job.
pub fn info(completion_index: u64) -> PodInfo {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let fingerprint = sys::fingerprint::collect();
    let cgroups = ["/proc/self/cgroup", "/proc/self/mountinfo"]
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect::<Vec<_>>()
        .join("\n");
    PodInfo {
        // A pod's host name is its name, when the downward API variable is missing.
        pod: var(POD_NAME_ENV).unwrap_or_else(|| fingerprint.host.clone()),
        namespace: var(POD_NAMESPACE_ENV),
        node: var(NODE_NAME_ENV),
        completion_index,
        container_runtime: runtime_named_in(&cgroups),
        fingerprint,
    }
}

/// The container runtime a cgroup path names: the kubelet's cgroups end in
/// `cri-containerd-<id>.scope`, `crio-<id>.scope` or `docker-<id>.scope` (systemd driver), or
/// hold the runtime's name as a path part (cgroupfs driver). None inside a cgroup namespace,
/// where every path is `/`: the node's own report (`--nodes`) says then.
fn runtime_named_in(cgroups: &str) -> Option<String> {
    [
        ("containerd", "containerd"),
        ("crio", "cri-o"),
        ("docker", "docker"),
    ]
    .iter()
    .find(|(mark, _)| cgroups.contains(mark))
    .map(|(_, name)| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtimes_are_read_from_the_kubelets_cgroup_paths() {
        let containerd = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/cri-containerd-0a1b.scope";
        assert_eq!(runtime_named_in(containerd).as_deref(), Some("containerd"));
        assert_eq!(
            runtime_named_in("11:memory:/kubepods/burstable/pod1/crio-0a1b").as_deref(),
            Some("cri-o")
        );
        assert_eq!(runtime_named_in("0::/"), None);
    }
}
