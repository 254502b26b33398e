//! `shmbench k8s manifest`: every scenario as Kubernetes objects, validated against the official
//! OpenAPI schemas of two Kubernetes minor versions (kubernetes-validate, set up by `cargo xtask
//! test`; SHMBENCH_SKIP_K8S_VALIDATE=1 skips), and the pod's side, `shmbench cell --from`, run
//! for real in a tmpfs of the pod's size.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::Value;

/// A manifest of small cells (batches of 8 images, 2 workers, 5 steps) that run in a second.
const SMALL: [&str; 8] = [
    "--image",
    "i:1",
    "--batch",
    "8",
    "--workers",
    "2",
    "--steps",
    "5",
];

/// The Kubernetes versions the manifests are checked against.
const VERSIONS: [&str; 2] = ["1.29.0", "1.33.0"];

/// The validator: SHMBENCH_K8S_VALIDATE, or the venv `cargo xtask test` makes.
fn validator() -> Option<PathBuf> {
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

fn manifest(args: &[&str]) -> Vec<Value> {
    let mut full = vec!["k8s", "manifest"];
    full.extend(args);
    let o = shmbench(&full);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout)
        .split("\n---\n")
        .map(|doc| serde_json::from_str(doc).unwrap())
        .collect()
}

/// The ConfigMap whose cells include `cell`.
fn config_map_of<'a>(objects: &'a [Value], cell: &str) -> &'a Value {
    let name = format!("\"cell\":\"{cell}\"");
    objects
        .iter()
        .find(|o| {
            o["kind"] == "ConfigMap" && o["data"]["cells.json"].as_str().unwrap().contains(&name)
        })
        .unwrap_or_else(|| panic!("no ConfigMap holds {cell}"))
}

fn scenarios() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    all.sort();
    all
}

#[test]
fn every_scenario_makes_jobs_the_kubernetes_schemas_accept() {
    let program = validator();
    for scenario in scenarios() {
        let path = scenario.to_str().unwrap();
        let args = [
            path,
            "--image",
            "registry.example/shmbench:1",
            "--node-selector",
            "pool=a100",
            "--repeat",
            "2",
        ];
        let objects = manifest(&args);
        let jobs: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "Job").collect();
        assert!(!jobs.is_empty(), "{path}");
        let mut cells = 0;
        for job in &jobs {
            let spec = &job["spec"];
            let pod = &spec["template"]["spec"];
            assert_eq!(spec["completionMode"], "Indexed");
            assert_eq!(
                spec["backoffLimitPerIndex"], 0,
                "a crash is a result, never retried"
            );
            assert_eq!(pod["automountServiceAccountToken"], false);
            assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
            assert_eq!(pod["nodeSelector"]["pool"], "a100");
            let container = &pod["containers"][0];
            assert_eq!(
                container["securityContext"]["capabilities"]["drop"][0],
                "ALL"
            );
            assert_eq!(container["securityContext"]["readOnlyRootFilesystem"], true);
            // The ConfigMap the pods index holds the job's cells; each index is one run of one.
            let map_name = pod["volumes"][0]["configMap"]["name"].as_str().unwrap();
            let map = objects
                .iter()
                .find(|o| o["metadata"]["name"] == map_name)
                .unwrap();
            let list: Vec<Value> =
                serde_json::from_str(map["data"]["cells.json"].as_str().unwrap()).unwrap();
            assert_eq!(spec["completions"], 2 * list.len() as u64);
            cells += list.len();
            for c in &list {
                assert_eq!(c["runtime"], "host", "the pod's /dev/shm is the cell's");
            }
        }
        assert!(cells > 0);
        let Some(program) = &program else { continue };
        let dir = temp_dir("manifest");
        let file = dir.join("m.yaml");
        let o = shmbench(
            &["k8s", "manifest", "--out", file.to_str().unwrap()]
                .iter()
                .copied()
                .chain(args)
                .collect::<Vec<_>>(),
        );
        assert!(o.status.success());
        for version in VERSIONS {
            let v = Command::new(program)
                .args(["--strict", "--quiet", "-k", version])
                .arg(&file)
                .output()
                .unwrap();
            assert!(
                v.status.success(),
                "{path} against Kubernetes {version}: {}{}",
                String::from_utf8_lossy(&v.stdout),
                String::from_utf8_lossy(&v.stderr)
            );
        }
    }
}

#[test]
fn a_sized_row_mounts_an_emptydir_of_its_size_and_a_default_row_none() {
    let objects = manifest(&["--image", "i:1"]);
    let job_of = |cell: &str| {
        let map = config_map_of(&objects, cell);
        let name = map["metadata"]["name"]
            .as_str()
            .unwrap()
            .trim_end_matches("-cells")
            .to_string();
        objects
            .iter()
            .find(|o| o["kind"] == "Job" && o["metadata"]["name"] == name.as_str())
            .unwrap()
            .clone()
    };
    let tuned = job_of("docker-tuned");
    let volumes = tuned["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap();
    let dshm = volumes.iter().find(|v| v["name"] == "dshm").unwrap();
    assert_eq!(dshm["emptyDir"]["medium"], "Memory");
    assert_eq!(dshm["emptyDir"]["sizeLimit"], "2048Mi");
    // The tmpfs pages count against the memory limit, so it is above the size.
    let memory = tuned["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
        ["memory"]
        .as_str()
        .unwrap()
        .trim_end_matches("Mi")
        .parse::<u64>()
        .unwrap();
    assert!(memory > 2048, "{memory}");
    let default = job_of("docker-default");
    let volumes = default["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .unwrap();
    assert!(volumes.iter().all(|v| v["name"] != "dshm"), "{volumes:?}");
    let o = shmbench(&["k8s", "manifest"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--image"));
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

/// The cells file of the ConfigMap that holds `cell`, as the pod mounts it.
fn cells_file(objects: &[Value], cell: &str, dir: &Path) -> PathBuf {
    let map = config_map_of(objects, cell);
    let path = dir.join(format!(
        "{}.json",
        map["metadata"]["name"].as_str().unwrap()
    ));
    std::fs::write(&path, map["data"]["cells.json"].as_str().unwrap()).unwrap();
    path
}

/// A pod as its Job runs it: `shmbench cell --from` with its completion index and the variables
/// the downward API sets, in a tmpfs of the pod's /dev/shm size (a watched namespace cell). Its
/// stdout, the pod's log, is returned.
fn run_pod(cells: &Path, index: u32, pod: &str, node: &str, shm: &str, dir: &Path) -> String {
    let o = command()
        .args(["watch", "--shm-size", shm, "--out"])
        .arg(dir.join(format!("{pod}.watch.csv")))
        .args(["--", BIN, "cell", "--from"])
        .arg(cells)
        .env("JOB_COMPLETION_INDEX", index.to_string())
        .env("POD_NAME", pod)
        .env("POD_NAMESPACE", "ml")
        .env("NODE_NAME", node)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn fixture(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/k8s")
        .join(name);
    path.to_str().unwrap().to_string()
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
    // Two pods of tests/fixtures/k8s/pods.json run for real: their logs, one written by
    // `kubectl logs --prefix`, one bare, in a directory.
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let default_cells = cells_file(&objects, "docker-default", &dir);
    let a = run_pod(
        &default_cells,
        0,
        "shmbench-seed-matrix-0-0-x7k2p",
        "node-a",
        "64m",
        &dir,
    );
    let prefixed: String = format!("starting\n{a}")
        .lines()
        .map(|l| format!("[pod/shmbench-seed-matrix-0-0-x7k2p/cell] {l}\n"))
        .collect();
    std::fs::write(logs.join("a.log"), prefixed).unwrap();
    let tuned_cells = cells_file(&objects, "docker-tuned", &dir);
    let b = run_pod(
        &tuned_cells,
        0,
        "shmbench-seed-matrix-2-0-q9w4z",
        "node-b",
        "2g",
        &dir,
    );
    std::fs::write(logs.join("b.log"), b).unwrap();
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

/// The objects as `k8s manifest --out` writes them.
fn k8s_text(objects: &[Value]) -> String {
    let docs: Vec<String> = objects
        .iter()
        .map(|o| serde_json::to_string_pretty(o).unwrap())
        .collect();
    format!("{}\n", docs.join("\n---\n"))
}
