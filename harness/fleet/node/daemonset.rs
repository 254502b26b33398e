//! Node Problem Detector with shmbench's check on every node (`shmbench node --emit
//! daemonset`): a ConfigMap holding the plugin monitor config (`npd`), a DaemonSet whose
//! pod runs NPD with it, and the ServiceAccount NPD reports conditions as (bound to Kubernetes'
//! own `system:node-problem-detector` role). An init container copies shmbench out of its image
//! into a volume NPD's container runs it from. The pod sees what the check needs and nothing
//! more: the host's pids (`hostPID`, so leftovers can be proven dead), and the host's /dev/shm
//! mounted read-only over its own (the check never writes; `facts` judges the
//! filesystem's read-only flag, not this view's).

use serde_json::{json, Value};

use super::npd;

/// Where the pod runs shmbench from.
pub(crate) const BINARY: &str = "/opt/shmbench/shmbench";
const BINARY_DIR: &str = "/opt/shmbench";
/// The config's key in the ConfigMap, and where NPD reads it.
const CONFIG_FILE: &str = "shmbench.json";
const CONFIG_DIR: &str = "/config";
const NAME: &str = "shmbench-node-problem-detector";

/// What the objects are made for.
pub struct Target<'a> {
    /// shmbench's image (`shmbench image export`, pushed to the cluster's registry).
    pub image: &'a str,
    /// Node Problem Detector's image.
    pub npd_image: &'a str,
    pub namespace: &'a str,
    /// shmbench's path in its own image.
    pub binary_in_image: &'a str,
}

/// The ServiceAccount, its binding, the ConfigMap and the DaemonSet; `args` are what NPD runs
/// `shmbench` with.
pub fn objects(target: &Target, args: &[String]) -> Vec<Value> {
    let labels = json!({ "app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "shmbench" });
    let meta =
        |name: &str| json!({ "name": name, "namespace": target.namespace, "labels": labels });
    let config = npd::plugin_config(BINARY, args);
    let config_text = serde_json::to_string_pretty(&config).unwrap_or_default() + "\n";
    vec![
        json!({ "apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(NAME) }),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": { "name": NAME, "labels": labels },
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:node-problem-detector"
            },
            "subjects": [{ "kind": "ServiceAccount", "name": NAME, "namespace": target.namespace }]
        }),
        json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": meta(NAME),
            "data": { CONFIG_FILE: config_text }
        }),
        json!({
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": meta(NAME),
            "spec": {
                "selector": { "matchLabels": { "app.kubernetes.io/name": NAME } },
                "updateStrategy": { "type": "RollingUpdate" },
                "template": {
                    "metadata": { "labels": labels },
                    "spec": pod_spec(target),
                }
            }
        }),
    ]
}

fn pod_spec(target: &Target) -> Value {
    json!({
        "serviceAccountName": NAME,
        // The proof a leftover is dead reads every process of the node.
        "hostPID": true,
        "priorityClassName": "system-node-critical",
        "tolerations": [{ "operator": "Exists" }],
        "initContainers": [{
            "name": "shmbench",
            "image": target.image,
            "command": [target.binary_in_image, "copy-self", BINARY],
            "securityContext": {
                "allowPrivilegeEscalation": false,
                "readOnlyRootFilesystem": true,
                "capabilities": { "drop": ["ALL"] }
            },
            "volumeMounts": [{ "name": "shmbench", "mountPath": BINARY_DIR }]
        }],
        "containers": [{
            "name": "node-problem-detector",
            "image": target.npd_image,
            "command": [
                "/node-problem-detector",
                "--logtostderr",
                format!("--config.custom-plugin-monitor={CONFIG_DIR}/{CONFIG_FILE}")
            ],
            "env": [{
                "name": "NODE_NAME",
                "valueFrom": { "fieldRef": { "fieldPath": "spec.nodeName" } }
            }],
            // Root with the host's pids: reading other users' processes' fds and mappings
            // takes privileges (as NPD's own manifest runs it).
            "securityContext": { "privileged": true },
            "resources": {
                "requests": { "cpu": "10m", "memory": "64Mi" },
                "limits": { "memory": "256Mi" }
            },
            "volumeMounts": [
                { "name": "config", "mountPath": CONFIG_DIR, "readOnly": true },
                { "name": "shmbench", "mountPath": BINARY_DIR, "readOnly": true },
                { "name": "host-dev-shm", "mountPath": "/dev/shm", "readOnly": true }
            ]
        }],
        "volumes": [
            { "name": "config", "configMap": { "name": NAME } },
            { "name": "shmbench", "emptyDir": {} },
            { "name": "host-dev-shm", "hostPath": { "path": "/dev/shm", "type": "Directory" } }
        ]
    })
}
