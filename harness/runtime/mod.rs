//! Runtimes: how a cell is launched. Every runtime runs the same `shmbench cell <json>` command
//! and reads back the same one-line JSON record; they differ only in the isolation they set up
//! around it. A new runtime is a new file here implementing [`Runtime`].

mod child;
pub mod docker;
pub mod engine;
pub mod host;
pub mod image;
mod memory_cgroup;
pub mod namespace;
mod output;

use crate::config::{CellConfig, RuntimeKind};
use crate::record::CellRecord;

pub use child::output_in_namespace;
pub use output::Progress;

/// One way of launching a cell.
pub trait Runtime {
    /// The name recorded in the CSV `runtime` column.
    fn name(&self) -> &'static str;
    /// Runs the cell to completion (or failure) and returns its record; never panics on a cell
    /// that crashes or cannot start: that is a record with a non-pass status.
    fn launch(&self, config: &CellConfig, progress: &mut dyn FnMut(Progress)) -> CellRecord;
}

/// The runtimes one run uses; Docker is connected (and its image built) only when a cell needs it.
pub struct Runtimes {
    host: host::Host,
    namespace: namespace::Namespace,
    pub docker: Option<docker::Docker>,
}

impl Runtimes {
    /// Prepares what `cells` need and fails up front, with what to do, when a runtime they ask
    /// for cannot work here (no permission for namespaces, no Docker engine).
    pub fn for_cells(cells: &[CellConfig]) -> anyhow::Result<Runtimes> {
        let needs = |kind| cells.iter().any(|c| c.runtime == kind);
        if needs(RuntimeKind::Namespace) {
            namespace::check_permission()?;
        }
        let docker = if needs(RuntimeKind::Docker) {
            Some(docker::Docker::connect().map_err(|e| anyhow::anyhow!("runtime docker: {e:#}"))?)
        } else {
            None
        };
        Ok(Runtimes {
            host: host::Host,
            namespace: namespace::Namespace,
            docker,
        })
    }

    /// The runtime a resolved config asks for.
    pub fn get(&self, config: &CellConfig) -> &dyn Runtime {
        match (config.runtime, &self.docker) {
            (RuntimeKind::Namespace, _) => &self.namespace,
            (RuntimeKind::Docker, Some(docker)) => docker,
            (RuntimeKind::Docker, None) => {
                unreachable!("for_cells connects Docker for docker cells")
            }
            (RuntimeKind::Host | RuntimeKind::Auto, _) => &self.host,
        }
    }
}
