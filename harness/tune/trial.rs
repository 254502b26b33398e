//! A trial: the loader with one setting run once as a real cell under a /dev/shm of a given
//! size (a namespace cell: its own tmpfs of exactly that size), through the orchestration's
//! [`Launcher`] (the runtimes; a fake in tests).

use anyhow::{anyhow, bail, Result};

use cell::torch::{self, dataset::Sample};

use model::config::CellConfig;
use model::knobs::{Loader, RuntimeKind};
use model::record::Status;
use model::size::ByteSize;
use orchestrate::launcher::Launcher;
use runtime::Runtimes;

use super::candidate::{Bounds, Run};

/// What a torch tune's Python and Dataset are.
#[derive(Default)]
pub struct TorchLoader {
    /// A user's Dataset's first sample (`dataset`).
    pub sample: Option<Sample>,
    /// Whether torch sees an accelerator (without one it ignores pin_memory).
    pub accelerator: bool,
}

/// Makes `base` stand for what a torch tune loads, for the model and the words: the torch
/// profile of its Python and, with a user's Dataset (`dataset`), one sample read from it as the
/// model's image (its bytes as a flat u8 shape) and the tensors it holds as dataset-bytes.
pub fn torch_loader(base: &mut CellConfig) -> Result<Option<TorchLoader>> {
    if base.knobs.loader != Loader::Torch {
        return Ok(None);
    }
    let found = torch::probe(&base.knobs.python).map_err(|e| anyhow!("--loader torch: {e}"))?;
    base.knobs.torch = found.profile();
    let mut loader = TorchLoader {
        sample: None,
        accelerator: found.accelerator,
    };
    if base.knobs.dataset.is_some() {
        let sample = torch::dataset::probe(base).map_err(|e| anyhow!("--dataset: {e}"))?;
        if sample.sample_bytes == 0 {
            bail!("--dataset: its first sample holds no tensor bytes ({}): nothing would go through /dev/shm", sample.shapes);
        }
        sample.describe(&mut base.knobs);
        loader.sample = Some(sample);
    }
    Ok(Some(loader))
}

/// The runtimes a tune of `base` launches its cells with (a namespace cell each).
pub fn runtimes(base: &CellConfig) -> Result<Runtimes> {
    Runtimes::for_cells(std::slice::from_ref(&in_namespace(base)))
}

fn in_namespace(config: &CellConfig) -> CellConfig {
    let mut config = config.clone();
    config.knobs.runtime = RuntimeKind::Namespace;
    config
}

/// `config` as a trial in a /dev/shm of `shm_bytes` runs it: a namespace cell of that size;
/// where its memory is limited (`--memory`), a run below the budget, at the margin, has the
/// margin of the memory too.
pub fn cell(config: &CellConfig, shm_bytes: u64, bounds: &Bounds) -> CellConfig {
    let mut cell = in_namespace(config);
    cell.knobs.shm_size = Some(ByteSize(shm_bytes));
    if shm_bytes < bounds.shm_bytes && cell.knobs.memory.is_some() {
        cell.knobs.memory = bounds.margin_memory_bytes().map(ByteSize);
    }
    cell
}

/// Runs `config` once under a /dev/shm of `shm_bytes` (the budget's or its margin's). An interrupt, or a cell that could not
/// run at all (an error of the harness, not an ending of the loader), ends the search: no
/// setting is rejected for what is not its own.
pub fn run(
    launcher: &dyn Launcher,
    config: &CellConfig,
    shm_bytes: u64,
    bounds: &Bounds,
) -> Result<Run> {
    if let Some(signal) = launcher.interrupted() {
        bail!("interrupted by signal {signal}: the search stopped");
    }
    let cell = cell(config, shm_bytes, bounds);
    let began = std::time::Instant::now();
    let record = launcher.launch(&cell, &mut |_| {});
    let seconds = began.elapsed().as_secs_f64();
    if let Some(signal) = launcher.interrupted() {
        bail!("interrupted by signal {signal}: the search stopped");
    }
    if record.status == Status::Error {
        bail!(
            "a trial of {} could not run: {}",
            config.cell,
            record.message.trim()
        );
    }
    Ok(Run {
        shm_bytes,
        status: record.status,
        crash_step: record.failure.as_ref().map(|f| f.crash_step),
        img_per_s: record.metrics.img_per_s,
        seconds,
        cause: (record.explanation.as_ref())
            .filter(|_| !record.status.is_pass())
            .map(|e| e.cause.to_string()),
        memory_bytes: cell.knobs.memory.map(|m| m.bytes()),
    })
}
