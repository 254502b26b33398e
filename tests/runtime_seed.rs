//! The seed matrix (the how-to's five rows) under every engine and OCI runtime that starts here
//! (rootless Podman's run is in `rootless_podman`), 2 workers and 4 steps of full-size batches:
//! each row records its OCI runtime and version, and ends as the model says of the /dev/shm its
//! container saw (less than one batch: a crash at step 1; room for every batch in flight: a pass).

use crate::common;
use crate::runtimes::{assert_names_its_runtime, refused_by_engine, runtimes_or_skip};

use std::collections::HashMap;

use common::*;

/// The seed matrix's flags for these runs: the mechanism at full size, in a few seconds a cell.
pub(crate) const SEED_FLAGS: [&str; 4] = ["--workers", "2", "--steps", "4"];

/// Judges the seed matrix's rows; the engines and OCI runtimes that started (`podman runsc`). A
/// runtime refused on every cell must say so in each row (runc must start); one that started
/// may be refused only on the cells of `may_refuse`, its row naming the engine's reason.
pub(crate) fn judge_seed(rows: &[HashMap<String, String>], may_refuse: &[&str]) -> Vec<String> {
    let key = |row: &HashMap<String, String>| format!("{} {}", row["engine"], row["oci_runtime"]);
    let mut started: Vec<String> = rows
        .iter()
        .filter(|r| !refused_by_engine(r))
        .map(key)
        .collect();
    started.sort();
    started.dedup();
    for row in rows {
        let oci = row["oci_runtime"].as_str();
        if refused_by_engine(row) {
            let allowed =
                !started.contains(&key(row)) || may_refuse.contains(&row["cell"].as_str());
            assert!(
                allowed && (oci != "runc" || started.contains(&key(row))),
                "{row:?}"
            );
            continue;
        }
        assert_names_its_runtime(row);
        let seen: u64 = row["shm_seen_bytes"].parse().unwrap();
        let batch: u64 = row["batch_bytes"].parse().unwrap();
        // 2 workers x prefetch 2 outstanding, and the one the step holds.
        if seen < batch {
            assert!(
                matches!(row["status"].as_str(), "sigbus" | "enospc") && row["crash_step"] == "1",
                "less than one batch of /dev/shm: {row:?}"
            );
        } else if seen >= 5 * batch {
            assert_eq!(row["status"], "pass", "room for every batch: {row:?}");
        }
    }
    started
}

#[test]
fn the_seed_matrix_runs_under_every_engine_and_oci_runtime_that_starts_here() {
    if !runtimes_or_skip() {
        return;
    }
    let _lane = second_serial();
    let before = machine_state();
    let dir = temp_dir("runtime-seed");
    let out = dir.join("seed.csv");
    let mut args = vec!["matrix", "seed-matrix", "--out", out.to_str().unwrap()];
    args.extend(SEED_FLAGS);
    args.extend([
        "--engines",
        "docker,podman",
        "--oci-runtimes",
        "runc,runsc,crun",
    ]);
    let ran = shmbench(&args);
    let text = String::from_utf8_lossy(&ran.stdout);
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 30, "{text}");
    let started = judge_seed(&rows, &[]);
    for must in ["docker runc", "podman runc"] {
        assert!(
            started.iter().any(|s| s == must),
            "{must} did not run: {text}"
        );
    }
    assert_clean(&before);
}
