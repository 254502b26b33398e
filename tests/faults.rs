//! The harness interrupted or killed mid-run: results so far stay valid and nothing is left
//! behind on the machine.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;

#[test]
fn sigint_mid_matrix_keeps_finished_rows_and_cleans_up() {
    let _guard = serial();
    let before = machine_state();
    let (mut child, out) = spawn_matrix(
        "sigint",
        "name = \"int\"\n[defaults]\nbatch = 8\nworkers = 2\nshm-size = \"256m\"\nstrategy = \"file_system\"\n\
         [[cells]]\nname = \"quick\"\nsteps = 5\n\
         [[cells]]\nname = \"slow\"\nsteps = 100000\ncompute-ms = 5\n\
         [[cells]]\nname = \"never\"\nsteps = 5\n",
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    wait_for_line(&mut stderr, "[2/3] slow");
    std::thread::sleep(Duration::from_millis(500));
    send_signal(child.id(), "INT");
    let rest: Vec<String> = stderr.lines().map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(
        rest.iter().any(|l| l.contains("stopped by Interrupt")),
        "{rest:?}"
    );
    let rows = read_csv(&out);
    assert_eq!(rows.len(), 1, "only the finished cell is recorded");
    assert_eq!(rows[0]["cell"], "quick");
    assert_eq!(rows[0]["status"], "pass");
    assert!(!out.with_extension("csv.tmp").exists());
    assert_clean(&before);
}

#[test]
fn sigkill_of_the_harness_takes_its_cell_down_and_sweep_removes_leftovers() {
    let _guard = serial();
    let before = machine_state();
    // The host runtime with file_system: named segments in this machine's /dev/shm.
    let mut child = spawn_run(
        "--runtime host --strategy file_system --batch 8 --workers 2 --steps 100000 --compute-ms 20",
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    wait_for_line(&mut stderr, "[1/1]");
    // Let batches pile up in /dev/shm; judge only this run's (by its token, read while it
    // lives): another lane's dead run may come and go meanwhile.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut ours = lanes_live_tokens();
    while entries_of(&ours).len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        ours = lanes_live_tokens();
    }
    assert!(!ours.is_empty(), "the run made no owner record in /dev/shm");
    send_signal(child.id(), "KILL");
    child.wait().unwrap();
    // The cell and its workers die with the harness (PR_SET_PDEATHSIG).
    let deadline = Instant::now() + Duration::from_secs(5);
    while !machine_state().processes.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(machine_state().processes, Vec::<String>::new());
    // Whatever the dead run left is removed by a sweep and reported by it. Every run's start
    // sweeps dead runs' leftovers too, so another lane's (or another user's) run may have taken
    // some first: those are gone, not reported here.
    let left = entries_of(&ours);
    let o = shmbench(&["sweep"]);
    let text = String::from_utf8_lossy(&o.stdout);
    for name in &left {
        assert!(
            text.contains(name.as_str()) || !Path::new("/dev/shm").join(name).exists(),
            "sweep did not report {name}, and it is still there: {text}"
        );
    }
    // Another run's sweep may hold an entry's lease at that moment (every run's start sweeps):
    // it is then that sweep's to remove, and gone once it ends. A second sweep takes what is
    // left after a while.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !entries_of(&ours).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    if !entries_of(&ours).is_empty() {
        shmbench(&["sweep"]);
    }
    assert_eq!(
        entries_of(&ours),
        Vec::<String>::new(),
        "left after the sweep: {text}"
    );
    if !left.iter().any(|n| text.contains(n.as_str())) {
        eprintln!("another run's sweep removed this run's leftovers before the test's own");
    }
    assert_clean(&before);
}

#[test]
fn sighup_ends_a_run_as_sigterm_does_and_a_crash_fails_only_when_asked() {
    let _guard = serial();
    let before = machine_state();
    // A closed terminal: the running cell ends, exit 129, nothing but the stop said.
    let (mut child, _out) = spawn_matrix(
        "sighup",
        "name = \"hup\"\n[defaults]\nbatch = 8\nworkers = 2\nshm-size = \"256m\"\n\
         [[cells]]\nname = \"slow\"\nsteps = 100000\ncompute-ms = 5\n",
    );
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    wait_for_line(&mut stderr, "[1/1] slow");
    send_signal(child.id(), "HUP");
    let rest: Vec<String> = stderr.lines().map_while(Result::ok).collect();
    assert_eq!(child.wait().unwrap().code(), Some(129), "{rest:?}");
    assert!(
        rest.iter().any(|l| l.contains("stopped by Hangup")),
        "{rest:?}"
    );
    assert_clean(&before);
    // A crash is a measurement (exit 0) unless --fail-on crash (exit 1): a batch of 16 images
    // (9.2 MiB) never fits an 8 MiB tmpfs.
    let crash = "--shm-size 8m --batch 16 --workers 1 --steps 2";
    let (o, rows) = run_rows(crash);
    assert_eq!(o.status.code(), Some(0), "{rows:?}");
    assert_eq!(rows[0]["status"], "sigbus", "{rows:?}");
    let (o, _) = run_rows(&format!("{crash} --fail-on crash"));
    let said = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(said.contains("--fail-on crash"), "{said}");
    assert_clean(&before);
}
