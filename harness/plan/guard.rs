//! Planning rules applied before anything runs: loaders whose predicted /dev/shm peak exceeds
//! this machine's memory are refused (tmpfs pages are RAM), and the tools that study one loader
//! (doctor, min-shm, calibrate) get its config with no runtime of its own.

use anyhow::{anyhow, bail, Result};

use super::predict;
use super::resolve::{Identity, Platform};
use crate::resolve::Resolve;
use model::config::CellConfig;
use model::knobs::{Knobs, RuntimeKind};
use model::size::ByteSize;

/// Refuses cells whose predicted /dev/shm peak is more than `mem_total`: filling those tmpfs
/// pages would push the whole machine into swap or the OOM killer.
pub fn refuse_oversized(cells: &[CellConfig], mem_total: u64) -> Result<()> {
    for c in cells {
        let batches = predict::peak_batches(c);
        let peak = predict::peak_bytes(c);
        let held = c.knobs.dataset_bytes;
        if mem_total > 0 && held > mem_total {
            bail!(
                "cell '{}': a Dataset holding {} of tensors is more than this machine's {} of memory (its main allocates them whatever the start method): refused (use --force to run it anyway)",
                c.cell,
                ByteSize(held),
                ByteSize(mem_total)
            );
        }
        if mem_total > 0 && peak > mem_total {
            bail!(
                "cell '{}' would need about {} of shared memory at its peak ({batches} batches of {}), more than this machine's {}: refused (use --force to run it anyway)",
                c.cell,
                ByteSize(peak),
                ByteSize(c.batch_bytes()),
                ByteSize(mem_total)
            );
        }
    }
    Ok(())
}

/// The loader config a tool command (doctor, min-shm, calibrate) works on: its flags on this
/// machine, with no runtime of its own (the tool decides where, if anywhere, cells run).
pub fn tool_config(name: &str, mut knobs: Knobs, platform: &Platform) -> Result<CellConfig> {
    knobs.runtime = Some(RuntimeKind::Host);
    knobs.shm_size = None;
    let id = Identity {
        scenario: name.into(),
        cell: name.into(),
        environment: name.into(),
        claim: None,
    };
    knobs.resolve(id, platform).map_err(|e| anyhow!("--{e}"))
}
