//! From knobs to a cell: defaults filled in, `runtime = auto` decided for this machine (Docker
//! when a Docker setup can have it, otherwise the closest emulation, said in a note), validated; and the loader config a tool that studies one loader (doctor, min-shm, calibrate)
//! works on, with no runtime of its own.

use anyhow::{anyhow, Result};

use model::claim::Claim;
use model::config::CellConfig;
use model::knobs::{ContainerKind, EngineKind, IpcMode, Knobs, RuntimeKind};
use model::size::ByteSize;
use model::validate::KnobError;

/// Docker's documented default /dev/shm size, used when a Docker cell without shm-size runs
/// outside Docker.
pub const DOCKER_DEFAULT_SHM: u64 = 64 << 20;

/// What resolving knobs needs to know about this machine. Whether a Docker engine answers is
/// asked once, and only when a cell could run in Docker.
pub struct Platform {
    pub mem_total: u64,
    docker: std::cell::OnceCell<bool>,
    probe: fn() -> bool,
}

impl Platform {
    pub fn new(mem_total: u64, probe: fn() -> bool) -> Platform {
        Platform {
            mem_total,
            docker: std::cell::OnceCell::new(),
            probe,
        }
    }

    /// A platform with a known answer (tests, dry runs).
    pub fn fixed(mem_total: u64, docker: bool) -> Platform {
        let platform = Platform::new(mem_total, || false);
        let _ = platform.docker.set(docker);
        platform
    }

    pub fn docker_reachable(&self) -> bool {
        *self.docker.get_or_init(self.probe)
    }
}

/// Who a cell is, beside its knobs.
#[derive(Clone, Debug, Default)]
pub struct Identity {
    pub scenario: String,
    pub cell: String,
    pub environment: String,
    pub claim: Option<Claim>,
}

/// Knobs made into a cell: a trait because the knobs are the model's and their resolution, which
/// asks this machine (`Platform`), is the plan's.
pub trait Resolve {
    /// Fills every unset knob with its default and validates the result. `mem_total` is this
    /// machine's memory, to refuse a batch that could never exist.
    fn resolve(&self, id: Identity, platform: &Platform) -> Result<CellConfig, KnobError>;
}

impl Resolve for Knobs {
    fn resolve(&self, id: Identity, platform: &Platform) -> Result<CellConfig, KnobError> {
        let mut config = CellConfig {
            scenario: id.scenario,
            cell: id.cell,
            environment: id.environment,
            runtime_note: None,
            knobs: self.settle(),
            claim: id.claim,
            watch: None,
        };
        if config.knobs.runtime == RuntimeKind::Auto {
            resolve_auto_runtime(&mut config, platform);
        }
        config.validate(platform.mem_total)?;
        Ok(config)
    }
}

/// Picks the runtime for `runtime = auto`: Docker for a Docker setup when an engine answers;
/// otherwise the closest emulation, with a note saying so.
fn resolve_auto_runtime(config: &mut CellConfig, platform: &Platform) {
    // An image, an engine or an OCI runtime is only ever run by a container engine; without
    // one the runtime says so when it starts.
    if config.knobs.image.is_some()
        || config.knobs.engine != EngineKind::Docker
        || config.knobs.oci_runtime.named().is_some()
    {
        config.knobs.runtime = RuntimeKind::Docker;
        return;
    }
    let docker_setup = config.knobs.container == ContainerKind::Docker;
    if docker_setup && platform.docker_reachable() {
        config.knobs.runtime = RuntimeKind::Docker;
        return;
    }
    let why = "no Docker engine answered";
    if config.knobs.ipc == IpcMode::Host {
        config.knobs.runtime = RuntimeKind::Host;
        if docker_setup {
            config.runtime_note = Some(format!(
                "{why}: ran on this machine's /dev/shm, as --ipc=host gives"
            ));
        }
    } else if config.knobs.shm_size.is_some() || docker_setup {
        config.knobs.runtime = RuntimeKind::Namespace;
        if docker_setup {
            let note = if config.knobs.shm_size.is_none() {
                config.knobs.shm_size = Some(ByteSize(DOCKER_DEFAULT_SHM));
                "ran in a mount namespace with Docker's documented default /dev/shm of 64 MiB"
            } else {
                "ran in a mount namespace with a tmpfs of the same size on /dev/shm"
            };
            config.runtime_note = Some(format!("{why}: {note}"));
        }
    } else {
        config.knobs.runtime = RuntimeKind::Host;
    }
}

/// The loader config a tool command (doctor, min-shm, calibrate) works on: its flags on this
/// machine, with no runtime of its own (the tool decides where, if anywhere, cells run).
pub fn tool_config(name: &str, mut knobs: Knobs, platform: &Platform) -> Result<CellConfig> {
    knobs.runtime = Some(RuntimeKind::Host);
    knobs.shm_size = None;
    let id = Identity {
        scenario: name.into(),
        cell: name.into(),
        environment: name.into(),
        claim: None,
    };
    knobs.resolve(id, platform).map_err(|e| anyhow!("--{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::knobs::{ContainerKind, EngineKind, IpcMode, RuntimeKind};
    use model::size::ByteSize;
    use model::validate::KnobError;

    fn resolve(k: Knobs) -> Result<CellConfig, KnobError> {
        k.resolve(Identity::default(), &Platform::fixed(24 << 30, false))
    }

    #[test]
    fn defaults_are_the_seed_setup() {
        let c = resolve(Knobs::default()).unwrap();
        assert_eq!(c.batch_bytes(), 77_070_336);
        assert_eq!(c.max_outstanding(), 16);
        assert_eq!(c.knobs.runtime, RuntimeKind::Host);
        assert_eq!(c.knobs.strategy.to_string(), "file_descriptor");
    }

    #[test]
    fn auto_runtime_follows_shm_size() {
        let k = Knobs {
            shm_size: Some(ByteSize(64 << 20)),
            ..Knobs::default()
        };
        assert_eq!(resolve(k).unwrap().knobs.runtime, RuntimeKind::Namespace);
    }

    #[test]
    fn an_engine_or_oci_runtime_means_a_container_and_no_other_runtime_takes_one() {
        let with = |engine, oci: &str, runtime| Knobs {
            engine: Some(engine),
            oci_runtime: Some(oci.parse().unwrap()),
            runtime: Some(runtime),
            shm_size: Some(ByteSize(64 << 20)),
            ..Knobs::default()
        };
        // Without an engine answering: asked for by name, a container it is.
        for (engine, oci) in [
            (EngineKind::Podman, "default"),
            (EngineKind::Docker, "runsc"),
        ] {
            let c = resolve(with(engine, oci, RuntimeKind::Auto)).unwrap();
            assert_eq!(c.knobs.runtime, RuntimeKind::Docker);
        }
        let refused = resolve(with(EngineKind::Docker, "runsc", RuntimeKind::Namespace));
        assert!(refused.unwrap_err().to_string().contains("oci-runtime"));
        let refused = resolve(with(EngineKind::Podman, "default", RuntimeKind::Host));
        assert!(refused.unwrap_err().to_string().contains("engine"));
        // A name, never a path or flags.
        for bad in ["/usr/bin/runsc", "runsc --debug", "", "Runc"] {
            assert!(bad.parse::<model::knobs::OciRuntime>().is_err(), "{bad}");
        }
    }

    #[test]
    fn docker_setups_fall_back_to_emulation_and_say_so() {
        let docker = |ipc, shm: Option<u64>, reachable| {
            let k = Knobs {
                container: Some(ContainerKind::Docker),
                ipc: Some(ipc),
                shm_size: shm.map(ByteSize),
                ..Knobs::default()
            };
            k.resolve(Identity::default(), &Platform::fixed(24 << 30, reachable))
                .unwrap()
        };
        assert_eq!(
            docker(IpcMode::Private, None, true).knobs.runtime,
            RuntimeKind::Docker
        );
        let fallback = docker(IpcMode::Private, None, false);
        assert_eq!(fallback.knobs.runtime, RuntimeKind::Namespace);
        assert_eq!(fallback.knobs.shm_size, Some(ByteSize(64 << 20)));
        assert!(fallback
            .runtime_note
            .unwrap()
            .contains("no Docker engine answered"));
        assert_eq!(
            docker(IpcMode::Host, None, false).knobs.runtime,
            RuntimeKind::Host
        );
        assert_eq!(
            docker(IpcMode::Private, Some(2 << 30), false)
                .knobs
                .shm_size,
            Some(ByteSize(2 << 30))
        );
    }

    #[test]
    fn bad_values_name_their_key() {
        let zero = Knobs {
            workers: Some(0),
            ..Knobs::default()
        };
        assert_eq!(resolve(zero).unwrap_err().key, "workers");
        let huge = Knobs {
            batch: Some(1_000_000),
            ..Knobs::default()
        };
        assert_eq!(resolve(huge).unwrap_err().key, "batch");
        let host_sized = Knobs {
            runtime: Some(RuntimeKind::Host),
            shm_size: Some(ByteSize(1 << 30)),
            ..Knobs::default()
        };
        assert_eq!(resolve(host_sized).unwrap_err().key, "shm-size");
        let tiny = Knobs {
            shm_size: Some(ByteSize(10)),
            ..Knobs::default()
        };
        assert_eq!(resolve(tiny).unwrap_err().key, "shm-size");
    }
}
