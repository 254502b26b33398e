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
pub mod vm;

use model::config::CellConfig;
use model::knobs::RuntimeKind;
use model::record::CellRecord;

pub use launch::{CellMessage, Output, Progress, Runtime, Stream};

/// The runtimes one run uses; Docker is connected (and its image built) only when a cell needs it.
pub struct Runtimes {
    host: host::Host,
    namespace: namespace::Namespace,
    pub docker: Option<docker::Docker>,
    vm: vm::Vm,
}

impl Runtimes {
    /// Prepares what `cells` need and fails up front, with what to do, when a runtime they ask
    /// for cannot work here (no permission for namespaces, no Docker engine).
    pub fn for_cells(cells: &[CellConfig]) -> anyhow::Result<Runtimes> {
        let needs = |kind| cells.iter().any(|c| c.knobs.runtime == kind);
        if needs(RuntimeKind::Namespace) {
            namespace::check_permission()?;
        }
        let docker = if needs(RuntimeKind::Docker) {
            Some(
                docker::Docker::connect(cells)
                    .map_err(|e| anyhow::anyhow!("runtime docker: {e:#}"))?,
            )
        } else {
            None
        };
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
            docker,
            vm: vm::Vm::new(),
        })
    }

    /// The runtime a resolved config asks for.
    pub fn get(&self, config: &CellConfig) -> &dyn Runtime {
        match (config.knobs.runtime, &self.docker) {
            (RuntimeKind::Namespace, _) => &self.namespace,
            (RuntimeKind::Vm, _) => &self.vm,
            (RuntimeKind::Docker, Some(docker)) => docker,
            (RuntimeKind::Docker, None) => {
                unreachable!("for_cells connects Docker for docker cells")
            }
            (RuntimeKind::Host | RuntimeKind::Auto, _) => &self.host,
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
