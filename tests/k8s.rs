//! `shmbench k8s manifest`: every scenario as Kubernetes objects, validated against the official
//! OpenAPI schemas of two Kubernetes minor versions (kubernetes-validate, set up by `cargo xtask
//! test`; SHMBENCH_SKIP_K8S_VALIDATE=1 skips), and the pod's side, `shmbench cell --from`, run
//! for real in a tmpfs of the pod's size.

use crate::common;

use std::path::PathBuf;

use common::*;
use serde_json::Value;

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
            let list: Vec<Value> = cells_of(map);
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
        assert_schemas_accept(program, &file, path);
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
    // No image, or an empty name (which would write `image: ""`, a pod that never starts).
    for args in [
        &["k8s", "manifest"][..],
        &["k8s", "manifest", "--image", " "],
    ] {
        let o = shmbench(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("--image"),
            "{args:?}"
        );
    }
}

#[test]
fn every_manifest_passes_shmbenchs_own_check() {
    for scenario in scenarios() {
        let path = scenario.to_str().unwrap();
        let dir = temp_dir("manifest-check");
        let file = dir.join("m.yaml");
        let made = shmbench(&[
            "k8s",
            "manifest",
            path,
            "--image",
            "registry.example/shmbench:1",
            "--out",
            file.to_str().unwrap(),
        ]);
        assert!(
            made.status.success(),
            "{}",
            String::from_utf8_lossy(&made.stderr)
        );
        let checked = shmbench(&["check", "--format", "json", file.to_str().unwrap()]);
        let doc: Value = serde_json::from_slice(&checked.stdout).unwrap();
        // Host IPC rows mount the node's /dev/shm on purpose: a note, never a failure.
        let above_notes: Vec<&Value> = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["rule"]["severity"] != "note")
            .collect();
        assert!(above_notes.is_empty(), "{path}: {above_notes:#?}");
        assert_eq!(checked.status.code(), Some(0), "{path}: {doc:#}");
    }
}
