//! The real DataLoader under gVisor and Podman: torch's own workers, its own segments and its
//! own way of ending in a full /dev/shm (SIGBUS up to 2.9, ENOSPC from `posix_fallocate` from
//! 2.10), in containers of each engine and OCI runtime that `torch` does not already cover
//! (Docker with runc: `torch::torch_cells_run_in_containers_with_the_python_mounted`). The
//! Python is the tests' venv, mounted read-only as for any torch cell.

use crate::common;
use crate::runtimes::{assert_names_its_runtime, runtimes_or_skip};

use common::*;

/// Batches of 8 images (4.6 MiB): room for every batch in flight, and a /dev/shm smaller than
/// what 2 workers keep outstanding.
const TORCH_CELLS: &str = r#"
name = "runtime-torch"
[defaults]
container = "docker"
loader = "torch"
workers = 2
batch = 8
steps = 12
compute-ms = 20
[[cells]]
name = "roomy"
shm-size = "256m"
[[cells]]
name = "tight"
shm-size = "16m"
"#;

#[test]
fn real_torch_runs_and_ends_its_own_way_under_gvisor_and_podman() {
    let Some(python) = torch_or_skip() else {
        return;
    };
    if !runtimes_or_skip() {
        return;
    }
    let _lane = second_serial();
    let before = machine_state();
    let dir = temp_dir("runtime-torch");
    let scenario = dir.join("torch.toml");
    std::fs::write(&scenario, TORCH_CELLS).unwrap();
    let mut rows = Vec::new();
    // Both cells under gVisor; under Podman the tight one, whose ENOSPC is torch's own words
    // from its workers (a run under gVisor costs 13 s, torch's import through the sandbox).
    for (engines, runtimes, cells) in [
        ("docker", "runsc", "roomy,tight"),
        ("podman", "runc,runsc", "tight"),
    ] {
        let out = dir.join(format!("{engines}.csv"));
        let ran = shmbench(&[
            "matrix",
            scenario.to_str().unwrap(),
            "--cells",
            cells,
            "--python",
            &python,
            "--engines",
            engines,
            "--oci-runtimes",
            runtimes,
            "--out",
            out.to_str().unwrap(),
        ]);
        let found = read_csv(&out);
        assert!(
            !found.is_empty(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
        rows.extend(found);
    }
    assert_eq!(rows.len(), 4, "{rows:?}");
    for row in &rows {
        assert_names_its_runtime(row);
        let version = &row["torch_version"];
        assert!(!version.is_empty(), "the torch that ran: {row:?}");
        if row["cell"] == "roomy" {
            assert_eq!(row["status"], "pass", "{row:?}");
            assert_eq!(row["shm_seen_bytes"], (256u64 << 20).to_string(), "{row:?}");
            continue;
        }
        assert_eq!(
            row["status"],
            failure_of(version),
            "torch {version}'s own way: {row:?}"
        );
        let step: u64 = row["crash_step"].parse().unwrap();
        assert!(
            step <= 5,
            "16 MiB holds less than the 2 x 2 batches in flight: {row:?}"
        );
    }
    assert_clean(&before);
}
