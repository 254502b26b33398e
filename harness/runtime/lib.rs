//! Runtimes: how a cell is launched. Every runtime runs the same `shmbench cell <json>` command
//! and reads back the same one-line JSON record; they differ only in the isolation they set up
//! around it. [`Runtimes`] is the one place that chooses a runtime for a cell. A new runtime is
//! more than a file here: ARCHITECTURE.md's recipe lists every place it touches (its knob value,
//! `auto`'s choice, the doctor, the fixes, the tests' set-up).

mod child;
pub mod docker;
pub mod host;
pub mod launch;
pub mod namespace;
mod output;
mod pid_namespace;
mod privileges;
pub mod scratch;
pub mod vm;

use model::config::CellConfig;
use model::knobs::RuntimeKind;
use model::record::CellRecord;

pub use launch::{CellMessage, Output, Progress, Runtime, Stream};

/// The runtimes one run uses; a container engine is connected (and its image built) only when
/// a cell needs it, once per engine and OCI runtime the cells ask for.
pub struct Runtimes {
    host: host::Host,
    namespace: namespace::Namespace,
    containers: Vec<docker::Docker>,
    vm: vm::Vm,
}

impl Runtimes {
    /// Prepares what `cells` need and fails up front, with what to do, when a runtime they ask
    /// for cannot work here (no permission for namespaces, no engine, an OCI runtime the engine
    /// lacks).
    pub fn for_cells(cells: &[CellConfig]) -> anyhow::Result<Runtimes> {
        let needs = |kind| cells.iter().any(|c| c.knobs.runtime == kind);
        if needs(RuntimeKind::Namespace) {
            namespace::check_permission()?;
        }
        let mut containers: Vec<docker::Docker> = Vec::new();
        for cell in cells
            .iter()
            .filter(|c| c.knobs.runtime == RuntimeKind::Docker)
        {
            if containers.iter().any(|d| d.serves(cell)) {
                continue;
            }
            let (engine, oci) = (cell.knobs.engine, &cell.knobs.oci_runtime);
            let connected = docker::Docker::connect(engine, oci, cells).map_err(|e| {
                anyhow::anyhow!("runtime docker (engine {engine}, oci-runtime {oci}): {e:#}")
            })?;
            containers.push(connected);
        }
        if needs(RuntimeKind::Vm) {
            vm::check_qemu()?;
            // Every kernel fetched (or found) before the first cell, so a bad name fails the
            // run up front, not each of its cells.
            for cell in cells.iter().filter(|c| c.knobs.runtime == RuntimeKind::Vm) {
                vm::kernel::resolve(cell.knobs.kernel.as_deref().unwrap_or_default())?;
            }
        }
        Ok(Runtimes {
            host: host::Host,
            namespace: namespace::Namespace,
            containers,
            vm: vm::Vm::new(),
        })
    }

    /// The container engines this run connected, one per engine and OCI runtime.
    pub fn containers(&self) -> &[docker::Docker] {
        &self.containers
    }

    /// The engine and OCI runtime a container cell runs under (None for other runtimes).
    pub fn container_for(&self, config: &CellConfig) -> Option<&docker::Docker> {
        (config.knobs.runtime == RuntimeKind::Docker)
            .then(|| self.containers.iter().find(|d| d.serves(config)))
            .flatten()
    }

    /// The runtime a resolved config asks for.
    pub fn get(&self, config: &CellConfig) -> &dyn Runtime {
        match config.knobs.runtime {
            RuntimeKind::Namespace => &self.namespace,
            RuntimeKind::Vm => &self.vm,
            RuntimeKind::Docker => self
                .container_for(config)
                .expect("for_cells connects an engine for every container cell"),
            RuntimeKind::Host | RuntimeKind::Auto => &self.host,
        }
    }

    /// Launches `config` in the runtime it asks for: what everything that runs a cell calls.
    pub fn launch(&self, config: &CellConfig, progress: &mut dyn FnMut(CellMessage)) -> CellRecord {
        self.get(config).launch(config, progress)
    }
}

/// shmbench's cache (`$XDG_CACHE_HOME/shmbench`, else `~/.cache/shmbench`): the bundles `--image`
/// mounts, the kernels and initramfs archives VMs boot.
pub fn cache_dir() -> anyhow::Result<std::path::PathBuf> {
    use std::path::PathBuf;
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "neither XDG_CACHE_HOME nor HOME is set: nowhere to keep shmbench's cache"
            )
        })?;
    Ok(cache.join("shmbench"))
}

/// Prepares the runtime one cell needs and runs it (for commands that run a single cell).
pub fn launch_one(
    config: &CellConfig,
    progress: &mut dyn FnMut(CellMessage),
) -> anyhow::Result<CellRecord> {
    Ok(Runtimes::for_cells(std::slice::from_ref(config))?.launch(config, progress))
}
