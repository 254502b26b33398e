//! Kubernetes as tests drive it: a small scenario's manifest, the ConfigMap of a cell, and a
//! pod's side (`shmbench cell --from`) run for real with the pod's environment.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::*;

/// A manifest of small cells (batches of 8 images, 2 workers, 5 steps) that run in a second.
pub const SMALL: [&str; 8] = [
    "--image",
    "i:1",
    "--batch",
    "8",
    "--workers",
    "2",
    "--steps",
    "5",
];

pub fn manifest(args: &[&str]) -> Vec<Value> {
    let mut full = vec!["k8s", "manifest"];
    full.extend(args);
    let o = shmbench(&full);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    shmbench::cluster::k8s::yaml::from_yaml(&String::from_utf8_lossy(&o.stdout)).unwrap()
}

/// The ConfigMap whose cells include `cell`.
pub fn config_map_of<'a>(objects: &'a [Value], cell: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == "ConfigMap" && cells_of(o).iter().any(|c| c["cell"] == cell))
        .unwrap_or_else(|| panic!("no ConfigMap holds {cell}"))
}

/// The cells file of the ConfigMap that holds `cell`, as the pod mounts it.
pub fn cells_file(objects: &[Value], cell: &str, dir: &Path) -> PathBuf {
    let map = config_map_of(objects, cell);
    let path = dir.join(format!(
        "{}.yaml",
        map["metadata"]["name"].as_str().unwrap()
    ));
    std::fs::write(&path, map["data"]["cells.yaml"].as_str().unwrap()).unwrap();
    path
}

/// A pod as its Job runs it: `shmbench cell --from` with its completion index and the variables
/// the downward API sets, in a tmpfs of the pod's /dev/shm size (a watched namespace cell). Its
/// stdout, the pod's log, is returned.
pub fn run_pod(cells: &Path, index: u32, pod: &str, node: &str, shm: &str, dir: &Path) -> String {
    let o = output(|c| {
        c.args(["watch", "--shm-size", shm, "--out"])
            .arg(dir.join(format!("{pod}.watch.csv")))
            .args(["--", BIN, "cell", "--from"])
            .arg(cells)
            .env("JOB_COMPLETION_INDEX", index.to_string())
            .env("POD_NAME", pod)
            .env("POD_NAMESPACE", "ml")
            .env("NODE_NAME", node)
    });
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

/// The objects as `k8s manifest --out` writes them.
pub fn k8s_text(objects: &[Value]) -> String {
    shmbench::cluster::k8s::yaml::to_yaml(objects)
}

/// The cells a ConfigMap of the manifest holds (its `cells.yaml`, a YAML list).
pub fn cells_of(map: &Value) -> Vec<Value> {
    let text = map["data"]["cells.yaml"].as_str().unwrap_or_default();
    let docs = shmbench::cluster::k8s::yaml::from_yaml(text).unwrap();
    docs.into_iter()
        .next()
        .and_then(|l| l.as_array().cloned())
        .unwrap_or_default()
}

/// The Kubernetes versions the manifests are checked against.
pub const VERSIONS: [&str; 2] = ["1.29.0", "1.33.0"];

/// The validator: SHMBENCH_K8S_VALIDATE, or the venv `cargo xtask test` makes.
pub fn validator() -> Option<PathBuf> {
    let program = match std::env::var_os("SHMBENCH_K8S_VALIDATE") {
        Some(p) => PathBuf::from(p),
        None => {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
            cache.join("shmbench/venvs/k8s/bin/kubernetes-validate")
        }
    };
    let present = || {
        Command::new(&program)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    require("k8s_validate", present, "kubernetes-validate").then_some(program)
}

/// Checks `file` (Kubernetes YAML) against the official schemas of every version in
/// [`VERSIONS`], strictly (an unknown field fails); panics with what the validator said.
pub fn assert_schemas_accept(program: &Path, file: &Path, what: &str) {
    for version in VERSIONS {
        let v = Command::new(program)
            .args(["--strict", "--quiet", "-k", version])
            .arg(file)
            .output()
            .unwrap();
        assert!(
            v.status.success(),
            "{what} against Kubernetes {version}: {}{}",
            String::from_utf8_lossy(&v.stdout),
            String::from_utf8_lossy(&v.stderr)
        );
    }
}
