//! Faults injected into a running cell from outside: a worker killed by SIGKILL, SIGSEGV or
//! SIGBUS mid-run, a worker that hangs (SIGSTOP), and the harness stopped by SIGTERM. Each test
//! checks what is recorded and that nothing is left behind.

use crate::common;

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use common::*;

/// Pids of running `shmbench worker` processes.
fn worker_pids() -> Vec<u32> {
    machine_state()
        .processes
        .iter()
        .filter(|p| p.ends_with("worker"))
        .filter_map(|p| p.split(':').next()?.parse().ok())
        .collect()
}

/// Starts a long cell, waits until it reports step `after`, sends `signal` to one worker, and
/// returns the cell's record.
fn fault(signal: i32, after: u64, extra: &str) -> serde_json::Value {
    let mut child = spawn_run(&format!(
        "--json --shm-size 256m --batch 8 --workers 2 --steps 100000 --compute-ms 10 {extra}"
    ));
    // The harness relays progress only to a terminal; wait for the worker processes instead,
    // then for `after` steps' worth of time.
    let deadline = Instant::now() + Duration::from_secs(30);
    while worker_pids().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(12 * after));
    let victim = worker_pids()[0];
    send_signal(victim, &signal.to_string());
    // The cell must end by itself; a test never waits forever for it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the cell did not end within 30 s of signal {signal} to worker {victim}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut record: serde_json::Value =
        serde_json::from_str(stdout.lines().next().unwrap()).unwrap();
    assert_exit_of_one_cell(&output, &record);
    record["victim"] = victim.into();
    record
}

#[test]
fn a_worker_killed_mid_run_is_recorded_with_its_signal() {
    let _guard = serial();
    let before = machine_state();
    for (signal, status, text, after) in [
        (9, "error", "killed by signal: Killed", 10),
        (11, "error", "killed by signal: Segmentation fault", 25),
        (7, "sigbus", "killed by signal: Bus error", 40),
    ] {
        let r = fault(signal, after, "");
        assert_eq!(status_of(&r), status, "signal {signal}: {r}");
        assert_eq!(r["failure"]["signal"], signal, "{r}");
        assert_eq!(
            r["failure"]["pid"], r["victim"],
            "the failed worker is named: {r}"
        );
        assert!(r["message"].as_str().unwrap().contains(text), "{r}");
        assert!(crash_step(&r) > 1, "it failed mid-run: {r}");
        // A SIGBUS from outside is a kill, not a fault: its si_code says a process sent it.
        if signal == 7 {
            assert_eq!(r["explanation"]["cause"], "sent", "{r}");
        }
        assert_clean(&before);
    }
}

fn status_of(r: &serde_json::Value) -> &str {
    r["status"].as_str().unwrap()
}

#[test]
fn a_hung_worker_ends_as_timeout_within_the_watchdog() {
    let _guard = serial();
    let before = machine_state();
    let started = Instant::now();
    // SIGSTOP: the worker stops sending without dying.
    let r = fault(19, 10, "--timeout-s 1");
    let took = started.elapsed();
    assert_eq!(status_of(&r), "timeout", "{r}");
    assert!(
        r["message"]
            .as_str()
            .unwrap()
            .contains("timed out after 1 seconds"),
        "{r}"
    );
    // The cell's own watchdog ended it (the message above), before the harness's hard deadline
    // (timeout + 20 s of slack, see runtime/output.rs) would have.
    assert!(
        took < Duration::from_secs(1 + 20),
        "the watchdog took {took:?}"
    );
    assert_clean(&before);
}

#[test]
fn sigterm_mid_matrix_keeps_finished_rows_and_cleans_up() {
    let _guard = serial();
    let before = machine_state();
    let (mut child, out) = spawn_matrix(
        "sigterm",
        "name = \"term\"\n[defaults]\nbatch = 8\nworkers = 2\nshm-size = \"256m\"\n\
         [[cells]]\nname = \"quick\"\nsteps = 5\n\
         [[cells]]\nname = \"slow\"\nsteps = 100000\ncompute-ms = 5\n",
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    wait_for_line(&mut stderr, "[2/2] slow");
    std::thread::sleep(Duration::from_millis(300));
    send_signal(child.id(), "TERM");
    let rest: Vec<String> = stderr.lines().map_while(Result::ok).collect();
    assert_eq!(child.wait().unwrap().code(), Some(128 + 15), "{rest:?}");
    assert!(
        rest.iter().any(|l| l.contains("stopped by Terminated")),
        "{rest:?}"
    );
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["cell"], "quick");
    assert_clean(&before);
}
