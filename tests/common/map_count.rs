//! The node's vm.max_map_count as a limit the tests meet: the cell that fills it with batches
//! kept alive, and the emulation's run of it, made once for the tests that judge it.

use super::*;

/// This node's vm.max_map_count, for the tests that fill it with batches kept alive (a page
/// each); None, said on the test output, where it is too high to fill in a test's time.
pub fn max_map_count_within_reach() -> Option<u64> {
    let limit: u64 = std::fs::read_to_string("/proc/sys/vm/max_map_count")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if limit > 262_144 {
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!(
                "skipped: vm.max_map_count is {limit} here; the test needs about {limit} batches\n"
            )
            .as_bytes(),
        );
        return None;
    }
    Some(limit)
}

/// The cell that meets vm.max_map_count: file_system keeps no fd per batch, so only the
/// mappings of the batches the main keeps alive pile up, a page each (the limit's worth fits in
/// 1 GiB), until mmap refuses with ENOMEM. `loader` is "" for the emulation or the real torch's
/// `--loader torch --python ...`.
pub fn map_count_cell(loader: &str, limit: u64) -> String {
    format!(
        "{loader} --strategy file_system --batch 1 --shape 16 --workers 1 --retain-every 1 --shm-size 1g --timeout-s 900 --steps {}",
        limit + 1000
    )
}

/// The emulation's run of `map_count_cell`, made once and shared by the two tests that judge
/// it (`cells::` for its error, `torch_limits::` against real torch): its 65k steps are a
/// minute of the second lane. Call it holding `second_serial()`, as both do: the first caller's
/// leak check covers it.
pub fn emulated_map_count_run(limit: u64) -> Value {
    static RUN: std::sync::Mutex<Option<Value>> = std::sync::Mutex::new(None);
    let mut run = RUN.lock().unwrap_or_else(|e| e.into_inner());
    run.get_or_insert_with(|| run_cell(&map_count_cell("", limit)))
        .clone()
}
