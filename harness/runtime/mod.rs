//! Runtimes: how a cell is launched. Every runtime runs the same `shmbench cell <json>` command
//! and reads back the same one-line JSON record; they differ only in the isolation they set up
//! around it. A new runtime is a new file here implementing [`Runtime`].

mod child;
mod output;
pub mod host;
pub mod namespace;

use crate::config::{CellConfig, RuntimeKind};
use crate::record::CellRecord;

pub use output::Progress;

/// One way of launching a cell.
pub trait Runtime {
    /// The name recorded in the CSV `runtime` column.
    fn name(&self) -> &'static str;
    /// Runs the cell to completion (or failure) and returns its record; never panics on a cell
    /// that crashes or cannot start: that is a record with a non-pass status.
    fn launch(&self, config: &CellConfig, progress: &mut dyn FnMut(Progress)) -> CellRecord;
}

/// The runtime a resolved config asks for.
pub fn for_config(config: &CellConfig) -> Box<dyn Runtime> {
    match config.runtime {
        RuntimeKind::Namespace => Box::new(namespace::Namespace),
        RuntimeKind::Host | RuntimeKind::Auto => Box::new(host::Host),
    }
}
