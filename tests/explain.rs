//! `explain`: a watched job's Bus error named by its cause, from the fault caught at its
//! delivery (ptrace), with real processes and real faults: a file truncated by another process
//! under a Python mmap, a `kill -BUS`, a SIGBUS in a grandchild of a job that goes on, and a job
//! that only prints torch's sentence. The full tmpfs and the memory limit are `watch.rs`'s.

use crate::common;

use common::*;
use std::collections::HashMap;

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Maps an 8 MiB file, has another process (`truncate`) cut it to 4 KiB, then reads 3 MiB in.
const TRUNCATED_PY: &str = r#"
import mmap, subprocess, sys
path = sys.argv[1]
with open(path, "wb") as f:
    f.truncate(8 << 20)
f = open(path, "r+b")
m = mmap.mmap(f.fileno(), 8 << 20)
subprocess.run(["truncate", "-s", "4K", path], check=True)
print("read", m[3 << 20])
"#;

#[test]
fn a_file_truncated_under_its_mapping_is_explained_as_the_file_not_dev_shm() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("explain-truncated");
    let data = dir.join("train.lmdb");
    let data = data.to_str().unwrap();
    let (out, row, report) = watch(
        &["--shm-size", "64m"],
        &["python3", "-c", TRUNCATED_PY, data, WATCHED_MARK],
    );
    let text = stderr(&out);
    let row = row.expect("a results row");
    assert_eq!(row["status"], "sigbus", "{text}");
    assert_eq!(row["cause"], "mapped-file", "{text}");
    assert!(row["cause_facts"].contains(data), "{row:?}");
    assert!(row["cause_facts"].contains("beyond its end"), "{row:?}");
    // The fault as the kernel gave it: BUS_ADRERR, 3 MiB into a file now 4 KiB long.
    let report = report.expect("a watch report");
    let fault = &report["traced"]["faults"][0];
    assert_eq!(fault["code"], 2, "{fault}");
    assert_eq!(fault["mapping"]["offset"], 3 << 20, "{fault}");
    assert_eq!(fault["mapping"]["file_bytes"], 4096, "{fault}");
    // The fix is the file's, and the size advice does not blame /dev/shm.
    assert!(
        text.contains("/dev/shm's size has nothing to do with it"),
        "{text}"
    );
    assert!(!text.contains("more than the 64 MiB it filled"), "{text}");
    assert_eq!(watched_left(), Vec::<String>::new());
    assert_clean(&before);
}

#[test]
fn a_kill_is_a_sent_signal_and_a_grandchilds_fault_is_seen_though_the_job_goes_on() {
    let _guard = serial();
    let before = machine_state();
    let (out, row, _) = watch(
        &["--shm-size", "64m"],
        &["sh", "-c", "sleep 30 & kill -BUS $!; wait $!", WATCHED_MARK],
    );
    let text = stderr(&out);
    let row = row.expect("a results row");
    assert_eq!(row["status"], "sigbus", "{text}");
    assert_eq!(row["cause"], "sent", "{text}");
    assert!(row["cause_facts"].contains("SI_USER"), "{row:?}");
    assert!(row["cause_facts"].contains("sent by pid"), "{row:?}");

    // A grandchild fills a 8 MiB /dev/shm and dies; the shell above it goes on and exits 0.
    let script = format!(
        "python3 -c '{}' 16; echo went on",
        FILL_ONE_PY.replace('\'', "\"")
    );
    let (out, row, _) = watch(&["--shm-size", "8m"], &["sh", "-c", &script, WATCHED_MARK]);
    let text = stderr(&out);
    let row = row.expect("a results row");
    assert_eq!(row["status"], "pass", "{text}");
    assert!(row["message"].contains("killed by signal 7"), "{row:?}");
    assert_eq!(row["cause"], "tmpfs-full", "{text}");
    assert!(
        row["cause_facts"].contains("0 B free at the fault"),
        "{row:?}"
    );
    assert_eq!(watched_left(), Vec::<String>::new());
    assert_clean(&before);
}

/// Writes argv[1] MiB into one unlinked /dev/shm segment through a mapping.
const FILL_ONE_PY: &str = "import mmap,os,sys; n=int(sys.argv[1])<<20; fd=os.open('/dev/shm/explain_test',os.O_CREAT|os.O_RDWR,0o600); os.ftruncate(fd,n); m=mmap.mmap(fd,n); os.unlink('/dev/shm/explain_test'); [m.__setitem__(i,1) for i in range(0,n,4096)]";

#[test]
fn words_alone_are_evidence_and_the_ending_comes_from_the_processes() {
    let _guard = serial();
    let before = machine_state();
    let says = "echo 'RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error.' >&2; exit 1";
    let (out, row, _) = watch(&["--shm-size", "64m"], &["sh", "-c", says, WATCHED_MARK]);
    let text = stderr(&out);
    let row = row.expect("a results row");
    assert_eq!(row["status"], "error", "{text}");
    assert!(
        row["message"].contains("no process of the job died of SIGBUS"),
        "{row:?}"
    );
    assert_eq!(row["cause"], "unknown", "{text}");
    // Untraced, the words are all there is, and the row says so.
    let (out, row, _) = watch(
        &["--shm-size", "64m", "--no-trace"],
        &["sh", "-c", says, WATCHED_MARK],
    );
    let text = stderr(&out);
    let row = row.expect("a results row");
    assert_eq!(row["status"], "sigbus", "{text}");
    assert!(row["cause_facts"].contains("--no-trace"), "{row:?}");
    assert!(
        text.contains("traced:      no: tracing was turned off"),
        "{text}"
    );
    assert_eq!(watched_left(), Vec::<String>::new());
    assert_clean(&before);
}

/// A batch of 8 ImageNet-sized f32 images: 4.6 MiB.
const SMALL: &str = "--batch 8 --workers 1 --steps 5";

#[test]
fn loader_cells_name_the_cause_of_their_end() {
    let _guard = serial();
    let before = machine_state();
    // The legacy profile's worker faults on a page of a full tmpfs: caught at its delivery.
    let r = run_cell(&format!("{SMALL} --shm-size 4m --torch legacy"));
    assert_eq!(status(&r), "sigbus", "{r}");
    let why = &r["explanation"];
    assert_eq!(
        (&why["cause"], &why["caught"]),
        (&"tmpfs-full".into(), &true.into()),
        "{r}"
    );
    assert!(
        why["facts"][0].as_str().unwrap().contains("BUS_ADRERR"),
        "{r}"
    );
    // The modern profile's ENOSPC: the same cause, from the cell's own words.
    let r = run_cell(&format!("{SMALL} --shm-size 4m --torch modern"));
    assert_eq!(status(&r), "enospc", "{r}");
    assert_eq!(r["explanation"]["cause"], "tmpfs-full", "{r}");
    // Every batch kept alive under file_descriptor: one fd each, until EMFILE.
    let r =
        run_cell("--shm-size 256m --batch 1 --workers 2 --steps 200 --retain-every 1 --nofile 64");
    assert_eq!(status(&r), "emfile", "{r}");
    assert_eq!(r["explanation"]["cause"], "fd-limit", "{r}");
    // Untraced, the cell's own account is all there is, and the explanation says so.
    let r = run_cell(&format!(
        "{SMALL} --shm-size 4m --torch legacy --trace false"
    ));
    assert_eq!(status(&r), "sigbus", "{r}");
    let why = &r["explanation"];
    let fact = why["facts"][0].as_str().unwrap();
    assert_eq!(
        (&why["cause"], &why["caught"]),
        (&"unknown".into(), &false.into()),
        "{r}"
    );
    assert!(fact.contains("trace knob is false"), "{r}");
    assert_clean(&before);
}

#[test]
fn the_causes_scenario_names_every_cause_in_three_of_three_runs() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("causes");
    let out = dir.join("causes.csv");
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/causes.toml");
    let out_arg = out.to_str().unwrap();
    // Run in a scratch directory: the report goes to its reports/.
    let o = shmbench(&["matrix", scenario, "--repeat", "3", "--out", out_arg]);
    let text = String::from_utf8_lossy(&o.stderr);
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 9 * 3, "{text}");
    for row in &rows {
        // A memory error is made only in a VM guest (tests/vm.rs): here the cell is refused.
        if row["cell"] == "hardware" {
            assert_eq!(row["status"], "error", "{row:?}");
            assert!(row["message"].contains("only in a VM"), "{row:?}");
            assert_eq!(row["claim_verdict"], "inconclusive", "{row:?}");
            continue;
        }
        // Each cell is named for the cause it makes: the cause named, the claim agreed.
        let (cell, cause) = (&row["cell"], &row["cause"]);
        let expected = cell.strip_suffix("-enospc").unwrap_or(cell);
        assert_eq!(cause, expected, "{row:?}");
        assert_eq!(row["claim_verdict"], "agrees", "{row:?}");
    }
    assert_clean(&before);
}

/// `shmbench watch` of tests/python/train_mapped.py (a real torch DataLoader over a mapped
/// file) with `flags` and the script's `args`; the row.
fn watch_mapped(python: &str, flags: &[&str], args: &[&str]) -> HashMap<String, String> {
    let dir = temp_dir("explain-torch");
    let data = dir.join("train.bin");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/train_mapped.py");
    let mut command = vec![python, script, data.to_str().unwrap()];
    command.extend(args);
    command.push(WATCHED_MARK);
    let (out, row, _) = watch(flags, &command);
    let text = stderr(&out);
    row.unwrap_or_else(|| panic!("no row: {text}"))
}

#[test]
fn a_real_dataloaders_bus_error_is_explained_by_its_own_cause() {
    let Some(python) = torch_or_skip() else {
        return;
    };
    let _guard = serial();
    let before = machine_state();
    // The main truncates the workers' mapped dataset after step 3: torch's worker handler
    // guesses "insufficient shared memory"; the fault is beyond the file's end.
    let row = watch_mapped(&python, &["--shm-size", "1g"], &["8", "2", "truncate"]);
    assert_eq!(row["status"], "sigbus", "{row:?}");
    assert_eq!(row["cause"], "mapped-file", "{row:?}");
    assert!(row["cause_facts"].contains("beyond its end"), "{row:?}");
    // Batches of 73.5 MiB in 64 MiB: the tmpfs (torch >= 2.10's ENOSPC, or a SIGBUS before).
    let row = watch_mapped(&python, &["--shm-size", "64m"], &["128", "2"]);
    assert_eq!(row["cause"], "tmpfs-full", "{row:?}");
    // 4 workers x 2 batches of 73.5 MiB charged to a 768 MiB cgroup beside torch's own memory.
    let limit = ["--shm-size", "2g", "--memory", "768m"];
    let row = watch_mapped(&python, &limit, &["128", "4"]);
    assert_eq!(
        (&row["status"][..], &row["cause"][..]),
        ("oom", "memory-limit"),
        "{row:?}"
    );
    assert!(
        row["cause_facts"].contains("/dev/shm held up to"),
        "{row:?}"
    );
    assert_eq!(watched_left(), Vec::<String>::new());
    assert_clean(&before);
}

#[test]
fn history_names_where_a_cells_cause_changes_along_a_field() {
    let _guard = serial();
    let before = machine_state();
    let dir = temp_dir("cause-history");
    // A 128 MiB memory limit: a 16 MiB /dev/shm fills first, a 2 GiB one does not.
    let base = "--batch 32 --workers 4 --steps 30 --compute-ms 20 --memory 128m";
    let mut files = Vec::new();
    for size in ["16m", "2g"] {
        let out = dir.join(format!("{size}.csv"));
        let out_arg = out.to_str().unwrap().to_string();
        let mut args = vec!["run", "--shm-size", size, "--out", &out_arg];
        args.extend(base.split_whitespace());
        let o = shmbench(&args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        files.push(out.to_str().unwrap().to_string());
    }
    let o = shmbench(&["history", &files[0], &files[1], "--by", "shm"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("(tmpfs-full)") && text.contains("(memory-limit)"),
        "{text}"
    );
    assert!(
        text.contains("cause changed from tmpfs-full to memory-limit at shm"),
        "{text}"
    );
    assert_clean(&before);
}

#[test]
fn a_training_script_that_follows_itself_prints_its_workers_cause() {
    let Some(python) = wheel_and_torch_or_skip() else {
        return;
    };
    let _guard = serial();
    let before = machine_state();
    let (_venv_dir, venv) = venv_with_wheel(Some(&python));
    let dir = temp_dir("explain-follow");
    let data = dir.join("train.bin");
    // A plain script, then a Lightning fit with ShmPreflight(explain=True).
    for script in ["train_explained.py", "lightning_explained.py"] {
        let script = format!("{}/tests/python/{script}", env!("CARGO_MANIFEST_DIR"));
        let mut python = std::process::Command::new(venv.join("bin/python"));
        let o = python
            .arg(&script)
            .arg(&data)
            .arg(WATCHED_MARK)
            .output()
            .unwrap();
        let text = stderr(&o);
        // The worker's own words, then shmbench's cause. (How torch's main ends is timing's:
        // "killed by signal: Bus error", or on a busy machine a ConnectionResetError while it
        // fetched the dead worker's fd.)
        assert!(
            text.contains("bus error encountered in worker"),
            "{script}: {text}"
        );
        let said = text.split("shmbench: cause: ").nth(1).unwrap_or_default();
        assert!(said.starts_with("mapped-file"), "{script}: {text}");
        assert!(said.contains("beyond its end"), "{script}: {text}");
    }
    // The helper ended with the script, and its file is gone.
    assert!(our_processes(|args| args.iter().any(|a| a == "explain")).is_empty());
    assert_clean(&before);
}

#[test]
fn a_command_whose_exec_fails_under_the_tracer_is_a_clear_error() {
    // A CRLF shebang names an interpreter "/bin/sh\r" that is not there: the exec fails after
    // the fork, and the spawn, not the tracer, reaps the child (it panicked when both did).
    let dir = temp_dir("explain-exec");
    let script = dir.join("crlf.sh");
    std::fs::write(&script, "#!/bin/sh\r\necho hi\r\n").unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&script, mode).unwrap();
    for _ in 0..3 {
        let (out, _, _) = watch(&["--runtime", "host"], &[script.to_str().unwrap()]);
        let text = stderr(&out);
        assert!(text.contains("cannot start"), "{text}");
        assert!(!text.contains("panicked"), "{text}");
    }
}

#[test]
fn explain_pid_says_a_hostile_file_name_as_data() {
    let _guard = serial();
    // A job whose mapped file's name holds an escape sequence and a newline, truncated under it
    // once the follower is there (it waits for a line on stdin).
    let dir = temp_dir("explain-pid");
    let data = dir.join("x\u{1b}[31mred\nline.bin");
    let job = "import mmap,os,sys; p=sys.argv[1]; f=open(p,'wb+'); f.truncate(1<<20); \
               m=mmap.mmap(f.fileno(), 1<<20); sys.stdin.readline(); os.truncate(p, 0); m[8192]";
    let mut child = std::process::Command::new("python3")
        .args(["-c", job, data.to_str().unwrap(), WATCHED_MARK])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut explain = std::process::Command::new(BIN)
        .args(["explain", "--pid", &child.id().to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    let mut stdout = std::io::BufReader::new(explain.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut stdout, &mut first).unwrap();
    assert!(first.starts_with("following"), "{first}");
    std::io::Write::write_all(child.stdin.as_mut().unwrap(), b"go\n").unwrap();
    let _ = child.wait();
    let said = stderr(&explain.wait_with_output().unwrap());
    assert!(said.contains("mapped-file"), "{said}");
    // The escape shown as its code, the newline as /proc/PID/maps writes it (`\\012`).
    assert!(said.contains(r"x\u{1b}[31mred\\012line.bin"), "{said}");
    assert!(
        !said.contains('\u{1b}'),
        "a raw escape reached the terminal: {said:?}"
    );
}
