//! Helpers for integration tests that run real cells through the real binary.

#![allow(dead_code)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_shmbench");

/// Cells are heavy and the leak checks look at machine-wide state: one test at a time.
static SERIAL: Mutex<()> = Mutex::new(());

pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A machine requirement of some tests (`name`: `docker` for SHMBENCH_SKIP_DOCKER): true when
/// `present`; false when the user skips it by name, said on the test output; otherwise the test
/// fails, naming the command that sets everything up. Nothing is skipped silently.
pub fn require(name: &str, present: impl FnOnce() -> bool, what: &str) -> bool {
    let variable = format!("SHMBENCH_SKIP_{}", name.to_uppercase());
    if std::env::var_os(&variable).is_some() {
        // Written to the process's stderr directly: libtest captures only print macros, and a
        // skip must show in the test output even when the test passes.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            format!("skipped: a test that needs {what} ({variable} is set)\n").as_bytes(),
        );
        return false;
    }
    assert!(
        present(),
        "{what} is missing: run `cargo xtask test` (the README's test command), which sets up everything the tests need, or set {variable}=1 to skip these tests"
    );
    true
}

/// Docker tests need a running engine (SHMBENCH_SKIP_DOCKER=1 skips them).
pub fn docker_or_skip() -> bool {
    require(
        "docker",
        || {
            Command::new("docker")
                .arg("info")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        },
        "a running Docker engine",
    )
}

/// A scratch directory for one test, removed (with what the test wrote) when it goes out of
/// scope; `keep` leaves it for a process that outlives the helper that made it.
pub struct Scratch(tempfile::TempDir);

impl Scratch {
    pub fn keep(self) -> PathBuf {
        self.0.keep()
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.0.path()
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        self.0.path()
    }
}

/// A fresh scratch directory named after the test's purpose.
pub fn temp_dir(name: &str) -> Scratch {
    Scratch(
        tempfile::Builder::new()
            .prefix(&format!("shmbench-test-{name}-"))
            .tempdir()
            .unwrap(),
    )
}

/// The binary, run from a scratch directory so default `results/` and `reports/` paths land
/// there and not in the repository (and the built-in seed scenario is what `matrix` finds).
pub fn command() -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(temp_dir("cwd").keep());
    cmd
}

pub fn shmbench(args: &[&str]) -> Output {
    command().args(args).output().expect("run shmbench")
}

/// A DOCKER_HOST where no engine listens: `runtime = auto` must fall back to emulation.
pub const NO_ENGINE: &str = "unix:///nonexistent/docker.sock";

pub fn shmbench_without_docker(args: &[&str]) -> Output {
    command()
        .args(args)
        .env("DOCKER_HOST", NO_ENGINE)
        .output()
        .expect("run shmbench")
}

/// `shmbench run ARGS` (flags written as one string) into a fresh results file: its output and
/// the rows it wrote.
pub fn run_rows(args: &str) -> (Output, Vec<std::collections::HashMap<String, String>>) {
    let dir = temp_dir("rows");
    let out = dir.join("r.csv");
    let mut full = vec!["run", "--out", out.to_str().unwrap()];
    full.extend(args.split_whitespace());
    let output = shmbench(&full);
    let rows = if out.exists() {
        read_csv(&out)
    } else {
        Vec::new()
    };
    (output, rows)
}

/// Runs one ad-hoc cell with `shmbench run` flags written as one string, and returns its JSON
/// record.
pub fn run_cell(args: &str) -> Value {
    run_cell_via("", args)
}

/// Runs one ad-hoc cell under a wrapper command (e.g. `prlimit --nofile=64:64`).
pub fn run_cell_via(wrapper: &str, args: &str) -> Value {
    let dir = temp_dir("cell");
    let out = dir.join("r.csv");
    let mut full = vec!["run", "--json", "--out", out.to_str().unwrap()];
    full.extend(args.split_whitespace());
    let wrapper: Vec<&str> = wrapper.split_whitespace().collect();
    let output = match wrapper.split_first() {
        None => shmbench(&full),
        Some((program, rest)) => Command::new(program)
            .args(rest)
            .arg(BIN)
            .args(&full)
            .output()
            .expect("run the wrapper"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "shmbench {full:?} failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    let line = stdout.lines().next().expect("a JSON record line");
    let _ = std::fs::remove_dir_all(&dir);
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not a record: {e}: {line}"))
}

pub fn status(record: &Value) -> &str {
    record["status"].as_str().unwrap()
}

pub fn crash_step(record: &Value) -> u64 {
    record["failure"]["crash_step"]
        .as_u64()
        .expect("a failure with a crash step")
}

pub fn metric(record: &Value, key: &str) -> f64 {
    record["metrics"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("metric {key} in {record}"))
}

/// What the machine looked like: shmbench segments in /dev/shm, mounts, shmbench processes.
#[derive(Debug, PartialEq)]
pub struct MachineState {
    pub shm_entries: Vec<String>,
    pub mounts: String,
    pub processes: Vec<String>,
    pub containers: Vec<String>,
}

/// shmbench's containers, by the label every one of them carries (empty without a docker CLI).
fn shmbench_containers() -> Vec<String> {
    Command::new("docker")
        .args([
            "ps",
            "-a",
            "--filter",
            "label=org.shmbench.run-token",
            "--format",
            "{{.Names}} {{.Status}}",
        ])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

fn shmbench_processes() -> Vec<String> {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) || name == me {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let is_ours = args
            .first()
            .is_some_and(|a| a == BIN || a == "/proc/self/exe");
        if is_ours && args.get(1).is_some_and(|a| a == "cell" || a == "worker") {
            found.push(format!("{name}: {}", args[..2].join(" ")));
        }
        // A torch cell's Python and its DataLoader workers (they share the cell's bootstrap),
        // and the segment manager torch starts for file_system.
        if args.iter().any(|a| a.contains("shmbench-torch-cell")) || args[0] == "torch_shm_manager"
        {
            found.push(format!("{name}: {}", args[0]));
        }
    }
    found
}

pub fn machine_state() -> MachineState {
    let mut shm_entries: Vec<String> = std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("shmbench_") || n.starts_with("torch_"))
        .collect();
    shm_entries.sort();
    MachineState {
        shm_entries,
        mounts: std::fs::read_to_string("/proc/self/mounts").unwrap(),
        processes: shmbench_processes(),
        containers: shmbench_containers(),
    }
}

/// Asserts the machine is as clean as `before`: no shmbench process, segment, mount or container
/// more. Teardown is asynchronous (exiting workers, the engine unmounting and removing a container
/// after its cell ended), so it waits for the state to settle, up to a bound that covers a loaded
/// 2-core machine, and returns as soon as it is clean.
pub fn assert_clean(before: &MachineState) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = machine_state();
        let clean = now.processes.is_empty()
            && now.shm_entries.is_empty()
            && now.mounts == before.mounts
            && now.containers == before.containers;
        if clean || Instant::now() > deadline {
            assert_eq!(
                now.processes,
                Vec::<String>::new(),
                "shmbench processes left behind"
            );
            assert_eq!(
                now.shm_entries,
                Vec::<String>::new(),
                "segments left in /dev/shm"
            );
            assert_eq!(now.mounts, before.mounts, "mounts changed");
            assert_eq!(now.containers, before.containers, "containers left behind");
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn read_csv(path: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            headers
                .iter()
                .map(String::from)
                .zip(r.iter().map(String::from))
                .collect()
        })
        .collect()
}

/// A legacy-profile loader whose tmpfs filled: SIGBUS in the copy, or, when several workers fill
/// the tmpfs at once, ENOSPC from another worker's 1-byte write finding it already full (torch
/// <= 2.9's "unable to write to file"; real torch has the same race). Never the modern message.
pub fn assert_legacy_out_of_shm(r: &Value) {
    let message = r["message"].as_str().unwrap_or_default();
    match status(r) {
        "sigbus" => assert!(message.contains("Bus error"), "{r}"),
        "enospc" => assert!(message.contains("unable to write to file"), "{r}"),
        other => panic!("expected sigbus (or the legacy write's enospc), got {other}: {r}"),
    }
}

/// The memory cgroups shmbench made, in v1's memory hierarchy or v2's root.
pub fn shmbench_cgroups() -> Vec<String> {
    ["/sys/fs/cgroup/memory", "/sys/fs/cgroup"]
        .iter()
        .filter_map(|d| std::fs::read_dir(d).ok())
        .flat_map(|d| d.flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("shmbench-"))
        .collect()
}

/// Whether `status` is how a legacy loader ends in a tmpfs smaller than its batches in flight:
/// `sigbus` on the copy's page fault, or `enospc` when another worker's 1-byte write finds the
/// tmpfs already full (the race the README documents). A test of such a cell accepts both.
pub fn out_of_shm_kind(status: &str) -> bool {
    matches!(status, "sigbus" | "enospc")
}

/// Starts `shmbench run` with `args` (one string) writing its results to a fresh path, with
/// stdout (the JSON record, with `--json`) and stderr piped.
pub fn spawn_run(args: &str) -> Child {
    let out = temp_dir("run").keep().join("r.csv");
    command()
        .args(["run", "--out", out.to_str().unwrap()])
        .args(args.split_whitespace())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Sends `signal` (as kill(1) names it: `INT`, `KILL`, `9`) to `pid`.
pub fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill -{signal} {pid} failed");
}

/// Writes `scenario` (TOML) to a fresh directory and starts `shmbench matrix` on it with stderr
/// piped; returns the child and its results path.
pub fn spawn_matrix(name: &str, scenario: &str) -> (Child, PathBuf) {
    let dir = temp_dir(name).keep();
    let path = dir.join("s.toml");
    std::fs::write(&path, scenario).unwrap();
    let out = dir.join("r.csv");
    let child = command()
        .args([
            "matrix",
            path.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (child, out)
}

/// Reads lines until one contains `needle`; returns the lines read. Panics at EOF or after 60 s.
pub fn wait_for_line(reader: &mut impl BufRead, needle: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut line = String::new();
    while Instant::now() < deadline {
        line.clear();
        if reader.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push(line.trim_end().to_string());
        if line.contains(needle) {
            return seen;
        }
    }
    panic!("never saw '{needle}': {seen:?}");
}

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
        // Not this test process, which carries the mark in no argument of its own.
        if text.contains(WATCHED_MARK) && !text.contains("--") {
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

/// The binary, run from `dir`.
pub fn command_in(dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir);
    cmd
}
