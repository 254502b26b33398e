//! The Docker runtime against the real local engine: the how-to's container rows in real
//! containers, OOM under a memory limit, and no container left behind, even when the harness is
//! killed. These tests need an engine; `cargo xtask test` starts one. Set SHMBENCH_SKIP_DOCKER=1 to
//! skip them on a machine without Docker (they fail otherwise, so a missing engine is never hidden).

use crate::common;

use std::io::BufReader;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

#[test]
fn engine_default_shm_crashes_the_seed_loader_at_step_1() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let before = machine_state();
    let legacy = run_cell("--runtime docker --steps 5 --torch legacy");
    assert_legacy_out_of_shm(&legacy);
    assert_eq!(crash_step(&legacy), 1);
    // What the container really saw: this engine's default.
    assert_eq!(legacy["shm_seen_bytes"], 64 << 20, "{legacy}");
    let modern = run_cell("--runtime docker --steps 5 --torch modern");
    assert_eq!(status(&modern), "enospc", "{modern}");
    assert_eq!(crash_step(&modern), 1);
    assert_clean(&before);
}

#[test]
fn ipc_host_and_a_2_gib_shm_size_pass() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let before = machine_state();
    let sized = run_cell("--runtime docker --shm-size 2g --steps 20");
    assert_eq!(status(&sized), "pass", "{sized}");
    assert_eq!(sized["shm_seen_bytes"], 2u64 << 30);
    let host = run_cell("--runtime docker --ipc host --steps 20");
    assert_eq!(status(&host), "pass", "{host}");
    let host_shm = std::fs::metadata("/dev/shm").is_ok();
    assert!(
        host_shm && host["shm_seen_bytes"].as_u64().unwrap() > 2u64 << 30,
        "{host}"
    );
    // A Kubernetes-style tmpfs (emptyDir, medium: Memory) on /dev/shm bounds the same way.
    let tmpfs = run_cell("--runtime docker --shm-size 64m --shm-tmpfs --steps 5");
    assert_legacy_out_of_shm(&tmpfs);
    assert_eq!(tmpfs["shm_seen_bytes"], 64 << 20);
    assert_clean(&before);
}

#[test]
fn a_memory_limit_below_the_in_flight_bytes_is_oom() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let before = machine_state();
    // 17 batches of 73.5 MiB want 1.2 GiB of tmpfs pages; the cgroup allows 512 MiB.
    let r = run_cell("--runtime docker --shm-size 2g --memory 512m --steps 20");
    assert_eq!(status(&r), "oom", "{r}");
    assert!(r["message"].as_str().unwrap().contains("OOM"), "{r}");
    assert_clean(&before);
}

#[test]
fn seed_matrix_runs_its_docker_rows_in_containers() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("docker-matrix");
    let out = dir.join("m.csv");
    let o = shmbench(&["matrix", "--steps", "20", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 5);
    for row in &rows {
        assert_eq!(row["runtime"], "docker", "{row:?}");
        assert!(!row["docker_version"].is_empty() && !row["docker_storage_driver"].is_empty());
        let crashes = matches!(
            row["cell"].as_str(),
            "docker-default" | "restricted-file-system"
        );
        if crashes {
            assert!(
                matches!(row["status"].as_str(), "sigbus" | "enospc"),
                "{row:?}"
            );
            assert_eq!(row["crash_step"], "1");
        } else {
            assert_eq!(row["status"], "pass", "{row:?}");
        }
    }
    assert_clean(&before);
}

#[test]
fn no_engine_is_a_clear_error_for_runtime_docker() {
    let o = Command::new(BIN)
        .args(["run", "--runtime", "docker", "--batch", "8"])
        .env("DOCKER_HOST", NO_ENGINE)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("no Docker engine answered at unix:///nonexistent/docker.sock"),
        "{stderr}"
    );
    assert!(
        stderr.contains("dockerd") && stderr.contains("--runtime namespace"),
        "{stderr}"
    );
}

#[test]
fn killing_the_harness_mid_cell_leaves_no_container() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let before = machine_state();
    for signal in ["INT", "KILL"] {
        let mut child = spawn_run(
            "--runtime docker --shm-size 256m --batch 8 --workers 2 --steps 100000 --compute-ms 10",
        );
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        wait_for_line(&mut stderr, "[1/1]");
        let deadline = Instant::now() + Duration::from_secs(60);
        // Wait until its container runs.
        while machine_state().containers.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            !machine_state().containers.is_empty(),
            "the cell's container never started"
        );
        std::thread::sleep(Duration::from_millis(500));
        send_signal(child.id(), signal);
        let status = child.wait().unwrap();
        if signal == "INT" {
            assert_eq!(status.code(), Some(130));
        }
        assert_clean(&before);
    }
}

#[test]
fn a_container_killed_from_outside_ends_its_cell_and_the_matrix_goes_on() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let before = machine_state();
    let (mut child, out) = spawn_matrix(
        "docker-outside",
        "name = \"outside\"\n[defaults]\nruntime = \"docker\"\nbatch = 8\nworkers = 2\nshm-size = \"256m\"\n\
         [[cells]]\nname = \"victim\"\nsteps = 100000\ncompute-ms = 10\n\
         [[cells]]\nname = \"next\"\nsteps = 5\n",
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while machine_state().containers.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    // This test's own container: another user's run may have some too.
    let ours = our_containers();
    assert_eq!(ours.len(), 1, "not one running container to kill: {ours:?}");
    let id = ours[0].clone();
    Command::new("docker").args(["kill", &id]).output().unwrap();
    // A cell that ended in error: exit 4 (docs/OVERVIEW.md), the next cell still ran.
    assert_eq!(child.wait().unwrap().code(), Some(4));
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["status"], "error");
    assert!(
        rows[0]["message"].contains("killed (exit code 137)"),
        "{:?}",
        rows[0]
    );
    assert_eq!(rows[1]["status"], "pass");
    assert_clean(&before);
}

#[test]
fn kubernetes_pod_setups_end_as_the_documentation_says() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("k8s");
    let out = dir.join("r.csv");
    // 20 steps: more than the 16 batches the loader keeps outstanding, so every worker works.
    let o = shmbench(&[
        "matrix",
        "kubernetes",
        "--steps",
        "20",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = read_csv(&out);
    let status = |cell: &str| {
        rows.iter()
            .find(|r| r["cell"] == cell)
            .map(|r| r["status"].clone())
            .unwrap()
    };
    // No emptyDir: the runtime's 64 MiB, the seed batch never fits.
    assert!(out_of_shm_kind(&status("no-emptydir")), "{rows:?}");
    // The tmpfs has room but the memory limit does not: eight workers each build a batch in
    // private memory (8 x 73.5 MiB) and collate it into a segment (8 x 73.5 MiB more), over
    // 1 GiB before the main can free much, so the OOM killer ends it.
    assert_eq!(status("emptydir-2gi-limit-1gi"), "oom");
    assert_eq!(status("emptydir-unbounded-limit-1gi"), "oom");
    assert_eq!(status("emptydir-2gi-limit-4gi"), "pass");
    assert_eq!(status("emptydir-unbounded-limit-4gi"), "pass");
    assert!(rows.iter().all(|r| r["runtime"] == "docker"), "{rows:?}");
    // Each row's claim is the documentation's, and the measurement agrees with it.
    assert!(
        rows.iter()
            .all(|r| r["claim_source"] == "Kubernetes documentation"
                && r["claim_verdict"] == "agrees"),
        "{rows:?}"
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("Kubernetes documentation says"), "{stdout}");
    assert_clean(&before);
}

#[test]
fn ipc_host_containers_never_collide_with_a_foreign_segment_or_each_other() {
    if !docker_or_skip() {
        return;
    }
    let _guard = serial();
    let before = machine_state();
    // Every main in a container is pid 1: names by pid collided with each other and with this.
    let foreign = std::path::Path::new("/dev/shm/shmbench_1_0_5");
    std::fs::write(foreign, b"not shmbench's").unwrap();
    let holder = std::fs::File::open(foreign).unwrap();
    let args =
        "--runtime docker --ipc host --strategy file_system --workers 2 --batch 8 --steps 30";
    let runs: Vec<_> = (0..2)
        .map(|_| spawn_run(&format!("{args} --json")))
        .collect();
    for run in runs {
        let o = run.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        let record: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap())
            .unwrap_or_else(|e| panic!("{e}: {stdout}"));
        assert_eq!(status(&record), "pass", "{record}");
    }
    assert!(foreign.exists(), "a run removed a foreign segment");
    drop(holder);
    std::fs::remove_file(foreign).unwrap();
    assert_clean(&before);
}
