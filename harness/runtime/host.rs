//! Runtime `host`: the cell runs as is and uses this machine's /dev/shm (the `--ipc=host` row).

use super::child;
use super::launch::{Report, Runtime};
use crate::model::config::CellConfig;
use crate::model::record::CellRecord;

pub struct Host;

impl Runtime for Host {
    fn name(&self) -> &'static str {
        "host"
    }

    fn launch(&self, config: &CellConfig, progress: &mut dyn FnMut(Report)) -> CellRecord {
        child::run(config, None, progress)
    }
}
