//! Runtime `host`: the cell runs as is and uses this machine's /dev/shm (the `--ipc=host` row).

use super::child;
use super::launch::{CellMessage, Runtime};
use model::config::CellConfig;
use model::record::CellRecord;

pub struct Host;

impl Runtime for Host {
    fn launch(&self, config: &CellConfig, progress: &mut dyn FnMut(CellMessage)) -> CellRecord {
        child::run(config, None, progress)
    }
}
