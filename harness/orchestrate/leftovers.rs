//! What dead shmbench runs left on this node, removed by proof of ownership (`sys::owner`):
//! named segments in this machine's /dev/shm, memory cgroups, torch cells' folders and, when
//! Docker is in use, containers, then the owner records of dead runs that prove nothing any more. Used by
//! `shmbench sweep` and at the start of every run. Nothing a live run or another program made is
//! touched, and nothing a live process holds.

use std::path::PathBuf;

use cell::loader::segment;
use model::knobs::EngineKind;
use runtime::docker::{self, engine::Engine};
use sys::{memory_cgroup, run_owner};

/// What one sweep removed and what it had to leave.
#[derive(Debug, Default)]
pub struct Swept {
    pub segments: Vec<PathBuf>,
    /// Segments (and owner records) of dead runs left, each with why (a live process holds
    /// it, a mount covers it, or it could not be proven unheld).
    pub segments_kept: Vec<(PathBuf, String)>,
    pub cgroups: Vec<String>,
    pub containers: Vec<String>,
    /// The directories of Podman services a dead run started.
    pub service_dirs: Vec<PathBuf>,
    /// The folders of torch cells a dead run left (a SIGKILLed harness removes nothing).
    pub scratch_dirs: Vec<PathBuf>,
}

impl Swept {
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
            && self.segments_kept.is_empty()
            && self.cgroups.is_empty()
            && self.containers.is_empty()
            && self.service_dirs.is_empty()
            && self.scratch_dirs.is_empty()
    }
}

/// Sweeps everything dead runs left; `engines`: the container engines in use (Docker's, Podman's).
pub fn sweep(engines: &[&Engine]) -> Swept {
    let segments = segment::sweep_abandoned();
    let cgroups = memory_cgroup::sweep();
    let mut containers: Vec<String> = engines
        .iter()
        .flat_map(|e| docker::sweep_dead_owners(e))
        .collect();
    // Podman's, asked through its command: a dead run's service is gone with it.
    containers.extend(docker::podman::sweep_dead_owners());
    // The socket directories of Podman services that died with their run.
    let service_dirs = docker::podman::sweep_dead_runs_dirs();
    let scratch_dirs = runtime::scratch::sweep();
    // A dead run's record goes once nothing of it is left to prove; without Docker's engine to
    // ask, its containers cannot be known gone, so records stay for a sweep that can.
    let docker_asked = engines.iter().any(|e| e.kind == EngineKind::Docker);
    if docker_asked || !docker::engine::socket_present() {
        let podman_runs = docker::podman::runs_with_leftovers();
        run_owner::sweep_run_records(|token| {
            memory_cgroup::exists_for(token)
                || podman_runs.contains(token)
                || engines.iter().any(|e| docker::has_containers_of(e, token))
        });
    }
    Swept {
        segments: segments.removed,
        segments_kept: segments.kept,
        cgroups,
        containers,
        service_dirs,
        scratch_dirs,
    }
}
