//! Real torch at a limit other than /dev/shm's size: a main that keeps every batch alive meets
//! the node's real vm.max_map_count (one mapping per batch held), and ends as `enomem`, as the
//! emulation does at the same step within the few mappings each process has of its own.

use crate::common;

use common::*;

#[test]
fn real_torch_and_the_emulation_meet_vm_max_map_count_alike() {
    let Some(limit) = max_map_count_within_reach() else {
        return;
    };
    let Some(python) = torch_or_skip() else {
        return;
    };
    let _guard = second_serial();
    let before = machine_state();
    let real_cell = map_count_cell(&format!("--loader torch --python {python}"), limit);
    let mut real = run_cell(&real_cell);
    // torch's file_system strategy asks its torch_shm_manager for every segment, over a socket
    // with a timeout of its own: on a loaded machine that can expire before the limit is met
    // (CI met "Shared memory manager connection has timed out" at step 19477 of 65530). That
    // ends torch's run, not the measurement: run it once more.
    if real["message"]
        .as_str()
        .is_some_and(|m| m.contains("Shared memory manager connection has timed out"))
    {
        real = run_cell(&real_cell);
    }
    assert_eq!(status(&real), "enomem", "{real}");
    let message = real["message"].as_str().unwrap();
    // Python's allocator or torch's mmap, whichever asks first, is refused (12).
    assert!(
        message.contains("MemoryError") || message.contains("Cannot allocate memory (12)"),
        "{message}"
    );
    let emulated = emulated_map_count_run(limit);
    assert_eq!(status(&emulated), "enomem", "{emulated}");
    // Each main holds its own mappings besides the batches: torch about 530, the emulation
    // about 50; both fail within those of the limit.
    for (who, r) in [("torch", &real), ("emulation", &emulated)] {
        let step = crash_step(r);
        assert!(
            step > limit - 2000 && step <= limit,
            "{who}: {step} of {limit}"
        );
    }
    assert_clean(&before);
}
