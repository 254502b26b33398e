//! The Docker engine connection: where it is (`DOCKER_HOST` or the local socket), whether it
//! answers, what it is (versions, cgroup and storage drivers for the fingerprint), and a small
//! tokio runtime to drive bollard's async API from the harness's synchronous loop.

use std::future::Future;
use std::time::Duration;

use anyhow::{anyhow, Result};
use bollard::Docker;

pub use sys::fingerprint::EngineInfo;

/// How long a ping may take before the engine counts as not answering.
const PING_TIMEOUT: Duration = Duration::from_secs(3);

pub struct Engine {
    runtime: tokio::runtime::Runtime,
    docker: Docker,
    pub info: EngineInfo,
}

/// Where the harness looks for the engine, for messages.
pub fn address() -> String {
    std::env::var("DOCKER_HOST").unwrap_or_else(|_| "unix:///var/run/docker.sock".to_string())
}

fn explain(e: &bollard::errors::Error) -> String {
    let text = e.to_string();
    let addr = address();
    if text.contains("ermission denied") {
        format!("permission denied on {addr}: run as root or add your user to the docker group (then log in again)")
    } else {
        format!(
            "no Docker engine answered at {addr} ({text}). Start one (`sudo systemctl start docker`, or `sudo dockerd &`), set DOCKER_HOST to where it listens, or use --runtime namespace"
        )
    }
}

impl Engine {
    /// Connects, negotiates the API version and reads the engine's description.
    pub fn connect() -> Result<Engine> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| anyhow!("cannot start the async runtime for Docker: {e}"))?;
        let docker = Docker::connect_with_defaults().map_err(|e| anyhow!("{}", explain(&e)))?;
        let (docker, info) = runtime.block_on(async {
            let ping = tokio::time::timeout(PING_TIMEOUT, docker.ping()).await;
            match ping {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => return Err(anyhow!("{}", explain(&e))),
                Err(_) => {
                    return Err(anyhow!(
                        "the Docker engine at {} did not answer within {} s",
                        address(),
                        PING_TIMEOUT.as_secs()
                    ))
                }
            }
            let docker = docker
                .negotiate_version()
                .await
                .map_err(|e| anyhow!("{}", explain(&e)))?;
            let version = docker
                .version()
                .await
                .map_err(|e| anyhow!("{}", explain(&e)))?;
            let system = docker
                .info()
                .await
                .map_err(|e| anyhow!("{}", explain(&e)))?;
            let info = EngineInfo {
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
            };
            Ok((docker, info))
        })?;
        Ok(Engine {
            runtime,
            docker,
            info,
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
