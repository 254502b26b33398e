//! A pod's side of `shmbench k8s`, run for real: the cell a Job's completion index picks, in a
//! tmpfs of the pod's size, and `k8s collect` turning real pod logs and API statuses into rows.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use serde_json::Value;

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/k8s")
        .join(name);
    path.to_str().unwrap().to_string()
}

#[test]
fn a_pod_runs_the_cell_its_completion_index_picks() {
    let _guard = serial();
    let before = machine_state();
    let objects = manifest(&SMALL);
    let dir = temp_dir("pod");
    let cells = cells_file(&objects, "docker-tuned", &dir);
    // A tmpfs of the emptyDir's size stands for the pod's /dev/shm; index 3 of a one-cell list
    // (a repeat) is that cell.
    let log = run_pod(&cells, 3, "p-3", "node-a", "2g", &dir);
    let record: Value = serde_json::from_str(&log).unwrap();
    assert_eq!(record["config"]["cell"], "docker-tuned");
    assert_eq!(record["status"], "pass", "{record}");
    assert_eq!(record["shm_seen_bytes"], 2u64 << 30);
    assert!(record["config"]["runtime_note"]
        .as_str()
        .unwrap()
        .contains("emptyDir"));
    // The record names its pod and node (the downward API's variables) and the machine.
    assert_eq!(record["pod"]["pod"], "p-3");
    assert_eq!(record["pod"]["node"], "node-a");
    assert_eq!(record["pod"]["completion_index"], 3);
    assert!(!record["pod"]["fingerprint"]["kernel"]
        .as_str()
        .unwrap()
        .is_empty());
    // Outside an Indexed Job there is no index: a clear error.
    let o = shmbench(&["cell", "--from", cells.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("JOB_COMPLETION_INDEX is not set"));
    assert_clean(&before);
}

#[test]
fn collect_turns_real_pod_logs_and_api_statuses_into_rows() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("collect");
    let manifest_path = dir.join("m.yaml");
    let m = manifest_path.to_str().unwrap();
    let objects = manifest(&[&SMALL[..], &["--namespace", "ml"]].concat());
    std::fs::write(&manifest_path, k8s_text(&objects)).unwrap();
    let logs = two_pods_logged(&objects, &dir);
    let (pods, nodes) = (fixture("pods.json"), fixture("nodes.json"));
    let out = dir.join("fleet.csv");
    let logs = logs.to_str().unwrap();
    // Three pods ended without a record: without the manifest their cells are unknown.
    let o = shmbench(&[
        "k8s",
        "collect",
        logs,
        "--pods",
        &pods,
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("3 pods ended without a record") && err.contains("--manifest"),
        "{err}"
    );
    let o = shmbench(&[
        "k8s",
        "collect",
        logs,
        "--pods",
        &pods,
        "--nodes",
        &nodes,
        "--manifest",
        m,
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("shmbench-seed-matrix-0-0-b4c1e: Running, no result yet"),
        "{err}"
    );
    let rows = read_csv(&out);
    assert_eq!(
        rows.len(),
        5,
        "two records, three pods ended from outside; {rows:?}"
    );
    assert_fleet_rows(&rows);
    // The fleet run as a history along its nodes and runtimes.
    for by in ["node", "runtime"] {
        let o = shmbench(&["history", out.to_str().unwrap(), "--by", by]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(text.contains(&format!("History by {by}")), "{text}");
    }
    let o = shmbench(&["history", out.to_str().unwrap(), "--by", "node"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("node-a") && text.contains("node-b") && text.contains("evicted"),
        "{text}"
    );
    assert_clean(&before);
}

/// Two pods of tests/fixtures/k8s/pods.json run for real, their logs in `dir/logs`: one written
/// by `kubectl logs --prefix`, one bare.
fn two_pods_logged(objects: &[serde_json::Value], dir: &std::path::Path) -> std::path::PathBuf {
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let default_cells = cells_file(objects, "docker-default", dir);
    let a = run_pod(
        &default_cells,
        0,
        "shmbench-seed-matrix-0-0-x7k2p",
        "node-a",
        "64m",
        dir,
    );
    let prefixed: String = format!("starting\n{a}")
        .lines()
        .map(|l| format!("[pod/shmbench-seed-matrix-0-0-x7k2p/cell] {l}\n"))
        .collect();
    std::fs::write(logs.join("a.log"), prefixed).unwrap();
    let tuned_cells = cells_file(objects, "docker-tuned", dir);
    let b = run_pod(
        &tuned_cells,
        0,
        "shmbench-seed-matrix-2-0-q9w4z",
        "node-b",
        "2g",
        dir,
    );
    std::fs::write(logs.join("b.log"), b).unwrap();
    logs
}

/// The rows of the two pods that ran and of the three that ended from outside.
fn assert_fleet_rows(rows: &[std::collections::HashMap<String, String>]) {
    let row = |cell: &str| rows.iter().find(|r| r["cell"] == cell).unwrap();
    let kernel =
        String::from_utf8(Command::new("uname").arg("-r").output().unwrap().stdout).unwrap();
    let default = row("docker-default");
    assert_eq!(default["status"], "pass");
    assert_eq!(default["node"], "node-a");
    assert_eq!(default["host"], "node-a");
    assert_eq!(default["pod"], "shmbench-seed-matrix-0-0-x7k2p");
    // The record's own fingerprint (this machine ran it), the node's versions from the API.
    assert_eq!(default["kernel"], kernel.trim());
    assert_eq!(default["container_runtime"], "containerd://1.7.13");
    assert_eq!(default["kubelet_version"], "v1.29.4");
    assert_eq!(default["shm_seen_bytes"], (64u64 << 20).to_string());
    assert!(default["peak_shm_bytes"].parse::<u64>().unwrap() > 0);
    assert!(!default["steps_file"].is_empty());
    let tuned = row("docker-tuned");
    assert_eq!(
        (tuned["status"].as_str(), tuned["node"].as_str()),
        ("pass", "node-b")
    );
    assert_eq!(
        tuned["shm_bytes"],
        (2u64 << 30).to_string(),
        "the emptyDir's sizeLimit"
    );
    let oom = row("restricted-file-system");
    assert_eq!(
        (oom["status"].as_str(), oom["node"].as_str()),
        ("oom", "node-b")
    );
    assert_eq!(
        oom["kernel"], "6.8.0-1015-aws",
        "a silent pod's node as the API knows it"
    );
    assert!(oom["message"].contains("OOMKilled"));
    let evicted = row("docker-standard");
    assert_eq!(evicted["status"], "evicted");
    assert!(evicted["message"].contains("low on resource: memory"));
    assert_eq!(row("docker-ipc-host")["status"], "error");
}
