//! `shmbench fidelity`: every cell twice, with the emulated loader and with real torch (one run
//! per Python given), interleaved and repeated like any matrix, so the emulation is measured
//! against the real DataLoader on this machine. The comparison is `pairs`.

use std::path::Path;

use anyhow::{anyhow, bail, Result};

use cell::torch::{self, Found};
use model::config::CellConfig;
use model::knobs::{Loader, Strategy};
use model::repeat::Repeat;
use orchestrate::event::Event;
use orchestrate::runner::{self, Outcome};

/// The cells of a fidelity run: for each Python, each cell as a torch cell and as its emulated
/// twin with the allocation profile of that torch, pinning only where torch would (it ignores
/// pin_memory without an accelerator). Twins shared by several Pythons run once.
pub(crate) fn pairs(
    cells: &[CellConfig],
    pythons: &[String],
    observe: &mut dyn FnMut(Event),
) -> Result<Vec<CellConfig>> {
    pairs_with(
        cells,
        pythons,
        &|python| torch::probe(python).map_err(|e| anyhow!("fidelity: {e}")),
        observe,
    )
}

/// As [`pairs`], each Python's torch found by `probe`.
fn pairs_with(
    cells: &[CellConfig],
    pythons: &[String],
    probe: &dyn Fn(&str) -> Result<Found>,
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
        let found = probe(python)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    use model::knobs::TorchProfile;

    /// Two Pythons: torch 2.9 and 2.15, neither with an accelerator.
    fn probe(python: &str) -> Result<Found> {
        Ok(Found {
            version: if python.contains("old") {
                "2.9.1"
            } else {
                "2.15.0"
            }
            .into(),
            accelerator: false,
        })
    }

    fn names(planned: &[CellConfig]) -> Vec<(String, Loader, TorchProfile)> {
        planned
            .iter()
            .map(|c| (c.cell.clone(), c.knobs.loader, c.knobs.torch))
            .collect()
    }

    #[test]
    fn each_cell_runs_as_real_torch_per_python_beside_one_emulated_twin_per_profile() {
        let mut pinned = CellConfig::with_defaults("pinned");
        pinned.knobs.pin_memory = true;
        pinned.knobs.main_us = 300;
        let pythons = [
            "old/python".to_string(),
            "new/python".to_string(),
            "new2/python".to_string(),
        ];
        let mut notes = Vec::new();
        let planned = pairs_with(&[pinned], &pythons, &probe, &mut |e| {
            if let Event::Note(n) = e {
                notes.push(n)
            }
        })
        .unwrap();
        use Loader::{Emulated, Torch};
        use TorchProfile::{Legacy, Modern};
        let p = || "pinned".to_string();
        assert_eq!(
            names(&planned),
            [
                (p(), Emulated, Legacy),
                (p(), Torch, Legacy),
                (p(), Emulated, Modern),
                (p(), Torch, Modern),
                (p(), Torch, Modern)
            ],
            "the modern twin is shared by the two 2.15 Pythons"
        );
        // Without an accelerator torch ignores pin_memory: the twin is compared unpinned.
        assert!(!planned[0].knobs.pin_memory && planned[1].knobs.pin_memory);
        // The real loader has its own main-loop cost; the emulated keeps the stand-in.
        assert_eq!(
            (planned[0].knobs.main_us, planned[1].knobs.main_us),
            (300, 0)
        );
        assert_eq!(planned[1].knobs.python, "old/python");
        assert_eq!(notes.len(), 3, "one note per Python");
    }

    #[test]
    fn a_strategy_torch_has_not_and_no_python_are_refused_with_why() {
        let mut memfd = CellConfig::with_defaults("memfd");
        memfd.knobs.strategy = Strategy::Memfd;
        let refused = pairs_with(&[memfd], &["p".into()], &probe, &mut |_| {}).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("memfd is not a torch strategy"),
            "{refused}"
        );
        let none =
            pairs_with(&[CellConfig::with_defaults("a")], &[], &probe, &mut |_| {}).unwrap_err();
        assert!(none.to_string().contains("--python"), "{none}");
        let broken = pairs_with(
            &[CellConfig::with_defaults("a")],
            &["p".into()],
            &|_| Err(anyhow!("no torch")),
            &mut |_| {},
        );
        assert!(broken.is_err());
    }
}
