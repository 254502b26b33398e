//! `shmbench sweep`: removes what shmbench runs that died (SIGKILL, the OOM killer) left: their
//! /dev/shm segments, memory cgroups and containers, each only when its run's owner record
//! proves the run dead and no live process holds it (`sys::owner`, `orchestrate::leftovers`).

use std::process::ExitCode;

use anyhow::Result;

use crate::orchestrate::leftovers::{self, Swept};
use crate::runtime::docker::engine::{self, Engine};

/// What `shmbench sweep --help` shows.
pub(crate) const AFTER_HELP: &str = "\
Examples:
  shmbench sweep              # after a run was SIGKILLed or OOM-killed: its segments, memory
                              # cgroups and containers
  shmbench shm --sweep-stale --older-than 1h   # any stale file of /dev/shm, shmbench's or
                                               # not, each with the proof

Only what a shmbench run made and its owner record proves dead is removed, and only once no
live process holds it: a live run's files, and everything of other programs, stay.";

pub(crate) fn run() -> Result<ExitCode> {
    // Containers are swept when an engine answers; without one there are none to sweep.
    let engine = engine::socket_present()
        .then(Engine::connect)
        .and_then(Result::ok);
    let swept = leftovers::sweep(&engine.iter().collect::<Vec<_>>());
    if swept.is_empty() {
        println!("nothing to remove: no leftovers of dead shmbench runs");
    }
    for line in lines(&swept) {
        println!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// What a sweep did, a line per thing, for the terminal.
pub(crate) fn lines(swept: &Swept) -> Vec<String> {
    let mut out = Vec::new();
    for path in &swept.segments {
        out.push(format!("removed {} (a dead run's)", path.display()));
    }
    for (path, why) in &swept.segments_kept {
        out.push(format!("kept {}: a dead run's, but {why}", path.display()));
    }
    for group in &swept.cgroups {
        out.push(format!("removed memory cgroup {group} (a dead run's)"));
    }
    for name in &swept.containers {
        out.push(format!("removed container {name} (a dead run's)"));
    }
    for dir in &swept.service_dirs {
        out.push(format!(
            "removed {} (a dead run's Podman service directory)",
            dir.display()
        ));
    }
    for dir in &swept.scratch_dirs {
        out.push(format!(
            "removed {} (a dead run's torch cell folder)",
            dir.display()
        ));
    }
    out
}
