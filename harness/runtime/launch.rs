//! The one seam every runtime implements: launch a resolved cell and return its record.

use model::config::CellConfig;
use model::record::CellRecord;

pub use cell::protocol::{CellMessage, Output, Progress, Stream};

/// One way of launching a cell.
pub trait Runtime {
    /// Runs the cell to completion (or failure) and returns its record; never panics on a cell
    /// that crashes or cannot start: that is a record with a non-pass status.
    fn launch(&self, config: &CellConfig, progress: &mut dyn FnMut(CellMessage)) -> CellRecord;
}
