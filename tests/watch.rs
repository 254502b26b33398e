//! `shmbench watch -- CMD`: real commands (Python programs with real shared memory) under a real
//! sized tmpfs, a real memory cgroup or this machine's /dev/shm; how they ended classified from
//! wait statuses and their words, who held /dev/shm found in /proc, leaks and leftovers named.
//! Nothing is mocked, and nothing is left behind.

use crate::common;

use common::*;

const MIB: u64 = 1 << 20;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn number(row: &std::collections::HashMap<String, String>, key: &str) -> i64 {
    row[key]
        .parse()
        .unwrap_or_else(|_| panic!("{key} = {:?}", row[key]))
}

#[test]
fn a_job_that_fills_a_64m_shm_dies_of_sigbus_at_the_step_the_sizes_give() {
    let _guard = serial();
    let before = machine_state();
    let (out, row, report) = watch(
        &["--shm-size", "64m", "--step-regex", r"^step (\d+)$"],
        &["python3", "-c", FILL_SHM_PY, "128", WATCHED_MARK],
    );
    let text = stderr(&out);
    let row = row.expect("a results row");
    // Eight 8 MiB segments fill 64 MiB; the ninth write finds no page: SIGBUS in the command.
    assert_eq!(row["status"], "sigbus", "{text}");
    assert_eq!(number(&row, "crash_step"), 9, "{text}");
    // Caught at its delivery: a page fault in a segment of the full tmpfs.
    assert_eq!(row["cause"], "tmpfs-full", "{text}");
    assert!(row["cause_facts"].contains("BUS_ADRERR"), "{row:?}");
    assert!(
        row["cause_facts"].contains("/dev/shm (tmpfs) 64 MiB"),
        "{row:?}"
    );
    assert_eq!(
        out.status.code(),
        Some(128 + 7),
        "the command's own status: {text}"
    );
    assert_eq!(number(&row, "exit_code"), 135);
    assert_eq!(row["loader"], "command");
    assert_eq!(row["runtime"], "namespace");
    assert!(row["watched_command"].starts_with("python3 -c "), "{row:?}");
    let peak = number(&row, "peak_shm_bytes") as u64;
    assert!((56 * MIB..=64 * MIB).contains(&peak), "peak {peak}: {text}");
    // The output is the command's own, on its own stream.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("step 1\nstep 2\n"), "{stdout}");
    // Who held it: the Python main (the process that died), through fds to its segments.
    let report = report.expect("a watch report");
    let holders = report["holders_at_peak"].as_array().unwrap();
    let main = holders
        .iter()
        .find(|h| h["pid"].as_u64().map(|p| p.to_string()).as_ref() == Some(&row["pid"]))
        .unwrap_or_else(|| panic!("the command (pid {}) among {holders:?}", row["pid"]));
    assert!(main["segments"].as_array().unwrap().len() >= 6, "{main}");
    assert!(
        text.contains("give it:     more than the 64 MiB it filled"),
        "{text}"
    );
    assert_eq!(watched_left(), Vec::<String>::new());
    assert_clean(&before);
}

#[test]
fn a_segment_alive_only_through_an_fd_is_found_with_its_bytes_and_its_pid() {
    let _guard = serial();
    let before = machine_state();
    // torch's file_descriptor strategy: the file is unlinked at once and lives through the fd.
    let program = r#"
import os, sys, time
fd = os.open("/dev/shm/held-by-fd", os.O_CREAT | os.O_RDWR, 0o600)
os.unlink("/dev/shm/held-by-fd")
os.write(fd, b"\1" * (16 << 20))
print("holding", flush=True)
time.sleep(1.0)
"#;
    let (out, row, report) = watch(
        &["--shm-size", "64m"],
        &["python3", "-c", program, WATCHED_MARK],
    );
    let text = stderr(&out);
    let row = row.expect("a row");
    assert_eq!(row["status"], "pass", "{text}");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(number(&row, "peak_shm_bytes") as u64, 16 * MIB, "{text}");
    let report = report.expect("a watch report");
    let held: Vec<&serde_json::Value> = report["holders_at_peak"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|h| h["segments"].as_array().unwrap())
        .collect();
    let segment = held
        .iter()
        .find(|s| s["name"] == "/dev/shm/held-by-fd")
        .unwrap_or_else(|| panic!("the unlinked segment among {held:?}"));
    assert_eq!(segment["bytes"], 16 * MIB);
    assert_eq!(
        (segment["deleted"].as_bool(), segment["hold"].as_str()),
        (Some(true), Some("fd"))
    );
    assert!(
        text.contains("/dev/shm/held-by-fd 16 MiB (fd, unlinked)"),
        "{text}"
    );
    assert_eq!(report["leftovers"].as_array().unwrap().len(), 0);
    assert_clean(&before);
}

/// Leaks one named 4 MiB segment per "epoch" (kept open for a moment, then closed and never
/// unlinked), as a file_system job whose segments outlive their tensors.
const LEAK_PY: &str = r#"
import os, sys, time, mmap
run = os.urandom(6).hex()  # not the pid: in a pid namespace every run's job is pid 3 or so
for e in range(int(sys.argv[1])):
    name = f"/dev/shm/shmbench-watch-leak-{run}-{e}"
    fd = os.open(name, os.O_CREAT | os.O_RDWR, 0o600)
    os.ftruncate(fd, 4 << 20)
    m = mmap.mmap(fd, 4 << 20)
    m[:] = b"\1" * (4 << 20)
    time.sleep(0.2)
    m.close(); os.close(fd)
    print(f"epoch {e + 1}", flush=True)
    time.sleep(0.1)
"#;

fn leaked_files() -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("shmbench-watch-leak-"))
        .collect()
}

/// The watch report's leftovers that LEAK_PY made.
fn leak_leftovers(report: &serde_json::Value) -> Vec<&serde_json::Value> {
    report["leftovers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["name"].as_str().unwrap().contains("shmbench-watch-leak-"))
        .collect()
}

#[test]
fn a_leak_across_epochs_is_named_and_its_leftovers_listed_and_swept() {
    // Every lane: the trend is judged on this machine's /dev/shm, where another lane's job
    // (hundreds of MiB beside it, once in CI) hid the leak's slope.
    let _guard = exclusive_serial();
    let before = machine_state();
    // This machine's /dev/shm, where leftovers outlive the job: only what the job was seen
    // holding is swept.
    let (out, row, report) = watch(
        &["--runtime", "host", "--sweep", "--step-regex", "^epoch"],
        &["python3", "-c", LEAK_PY, "14", WATCHED_MARK],
    );
    let text = stderr(&out);
    let row = row.expect("a row");
    assert_eq!(row["status"], "pass", "{text}");
    assert_eq!(number(&row, "steps_done"), 14);
    assert!(text.contains("trend:       LEAK"), "{text}");
    let report = report.expect("a watch report");
    let ours = leak_leftovers(&report);
    assert_eq!(ours.len(), 14, "{text}");
    assert!(
        ours.iter()
            .all(|l| l["bytes"] == 4 * MIB && l["removed"] == true),
        "{ours:?}"
    );
    assert_eq!(leaked_files(), Vec::<String>::new(), "--sweep removed them");
    // In a private /dev/shm the same leftovers are listed and go with it.
    let (out, _, report) = watch(
        &["--shm-size", "128m"],
        &["python3", "-c", LEAK_PY, "3", WATCHED_MARK],
    );
    let report = report.expect("a watch report");
    assert_eq!(report["leftovers"].as_array().unwrap().len(), 3);
    assert!(
        stderr(&out).contains("gone with its private /dev/shm"),
        "{}",
        stderr(&out)
    );
    assert_eq!(leaked_files(), Vec::<String>::new());
    assert_clean(&before);
}

#[test]
fn a_neighbour_freeing_dev_shm_meanwhile_hides_none_of_a_leak() {
    // Every lane: its one neighbour is the one it makes (see the test above).
    let _guard = exclusive_serial();
    let before = machine_state();
    // Another job's 48 MiB in this machine's /dev/shm, gone while the watched job leaks its
    // first segments: the machine's use falls below where the job started, and the job's own
    // rises must still be seen (each segment held), or --sweep cannot prove them the job's.
    let neighbour = std::path::PathBuf::from(format!(
        "/dev/shm/shmbench-watch-neighbour-{}",
        std::process::id()
    ));
    std::fs::write(&neighbour, vec![1u8; 48 << 20]).unwrap();
    let gone = neighbour.clone();
    let freeing = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(400));
        std::fs::remove_file(gone).unwrap();
    });
    let (out, row, report) = watch(
        &["--runtime", "host", "--sweep", "--step-regex", "^epoch"],
        &["python3", "-c", LEAK_PY, "6", WATCHED_MARK],
    );
    freeing.join().unwrap();
    let text = stderr(&out);
    assert_eq!(row.expect("a row")["status"], "pass", "{text}");
    let report = report.expect("a watch report");
    let ours = leak_leftovers(&report);
    assert_eq!(ours.len(), 6, "{text}");
    assert!(
        ours.iter()
            .all(|l| l["seen_held"] == true && l["removed"] == true),
        "{ours:?}"
    );
    assert_eq!(leaked_files(), Vec::<String>::new(), "--sweep removed them");
    assert_clean(&before);
}

#[test]
fn a_memory_limit_below_the_tmpfs_pages_ends_in_the_oom_killer() {
    let _guard = serial();
    let before = machine_state();
    // 128 MiB of tmpfs pages fit the 256 MiB /dev/shm but not the 64 MiB cgroup they count in.
    let (out, row, report) = watch(
        &["--shm-size", "256m", "--memory", "64m"],
        &["python3", "-c", FILL_SHM_PY, "128", WATCHED_MARK],
    );
    let text = stderr(&out);
    let row = row.expect("a row");
    assert_eq!(row["status"], "oom", "{text}");
    assert_eq!(row["cause"], "memory-limit", "{text}");
    assert_eq!(out.status.code(), Some(128 + 9), "{text}");
    let report = report.expect("a watch report");
    assert_eq!(report["cgroup_limit"], 64 * MIB);
    assert!(text.contains("the cgroup peaked at"), "{text}");
    assert_eq!(watched_left(), Vec::<String>::new());
    assert_clean(&before);
}

#[test]
fn a_command_that_is_not_found_is_a_clear_error_and_runs_nothing() {
    let before = machine_state();
    let (out, row, _) = watch(&["--shm-size", "64m"], &["no-such-command-here", "x"]);
    assert_eq!(out.status.code(), Some(2));
    let text = stderr(&out);
    assert!(
        text.contains("command not found: 'no-such-command-here'"),
        "{text}"
    );
    assert!(row.is_none(), "no results for a command that never ran");
    let (out, _, _) = watch(&["--interval-ms", "0"], &["true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("interval-ms"), "{}", stderr(&out));
    let (out, _, _) = watch(&["--step-regex", "(unclosed"], &["true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--step-regex"), "{}", stderr(&out));
    assert_clean(&before);
}

/// The command's effective capabilities and no_new_privs, as its /proc/self/status says.
const PRIVILEGES_SH: &str = "grep -E '^(CapEff|NoNewPrivs):' /proc/self/status; exit 3";

#[test]
fn a_watched_command_runs_without_privileges_unless_it_keeps_them_and_a_failure_says_so() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: capabilities to keep exist only as root");
        return;
    }
    let _guard = serial();
    let before = machine_state();
    let status = |out: &std::process::Output| String::from_utf8_lossy(&out.stdout).into_owned();
    // By default: no capability, no_new_privs, and the failure's note names the flag.
    let (out, _, _) = watch(&["--shm-size", "64m"], &["sh", "-c", PRIVILEGES_SH]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(
        status(&out).contains("CapEff:\t0000000000000000"),
        "{}",
        status(&out)
    );
    assert!(status(&out).contains("NoNewPrivs:\t1"), "{}", status(&out));
    assert!(
        stderr(&out).contains("--keep-privileges"),
        "{}",
        stderr(&out)
    );
    // Kept: root's capabilities, privileges may be gained, and no note.
    for runtime in ["namespace", "host"] {
        let args = ["--runtime", runtime, "--keep-privileges"];
        let args = match runtime {
            "namespace" => [&args[..], &["--shm-size", "64m"]].concat(),
            _ => args.to_vec(),
        };
        let (out, _, _) = watch(&args, &["sh", "-c", PRIVILEGES_SH]);
        assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
        assert!(
            !status(&out).contains("CapEff:\t0000000000000000"),
            "{runtime}: {}",
            status(&out)
        );
        assert!(
            status(&out).contains("NoNewPrivs:\t0"),
            "{runtime}: {}",
            status(&out)
        );
        assert!(
            !stderr(&out).contains("note:"),
            "{runtime}: {}",
            stderr(&out)
        );
    }
    // A container has the engine's capabilities: the flag is refused there, before anything runs.
    let docker = [
        "--runtime",
        "docker",
        "--image",
        "any:image",
        "--keep-privileges",
    ];
    let (out, row, _) = watch(&docker, &["true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("--keep-privileges applies to"),
        "{}",
        stderr(&out)
    );
    assert!(row.is_none());
    // No VM for a watched command: said, with where a VM is for, before anything runs.
    let (out, row, _) = watch(&["--runtime", "vm"], &["true"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("shmbench run --runtime vm --kernel"));
    assert!(row.is_none());
    assert_clean(&before);
}
