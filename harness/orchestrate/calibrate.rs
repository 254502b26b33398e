//! Calibration as the harness runs it: in a private mount namespace with its own tmpfs, so the
//! measurement never writes to the host's /dev/shm (it re-runs `shmbench calibrate --here` there
//! and reads its JSON), and briefly before every matrix, for the efficiency columns.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Result};

use super::event::Event;
use model::calibration::Calibration;
use model::config::CellConfig;
use model::knobs::{Strategy, TorchProfile};
use results::sidecar;
use runtime::namespace;

/// Calibrates in a private mount namespace with its own tmpfs, so the measurement never writes
/// to the host's /dev/shm: re-runs `shmbench calibrate --here` there and reads its JSON.
pub fn isolated(
    config: &CellConfig,
    combos: &[(Strategy, TorchProfile)],
    duration: Duration,
) -> Result<Calibration> {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get() as u64)
        .unwrap_or(1);
    let shm = config.batch_bytes() * (cores * 2 + 2) + (64 << 20);
    let only: Vec<String> = combos.iter().map(|(s, t)| format!("{s}:{t}")).collect();
    let args: Vec<String> = [
        "calibrate",
        "--here",
        "--format",
        "json",
        "--seconds",
        &duration.as_secs_f64().to_string(),
        "--batch",
        &config.knobs.batch.to_string(),
        "--shape",
        &config.knobs.shape.to_string(),
        "--dtype",
        &config.knobs.dtype.to_string(),
        "--only",
        &only.join(","),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let out = namespace::output_in_namespace(&args, shm)
        .map_err(|e| anyhow::anyhow!("cannot calibrate in a private namespace: {e}"))?;
    if !out.status.success() {
        bail!(
            "calibration failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// Calibrates this machine for the strategies and profiles `cells` use (briefly: it runs before
/// every matrix) and writes `calibration.json` beside the results `out`. A calibration that cannot
/// run (e.g. too little free /dev/shm) is reported and skipped: it never stops the cells.
pub fn for_cells(
    cells: &[CellConfig],
    out: &Path,
    observe: &mut dyn FnMut(Event),
) -> Option<Calibration> {
    let first = cells.first()?;
    let mut combos: Vec<(Strategy, TorchProfile)> = cells
        .iter()
        .map(|c| (c.knobs.strategy, c.knobs.torch))
        .collect();
    combos.sort_by_key(|(s, t)| (s.to_string(), t.to_string()));
    combos.dedup();
    observe(Event::Note(format!(
        "calibrating the data path ({} combination(s))...",
        combos.len()
    )));
    match isolated(first, &combos, Duration::from_millis(250)) {
        Ok(c) => {
            observe(Event::Note(format!(
                "calibrated: memcpy {:.1} GB/s",
                c.memcpy_gb_per_s
            )));
            // The run goes on without the file; the calibration still judges its rows.
            let written = serde_json::to_vec_pretty(&c)
                .map_err(anyhow::Error::from)
                .and_then(|bytes| sidecar::write_run_file(out, "calibration.json", &bytes));
            if let Err(e) = written {
                observe(Event::Note(format!("calibration.json not written: {e:#}")));
            }
            Some(c)
        }
        Err(e) => {
            observe(Event::Note(format!("calibration skipped: {e:#}")));
            None
        }
    }
}
