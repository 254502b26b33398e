//! Full filesystems: the `disk` strategy's $TMPDIR and the results directory. Each must end in
//! a clear error or status, never a torn results file; and a torn file is rejected by line.

use crate::common;

use common::*;

/// Runs `script` in a private mount namespace with a tmpfs of `size` on `dir` (util-linux
/// `unshare`); returns (exit code, stdout, stderr).
fn in_small_fs(dir: &std::path::Path, size: &str, script: &str) -> (Option<i32>, String, String) {
    let full = format!(
        "mount -t tmpfs -o size={size} tmpfs {} && {script}",
        dir.display()
    );
    let o = std::process::Command::new("unshare")
        .args(["--mount", "--propagation", "private", "sh", "-c", &full])
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

#[test]
fn a_full_tmpdir_ends_disk_cells_with_sigbus_or_enospc() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("fulltmp");
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = dir.join("r.csv");
    for (torch, status) in [("legacy", "sigbus"), ("modern", "enospc")] {
        let script = format!(
            "TMPDIR={} {BIN} run --runtime host --strategy disk --torch {torch} --batch 8 --workers 1 --steps 5 --json --out {}",
            tmp.display(),
            out.display()
        );
        let (code, stdout, stderr) = in_small_fs(&tmp, "2m", &script);
        assert_eq!(code, Some(0), "{stderr}");
        let r: serde_json::Value = serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
        assert_eq!(r["status"], status, "{torch}: {r}");
        assert_eq!(crash_step(&r), 1);
    }
    assert_clean(&before);
}

#[test]
fn a_full_results_directory_is_a_clear_error_and_no_torn_csv() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("fullres");
    let results = dir.join("results");
    std::fs::create_dir_all(&results).unwrap();
    let out = results.join("r.csv");
    // 64 KiB, most of it taken: the first rows fit, a later rewrite does not.
    let script = format!(
        "head -c 40000 /dev/zero > {}/filler && {BIN} run --shm-size 64m --batch 1 --workers 1 --steps 30 --repeat 20 --out {} ; echo \"exit=$?\"; cat {} > {}/copy.csv 2>/dev/null; cp {}/copy.csv {}/seen.csv 2>/dev/null; true",
        results.display(),
        out.display(),
        out.display(),
        dir.display(),
        dir.display(),
        dir.display()
    );
    let (_, stdout, stderr) = in_small_fs(&results, "64k", &script);
    assert!(stdout.contains("exit=2"), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("cannot write") && stderr.contains("No space left on device"),
        "{stderr}"
    );
    // What was on disk when it stopped parses completely.
    if let Ok(text) = std::fs::read_to_string(dir.join("copy.csv")) {
        if !text.is_empty() {
            let path = dir.join("check.csv");
            std::fs::write(&path, &text).unwrap();
            let rows = shmbench::results::csv::read(&path).unwrap();
            assert!(!rows.is_empty());
        }
    }
    assert_clean(&before);
}

#[test]
fn a_torn_results_file_is_rejected_with_its_line() {
    let dir = temp_dir("torn");
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/seed.csv"),
    )
    .unwrap();
    // Cut the file in the middle of its fourth line.
    let cut = text.match_indices('\n').nth(2).unwrap().0 + 40;
    let torn = dir.join("torn.csv");
    std::fs::write(&torn, &text[..cut]).unwrap();
    let o = shmbench(&["compare", torn.to_str().unwrap(), torn.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("line 4") && stderr.contains("not a valid shmbench results row"),
        "{stderr}"
    );
}
