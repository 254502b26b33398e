//! Runtime `host`: the cell runs as is and uses this machine's /dev/shm (the `--ipc=host` row).

use super::child::{self, Isolation};
use super::{Progress, Runtime};
use crate::config::CellConfig;
use crate::record::CellRecord;

pub struct Host;

impl Runtime for Host {
    fn name(&self) -> &'static str {
        "host"
    }

    fn launch(&self, config: &CellConfig, progress: &mut dyn FnMut(Progress)) -> CellRecord {
        child::run(config, Isolation::None, progress)
    }
}
