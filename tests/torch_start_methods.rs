//! Worker start methods with the real DataLoader (`multiprocessing_context`): a Dataset holding
//! tensors passes under fork in a /dev/shm too small for its tensors, and fails at start-up
//! under forkserver and spawn, which pickle it to the workers through shared memory; with room,
//! the tensors are in /dev/shm once, across epochs of re-created workers. Needs a Python with
//! torch (tests/common/torch.rs).

use crate::common;

use common::*;

const LOADER: &str = "--batch 8 --workers 2 --prefetch 2 --steps 8";
const MIB: f64 = (1u64 << 20) as f64;

#[test]
fn a_real_dataset_moves_into_shm_under_forkserver_and_spawn_only() {
    let Some(python) = torch_or_skip() else {
        return;
    };
    let _guard = second_serial();
    let before = machine_state();
    let torch = format!("--loader torch --python {python} {LOADER} --dataset-bytes 96m");
    let r = run_cell(&format!("{torch} --shm-size 64m --start-method fork"));
    assert_eq!(status(&r), "pass", "{r}");
    assert!(metric(&r, "peak_shm_bytes") < 48.0 * MIB, "{r}");
    for method in ["forkserver", "spawn"] {
        let r = run_cell(&format!("{torch} --shm-size 64m --start-method {method}"));
        assert_eq!(status(&r), expected_failure(&r), "{method}: {r}");
        assert_eq!(crash_step(&r), 1, "{method}: {r}");
    }
    // With room: the Dataset's 96 MiB once, beside at most the batches a loader of 2 x 2 keeps
    // (6 of 4.6 MiB), however many times its workers are re-created.
    let r = run_cell(&format!(
        "{torch} --shm-size 256m --start-method spawn --epochs 2 --persistent-workers false"
    ));
    assert_eq!(status(&r), "pass", "{r}");
    let peak = metric(&r, "peak_shm_bytes");
    assert!(
        (96.0 * MIB..(96.0 + 6.0 * 4.6 + 2.0) * MIB).contains(&peak),
        "{r}"
    );
    assert_clean(&before);
}
