//! A scenario as Kubernetes objects (`shmbench k8s manifest`): one Indexed Job per pod shape
//! (/dev/shm size, memory limit), each pod running one cell with the `host` runtime inside it
//! (its /dev/shm is the pod's: a memory-backed emptyDir of the cell's size, or none for the
//! runtime's default rows), the cells in a ConfigMap the pod indexes by `JOB_COMPLETION_INDEX`.
//! Pods run unprivileged (non-root, no privilege escalation, every capability dropped, read-only
//! root, no service account token); a pod that fails (OOMKilled, evicted) fails its index only,
//! never retried, since a crash is the result being measured. Each pod's record names the pod
//! and its node (downward API) for `k8s collect`.
//!
//! Written as block-style YAML (`crate::k8s::yaml`, through yaml-rust2), the cells in the
//! ConfigMap as a readable YAML list, so a pull request shows what each pod runs.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::k8s::yaml;
use model::config::CellConfig;
use model::knobs::{IpcMode, RuntimeKind};
use model::pod::{NODE_NAME_ENV, POD_NAMESPACE_ENV, POD_NAME_ENV};
use plan::memory;

/// Where the cells file is mounted in the pod.
const CELLS_DIR: &str = "/etc/shmbench";
/// The ConfigMap's key of the cells (a YAML list), and the file's name in the pod.
pub(crate) const CELLS_FILE: &str = "cells.yaml";
/// The user and group pods run as (nobody).
const NOBODY: u64 = 65534;

/// What the manifest is for.
pub struct Target<'a> {
    pub image: &'a str,
    pub namespace: &'a str,
    pub node_selector: &'a [(String, String)],
    pub repeat: u32,
}

/// The shape of a pod: what its spec must differ by.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Shape {
    shm: Option<u64>,
    host_shm: bool,
    memory: Option<u64>,
}

fn mebibytes(bytes: u64) -> String {
    format!("{}Mi", bytes.div_ceil(1 << 20))
}

/// The memory a pod of these cells needs when the cell sets no limit: the /dev/shm pages (they
/// count against it) and the processes' own (`plan::memory`).
fn memory_for(cells: &[&CellConfig], shape: &Shape) -> u64 {
    if let Some(limit) = shape.memory {
        return limit;
    }
    let shm = shape.shm.unwrap_or(64 << 20);
    // A shape's group of cells is never empty.
    shm + cells
        .iter()
        .map(|c| memory::private_bytes(c))
        .max()
        .unwrap_or(0)
}

/// The config a pod runs: the cell as is, in the pod's own /dev/shm (runtime host), its limits
/// being the pod's.
fn in_pod(cell: &CellConfig, shape: &Shape) -> CellConfig {
    let mut c = cell.clone();
    c.knobs.runtime = RuntimeKind::Host;
    c.knobs.shm_size = None;
    c.knobs.shm_tmpfs = false;
    c.knobs.memory = None;
    c.knobs.ipc = IpcMode::Private;
    c.knobs.image = None;
    // The pod's emptyDir is already the size a remount would give; a pod boots no kernel.
    c.knobs.shm_remount = None;
    c.knobs.kernel = None;
    c.runtime_note = Some(match (shape.shm, shape.host_shm) {
        (_, true) => "a Kubernetes pod with the node's /dev/shm (hostPath)".into(),
        (Some(size), _) => format!(
            "a Kubernetes pod, /dev/shm an emptyDir (medium Memory, sizeLimit {})",
            mebibytes(size)
        ),
        (None, _) => {
            "a Kubernetes pod without an emptyDir: the container runtime's /dev/shm".into()
        }
    });
    c
}

/// The objects for `cells`: a ConfigMap and an Indexed Job per pod shape.
pub fn objects(scenario: &str, cells: &[CellConfig], target: &Target) -> Vec<Value> {
    let mut shapes: BTreeMap<Shape, Vec<&CellConfig>> = BTreeMap::new();
    for c in cells {
        let shape = Shape {
            shm: c.knobs.shm_remount.or(c.knobs.shm_size).map(|s| s.bytes()),
            host_shm: c.knobs.ipc == IpcMode::Host,
            memory: c.knobs.memory.map(|m| m.bytes()),
        };
        shapes.entry(shape).or_default().push(c);
    }
    let base = format!("shmbench-{}", kube_name(scenario));
    let labels = json!({
        "app.kubernetes.io/name": "shmbench",
        "app.kubernetes.io/component": "cell",
        "shmbench.org/scenario": kube_name(scenario),
    });
    let mut out = Vec::new();
    for (i, (shape, group)) in shapes.iter().enumerate() {
        let name = format!("{base}-{i}");
        let pod_cells: Vec<CellConfig> = group.iter().map(|c| in_pod(c, shape)).collect();
        let completions = group.len() as u64 * target.repeat.max(1) as u64;
        out.push(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": format!("{name}-cells"), "namespace": target.namespace, "labels": labels},
            "data": {CELLS_FILE: yaml::to_yaml(&[serde_json::to_value(&pod_cells).unwrap_or_default()])},
        }));
        let memory = mebibytes(memory_for(group, shape));
        let mut mounts = vec![json!({"name": "cells", "mountPath": CELLS_DIR, "readOnly": true})];
        let mut volumes =
            vec![json!({"name": "cells", "configMap": {"name": format!("{name}-cells")}})];
        if shape.host_shm {
            mounts.push(json!({"name": "dshm", "mountPath": "/dev/shm"}));
            volumes.push(
                json!({"name": "dshm", "hostPath": {"path": "/dev/shm", "type": "Directory"}}),
            );
        } else if let Some(size) = shape.shm {
            mounts.push(json!({"name": "dshm", "mountPath": "/dev/shm"}));
            volumes.push(json!({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": mebibytes(size)}}));
        }
        let selector: serde_json::Map<String, Value> = target
            .node_selector
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let mut pod = json!({
            "restartPolicy": "Never",
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "securityContext": {
                "runAsNonRoot": true,
                "runAsUser": NOBODY,
                "runAsGroup": NOBODY,
                "seccompProfile": {"type": "RuntimeDefault"},
            },
            "containers": [{
                "name": "cell",
                "image": target.image,
                "args": ["cell", "--from", format!("{CELLS_DIR}/{CELLS_FILE}")],
                // The record names its pod and node (`k8s collect` keys a fleet by them).
                "env": [
                    downward(NODE_NAME_ENV, "spec.nodeName"),
                    downward(POD_NAME_ENV, "metadata.name"),
                    downward(POD_NAMESPACE_ENV, "metadata.namespace"),
                ],
                "resources": {
                    "requests": {"memory": memory, "cpu": "1"},
                    "limits": {"memory": memory},
                },
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"]},
                },
                "volumeMounts": mounts,
            }],
            "volumes": volumes,
        });
        if !selector.is_empty() {
            pod["nodeSelector"] = Value::Object(selector);
        }
        out.push(json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": target.namespace, "labels": labels},
            "spec": {
                "completionMode": "Indexed",
                "completions": completions,
                // One cell at a time: cells measure, and neighbours on a node disturb them.
                "parallelism": 1,
                // A failed pod (OOMKilled, evicted) is a result: its index fails, nothing retries.
                "backoffLimitPerIndex": 0,
                "maxFailedIndexes": completions,
                "podFailurePolicy": {"rules": [
                    {"action": "FailIndex", "onExitCodes": {"containerName": "cell", "operator": "NotIn", "values": [0]}},
                    {"action": "FailIndex", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                ]},
                // Pods stay a day for `kubectl logs` and `shmbench k8s collect`.
                "ttlSecondsAfterFinished": 86400,
                "template": {"metadata": template_meta(&labels, shape), "spec": pod},
            },
        }));
    }
    out
}

/// A pod template's metadata: the labels, and for a shape that measures a /dev/shm above its
/// memory limit on purpose (the OOM it ends in is the result), the annotation that tells
/// `shmbench check` so.
fn template_meta(labels: &Value, shape: &Shape) -> Value {
    let mut meta = json!({"labels": labels});
    if let (Some(shm), Some(memory)) = (shape.shm, shape.memory) {
        if shm > memory {
            meta["annotations"] = json!({
                "shmbench.io/ignore": "SHM003",
                "shmbench.io/why": "this cell measures a /dev/shm above the memory limit on purpose",
            });
        }
    }
    meta
}

/// An environment variable the downward API fills from the pod's `field`.
fn downward(name: &str, field: &str) -> Value {
    json!({"name": name, "valueFrom": {"fieldRef": {"fieldPath": field}}})
}

/// Why `value` is not a label value Kubernetes accepts (at most 63 characters: letters, digits,
/// '-', '_', '.', beginning and ending with a letter or digit; or empty), if it is not.
fn label_value_problem(value: &str) -> Option<&'static str> {
    let inner_ok = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let ends_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if value.is_empty() {
        None
    } else if value.len() > 63 {
        Some("is longer than 63 characters")
    } else if !inner_ok {
        Some("may hold only letters, digits, '-', '_' and '.'")
    } else if !ends_ok(value.chars().next()) || !ends_ok(value.chars().last()) {
        Some("must begin and end with a letter or digit")
    } else {
        None
    }
}

/// Why `KEY=VALUE` is not a node selector Kubernetes accepts (a label key: an optional DNS
/// subdomain prefix and '/', then a name as a label value allows, not empty), if it is not.
pub fn node_selector_problem(key: &str, value: &str) -> Option<String> {
    let (prefix, name) = key.rsplit_once('/').unwrap_or(("", key));
    let prefix_ok = prefix.len() <= 253
        && (prefix.is_empty()
            || prefix.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            }));
    if !prefix_ok || key.ends_with('/') {
        return Some(format!(
            "key {key:?}: its prefix must be a DNS subdomain (lower case letters, digits, '-', '.')"
        ));
    }
    if name.is_empty() {
        return Some(format!("key {key:?} has no name"));
    }
    if let Some(why) = label_value_problem(name) {
        return Some(format!("key {key:?}: its name {why}"));
    }
    label_value_problem(value).map(|why| format!("value {value:?} {why}"))
}

/// A scenario name as a Kubernetes object name allows it (lower case, digits, '-').
fn kube_name(s: &str) -> String {
    let name: String = s
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    name.trim_matches('-').chars().take(40).collect()
}

/// The objects as a file: block-style YAML documents, each starting with `---`. Node selector
/// values are always double-quoted: a label value is a string, and bare `0b1` or `1_000` are the
/// integers 1 and 1000 to a YAML 1.1 reader.
pub fn render(objects: &[Value]) -> String {
    yaml::to_yaml_quoting(objects, &["nodeSelector"])
}
