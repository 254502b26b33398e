//! The command line: the matrix end to end, the CSV contract, and bad input that must be refused
//! before anything runs.

use crate::common;

use common::*;

const REQUIRED_COLUMNS: &[&str] = &[
    "schema",
    "scenario",
    "cell",
    "runtime",
    "shm_bytes",
    "shm_seen_bytes",
    "strategy",
    "torch",
    "workers",
    "prefetch",
    "batch",
    "steps",
    "status",
    "crash_step",
    "signal",
    "steps_done",
    "img_per_s",
    "peak_shm_bytes",
    "message",
    "kernel",
    "host",
    "harness_version",
];

#[test]
fn seed_matrix_without_docker_emulates_the_rows_and_says_so() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("matrix");
    let out = dir.join("m.csv");
    // The real seed scenario at full batch size, fewer steps to stay quick; no engine answers,
    // so the Docker rows run as namespace cells (tests/docker.rs runs them in containers).
    let o = shmbench_without_docker(&["matrix", "--steps", "20", "--out", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for needle in [
        "Docker Default",
        "Docker Tuned",
        "Docker Standard",
        "Docker IPC Host",
        "Restricted Container",
        "Status After 20 Steps",
    ] {
        assert!(stdout.contains(needle), "missing {needle} in\n{stdout}");
    }
    let header = std::fs::read_to_string(&out).unwrap();
    let columns: Vec<&str> = header.lines().next().unwrap().split(',').collect();
    for c in REQUIRED_COLUMNS {
        assert!(columns.contains(c), "column {c} missing");
    }
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 5);
    let by_cell = |name: &str| rows.iter().find(|r| r["cell"] == name).unwrap();
    // 64 MiB cannot hold one 73.5 MiB batch, whatever the strategy.
    for cell in ["docker-default", "restricted-file-system"] {
        let r = by_cell(cell);
        assert!(
            matches!(r["status"].as_str(), "sigbus" | "enospc"),
            "{cell}: {r:?}"
        );
        assert_eq!(r["crash_step"], "1");
        assert_eq!(r["claim_verdict"], "differs");
    }
    for cell in ["docker-tuned", "docker-standard", "docker-ipc-host"] {
        assert_eq!(by_cell(cell)["status"], "pass", "{cell}");
    }
    assert_eq!(by_cell("docker-ipc-host")["runtime"], "host");
    assert_eq!(by_cell("docker-tuned")["runtime"], "namespace");
    assert_eq!(
        by_cell("docker-tuned")["shm_seen_bytes"],
        (2u64 << 30).to_string()
    );
    assert!(stdout.contains("file_system segments are named shm_open objects in /dev/shm too"));
    assert!(stdout.contains("no Docker engine answered"), "{stdout}");
    // The matrix ends with its report.
    let report = stdout
        .lines()
        .find_map(|l| l.strip_prefix("report: "))
        .expect("a report path");
    assert!(report.ends_with("reports/m/report.md"), "{report}");
    // The engine's default was unknown: Docker's documented 64 MiB stands in for it.
    assert_eq!(
        by_cell("docker-default")["shm_seen_bytes"],
        (64u64 << 20).to_string()
    );
    assert_clean(&before);
}

#[test]
fn dry_run_shows_resolved_cells_with_overrides() {
    let o = shmbench(&[
        "matrix",
        "--dry-run",
        "--cells",
        "docker-tuned",
        "--workers",
        "3",
    ]);
    assert!(o.status.success());
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(plan.as_array().unwrap().len(), 1);
    assert_eq!(plan[0]["workers"], 3);
    assert_eq!(plan[0]["shm_size"], 2u64 << 30);
}

#[test]
fn scenarios_are_found_by_name_from_any_directory() {
    // The scratch directory has no scenarios/: the built-in one answers to its name.
    let o = shmbench(&["matrix", "kubernetes", "--dry-run"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plan: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let cells: Vec<&str> = plan
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cell"].as_str().unwrap())
        .collect();
    assert_eq!(cells.len(), 5, "{cells:?}");
    assert!(cells.contains(&"emptydir-2gi-limit-1gi"));
    refused(
        &["matrix", "nosuch", "--dry-run"],
        &["no scenario nosuch", "seed-matrix, fidelity, kubernetes"],
    );
}

fn refused(args: &[&str], expect: &[&str]) {
    let before = machine_state();
    let o = shmbench(args);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} should fail");
    for e in expect {
        assert!(stderr.contains(e), "{args:?}: expected '{e}' in: {stderr}");
    }
    // Another lane's run may be between making its owner record and locking it (a moment in
    // which it reads as a dead run's): its entries read as another's once it holds the lock.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut now = machine_state().shm_entries;
    while now != before.shm_entries && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        now = machine_state().shm_entries;
    }
    assert_eq!(now, before.shm_entries);
}

#[test]
fn bad_input_is_refused_with_a_clear_message() {
    let _guard = serial();
    refused(&["run", "--shm-size", "lots"], &["'lots' is not a size"]);
    refused(
        &["run", "--shm-size", "18446744073709551616"],
        &["too large"],
    );
    refused(&["run", "--shm-size", "-5m"], &["not a size"]);
    refused(&["run", "--workers", "0"], &["workers", "at least 1"]);
    refused(&["run", "--batch", "2000000"], &["batch", "memory"]);
    refused(
        &["run", "--strategy", "tmpdir"],
        &["file_descriptor", "file_system"],
    );
    refused(
        &["run", "--shm-size", "0"],
        &["shm-size", "smaller than one page"],
    );
    refused(
        &["run", "--runtime", "host", "--shm-size", "1g"],
        &["runtime host"],
    );
    refused(&["run", "--runtime", "namespace"], &["set shm-size"]);
    refused(
        &["matrix", "--cells", "nope"],
        &["no cell named 'nope'", "docker-default"],
    );
    refused(
        &["matrix", "/nonexistent.toml"],
        &["no scenario /nonexistent.toml"],
    );
}

#[test]
fn malformed_scenarios_name_file_cell_and_key() {
    let dir = temp_dir("scen");
    let cases = [
        (
            "name = \"s\"\n[[cells]]\nname = \"a\"\nshm-size = \"64q\"\n",
            vec!["bad.toml", "cell 'a'", "shm-size"],
        ),
        (
            "name = \"s\"\n[[cells]]\nname = \"a\"\nstrategy = \"tmpdir\"\n",
            vec!["cell 'a'", "strategy"],
        ),
        (
            "name = \"s\"\n[[cells]]\nname = \"a\"\nworkres = 2\n",
            vec!["unknown key 'workres'"],
        ),
        (
            "name = \"s\"\n[[cells]]\nname = \"a\"\nprefetch = 0\n",
            vec!["cell 'a'", "prefetch"],
        ),
        (
            "name = \"s\"\n[[cells]\n",
            vec!["bad.toml", "not valid TOML"],
        ),
        ("name = \"s\"\n", vec!["no cells"]),
    ];
    for (text, expect) in cases {
        let path = dir.join("bad.toml");
        std::fs::write(&path, text).unwrap();
        refused(
            &["matrix", path.to_str().unwrap()],
            &expect.iter().map(|s| &**s).collect::<Vec<_>>(),
        );
    }
}

#[test]
fn no_permission_for_a_namespace_is_refused_up_front() {
    let _guard = serial();
    let dir = temp_dir("noperm");
    let out = dir.join("r.csv");
    // Inside a fresh user namespace with no uid mapping we are nobody: no namespace of our own
    // can be made (util-linux `unshare`).
    let o = std::process::Command::new("unshare")
        .args([
            "--user",
            BIN,
            "run",
            "--shm-size",
            "64m",
            "--batch",
            "8",
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .expect("unshare (util-linux) is needed for this test");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("could not create a private mount namespace")
            && stderr.contains("--runtime host"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing may be written when nothing ran");
}

/// A run of several cells on a terminal keeps a bar of the cells done with an ETA (under
/// `script`, a real pseudo-terminal); in a pipe it prints plain lines only, no escape codes.
#[test]
fn a_run_on_a_terminal_shows_its_progress_and_a_pipe_gets_plain_lines() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("progress");
    let out = dir.as_ref().join("r.csv");
    let args = format!(
        "{BIN} run --runtime namespace --shm-size 64m --batch 8 --workers 1 --steps 5 --repeat 3 --out {}",
        out.display()
    );
    let tty = std::process::Command::new("script")
        .args(["-qec", &args, "/dev/null"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&tty.stdout);
    assert!(tty.status.success(), "{text}");
    assert!(text.contains("/3 cells") && text.contains("ETA"), "{text}");
    assert!(text.contains("[3/3] adhoc"), "{text}");
    let piped = shmbench(&[
        "run",
        "--runtime",
        "namespace",
        "--shm-size",
        "64m",
        "--batch",
        "8",
        "--workers",
        "1",
        "--steps",
        "5",
        "--repeat",
        "3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&piped.stderr);
    assert!(piped.status.success(), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains("ETA"),
        "{stderr}"
    );
    assert!(stderr.contains("[3/3] adhoc"), "{stderr}");
    assert_clean(&before);
}

#[test]
fn format_names_one_format_one_way_and_old_spellings_still_parse() {
    // `md` was the doctor's and report's word for Markdown; `markdown` is everyone's now.
    let doctor = |format: &str| shmbench(&["doctor", "--shm-size", "1g", "--format", format]);
    let (old, new) = (doctor("md"), doctor("markdown"));
    assert!(new.stdout.starts_with(b"#"), "{new:?}");
    assert_eq!(old.stdout, new.stdout);
    // A format the command lacks is clap's to refuse, naming the ones it has.
    let o = doctor("sarif");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("[possible values: text, json, markdown]"),
        "{stderr}"
    );
    let dir = temp_dir("report-formats");
    let seed = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/seed.csv");
    let out = dir.join("r");
    let o = shmbench(&[
        "report",
        seed,
        "--out",
        out.to_str().unwrap(),
        "--format",
        "md",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.join("report.md").exists() && !out.join("report.html").exists());
    let o = shmbench(&["report", seed, "--format", "markdown,pdf"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("markdown, html, json"), "{stderr}");
}
