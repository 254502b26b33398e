//! `matrix --kernels a,b,...`: every cell on each kernel, interleaved into one run. `host` is
//! this machine's kernel (the cell as planned); any other is booted in a VM (`runtime vm`), the
//! cell's /dev/shm a tmpfs of its size in the guest (Docker's 64 MiB when unset, half the VM's
//! memory for `ipc host`, as a machine's own /dev/shm).

use anyhow::{bail, Result};

use model::config::CellConfig;
use model::knobs::{Loader, RuntimeKind};

/// The name that stands for this machine's own kernel.
pub const HOST: &str = "host";

/// The cells, each on every kernel in turn.
pub fn on_kernels(
    cells: &[CellConfig],
    kernels: &[String],
    mem_total: u64,
) -> Result<Vec<CellConfig>> {
    let mut out = Vec::new();
    for cell in cells {
        for kernel in kernels {
            if kernel == HOST {
                out.push(cell.clone());
                continue;
            }
            let refuse = |what: &str| {
                bail!("--kernels: cell '{}' {what}, which a VM cannot give it: leave the cell out with --cells, or run it on the host alone", cell.cell)
            };
            if cell.knobs.image.is_some() {
                return refuse("runs in your image");
            }
            if cell.knobs.loader != Loader::Emulated {
                return refuse("runs a real torch or a command");
            }
            let mut vm = cell.clone();
            vm.knobs.runtime = RuntimeKind::Vm;
            vm.knobs.kernel = Some(kernel.clone());
            vm.knobs.shm_tmpfs = false;
            vm.runtime_note = Some(format!(
                "a QEMU VM booting {kernel}, its /dev/shm a tmpfs of the cell's size"
            ));
            vm.validate(mem_total)
                .map_err(|e| anyhow::anyhow!("--kernels {kernel}: cell '{}': {e}", cell.cell))?;
            out.push(vm);
        }
    }
    Ok(out)
}
