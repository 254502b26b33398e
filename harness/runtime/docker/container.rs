//! What a cell's container is made of, and making it: the cell's config as its command, this
//! run's owner label, the image and entrypoint (shmbench's own, or a user's with the bundle), the
//! mounts a torch cell needs, and the limits of the setup it stands for.

use std::collections::HashMap;

use bollard::models::{ContainerCreateBody, HostConfig, ResourcesUlimits};
use bollard::query_parameters::CreateContainerOptionsBuilder;

use super::python::{self, PythonInContainer};
use super::{bundle, hostname, podman, Docker, LABEL_HOST, LABEL_OWNER};
use cell::protocol::{LIFELINE_ENV, PROGRESS_ENV};
use cell::torch::PythonError;
use model::config::CellConfig;
use model::knobs::{EngineKind, Loader, OciRuntime};
use model::size::ByteSize;
use sys::reexec::{bundle_argv, BUNDLE_ENV};
use sys::run_owner::{self, NoRunRecord};

/// Why a cell's container could not be run.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    #[error(transparent)]
    Python(#[from] PythonError),
    #[error(transparent)]
    NoRunRecord(#[from] NoRunRecord),
    #[error("the cell's config as JSON: {0}")]
    Config(#[from] serde_json::Error),
    /// What the engine refused: the step (`creating`, `attaching to`, `starting`) and why, in
    /// the words of the engine that said it ([`ContainerError::engine`]).
    #[error("{0} the container: {1}")]
    Engine(&'static str, String),
    /// The container runs without the memory limit its cell asks for, as its cgroup shows.
    #[error("the engine did not apply the cell's memory limit of {asked}: the container's memory cgroup ({cgroup}) {found}{why}")]
    LimitNotApplied {
        asked: ByteSize,
        cgroup: String,
        found: String,
        why: &'static str,
    },
}

impl ContainerError {
    /// What `engine` refused at `step`, named as that engine (bollard words every engine's
    /// answer as Docker's), and, where crun is the runtime in effect, the runtime that runs
    /// where crun refuses (it refuses hosts with hybrid cgroups, this project's CI machines
    /// among them: rootless Podman's default too).
    pub(super) fn engine(
        step: &'static str,
        engine: &super::engine::Engine,
        config: &CellConfig,
        e: bollard::errors::Error,
    ) -> ContainerError {
        let said =
            e.to_string()
                .replacen("Docker responded", &format!("{} responded", engine.kind), 1);
        let in_effect = config
            .knobs
            .oci_runtime
            .named()
            .map(str::to_string)
            .unwrap_or_else(|| engine.info.oci_runtime.clone());
        let hint = if in_effect.split_whitespace().next() == Some("crun") {
            " (the OCI runtime was crun, which refuses hosts with hybrid cgroups: `--oci-runtime runc` runs there)"
        } else {
            ""
        };
        ContainerError::Engine(step, format!("{said}{hint}"))
    }
}

impl Docker {
    /// Whether the started container `id` runs under the memory limit its cell asks for, read
    /// from the cgroup its first process is charged to (an engine may accept a limit and not
    /// apply it: rootless Podman on cgroup v1 only warns on its command line, and its API says
    /// nothing). A container already gone, or whose process is not in this machine's view
    /// (gVisor's sandbox under rootless Podman), is not judged.
    pub(super) async fn check_memory_limit(
        &self,
        config: &CellConfig,
        id: &str,
    ) -> Result<(), ContainerError> {
        let Some(asked) = config.knobs.memory else {
            return Ok(());
        };
        let inspected = self.engine.docker().inspect_container(id, None).await;
        let pid = inspected.ok().and_then(|c| c.state?.pid).unwrap_or(0);
        let Some(charged) = u32::try_from(pid)
            .ok()
            .filter(|p| *p > 0)
            .and_then(sys::cgroup::memory_limit_of)
        else {
            return Ok(());
        };
        // Its own cgroup must hold the limit: a parent's, shared with other processes (a Slurm
        // job's, the harness's), is not the cell's, and a lower one would end it early.
        let found = match (charged.own, charged.least) {
            (Some(own), Some(least)) if own <= asked.bytes() && least >= own => return Ok(()),
            (Some(own), Some(least)) if least < own => format!(
                "has {}, but a parent limits it to {}",
                ByteSize(own),
                ByteSize(least)
            ),
            (Some(own), _) => format!("has a limit of {}", ByteSize(own)),
            (None, Some(least)) => format!(
                "has no limit of its own; a parent's, shared, is {}",
                ByteSize(least)
            ),
            (None, None) => "has no limit".to_string(),
        };
        let rootless_v1 = self.engine.info.rootless && self.engine.info.cgroup_version == "v1";
        Err(ContainerError::LimitNotApplied {
            asked,
            cgroup: charged.dir.display().to_string(),
            found,
            why: match rootless_v1 {
                true => ": a rootless engine on cgroup v1 applies no resource limits (Podman: \"Resource limits are not supported and ignored on cgroups V1 rootless systems\"); measure memory limits with a rootful engine or on cgroup v2",
                false => "",
            },
        })
    }

    /// Creates the cell's container (not started); its id.
    pub(super) async fn create_container(
        &self,
        config: &CellConfig,
    ) -> Result<String, ContainerError> {
        let docker = self.engine.docker();
        // In shmbench's own image a torch cell borrows this machine's Python; in a user's image
        // it runs the image's own.
        let python = match (config.knobs.loader, &config.knobs.image) {
            (Loader::Torch, None) => Some(python::prepare(&config.knobs.python)?),
            _ => None,
        };
        let mut inside = config.clone();
        if let Some(p) = &python {
            inside.knobs.python = p.executable.clone();
        }
        let json = serde_json::to_string(&inside)?;
        let n = self.counter.get() + 1;
        self.counter.set(n);
        let token = run_owner::this_run()?;
        let name = format!("shmbench-{token}-{}-{n}", config.cell);
        let mut env = vec![format!("{PROGRESS_ENV}=1"), format!("{LIFELINE_ENV}=stdin")];
        // In a user's image shmbench starts through its bundle's loader, whatever the image's
        // entrypoint, and its workers are started the same way.
        let (image, entrypoint) = match &config.knobs.image {
            Some(user_image) => {
                env.push(format!("{BUNDLE_ENV}={}", bundle::IN_CONTAINER));
                (user_image.clone(), Some(bundle_argv(bundle::IN_CONTAINER)))
            }
            None => (self.image.clone(), None),
        };
        let body = ContainerCreateBody {
            image: Some(image),
            entrypoint,
            cmd: Some(vec!["cell".into(), json]),
            env: Some(env),
            labels: Some(HashMap::from([
                (LABEL_OWNER.to_string(), token.to_string()),
                (LABEL_HOST.to_string(), hostname()),
            ])),
            attach_stdin: Some(true),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            open_stdin: Some(true),
            stdin_once: Some(true),
            host_config: Some(self.host_config(config, python.as_ref())),
            ..Default::default()
        };
        let created = docker
            .create_container(
                Some(CreateContainerOptionsBuilder::default().name(&name).build()),
                body,
            )
            .await
            .map_err(|e| ContainerError::engine("creating", &self.engine, config, e))?;
        Ok(created.id)
    }

    fn host_config(&self, config: &CellConfig, python: Option<&PythonInContainer>) -> HostConfig {
        let mut tmpfs = HashMap::new();
        let shm_size = match (config.knobs.shm_tmpfs, config.knobs.shm_size) {
            (true, Some(size)) => {
                tmpfs.insert(
                    "/dev/shm".to_string(),
                    format!("size={},mode=1777", size.bytes()),
                );
                None
            }
            (_, size) => size.map(|s| s.bytes() as i64),
        };
        // A torch cell, with this machine's Python or the image's, and any cell in a user's
        // image get a /tmp: their root is read-only.
        if python.is_some() || config.knobs.image.is_some() {
            let (path, options) = python::tmp_mount();
            tmpfs.insert(path, options);
        }
        let mut binds: Vec<String> = python.map(|p| p.binds.clone()).unwrap_or_default();
        if let (Some(_), Some(dir)) = (&config.knobs.image, &self.bundle) {
            binds.push(format!("{}:{}:ro", dir.display(), bundle::IN_CONTAINER));
        }
        HostConfig {
            binds: (!binds.is_empty()).then_some(binds),
            shm_size,
            tmpfs: (!tmpfs.is_empty()).then_some(tmpfs),
            ipc_mode: Some(config.knobs.ipc.to_string()),
            memory: config.knobs.memory.map(|m| m.bytes() as i64),
            cpuset_cpus: config.knobs.cpus.as_ref().map(ToString::to_string),
            // No swap: tmpfs pages beyond the limit must not hide in swap.
            memory_swap: config.knobs.memory.map(|m| m.bytes() as i64),
            network_mode: Some("none".into()),
            // A watched job may write (checkpoints, logs) in its own image; the container is
            // removed when it ends either way.
            readonly_rootfs: Some(config.knobs.loader != Loader::Command),
            cap_drop: Some(vec!["ALL".into()]),
            security_opt: Some(vec!["no-new-privileges".into()]),
            // Real torch runs threads in every process (intra-op pools, the pin thread).
            pids_limit: Some(
                match config.knobs.loader {
                    Loader::Torch => (config.knobs.workers as i64 + 1) * 32 + 64,
                    Loader::Emulated => config.knobs.workers as i64 + 64,
                    // A user's job: bounded, but far above any DataLoader's needs.
                    Loader::Command => 4096,
                } + sandbox_pids(&config.knobs.oci_runtime),
            ),
            auto_remove: Some(true),
            // Podman's service was started with its runtime; Docker picks one per container.
            runtime: match self.engine.kind {
                EngineKind::Docker => config.knobs.oci_runtime.named().map(str::to_string),
                EngineKind::Podman => None,
            },
            ulimits: self.ulimits(),
            ..Default::default()
        }
    }

    /// Podman gives containers rlimits of its own (open files 1048576) that a machine's hard
    /// limits may refuse (`setrlimit RLIMIT_NOFILE: Operation not permitted`): its containers get
    /// the service's own, which its OCI runtime runs under (Podman lowers its processes to 32768
    /// here: our 96368 was refused), or this process's where the service is not ours to read.
    /// Docker's engine sets its own.
    fn ulimits(&self) -> Option<Vec<ResourcesUlimits>> {
        if self.engine.kind != EngineKind::Podman {
            return None;
        }
        let pid = self.service.as_ref().map_or(0, podman::Service::pid);
        let limit = |name: &str, resource| {
            let mut got = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: reads a process's limit into `got`; pid 0 is this process.
            if unsafe { libc::prlimit(pid as libc::pid_t, resource, std::ptr::null(), &mut got) }
                != 0
            {
                return None;
            }
            let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            Some(ResourcesUlimits {
                name: Some(name.to_string()),
                soft: Some(clamp(got.rlim_cur)),
                hard: Some(clamp(got.rlim_max)),
            })
        };
        [
            limit("nofile", libc::RLIMIT_NOFILE),
            limit("nproc", libc::RLIMIT_NPROC),
        ]
        .into_iter()
        .collect()
    }
}

/// Tasks an OCI runtime's own sandbox spends of the container's pids limit. gVisor's Sentry
/// and gofer are Go programs in the container's cgroup: with runsc 20221219 an emulated cell of
/// 8 workers (a limit of 72) and one of 128 ended at once with exit code 2 and no output (the
/// Go runtime could not make a thread); 256 ran. runc and crun leave the container alone.
fn sandbox_pids(oci: &OciRuntime) -> i64 {
    match oci.is_gvisor() {
        true => 512,
        false => 0,
    }
}
