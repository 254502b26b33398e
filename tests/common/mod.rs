//! Helpers for integration tests that run real cells through the real binary.

#![allow(dead_code)]

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod check;
mod k8s;
mod lanes;
mod machine;
mod map_count;
mod mounts;
mod private_shm;
mod rows;
mod torch;
mod watch;
mod wheel;

// Each test file uses a part of these.
#[allow(unused_imports)]
pub use check::*;
#[allow(unused_imports)]
pub use k8s::*;
#[allow(unused_imports)]
pub use lanes::*;
#[allow(unused_imports)]
pub use machine::*;
#[allow(unused_imports)]
pub use map_count::*;
#[allow(unused_imports)]
pub use private_shm::*;
#[allow(unused_imports)]
pub use rows::*;
#[allow(unused_imports)]
pub use torch::*;
#[allow(unused_imports)]
pub use watch::*;
pub use wheel::*;

pub const BIN: &str = env!("CARGO_BIN_EXE_shmbench");

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

/// A fresh scratch directory named after the test's purpose, inside the run's scratch directory
/// when `cargo xtask test` made one (it removes that, with what tests kept, after the run).
pub fn temp_dir(name: &str) -> Scratch {
    let prefix = format!("shmbench-test-{name}-");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix);
    Scratch(
        match std::env::var_os("SHMBENCH_TEST_SCRATCH") {
            Some(root) => builder.tempdir_in(root),
            None => builder.tempdir(),
        }
        .unwrap(),
    )
}

/// The binary, run from a scratch directory so default `results/` and `reports/` paths land
/// there and not in the repository (and the built-in seed scenario is what `matrix` finds).
/// The directory is kept, for a child that outlives this call; [`output`] removes its own.
pub fn command() -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(temp_dir("cwd").keep())
        .env(OWNER_VARIABLE, lane_mark());
    cmd
}

/// What the binary, set up by `build` and run to its end from a scratch directory, printed;
/// the directory goes with it.
pub fn output(build: impl FnOnce(&mut Command) -> &mut Command) -> Output {
    let dir = temp_dir("cwd");
    build(&mut command_in(&dir)).output().expect("run shmbench")
}

pub fn shmbench(args: &[&str]) -> Output {
    output(|c| c.args(args))
}

/// A DOCKER_HOST where no engine listens: `runtime = auto` must fall back to emulation.
pub const NO_ENGINE: &str = "unix:///nonexistent/docker.sock";

pub fn shmbench_without_docker(args: &[&str]) -> Output {
    output(|c| c.args(args).env("DOCKER_HOST", NO_ENGINE))
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
            .env(OWNER_VARIABLE, lane_mark())
            .args(rest)
            .arg(BIN)
            .args(&full)
            .output()
            .expect("run the wrapper"),
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let line = stdout.lines().next().unwrap_or_default();
    let record: Value = serde_json::from_str(line).unwrap_or_else(|e| {
        panic!(
            "shmbench {full:?}: not a record: {e}: {line}\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    assert_exit_of_one_cell(&output, &record);
    let _ = std::fs::remove_dir_all(&dir);
    record
}

/// `run`'s exit status for one cell whose record is `record`: 4 when it ended in error, 0 for a
/// pass or a measured crash (docs/OVERVIEW.md's exit statuses).
pub fn assert_exit_of_one_cell(output: &Output, record: &Value) {
    let expected = if record["status"] == "error" { 4 } else { 0 };
    assert_eq!(
        output.status.code(),
        Some(expected),
        "{}\n{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
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
    let mut matrix = command();
    matrix
        .args(["matrix", path.to_str().unwrap(), "--out"])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // A suite started under nohup ignores SIGHUP, and an ignored signal stays ignored across
    // exec (shmbench keeps it so): the run gets the default, as from a terminal.
    // SAFETY: signal is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut matrix, || {
            libc::signal(libc::SIGHUP, libc::SIG_DFL);
            Ok(())
        });
    }
    (matrix.spawn().unwrap(), out)
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

/// The binary, run from `dir`.
pub fn command_in(dir: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(dir).env(OWNER_VARIABLE, lane_mark());
    cmd
}

/// The shmbench image tag (`shmbench:HASH`) a command's output names, if it names one.
pub fn image_tag_in(text: &str) -> Option<String> {
    text.split_whitespace()
        .find(|w| w.starts_with("shmbench:"))
        .map(str::to_string)
}

/// This binary's image tag, as `shmbench image` names it (built if the engine lacks it).
pub fn this_binarys_image() -> String {
    let shown = String::from_utf8_lossy(&shmbench(&["image"]).stdout).into_owned();
    image_tag_in(&shown).unwrap_or_else(|| panic!("no tag in: {shown}"))
}
