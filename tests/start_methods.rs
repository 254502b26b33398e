//! Worker start methods, really run: under forkserver and spawn the Dataset's tensors move into
//! /dev/shm as the first worker starts (once, kept while the loader lives), under fork they do
//! not; too little /dev/shm for them ends the loader at start-up, as torch's ENOSPC
//! RuntimeError (modern) or a SIGBUS of the process copying them (legacy). The real-torch twin
//! of each is in tests/torch.rs.

use crate::common;

use common::*;

/// Batches of 8 ImageNet-sized f32 images (4.6 MiB), one worker, a short run.
const LOADER: &str = "--batch 8 --workers 1 --prefetch 1 --steps 4";
const MIB: f64 = (1u64 << 20) as f64;

#[test]
fn a_dataset_too_large_for_shm_fails_at_start_up_only_when_workers_are_pickled() {
    let _guard = serial();
    let before = machine_state();
    let held = "--dataset-bytes 32m --shm-size 24m";
    // fork: the workers inherit the Dataset, /dev/shm holds batches only.
    let r = run_cell(&format!("{LOADER} {held} --start-method fork"));
    assert_eq!(status(&r), "pass", "{r}");
    assert!(metric(&r, "peak_shm_bytes") < 16.0 * MIB, "{r}");
    // forkserver, modern: torch's ENOSPC, raised in the main before any batch.
    let r = run_cell(&format!(
        "{LOADER} {held} --start-method forkserver --torch modern"
    ));
    assert_eq!(status(&r), "enospc", "{r}");
    assert_eq!(crash_step(&r), 1);
    let msg = r["message"].as_str().unwrap();
    assert!(
        msg.contains("unable to allocate shared memory(shm)") && msg.contains("Dataset"),
        "{msg}"
    );
    // spawn, legacy: the copy meets the full tmpfs; the process copying dies by SIGBUS.
    let r = run_cell(&format!(
        "{LOADER} {held} --start-method spawn --torch legacy"
    ));
    assert_eq!(status(&r), "sigbus", "{r}");
    assert_eq!(crash_step(&r), 1);
    assert_eq!(r["failure"]["signal"], 7);
    assert_clean(&before);
}

#[test]
fn the_dataset_is_shared_once_and_kept_across_epochs_of_re_created_workers() {
    let _guard = serial();
    let before = machine_state();
    let r = run_cell(&format!(
        "{LOADER} --dataset-bytes 32m --shm-size 96m --start-method spawn --epochs 3 --persistent-workers false"
    ));
    assert_eq!(status(&r), "pass", "{r}");
    let peak = metric(&r, "peak_shm_bytes");
    // The Dataset's 32 MiB plus at most the batches alive (outstanding 1 + held 1, and one
    // refill: 3 x 4.6 MiB); three epochs of new workers do not add a copy each.
    assert!(
        peak >= 32.0 * MIB,
        "the Dataset's segment was not in /dev/shm: {r}"
    );
    assert!(peak < (32.0 + 3.0 * 4.6 + 1.0) * MIB, "{r}");
    assert_clean(&before);
}
