//! Runtime `docker`: the cell runs in a real container from the image shmbench builds, with the
//! row's `--shm-size`, `--ipc`, `--memory` or a tmpfs on /dev/shm, under the cell's engine
//! (Docker, or Podman through the same API: `podman`) and OCI runtime (`oci`).
//!
//! Containers run with no network, a read-only root filesystem, every capability dropped,
//! no-new-privileges and a pids limit. They are created with auto-remove, so the engine removes
//! them when they end; the harness also force-removes on Ctrl-C or its watchdog. The container's
//! stdin stays attached to the harness as a lifeline: if the harness dies, the engine closes it
//! and the cell inside ends itself (`SHMBENCH_LIFELINE=stdin`), so no container outlives it.

mod bundle;
mod container;
pub mod engine;
pub mod image;
mod oci;
pub mod podman;
mod python;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::Result;
use bollard::container::LogOutput;
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, EventsOptionsBuilder, ListContainersOptionsBuilder,
    RemoveContainerOptionsBuilder, WaitContainerOptionsBuilder,
};
use futures_util::StreamExt;

use super::launch::{CellMessage, Runtime};
use super::output::Monitor;
use container::ContainerError;
use engine::Engine;
use model::config::CellConfig;
use model::knob_types::{EngineKind, IpcMode, OciRuntime};
use model::record::{CellRecord, Status};
use sys::owner::Token;
use sys::run_owner;

/// Labels on every container shmbench starts: the token of the harness run that started it
/// (`sys::run_owner::this_run`: its owner record proves the run alive or dead), from which host.
pub const LABEL_OWNER: &str = "org.shmbench.run-token";
pub const LABEL_HOST: &str = "org.shmbench.host";

/// How long a container the harness removed may take to be reported gone.
const ENGINE_GRACE: Duration = Duration::from_secs(15);

pub struct Docker {
    engine: Engine,
    /// The Podman service this run started for these containers, stopped after the engine's
    /// connection closes (fields drop in order).
    service: Option<podman::Service>,
    /// The OCI runtime its containers run under.
    pub oci: OciRuntime,
    image: String,
    /// The host directory of shmbench's bundle, for cells in a user's image (`--image`).
    bundle: Option<std::path::PathBuf>,
    /// How long building the image took, when this run had to build it.
    pub build_time: Option<Duration>,
    counter: std::cell::Cell<u32>,
}

pub(crate) fn hostname() -> String {
    nix::unistd::gethostname()
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl Docker {
    /// Connects to `kind`'s engine for containers under `oci` and makes sure the images `cells`
    /// need exist: shmbench's own (building it if needed) and each user image they name (which
    /// must already be in the engine: there may be no registry to pull from), with the bundle that
    /// runs shmbench inside those.
    pub fn connect(kind: EngineKind, oci: &OciRuntime, cells: &[CellConfig]) -> Result<Docker> {
        let (mut engine, service) = match kind {
            EngineKind::Docker => (Engine::connect()?, None),
            EngineKind::Podman => podman::connect(oci)?,
        };
        engine.info.oci_runtime = oci::describe(&engine, oci)?;
        let (image, build_time) = image::ensure(&engine)?;
        let mut user_images: Vec<&str> = cells
            .iter()
            .filter(|c| c.knobs.engine == kind && c.knobs.oci_runtime == *oci)
            .filter_map(|c| c.knobs.image.as_deref())
            .collect();
        user_images.sort();
        user_images.dedup();
        for name in &user_images {
            if !image::exists(&engine, name) {
                let engine = match kind {
                    EngineKind::Docker => "Docker",
                    EngineKind::Podman => "Podman",
                };
                anyhow::bail!(
                    "image '{name}' is not in this {engine} engine: load it (`{kind} load -i FILE.tar`), build it (`{kind} build -t {name} .`) or pull it first; shmbench does not pull images"
                );
            }
        }
        let bundle = match user_images.is_empty() {
            true => None,
            false => Some(bundle::ensure()?),
        };
        Ok(Docker {
            engine,
            service,
            oci: oci.clone(),
            image,
            bundle,
            build_time,
            counter: std::cell::Cell::new(0),
        })
    }

    /// Whether this engine and runtime are the ones `config` asks for.
    pub fn serves(&self, config: &CellConfig) -> bool {
        self.engine.kind == config.knobs.engine && self.oci == config.knobs.oci_runtime
    }

    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    pub fn image(&self) -> &str {
        &self.image
    }

    async fn run_container(
        &self,
        config: &CellConfig,
        monitor: &mut Monitor<'_>,
    ) -> Result<Ended, ContainerError> {
        let docker = self.engine.docker();
        let id = self.create_container(config).await?;
        let refused = |step, e| ContainerError::engine(step, &self.engine, config, e);
        let remove = || async {
            let options = RemoveContainerOptionsBuilder::default().force(true).build();
            let _ = docker.remove_container(&id, Some(options)).await;
        };
        // Attach (output and the stdin lifeline), wait and watch for OOM before starting, so
        // nothing the container does is missed even if it ends at once.
        let attach_options = AttachContainerOptionsBuilder::default()
            .stdin(true)
            .stdout(true)
            .stderr(true)
            .stream(true)
            .build();
        let attached = match docker.attach_container(&id, Some(attach_options)).await {
            Ok(a) => a,
            Err(e) => {
                remove().await;
                return Err(refused("attaching to", e));
            }
        };
        let mut output = attached.output;
        let _lifeline = attached.input;
        let until_removed = WaitContainerOptionsBuilder::default()
            .condition("removed")
            .build();
        let mut wait = Box::pin(docker.wait_container(&id, Some(until_removed)));
        let filters = HashMap::from([("container", vec![id.as_str()]), ("event", vec!["oom"])]);
        let mut events = Box::pin(docker.events(Some(
            EventsOptionsBuilder::default().filters(&filters).build(),
        )));
        let started = match docker.start_container(&id, None).await {
            Ok(()) => self.check_memory_limit(config, &id).await,
            Err(e) => Err(refused("starting", e)),
        };
        if let Err(e) = started {
            remove().await;
            return Err(e);
        }

        let mut stderr_partial = String::new();
        // Watched until the OOM event or the stream's end (an engine gone ends it at once,
        // and a stream at its end would be polled again and again).
        let mut watch_events = true;
        let mut oom_event = false;
        let mut exit: Option<i64> = None;
        let mut ended_by_harness = None;
        let mut tick = tokio::time::interval(Duration::from_millis(50));
        let mut removed_at: Option<Instant> = None;
        let mut output_done = false;
        while exit.is_none() || !output_done {
            tokio::select! {
                chunk = output.next(), if !output_done => match chunk {
                    Some(Ok(LogOutput::StdOut { message })) => monitor.stdout(&String::from_utf8_lossy(&message)),
                    Some(Ok(LogOutput::StdErr { message })) => {
                        stderr_partial.push_str(&String::from_utf8_lossy(&message));
                        while let Some(pos) = stderr_partial.find('\n') {
                            let line: String = stderr_partial.drain(..=pos).collect();
                            monitor.stderr_line(line.trim_end());
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => output_done = true,
                },
                waited = wait.next(), if exit.is_none() => {
                    exit = Some(match waited {
                        Some(Ok(r)) => r.status_code,
                        Some(Err(bollard::errors::Error::DockerContainerWaitError { code, .. })) => code,
                        _ => -1,
                    });
                }
                event = events.next(), if watch_events => match event {
                    Some(Ok(e)) if e.action.as_deref() == Some("oom") => {
                        (oom_event, watch_events) = (true, false);
                    }
                    Some(_) => {}
                    None => watch_events = false,
                },
                _ = tick.tick() => {
                    if ended_by_harness.is_none() {
                        ended_by_harness = monitor.must_end();
                        if ended_by_harness.is_some() {
                            remove().await;
                            removed_at = Some(Instant::now());
                        }
                    }
                    // An engine that died with the container (a Podman service killed) never
                    // says it ended: the harness does not wait for it past a grace.
                    if removed_at.is_some_and(|at| at.elapsed() > ENGINE_GRACE) {
                        break;
                    }
                }
            }
        }
        if !stderr_partial.trim().is_empty() {
            monitor.stderr_line(stderr_partial.trim_end());
        }
        // Auto-remove has done it; this covers an engine that did not.
        remove().await;
        Ok(Ended::of(exit.unwrap_or(-1), oom_event, ended_by_harness))
    }
}

/// How a container ended.
struct Ended {
    /// Why the harness ended it, if it did.
    by_harness: Option<super::output::HarnessEnd>,
    how: String,
    /// The engine reported an OOM kill in it.
    oom: bool,
}

impl Ended {
    fn of(code: i64, oom: bool, by_harness: Option<super::output::HarnessEnd>) -> Ended {
        let how = match (code, oom) {
            (_, true) => format!("container was OOM-killed (exit code {code})"),
            (137, _) => "container was killed (exit code 137)".to_string(),
            _ => format!("container exited with code {code}"),
        };
        Ended {
            by_harness,
            how,
            oom,
        }
    }
}

impl Runtime for Docker {
    fn launch(&self, config: &CellConfig, progress: &mut dyn FnMut(CellMessage)) -> CellRecord {
        let mut monitor = Monitor::new(config, progress);
        let result = self
            .engine
            .block_on(self.run_container(config, &mut monitor));
        let mut record = match result {
            // Named by engine and OCI runtime: Docker's own words for a runtime's refusal do not
            // say which runtime refused.
            Err(message) => CellRecord::failed_to_run(
                config.clone(),
                Status::Error,
                format!(
                    "{} (OCI runtime {}): {message}",
                    self.engine.kind, self.engine.info.oci_runtime
                ),
            ),
            Ok(ended) => {
                let mut record = monitor.into_record(config, ended.by_harness, &ended.how);
                // A main that was itself OOM-killed printed no record; the engine's event says why.
                record.main_killed_by_oom(ended.oom, &format!("the {}", ended.how));
                record
            }
        };
        // With --ipc host the container's /dev/shm is this machine's: what its cell left there
        // when it was killed (Ctrl-C, the watchdog, a crash) goes now that it is gone, as a host
        // cell's does, not at the next run's start.
        if config.knobs.ipc == IpcMode::Host {
            super::child::sweep_left_segments(&mut record);
        }
        record
    }
}

/// Whether the engine still has a container of `token`'s run (true when it cannot say).
pub fn has_containers_of(engine: &Engine, token: &Token) -> bool {
    let filters = HashMap::from([("label", vec![format!("{LABEL_OWNER}={token}")])]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    engine
        .block_on(engine.docker().list_containers(Some(options)))
        .map_or(true, |found| !found.is_empty())
}

/// Removes containers left by shmbench runs on this host whose harness is provably dead (its run
/// token's owner record is unlocked; e.g. SIGKILLed before its cell's lifeline closed). A
/// container without a token, or whose run's record is gone, is not provably ours: it stays.
/// Returns their names.
pub fn sweep_dead_owners(engine: &Engine) -> Vec<String> {
    let host = hostname();
    let filters = HashMap::from([("label", vec![format!("{LABEL_HOST}={host}")])]);
    let options = ListContainersOptionsBuilder::default()
        .all(true)
        .filters(&filters)
        .build();
    let Ok(containers) = engine.block_on(engine.docker().list_containers(Some(options))) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for c in containers {
        let owner = c
            .labels
            .as_ref()
            .and_then(|l| l.get(LABEL_OWNER))
            .and_then(|t| Token::parse(t));
        let Some(_dead) = owner.as_ref().and_then(run_owner::dead_run) else {
            continue;
        };
        if let Some(id) = &c.id {
            let options = RemoveContainerOptionsBuilder::default().force(true).build();
            if engine
                .block_on(engine.docker().remove_container(id, Some(options)))
                .is_ok()
            {
                removed.push(
                    c.names
                        .and_then(|n| n.first().cloned())
                        .unwrap_or_else(|| id.clone()),
                );
            }
        }
    }
    removed
}
