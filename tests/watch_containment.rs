//! Nothing of a watched job outlives the harness, however the harness ends: a job that ignores
//! SIGTERM and double-forks a daemon with `setsid` (out of reach of PR_SET_PDEATHSIG and of its
//! process group) is gone after SIGINT, SIGTERM and SIGKILL of `shmbench watch`, with its
//! private tmpfs, and its memory cgroup once the next run (here `sweep`) has looked.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

/// The job: ignores TERM, starts a daemon in a session of its own that writes to /dev/shm and
/// sleeps, then sleeps itself. Every process of it carries the mark in its command line.
fn job_script() -> String {
    format!(
        "trap '' TERM; setsid bash -c 'echo x > /dev/shm/daemon; exec -a {WATCHED_MARK}-daemon sleep 300' & \
         sleep 0.3; echo started; exec -a {WATCHED_MARK}-job sleep 300"
    )
}

#[test]
fn a_daemonizing_job_is_gone_after_sigint_sigterm_and_sigkill_of_watch() {
    let _guard = serial();
    let before = machine_state();
    let cgroups_before = shmbench_cgroups();
    for (runtime, signal) in [
        ("namespace", "INT"),
        ("namespace", "TERM"),
        ("namespace", "KILL"),
        ("host", "KILL"),
    ] {
        let dir = temp_dir("contain").keep();
        let mut args = vec!["watch", "--runtime", runtime, "--out", "w.csv"];
        if runtime == "namespace" {
            args.extend(["--shm-size", "64m", "--memory", "256m"]);
        }
        let mut child = command_in(&dir)
            .args(&args)
            .args(["--", "bash", "-c", &job_script()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        wait_for_line(&mut out, "started");
        let running = watched_left();
        assert!(
            running.iter().any(|p| p.contains("-daemon"))
                && running.iter().any(|p| p.contains("-job")),
            "{runtime}: the job and its daemon run: {running:?}"
        );
        send_signal(child.id(), signal);
        child.wait().unwrap();
        let _rest = out.lines().count();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !watched_left().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(
            watched_left(),
            Vec::<String>::new(),
            "{runtime}, SIG{signal}: the job outlived the harness"
        );
        if runtime == "host" {
            // The host's /dev/shm is the job's own: its file is the job's leftover, not ours.
            let _ = std::fs::remove_file("/dev/shm/daemon");
        }
        let o = shmbench(&["sweep"]);
        assert!(o.status.success(), "{o:?}");
        assert_eq!(shmbench_cgroups(), cgroups_before, "{runtime}, SIG{signal}");
        assert_clean(&before);
    }
}
