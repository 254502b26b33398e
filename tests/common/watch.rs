//! `shmbench watch` as tests run it: a Python program that fills /dev/shm, the mark that finds
//! its processes, and a watch into a fresh results file.

use super::*;

/// A Python program that fills /dev/shm with 8 MiB `multiprocessing.shared_memory` segments,
/// `argv[1]` MiB in all, printing `step N` after each: in a tmpfs of 64 MiB the ninth write
/// finds no page left (SIGBUS). Its last argument marks its processes for [`watched_left`].
pub const FILL_SHM_PY: &str = r#"
import sys, time
from multiprocessing import shared_memory
segs = []
for i in range(int(sys.argv[1]) // 8):
    s = shared_memory.SharedMemory(create=True, size=8 << 20)
    s.buf[:] = b"\1" * (8 << 20)
    segs.append(s)
    print(f"step {i + 1}", flush=True)
    time.sleep(0.02)
for s in segs:
    s.close()
    s.unlink()
print("done")
"#;

/// The mark a watch test puts on its command's arguments.
pub const WATCHED_MARK: &str = "shmbench-watch-test";

/// Processes of watched test commands still alive (their command line carries the mark).
pub fn watched_left() -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        // Not this test process, which carries the mark in no argument of its own, and not
        // another lane's watched job.
        if text.contains(WATCHED_MARK) && !text.contains("--") && is_this_lanes(pid) {
            found.push(format!("{pid}: {text}"));
        }
    }
    found
}

/// `shmbench watch ARGS -- CMD` into a fresh results file: its output, its one row, and its
/// watch report (JSON), when it wrote them.
pub fn watch(
    args: &[&str],
    command: &[&str],
) -> (
    Output,
    Option<std::collections::HashMap<String, String>>,
    Option<Value>,
) {
    let dir = temp_dir("watch").keep();
    let out = dir.join("w.csv");
    let output = command_in(&dir)
        .arg("watch")
        .args(["--out", out.to_str().unwrap()])
        .args(args)
        .arg("--")
        .args(command)
        .output()
        .expect("run shmbench watch");
    let row = out.exists().then(|| read_csv(&out).remove(0));
    let report = row.as_ref().and_then(|r| {
        let file = r.get("watch_file").filter(|f| !f.is_empty())?;
        let text = std::fs::read_to_string(dir.join(file)).ok()?;
        serde_json::from_str(&text).ok()
    });
    (output, row, report)
}
