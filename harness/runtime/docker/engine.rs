//! A container engine's connection: where it is (Docker's `DOCKER_HOST` or local socket, or a
//! Podman service's socket), whether it answers, what it is (name, versions, cgroup and storage
//! drivers, the OCI runtimes it knows, for the fingerprint), and a small tokio runtime to drive
//! bollard's async API from the harness's synchronous loop. Docker and Podman speak the same
//! API: one `Engine` serves both.

use std::future::Future;
use std::time::Duration;

use anyhow::{anyhow, Result};
use bollard::Docker;

use model::knobs::EngineKind;
pub use sys::fingerprint::EngineInfo;

/// How long a ping may take before the engine counts as not answering.
const PING_TIMEOUT: Duration = Duration::from_secs(3);

pub struct Engine {
    runtime: tokio::runtime::Runtime,
    docker: Docker,
    pub info: EngineInfo,
    pub kind: EngineKind,
    /// The OCI runtimes the engine has registered (name, binary as registered) and its default;
    /// empty for Podman, whose compatible API does not list them.
    pub oci_runtimes: Vec<(String, String)>,
    pub default_oci_runtime: String,
}

/// Where the harness looks for Docker's engine, for messages.
pub fn address() -> String {
    std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".to_string())
}

fn explain(e: &bollard::errors::Error, kind: EngineKind, addr: &str) -> String {
    let text = e.to_string();
    match kind {
        _ if text.contains("ermission denied") => format!(
            "permission denied on {addr}: run as root or add your user to the {kind} group (then log in again)"
        ),
        EngineKind::Docker => format!(
            "no Docker engine answered at {addr} ({text}). Start one (`sudo systemctl start docker`, or `sudo dockerd &`), set DOCKER_HOST to where it listens, or use --runtime namespace"
        ),
        EngineKind::Podman => format!("no Podman service answered at {addr} ({text})"),
    }
}

impl Engine {
    /// Connects to Docker's engine, negotiates the API version and reads its description.
    pub fn connect() -> Result<Engine> {
        let addr = address();
        let docker = Docker::connect_with_defaults()
            .map_err(|e| anyhow!("{}", explain(&e, EngineKind::Docker, &addr)))?;
        Engine::over(docker, EngineKind::Docker, &addr)
    }

    /// Connects to the engine of `kind` listening on the unix socket `path`.
    pub fn connect_unix(kind: EngineKind, path: &std::path::Path) -> Result<Engine> {
        let addr = format!("unix://{}", path.display());
        let docker = Docker::connect_with_unix(&addr, 120, bollard::API_DEFAULT_VERSION)
            .map_err(|e| anyhow!("{}", explain(&e, kind, &addr)))?;
        Engine::over(docker, kind, &addr)
    }

    fn over(docker: Docker, kind: EngineKind, addr: &str) -> Result<Engine> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| anyhow!("cannot start the async runtime for {kind}: {e}"))?;
        let explain = |e: bollard::errors::Error| anyhow!("{}", explain(&e, kind, addr));
        let (docker, version, system) = runtime.block_on(async {
            match tokio::time::timeout(PING_TIMEOUT, docker.ping()).await {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(explain(e)),
                Err(_) => {
                    return Err(anyhow!(
                        "the {kind} engine at {addr} did not answer within {} s",
                        PING_TIMEOUT.as_secs()
                    ))
                }
            }
            let docker = docker.negotiate_version().await.map_err(explain)?;
            let version = docker.version().await.map_err(explain)?;
            let system = docker.info().await.map_err(explain)?;
            Ok((docker, version, system))
        })?;
        let mut oci_runtimes: Vec<(String, String)> = system
            .runtimes
            .unwrap_or_default()
            .into_iter()
            .map(|(name, r)| (name.clone(), r.path.unwrap_or(name)))
            .collect();
        oci_runtimes.sort();
        // Rootless Docker lists `name=rootless`; Podman's compatible API does not (4.3), and
        // `podman::connect` says it from whose service it is.
        let rootless = system
            .security_options
            .iter()
            .flatten()
            .any(|o| o.split(',').any(|kv| kv == "name=rootless"));
        let info = EngineInfo {
            name: kind.to_string(),
            version: version.version.unwrap_or_default(),
            api_version: version.api_version.unwrap_or_default(),
            cgroup_version: system
                .cgroup_version
                .map(|v| format!("v{v}"))
                .unwrap_or_default(),
            cgroup_driver: system
                .cgroup_driver
                .map(|d| d.to_string())
                .unwrap_or_default(),
            storage_driver: system.driver.unwrap_or_default(),
            oci_runtime: String::new(),
            rootless,
        };
        Ok(Engine {
            runtime,
            docker,
            info,
            kind,
            oci_runtimes,
            default_oci_runtime: system.default_runtime.unwrap_or_default(),
        })
    }

    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }
}

/// Whether an engine may be there: false only when DOCKER_HOST is unset or a unix socket, and
/// that socket does not exist (then no container of any run can exist either).
pub fn socket_present() -> bool {
    match address().strip_prefix("unix://") {
        Some(path) => std::path::Path::new(path).exists(),
        None => true,
    }
}

/// Whether an engine answers (for `runtime = auto`).
pub fn reachable() -> bool {
    Engine::connect().is_ok()
}
