//! The Slurm path, end to end on a real cluster (the one-node cluster `cargo xtask test`
//! starts, SLURM_CONF naming it): `slurm submit` hands a real batch script to sbatch, the array
//! tasks run their cells on the node, and `slurm collect` reads their output files and asks
//! Slurm how each ended. Checked: the same statuses as `matrix`, a task the scheduler ended
//! (OUT_OF_MEMORY by --mem, TIMEOUT by --time) as a row with Slurm's state, and two jobs side
//! by side in one node's /dev/shm.

use crate::common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

type Row = HashMap<String, String>;

pub(crate) fn slurm_or_skip() -> bool {
    common::require(
        "slurm",
        || {
            Command::new("scontrol")
                .arg("ping")
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("UP"))
        },
        "a Slurm cluster whose controller answers (SLURM_CONF naming it)",
    )
}

/// `scontrol -o show node NAME`'s state and reason, asked by `scontrol` (a command that
/// names the cluster's configuration).
pub(crate) fn node_state(scontrol: &mut Command, name: &str) -> (String, String) {
    let o = scontrol
        .args(["-o", "show", "node", name])
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&o.stdout).into_owned();
    let state = (line.split(' '))
        .find_map(|f| f.strip_prefix("State="))
        .unwrap_or_default()
        .to_string();
    let reason = (line.split_once(" Reason="))
        .map(|(_, r)| r.to_string())
        .unwrap_or_default();
    (state, reason)
}

/// Runs `script` with `sh` in the mount namespace of slurmd `pid` (the node's /dev/shm).
pub(crate) fn on_node(slurmd: &str, script: &str) -> std::process::Output {
    Command::new("nsenter")
        .args(["-t", slurmd, "-m", "sh", "-c", script])
        .output()
        .unwrap()
}

/// The longest a test's jobs may take: far above what they need (seconds), so only a cluster
/// that stopped running jobs (a drained node) meets it.
const JOB_DEADLINE: Duration = Duration::from_secs(600);

/// `slurm submit ARGS --wait` into `dir`: the job id. A job still not done at the deadline is
/// cancelled and the test fails with what Slurm says of the node, never hangs.
fn submit(dir: &Path, args: &[&str]) -> String {
    let out = dir.join("out");
    let mut child = common::slurm_command(&mut Command::new(common::BIN))
        .args(["slurm", "submit", "--wait", "--output-dir"])
        .arg(&out)
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run shmbench");
    let began = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if began.elapsed() > JOB_DEADLINE {
            let _ = child.kill();
            let _ = Command::new("scancel")
                .args(["--full", "--partition=debug"])
                .status();
            let why = Command::new("sinfo").arg("-R").output().unwrap();
            panic!(
                "the job did not end within {} s; sinfo -R says: {}",
                JOB_DEADLINE.as_secs(),
                String::from_utf8_lossy(&why.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let done = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&done.stderr);
    assert!(done.status.success(), "submit failed: {said}");
    let id = String::from_utf8_lossy(&done.stdout).trim().to_string();
    assert!(id.parse::<u64>().is_ok(), "not a job id: {id:?} ({said})");
    id
}

/// `slurm collect JOB`: the rows, by cell, and what it said.
fn collect(dir: &Path, job: &str) -> (Vec<Row>, String) {
    let csv = dir.join(format!("{job}.csv"));
    let out = dir.join("out");
    let done = shmbench(&[
        "slurm",
        "collect",
        job,
        "--dir",
        out.to_str().unwrap(),
        "--out",
        csv.to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&done.stderr).into_owned();
    assert!(done.status.success(), "collect failed: {said}");
    (common::read_csv(&csv), said)
}

/// `shmbench ARGS` as the Slurm tests run it (`common::slurm_command`).
fn shmbench(args: &[&str]) -> std::process::Output {
    common::output(|c| common::slurm_command(c).args(args))
}

fn shmbench_without_docker(args: &[&str]) -> std::process::Output {
    common::output(|c| {
        common::slurm_command(c)
            .args(args)
            .env("DOCKER_HOST", common::NO_ENGINE)
    })
}

fn by_cell(rows: &[Row]) -> HashMap<String, &Row> {
    rows.iter().map(|r| (r["cell"].clone(), r)).collect()
}

#[test]
fn the_seed_matrix_as_a_job_array_gives_the_statuses_matrix_gives() {
    if !slurm_or_skip() {
        return;
    }
    let dir = common::temp_dir("slurm-seed");
    // The same cells here first, Docker's rows in a namespace as the tasks run them. This run
    // is on this machine (its start sweeps dead runs' leftovers, its ipc=host row uses this
    // /dev/shm), so it holds the machine tests' lock, and only that: the Slurm lane is not
    // held waiting for the machine lane.
    // Full-size batches, so that each cell's outcome is the same on a busy machine: at batch 8
    // the 64 MiB file_system cell was marginal (16 batches of 4.6 MiB in flight), crashing or
    // passing as the workers' speed against the consumer's went (seen: the task passed where
    // the matrix crashed, with both cores held).
    let csv = dir.join("matrix.csv");
    let machine = common::serial();
    let matrix =
        shmbench_without_docker(&["matrix", "--steps", "5", "--out", csv.to_str().unwrap()]);
    drop(machine);
    assert!(matrix.status.code().is_some_and(|c| c <= 1), "{matrix:?}");
    let _serial = common::slurm_serial();
    let job = submit(&dir, &["--steps", "5"]);
    let (rows, _) = collect(&dir, &job);
    assert_eq!(rows.len(), 5, "one row per cell: {rows:?}");
    for r in &rows {
        assert!(r["slurm_job"].starts_with(&format!("{job}_")), "{r:?}");
        assert_eq!(r["slurm_state"], "COMPLETED", "{r:?}");
        assert!(r["slurm_version"].contains("slurm"), "{r:?}");
        assert!(!r["node"].is_empty() && r["node"] == r["host"], "{r:?}");
    }
    let here = common::read_csv(&csv);
    let (slurm, here) = (by_cell(&rows), by_cell(&here));
    // A full tmpfs under the legacy profile ends by SIGBUS or, where the 1-byte write meets it
    // first, ENOSPC: which one is timing's, the same end either way.
    let end = |s: &str| if s == "enospc" { "sigbus" } else { s }.to_string();
    for (cell, row) in &here {
        assert_eq!(
            end(&slurm[cell]["status"]),
            end(&row["status"]),
            "{cell}: the Slurm task and matrix disagree"
        );
    }
}

#[test]
fn a_task_short_of_memory_is_a_row_slurm_calls_out_of_memory() {
    if !slurm_or_skip() {
        return;
    }
    let _serial = common::slurm_serial();
    let dir = common::temp_dir("slurm-oom");
    // 17 batches of 18.4 MiB outstanding in a 2 GiB tmpfs: the pages alone pass 300M.
    let job = submit(
        &dir,
        &[
            "--cells",
            "docker-tuned",
            "--batch",
            "32",
            "--steps",
            "30",
            "--mem",
            "300M",
        ],
    );
    let (rows, said) = collect(&dir, &job);
    assert_eq!(rows.len(), 1, "{said}");
    let row = &rows[0];
    assert_eq!(row["slurm_state"], "OUT_OF_MEMORY", "{row:?}");
    assert_eq!(row["status"], "oom", "{row:?}");
}

#[test]
fn a_task_past_its_time_limit_is_a_timeout_row_with_slurms_words() {
    if !slurm_or_skip() {
        return;
    }
    let _serial = common::slurm_serial();
    let dir = common::temp_dir("slurm-timeout");
    // Far more steps than five seconds hold: Slurm ends it at its limit (checked about every
    // 30 s), the cell's tree with it.
    let job = submit(
        &dir,
        &[
            "--cells",
            "docker-standard",
            "--batch",
            "8",
            "--steps",
            "100000",
            "--compute-ms",
            "20",
            "--time",
            "0:05",
        ],
    );
    let (rows, said) = collect(&dir, &job);
    assert_eq!(rows.len(), 1, "{said}");
    let row = &rows[0];
    assert_eq!(row["slurm_state"], "TIMEOUT", "{row:?}");
    assert_eq!(row["status"], "timeout", "{row:?}");
    assert!(row["message"].contains("TIMEOUT"), "{row:?}");
}

/// What the node's /dev/shm holds, as a job on it sees it.
fn node_shm_entries() -> String {
    let out = Command::new("srun")
        .args(["--mem=16M", "ls", "-A", "/dev/shm"])
        .output()
        .expect("srun");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn two_jobs_that_each_fit_a_nodes_dev_shm_alone_do_not_fit_it_side_by_side() {
    if !slurm_or_skip() {
        return;
    }
    let _serial = common::slurm_serial();
    let scenario = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios/slurm.toml");
    let alone = common::temp_dir("slurm-alone");
    let job = submit(&alone, &[scenario]);
    let (rows, said) = collect(&alone, &job);
    assert_eq!(rows.len(), 2, "{said}");
    for r in &rows {
        assert_eq!(r["status"], "pass", "alone, each fits: {r:?}");
    }
    let shared = common::temp_dir("slurm-shared");
    let job = submit(&shared, &[scenario, "--shared"]);
    let (rows, said) = collect(&shared, &job);
    assert_eq!(rows.len(), 2, "{said}");
    let crashed: Vec<&Row> = rows
        .iter()
        .filter(|r| r["status"] == "sigbus" || r["status"] == "enospc")
        .collect();
    assert!(
        !crashed.is_empty(),
        "side by side in one 512 MiB /dev/shm, a job must run out: {rows:?}"
    );
    assert_eq!(
        node_shm_entries(),
        "",
        "the jobs left files in the node's /dev/shm"
    );
}

#[test]
fn the_doctors_proof_on_slurm_runs_as_a_job_in_the_nodes_own_dev_shm() {
    if !slurm_or_skip() {
        return;
    }
    let _serial = common::slurm_serial();
    // 4 x 2 batches of 73.5 MiB outstanding: 661 MiB, more than the node's 512 MiB /dev/shm,
    // whatever the doctor recommends.
    let big = shmbench(&[
        "doctor",
        "--verify",
        "--platform",
        "slurm",
        "--workers",
        "4",
        "--batch",
        "128",
    ]);
    let said = String::from_utf8_lossy(&big.stdout);
    assert_eq!(big.status.code(), Some(1), "{said}");
    assert!(
        said.contains("verify: FAILED as a Slurm job in the node's /dev/shm"),
        "{said}"
    );
    assert!(
        said.contains("shared by every job on it"),
        "the advice names the shared node: {said}"
    );
    let small = shmbench(&[
        "doctor",
        "--verify",
        "--platform",
        "slurm",
        "--workers",
        "2",
        "--batch",
        "8",
    ]);
    let said = String::from_utf8_lossy(&small.stdout);
    assert!(said.contains("verify: PASSED as a Slurm job"), "{said}");
}
