//! Container cells under each engine and OCI runtime: the seed matrix's two edge cells at full
//! size (one batch is 73.5 MiB) under Docker and rootful Podman, each with runc, gVisor's runsc
//! and crun (`cargo xtask test` installs them and registers crun and runsc with the Docker
//! engine). A runtime that does not start here must say why in its rows; runc must start; every
//! row records its engine and runtime with their versions; Podman's default /dev/shm is
//! measured as the engine leaves it; nothing of either engine is left behind.

use crate::common;

use std::process::{Command, Stdio};

use common::*;

/// These tests need Podman, crun and runsc besides Docker (SHMBENCH_SKIP_RUNTIMES=1 skips them).
fn runtimes_or_skip() -> bool {
    docker_or_skip()
        && require(
            "runtimes",
            || {
                ["podman", "crun", "runsc"]
                    .iter()
                    .all(|p| which::which(p).is_ok())
            },
            "podman, crun and runsc",
        )
}

/// Podman's containers of shmbench runs, and the Podman services a run started.
fn podman_leftovers() -> Vec<String> {
    let containers = Command::new("podman")
        .args(["ps", "-aq", "--filter", "label=org.shmbench.run-token"])
        .stderr(Stdio::null())
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let services = Command::new("pgrep")
        .args(["-af", "system service --time=0 unix:///.*shmbench-podman-"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    containers
        .lines()
        .chain(services.lines())
        .map(String::from)
        .collect()
}

#[test]
fn the_seed_edges_run_under_every_engine_and_oci_runtime_and_rows_name_them() {
    if !runtimes_or_skip() {
        return;
    }
    let _lane = second_serial();
    let before = machine_state();
    let podman_before = podman_leftovers();
    let dir = temp_dir("runtimes");
    let out = dir.join("r.csv");
    let ran = shmbench(&[
        "matrix",
        "--cells",
        "docker-default,docker-tuned",
        "--engines",
        "docker,podman",
        "--oci-runtimes",
        "runc,runsc,crun",
        "--workers",
        "2",
        "--steps",
        "4",
        "--out",
        out.to_str().unwrap(),
    ]);
    let text = String::from_utf8_lossy(&ran.stdout);
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 12, "{text}");
    let mut started = Vec::new();
    for row in &rows {
        let (engine, oci) = (&row["engine"], &row["oci_runtime"]);
        assert!(!row["docker_version"].is_empty(), "{row:?}");
        if row["status"] == "error" {
            // A runtime that cannot start here: the engine's refusal, in both cells alike.
            assert_ne!(oci, "runc", "runc must start here: {row:?}");
            assert!(row["message"].contains(oci.as_str()), "{row:?}");
            continue;
        }
        started.push(format!("{engine} {oci}"));
        let recorded = &row["docker_oci_runtime"];
        assert!(
            recorded.starts_with(&format!("{oci} ")) && !recorded.ends_with(" ?"),
            "the row names its OCI runtime and version: {row:?}"
        );
        // Each engine's own default /dev/shm: Docker's 64 MiB, Podman's 64000k.
        let default_shm = match engine.as_str() {
            "podman" => 64_000 << 10,
            _ => 64 << 20,
        };
        match row["cell"].as_str() {
            "docker-default" => {
                assert_eq!(row["shm_seen_bytes"], default_shm.to_string(), "{row:?}");
                assert_eq!(row["status"], "sigbus", "{row:?}");
                assert_eq!(row["crash_step"], "1", "{row:?}");
            }
            _ => {
                assert_eq!(row["shm_seen_bytes"], (2u64 << 30).to_string(), "{row:?}");
                assert_eq!(row["status"], "pass", "{row:?}");
            }
        }
    }
    for must in ["docker runc", "podman runc"] {
        assert!(
            started.iter().any(|s| s == must),
            "{must} did not run: {text}"
        );
    }
    // Tracked like kernels: the history's columns are the runtimes, and its cells pair across
    // them (one run a side judges nothing, and says so).
    let history = shmbench(&["history", out.to_str().unwrap(), "--by", "runtime"]);
    let said = String::from_utf8_lossy(&history.stdout);
    assert!(
        said.contains("docker://") && said.contains("podman://"),
        "{said}"
    );
    assert!(said.contains("not judged"), "{said}");
    assert_clean(&before);
    assert_eq!(
        podman_leftovers(),
        podman_before,
        "Podman containers or services left"
    );
}
