//! `shmbench node --slurm-health` as the test cluster's real HealthCheckProgram (slurmd runs it
//! every few seconds, `cargo xtask test` sets the interval short): a dead leftover planted in the
//! node's own /dev/shm drains the node with a reason starting `shmbench:`; after the sweep the
//! node returns to idle; a node drained by hand for another reason stays drained.

use crate::common;
use crate::slurm::on_node;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The test cluster's node (`xtask/src/slurm.rs`).
const NODE: &str = "shmbench-node";
/// Far above the health check's interval (5 s): only a cluster that stopped running its check
/// (or a check that never acts) reaches it.
const DEADLINE: Duration = Duration::from_secs(240);

fn cluster_dir() -> Option<PathBuf> {
    let conf = PathBuf::from(std::env::var_os("SLURM_CONF")?);
    Some(conf.parent()?.to_path_buf())
}

/// `scontrol -o show node`'s state and reason.
fn node() -> (String, String) {
    crate::slurm::node_state(&mut Command::new("scontrol"), NODE)
}

/// Waits until `done(state, reason)`, or fails with the node's state and what the health
/// check said.
fn wait_for(what: &str, log: &Path, done: impl Fn(&str, &str) -> bool) {
    let began = Instant::now();
    loop {
        let (state, reason) = node();
        if done(&state, &reason) {
            return;
        }
        if began.elapsed() > DEADLINE {
            panic!(
                "{what}: not within {} s; the node is {state} ({reason}); the check said:\n{}",
                DEADLINE.as_secs(),
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// How many times the health check has run so far.
fn runs(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("slurm: "))
        .count()
}

/// Puts the cluster back however the test ends: no health check program, the planted file
/// gone, the node resumed if the test left it drained.
struct Restore {
    run: PathBuf,
    slurmd: String,
    planted: String,
}

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.run);
        if !self.planted.is_empty() {
            let _ = on_node(&self.slurmd, &format!("rm -f {}", self.planted));
        }
        if node().0.contains("DRAIN") {
            let _ = Command::new("scontrol")
                .args(["update", &format!("NodeName={NODE}"), "State=RESUME"])
                .status();
        }
    }
}

#[test]
fn the_health_check_drains_a_node_with_dead_leftovers_resumes_it_after_the_sweep_and_keeps_an_admins_drain(
) {
    if !crate::slurm::slurm_or_skip() {
        return;
    }
    let _serial = common::slurm_serial();
    let dir = cluster_dir().expect("SLURM_CONF names the test cluster's slurm.conf");
    let slurmd = std::fs::read_to_string(dir.join("slurmd.pid"))
        .expect("the test cluster's slurmd.pid")
        .trim()
        .to_string();
    let (state, reason) = node();
    assert!(
        !state.contains("DRAIN"),
        "the node is drained before the test: {state} ({reason})"
    );
    let scratch = common::temp_dir("slurm-health");
    let log = scratch.as_ref().join("health.log");
    let run = dir.join("health-check.run");
    let mut restore = Restore {
        run: run.clone(),
        slurmd: slurmd.clone(),
        planted: String::new(),
    };
    // The program slurmd runs: shmbench's check, as a site would install it, its words kept.
    // No --slurm-node: the node's name is the one slurmd gives its health check. slurmd runs
    // it with an environment of its own, so scontrol is told where this cluster's
    // configuration is (a site's is at Slurm's default path).
    std::fs::write(
        &run,
        format!(
            "#!/bin/sh\nexport SLURM_CONF={conf}\necho \"node=$SLURMD_NODENAME\" >> {log}\nexec {bin} node --slurm-health --dead-older-than 0s >> {log} 2>&1\n",
            log = log.display(),
            conf = dir.join("slurm.conf").display(),
            bin = common::BIN
        ),
    )
    .unwrap();
    std::fs::set_permissions(&run, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    wait_for("a first healthy check", &log, |_, _| runs(&log) >= 1);
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("nothing to do"),
        "{}",
        std::fs::read_to_string(&log).unwrap()
    );

    // A dead leftover in the node's /dev/shm: its name's pid is gone and nobody holds it.
    let planted = on_node(
        &slurmd,
        "sleep 0 & gone=$!; wait $gone; f=/dev/shm/torch_${gone}_1_0; \
         head -c 8388608 /dev/zero > $f && echo $f",
    );
    restore.planted = String::from_utf8_lossy(&planted.stdout).trim().to_string();
    assert!(
        restore.planted.starts_with("/dev/shm/torch_"),
        "{planted:?}"
    );
    wait_for("the drain", &log, |state, reason| {
        state.contains("DRAIN") && reason.starts_with("shmbench: 8 MiB of dead leftovers")
    });
    assert!(std::fs::read_to_string(&log)
        .unwrap()
        .contains(&format!("node={NODE}")));

    // The sweep (an admin's, in the node's namespace): the check undrains its own drain.
    let swept = on_node(
        &slurmd,
        &format!("{} shm --sweep-stale --older-than 0s", common::BIN),
    );
    assert!(swept.status.success(), "{swept:?}");
    // The check undrains, then says so: the node's state can change before its line is
    // written (met with both cores busy), so both are waited for.
    let undrained = format!("slurm: undrained {NODE}");
    wait_for("the resume, said by the check", &log, |state, _| {
        !state.contains("DRAIN")
            && std::fs::read_to_string(&log)
                .unwrap_or_default()
                .contains(&undrained)
    });

    // An admin's drain: healthy checks go on running and leave it drained.
    let drained = Command::new("scontrol")
        .args([
            "update",
            &format!("NodeName={NODE}"),
            "State=DRAIN",
            "Reason=bad DIMM, ticket 42",
        ])
        .status()
        .unwrap();
    assert!(drained.success());
    let before = runs(&log);
    wait_for("two more checks", &log, |_, _| runs(&log) >= before + 2);
    let (state, reason) = node();
    assert!(state.contains("DRAIN"), "{state} ({reason})");
    assert!(reason.starts_with("bad DIMM, ticket 42"), "{reason}");
    drop(restore);
    wait_for("the admin's drain lifted by the test", &log, |state, _| {
        !state.contains("DRAIN")
    });
}
