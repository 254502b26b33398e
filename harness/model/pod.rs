//! A Kubernetes pod as shmbench sees it: what a pod that ran a cell says about itself (in the
//! cell's record, [`PodInfo`]), and what the API says about how a pod ended ([`PodStatus`], from
//! `kubectl get pods -o json`) and about its node ([`NodeInfo`], from `kubectl get nodes -o json`).
//!
//! A pod killed from outside (OOMKilled, evicted) prints no record: its end is read from the API's
//! documents, in the shapes the API returns them (`cluster::k8s::collect` classifies it).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::fingerprint::Fingerprint;

/// Set by Kubernetes in each pod of an Indexed Job: the pod's completion index.
pub const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// Set by the manifest through the downward API: the node's name (`spec.nodeName`).
pub const NODE_NAME_ENV: &str = "NODE_NAME";
/// Set by the manifest through the downward API: the pod's name (`metadata.name`).
pub const POD_NAME_ENV: &str = "POD_NAME";
/// Set by the manifest through the downward API: the pod's namespace.
pub const POD_NAMESPACE_ENV: &str = "POD_NAMESPACE";

/// What the pod that ran a cell says about itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PodInfo {
    pub pod: String,
    pub namespace: Option<String>,
    /// The node, from the downward API.
    pub node: Option<String>,
    /// The pod's completion index in its Job.
    pub completion_index: u64,
    /// The container runtime its cgroup path names (containerd, cri-o, docker), where it does.
    pub container_runtime: Option<String>,
    /// The machine as the pod sees it: the node's kernel, CPU and memory, the pod's memory limit.
    pub fingerprint: Fingerprint,
}

/// How a pod's container terminated, as the API reports it.
#[derive(Clone, Debug, PartialEq)]
pub struct Terminated {
    pub exit_code: i32,
    /// `Completed`, `Error`, `OOMKilled`, `ContainerStatusUnknown`, ...
    pub reason: Option<String>,
    pub signal: Option<i32>,
}

/// One pod of a Job, from the API.
#[derive(Clone, Debug, PartialEq)]
pub struct PodStatus {
    pub name: String,
    /// Whether a manifest of shmbench's made it (label `app.kubernetes.io/name: shmbench`).
    pub shmbench: bool,
    /// The Job that made it (`batch.kubernetes.io/job-name`, or `job-name` before 1.27).
    pub job: Option<String>,
    pub completion_index: Option<u64>,
    pub node: Option<String>,
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    pub phase: String,
    /// The pod's own reason (`Evicted`) and message.
    pub reason: Option<String>,
    pub message: Option<String>,
    pub terminated: Option<Terminated>,
    pub start_time: Option<String>,
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// Every object of `kind` in an API document: a List's items, or the one object.
fn objects<'a>(doc: &'a Value, kind: &str) -> Vec<&'a Value> {
    match doc["items"].as_array() {
        Some(items) => items
            .iter()
            .filter(|o| o["kind"] == kind || o["kind"].is_null())
            .collect(),
        None if doc["kind"] == kind => vec![doc],
        None => Vec::new(),
    }
}

impl PodStatus {
    /// The pods of a `kubectl get pods -o json` document (a List, or one Pod).
    pub fn all_in(doc: &Value) -> Vec<PodStatus> {
        objects(doc, "Pod")
            .into_iter()
            .filter_map(PodStatus::from_api)
            .collect()
    }

    /// One Pod object; None without a name.
    pub fn from_api(pod: &Value) -> Option<PodStatus> {
        let meta = &pod["metadata"];
        let label =
            |key: &str| text(&meta["labels"][key]).or_else(|| text(&meta["annotations"][key]));
        let status = &pod["status"];
        // The cell's container, or the first one.
        let containers = status["containerStatuses"].as_array();
        let container =
            containers.and_then(|all| all.iter().find(|c| c["name"] == "cell").or(all.first()));
        let terminated = container.and_then(|c| {
            let t = if c["state"]["terminated"].is_object() {
                &c["state"]["terminated"]
            } else {
                &c["lastState"]["terminated"]
            };
            Some(Terminated {
                exit_code: t["exitCode"].as_i64()? as i32,
                reason: text(&t["reason"]),
                signal: t["signal"].as_i64().map(|s| s as i32),
            })
        });
        Some(PodStatus {
            name: text(&meta["name"])?,
            shmbench: meta["labels"]["app.kubernetes.io/name"] == "shmbench",
            job: label("batch.kubernetes.io/job-name").or_else(|| label("job-name")),
            completion_index: label("batch.kubernetes.io/job-completion-index")
                .and_then(|i| i.parse().ok()),
            node: text(&pod["spec"]["nodeName"]),
            phase: text(&status["phase"]).unwrap_or_else(|| "Unknown".into()),
            reason: text(&status["reason"]),
            message: text(&status["message"]),
            terminated,
            start_time: text(&status["startTime"]),
        })
    }
}

/// What the API says about a node (`status.nodeInfo`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodeInfo {
    pub name: String,
    pub kernel: String,
    pub os_image: String,
    /// e.g. `containerd://1.7.13`.
    pub container_runtime: String,
    pub kubelet: String,
}

impl NodeInfo {
    /// The nodes of a `kubectl get nodes -o json` document (a List, or one Node).
    pub fn all_in(doc: &Value) -> Vec<NodeInfo> {
        objects(doc, "Node")
            .into_iter()
            .filter_map(|node| {
                let info = &node["status"]["nodeInfo"];
                let field = |k: &str| text(&info[k]).unwrap_or_default();
                Some(NodeInfo {
                    name: text(&node["metadata"]["name"])?,
                    kernel: field("kernelVersion"),
                    os_image: field("osImage"),
                    container_runtime: field("containerRuntimeVersion"),
                    kubelet: field("kubeletVersion"),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pods of `tests/fixtures/k8s/pods.json`, in the API's shape.
    pub fn pods() -> Vec<PodStatus> {
        let doc = include_str!("../../tests/fixtures/k8s/pods.json");
        PodStatus::all_in(&serde_json::from_str(doc).unwrap())
    }

    #[test]
    fn pods_are_read_as_the_api_writes_them() {
        let pods = pods();
        assert_eq!(pods.len(), 7);
        let oom = &pods[2];
        assert_eq!(oom.job.as_deref(), Some("shmbench-seed-matrix-0"));
        assert_eq!(oom.completion_index, Some(1));
        assert_eq!(oom.node.as_deref(), Some("node-b"));
        assert!(oom.shmbench);
        assert!(!pods[6].shmbench, "a pod of another app");
    }

    #[test]
    fn nodes_say_their_kubelet_and_runtime() {
        let doc = include_str!("../../tests/fixtures/k8s/nodes.json");
        let nodes = NodeInfo::all_in(&serde_json::from_str(doc).unwrap());
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[1].container_runtime, "containerd://1.7.20");
        assert_eq!(nodes[1].kubelet, "v1.33.1");
        assert_eq!(nodes[0].kernel, "6.1.0-57-cloud-amd64");
    }
}
