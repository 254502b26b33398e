//! `shmbench fidelity`: every cell twice, with the emulated loader and with real torch (one run
//! per Python given), interleaved and repeated like any matrix, so the emulation is measured
//! against the real DataLoader on this machine. The comparison is `analysis::fidelity`.

use std::path::Path;

use anyhow::{anyhow, bail, Result};

use super::event::Event;
use super::runner::{self, Outcome};
use cell::torch;
use model::config::CellConfig;
use model::knobs::{Loader, Strategy};
use model::repeat::Repeat;

/// The cells of a fidelity run: for each Python, each cell as a torch cell and as its emulated
/// twin with the allocation profile of that torch, pinning only where torch would (it ignores
/// pin_memory without an accelerator). Twins shared by several Pythons run once.
pub fn pairs(
    cells: &[CellConfig],
    pythons: &[String],
    observe: &mut dyn FnMut(Event),
) -> Result<Vec<CellConfig>> {
    if pythons.is_empty() {
        bail!(
            "fidelity needs a Python with torch: pass --python PATH ({})",
            torch::INSTALL_HINT
        );
    }
    let mut planned: Vec<CellConfig> = Vec::new();
    for python in pythons {
        let found = torch::probe(python).map_err(|e| anyhow!("fidelity: {e}"))?;
        observe(Event::Note(format!(
            "torch {} ({python}): emulated twins use the {} profile{}",
            found.version,
            found.profile(),
            if found.accelerator {
                ""
            } else {
                "; no accelerator, so pin_memory cells are compared unpinned"
            }
        )));
        for cell in cells {
            if matches!(cell.knobs.strategy, Strategy::Memfd | Strategy::Disk) {
                bail!(
                    "cell '{}': {} is not a torch strategy, so it has no real twin; fidelity compares file_descriptor and file_system cells",
                    cell.cell,
                    cell.knobs.strategy
                );
            }
            let mut emulated = cell.clone();
            emulated.knobs.loader = Loader::Emulated;
            emulated.knobs.torch = found.profile();
            emulated.knobs.pin_memory = cell.knobs.pin_memory && found.accelerator;
            let mut real = cell.clone();
            real.knobs.loader = Loader::Torch;
            real.knobs.python = python.clone();
            real.knobs.torch = found.profile();
            // main-us stands in for torch's own main-loop cost: the real twin has the real one.
            real.knobs.main_us = 0;
            if !planned.contains(&emulated) {
                planned.push(emulated);
            }
            planned.push(real);
        }
    }
    Ok(planned)
}

/// Runs the pairs, `repeat` times interleaved, into `out`.
pub fn run(
    cells: &[CellConfig],
    pythons: &[String],
    out: &Path,
    repeat: u32,
    observe: &mut dyn FnMut(Event),
) -> Result<Outcome> {
    let planned = pairs(cells, pythons, observe)?;
    runner::run(
        &planned,
        out,
        Repeat::Fixed(repeat),
        runner::Calibrate::First,
        observe,
    )
}
